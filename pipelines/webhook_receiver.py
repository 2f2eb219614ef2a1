"""`fitsync webhooks serve`: the callback the service pushes events to (spec §6).

It answers the subscription's validation GET, and for each event POST validates it strictly, checks the
subscription and the owner, commits it to the inbox and answers 200 — in milliseconds, doing nothing
else. A forged or malformed event gets a 4xx and stores nothing. The `webhook_events` sensor does the work.
"""

from __future__ import annotations

import hmac
import json
import logging
import sqlite3
import threading

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fitsync.client.runtime import FitsyncClient

from . import webhook_inbox

log = logging.getLogger(__name__)

DEFAULT_PATH = "/webhooks/fitsync"
MAX_BODY_BYTES = 8192


class Receiver:
    def __init__(self, client: FitsyncClient, path: str = DEFAULT_PATH) -> None:
        self.client = client
        self.path = path
        self._conn: sqlite3.Connection = client.store.connect()
        self._lock = threading.Lock()
        self.app = Starlette(routes=[Route(path, self.validate, methods=["GET"]),
                                     Route(path, self.event, methods=["POST"])])

    def validate(self, request: Request) -> Response:
        """§6.4: echo hub.challenge when hub.mode is subscribe and the verify token matches."""
        q = request.query_params
        expected = self.client.subscription_state.verify_token()
        token = q.get("hub.verify_token", "")
        if q.get("hub.mode") != "subscribe" or not q.get("hub.challenge"):
            return _refuse(400, "hub.mode must be subscribe, with a hub.challenge")
        if expected is None or not hmac.compare_digest(token.encode(), expected.reveal().encode()):
            return _refuse(403, "verify token does not match")
        return JSONResponse({"hub.challenge": q["hub.challenge"]})

    async def event(self, request: Request) -> Response:
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
            event = webhook_inbox.validate(json.loads(body))
        except (ValueError, RecursionError) as error:
            return _refuse(400, str(error) if isinstance(error, webhook_inbox.InvalidEvent) else "malformed JSON")
        return self._accept(event)

    def _accept(self, event: dict) -> Response:  # type: ignore[type-arg]
        with self._lock:
            subscription = self.client.subscription_state.current(self._conn)
            if subscription is None or event["subscription_id"] != subscription.id:
                log.warning("refused an event for subscription %s", event["subscription_id"])
                return _refuse(403, "unknown subscription")
            row = self._conn.execute("SELECT status FROM athletes WHERE athlete_id = ?", (event["owner_id"],)).fetchone()
            if row is None or row["status"] == "disconnected":
                log.warning("refused an event for unknown athlete %s", event["owner_id"])
                return _refuse(403, "unknown owner")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                stored = webhook_inbox.store_event(self._conn, event)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return JSONResponse({"stored": stored})


def _refuse(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status)
