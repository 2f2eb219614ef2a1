"""Creating the app's push subscription: the verify token is stored before the service's validation GET.

Subscribing is idempotent for one callback address: a subscription to the same callback (left by an earlier
run, or created by a POST whose answer was lost on the way back) is adopted, not refused and not duplicated.
Until fitsync knows the subscription's id the receiver refuses its events, so adopting it is what keeps them.
"""

from __future__ import annotations

import logging
import secrets

from fitsync.client.errors import FitsyncError
from fitsync.client.records import Record
from fitsync.client.runtime import FitsyncClient
from fitsync.client.transport import UncertainOutcome

log = logging.getLogger(__name__)


class AlreadySubscribed(FitsyncError):
    pass


def subscribe(client: FitsyncClient, callback_url: str) -> int:
    """The id of the app's subscription to `callback_url`, created (or adopted) and stored."""
    existing = _current(client)
    if existing is not None:
        if existing.get("callback_url") != callback_url:
            raise AlreadySubscribed(
                f"the application already has subscription {existing.id} to {existing.get('callback_url')}: "
                "run `fitsync webhooks unsubscribe` first")
        return _adopt(client, existing, "it already exists")
    # The receiver answers the validation GET with this token, so it must be on disk first.
    client.subscription_state.set_verify_token(secrets.token_urlsafe(24))
    token = client.subscription_state.verify_token()
    assert token is not None
    try:
        subscription_id = client.subscriptions().create(callback_url, token.reveal())
    except UncertainOutcome:
        created = _current(client)  # the service may have created and validated it before the answer was lost
        if created is None or created.get("callback_url") != callback_url:
            raise
        return _adopt(client, created, "its creation's answer was lost")
    client.subscription_state.save(subscription_id, callback_url)
    return subscription_id


def _current(client: FitsyncClient) -> Record | None:
    subscriptions = client.subscriptions().view()
    return subscriptions[0] if subscriptions else None


def _adopt(client: FitsyncClient, subscription: Record, why: str) -> int:
    log.info("adopting subscription %s to %s: %s", subscription.id, subscription.get("callback_url"), why)
    client.subscription_state.save(int(subscription.id), str(subscription.get("callback_url")))
    return int(subscription.id)
