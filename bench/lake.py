"""lake: the warehouse as a DuckLake (catalog in PostgreSQL, data files in a folder) against a DuckDB file, in one run.

Load: the `load` benchmark's synthetic detailed activities and zones (bench/load.py: real sandbox activities copied
with new ids), loaded through fitsync's own path (`load_pipeline.ahead` → `loads.stage` → `load_pipeline.write_held`
→ `loads.write`, batches of 500, one transaction per batch) into an empty file and into an empty lake: the same
batches in the same order, one after the other in this process. The lake's one-off costs are timed apart: attaching it
in a new process (extensions, catalog: what every step of a sync pays once), creating it, and `db.migrate` of a
current lake (what the warehouse assets run before every load).

Reads: the `query` benchmark's busy athlete (bench/query.py, built in SQL, scaled by --query-activities) built the
same way in a file and in a lake; each analysis view read into Polars (`analysis.view`) on one read-only connection,
the median of --runs runs after a warm-up. Then the same views on the lake the load wrote (one Parquet file per table
and batch), against the file it loaded.

Compaction: 100 incremental syncs of 2 new activities each into a new lake, then the `lake_maintenance` job's work:
data files per table before and after, per athlete-month of the activities, and `activity_load` read before and after.

    python -m bench lake [--activities 2000] [--query-activities 2000] [--runs 5]

PostgreSQL: a server of its own from the machine's binaries (tests/postgres_server.py), as `many-hosts` does.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import click

from . import common, load, query
from .common import table, target

TARGET_LOAD_RATIO = 0.5  # lake rows/s over the file's, same batches, same run
TARGET_READ_RATIO = 2.0  # lake median over the file's, per view
TARGET_READ_MS = 200.0
SMALL = 10  # activities per batch of an incremental sync's load
SYNCS, PER_SYNC = 100, 2  # the compaction part: incremental syncs, new activities each
TARGET_FILES_PER_ATHLETE_MONTH = 2.0


def _lake(server: Any, folder: Path, name: str) -> Any:
    from fitsync.warehouse.location import Warehouse

    return Warehouse(f"ducklake:postgres:{server.new_database()}", str(folder / name))


def _forget_instances() -> None:
    """Close this process's kept lake instances (db._LAKES), so the next open attaches afresh, as a new process does."""
    from fitsync.warehouse import db

    with db._LAKES_LOCK:
        kept = list(db._LAKES.values())
        db._LAKES.clear()
    for conn in kept:
        conn.close()


