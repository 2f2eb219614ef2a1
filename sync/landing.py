"""The landing area: fetched JSON waits in the state store until the warehouse loader takes it.

Fetching (many processes, the API pool) and loading DuckDB (one writer at a time) are decoupled: an
asset lands what it fetched in the same SQLite transaction that records its progress, so a crash never
loses a fetch nor fetches twice; the loader applies landed batches in order and removes them after the
DuckDB commit (a crash in between only re-applies an idempotent batch).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fitsync.state import landing as landed_rows
from fitsync.state.landing import count, remove
from fitsync.state.store import Connection, StateStore

__all__ = ["count", "remove"]  # the landing area's repository functions the loader uses through this module


@dataclass(frozen=True)
class Landed:
    ids: list[int]
    bundle: str
    payloads: list[Any]
    context: dict[str, Any]


def land(
    conn: Connection, athlete_id: int, bundle: str, payloads: list[Any], context: dict[str, Any] | None = None
) -> None:
    """Add one batch (inside the caller's transaction)."""
    landed_rows.insert(conn, athlete_id, bundle, json.dumps(payloads, separators=(",", ":")), json.dumps(context or {}))


def keep_unrecognized(
    conn: Connection, athlete_id: int, endpoint: str, problem: str, body: Any, object_id: Any = None
) -> None:
    """Land an answer of a shape fitsync does not know, whole, for `unrecognized_payloads` (never dropped)."""
    land(
        conn,
        athlete_id,
        "unrecognized",
        [
            {
                "endpoint": endpoint,
                "object_id": None if object_id is None else str(object_id),
                "problem": problem,
                "body": body,
            }
        ],
    )


def _rows(store: StateStore, athlete_id: int, page: int = 20) -> Iterator[Any]:
    """Landed rows in id order, a page at a time: memory stays flat however much a backfill landed.

    A landed row holds up to 200 summaries or 25 details (≈ 0.3–0.4 MB of JSON), so a page is 20 rows: enough
    for one merged batch of 500, where 200 rows held ≈ 70 MB and made a backfill's peak grow with its size.
    """
    after = 0
    while True:
        rows = landed_rows.page(store, athlete_id, after, page)
        yield from rows
        if len(rows) < page:
            return
        after = rows[-1]["id"]


# Bundles that write disjoint tables and are landed in turns (a chunk of 25 details, then those activities' zones).
# Each is merged with its own kind across the other: a backfill then loads in batches of `max_rows`, not of one chunk
# (10k activities: 800 batches of 25 took the warehouse step 27 s; the order between the two kinds does not matter).
COMMUTING = frozenset({"activity_details", "activity_zones"})


def pending(store: StateStore, athlete_id: int, max_rows: int = 500, max_bytes: int = 650_000) -> Iterator[Landed]:
    """Landed batches in order, consecutive batches of the same kind and context merged (details and zones across each
    other: COMMUTING) up to `max_rows` objects or `max_bytes` of JSON. A row is never split, and anything else landed
    in between keeps its place.

    The byte bound keeps a batch of details (≈ 13 KB each) near 50, a balance of time and memory measured on a
    10k-activity backfill (the warehouse step; batches of 25 details, as landed: 27 s and 362 MiB; ≈ 50: 10 s and
    379 MiB; 100 / 200 / 500: 10 / 7 / 6 s and 381 / 406 / 448 MiB). Summaries (≈ 1.5 KB) still merge to 400–600.
    """
    groups: dict[tuple[str, str], Landed] = {}  # open, in the order of their first row
    sizes: dict[tuple[str, str], int] = {}
    for row in _rows(store, athlete_id):
        key = (row["bundle"], row["context"])
        if any(other != key and not _commute(other[0], row["bundle"]) for other in groups):
            yield from groups.values()
            groups.clear()
            sizes.clear()
        group = groups.get(key)
        if group is not None and (len(group.payloads) >= max_rows or sizes[key] >= max_bytes):
            yield groups.pop(key)
            group = None
        payloads = json.loads(row["payload"])
        if group is None:
            groups[key] = Landed([row["id"]], row["bundle"], list(payloads), json.loads(row["context"]))
            sizes[key] = len(row["payload"])
        else:
            group.ids.append(row["id"])
            group.payloads.extend(payloads)
            sizes[key] += len(row["payload"])
    yield from groups.values()


def _commute(a: str, b: str) -> bool:
    return a != b and a in COMMUTING and b in COMMUTING
