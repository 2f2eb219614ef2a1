"""load: warehouse upsert throughput (rows/s) for detailed activities with splits, laps, efforts and zone
buckets, at 10k and 100k activities, against row-by-row inserts of the same rows in the same run.

Payloads are synthetic in the exact shape of the sandbox's detailed activities: a few dozen real detailed
activities and their zones are fetched from a sandbox, then copied with new activity, lap and effort ids
(the JSON text is templated, so generating costs almost nothing). fitsync's path is the one the warehouse asset
takes: `loads.frame` (Polars) → `loads.stage` (rows as Arrow, on a worker thread, up to two batches ahead) →
`loads.write` (DuckDB upserts by key, one transaction per batch, on one writer held up to a second:
warehouse/load_pipeline.py), in batches of `landing.BATCH_OBJECTS` objects (what the warehouse asset merges landed
batches into), details then zones per batch. Timed: the whole load, the writer's closes (checkpoints) included. The
asset's own path (landed in the state store, then `load_landed`) is measured too, on the first scale (`asset_load`).

Row-by-row baseline: the same rows fitsync stored for a sample of activities, inserted into an empty warehouse
with one parameterised upsert per row (DuckDB `executemany`), table by table (a plain insert per row into
the child tables, which have no key index since schema 12). It gets the rows already parsed, so the baseline is spared
the JSON work fitsync's figure includes: the ratio is conservative.

Before issue 15: the loader of that time (bench/baseline/warehouse, run by bench/load_before.py) loads the first
scale in the same run, a writer per batch; the speed-up target is today's rows/s at the largest scale over its
rows/s, both with the writer's closes (the old loader's figure without its closes is shown too).

Re-load: loading the same data again must change nothing — every upsert writes 0 rows and each table's
content hash is unchanged (all of the smaller scale; a spread-out sample of batches at the larger one).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import re
import resource
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from fitsync.sync.landing import BATCH_OBJECTS as BATCH  # what the warehouse asset merges landed batches into

from . import common, load_before
from .common import table, target

TABLES = ("activities", "splits_metric", "laps", "segment_efforts", "activity_zones", "activity_zone_buckets")
ACTIVITY_BASE = 20_000_000_000
LAP_BASE, EFFORT_BASE, PER_ACTIVITY = 70_000_000_000_000, 80_000_000_000_000, 1000
TARGET_RATIO = 50.0
# Issue 15: 5× the load before it, measured in the same run (bench/load_before.py).
TARGET_SPEEDUP = 5.0
MEMORY_GROWTH = 1.1
# Issue 33: the load users get (landed → warehouse), rows a second at 10,000 activities.
TARGET_ROWS_PER_S = 500_000
WAREHOUSE = "fitsync.warehouse"  # the loader measured; bench/load_before.py passes the one before issue 15


class Templates:
    """Real detailed activities with their ids replaced by markers, so that copy i is a few string joins."""

    MARK = re.compile(r"@@(\d+)@@")

    def __init__(self, details: list[dict[str, Any]], zones: list[list[dict[str, Any]]]) -> None:
        self.parts: list[list[str | int]] = []
        self.zones = [json.dumps({"zones": z}, separators=(",", ":")) for z in zones]
        for detail in details:
            # marker 0: the activity; 1000 + j: lap j; 2000 + j: effort j
            ids = {detail["id"]: 0}
            ids.update({lap["id"]: 1000 + j for j, lap in enumerate(detail.get("laps") or [])})
            ids.update({e["id"]: 2000 + j for j, e in enumerate(detail.get("segment_efforts") or [])})
            text = json.dumps(detail, separators=(",", ":"))
            text = re.sub(
                r'"id":(\d+)',
                lambda m: f'"id":@@{ids[int(m.group(1))]}@@' if int(m.group(1)) in ids else m.group(0),
                text,
            )
            pieces: list[str | int] = []
            for k, piece in enumerate(self.MARK.split(text)):
                pieces.append(int(piece) if k % 2 else piece)
            self.parts.append(pieces)

    def __len__(self) -> int:
        return len(self.parts)

    def activity(self, i: int) -> tuple[str, str]:
        """(detail JSON, zones JSON) of synthetic activity i."""
        t = i % len(self.parts)
        out = []
        for piece in self.parts[t]:
            if isinstance(piece, str):
                out.append(piece)
            elif piece == 0:
                out.append(str(ACTIVITY_BASE + i))
            elif piece < 2000:
                out.append(str(LAP_BASE + i * PER_ACTIVITY + piece - 1000))
            else:
                out.append(str(EFFORT_BASE + i * PER_ACTIVITY + piece - 2000))
        return "".join(out), self.zones[t]


def fetch_templates(count: int) -> tuple[Templates, int]:
    """Detailed activities (all efforts) and zones of a seeded sandbox athlete, over HTTP like the pipeline."""
    import httpx

    from fitsync.client.runtime import FitsyncClient

    sb = common.start_sandbox(athletes=1, activities=count)
    try:
        athlete_id = sb.athletes()[0]["id"]
        config = sb.connected_home(athlete_id, "bench-load-")
        home = config.home
        with FitsyncClient(config) as client:
            token = client.tokens.access_token(athlete_id).reveal()
        with httpx.Client(base_url=sb.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            listed = http.get("/athlete/activities", params={"per_page": 200}).json()
            details = [
                http.get(f"/activities/{a['id']}", params={"include_all_efforts": "true"}).json() for a in listed
            ]
            zones = [http.get(f"/activities/{a['id']}/zones").json() for a in listed]
        shutil.rmtree(home, ignore_errors=True)
    finally:
        sb.close()
    return Templates(details, zones), athlete_id


def batches(
    templates: Templates, start: int, stop: int, size: int = BATCH
) -> Iterator[tuple[list[str], list[str], list[int]]]:
    for first in range(start, stop, size):
        ids = list(range(first, min(first + size, stop)))
        pairs = [templates.activity(i) for i in ids]
        yield [p[0] for p in pairs], [p[1] for p in pairs], [ACTIVITY_BASE + i for i in ids]


def load_range(
    path: Path,
    templates: Templates,
    athlete_id: int,
    start: int,
    stop: int,
    batch_starts: list[int] | None = None,
    package: str = WAREHOUSE,
) -> tuple[float, float | None, dict[str, int]]:
    """Load activities [start, stop) (or only the batches beginning at batch_starts) the way the warehouse asset
    does: (seconds the load took, writer's closes included; seconds with the closes left out where the loader has
    them apart, else None; rows written per table).

    Today's loader stages the next batches on a worker thread while one held writer writes
    (load_pipeline.ahead, load_pipeline.write_held): its closes overlap the staging, so only its whole time is a fair
    figure. The loader of before issue 15 (`package` bench.baseline.warehouse, bench/load_before.py) opened a writer
    per batch; its time without the closes is shown beside its whole time."""
    db, loads = (importlib.import_module(f"{package}.{name}") for name in ("db", "loads"))

    written: dict[str, int] = {}
    ranges = [
        (s, min(s + BATCH, stop)) for s in (batch_starts if batch_starts is not None else range(start, stop, BATCH))
    ]

    def frames(details: list[str], zones: list[str], ids: list[int]) -> list[tuple[str, Any]]:
        return [
            ("activity_details", loads.frame(details, athlete_id=athlete_id)),
            ("activity_zones", loads.frame(zones, athlete_id=athlete_id, activity_ids=ids)),
        ]

    def add(rows: dict[str, int]) -> None:
        for name, n in rows.items():
            written[name] = written.get(name, 0) + n

    started = time.perf_counter()
    if hasattr(loads, "stage"):  # not the loader of before issue 15
        pipeline = importlib.import_module(f"{package}.load_pipeline")

        staged = pipeline.ahead(
            loads.stage(bundle, frame)
            for lo, hi in ranges
            for batch in batches(templates, lo, hi)
            for bundle, frame in frames(*batch)
        )
        pipeline.write_held(path, staged, lambda conn, batch: add(loads.write(conn, batch)))
        return time.perf_counter() - started, None, written
    spent = 0.0
    for lo, hi in ranges:
        for batch in batches(templates, lo, hi):
            with db.writing(path) as conn:
                t = time.perf_counter()
                for bundle, frame in frames(*batch):
                    add(loads.load(conn, bundle, frame))
                spent += time.perf_counter() - t
    return time.perf_counter() - started, spent, written


def asset_load(templates: Templates, athlete_id: int, size: int, workdir: Path) -> dict[str, Any]:
    """The warehouse step as the asset runs it: `size` details and their zones landed in the state store (SQLite) in
    chunks of 25, in turns, as the details step lands them (sync/details.py), then loaded by `load_landed` into an
    empty warehouse. Timed: the load alone (landing is the fetch step's)."""
    from fitsync.state.store import StateStore
    from fitsync.sync import landing, load_landed
    from fitsync.warehouse import db
    from fitsync.warehouse.location import Warehouse

    folder = workdir / "asset-path"
    folder.mkdir()
    store = StateStore(folder / "state.db")
    for first in range(0, size, 25):
        ids = range(first, min(first + 25, size))
        pairs = [templates.activity(i) for i in ids]
        with store.transaction() as conn:
            landing.land(conn, athlete_id, "activity_details", [json.loads(d) for d, _ in pairs])
            landing.land(
                conn,
                athlete_id,
                "activity_zones",
                [{"activity_id": ACTIVITY_BASE + i, **json.loads(z)} for i, (_, z) in zip(ids, pairs)],
            )
    path = folder / "warehouse.duckdb"
    db.migrate(path)
    started = time.perf_counter()
    loaded = load_landed.load_landed(store, athlete_id, Warehouse.of(path), lambda _: None, lambda _: None)
    seconds = time.perf_counter() - started
    stored = counts(path)
    assert stored["activities"] == size and not landing.count(store, athlete_id), stored
    rows = sum(stored.values())
    return {
        "activities": size,
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "batches": loaded.batches,
    }


def counts(path: Path, package: str = WAREHOUSE) -> dict[str, int]:
    db = importlib.import_module(f"{package}.db")

    with db.reading(path) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def fingerprint(path: Path) -> dict[str, tuple[int, int]]:
    from fitsync.warehouse import db

    with db.reading(path) as conn:
        return {
            t: tuple(conn.execute(f"SELECT count(*), sum(hash(x)::HUGEINT) FROM {t} AS x").fetchone())
            for t in TABLES + ("segments",)
        }


def row_by_row(source: Path, sample_ids: list[int], workdir: Path) -> tuple[float, int, dict[str, int]]:
    """The same rows, one parameterised upsert per row into an empty warehouse; seconds and rows."""
    from fitsync.warehouse import db, mappings

    keys = {m.table: m.key for m in vars(mappings).values() if isinstance(m, mappings.Mapping)}
    rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    with db.reading(source) as conn:
        for t in TABLES:
            cursor = conn.execute(f"SELECT * FROM {t} WHERE activity_id IN (SELECT unnest(?::BIGINT[]))", [sample_ids])
            rows[t] = ([d[0] for d in cursor.description], cursor.fetchall())
    target_path = workdir / "row-by-row.duckdb"
    db.migrate(target_path)
    per_table: dict[str, int] = {}
    spent = 0.0
    with db.writing(target_path) as conn:
        constrained = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'"
            ).fetchall()
        }
        for t, (columns, values) in rows.items():
            updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys[t])
            sql = f"INSERT INTO {t} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            if t in constrained:  # the child tables have no key index since schema 12: into an empty table,
                sql += f" ON CONFLICT ({', '.join(keys[t])}) DO UPDATE SET {updates}"  # an insert is the upsert
            start = time.perf_counter()
            conn.execute("BEGIN")
            conn.executemany(sql, values)
            conn.execute("COMMIT")
            spent += time.perf_counter() - start
            per_table[t] = len(values)
    stored = counts(target_path)
    assert stored == per_table, (stored, per_table)
    return spent, sum(per_table.values()), per_table


