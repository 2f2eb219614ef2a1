"""Creating the app's push subscription: the verify token and path secret are stored before the validation GET.

The user names the receiver's public prefix (`https://host/webhooks`); the service is given that prefix plus a
random path secret, so a forger who knows the host still cannot reach the inbox. Subscribing again after
`unsubscribe` rotates the secret.

Subscribing is idempotent for one prefix: a subscription under it (left by an earlier run, or created by a POST
whose answer was lost on the way back) is adopted, secret included, not refused and not duplicated. Until
fitsync knows the subscription's id the receiver refuses its events, so adopting it is what keeps them.
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


def subscribe(client: FitsyncClient, prefix: str) -> int:
    """The id of the app's subscription under `prefix` (the receiver's public address without the secret),
    created (or adopted) and stored."""
    prefix = prefix.rstrip("/")
    existing = _current(client)
    if existing is not None:
        if not _under(existing, prefix):
            raise AlreadySubscribed(
                f"the application already has subscription {existing.id} to {masked(str(existing.get('callback_url')))}: "
                "run `fitsync webhooks unsubscribe` first"
            )
        return _adopt(client, existing, "it already exists")
    # The receiver answers the validation GET only at this path, with this token: both must be on disk first.
    client.subscription_state.set_callback_token(secrets.token_urlsafe(24))
    client.subscription_state.set_verify_token(secrets.token_urlsafe(24))
    path_secret, token = client.subscription_state.callback_token(), client.subscription_state.verify_token()
    assert path_secret is not None and token is not None
    callback_url = f"{prefix}/{path_secret.reveal()}"
    try:
        subscription_id = client.subscriptions().create(callback_url, token.reveal())
    except UncertainOutcome:
        created = _current(client)  # the service may have created and validated it before the answer was lost
        if created is None or created.get("callback_url") != callback_url:
            raise
        return _adopt(client, created, "its creation's answer was lost")
    client.subscription_state.save(subscription_id, callback_url)
    return subscription_id


def masked(callback_url: str) -> str:
    """The callback address with its path secret hidden, for messages and logs."""
    head, _, tail = callback_url.rstrip("/").rpartition("/")
    return f"{head}/{tail[:3]}…" if head and len(tail) >= 16 else callback_url


def _under(subscription: Record, prefix: str) -> bool:
    head, _, tail = str(subscription.get("callback_url")).rstrip("/").rpartition("/")
    return head == prefix and bool(tail)


def _current(client: FitsyncClient) -> Record | None:
    subscriptions = client.subscriptions().view()
    return subscriptions[0] if subscriptions else None


def _adopt(client: FitsyncClient, subscription: Record, why: str) -> int:
    callback_url = str(subscription.get("callback_url"))
    log.info("adopting subscription %s to %s: %s", subscription.id, masked(callback_url), why)
    # The service is the truth for the address it calls: its last segment is the path secret.
    client.subscription_state.set_callback_token(callback_url.rstrip("/").rsplit("/", 1)[-1])
    client.subscription_state.save(int(subscription.id), callback_url)
    return int(subscription.id)
