"""From inbox events to work: per athlete, which activities to re-pull and which to delete.

Events of one activity are folded in event-time order (deliveries arrive out of order and are retried),
judged against the last create or delete already acted on: several updates are one re-pull; create then
delete is a delete only; an update of a deleted activity does nothing; a create after a delete (Only You
and back, for a read-only grant) revives it; a delete older than a create already acted on does nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field

from fitsync.webhooks.inbox import Event

Lifecycle = dict[tuple[int, int], tuple[str, int]]  # (athlete, activity) → (aspect, event_time)


@dataclass
class AthleteWork:
    athlete_id: int
    refresh: set[int] = field(default_factory=set)
    delete: set[int] = field(default_factory=set)
    inbox_ids: list[int] = field(default_factory=list)

    @property
    def run_key(self) -> str:
        """Derived from the events themselves: the same events never launch twice, new ones always do."""
        digest = hashlib.sha256(",".join(map(str, sorted(self.inbox_ids))).encode()).hexdigest()[:20]
        return f"webhook-{digest}"


@dataclass
class Plan:
    work: dict[int, AthleteWork] = field(default_factory=dict)
    deauthorized: dict[int, Event] = field(default_factory=dict)  # athlete → the deauthorization event
    ignored: list[int] = field(default_factory=list)


def _superseded(event: Event, last: tuple[str, int] | None) -> bool:
    """True when what was already acted on makes this event moot."""
    if last is None:
        return False
    aspect, when = last
    if event.aspect_type == "delete":
        return aspect == "create" and event.event_time < when
    if event.aspect_type == "create":
        return aspect == "delete" and event.event_time <= when
    return aspect == "delete"  # an update of a deleted activity


def plan(events: list[Event], lifecycle: Lifecycle) -> Plan:
    """Fold events into work; `lifecycle` (the last create/delete acted on) is updated in place."""
    out = Plan()
    for event in sorted(events, key=lambda e: (e.event_time, e.inbox_id)):
        if event.deauthorization:
            out.deauthorized.setdefault(event.owner_id, event)
            continue
        work = out.work.setdefault(event.owner_id, AthleteWork(event.owner_id))
        work.inbox_ids.append(event.inbox_id)
        key = (event.owner_id, event.object_id)
        if _superseded(event, lifecycle.get(key)):
            out.ignored.append(event.inbox_id)
        elif event.aspect_type == "delete":
            lifecycle[key] = ("delete", event.event_time)
            work.refresh.discard(event.object_id)
            work.delete.add(event.object_id)
        else:
            if event.aspect_type == "create":
                lifecycle[key] = ("create", event.event_time)
                work.delete.discard(event.object_id)
            work.refresh.add(event.object_id)
    return out


def load_lifecycle(conn: sqlite3.Connection) -> Lifecycle:
    return {
        (r[0], r[1]): (r[2], r[3])
        for r in conn.execute("SELECT athlete_id, activity_id, aspect, event_time FROM webhook_lifecycle")
    }


def save_lifecycle(conn: sqlite3.Connection, before: Lifecycle, after: Lifecycle) -> None:
    conn.executemany(
        "INSERT INTO webhook_lifecycle VALUES (?, ?, ?, ?) ON CONFLICT (athlete_id, activity_id) "
        "DO UPDATE SET aspect = excluded.aspect, event_time = excluded.event_time",
        [(a, b, aspect, t) for (a, b), (aspect, t) in after.items() if before.get((a, b)) != (aspect, t)],
    )
