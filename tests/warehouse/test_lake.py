"""The warehouse as a DuckLake, its catalog in a real PostgreSQL (tests/postgres_server.py) and its data files in a
folder: the same schema, loads and answers as a file, hosts committing at once, no password shown.

| issue 31 | what | test |
|---|---|---|
| 2 | a lake's tables, columns, types, NOT NULLs, settings rows and views are the file's; migrations recorded | test_a_new_lake_has_the_files_schema |
| 2 | a stream view of an earlier definition is made again by migrate | test_a_stream_view_an_earlier_fitsync_made_is_made_again |
| 2 | a later migration runs on a lake as written (no constraint, index or sequence after the baseline) | test_later_migrations_run_on_a_lake_as_written |
| 3 | a load into a lake stores what a file stores, and again changes nothing | test_a_load_into_a_lake_equals_the_files |
| 3 | two writers whose commits conflict both land (the second is tried again) | test_conflicting_commits_both_land |
| 3 | an athlete's thresholds set, set again and removed (a lake's tables have no primary key for ON CONFLICT) | test_thresholds_are_set_and_removed_on_a_lake |
| 3 | maintenance merges the small files of many small loads and forgets old snapshots; the rows stay | test_maintenance_merges_small_files_and_keeps_the_rows |
| 1 | a catalog that does not answer: one error without the password | test_an_unreachable_catalog_is_named_without_its_password |
| 4 | the extensions load from their packages' files, for the running DuckDB | test_extensions_come_from_their_packages |
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from fitsync.warehouse import db, extensions, lake_maintenance, lake_schema, loads, stream_mmp, thresholds
from fitsync.warehouse.location import Warehouse

from ..postgres_server import PostgresServer
from .test_loads import LATEST, TABLES, dump, load_all

SCHEMA = """SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns()
            WHERE database_name = current_database() AND NOT internal ORDER BY ALL"""
# When fitsync loaded a row: differs between two loads of the same answers.
LOAD_STAMPS = ("listed_at", "detail_fetched_at", "synced_at")
VIEWS = "SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND NOT internal ORDER BY 1"


def new_lake(server: PostgresServer, folder: Path) -> Warehouse:
    return Warehouse(f"ducklake:postgres:{server.new_database()}", str(folder / "lake"))


@pytest.fixture()
def lake(postgres_server: PostgresServer, tmp_path: Path) -> Warehouse:
    warehouse = new_lake(postgres_server, tmp_path)
    assert db.migrate(warehouse) == LATEST
    return warehouse


@pytest.fixture()
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    assert db.migrate(path) == LATEST
    return path


def read(where: Warehouse | Path, sql: str) -> list[tuple[Any, ...]]:
    with db.reading(where) as conn:
        return conn.execute(sql).fetchall()


def stored(where: Warehouse | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, without when they were loaded."""
    with db.reading(where) as conn:
        found: dict[str, list[tuple[Any, ...]]] = {}
        for table in TABLES:
            columns = {r[0] for r in conn.execute(f"DESCRIBE {table}").fetchall()}
            stamps = ", ".join(c for c in LOAD_STAMPS if c in columns)
            found[table] = conn.execute(
                f"SELECT * {f'EXCLUDE ({stamps})' if stamps else ''} FROM {table} ORDER BY ALL"
            ).fetchall()
        return found


def test_a_new_lake_has_the_files_schema(lake: Warehouse, warehouse: Path) -> None:
    assert read(lake, SCHEMA) == read(warehouse, SCHEMA)
    assert read(lake, VIEWS) == read(warehouse, VIEWS)
    settings = "SELECT * FROM analysis_settings ORDER BY ALL"
    assert read(lake, settings) == read(warehouse, settings) and read(lake, settings)
    recorded = "SELECT version, name FROM schema_migrations ORDER BY version"
    assert read(lake, recorded) == read(warehouse, recorded)
    comments = "SELECT comment FROM duckdb_columns() WHERE table_name = 'activities' AND column_name = 'distance'"
    assert read(lake, comments) == read(warehouse, comments) != [(None,)]
    assert db.migrate(lake) == LATEST  # again: nothing to do


def test_a_stream_view_an_earlier_fitsync_made_is_made_again(lake: Warehouse) -> None:
    """migrate remakes a view over the stream files that an earlier definition made, on a lake as on a file (a lake's
    checks, one snapshot's, left the stream views out)."""
    with db.writing(lake) as conn:
        conn.execute("CREATE OR REPLACE VIEW activity_mmp AS SELECT 1 AS activity_id")
    assert db.migrate(lake) == LATEST
    [(sql,)] = read(lake, "SELECT sql FROM duckdb_views() WHERE view_name = 'activity_mmp'")
    assert stream_mmp.DEFINED[stream_mmp.VIEW] in sql


