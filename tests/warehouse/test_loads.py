"""Warehouse loads against a real DuckDB file, with payloads fetched from the sandbox over HTTP."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from fitsync.client.records import record
from fitsync.warehouse import db, documents, load_pipeline, loads, mappings, plausible, purge, sources, staging

from ..sandbox_harness import Harness

LATEST = max(v for v, _, _ in db.migration_scripts())
# A read of a field on its own (`src->>'$.path'`: a parse of the whole document per read).
FIELD_READ = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*->>'")
TABLES = (
    "activities",
    "splits_metric",
    "laps",
    "segment_efforts",
    "segments",
    "activity_zones",
    "activity_zone_buckets",
    "athletes",
    "athlete_snapshots",
    "gear",
    "athlete_stats",
    "athlete_stats_totals",
    "athlete_zones",
    "starred_segments",
)


def load_all(path: db.Where, p: dict[str, Any]) -> dict[str, dict[str, int]]:
    aid = p["athlete_id"]
    with db.writing(path) as conn:
        return {
            "summaries": loads.load(conn, "activity_summaries", loads.frame(p["summaries"], athlete_id=aid)),
            "details": loads.load(conn, "activity_details", loads.frame(p["details"], athlete_id=aid)),
            "zones": loads.load(
                conn,
                "activity_zones",
                loads.frame(
                    [{"zones": z} for _, z in p["zones"]], athlete_id=aid, activity_ids=[i for i, _ in p["zones"]]
                ),
            ),
            "athlete": loads.load(conn, "athlete", loads.frame([p["athlete"]])),
            "stats": loads.load(conn, "athlete_stats", loads.frame([p["stats"]], athlete_id=aid)),
            "athlete_zones": loads.load(
                conn, "athlete_zones", loads.frame([{"zones": p["athlete_zones"]}], athlete_id=aid)
            ),
            "starred": loads.load(conn, "starred_segments", loads.frame(p["starred"], athlete_id=aid)),
        }


def dump(path: db.Where) -> dict[str, list[tuple[Any, ...]]]:
    with db.reading(path) as conn:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}


@pytest.fixture()
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    assert db.migrate(path) == LATEST
    return path


def test_migrations_are_idempotent_and_recorded(warehouse: Path) -> None:
    assert db.migrate(warehouse) == LATEST
    with db.reading(warehouse) as conn:
        recorded = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert recorded == [(v, name) for v, name, _ in db.migration_scripts()]
    assert recorded[0] == (1, "0001_tables.sql")


def test_every_mapped_column_exists_with_its_table(warehouse: Path) -> None:
    with db.reading(warehouse) as conn:
        for mapping in (v for v in vars(mappings).values() if isinstance(v, mappings.Mapping)):
            cols = {r[0] for r in conn.execute(f"DESCRIBE {mapping.table}").fetchall()}
            assert set(mapping.names) <= cols, (mapping.table, set(mapping.names) - cols)
    # A row missing a NOT NULL column is left out rather than failing its batch: every one is read (constraints.py).
    with db.reading(warehouse) as conn:
        not_null = {
            t: set(cols)
            for t, cols in conn.execute(
                "SELECT c.table_name, list(c.column_name) FROM duckdb_columns() c WHERE NOT c.is_nullable AND "
                "c.database_name = current_database() AND NOT EXISTS (SELECT 1 FROM duckdb_constraints() k WHERE "
                "k.table_name = c.table_name AND k.constraint_type = 'PRIMARY KEY' AND list_contains(k.constraint_column_names, "
                "c.column_name)) GROUP BY ALL"
            ).fetchall()
        }
    for mapping in (v for v in vars(mappings).values() if isinstance(v, mappings.Mapping)):
        assert not_null.get(mapping.table, set()) <= {*mapping.key, *mapping.required}, mapping.table


def test_loaded_rows_match_the_payloads(warehouse: Path, payloads: dict[str, Any]) -> None:
    load_all(warehouse, payloads)
    detail = payloads["details"][0]
    with db.reading(warehouse) as conn:
        assert conn.execute("SELECT count(*) FROM activities").fetchone()[0] == len(payloads["summaries"])
        row = conn.execute(
            "SELECT name, distance, moving_time, start_date_local, timezone, utc_offset, CAST(start_date AS VARCHAR), "
            "detail_fetched_at IS NOT NULL FROM activities WHERE activity_id = ?",
            [detail["id"]],
        ).fetchone()
        assert row[0] == detail["name"] and row[1] == pytest.approx(detail["distance"])
        assert row[2] == detail["moving_time"]
        # local wall clock kept as it was sent (the trailing Z is not UTC), zone name from the label
        assert row[3].isoformat() == detail["start_date_local"].rstrip("Z")
        assert row[4] == detail["timezone"].split(") ", 1)[1] and row[5] == detail["utc_offset"]
        assert row[6].startswith(detail["start_date"][:19].replace("T", " ")) and row[7] is True
        counts = {
            t: conn.execute(f"SELECT count(*) FROM {t} WHERE activity_id = ?", [detail["id"]]).fetchone()[0]
            for t in ("splits_metric", "laps", "segment_efforts")
        }
        assert counts == {
            "splits_metric": len(detail["splits_metric"]),
            "laps": len(detail["laps"]),
            "segment_efforts": len(detail["segment_efforts"]),
        }
        zones = dict(payloads["zones"])[detail["id"]]
        buckets = conn.execute(
            "SELECT zone_type, bucket_index, min, max, seconds FROM activity_zone_buckets "
            "WHERE activity_id = ? ORDER BY ALL",
            [detail["id"]],
        ).fetchall()
        expected = sorted(
            (z["type"], i + 1, b["min"], b["max"], b["time"])
            for z in zones
            for i, b in enumerate(z["distribution_buckets"])
        )
        assert buckets == expected
        # the profile's FTP of the day, for the FTP timeline
        athlete = payloads["athlete"]
        assert conn.execute(
            "SELECT athlete_id, snapshot_date = CAST(timezone('UTC', synced_at) AS DATE), ftp FROM athlete_snapshots"
        ).fetchall() == [(athlete["id"], True, athlete.get("ftp"))]
        # the raw JSON is kept, once: the whole detail in a Parquet file (splits, laps and efforts in it, their rows
        # typed columns only); efforts from an effort history, which no document holds, keep their JSON in `raw`
        raw = json.loads(
            conn.execute("SELECT raw FROM activity_documents WHERE activity_id = ?", [detail["id"]]).fetchone()[0]
        )
        assert raw == detail
        assert conn.execute("SELECT count(*), count(DISTINCT activity_id) FROM activity_documents").fetchone() == (
            len(payloads["details"]),
            len(payloads["details"]),
        )
        assert conn.execute("SELECT count(detail_raw) FROM activities").fetchone()[0] == 0
        assert conn.execute("SELECT count(raw) FROM splits_metric").fetchone()[0] == 0
        assert conn.execute("SELECT count(raw) FROM laps").fetchone()[0] == 0
        assert conn.execute("SELECT count(raw) FROM segment_efforts").fetchone()[0] == 0
        with_efforts = next(d for d in payloads["details"] if d["segment_efforts"])
        assert conn.execute(
            "SELECT list(effort_id ORDER BY effort_id) FROM segment_efforts WHERE activity_id = ?", [with_efforts["id"]]
        ).fetchone()[0] == sorted(e["id"] for e in with_efforts["segment_efforts"])
        # the typed split columns are the JSON's values
        splits = conn.execute(
            "SELECT split, distance, elapsed_time, moving_time, elevation_difference, average_speed "
            "FROM splits_metric WHERE activity_id = ? ORDER BY split",
            [detail["id"]],
        ).fetchall()
        assert splits == [
            (
                s["split"],
                s["distance"],
                s["elapsed_time"],
                s["moving_time"],
                s.get("elevation_difference"),
                s["average_speed"],
            )
            for s in sorted(detail["splits_metric"], key=lambda e: e["split"])
        ]


def test_reading_each_document_once_gives_the_same_columns(payloads: dict[str, Any]) -> None:
    """staging.py (each document parsed once into one struct, splits and laps typed in that parse) against one
    read per field of the JSON, on real payloads of every bundle: the same values, and no per-field read left."""
    aid = payloads["athlete_id"]
    batches = {
        "activity_summaries": loads.frame(payloads["summaries"], athlete_id=aid),
        "activity_details": loads.frame(payloads["details"], athlete_id=aid),
        "activity_zones": loads.frame(
            [{"zones": z} for _, z in payloads["zones"]], athlete_id=aid, activity_ids=[i for i, _ in payloads["zones"]]
        ),
        "athlete": loads.frame([payloads["athlete"]]),
        "athlete_stats": loads.frame([payloads["stats"]], athlete_id=aid),
        "starred_segments": loads.frame(payloads["starred"], athlete_id=aid),
    }
    conn = duckdb.connect()
    compared = 0
    for bundle, batch in batches.items():
        conn.register("batch_input", batch.to_arrow())
        plan = loads.plan_of(bundle)
        # the reference: each array read with json_extract, each field with its own ->> (the mappings as written)
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE batch AS SELECT *, TRY_CAST(raw->>'$.id' AS BIGINT) AS parent_id"
            + "".join(f", CAST(json_extract(raw, '$.{p}') AS JSON[]) AS {sources.array_column(p)}" for p in plan.arrays)
            + " FROM batch_input"
        )
        expected = {
            m.table + m.source.sql: _rows(conn, {c.name: c.plain() for c in m.columns}, m.source.sql, m.key)
            for m in loads.BUNDLES[bundle]
        }
        conn.execute(staging.stage_sql(plan))
        listed = " AND ".join(sources.listed_column(a) for a in plan.arrays) or "true"
        assert conn.execute(
            f"SELECT count(*) FROM batch WHERE parent_id IS DISTINCT FROM TRY_CAST(raw->>'$.id' AS BIGINT) OR NOT ({listed})"
        ).fetchone() == (0,), bundle
        for mapping in loads.BUNDLES[bundle]:
            select = staging.select_sql(mapping, plan)
            assert not FIELD_READ.search(select.split(" FROM ", 1)[0]), mapping.table  # the columns read no field alone
            staged = conn.execute(f"SELECT {', '.join(mapping.names)} FROM ({select}) ORDER BY ALL").fetchall()
            assert staged == expected[mapping.table + mapping.source.sql], mapping.table
            compared += len(staged)
        conn.unregister("batch_input")
    assert compared > 100


def _rows(
    conn: duckdb.DuckDBPyConnection, columns: dict[str, str], source: str, key: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    exprs = ", ".join(f"{e} AS {c}" for c, e in columns.items())
    return conn.execute(
        f"SELECT * FROM (SELECT {exprs} FROM {source}) WHERE "
        + " AND ".join(f"{k} IS NOT NULL" for k in key)
        + " ORDER BY ALL"
    ).fetchall()


def test_an_effort_keeps_its_history_json_and_takes_its_detail_columns(
    warehouse: Path, sb: Harness, payloads: dict[str, Any]
) -> None:
    """An effort comes in its detailed activity (typed columns only: the document holds its JSON) and in its
    segment's effort history (no document: the listing's JSON is kept in `raw`). Either order gives the same row, and
    loading both again writes nothing."""
    aid = payloads["athlete_id"]
    detail = next(d for d in payloads["details"] if d["segment_efforts"])
    effort = detail["segment_efforts"][0]
    grant = sb.connect(athlete_id=aid)
    history = sb.get(grant, "/segment_efforts", params={"segment_id": effort["segment"]["id"], "per_page": 200}).json()
    listed = next(e for e in history if e["id"] == effort["id"])

    def load_history(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
        return loads.load(conn, "segment_efforts", loads.frame([{"segment_efforts": history}], athlete_id=aid))

    def load_detail(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
        return loads.load(conn, "activity_details", loads.frame([detail], athlete_id=aid))

    rows = []
    for order in ((load_history, load_detail), (load_detail, load_history)):
        path = warehouse.with_name(f"{order[0].__name__}.duckdb")
        db.migrate(path)
        with db.writing(path) as conn:
            for load in order:
                load(conn)
            assert [sum(load(conn).values()) for load in order] == [0, 0]
            rows.append(
                conn.execute(
                    "SELECT raw, elapsed_time, pr_rank, achievements FROM segment_efforts WHERE effort_id = ?",
                    [effort["id"]],
                ).fetchone()
            )
    assert rows[0] == rows[1]
    raw, elapsed, pr_rank, achievements = rows[0]
    assert json.loads(raw) == listed
    assert (elapsed, pr_rank) == (effort["elapsed_time"], effort.get("pr_rank"))
    assert json.loads(achievements) == effort["achievements"]


def test_reloading_the_same_data_changes_nothing(warehouse: Path, payloads: dict[str, Any]) -> None:
    load_all(warehouse, payloads)
    before = dump(warehouse)
    files = sorted(documents.folder(warehouse).rglob("*.parquet"))
    written = load_all(warehouse, payloads)
    assert dump(warehouse) == before
    # nothing is even rewritten when its JSON is unchanged, and no document file is written again
    assert all(n == 0 for tables in written.values() for n in tables.values()), written
    assert sorted(documents.folder(warehouse).rglob("*.parquet")) == files and len(files) == 2  # schema + 1 batch


def _staged_batches(p: dict[str, Any], threads: set[str]) -> Any:
    """Details and zones in batches of 3, staged like the warehouse asset does (recording the staging thread)."""
    aid, when = p["athlete_id"], dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for first in range(0, len(p["details"]), 3):
        threads.add(threading.current_thread().name)
        zones = p["zones"][first : first + 3]
        yield loads.stage(
            "activity_details", loads.frame(p["details"][first : first + 3], athlete_id=aid, fetched_at=when)
        )
        yield loads.stage(
            "activity_zones",
            loads.frame(
                [{"zones": z} for _, z in zones], athlete_id=aid, activity_ids=[i for i, _ in zones], fetched_at=when
            ),
        )


@pytest.mark.parametrize("hold", [0.0, 60.0])
def test_batches_staged_ahead_and_written_on_a_held_connection_give_the_same_warehouse(
    tmp_path: Path, payloads: dict[str, Any], hold: float
) -> None:
    one_by_one, pipelined = tmp_path / "one.duckdb", tmp_path / "pipelined.duckdb"
    for path in (one_by_one, pipelined):
        db.migrate(path)
    for staged in _staged_batches(payloads, set()):
        with db.writing(one_by_one) as conn:
            loads.write(conn, staged)
    threads: set[str] = set()
    connections: list[duckdb.DuckDBPyConnection] = []  # kept alive, so ids are not reused
    written: list[dict[str, int]] = []

    def write_one(conn: duckdb.DuckDBPyConnection, staged: loads.Staged) -> None:
        connections.append(conn)
        written.append(loads.write(conn, staged))

    load_pipeline.write_held(pipelined, load_pipeline.ahead(_staged_batches(payloads, threads)), write_one, hold=hold)
    assert dump(pipelined) == dump(one_by_one)
    with db.reading(pipelined) as conn:
        assert conn.execute("SELECT count(*) FROM activity_documents").fetchone()[0] == len(payloads["details"])
    batches = 2 * -(-len(payloads["details"]) // 3)
    assert len(written) == batches and sum(w.get("activities", 0) for w in written) == len(payloads["details"])
    # staged on the worker thread, never the caller's; one connection for all (held) or one per batch
    assert threads and threading.current_thread().name not in threads
    assert len({id(c) for c in connections}) == (1 if hold else batches)


def test_staging_ahead_keeps_the_order_and_raises_where_the_source_failed() -> None:
    def source() -> Any:
        yield 1
        yield 2
        raise ValueError("landed batch 3 is unreadable")

    got: list[int] = []
    with pytest.raises(ValueError, match="batch 3"):
        for item in load_pipeline.ahead(source()):
            got.append(item)
    assert got == [1, 2]


def test_a_changed_detail_gets_its_new_document_and_a_purge_removes_the_files(
    warehouse: Path, payloads: dict[str, Any]
) -> None:
    load_all(warehouse, payloads)
    detail = {**payloads["details"][0], "name": "Renamed", "new_member": {"kept": True}}
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([detail], athlete_id=payloads["athlete_id"]))
    with db.reading(warehouse) as conn:
        assert (
            json.loads(
                conn.execute("SELECT raw FROM activity_documents WHERE activity_id = ?", [detail["id"]]).fetchone()[0]
            )
            == detail
        )
        assert conn.execute("SELECT count(*) FROM activity_documents").fetchone()[0] == len(payloads["details"])
    folder = documents.folder(warehouse) / f"athlete={payloads['athlete_id']}"
    assert len(list(folder.glob("*.parquet"))) == 2
    # a summary the listing changed gets its new document too, and the same listing again writes no file
    summary = {**payloads["summaries"][0], "kudos_count": 99}
    summaries = documents.folder(warehouse, documents.SUMMARIES) / f"athlete={payloads['athlete_id']}"
    for _ in range(2):
        with db.writing(warehouse) as conn:
            loads.load(conn, "activity_summaries", loads.frame([summary], athlete_id=payloads["athlete_id"]))
    assert len(list(summaries.glob("*.parquet"))) == 2
    with db.reading(warehouse) as conn:
        assert (
            json.loads(
                conn.execute(
                    "SELECT raw FROM activity_summary_documents WHERE activity_id = ?", [summary["id"]]
                ).fetchone()[0]
            )
            == summary
        )
        assert conn.execute("SELECT count(*), count(summary_raw) FROM activities").fetchone() == (
            len(payloads["summaries"]),
            0,
        )
        assert conn.execute("SELECT count(*) FROM activity_summary_documents").fetchone()[0] == len(
            payloads["summaries"]
        )
    with db.writing(warehouse) as conn:
        removed = purge.purge_athlete(conn, payloads["athlete_id"])
    assert removed["document_files"] == 4 and not folder.exists() and not summaries.exists()
    with db.reading(warehouse) as conn:
        assert conn.execute("SELECT count(*) FROM activity_documents").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM activity_summary_documents").fetchone()[0] == 0


def test_odd_values_load_as_documented_and_the_document_keeps_them(warehouse: Path, payloads: dict[str, Any]) -> None:
    """columns.LEAVES: a field is read with the type its column casts it to in the one parse of the document."""
    detail = {**payloads["details"][0], "moving_time": 12.5, "trainer": 1, "average_watts": "high"}
    issues = record("activity", detail).issues
    with db.writing(warehouse) as conn:
        loads.load(
            conn, "activity_details", loads.frame([detail], athlete_id=payloads["athlete_id"], issues=[list(issues)])
        )
    with db.reading(warehouse) as conn:
        moving, trainer, watts, flagged = conn.execute(
            "SELECT moving_time, trainer, average_watts, issues FROM activities WHERE activity_id = ?", [detail["id"]]
        ).fetchone()
        document = json.loads(
            conn.execute("SELECT raw FROM activity_documents WHERE activity_id = ?", [detail["id"]]).fetchone()[0]
        )
    assert moving == 13  # rounded, as a cast of the text rounds
    assert trainer is True  # a number where a boolean belongs (a cast of the text: NULL)
    assert watts is None  # text where a number belongs
    assert any("moving_time" in issue for issue in flagged)
    assert (document["moving_time"], document["trainer"], document["average_watts"]) == (12.5, 1, "high")


def test_re_pulled_children_replace_not_duplicate(warehouse: Path, payloads: dict[str, Any]) -> None:
    load_all(warehouse, payloads)
    detail = dict(payloads["details"][0])
    detail["laps"] = detail["laps"][:1]
    detail["name"] = "Renamed"
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([detail], athlete_id=payloads["athlete_id"]))
    with db.reading(warehouse) as conn:
        assert conn.execute("SELECT count(*) FROM laps WHERE activity_id = ?", [detail["id"]]).fetchone()[0] == 1
        assert (
            conn.execute("SELECT name FROM activities WHERE activity_id = ?", [detail["id"]]).fetchone()[0] == "Renamed"
        )


def test_a_summary_never_downgrades_a_detailed_segment(warehouse: Path, payloads: dict[str, Any]) -> None:
    load_all(warehouse, payloads)
    effort = next(e for d in payloads["details"] for e in d["segment_efforts"])
    detailed = {**effort["segment"], "resource_state": 3, "effort_count": 99, "map": {"polyline": "abc"}}
    with db.writing(warehouse) as conn:
        loads.load(conn, "segments", loads.frame([detailed]))
        loads.load(conn, "activity_details", loads.frame(payloads["details"], athlete_id=payloads["athlete_id"]))
    with db.reading(warehouse) as conn:
        row = conn.execute(
            "SELECT resource_state, effort_count FROM segments WHERE segment_id = ?", [detailed["id"]]
        ).fetchone()
    assert row == (3, 99)


def test_unstarring_everything_empties_the_starred_set(warehouse: Path, payloads: dict[str, Any]) -> None:
    load_all(warehouse, payloads)
    aid = payloads["athlete_id"]
    with db.writing(warehouse) as conn:
        loads.load(conn, "starred_segments", loads.frame([], athlete_id=aid), parents=[aid])
    with db.reading(warehouse) as conn:
        assert conn.execute("SELECT count(*) FROM starred_segments").fetchone()[0] == 0


def test_deleting_an_activity_removes_children_and_records_the_audit(warehouse: Path, payloads: dict[str, Any]) -> None:
    load_all(warehouse, payloads)
    victim = payloads["details"][0]["id"]
    with db.writing(warehouse) as conn:
        assert loads.delete_activities(conn, [victim, 1], "webhook delete") == 1
    with db.reading(warehouse) as conn:
        for table in (
            "activities",
            "splits_metric",
            "laps",
            "segment_efforts",
            "activity_zones",
            "activity_zone_buckets",
        ):
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE activity_id = ?", [victim]).fetchone()[0] == 0
        audit = conn.execute(
            "SELECT athlete_id, reason, json_extract(last_summary_raw, '$.id')::BIGINT FROM deleted_activities"
        ).fetchall()
    assert audit == [(payloads["athlete_id"], "webhook delete", victim)]


class FailingAt:
    """A real connection whose statements starting with `prefix` fail, as a full disk or a lost file would."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, prefix: str) -> None:
        self.conn, self.prefix, self.failed = conn, prefix, False

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        if sql.startswith(self.prefix):
            self.failed = True
            raise duckdb.IOException(f"injected failure: {sql[:40]}")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def test_a_failed_batch_leaves_nothing_behind(warehouse: Path, payloads: dict[str, Any]) -> None:
    """The laps failing to write, after the activity and its splits were written: the whole batch rolls back."""
    load_all(warehouse, payloads)
    before = dump(warehouse)
    changed = {
        **payloads["details"][1],
        "name": "half-written",
        "splits_metric": payloads["details"][1]["splits_metric"][:1],
    }
    with db.writing(warehouse) as conn:
        failing = FailingAt(conn, "INSERT INTO laps")
        with pytest.raises(duckdb.Error):
            loads.load(
                failing,
                "activity_details",  # type: ignore[arg-type]
                loads.frame(
                    [{**changed, "laps": [{**lap, "id": lap["id"] + 10**12} for lap in changed["laps"]]}],
                    athlete_id=payloads["athlete_id"],
                ),
            )
        assert failing.failed
    assert dump(warehouse) == before
    with db.reading(warehouse) as conn:  # its document file was written, but no row has its hash
        assert (
            conn.execute("SELECT count(*) FROM activity_documents WHERE raw->>'$.name' = 'half-written'").fetchone()[0]
            == 0
        )


