"""Push subscriptions (spec §3.3, §4.5, §6.4) and the public face of the webhook machinery.

The HTTP layer authenticates the client and passes the App; everything else — validation of the fields,
one subscription per app, the validation GET to the callback — happens here. Events and their delivery
live in `push_events` and `push_delivery` and are re-exported so callers need only this module.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx

from . import store
from .apps import App
from .faults import ApiError, bad_request, not_found
from .push_delivery import DeliveryWorker, delivery_log
from .push_events import ActivityView, emit_activity_change, emit_deauthorization, list_events
from .settings import Settings

__all__ = [
    "ActivityView",
    "DeliveryWorker",
    "create_subscription",
    "delete_subscription",
    "delivery_log",
    "emit_activity_change",
    "emit_deauthorization",
    "list_events",
    "list_subscriptions",
]

log = logging.getLogger(__name__)

RESOURCE = "PushSubscription"
CALLBACK_URL_MAX = 255  # spec §8
VALIDATION_BODY_MAX = 64 * 1024  # a challenge echo is tiny; do not read an endless body
NO_200 = "GET to callback URL does not return 200"  # the real service's code (real-service notes)
NO_ECHO = "callback url did not echo hub.challenge"


async def create_subscription(
    conn: sqlite3.Connection,
    app: App,
    *,
    callback_url: object,
    verify_token: object,
    settings: Settings,
    http: httpx.AsyncClient,
) -> dict[str, int]:
    """Validate the callback with the §6.4 handshake, then store the app's one subscription → {"id": …}."""
    if conn.in_transaction:
        raise RuntimeError("create_subscription awaits the callback: call it outside a db transaction")
    url = _checked_callback_url(callback_url)
    token = _required(verify_token, "verify_token")
    _refuse_if_subscribed(conn, app)  # before the GET: no handshake for a request that cannot succeed
    await _validate_callback(http, url, token, settings.callback_timeout)
    now = int(time.time())
    with store.transaction(conn):
        _refuse_if_subscribed(conn, app)  # again, atomically: another create may have won meanwhile
        cur = conn.execute(
            "INSERT INTO subscriptions (app_id, callback_url, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (app.id, url, now, now),
        )
    assert cur.lastrowid is not None
    return {"id": cur.lastrowid}


def list_subscriptions(conn: sqlite3.Connection, app: App) -> list[dict[str, Any]]:
    """The app's subscription details (at most one) in the service's representation."""
    rows = conn.execute(
        "SELECT id, app_id, callback_url, created_at, updated_at FROM subscriptions WHERE app_id = ? ORDER BY id",
        (app.id,),
    )
    return [
        {
            "id": r["id"],
            "resource_state": 2,
            "application_id": r["app_id"],
            "callback_url": r["callback_url"],
            "created_at": _iso(r["created_at"]),
            "updated_at": _iso(r["updated_at"]),
        }
        for r in rows
    ]


def delete_subscription(conn: sqlite3.Connection, app: App, subscription_id: int) -> None:
    """Delete the app's subscription; its undelivered events fail, so nothing reaches the old callback."""
    with store.transaction(conn):
        cur = conn.execute("DELETE FROM subscriptions WHERE id = ? AND app_id = ?", (subscription_id, app.id))
        if cur.rowcount == 0:  # someone else's subscription is reported like a missing one
            raise not_found(RESOURCE, "id")
        conn.execute(
            "UPDATE events SET status = 'failed' WHERE subscription_id = ? AND status = 'pending'", (subscription_id,)
        )


def _required(value: object, field: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise bad_request(RESOURCE, field, "missing")
    if not isinstance(value, str):
        raise bad_request(RESOURCE, field)
    return value


def _checked_callback_url(value: object) -> str:
    """An absolute http(s) URL of at most 255 characters, else 400 invalid."""
    url = _required(value, "callback_url").strip()
    if len(url) > CALLBACK_URL_MAX or not _is_http_url(url):
        raise bad_request(RESOURCE, "callback_url")
    return url


def _is_http_url(url: str) -> bool:
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return False
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _refuse_if_subscribed(conn: sqlite3.Connection, app: App) -> None:
    row = conn.execute("SELECT id FROM subscriptions WHERE app_id = ?", (app.id,)).fetchone()
    if row is not None:
        raise ApiError(
            400,
            RESOURCE,
            "",
            "already exists",
            message=f"Bad Request: the application already has push subscription {row['id']};"
            " delete it first to create another",
        )


async def _validate_callback(http: httpx.AsyncClient, url: str, verify_token: str, timeout: float) -> None:
    """The §6.4 handshake: 200 within `timeout` and a JSON body echoing the challenge, else 400."""
    challenge = secrets.token_urlsafe(16)
    target = _with_query(url, {"hub.mode": "subscribe", "hub.challenge": challenge, "hub.verify_token": verify_token})
    try:
        async with asyncio.timeout(timeout):  # a total deadline: httpx's timeouts are per phase
            async with http.stream("GET", target, timeout=timeout, follow_redirects=False) as response:
                status, content_type = response.status_code, response.headers.get("content-type", "")
                body = await _read_capped(response) if status == 200 else b""
    except Exception as exc:  # noqa: BLE001 - timeout, refused connection, protocol error: no 200 came back
        log.info("subscription validation GET to %s failed: %s: %s", url, type(exc).__name__, exc)
        raise _validation_failed(NO_200) from None
    if status != 200:
        raise _validation_failed(NO_200)
    if not _echoes(content_type, body, challenge):
        raise _validation_failed(NO_ECHO)


def _echoes(content_type: str, body: bytes | None, challenge: str) -> bool:
    """A JSON object (served as application/json) whose "hub.challenge" is the challenge sent."""
    if body is None or content_type.split(";")[0].strip().lower() != "application/json":
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("hub.challenge") == challenge


async def _read_capped(response: httpx.Response) -> bytes | None:
    """The body, or None when it is larger than any echo could be."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > VALIDATION_BODY_MAX:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _validation_failed(code: str) -> ApiError:
    return ApiError(400, RESOURCE, "callback url", code)


def _with_query(url: str, params: dict[str, str]) -> str:
    """`url` with `params` appended to the query it already has; the fragment is not sent."""
    parts = urlsplit(url)
    extra = urlencode(params)
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
