"""The webhook inbox (`webhook_inbox`): events as received, each stored once, with the verdict on it; and the last
create or delete the sensor acted on per activity (`webhook_lifecycle`).

Payloads are the compact JSON webhooks/inbox.py validated and encoded; what an event means is webhooks/'.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from .store import Connection, StateStore

Lifecycle = dict[tuple[int, int], tuple[str, int]]  # (athlete, activity) → (aspect, event_time)


def insert(conn: Connection, dedupe_key: str, payload: str) -> bool:
    """Insert once (inside the caller's transaction); False when this event was already stored."""
    cursor = conn.execute(
        "INSERT INTO webhook_inbox (dedupe_key, received_at, payload) VALUES (?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING",
        (dedupe_key, time.time(), payload),
    )
    return cursor.rowcount == 1


def after(store: StateStore, inbox_id: int, limit: int) -> list[Any]:
    """Rows (id, payload, received_at) after `inbox_id`, in order."""
    with store.reading() as conn:
        return conn.execute(
            "SELECT id, payload, received_at FROM webhook_inbox WHERE id > ? ORDER BY id LIMIT ?", (inbox_id, limit)
        ).fetchall()


def deferred(store: StateStore, limit: int) -> list[Any]:
    """Rows (id, payload, received_at) whose verdict is `deferred`, in order."""
    with store.reading() as conn:
        return conn.execute(
            "SELECT id, payload, received_at FROM webhook_inbox WHERE verdict = 'deferred' ORDER BY id LIMIT ?",
            (limit,),
        ).fetchall()


def set_verdict(conn: Connection, inbox_ids: list[int], verdict: str, reason: str) -> None:
    conn.executemany(
        "UPDATE webhook_inbox SET verdict = ?, verdict_reason = ? WHERE id = ?",
        [(verdict, reason, i) for i in inbox_ids],
    )


def reopen(conn: Connection, inbox_ids: Iterable[int]) -> None:
    """Events that waited (deferred) and are admitted now: undecided again."""
    conn.executemany(
        "UPDATE webhook_inbox SET verdict = NULL, verdict_reason = NULL WHERE id = ? AND verdict = 'deferred'",
        [(i,) for i in inbox_ids],
    )


def undecided_containing(conn: Connection, members: list[str], alternatives: list[tuple[str, str]]) -> list[Any]:
    """Rows (id, payload, received_at) without a verdict whose payload contains every one of `members` and one of each pair of
    `alternatives`: a narrowing in SQL both stores speak (LIKE), for the caller to check parsed."""
    sql = (
        "SELECT id, payload, received_at FROM webhook_inbox WHERE verdict IS NULL"
        + " AND payload LIKE ?" * len(members)
        + " AND (payload LIKE ? OR payload LIKE ?)" * len(alternatives)
    )
    params = [f"%{m}%" for m in members] + [f"%{a}%" for pair in alternatives for a in pair]
    return conn.execute(sql, params).fetchall()


def mark_processed(store: StateStore, inbox_ids: list[int]) -> None:
    with store.transaction() as conn:
        conn.executemany(
            "UPDATE webhook_inbox SET processed_at = ? WHERE id = ? AND processed_at IS NULL",
            [(time.time(), i) for i in inbox_ids],
        )


def summary(store: StateStore) -> tuple[float | None, int, int]:
    """(when the last event arrived, how many are unprocessed, how many deferred)."""
    with store.reading() as conn:
        row = conn.execute(
            "SELECT max(received_at) AS last, count(*) FILTER (WHERE processed_at IS NULL) AS waiting, "
            "count(*) FILTER (WHERE verdict = 'deferred') AS deferred FROM webhook_inbox"
        ).fetchone()
    return row["last"], int(row["waiting"]), int(row["deferred"])


def count(store: StateStore) -> int:
    with store.reading() as conn:
        return int(conn.execute("SELECT count(*) FROM webhook_inbox").fetchone()[0])


def load_lifecycle(conn: Connection) -> Lifecycle:
    return {
        (int(r[0]), int(r[1])): (str(r[2]), int(r[3]))
        for r in conn.execute("SELECT athlete_id, activity_id, aspect, event_time FROM webhook_lifecycle")
    }


def note_lifecycle(conn: Connection, athlete_id: int, activity_id: int, aspect: str, event_time: int) -> None:
    """One activity's create or delete acted on, unless one acted on later is stored."""
    conn.execute(
        "INSERT INTO webhook_lifecycle VALUES (?, ?, ?, ?) ON CONFLICT (athlete_id, activity_id) "
        "DO UPDATE SET aspect = excluded.aspect, event_time = excluded.event_time "
        "WHERE webhook_lifecycle.event_time <= excluded.event_time",
        (athlete_id, activity_id, aspect, event_time),
    )


def save_lifecycle(conn: Connection, before: Lifecycle, after: Lifecycle) -> None:
    """Write what changed between `before` and `after`."""
    conn.executemany(
        "INSERT INTO webhook_lifecycle VALUES (?, ?, ?, ?) ON CONFLICT (athlete_id, activity_id) "
        "DO UPDATE SET aspect = excluded.aspect, event_time = excluded.event_time",
        [(a, b, aspect, t) for (a, b), (aspect, t) in after.items() if before.get((a, b)) != (aspect, t)],
    )