def test_thresholds_are_set_and_removed_on_a_lake(lake: Warehouse) -> None:
    """`fitsync thresholds`' writes on a lake, whose tables have no primary key: a date set twice is one row with
    both values, and removed it is gone from both tables."""
    import datetime as dt

    day = dt.date(2025, 1, 1)
    with db.writing(lake) as conn:
        assert thresholds.set_values(conn, 7, day, {"ftp": 250.0}, "ramp test") is None
        before = thresholds.set_values(conn, 7, day, {"ftp": 255.0, "lthr": 168.0}, None)
        assert before is not None and before.values == {"ftp": 250.0}
        [row] = thresholds.rows(conn, 7)
        assert (row.values, row.note) == ({"ftp": 255.0, "lthr": 168.0, "pace": None}, "ramp test")
        assert thresholds.remove(conn, 7, day) == row
    assert read(
        lake, "SELECT count(*) FROM analysis_ftp_history UNION ALL SELECT count(*) FROM analysis_thresholds"
    ) == [
        (0,),
        (0,),
    ]


def test_later_migrations_run_on_a_lake_as_written(lake: Warehouse) -> None:
    later = [(v, n, sql) for v, n, sql in db.migration_scripts() if v > lake_schema.LAKE_BASELINE]
    with db.writing(lake) as conn:
        for _, _, sql in later:  # a lake refuses constraints, indexes and sequences: these would fail here
            conn.execute("BEGIN")
            conn.execute(sql)
            conn.execute("ROLLBACK")


def test_a_load_into_a_lake_equals_the_files(lake: Warehouse, warehouse: Path, payloads: dict[str, Any]) -> None:
    assert load_all(lake, payloads) == load_all(warehouse, payloads)
    assert stored(lake) == stored(warehouse)
    documents = "SELECT activity_id, raw FROM activity_documents ORDER BY 1"
    assert read(lake, documents) == read(warehouse, documents) and read(lake, documents)
    assert Path(lake.data_path, "documents").is_dir()
    before = dump(lake)
    again = load_all(lake, payloads)
    assert dump(lake) == before
    assert sum(again["details"].values()) == 0, again


def test_maintenance_merges_small_files_and_keeps_the_rows(lake: Warehouse, payloads: dict[str, Any]) -> None:
    aid = payloads["athlete_id"]
    with db.writing(lake) as conn:  # one small load per two activities, as incremental syncs bring them
        for start in range(0, len(payloads["details"]), 2):
            loads.load(conn, "activity_details", loads.frame(payloads["details"][start : start + 2], athlete_id=aid))
    per_table = "SELECT table_name, file_count FROM ducklake_table_info('lake') WHERE file_count > 0"
    before = dict(read(lake, per_table))
    assert before["splits_metric"] >= 4, before
    assert "activities" not in before  # two rows a load: inlined in the catalog (DuckLake's limit is 10), no file
    rows = stored(lake)
    done = lake_maintenance.maintain(lake, keep_days=0)
    after = dict(read(lake, per_table))
    assert all(count <= 2 for count in after.values()), after
    assert after["activities"] >= 1 and done.inlined_tables_flushed >= 1, done  # written out to Parquet
    assert after["splits_metric"] < before["splits_metric"] and done.snapshots_expired > 0, done
    assert stored(lake) == rows
    with pytest.raises(ValueError, match="needs no maintenance"):
        lake_maintenance.maintain(Warehouse("warehouse.duckdb"), keep_days=30)


def test_conflicting_commits_both_land(lake: Warehouse) -> None:
    """Two connections delete from and insert into one table at once, as two hosts' loads of different athletes
    do: DuckLake fails the second commit; it is tried again and lands."""
    with db.writing(lake) as conn:
        conn.execute("CREATE TABLE probe (athlete_id BIGINT, n INTEGER)")
    started = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(athlete_id: int) -> None:
        try:
            with db.writing(lake) as conn:
                first = True

                def work() -> None:
                    nonlocal first
                    conn.execute("DELETE FROM probe WHERE athlete_id = ?", [athlete_id])
                    conn.execute("INSERT INTO probe VALUES (?, 1)", [athlete_id])
                    if first:  # both transactions are open before either commits
                        first = False
                        started.wait(timeout=30)

                db.transaction(conn, work)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(aid,)) for aid in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert read(lake, "SELECT athlete_id, n FROM probe ORDER BY 1") == [(1, 1), (2, 1)]


def test_an_unreachable_catalog_is_named_without_its_password(tmp_path: Path) -> None:
    closed = Warehouse("ducklake:postgres:host=127.0.0.1 port=1 user=fitsync password=hunter2 dbname=lake", "")
    with pytest.raises(db.LakeUnavailable) as raised:
        db.migrate(closed)
    said = str(raised.value)
    assert "hunter2" not in said and "password=***" in said and "port=1" in said, said
    assert "hunter2" not in str(Warehouse("ducklake:postgres:postgresql://u:hunter2@h/db"))


def test_extensions_come_from_their_packages() -> None:
    for extension in extensions.LAKE:
        found = extensions.file(extension)
        assert found.is_file() and f"v{duckdb.__version__}" in found.parts, found
    conn = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
    extensions.load(conn, *extensions.LAKE)
    loaded = conn.execute(
        "SELECT extension_name FROM duckdb_extensions() WHERE loaded AND extension_name IN ('ducklake', 'postgres_scanner')"
    ).fetchall()
    assert sorted(loaded) == [("ducklake",), ("postgres_scanner",)]
    assert loads  # the loader imports cleanly beside them
