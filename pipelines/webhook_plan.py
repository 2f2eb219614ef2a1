"""From inbox events to work: per athlete, which activities to re-pull and which to delete.

Events of one activity are folded in event-time order (deliveries arrive out of order and retried):
several updates are one re-pull; create then delete is a delete only; an event older than a delete
already acted on does nothing; a create after a delete (Only You and back, for a read-only grant) revives.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field

from .webhook_inbox import Event


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
    deauthorized: dict[int, int] = field(default_factory=dict)  # athlete → inbox id of the event
    ignored: list[int] = field(default_factory=list)


def plan(events: list[Event], deleted_at: dict[tuple[int, int], int]) -> Plan:
    """`deleted_at` maps (athlete, activity) to the event time of a delete already acted on; it is updated."""
    out = Plan()
    for event in sorted(events, key=lambda e: (e.event_time, e.inbox_id)):
        if event.deauthorization:
            out.deauthorized.setdefault(event.owner_id, event.inbox_id)
            continue
        work = out.work.setdefault(event.owner_id, AthleteWork(event.owner_id))
        work.inbox_ids.append(event.inbox_id)
        key = (event.owner_id, event.object_id)
        if event.aspect_type == "delete":
            deleted_at[key] = max(deleted_at.get(key, 0), event.event_time)
            work.refresh.discard(event.object_id)
            work.delete.add(event.object_id)
        elif key in deleted_at and (event.aspect_type != "create" or event.event_time <= deleted_at[key]):
            out.ignored.append(event.inbox_id)  # about an activity already deleted
        else:
            if event.aspect_type == "create":
                deleted_at.pop(key, None)
                work.delete.discard(event.object_id)
            work.refresh.add(event.object_id)
    for athlete in out.deauthorized:  # nothing else happens for an athlete who revoked access
        out.work.pop(athlete, None)
    return out


def load_deleted(conn: sqlite3.Connection) -> dict[tuple[int, int], int]:
    return {(r[0], r[1]): r[2] for r in conn.execute("SELECT athlete_id, activity_id, event_time FROM webhook_deletions")}


def save_deleted(conn: sqlite3.Connection, before: dict[tuple[int, int], int], after: dict[tuple[int, int], int]) -> None:
    conn.executemany("DELETE FROM webhook_deletions WHERE athlete_id = ? AND activity_id = ?",
                     [key for key in before if key not in after])
    conn.executemany("INSERT OR REPLACE INTO webhook_deletions VALUES (?, ?, ?)",
                     [(a, b, t) for (a, b), t in after.items() if before.get((a, b)) != t])
