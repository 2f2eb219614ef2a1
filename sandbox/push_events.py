"""Webhook events (spec §3.1, §6.1, §6.2): which subscriber sees which change, written to the durable queue.

The functions here only insert rows into `events`; they run inside the caller's `store.transaction`, so an
event exists exactly when the change that caused it was committed. Delivery is `push_delivery`'s job.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from . import store

Visibility = Literal["everyone", "followers_only", "only_me"]
ReadLevel = Literal["read", "read_all"]


@dataclass(frozen=True)
class ActivityView:
    """The parts of an activity that events depend on; None in place of a view means "does not exist"."""

    visibility: str
    name: str
    type: str


# Which visibilities each activity read level may see (spec §5.2): without read_all, Only Me is invisible.
VISIBLE_TO: dict[ReadLevel, frozenset[str]] = {
    "read": frozenset({"everyone", "followers_only"}),
    "read_all": frozenset({"everyone", "followers_only", "only_me"}),
}

# (seen before, seen after) → aspect_type. Appearing and disappearing from an app's view is what it is told
# as create/delete (§3.1), whether the activity itself was created, deleted or changed its visibility.
ASPECT_FOR: dict[tuple[bool, bool], str] = {
    (False, True): "create",
    (True, False): "delete",
    (True, True): "update",
}


@dataclass(frozen=True)
class UpdateKey:
    """One key of `updates`: sent when `attribute` differs, as `render(after)`, to apps of these levels."""

    key: str
    attribute: Callable[[ActivityView], object]
    render: Callable[[ActivityView], str]
    levels: frozenset[ReadLevel]


UPDATE_KEYS: tuple[UpdateKey, ...] = (
    UpdateKey("title", lambda v: v.name, lambda v: v.name, frozenset({"read", "read_all"})),
    UpdateKey("type", lambda v: v.type, lambda v: v.type, frozenset({"read", "read_all"})),
    # Privacy updates need read_all (§6.1); any visibility change counts, everyone↔followers_only included.
    UpdateKey(
        "private",
        lambda v: v.visibility,
        lambda v: "true" if v.visibility == "only_me" else "false",
        frozenset({"read_all"}),
    ),
)

_SCOPE_SEPARATORS = re.compile(r"[\s,]+")


def read_level(scope: str) -> ReadLevel | None:
    """The app's activity read level from a granted scope list; None when it gets no activity events."""
    scopes = set(_SCOPE_SEPARATORS.split(scope.strip()))
    if "activity:read_all" in scopes:
        return "read_all"
    if "activity:read" in scopes:
        return "read"
    return None


def activity_event(
    level: ReadLevel, before: ActivityView | None, after: ActivityView | None
) -> tuple[str, dict[str, str]] | None:
    """(aspect_type, updates) an app of `level` is sent for this change, or None when it is sent nothing."""
    seen_before = before is not None and before.visibility in VISIBLE_TO[level]
    seen_after = after is not None and after.visibility in VISIBLE_TO[level]
    aspect = ASPECT_FOR.get((seen_before, seen_after))
    if aspect != "update":
        return (aspect, {}) if aspect else None
    assert before is not None and after is not None
    updates = {
        k.key: k.render(after) for k in UPDATE_KEYS if level in k.levels and k.attribute(before) != k.attribute(after)
    }
    return ("update", updates) if updates else None


def emit_activity_change(
    conn: sqlite3.Connection,
    *,
    athlete_id: int,
    activity_id: int,
    before: ActivityView | None,
    after: ActivityView | None,
    event_time: int | None = None,
) -> list[int]:
    """Queue the events of one saved change (before None = created, after None = deleted) for every
    subscribed app the athlete has authorized; returns the new event ids."""
    when = _event_time(event_time)
    ids: list[int] = []
    with store.transaction(conn):
        for sub in _subscribers_of(conn, athlete_id):
            level = read_level(sub["scope"])
            event = activity_event(level, before, after) if level else None
            if event is None:
                continue
            aspect, updates = event
            ids.append(
                _insert(conn, sub["subscription_id"], "activity", activity_id, aspect, updates, athlete_id, when)
            )
    return ids


def emit_deauthorization(
    conn: sqlite3.Connection, *, app_id: int, athlete_id: int, event_time: int | None = None
) -> list[int]:
    """Queue the "access revoked" event for the app's subscription. Independent of `grants`, so the caller
    may revoke the grant before or after calling this."""
    when = _event_time(event_time)
    with store.transaction(conn):
        row = conn.execute("SELECT id FROM subscriptions WHERE app_id = ?", (app_id,)).fetchone()
        if row is None:
            return []
        return [_insert(conn, row["id"], "athlete", athlete_id, "update", {"authorized": "false"}, athlete_id, when)]


def list_events(conn: sqlite3.Connection, *, limit: int = 500) -> list[dict[str, Any]]:
    """Newest events first, payload decoded, for the console."""
    rows = conn.execute(
        "SELECT id, subscription_id, payload, created_at, status, attempts, next_attempt_at"
        " FROM events ORDER BY id DESC LIMIT ?",
        (limit,),
    )
    return [{**dict(r), "payload": json.loads(r["payload"])} for r in rows]


def _subscribers_of(conn: sqlite3.Connection, athlete_id: int) -> list[sqlite3.Row]:
    """Subscriptions of the apps this athlete currently authorizes, with the granted scope."""
    return conn.execute(
        "SELECT s.id AS subscription_id, g.scope FROM subscriptions s"
        " JOIN grants g ON g.app_id = s.app_id"
        " WHERE g.athlete_id = ? AND g.revoked_at IS NULL ORDER BY s.id",
        (athlete_id,),
    ).fetchall()


def _insert(
    conn: sqlite3.Connection,
    subscription_id: int,
    object_type: str,
    object_id: int,
    aspect_type: str,
    updates: dict[str, str],
    owner_id: int,
    event_time: int,
) -> int:
    """Queue one event, due at once; the payload is stored exactly as it will be POSTed (§6.2)."""
    payload = {
        "object_type": object_type,
        "object_id": object_id,
        "aspect_type": aspect_type,
        "updates": updates,
        "owner_id": owner_id,
        "subscription_id": subscription_id,
        "event_time": event_time,
    }
    now = time.time()
    cur = conn.execute(
        "INSERT INTO events (subscription_id, payload, created_at, status, attempts, next_attempt_at)"
        " VALUES (?, ?, ?, 'pending', 0, ?)",
        (subscription_id, json.dumps(payload), now, now),
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def _event_time(event_time: int | None) -> int:
    return int(time.time()) if event_time is None else int(event_time)
