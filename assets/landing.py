"""The landing area: fetched JSON waits in the state store until the warehouse loader takes it.

Fetching (many processes, the API pool) and loading DuckDB (one writer at a time) are decoupled: an
asset lands what it fetched in the same SQLite transaction that records its progress, so a crash never
loses a fetch nor fetches twice; the loader applies landed batches in order and removes them after the
DuckDB commit (a crash in between only re-applies an idempotent batch).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Iterator

from fitsync.client.state_store import StateStore


@dataclass(frozen=True)
class Landed:
    ids: list[int]
    bundle: str
    payloads: list[Any]
    context: dict[str, Any]


def land(conn: sqlite3.Connection, athlete_id: int, bundle: str, payloads: list[Any],
         context: dict[str, Any] | None = None) -> None:
    """Add one batch (inside the caller's transaction)."""
    conn.execute(
        "INSERT INTO landing (athlete_id, bundle, payload, context, created_at) VALUES (?, ?, ?, ?, ?)",
        (athlete_id, bundle, json.dumps(payloads, separators=(",", ":")), json.dumps(context or {}), time.time()),
    )


def keep_unrecognized(conn: sqlite3.Connection, athlete_id: int, endpoint: str, problem: str, body: Any,
                      object_id: Any = None) -> None:
    """Land an answer of a shape fitsync does not know, whole, for `unrecognized_payloads` (never dropped)."""
    land(conn, athlete_id, "unrecognized", [{"endpoint": endpoint, "object_id": None if object_id is None else
                                             str(object_id), "problem": problem, "body": body}])


def _rows(store: StateStore, athlete_id: int, page: int = 20) -> Iterator[sqlite3.Row]:
    """Landed rows in id order, a page at a time: memory stays flat however much a backfill landed.

    A landed row holds up to 200 summaries or 25 details (≈ 0.3–0.4 MB of JSON), so a page is 20 rows: enough
    for one merged batch of 500, where 200 rows held ≈ 70 MB and made a backfill's peak grow with its size.
    """
    after = 0
    while True:
        with store.reading() as conn:
            rows = conn.execute(
                "SELECT id, bundle, payload, context FROM landing WHERE athlete_id = ? AND id > ? ORDER BY id LIMIT ?",
                (athlete_id, after, page),
            ).fetchall()
        yield from rows
        if len(rows) < page:
            return
        after = rows[-1]["id"]


def pending(store: StateStore, athlete_id: int, max_rows: int = 500) -> Iterator[Landed]:
    """Landed batches in order, consecutive batches of the same kind and context merged."""
    group: Landed | None = None
    for row in _rows(store, athlete_id):
        payloads, context = json.loads(row["payload"]), json.loads(row["context"])
        if group and group.bundle == row["bundle"] and group.context == context and len(group.payloads) < max_rows:
            group.ids.append(row["id"])
            group.payloads.extend(payloads)
            continue
        if group:
            yield group
        group = Landed([row["id"]], row["bundle"], list(payloads), context)
    if group:
        yield group


def remove(store: StateStore, ids: list[int]) -> None:
    with store.transaction() as conn:
        conn.executemany("DELETE FROM landing WHERE id = ?", [(i,) for i in ids])


def count(store: StateStore, athlete_id: int) -> int:
    with store.reading() as conn:
        return conn.execute("SELECT count(*) FROM landing WHERE athlete_id = ?", (athlete_id,)).fetchone()[0]
