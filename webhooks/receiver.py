"""`fitsync webhooks serve`: the callback the service pushes events to (spec §6).

It serves one address, `<prefix>/<path secret>` (see `subscriptions`); every other path answers 404 and stores
nothing. There it answers the subscription's validation GET, and for each event POST validates it strictly
(`event.py`), checks the subscription and the owner, commits it to the inbox and answers 200 — in milliseconds,
doing nothing else. A forged or malformed event gets a 4xx and stores nothing. The `webhook_events` sensor does the work.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fitsync.client.runtime import FitsyncClient
from fitsync.state import athletes as athlete_rows
from fitsync.webhooks import event as event_model
from fitsync.webhooks import inbox as webhook_inbox

log = logging.getLogger(__name__)

DEFAULT_PREFIX = "/webhooks"
MAX_BODY_BYTES = 8192
STORE_WAIT = 1.0  # seconds
T = TypeVar("T")
GUESSABLE_BELOW = 16  # characters: a path secret shorter than this (a subscription from before secrets) is weak


class Receiver:
    def __init__(self, client: FitsyncClient, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = "/" + prefix.strip("/")
        # The service wants an answer within 2 s (§6.3): a state store locked longer than this gets a 503, so the
        # service retries, instead of an answer it gives up on.
        self._conn = client.store.connect(wait=STORE_WAIT)
        self._lock = threading.Lock()
        self.stored = 0
        path = self.prefix + "/{secret}"
        self.app = Starlette(
            routes=[Route(path, self.validate, methods=["GET"]), Route(path, self.event, methods=["POST"])]
        )

    def weak_secret(self) -> bool:
        """Whether the stored callback's path secret is guessable (a subscription made before fitsync had one)."""
        secret = self.client.subscription_state.callback_token()
        return secret is not None and len(secret.reveal()) < GUESSABLE_BELOW

    def _with_store(self, work: Callable[[Any], T]) -> T:
        """`work` on the receiver's own connection. One the database server dropped (a restart, a failover) is
        replaced and the work tried once more: a receiver must not answer 503 until it is restarted."""
        store = self.client.store
        with self._lock:
            try:
                return work(self._conn)
            except store.errors:
                if store.usable(self._conn):
                    raise
                log.warning("the connection to the state store %s was lost: reconnecting", store.describe())
                with contextlib.suppress(*store.errors):
                    self._conn.close()
                self._conn = store.connect(wait=STORE_WAIT)
                return work(self._conn)

    def _at_secret(self, request: Request) -> bool:
        """Whether the request came to the subscription's secret path; the secret is read on each request so a
        re-subscription (a rotated secret) takes effect without a restart."""
        expected = self._with_store(self.client.subscription_state.callback_token)
        given = str(request.path_params.get("secret", ""))
        if expected is not None and hmac.compare_digest(given.encode(), expected.reveal().encode()):
            return True
        log.warning("refused a %s to an unknown callback path (not the subscription's secret path)", request.method)
        return False

    def validate(self, request: Request) -> Response:
        """§6.4: echo hub.challenge when hub.mode is subscribe and the verify token matches."""
        try:
            at_secret = self._at_secret(request)
        except self.client.store.errors as error:
            log.error("could not read the subscription from the state store (%s): answered 503", error)
            return _refuse(503, "the subscription could not be read: retry later")
        if not at_secret:
            return _not_found()
        q = request.query_params
        expected = self.client.subscription_state.verify_token()
        token = q.get("hub.verify_token", "")
        if q.get("hub.mode") != "subscribe" or not q.get("hub.challenge"):
            return _refuse(400, "hub.mode must be subscribe, with a hub.challenge")
        if expected is None or not hmac.compare_digest(token.encode(), expected.reveal().encode()):
            return _refuse(403, "verify token does not match")
        return JSONResponse({"hub.challenge": q["hub.challenge"]})

    async def event(self, request: Request) -> Response:
        try:
            at_secret = self._at_secret(request)
        except self.client.store.errors as error:
            log.error(
                "could not read the subscription from the state store (%s): answered 503 so the service retries", error
            )
            return _refuse(503, "the event could not be stored: retry later")
        if not at_secret:
            return _not_found()
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _refuse(415, "events are JSON")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return _refuse(413, "body too large")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _refuse(413, "body too large")
        try:
            event = event_model.validate(json.loads(body))
        except (ValueError, RecursionError) as error:
            return _refuse(400, str(error) if isinstance(error, event_model.InvalidEvent) else "malformed JSON")
        return self._accept(event)

    def _accept(self, event: dict[str, Any]) -> Response:
        try:
            refused = self._with_store(lambda conn: self._refusal(conn, event))
            if refused is not None:
                return refused
            stored = self._with_store(lambda conn: self._store_event(conn, event))
        except self.client.store.errors as error:  # disk full, locked, read-only, server gone: it retries
            log.error(
                "could not store an event for athlete %s (%s %s %s): %s; answered 503 so the service retries it",
                event["owner_id"],
                event["object_type"],
                event["object_id"],
                event["aspect_type"],
                error,
            )
            return _refuse(503, "the event could not be stored: retry later")
        log.info(
            "%s %s %s of athlete %s: %s",
            event["object_type"],
            event["object_id"],
            event["aspect_type"],
            event["owner_id"],
            "stored" if stored else "already stored (a retried delivery)",
        )
        return JSONResponse({"stored": stored})

    def _refusal(self, conn: Any, event: dict[str, Any]) -> Response | None:
        """Why this event is not ours (an unknown subscription or owner), or None."""
        subscription = self.client.subscription_state.current(conn)
        if subscription is None or event["subscription_id"] != subscription.id:
            log.warning(
                "refused %s %s %s of athlete %s: unknown subscription %s",
                event["object_type"],
                event["object_id"],
                event["aspect_type"],
                event["owner_id"],
                event["subscription_id"],
            )
            return _refuse(403, "unknown subscription")
        if athlete_rows.status(conn, event["owner_id"]) in (None, "disconnected"):
            log.warning(
                "refused %s %s %s: athlete %s is not connected",
                event["object_type"],
                event["object_id"],
                event["aspect_type"],
                event["owner_id"],
            )
            return _refuse(403, "unknown owner")
        return None

    def _store_event(self, conn: Any, event: dict[str, Any]) -> bool:
        with self.client.store.transaction(conn):
            stored = webhook_inbox.store_event(conn, event)
        self.stored += stored
        return stored


def _not_found() -> Response:
    return _refuse(404, "not found")


def _refuse(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status)
