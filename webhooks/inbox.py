"""The webhook inbox in the state store: strict validation of §6.2 events, stored once, read in order.

An event is committed here before the receiver answers 200, so an acknowledged event is never lost; a
retried delivery of the same event has the same dedupe key and is stored once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from fitsync.state import inbox as inbox_rows
from fitsync.state.inbox import mark_processed, set_verdict
from fitsync.state.store import Connection, StateStore

__all__ = ["mark_processed", "set_verdict"]  # the inbox repository's, used through this module

OBJECT_ASPECTS = {"activity": {"create", "update", "delete"}, "athlete": {"update"}}
INT_FIELDS = ("object_id", "owner_id", "subscription_id", "event_time")
ALLOWED_UPDATE_KEYS = {"activity": {"title", "type", "private"}, "athlete": {"authorized"}}
FIELDS = {"object_type", "object_id", "aspect_type", "updates", "owner_id", "subscription_id", "event_time"}


CLOCK_SLACK = 300  # seconds an event's time may be ahead of its receipt (the service's clock and this host's)


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
    def time(self) -> int:
        """When it happened, as far as fitsync believes: no later than a few minutes after it was received (an event
        dated years ahead would otherwise outrank every real one of its activity; the minutes allow for clocks)."""
        return min(self.event_time, int(self.received_at) + CLOCK_SLACK) if self.received_at else self.event_time

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


def store_event(conn: Connection, event: dict[str, Any]) -> bool:
    """Insert once (inside the caller's transaction); False when this event was already stored."""
    return inbox_rows.insert(conn, dedupe_key(event), json.dumps(event, separators=(",", ":")))


def events_after(store: StateStore, inbox_id: int, limit: int = 1000) -> list[Event]:
    return _events(inbox_rows.after(store, inbox_id, limit))


def deferred(store: StateStore, limit: int = 1000) -> list[Event]:
    """Events that wait: a check with the service that could not be made yet (service down, rate budget spent),
    or work held back by the webhook admission rules."""
    return _events(inbox_rows.deferred(store, limit))


def set_delete_verdict(conn: Connection, athlete_id: int, activity_id: int, verdict: str, reason: str) -> None:
    """The verdict on every undecided delete event of this activity (a run knows activities, not inbox rows)."""
    # Stored payloads are compact JSON: the inbox narrows to this activity's undecided deletes by what their text
    # contains (a number member ends with , or }), and the exact event is checked parsed. Narrow: a burst holds
    # thousands of deletes, and reading them all for each verdict was quadratic.
    members = ['"aspect_type":"delete"', '"object_type":"activity"']
    numbers = [f'"owner_id":{int(athlete_id)}', f'"object_id":{int(activity_id)}']
    rows = inbox_rows.undecided_containing(conn, members, [(f"{n},", f"{n}}}") for n in numbers])
    events = [
        e
        for e in _events(rows)
        if (e.owner_id, e.object_id, e.aspect_type, e.object_type) == (athlete_id, activity_id, "delete", "activity")
    ]
    set_verdict(conn, [e.inbox_id for e in events], verdict, reason)
    if verdict == "confirmed" and events:  # only the service's word makes a delete what later events are judged by
        inbox_rows.note_lifecycle(conn, athlete_id, activity_id, "delete", max(e.time for e in events))


def _events(rows: list[Any]) -> list[Event]:
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