def _timed(run: Any) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def load_both(
    server: Any, folder: Path, templates: load.Templates, athlete_id: int, activities: int, small_batches: int
) -> tuple[list[dict[str, Any]], dict[str, float], dict[str, Any]]:
    """The same batches into a new file and a new lake; rows/s of each, the lake's one-off costs."""
    from fitsync.warehouse import db

    file_path = folder / "loaded.duckdb"
    lake = _lake(server, folder, "loaded-lake")
    db.migrate(file_path)
    _forget_instances()
    once = {"create lake (attach + baseline + views)": _timed(lambda: db.migrate(lake))}
    _forget_instances()
    once["migrate, new process (attach + checks)"] = _timed(lambda: db.migrate(lake))
    once["migrate, attached (checks only)"] = statistics.median(_timed(lambda: db.migrate(lake)) for _ in range(3))
    results = []
    for name, where in (("file", file_path), ("lake", lake)):
        seconds, _, written = load.load_range(where, templates, athlete_id, 0, activities)  # type: ignore[arg-type]
        stored = load.counts(where)  # type: ignore[arg-type]
        results.append(
            {
                "warehouse": name,
                "activities": activities,
                "rows": sum(written.values()),
                "per_table": stored,
                "seconds": round(seconds, 2),
                "rows_per_s": round(sum(written.values()) / seconds),
                "batches": 2 * -(-activities // load.BATCH),
            }
        )
    for r, where in zip(results, (file_path, lake)):  # then small batches, as an incremental sync loads
        saved, load.BATCH = load.BATCH, SMALL
        try:
            seconds, _, _ = load.load_range(
                where, templates, athlete_id, activities, activities + SMALL * small_batches
            )  # type: ignore[arg-type]
        finally:
            load.BATCH = saved
        r["small_batch_ms"] = round(seconds * 1000 / small_batches, 1)
        r["per_table"] = load.counts(where)  # type: ignore[arg-type]
    if results[0]["per_table"] != results[1]["per_table"]:
        raise AssertionError(f"the lake stores other rows than the file: {results}")
    return results, once, {"file": file_path, "lake": lake}


def compaction(server: Any, folder: Path, templates: load.Templates, athlete_id: int, runs: int) -> dict[str, Any]:
    """SYNCS incremental syncs of PER_SYNC activities each into a new lake (each sync's load commits its own files),
    then the lake_maintenance job's work: data files per table before and after, per athlete-month of activities, and
    a view's latency before and after."""
    from fitsync.warehouse import analysis, db, lake_maintenance
    from fitsync.warehouse.location import LAKE_ALIAS

    lake = _lake(server, folder, "synced-lake")
    db.migrate(lake)
    saved, load.BATCH = load.BATCH, PER_SYNC
    try:
        for sync in range(SYNCS):
            load.load_range(lake, templates, athlete_id, sync * PER_SYNC, (sync + 1) * PER_SYNC)  # type: ignore[arg-type]
    finally:
        load.BATCH = saved

    def files() -> dict[str, int]:
        with db.reading(lake) as conn:
            rows = conn.execute(
                f"SELECT table_name, file_count FROM ducklake_table_info('{LAKE_ALIAS}') WHERE file_count > 0"
            ).fetchall()
        return {name: int(count) for name, count in rows}

    def read_ms() -> float:
        with db.reading(lake) as conn:
            return query.timed(lambda: analysis.view(conn, "activity_load"), runs)[0]

    with db.reading(lake) as conn:
        months = conn.execute(
            "SELECT count(DISTINCT (athlete_id, date_trunc('month', start_date_local))) FROM activities"
        ).fetchall()[0][0]
    before, read_before = files(), read_ms()
    seconds = _timed(lambda: lake_maintenance.maintain(lake, keep_days=30))
    after, read_after = files(), read_ms()
    return {
        "syncs": SYNCS,
        "activities": SYNCS * PER_SYNC,
        "athlete_months": months,
        "files_before": before,
        "files_after": after,
        "maintenance_s": round(seconds, 2),
        "activity_load_ms": [round(read_before, 1), round(read_after, 1)],
    }


def read_both(file_path: Path, lake: Any, runs: int, athlete: int) -> list[dict[str, Any]]:
    """Each analysis view on the file and on the lake: medians in ms, rows (the same on both)."""
    saved = query.ATHLETE
    query.ATHLETE = athlete
    try:
        on_file = query.measure(file_path, runs)
        on_lake = query.measure(lake, runs)
    finally:
        query.ATHLETE = saved
    rows = []
    for f, k in zip(on_file, on_lake):
        if f["rows"] != k["rows"]:
            raise AssertionError(f"{f['analysis']}: {f['rows']} rows from the file, {k['rows']} from the lake")
        ratio = k["median_ms"] / max(f["median_ms"], 0.01)
        rows.append(
            {
                "analysis": f["analysis"],
                "view": f["view"],
                "rows": f["rows"],
                "file_ms": f["median_ms"],
                "lake_ms": k["median_ms"],
                "ratio": round(ratio, 2),
                "met": ratio <= TARGET_READ_RATIO and k["median_ms"] < TARGET_READ_MS,
            }
        )
    return rows


def build_both(server: Any, folder: Path, activities: int) -> tuple[Path, Any, dict[str, float]]:
    """bench/query.py's busy athlete, with `activities` activities, in a new file and a new lake."""
    saved = query.ACTIVITIES
    query.ACTIVITIES = activities
    try:
        file_path = folder / "busy.duckdb"
        lake = _lake(server, folder, "busy-lake")
        built = {"file": _timed(lambda: query.build(file_path)), "lake": _timed(lambda: query.build(lake))}
    finally:
        query.ACTIVITIES = saved
    return file_path, lake, built


def _worst_per_month(compacted: dict[str, Any]) -> float:
    return max(compacted["files_after"].values()) / max(1, compacted["athlete_months"])


def _compaction_table(compacted: dict[str, Any]) -> dict[str, Any]:
    before, after = compacted["files_before"], compacted["files_after"]
    months = max(1, compacted["athlete_months"])
    return table(
        f"Data files after {compacted['syncs']} incremental syncs, before and after maintenance",
        ["table", "files before", "files after", "after per athlete-month"],
        [
            (name, before.get(name, 0), after.get(name, 0), round(after.get(name, 0) / months, 2))
            for name in sorted(before | after)
        ],
        f"{compacted['syncs']} loads of {compacted['activities'] // compacted['syncs']} new activities each (details, "
        f"then zones) into a new lake, {compacted['athlete_months']} athlete-months of activities; a table with no "
        "file before keeps a load's few rows in the catalog (DuckLake's data inlining, up to 10 rows a load). Then "
        f"the lake_maintenance job's work ({compacted['maintenance_s']} s): inlined rows written to Parquet, small "
        f"files merged. `activity_load` read before and after: "
        f"{compacted['activity_load_ms'][0]} → {compacted['activity_load_ms'][1]} ms (median of the runs).",
    )


def _read_table(title: str, rows: list[dict[str, Any]], caption: str) -> dict[str, Any]:
    return table(
        title,
        [
            "analysis",
            "view",
            "rows",
            "file ms",
            "lake ms",
            "lake / file",
            f"≤ {TARGET_READ_RATIO:g}× and < {TARGET_READ_MS:.0f} ms",
        ],
        [
            (r["analysis"], f"`{r['view']}`", r["rows"], r["file_ms"], r["lake_ms"], f"{r['ratio']:.2f}×", r["met"])
            for r in rows
        ],
        caption,
    )


@click.command()
@click.option("--activities", default=2000, show_default=True, help="Activities loaded (batches of 500).")
@click.option("--query-activities", default=2000, show_default=True, help="Activities of the busy athlete read.")
@click.option("--small-batches", default=10, show_default=True, help=f"Batches of {SMALL} activities loaded after.")
@click.option("--runs", default=5, show_default=True, help="Timed runs per view (the median is reported).")
@click.option("--templates", "template_count", default=40, show_default=True, help="Real sandbox activities copied.")
def main(activities: int, query_activities: int, small_batches: int, runs: int, template_count: int) -> None:
    """Load rows/s and analysis read latency: a DuckLake on PostgreSQL against a DuckDB file, same data, same run."""
    from tests import postgres_server

    started = time.monotonic()
    found = postgres_server.binaries()
    if found is None:
        raise click.ClickException("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
    common.quiet_dagster()
    folder = common.scratch_folder("bench-lake-")
    server = postgres_server.PostgresServer(found)
    try:
        load_average = [os.getloadavg()[0]]
        templates, athlete_id = load.fetch_templates(template_count)
        loaded, once, where = load_both(server, folder, templates, athlete_id, activities, small_batches)
        load_average.append(os.getloadavg()[0])
        file_path, lake, built = build_both(server, folder, query_activities)
        busy = read_both(file_path, lake, runs, query.ATHLETE)
        on_loaded = read_both(where["file"], where["lake"], runs, athlete_id)
        compacted = compaction(server, folder, templates, athlete_id + 1, runs)
        load_average.append(os.getloadavg()[0])
    finally:
        _forget_instances()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)

    file_rate, lake_rate = loaded[0]["rows_per_s"], loaded[1]["rows_per_s"]
    tables = [
        table(
            "Loading the same batches into a file and a lake",
            [
                "warehouse",
                "activities",
                "rows",
                "batches",
                "seconds",
                "rows/s",
                "vs the file",
                f"ms per batch of {SMALL}",
            ],
            [
                (
                    r["warehouse"],
                    r["activities"],
                    r["rows"],
                    r["batches"],
                    r["seconds"],
                    r["rows_per_s"],
                    f"{r['rows_per_s'] / file_rate:.2f}×",
                    r["small_batch_ms"],
                )
                for r in loaded
            ],
            caption=f"batches of {load.BATCH} details, then their zones, staged ahead on a worker thread and written "
            "by one writer held up to a second (load_pipeline), from an empty warehouse; seconds: the whole load, the "
            "lake attached already (its one-off costs below). Then --small-batches batches of "
            f"{SMALL} activities (details, then zones) into each: ms per batch, the writer held as in a sync. Load average "
            f"{load_average[0]:.1f} → {load_average[1]:.1f} on {os.cpu_count()} CPUs.",
        ),
        table("The lake's one-off costs", ["what", "seconds"], [(k, round(v, 3)) for k, v in once.items()]),
        _read_table(
            "Analysis views on the busy athlete (built in SQL)",
            busy,
            f"bench/query.py's warehouse with {query_activities:,} activities, built in SQL in each (file "
            f"{built['file']:.1f} s, lake {built['lake']:.1f} s); median of {runs} runs after a warm-up.",
        ),
        _read_table(
            "Analysis views on what the load wrote",
            on_loaded,
            f"the warehouses of the load above ({activities:,} activities of one athlete; the lake holds a Parquet "
            f"file per table and batch); median of {runs} runs after a warm-up. Load average {load_average[2]:.1f}.",
        ),
    ]
    tables.append(_compaction_table(compacted))
    ratio = lake_rate / file_rate
    slowest = max(busy + on_loaded, key=lambda r: r["ratio"])
    longest = max(busy + on_loaded, key=lambda r: r["lake_ms"])
    targets = [
        target(
            f"lake load ≥ {TARGET_LOAD_RATIO:g}× the file's rows/s",
            f"{ratio:.2f}× ({lake_rate:,} vs {file_rate:,} rows/s)",
            ratio >= TARGET_LOAD_RATIO,
        ),
        target(
            f"each view on the lake ≤ {TARGET_READ_RATIO:g}× the file and < {TARGET_READ_MS:.0f} ms",
            f"worst ratio {slowest['analysis']} {slowest['ratio']:.2f}×; slowest {longest['analysis']} "
            f"{longest['lake_ms']} ms",
            all(r["met"] for r in busy + on_loaded),
        ),
        target(
            f"after {SYNCS} incremental syncs, maintenance leaves ≤ {TARGET_FILES_PER_ATHLETE_MONTH:g} data files per "
            "table and athlete-month",
            f"{_worst_per_month(compacted):.2f} (most files: {max(compacted['files_after'].values())}, "
            f"{compacted['athlete_months']} athlete-months)",
            _worst_per_month(compacted) <= TARGET_FILES_PER_ATHLETE_MONTH,
        ),
    ]
    common.save(
        "lake",
        params={
            "activities": activities,
            "query_activities": query_activities,
            "runs": runs,
            "small_batches": small_batches,
            "templates": template_count,
            "batch": load.BATCH,
            "load_average": [round(x, 2) for x in load_average],
        },
        tables=tables,
        targets=targets,
        data={
            "load": loaded,
            "one_off_s": once,
            "reads_busy": busy,
            "reads_loaded": on_loaded,
            "built_s": built,
            "compaction": compacted,
        },
        started=started,
    )


if __name__ == "__main__":
    main()
