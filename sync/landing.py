"""The landing area: fetched JSON waits in the state store until the warehouse loader takes it.

Fetching (many processes, the API pool) and loading DuckDB (one writer at a time) are decoupled: an
asset lands what it fetched in the same SQLite transaction that records its progress, so a crash never
loses a fetch nor fetches twice; the loader applies landed batches in order and removes them after the
DuckDB commit (a crash in between only re-applies an idempotent batch).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fitsync.client.records import record
from fitsync.state import landing as landed_rows
from fitsync.state.landing import count, remove
from fitsync.state.store import Connection, StateStore
from fitsync.warehouse.plausible import type_issues

__all__ = ["count", "remove"]  # the landing area's repository functions the loader uses through this module


# Bundles whose objects a load checks as records (client/records.py) and for values that are not numbers
# (warehouse/plausible.py): checked as they are landed, where they are objects already, and landed with them.
CHECKED = frozenset({"activity_summaries", "activity_details"})
# The context member holding a batch's checks (one list per object): never part of what tells batches apart.
ISSUES = "_issues"
# A landed payload is a JSON array of compact objects, one per line: the loader takes each object's text as it is,
# without parsing and serializing it again (10k details: ≈ 3.4 s of Python in a 19 s warehouse step). Rows landed
# before that are one line, parsed as before.
LINES = "[\n"


def issues_of(raw: Any) -> list[str]:
    """What a load notes about an activity (summary or detail): a record's issues and values that are not numbers."""
    return [*record("activity", raw).issues, *type_issues("activities", raw)]


@dataclass(frozen=True)
class Landed:
    """Consecutive landed rows merged: each object's JSON text and, for CHECKED bundles, its issues."""

    ids: list[int]
    bundle: str
    texts: list[str]
    context: dict[str, Any]
    issues: list[list[str]] | None = None

    @classmethod
    def of(cls, ids: list[int], bundle: str, payloads: list[Any], context: dict[str, Any]) -> Landed:
        """A batch of objects (not landed: a test's, a recorded answer's)."""
        texts = [_compact(p) for p in payloads]
        return cls(ids, bundle, texts, context, [issues_of(p) for p in payloads] if bundle in CHECKED else None)

    @functools.cached_property
    def payloads(self) -> list[Any]:
        """The objects, parsed: for the small bundles a load reads members of (zones' activity ids, deletions)."""
        return [json.loads(t) for t in self.texts]


def land(
    conn: Connection, athlete_id: int, bundle: str, payloads: list[Any], context: dict[str, Any] | None = None
) -> None:
    """Add one batch (inside the caller's transaction)."""
    context = dict(context or {})
    if bundle in CHECKED and any(found := [issues_of(p) for p in payloads]):
        context[ISSUES] = found
    text = LINES + ",\n".join(_compact(p) for p in payloads) + "\n]"
    landed_rows.insert(conn, athlete_id, bundle, text, json.dumps(context))


def _compact(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"))


def _texts(payload: str) -> tuple[list[str], list[Any] | None]:
    """A landed payload's object texts, and the objects where they had to be parsed (a row landed one line)."""
    if payload.startswith(LINES):
        inner = payload[len(LINES) : -2]
        return (inner.split(",\n") if inner else []), None
    objects = json.loads(payload)
    return [_compact(p) for p in objects], objects


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


# How large a merged batch grows (pending): objects, and bytes of their JSON.
BATCH_OBJECTS = 500
BATCH_BYTES = 8_000_000


def pending(
    store: StateStore, athlete_id: int, max_rows: int = BATCH_OBJECTS, max_bytes: int = BATCH_BYTES
) -> Iterator[Landed]:
    """Landed batches in order, consecutive batches of the same kind and context merged (details and zones across each
    other: COMMUTING) up to `max_rows` objects or `max_bytes` of JSON. A row is never split, and anything else landed
    in between keeps its place.

    A load's cost is mostly per batch (≈ 40 statements, DuckDB 1.5), so batches are large. The warehouse step of a
    10k-activity backfill (details and zones, landed in chunks of 25) took 14.9 s in batches of ≈ 45 details (650 KB),
    7.5 s in batches of ≈ 130 (2 MB), 4.1 s in batches of 500 and 2.7 s in batches of 1,000, with a peak RSS of 340 /
    366 / 407 / 538 MiB. Under the real limits a backfill's fetching takes days: the memory matters more than those
    seconds. The byte bound keeps an odd landing of huge objects from making one batch of them.
    """
    groups: dict[tuple[str, str], Landed] = {}  # open, in the order of their first row
    sizes: dict[tuple[str, str], int] = {}
    for row in _rows(store, athlete_id):
        context = json.loads(row["context"])
        issues = context.pop(ISSUES, None)
        key = (row["bundle"], json.dumps(context, sort_keys=True))
        if any(other != key and not _commute(other[0], row["bundle"]) for other in groups):
            yield from groups.values()
            groups.clear()
            sizes.clear()
        group = groups.get(key)
        if group is not None and (len(group.texts) >= max_rows or sizes[key] >= max_bytes):
            yield groups.pop(key)
            group = None
        texts, objects = _texts(row["payload"])
        if row["bundle"] in CHECKED:
            issues = [issues_of(p) for p in objects] if objects is not None else issues or [[] for _ in texts]
        if group is None:
            group = groups[key] = Landed([], row["bundle"], [], context, [] if row["bundle"] in CHECKED else None)
            sizes[key] = 0
        group.ids.append(row["id"])
        group.texts.extend(texts)
        if group.issues is not None:
            group.issues.extend(issues)
        sizes[key] += len(row["payload"])
    yield from groups.values()


def _commute(a: str, b: str) -> bool:
    return a != b and a in COMMUTING and b in COMMUTING