def documents_mib(path: Path) -> float:
    """The detail documents' Parquet files beside the warehouse file (warehouse/documents.py)."""
    from fitsync.warehouse import documents

    return sum(f.stat().st_size for f in documents.folder(path).rglob("*.parquet")) / 2**20


def reset_peak() -> None:
    """Start a new peak: Linux resets a process's high-water mark of RSS when "5" is written to its clear_refs."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mib() -> float:
    """Peak RSS since `reset_peak` (Linux's VmHWM), else since the process began (ru_maxrss)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@click.command()
@click.option("--scales", default="10000,100000", show_default=True, help="Activity counts, comma-separated.")
@click.option(
    "--templates",
    "template_count",
    default=40,
    show_default=True,
    help="Real sandbox activities the synthetic ones are copied from.",
)
@click.option("--sample", default=100, show_default=True, help="Activities inserted row by row for the baseline.")
@click.option(
    "--reload-sample",
    default=10,
    show_default=True,
    help="Batches of 500 re-loaded at scales above the first (the first is re-loaded whole).",
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the warehouse files go (default: a temporary folder, removed at the end).",
)
def main(scales: str, template_count: int, sample: int, reload_sample: int, workdir: Path | None) -> None:
    """Upsert throughput at 10k and 100k activities vs row-by-row inserts; re-load changes nothing."""
    from fitsync.warehouse import db

    started = time.monotonic()
    sizes = sorted(int(s) for s in scales.split(",") if s.strip())
    templates, athlete_id = fetch_templates(template_count)
    work = common.scratch_folder("bench-load-", workdir)
    results: list[dict[str, Any]] = []
    reloads: list[dict[str, Any]] = []
    baseline: dict[str, Any] = {}
    old_load: dict[str, Any] | None = None
    asset: dict[str, Any] | None = None
    path = work / "warehouse.duckdb"
    try:
        db.migrate(path)
        loaded, cumulative = 0, 0.0
        for n, size in enumerate(sizes):
            # one warehouse grows through the scales: loading 0 → 100k from empty is the same work whether or not
            # the clock is read at 10k on the way (the re-load in between is asserted to change nothing)
            common.out.print(f"[dim]loading activities {loaded:,} → {size:,}…[/]")
            reset_peak()  # each scale's peak is its own load's, not the re-load's before it
            seconds, _, _ = load_range(path, templates, athlete_id, loaded, size)
            peak = peak_rss_mib()
            cumulative += seconds
            loaded = size
            stored = counts(path)
            rows = sum(stored.values())
            results.append(
                {
                    "activities": size,
                    "rows": rows,
                    "per_table": stored,
                    "seconds": cumulative,
                    "rows_per_s": rows / cumulative,
                    "activities_per_s": size / cumulative,
                    "file_mib": path.stat().st_size / 2**20,
                    "documents_mib": documents_mib(path),
                    "peak_rss_mib": peak,
                }
            )
            assert stored["activities"] == size, stored
            # re-load: the whole first scale, a spread-out sample of batches above it
            before = fingerprint(path)
            if n == 0:
                starts = None
            else:
                step = max(1, size // BATCH // max(1, reload_sample))
                starts = [b * BATCH for b in range(0, size // BATCH, step)][:reload_sample]
            common.out.print(f"[dim]re-loading {'all' if starts is None else f'{len(starts)} batches'}…[/]")
            re_seconds, _, re_written = load_range(path, templates, athlete_id, 0, size, starts)
            after = fingerprint(path)
            reloaded = size if starts is None else sum(min(BATCH, size - s) for s in starts)
            reloads.append(
                {
                    "activities": size,
                    "reloaded": reloaded,
                    "rows_written": sum(re_written.values()),
                    "written_per_table": re_written,
                    "unchanged": before == after,
                    "seconds": re_seconds,
                }
            )
            gc.collect()
        # after the scales, so that what they hold stays out of the scales' peaks: row-by-row (its rows in Python, a
        # second warehouse) and the asset path (the state store, a third). With row-by-row and the re-load measured
        # between the scales, and the process's peak, the largest scale's peak was 1.13× the smallest's.
        if sample:
            common.out.print(f"[dim]row-by-row baseline on {sample} activities…[/]")
            b_seconds, b_rows, b_tables = row_by_row(path, [ACTIVITY_BASE + i for i in range(sample)], work)
            baseline = {
                "activities": sample,
                "rows": b_rows,
                "per_table": b_tables,
                "seconds": b_seconds,
                "rows_per_s": b_rows / b_seconds,
            }
            common.out.print(f"[dim]the load before issue 15 on {sizes[0]:,} activities (bench/baseline)…[/]")
            old_load = load_before.measure(templates, athlete_id, sizes[0], work)
        common.out.print(f"[dim]{sizes[0]:,} activities landed in the state store, loaded as the asset does…[/]")
        asset = asset_load(templates, athlete_id, sizes[0], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows_table = table(
        "Warehouse load: detailed activities with splits, laps, efforts and zone buckets",
        [
            "activities",
            "rows stored",
            "activities",
            "splits",
            "laps",
            "efforts",
            "zones",
            "zone buckets",
            "seconds",
            "rows/s",
            "vs row-by-row",
            "file MiB",
            "documents MiB",
            "peak RSS MiB",
        ],
        [
            [
                r["activities"],
                r["rows"],
                *[r["per_table"][t] for t in TABLES],
                r["seconds"],
                r["rows_per_s"],
                f"{r['rows_per_s'] / baseline['rows_per_s']:.0f}×" if baseline else "—",
                r["file_mib"],
                r["documents_mib"],
                r["peak_rss_mib"],
            ]
            for r in results
        ]
        + (
            [
                [
                    f"as the warehouse asset loads ({asset['activities']:,} activities landed, {asset['batches']} batches)",
                    asset["rows"],
                    *["" for _ in TABLES],
                    asset["seconds"],
                    asset["rows_per_s"],
                    f"{asset['rows_per_s'] / baseline['rows_per_s']:.0f}×" if baseline else "—",
                    "—",
                    "—",
                    "—",
                ]
            ]
            if asset
            else []
        )
        + (
            [
                [
                    f"before issue 15 ({old_load['activities']:,} activities)",
                    old_load["rows"],
                    *["" for _ in TABLES],
                    old_load["seconds"],
                    old_load["rows_per_s"],
                    f"{old_load['rows_per_s'] / baseline['rows_per_s']:.0f}×" if baseline else "—",
                    "—",
                    "—",
                    "—",
                ],
                [
                    "  the same, its writer's closes left out",
                    old_load["rows"],
                    *["" for _ in TABLES],
                    old_load["seconds_without_closes"],
                    old_load["rows_per_s_without_closes"],
                    f"{old_load['rows_per_s_without_closes'] / baseline['rows_per_s']:.0f}×" if baseline else "—",
                    "—",
                    "—",
                    "—",
                ],
            ]
            if old_load
            else []
        )
        + (
            [
                [
                    f"row-by-row ({baseline['activities']} activities)",
                    baseline["rows"],
                    *[baseline["per_table"][t] for t in TABLES],
                    baseline["seconds"],
                    baseline["rows_per_s"],
                    "1×",
                    "—",
                    "—",
                    "—",
                ]
            ]
            if baseline
            else []
        ),
        caption=f"fitsync: batches of {BATCH} staged up to two ahead on a worker thread (load_pipeline.ahead → loads.stage) and "
        "written by one writer held up to a second (load_pipeline.write_held → loads.write), each batch its own "
        "transaction, from an empty warehouse, as the warehouse asset loads; seconds: the whole load, the "
        "writer's closes (checkpoints) included. Row-by-row: one parameterised upsert per row (executemany) "
        "of the same rows, already parsed, closes not timed. Before issue 15: the loader of that time "
        "(bench/baseline) on the first scale, same templates and batches, a writer per batch; with and without its "
        "closes. As the warehouse asset loads: the first scale's details and zones landed in the state store "
        "(SQLite) in chunks of 25 as the details step lands them, then load_landed (merged batches, the same pipeline), "
        "into an empty warehouse. Peak RSS: the process's during that scale's load (from 0 or the scale before; "
        "Linux's high-water mark, reset before it).",
    )
    reload_table = table(
        "Re-loading the same data",
        ["scale", "activities re-loaded", "rows written", "tables unchanged (hash)", "seconds"],
        [[r["activities"], r["reloaded"], r["rows_written"], r["unchanged"], r["seconds"]] for r in reloads],
    )
    for r in reloads:
        assert r["rows_written"] == 0 and r["unchanged"], f"re-load changed the warehouse: {r}"
    common.out.print("re-load of the same data changed nothing: [green]asserted[/]")
    targets = []
    if baseline:
        for r in results:
            ratio = r["rows_per_s"] / baseline["rows_per_s"]
            targets.append(
                target(
                    f"≥ {TARGET_RATIO:g}× row-by-row at {r['activities']:,} activities",
                    f"{ratio:.0f}× ({r['rows_per_s']:,.0f} vs {baseline['rows_per_s']:,.0f} rows/s)",
                    ratio >= TARGET_RATIO,
                )
            )
    if asset:
        targets.append(
            target(
                f"≥ {TARGET_ROWS_PER_S:,} rows/s at {asset['activities']:,} activities as the warehouse asset loads them "
                "(issue 33)",
                f"{asset['rows_per_s']:,.0f} rows/s (the loader alone, batches of {BATCH}: "
                f"{results[0]['rows_per_s']:,.0f})",
                asset["rows_per_s"] >= TARGET_ROWS_PER_S,
            )
        )
    largest = results[-1]
    if old_load:
        speedup = largest["rows_per_s"] / old_load["rows_per_s"]
        without = largest["rows_per_s"] / old_load["rows_per_s_without_closes"]
        targets.append(
            target(
                f"≥ {TARGET_SPEEDUP:g}× the load before issue 15 at {largest['activities']:,} activities "
                f"(same run, closes included; before: {old_load['activities']:,} activities)",
                f"{speedup:.2f}× ({largest['rows_per_s']:,.0f} vs {old_load['rows_per_s']:,.0f} rows/s; "
                f"{without:.2f}× its rows/s without closes)",
                speedup >= TARGET_SPEEDUP,
            )
        )
    if len(results) > 1:
        growth = results[-1]["peak_rss_mib"] / results[0]["peak_rss_mib"]
        targets.append(
            target(
                f"peak memory flat in history length (≤ {MEMORY_GROWTH:g}× from "
                f"{results[0]['activities']:,} to {results[-1]['activities']:,} activities)",
                f"{growth:.2f}×",
                growth <= MEMORY_GROWTH,
            )
        )
    targets.append(
        target(
            "re-load of the same data changes nothing",
            "0 rows written, hashes equal",
            all(r["rows_written"] == 0 and r["unchanged"] for r in reloads),
        )
    )
    common.save(
        "load",
        params={
            "scales": sizes,
            "templates": template_count,
            "sample": sample,
            "batch": BATCH,
            "reload_sample": reload_sample,
        },
        tables=[rows_table, reload_table],
        targets=targets,
        data={
            "results": results,
            "baseline": baseline,
            "before_issue_15": old_load,
            "asset": asset,
            "reloads": reloads,
        },
        started=started,
    )


if __name__ == "__main__":
    main()
