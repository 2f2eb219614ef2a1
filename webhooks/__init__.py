"""Webhook events: the receiver the service pushes to, the inbox it stores them in, the plan that turns them into
work, which events may spend API calls now, and the app's push subscription. What is stored of them is written by
the inbox repository of `state/`.

May import: client, state.
"""
