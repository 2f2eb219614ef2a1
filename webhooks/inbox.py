"""The webhook inbox in the state store: strict validation of §6.2 events, stored once, read in order.

An event is committed here before the receiver answers 200, so an acknowledged event is never lost; a
retried delivery of the same event has the same dedupe key and is stored once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from fitsync.client.state_store import StateStore

OBJECT_ASPECTS = {"activity": {"create", "update", "delete"}, "athlete": {"update"}}
INT_FIELDS = ("object_id", "owner_id", "subscription_id", "event_time")
ALLOWED_UPDATE_KEYS = {"activity": {"title", "type", "private"}, "athlete": {"authorized"}}
FIELDS = {"object_type", "object_id", "aspect_type", "updates", "owner_id", "subscription_id", "event_time"}


class InvalidEvent(ValueError):
    pass


@dataclass(frozen=True)
class Event:
    inbox_id: int
    object_type: str
    object_id: int
    aspect_type: str
    updates: dict[str, str]
    owner_id: int
    subscription_id: int
    event_time: int
    received_at: float = 0.0

    @property
    def deauthorization(self) -> bool:
        return self.object_type == "athlete" and self.updates.get("authorized") == "false"


def validate(payload: Any) -> dict[str, Any]:
    """The event exactly as §6.2 describes it, or InvalidEvent saying what is wrong."""
    if not isinstance(payload, dict):
        raise InvalidEvent("the body is not a JSON object")
    unknown = set(payload) - FIELDS
    if unknown:
        raise InvalidEvent(f"unknown fields: {', '.join(sorted(unknown))}")
    for name in INT_FIELDS:
        value = payload.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**63:
            raise InvalidEvent(f"{name} must be a positive integer")
    kind, aspect = payload.get("object_type"), payload.get("aspect_type")
    if kind not in OBJECT_ASPECTS or aspect not in OBJECT_ASPECTS[kind]:
        raise InvalidEvent(f"unknown object_type/aspect_type {kind!r}/{aspect!r}")
    updates = payload.get("updates", {})
    if updates is None:
        updates = {}
    if not isinstance(updates, dict) or not all(isinstance(v, str) and len(v) <= 1000 for v in updates.values()):
        raise InvalidEvent("updates must be an object of strings")
    if set(updates) - ALLOWED_UPDATE_KEYS[kind]:
        raise InvalidEvent(f"unexpected updates keys for {kind}")
    if kind == "athlete" and (updates.get("authorized") != "false" or payload["object_id"] != payload["owner_id"]):
        raise InvalidEvent("athlete events must be deauthorizations of the owner")
    if "private" in updates and updates["private"] not in ("true", "false"):
        raise InvalidEvent('updates.private must be "true" or "false"')
    return {**payload, "updates": updates}


def dedupe_key(event: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(event, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def store_event(conn: sqlite3.Connection, event: dict[str, Any]) -> bool:
    """Insert once (inside the caller's transaction); False when this event was already stored."""
    cursor = conn.execute(
        "INSERT INTO webhook_inbox (dedupe_key, received_at, payload) VALUES (?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING",
        (dedupe_key(event), time.time(), json.dumps(event, separators=(",", ":"))),
    )
    return cursor.rowcount == 1


def events_after(store: StateStore, inbox_id: int, limit: int = 1000) -> list[Event]:
    with store.reading() as conn:
        rows = conn.execute(
            "SELECT id, payload, received_at FROM webhook_inbox WHERE id > ? ORDER BY id LIMIT ?", (inbox_id, limit)
        ).fetchall()
    return _events(rows)


def deferred(store: StateStore, limit: int = 1000) -> list[Event]:
    """Events that wait: a check with the service that could not be made yet (service down, rate budget spent),
    or work held back by the webhook admission rules."""
    with store.reading() as conn:
        rows = conn.execute(
            "SELECT id, payload, received_at FROM webhook_inbox WHERE verdict = 'deferred' ORDER BY id LIMIT ?",
            (limit,),
        ).fetchall()
    return _events(rows)


def set_verdict(conn: sqlite3.Connection, inbox_ids: list[int], verdict: str, reason: str) -> None:
    conn.executemany(
        "UPDATE webhook_inbox SET verdict = ?, verdict_reason = ? WHERE id = ?",
        [(verdict, reason, i) for i in inbox_ids],
    )


def set_delete_verdict(conn: sqlite3.Connection, athlete_id: int, activity_id: int, verdict: str, reason: str) -> None:
    """The verdict on every undecided delete event of this activity (a run knows activities, not inbox rows)."""
    # Stored payloads are compact JSON: LIKE narrows to this activity's undecided deletes in SQL both backends speak
    # (a number member ends with , or }), and the exact event is checked parsed. Narrow: a burst holds thousands of
    # deletes, and reading them all for each verdict was quadratic.
    members = ['"aspect_type":"delete"', '"object_type":"activity"']
    numbers = [f'"owner_id":{int(athlete_id)}', f'"object_id":{int(activity_id)}']
    sql = (
        "SELECT id, payload FROM webhook_inbox WHERE verdict IS NULL"
        + " AND payload LIKE ?" * len(members)
        + " AND (payload LIKE ? OR payload LIKE ?)" * len(numbers)
    )
    params = [f"%{m}%" for m in members] + [f"%{n}{end}%" for n in numbers for end in (",", "}")]
    rows = conn.execute(sql, params).fetchall()
    ids = [
        r["id"]
        for r in rows
        if (p := json.loads(r["payload"]))["owner_id"] == athlete_id
        and p["object_id"] == activity_id
        and p["aspect_type"] == "delete"
        and p["object_type"] == "activity"
    ]
    set_verdict(conn, ids, verdict, reason)


def _events(rows: list[sqlite3.Row]) -> list[Event]:
    out = []
    for row in rows:
        p = json.loads(row["payload"])
        out.append(
            Event(
                row["id"],
                p["object_type"],
                p["object_id"],
                p["aspect_type"],
                p.get("updates") or {},
                p["owner_id"],
                p["subscription_id"],
                p["event_time"],
                row["received_at"],
            )
        )
    return out


def mark_processed(store: StateStore, inbox_ids: list[int]) -> None:
    with store.transaction() as conn:
        conn.executemany(
            "UPDATE webhook_inbox SET processed_at = ? WHERE id = ? AND processed_at IS NULL",
            [(time.time(), i) for i in inbox_ids],
        )
