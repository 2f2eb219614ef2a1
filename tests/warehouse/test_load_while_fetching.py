"""Loads made while a fetch step runs (sync/load_landed.WhileFetching): when they happen, and that a warehouse file
held by another process defers them without losing a batch. Real SQLite state store, real DuckDB file, the
sandbox's answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fitsync.state.store import StateStore
from fitsync.sync import landing, load_landed
from fitsync.sync.load_landed import EVERY_DETAILS, EVERY_SECONDS, WhileFetching
from fitsync.warehouse import constraints, db
from fitsync.warehouse.location import Warehouse


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _land(store: StateStore, aid: int, details: list[dict[str, Any]]) -> None:
    with store.transaction() as conn:
        landing.land(conn, aid, "activity_details", details)


def _detailed(path: Path) -> int:
    if not path.exists():
        return 0
    with db.reading(path) as conn:
        return int(conn.execute("SELECT count(*) FROM activities WHERE detail_loaded").fetchall()[0][0])


def test_loads_after_enough_details_or_time_and_before_a_wait(tmp_path: Path, payloads: dict[str, Any]) -> None:
    aid, details = payloads["athlete_id"], payloads["details"]
    store, path, clock = StateStore(tmp_path / "state.db"), tmp_path / "warehouse.duckdb", Clock()
    notes: list[str] = []
    early = WhileFetching(store, aid, Warehouse.of(path), notes.append, notes.append, clock=clock)

    _land(store, aid, details[:2])
    early.fetched(2)  # neither enough details nor enough time: stays landed
    assert _detailed(path) == 0 and landing.count(store, aid) == 1

    clock.now += EVERY_SECONDS
    early.fetched(0)  # a minute went by
    assert _detailed(path) == 2 and landing.count(store, aid) == 0

    _land(store, aid, details[2:4])
    early.fetched(EVERY_DETAILS)
    assert _detailed(path) == 4

    early.before_wait(30)  # nothing fetched since the last load: no load
    _land(store, aid, details[4:6])
    early.fetched(2)
    early.before_wait(30)
    assert _detailed(path) == 6 and early.loads == 3 and early.metadata()["batches_loaded_while_fetching"] == 3
    assert notes == []


def test_a_file_held_by_another_process_defers_the_load_and_loses_nothing(
    tmp_path: Path, payloads: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    aid, details = payloads["athlete_id"], payloads["details"]
    store, path = StateStore(tmp_path / "state.db"), tmp_path / "warehouse.duckdb"
    db.migrate(path)
    monkeypatch.setattr(load_landed, "WAIT_FOR_FILE", 0.5)
    notes: list[str] = []
    early = WhileFetching(store, aid, Warehouse.of(path), notes.append, notes.append)
    _land(store, aid, details[:3])
    holder = subprocess.Popen(  # an analyst's session writing the file, in a process of its own
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(path)!r}); print('open', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        early.fetched(EVERY_DETAILS)
        assert early.metadata().get("loads_deferred") == 1 and landing.count(store, aid) == 1
        assert any("stays landed" in note for note in notes), notes
    finally:
        holder.communicate("")
    early.before_wait(60)  # the file is free again: the same batch loads before the next wait
    assert _detailed(path) == 3 and landing.count(store, aid) == 0


def test_a_load_stages_against_the_warehouses_own_not_null_columns(
    tmp_path: Path, payloads: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columns a row cannot lack are read from the warehouse's write connection, not from the migrations run on
    an in-memory database (≈ 0.25 s per process): a column this warehouse requires leaves out the row lacking it,
    said, and the rest of the batch loads."""
    aid, summaries = payloads["athlete_id"], payloads["summaries"][:3]
    store, path = StateStore(tmp_path / "state.db"), tmp_path / "warehouse.duckdb"
    db.migrate(path)
    with db.writing(path) as conn:  # a constraint the migrations do not make
        conn.execute("ALTER TABLE activities ALTER COLUMN name SET NOT NULL")

    def not_asked() -> None:
        raise AssertionError("the migrations' NOT NULL columns were asked for")

    monkeypatch.setattr(constraints, "migrated", not_asked)
    with store.transaction() as conn:
        landing.land(conn, aid, "activity_summaries", [{**summaries[0], "name": None}, *summaries[1:]])
    reported: list[str] = []
    loaded = load_landed.load_landed(store, aid, Warehouse.of(path), print, reported.append)
    assert loaded.left_out == {"activities": 1} and landing.count(store, aid) == 0
    assert len(reported) == 1 and "activities" in reported[0], reported
    with db.reading(path) as conn:
        stored = {r[0] for r in conn.execute("SELECT activity_id FROM activities").fetchall()}
    assert stored == {s["id"] for s in summaries[1:]}
