"""Upgrading a warehouse: a file made by an older fitsync keeps its data and gets the newer views."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from fitsync.warehouse import db


def migrate_to(path: Path, version: int) -> None:
    """The warehouse as an older fitsync left it: migrations up to `version` only."""
    conn = duckdb.connect(str(path))
    try:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, "
                     "applied_at TIMESTAMPTZ DEFAULT now())")
        for number, name, sql in db.migration_scripts():
            if number <= version:
                conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [number, name])
    finally:
        conn.close()


def efforts(conn: duckdb.DuckDBPyConnection) -> None:
    """3 athletes x 6 segments x 40 efforts: ties, hidden and zero-time efforts, ids out of time order, a
    segment without a segments row."""
    conn.execute("INSERT INTO segments (segment_id, name, synced_at, raw) "
                 "SELECT 700 + s, 'Segment ' || s, now(), '{}' FROM range(0, 5) r(s)")
    conn.execute("""
        INSERT INTO segment_efforts (effort_id, activity_id, athlete_id, segment_id, name, elapsed_time, moving_time,
                                     start_date, start_date_local, pr_rank, hidden, raw)
        SELECT 10000 + (i * 7919) % 720, 500 + i // 6, 1 + i % 3, 700 + (i // 3) % 6, 'effort',
               CASE WHEN i % 37 = 0 THEN 0 ELSE 200 + (i * 104729) % 50 END, 200,
               TIMESTAMPTZ '2024-01-01 08:00:00+00' + to_hours(CAST(i // 2 AS INTEGER)),
               TIMESTAMP '2024-01-01 09:00:00' + to_hours(CAST(i // 2 AS INTEGER)),
               CASE WHEN i % 5 = 0 THEN 1 END, i % 11 = 0, '{}'
        FROM range(0, 720) r(i)""")


def progression(path: Path) -> list[tuple[Any, ...]]:
    with db.reading(path) as conn:
        return conn.execute("SELECT * FROM segment_effort_progression").fetchall()


def test_upgrade_from_version_2_replaces_the_progression_view_with_the_same_rows(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    migrate_to(path, 2)
    with db.writing(path) as conn:
        efforts(conn)
    before = progression(path)
    assert len(before) > 500 and any(row[12] is None for row in before)  # previous_best NULL on first attempts

    assert db.migrate(path) == max(v for v, _, _ in db.migration_scripts()) >= 3
    with db.reading(path) as conn:
        definition = conn.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'segment_effort_progression'"
                                  ).fetchall()[0][0]
    assert "least(" in definition.lower()  # the new definition is in force ...
    assert progression(path) == before  # ... with the same rows in the same order
