"""The landing area on a real SQLite state store: batches come back in order, merged by kind, across pages."""

from __future__ import annotations

import json
from pathlib import Path

from fitsync.state import landing as landed_rows
from fitsync.state.store import StateStore
from fitsync.sync import landing, progress

ATHLETE = 42


def test_pending_merges_consecutive_batches_in_order_across_pages(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    landed = [("activity_summaries", list(range(i * 200, i * 200 + 200))) for i in range(3)]  # one listing page each
    landed += [("activity_details", [{"id": i}]) for i in range(45)]  # more rows than a page of _rows
    landed += [("activity_zones", [{"activity_id": 1}]), ("activity_details", [{"id": 99}])]
    landed += [("delete_activities", [{"ids": [7], "reason": "not found"}])]
    landed += [(bundle, [{"n": i}]) for i in range(30) for bundle in ("activity_details", "activity_zones")]
    with store.transaction() as conn:
        for bundle, payloads in landed:
            landing.land(conn, ATHLETE, bundle, payloads)
        landing.land(conn, ATHLETE + 1, "activity_details", [{"id": -1}])  # another athlete's: not ours

    batches = list(landing.pending(store, ATHLETE, max_rows=20))

    assert [(b.bundle, len(b.payloads)) for b in batches] == [
        ("activity_summaries", 200),
        ("activity_summaries", 200),
        ("activity_summaries", 200),  # a row is never split
        ("activity_details", 20),
        ("activity_details", 20),
        # details and zones, landed in turns, are merged each with its own kind (they write different tables)…
        ("activity_details", 6),
        ("activity_zones", 1),
        # …but never across anything else: a deletion keeps its place
        ("delete_activities", 1),
        ("activity_details", 20),
        ("activity_zones", 20),
        ("activity_details", 10),
        ("activity_zones", 10),
    ]
    for bundle in {b for b, _ in landed}:  # each kind in the order it was landed
        assert [p for b in batches if b.bundle == bundle for p in b.payloads] == [
            p for kind, payloads in landed if kind == bundle for p in payloads
        ]
    deletion = next(i for i, b in enumerate(batches) if b.bundle == "delete_activities")
    assert (
        max(i for b in batches[:deletion] for i in b.ids)
        < batches[deletion].ids[0]
        < min(i for b in batches[deletion + 1 :] for i in b.ids)
    )
    assert sorted(i for b in batches for i in b.ids) == list(range(1, len(landed) + 1))
    landing.remove(store, [i for b in batches for i in b.ids])
    assert landing.count(store, ATHLETE) == 0 and landing.count(store, ATHLETE + 1) == 1


def test_landed_objects_come_back_as_their_texts_with_their_checks_whatever_the_row_s_format(tmp_path: Path) -> None:
    """Each object is landed as its JSON text, one per line, and comes back as that text with its checks
    (landing.CHECKED), merged across rows; a row landed before that (one line of JSON) is read and checked as before."""
    store = StateStore(tmp_path / "state.db")
    first = [{"id": 1, "name": "a,\nb", "distance": 5.0}, {"id": 2, "distance": 1.0}]
    old = {"id": 3, "distance": "abc", "name": 'line\nbreak, "quoted"'}
    with store.transaction() as conn:
        landing.land(conn, ATHLETE, "activity_details", first)
        landed_rows.insert(conn, ATHLETE, "activity_details", json.dumps([old]), "{}")  # landed one line
        landing.land(conn, ATHLETE, "activity_details", [])
        landing.land(conn, ATHLETE, "activity_details", [{"id": 4, "distance": "far"}])
        landing.land(conn, ATHLETE, "activity_zones", [{"activity_id": 4, "zones": []}])

    details, zones = landing.pending(store, ATHLETE)

    objects = [*first, old, {"id": 4, "distance": "far"}]
    assert [json.loads(t) for t in details.texts] == details.payloads == objects
    assert details.issues == [landing.issues_of(p) for p in objects]
    assert [any(i.startswith("not a number: distance=") for i in found) for found in details.issues] == [
        False,
        False,
        True,
        True,
    ]
    assert zones.payloads == [{"activity_id": 4, "zones": []}] and zones.issues is None


def test_segment_details_go_starred_first_then_in_the_order_their_efforts_were_seen(tmp_path: Path) -> None:
    """Details are fetched newest activity first, so the order segments were seen in is newest first: after the
    athlete's starred segments, those of the newest efforts get their details first under a short budget."""
    store = StateStore(tmp_path / "state.db")
    with store.transaction() as conn:
        progress.note_segments(conn, ATHLETE, [900, 100, 500], starred=False)  # the newest activity's efforts
        progress.note_segments(conn, ATHLETE, [300, 100], starred=False)  # an older one's (100 seen already)
        progress.note_segments(conn, ATHLETE, [700, 500], starred=True)  # 500: seen in an effort, and starred
        progress.note_segments(conn, ATHLETE + 1, [1], starred=True)  # another athlete's
        conn.execute("UPDATE known_segments SET needs_detail = 0 WHERE segment_id = 300")  # fetched already

    assert progress.segments_to_detail(store, ATHLETE) == [500, 700, 900, 100]


def test_a_removal_frees_the_rows_quickly_and_leaves_the_connection_as_it_was(tmp_path: Path) -> None:
    """Removing loaded rows does not overwrite their freed pages (SECURE_DELETE's zeros made it most of a load's
    removals), and the connection the store keeps goes back to its own setting, which a purge then has."""
    store = StateStore(tmp_path / "state.db")
    with store.transaction() as conn:
        before = conn.execute("PRAGMA secure_delete").fetchone()[0]
        landing.land(conn, 1, "activity_details", [{"id": i, "name": "x" * 20_000} for i in range(25)])
    [batch] = landing.pending(store, 1)
    with store.transaction() as conn:  # what remove sees: the store's kept connection
        conn.execute("PRAGMA secure_delete = 1")
    wal = tmp_path / "state.db-wal"
    grown = wal.stat().st_size
    landed_rows.remove(store, batch.ids)
    assert landing.count(store, 1) == 0
    assert wal.stat().st_size - grown < 100_000, "the freed overflow pages were written again, as zeros"
    with store.transaction() as conn:
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        conn.execute(f"PRAGMA secure_delete = {before}")
