"""Upgrading a warehouse: a file made by an older fitsync keeps its data and gets the views of the newer one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from fitsync.warehouse import db

# segment_effort_progression as the first fitsync release defined it: two window aggregates.
OLDER_PROGRESSION = """
CREATE OR REPLACE VIEW segment_effort_progression AS
WITH s AS MATERIALIZED (
    SELECT segment_id, name FROM segments
), e AS (
    SELECT e.athlete_id, e.segment_id, coalesce(s.name, e.name) AS segment_name, e.effort_id, e.activity_id,
           e.start_date, e.start_date_local, CAST(e.start_date_local AS DATE) AS local_date,
           e.elapsed_time, e.moving_time, e.pr_rank AS service_pr_rank
    FROM segment_efforts e LEFT JOIN s ON s.segment_id = e.segment_id
    WHERE NOT coalesce(e.hidden, false) AND e.elapsed_time > 0
), ordered AS (
    SELECT *,
           row_number() OVER w AS attempt,
           min(elapsed_time) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_best,
           min(elapsed_time) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_best
    FROM e
    WINDOW w AS (PARTITION BY athlete_id, segment_id ORDER BY start_date, effort_id)
)
SELECT athlete_id, segment_id, segment_name, effort_id, activity_id, start_date, start_date_local, local_date,
       elapsed_time, moving_time, CAST(attempt AS INTEGER) AS attempt, running_best, previous_best,
       (previous_best IS NULL OR elapsed_time < previous_best) AS is_pr,
       previous_best IS NULL AS is_first_attempt,
       CASE WHEN elapsed_time < previous_best THEN previous_best - elapsed_time END AS improvement_s,
       CASE WHEN elapsed_time < previous_best THEN 100.0 * (previous_best - elapsed_time) / previous_best END
           AS improvement_pct,
       service_pr_rank