def test_readers_wait_for_a_writer_instead_of_failing(warehouse: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Another process holds the write lock; a reader retries (seen in the log) and reads once it is released."""
    import subprocess
    import sys

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); "
            "sys.stdin.readline(); c.close()",
            str(warehouse),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout and holder.stdout.readline().strip() == "locked"
    result: list[int] = []

    def read() -> None:
        with db.reading(warehouse, timeout=30) as conn:
            result.append(conn.execute("SELECT count(*) FROM activities").fetchone()[0])

    reader = threading.Thread(target=read)
    caplog.set_level(logging.DEBUG, logger="fitsync.warehouse.db")
    reader.start()
    deadline = time.monotonic() + 30
    while not any("locked by a writer" in r.message for r in caplog.records):
        assert time.monotonic() < deadline and reader.is_alive(), "the reader never met the lock"
        time.sleep(0.01)
    assert holder.stdin
    holder.stdin.write("\n")
    holder.stdin.flush()
    holder.wait(timeout=30)
    reader.join(timeout=30)
    assert result == [0]


def test_a_member_named_like_an_array_but_not_one_loads_and_is_kept(warehouse: Path, payloads: dict[str, Any]) -> None:
    """Every bundle's documents are staged with their arrays read out: a summary of an unknown shape whose `laps`
    is an object loads its row and keeps the member raw; a re-pulled detail whose `splits_metric` is a number
    loads, and the splits stored before stay (an odd answer is no proof they are gone)."""
    aid = payloads["athlete_id"]
    before = payloads["details"][1]
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([before], athlete_id=aid))
    summary = {**payloads["summaries"][0], "laps": {"count": 3}}
    detail = {**before, "name": "renamed", "splits_metric": 7}
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_summaries", loads.frame([summary], athlete_id=aid))
        loads.load(conn, "activity_details", loads.frame([detail], athlete_id=aid))
    with db.reading(warehouse) as conn:
        assert conn.execute(
            "SELECT raw->>'$.laps.count' FROM activity_summary_documents WHERE activity_id = ?", [summary["id"]]
        ).fetchone() == ("3",)
        assert conn.execute("SELECT name FROM activities WHERE activity_id = ?", [detail["id"]]).fetchone() == (
            "renamed",
        )
        assert (
            conn.execute("SELECT count(*) FROM splits_metric WHERE activity_id = ?", [detail["id"]]).fetchone()
            == (len(before["splits_metric"]),)
            != (0,)
        )
        assert conn.execute("SELECT count(*) FROM laps WHERE activity_id = ?", [detail["id"]]).fetchone() == (
            len(before["laps"]),
        )


def children_after(warehouse: Path, athlete_id: int, detail: dict[str, Any]) -> list[int]:
    """The detail re-pulled and loaded: its laps, splits and efforts stored then."""
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([detail], athlete_id=athlete_id))
    with db.reading(warehouse) as conn:
        return [
            conn.execute(f"SELECT count(*) FROM {table} WHERE activity_id = ?", [detail["id"]]).fetchone()[0]
            for table in ("laps", "splits_metric", "segment_efforts")
        ]


@pytest.mark.parametrize("answer", ["missing", "null", "empty"])
def test_a_detail_without_its_arrays_deletes_children_only_when_it_lists_none(
    warehouse: Path, payloads: dict[str, Any], answer: str
) -> None:
    """A re-pulled detail whose laps, splits and efforts are missing or null says nothing of them: the stored ones
    stay (they were deleted, in a run called ok). An empty list says there are none."""
    aid = payloads["athlete_id"]
    before = payloads["details"][1]
    arrays = ("laps", "splits_metric", "segment_efforts")
    assert all(before[a] for a in arrays)
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([before], athlete_id=aid))
    detail = {k: v for k, v in before.items() if answer != "missing" or k not in arrays}
    detail.update(
        {"name": "renamed"}, **({a: None if answer == "null" else [] for a in arrays} if answer != "missing" else {})
    )
    counts = children_after(warehouse, aid, detail)
    with db.reading(warehouse) as conn:
        assert conn.execute("SELECT name FROM activities WHERE activity_id = ?", [detail["id"]]).fetchone() == (
            "renamed",
        )
    assert counts == ([0, 0, 0] if answer == "empty" else [len(before[a]) for a in arrays])


def test_a_detail_without_splits_still_replaces_its_laps_and_efforts(warehouse: Path, payloads: dict[str, Any]) -> None:
    """Real details of workouts come without splits: that says nothing of the splits, but their empty efforts list
    still says the efforts are gone (one flag for every array froze them all)."""
    aid = payloads["athlete_id"]
    before = payloads["details"][1]
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([before], athlete_id=aid))
    detail = {k: v for k, v in before.items() if k != "splits_metric"} | {"segment_efforts": []}
    assert children_after(warehouse, aid, detail) == [len(before["laps"]), len(before["splits_metric"]), 0]


def test_efforts_are_read_in_the_documents_one_parse_and_odd_ones_still_load(
    warehouse: Path, payloads: dict[str, Any]
) -> None:
    """A detail's efforts are typed in the batch's one parse, their segment and achievements kept as JSON (staging.py).
    Re-pulled with an effort whose segment is not an object (no segment id, which the table requires), the batch
    loads: that effort is left out and counted, its JSON kept in the document, and its stored row stays (an answer
    with a row left out is no proof the row is gone); an effort without achievements stores NULL."""
    aid = payloads["athlete_id"]
    plan = loads.plan_of("activity_details")
    assert "segment_efforts" in plan.typed and plan.texts == ()
    assert loads.plan_of("segment_efforts").texts == ("segment_efforts",)  # a history keeps each effort's JSON
    original = next(d for d in payloads["details"] if len(d.get("segment_efforts") or []) >= 3)
    good, odd, bare, *rest = original["segment_efforts"]
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_details", loads.frame([original], athlete_id=aid))
    repulled = {
        **original,
        "name": "re-pulled",
        "segment_efforts": [
            good,
            {**odd, "segment": "not an object"},
            {k: v for k, v in bare.items() if k != "achievements"},
            *rest,
        ],
    }
    staged = loads.stage("activity_details", loads.frame([repulled], athlete_id=aid))
    assert staged.left_out == {"segment_efforts": 1}  # counted: the warehouse asset says so in the run's log
    with db.writing(warehouse) as conn:
        loads.write(conn, staged)
    with db.reading(warehouse) as conn:
        stored = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT effort_id, segment_id, achievements FROM segment_efforts WHERE activity_id = ?",
                [original["id"]],
            ).fetchall()
        }
        segment = conn.execute("SELECT raw FROM segments WHERE segment_id = ?", [good["segment"]["id"]]).fetchone()
        kept = json.loads(
            conn.execute("SELECT raw FROM activity_documents WHERE activity_id = ?", [original["id"]]).fetchone()[0]
        )
    assert kept["name"] == "re-pulled" and kept["segment_efforts"][1]["segment"] == "not an object"
    assert set(stored) == {e["id"] for e in original["segment_efforts"]}
    assert stored[odd["id"]][0] == odd["segment"]["id"]  # as stored before
    assert stored[good["id"]][0] == good["segment"]["id"]
    assert json.loads(stored[good["id"]][1]) == good.get("achievements")
    assert stored[bare["id"]] == (bare["segment"]["id"], None)
    assert segment is not None and json.loads(segment[0]) == good["segment"]


ABSURD = {
    "distance": 1e308,
    "moving_time": 10**30,
    "elapsed_time": -(2**63),
    "kudos_count": 2**70,
    "average_speed": float("inf"),
}


def test_implausible_values_never_overwrite_stored_ones_and_are_named(
    warehouse: Path, payloads: dict[str, Any]
) -> None:
    """A broken server's numbers (plausible.py): the stored value stays, a new row gets NULL, the load names each
    refused value, and the document keeps what arrived. An overflow is refused, never NULL without a word."""
    aid = payloads["athlete_id"]
    detailed, listed = payloads["details"][0], payloads["summaries"][-1]  # one detailed activity, one only listed
    load_all(warehouse, payloads)
    columns = "distance, moving_time, elapsed_time, kudos_count, average_speed, name"
    with db.reading(warehouse) as conn:
        before = {
            i: conn.execute(f"SELECT {columns} FROM activities WHERE activity_id = ?", [i]).fetchone()
            for i in (detailed["id"], listed["id"])
        }
    assert all(None not in row[:3] for row in before.values())
    odd = [
        {**summary, **ABSURD} for summary in payloads["summaries"] if summary["id"] in (detailed["id"], listed["id"])
    ]
    new = {**payloads["summaries"][0], **ABSURD, "id": 987654321}
    staged = loads.stage("activity_summaries", loads.frame([*odd, new], athlete_id=aid))
    with db.writing(warehouse) as conn:
        loads.write(conn, staged)
    refused = {key[0]: text for table, key, text in staged.rejected if table == "activities"}
    assert set(refused) == {detailed["id"], listed["id"], 987654321}
    assert all(f"{column}=" in text for text in refused.values() for column in ABSURD), refused
    with db.reading(warehouse) as conn:
        after = {
            i: conn.execute(f"SELECT {columns} FROM activities WHERE activity_id = ?", [i]).fetchone()
            for i in (detailed["id"], listed["id"], 987654321)
        }
        kept = json.loads(
            conn.execute("SELECT raw FROM activity_summary_documents WHERE activity_id = ?", [listed["id"]]).fetchone()[
                0
            ]
        )
    assert after[detailed["id"]] == before[detailed["id"]] and after[listed["id"]] == before[listed["id"]]
    assert after[987654321][:5] == (None,) * 5 and after[987654321][5] == new["name"]
    assert kept["distance"] == 1e308 and kept["kudos_count"] == 2**70  # what arrived, whole


def test_a_number_past_any_float_is_named_as_out_of_range() -> None:
    """JSON may carry an integer of any length: it is compared as it is, never turned into a float that overflows."""
    huge = int("9" * 400)
    assert plausible.implausible("activities", {"distance": huge, "moving_time": 3600, "kudos_count": -huge}) == {
        "distance": huge,
        "kudos_count": -huge,
    }
    assert plausible.implausible("activities", {"moving_time": -huge, "average_speed": "fast"}) == {
        "moving_time": -huge,
        "average_speed": "fast",
    }
    assert plausible.type_issues("activities", {"distance": huge, "average_speed": "fast"}) == [
        "not a number: average_speed='fast'"
    ]


def test_a_summary_never_overwrites_a_loaded_detail_but_updates_the_kudos(
    warehouse: Path, payloads: dict[str, Any]
) -> None:
    """The richer source wins: the listing's values of a detailed activity stay the detail's (a changed summary
    queues the detail again instead); kudos, which no re-pull follows, come from the listing."""
    load_all(warehouse, payloads)
    detail = payloads["details"][0]
    summary = next(s for s in payloads["summaries"] if s["id"] == detail["id"])
    changed = {**summary, "name": "Renamed in the listing", "distance": summary["distance"] + 1000, "kudos_count": 77}
    listed_only = {**payloads["summaries"][-1], "name": "Renamed, no detail yet"}
    with db.writing(warehouse) as conn:
        loads.load(conn, "activity_summaries", loads.frame([changed, listed_only], athlete_id=payloads["athlete_id"]))
    with db.reading(warehouse) as conn:
        row = conn.execute(
            "SELECT name, distance, kudos_count, detail_loaded FROM activities WHERE activity_id = ?", [detail["id"]]
        ).fetchone()
        other = conn.execute("SELECT name FROM activities WHERE activity_id = ?", [listed_only["id"]]).fetchone()
    assert row == (detail["name"], detail["distance"], 77, True)
    assert other == ("Renamed, no detail yet",)


def test_a_member_that_is_not_a_number_keeps_the_stored_value_and_is_named(
    warehouse: Path, payloads: dict[str, Any]
) -> None:
    """`distance: "abc"` reads as NULL and `moving_time: true` as 1: neither is the value. The record names them
    (plausible.type_issues, in activities.issues) and the load keeps what was stored, as for a number out of range."""
    from fitsync.warehouse.plausible import type_issues

    load_all(warehouse, payloads)
    listed = payloads["summaries"][-1]
    odd = {**listed, "distance": "abc", "moving_time": True}
    issues = [*record("activity", odd).issues, *type_issues("activities", odd)]
    assert "not a number: distance='abc'" in issues and "not a number: moving_time=True" in issues
    with db.reading(warehouse) as conn:
        before = conn.execute(
            "SELECT distance, moving_time FROM activities WHERE activity_id = ?", [listed["id"]]
        ).fetchone()
    staged = loads.stage("activity_summaries", loads.frame([odd], athlete_id=payloads["athlete_id"], issues=[issues]))
    with db.writing(warehouse) as conn:
        loads.write(conn, staged)
        after = conn.execute(
            "SELECT distance, moving_time, issues FROM activities WHERE activity_id = ?", [listed["id"]]
        ).fetchone()
    assert after[:2] == before and None not in before
    assert "not a number: distance='abc'" in after[2]
    [(table, key, text)] = staged.rejected
    assert (table, key) == ("activities", (listed["id"],))
    assert "not a number: distance='abc'" in text and "not a number: moving_time=True" in text
