"""Creating the app's push subscription: the verify token is stored before the service's validation GET."""

from __future__ import annotations

import secrets

from fitsync.client.errors import FitsyncError
from fitsync.client.runtime import FitsyncClient


class AlreadySubscribed(FitsyncError):
    pass


def subscribe(client: FitsyncClient, callback_url: str) -> int:
    existing = client.subscriptions().view()
    if existing:
        raise AlreadySubscribed(
            f"the application already has subscription {existing[0].id} to {existing[0].get('callback_url')}: "
            "run `fitsync webhooks unsubscribe` first")
    # The receiver answers the validation GET with this token, so it must be on disk first.
    client.subscription_state.set_verify_token(secrets.token_urlsafe(24))
    token = client.subscription_state.verify_token()
    assert token is not None
    subscription_id = client.subscriptions().create(callback_url, token.reveal())
    client.subscription_state.save(subscription_id, callback_url)
    return subscription_id