FROM ordered
ORDER BY athlete_id, segment_id, attempt
"""


def efforts(conn: duckdb.DuckDBPyConnection) -> None:
    """3 athletes x 6 segments x 40 efforts: ties, hidden and zero-time efforts, ids out of time order, a
    segment without a segments row."""
    conn.execute(
        "INSERT INTO segments (segment_id, name, synced_at, raw) "
        "SELECT 700 + s, 'Segment ' || s, now(), '{}' FROM range(0, 5) r(s)"
    )
    conn.execute("""
        INSERT INTO segment_efforts (effort_id, activity_id, athlete_id, segment_id, name, elapsed_time, moving_time,
                                     start_date, start_date_local, pr_rank, hidden, raw)
        SELECT 10000 + (i * 7919) % 720, 500 + i // 6, 1 + i % 3, 700 + (i // 3) % 6, 'effort',
               CASE WHEN i % 37 = 0 THEN 0 ELSE 200 + (i * 104729) % 50 END, 200,
               TIMESTAMPTZ '2024-01-01 08:00:00+00' + to_hours(CAST(i // 2 AS INTEGER)),
               TIMESTAMP '2024-01-01 09:00:00' + to_hours(CAST(i // 2 AS INTEGER)),
               CASE WHEN i % 5 = 0 THEN 1 END, i % 11 = 0, '{}'
        FROM range(0, 720) r(i)""")


def older_fitsync_warehouse(path: Path) -> None:
    """The state the first release left: its tables and views, and no schema_views record."""
    db.migrate(path)
    with db.writing(path) as conn:
        conn.execute(OLDER_PROGRESSION)
        conn.execute("DROP TABLE schema_views")
        efforts(conn)


def progression(path: Path) -> list[tuple[Any, ...]]:
    with db.reading(path) as conn:
        return conn.execute("SELECT * FROM segment_effort_progression").fetchall()


def views_record(path: Path) -> list[tuple[Any, ...]]:
    with db.reading(path) as conn:
        return conn.execute("SELECT name, checksum, applied_at FROM schema_views").fetchall()


def test_a_report_on_a_first_release_warehouse_migrates_it(tmp_path: Path) -> None:
    """A warehouse from before the views were recorded (no schema_views): ensure_schema read the record it lacks."""
    path = tmp_path / "warehouse.duckdb"
    older_fitsync_warehouse(path)
    assert not db.schema_current(path)
    db.ensure_schema(path)
    assert db.schema_current(path) and views_record(path)[0][:2] == (db.VIEWS_SCRIPT, db.views_script()[1])


def test_opening_an_older_warehouse_replaces_its_views_and_keeps_the_results(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    older_fitsync_warehouse(path)
    before = progression(path)
    assert len(before) > 500 and any(row[12] is None for row in before)  # previous_best NULL on first attempts

    assert db.migrate(path) == max(v for v, _, _ in db.migration_scripts())
    with db.reading(path) as conn:
        definition = conn.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'segment_effort_progression'"
        ).fetchall()[0][0]
    assert "least(" in definition.lower()  # the current definition is in force ...
    assert progression(path) == before  # ... with the same rows in the same order
    [(name, checksum, _)] = recorded = views_record(path)
    assert (name, checksum) == (db.VIEWS_SCRIPT, db.views_script()[1])

    db.migrate(path)  # unchanged views: not applied again
    assert views_record(path) == recorded


def test_a_changed_views_script_is_applied_again(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    db.migrate(path)
    with db.writing(path) as conn:
        conn.execute("CREATE OR REPLACE VIEW eddington AS SELECT 1 AS stale")
        conn.execute("UPDATE schema_views SET checksum = 'from another fitsync version'")
    db.migrate(path)
    with db.reading(path) as conn:
        columns = [d[0] for d in conn.execute("SELECT * FROM eddington").description]
    assert columns == ["athlete_id", "sport_family", "unit", "eddington", "days", "days_at_next", "days_to_next"]


def test_every_table_view_and_column_is_described_and_the_doc_is_current() -> None:
    from fitsync.warehouse.schema_doc import described, render

    relations, columns = described()
    assert [name for name, _, comment in relations if not comment] == []
    assert [f"{t}.{c}" for t, cols in columns.items() for c, _, comment in cols if not comment] == []
    doc = Path(__file__).resolve().parents[2] / "docs" / "warehouse.md"
    assert doc.read_text() == render(), "regenerate: python -m fitsync.warehouse.schema_doc > docs/warehouse.md"


@pytest.mark.parametrize("name", ["warehouse.duckdb", "memory.duckdb"])
def test_writers_store_row_groups_of_the_bounded_size_and_readers_see_the_same_names(tmp_path: Path, name: str) -> None:
    """A checkpoint rewrites up to three whole row groups in memory when it merges small ones: fitsync's writers use
    smaller groups than DuckDB's default (db.ROW_GROUP_SIZE), attached under the name a plain open gives the file."""
    path = tmp_path / name
    db.migrate(path)
    with db.writing(path) as conn:
        conn.execute("CREATE TABLE probe AS SELECT range AS i FROM range(?)", [3 * db.ROW_GROUP_SIZE])
        assert conn.execute("SELECT current_database()").fetchone()[0] in (path.stem, f"{path.stem}_warehouse")
    with db.reading(path) as conn:
        groups = conn.execute("SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('probe')").fetchone()[0]
        assert groups == 3
        assert conn.execute("SELECT count(*) FROM activity_calendar").fetchone()[0] == 0  # a view, by its plain name


KEYED = {
    "splits_metric": "activity_id, split",
    "laps": "lap_id",
    "segment_efforts": "effort_id",
    "activity_zones": "activity_id, zone_type",
    "activity_zone_buckets": "activity_id, zone_type, bucket_index",
}


def test_schema_12_rebuilds_the_child_tables_without_their_key_indexes_and_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "warehouse.duckdb"
    scripts = db.migration_scripts()
    with (
        monkeypatch.context() as m
    ):  # a warehouse as fitsync left it before schema 12 (today's views need later tables)
        m.setattr(db, "migration_scripts", lambda: [s for s in scripts if s[0] < 12])
        m.setattr(db, "views_script", lambda: ("SELECT 1", "before schema 12"))
        assert db.migrate(path) == 11
    with db.writing(path) as conn:
        conn.execute("""INSERT INTO splits_metric (activity_id, split, distance, pace_zone, raw, average_heartrate)
                        SELECT 900 - i // 40, i % 40 + 1, 1000.0 + i, i % 5, CASE WHEN i < 3 THEN '{"split": 1}' END,
                               140 + i % 20 FROM range(0, 4000) r(i)""")
        conn.execute("""INSERT INTO activity_zone_buckets SELECT 900 - i // 10, CASE WHEN i % 10 < 5 THEN 'heartrate'
                        ELSE 'power' END, i % 5 + 1, 100 + i % 5, 120 + i % 5, i FROM range(0, 2000) r(i)""")
        conn.execute("""INSERT INTO activity_zones (activity_id, zone_type, score, raw) SELECT 900 - i // 2,
                        CASE WHEN i % 2 = 0 THEN 'heartrate' ELSE 'power' END, i, '{}' FROM range(0, 400) r(i)""")
        conn.execute("""INSERT INTO laps (lap_id, activity_id, lap_index, name) SELECT 5000 - i, 900 - i // 3, i % 3 + 1,
                        'Lap ' || i FROM range(0, 300) r(i)""")
        efforts(conn)
        before = {t: conn.execute(f"SELECT * FROM {t} ORDER BY {key}").fetchall() for t, key in KEYED.items()}
        assert conn.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name IN (SELECT unnest(?)) "
            "AND constraint_type = 'PRIMARY KEY'",
            [list(KEYED)],
        ).fetchone() == (5,)
        columns = dict(conn.execute("SELECT table_name, count(*) FROM duckdb_columns() GROUP BY ALL").fetchall())

    assert db.migrate(path) == max(v for v, _, _ in scripts)
    with db.writing(path) as conn:
        for table in KEYED:
            assert before[table] and conn.execute(f"SELECT * FROM {table}").fetchall() == before[table]  # in key order
            constraints = {
                r[0]
                for r in conn.execute(
                    "SELECT constraint_type FROM duckdb_constraints() WHERE table_name = ?", [table]
                ).fetchall()
            }
            assert constraints == {"NOT NULL"}
            comments = conn.execute(
                "SELECT count(*), count(comment) FROM duckdb_columns() WHERE table_name = ?", [table]
            ).fetchone()
            assert comments == (columns[table], columns[table])
        with pytest.raises(duckdb.ConstraintException):
            conn.execute("INSERT INTO splits_metric (activity_id, split) VALUES (NULL, 1)")
        with pytest.raises(duckdb.ConstraintException):
            conn.execute("INSERT INTO activity_zone_buckets (activity_id, zone_type, bucket_index) VALUES (1, NULL, 1)")
    with db.reading(path) as conn:  # the views over them, bound by name, read the rebuilt tables
        for view in ("running_best_efforts", "aerobic_decoupling", "activity_zone_seconds"):
            conn.execute(f"SELECT count(*) FROM {view}").fetchone()


def test_a_report_after_an_upgrade_reads_this_fitsyncs_views(tmp_path: Path) -> None:
    """ensure_schema (`fitsync report`, `thresholds`, the analysis asset) compared only the tables' migrations: a view
    an upgrade changed stayed as the last sync left it."""
    path = tmp_path / "warehouse.duckdb"
    db.migrate(path)
    with db.writing(path) as conn:
        conn.execute("CREATE OR REPLACE VIEW eddington AS SELECT 1 AS stale")
        conn.execute("UPDATE schema_views SET checksum = 'from an older fitsync'")
    assert not db.schema_current(path)
    db.ensure_schema(path)
    assert db.schema_current(path)
    with db.reading(path) as conn:
        assert "stale" not in [d[0] for d in conn.execute("SELECT * FROM eddington").description]
