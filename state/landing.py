"""The landing area (`landing`): fetched JSON waiting for the warehouse loader, per athlete, in landing order.

The payloads arrive encoded; how they are batched and merged is sync/landing.py's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from .store import Connection, StateStore


def insert(conn: Connection, athlete_id: int, bundle: str, payload: str, context: str) -> None:
    """Add one batch (inside the caller's transaction, with the progress it records)."""
    conn.execute(
        "INSERT INTO landing (athlete_id, bundle, payload, context, created_at) VALUES (?, ?, ?, ?, ?)",
        (athlete_id, bundle, payload, context, time.time()),
    )


def page(store: StateStore, athlete_id: int, after: int, limit: int) -> list[Any]:
    """Up to `limit` landed rows (id, bundle, payload, context) after id `after`, in id order."""
    with store.reading() as conn:
        return conn.execute(
            "SELECT id, bundle, payload, context FROM landing WHERE athlete_id = ? AND id > ? ORDER BY id LIMIT ?",
            (athlete_id, after, limit),
        ).fetchall()


def remove(store: StateStore, ids: list[int]) -> None:
    """Remove loaded rows (their content is in the warehouse now)."""
    with store.transaction() as conn, _freed_pages_left(store, conn):
        conn.executemany("DELETE FROM landing WHERE id = ?", [(i,) for i in ids])


@contextlib.contextmanager
def _freed_pages_left(store: StateStore, conn: Connection) -> Iterator[None]:
    """SQLite built with SECURE_DELETE (Debian's) overwrites every freed page with zeros: for a merged batch's ≈ 8 MB
    of overflow pages that was most of the removal (10k details: 0.63 s of a 4 s load). FAST still clears the rows'
    cells, not the freed pages; the store's kept connection goes back to its own setting (a purge has it)."""
    if store.dialect != "sqlite":
        yield
        return
    setting = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
    conn.execute("PRAGMA secure_delete = FAST")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {setting}")


def count_older(store: StateStore, athlete_id: int, before: float) -> int:
    """Landed rows added before `before` (a Unix time): what an earlier run fetched and did not load."""
    with store.reading() as conn:
        return int(
            conn.execute(
                "SELECT count(*) FROM landing WHERE athlete_id = ? AND created_at < ?", (athlete_id, before)
            ).fetchone()[0]
        )


def count(store: StateStore, athlete_id: int) -> int:
    with store.reading() as conn:
        return int(conn.execute("SELECT count(*) FROM landing WHERE athlete_id = ?", (athlete_id,)).fetchone()[0])
