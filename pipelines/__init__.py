"""The Dagster code location: definitions, jobs, the nightly schedule (one run per athlete partition), the webhook
sensor (read → `webhooks.plan.decide` → apply), the purge job, the instance fitsync's commands use and the headless
runner of its jobs.

May import: client, state, warehouse, webhooks, sync, resources, assets.
"""
