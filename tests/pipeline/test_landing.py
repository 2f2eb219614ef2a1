"""The landing area on a real SQLite state store: batches come back in order, merged by kind, across pages."""

from __future__ import annotations

from pathlib import Path

from fitsync.assets import landing
from fitsync.client.state_store import StateStore

ATHLETE = 42


def test_pending_merges_consecutive_batches_in_order_across_pages(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    landed = [("activity_summaries", list(range(i * 200, i * 200 + 200))) for i in range(3)]  # one listing page each
    landed += [("activity_details", [{"id": i}]) for i in range(45)]  # more rows than a page of _rows
    landed += [("activity_zones", [{"activity_id": 1}]), ("activity_details", [{"id": 99}])]
    with store.transaction() as conn:
        for bundle, payloads in landed:
            landing.land(conn, ATHLETE, bundle, payloads)
        landing.land(conn, ATHLETE + 1, "activity_details", [{"id": -1}])  # another athlete's: not ours

    batches = list(landing.pending(store, ATHLETE, max_rows=20))

    assert [(b.bundle, len(b.payloads)) for b in batches] == [
        ("activity_summaries", 200), ("activity_summaries", 200), ("activity_summaries", 200),  # a row is never split
        ("activity_details", 20), ("activity_details", 20), ("activity_details", 5),
        ("activity_zones", 1), ("activity_details", 1)]
    assert [p for b in batches for p in b.payloads] == [p for _, payloads in landed for p in payloads]
    assert sorted(i for b in batches for i in b.ids) == list(range(1, len(landed) + 1))
    landing.remove(store, [i for b in batches for i in b.ids])
    assert landing.count(store, ATHLETE) == 0 and landing.count(store, ATHLETE + 1) == 1
