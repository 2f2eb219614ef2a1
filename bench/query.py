"""Latency of the trend analyses on a busy athlete: each view read into Polars (`analysis.view`).

Builds a synthetic warehouse directly with SQL (≈5,000 activities over 14 years, ≈250,000 segment efforts on 400
segments, heart-rate and power zone buckets), then times PR progression (whole history, and one segment), the
weekly zone trend and the PMC: each the median of several runs after a warm-up. Target: each under 100 ms.

    python -m bench query [--runs 7] [--keep PATH]     (or: fitsync bench query)

Prints a table and writes bench/results/query.json.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from fitsync.warehouse import analysis, db

from . import common

ATHLETE = 77_000_001
ACTIVITIES = 5_000
EFFORTS_PER_ACTIVITY = 50
SEGMENTS = 400
YEARS = 14
TARGET_MS = 100.0


def build(path: Path) -> dict[str, int]:
    """The busy athlete's warehouse, generated in SQL (a few seconds)."""
    db.migrate(path)
    span_days = YEARS * 365
    with db.writing(path) as conn:
        conn.execute(
            "INSERT INTO athletes (athlete_id, firstname, lastname, measurement_preference, ftp, synced_at, "
            "raw) VALUES (?, 'Busy', 'Athlete', 'meters', 260, now(), '{}')",
            [ATHLETE],
        )
        conn.execute(f"""
            INSERT INTO activities (activity_id, athlete_id, name, sport_type, type, start_date, start_date_local,
                timezone, utc_offset, distance, moving_time, elapsed_time, total_elevation_gain, device_watts,
                weighted_average_watts, suffer_score, listed_at, summary_raw)
            SELECT 50000000 + i, {ATHLETE}, 'activity ' || i, sport, sport,
                   (local_start - INTERVAL 1 HOUR) AT TIME ZONE 'UTC', local_start, 'Europe/Berlin', 3600,
                   CASE sport WHEN 'Ride' THEN 30000 + (i * 7919) % 90000 WHEN 'Run' THEN 5000 + (i * 104729) % 20000
                        ELSE 1500 + i % 2500 END,
                   1800 + (i * 6151) % 14000, 2000 + (i * 6151) % 14000, (i * 31) % 1500,
                   sport = 'Ride' AND i % 5 <> 0, CASE WHEN sport = 'Ride' THEN 150 + (i * 13) % 150 END,
                   20 + (i * 37) % 250, now(), '{{}}'
            FROM (SELECT i, CASE WHEN i % 10 < 6 THEN 'Ride' WHEN i % 10 < 9 THEN 'Run' ELSE 'Swim' END AS sport,
                         TIMESTAMP '2012-01-02 06:00:00' + to_days(CAST(i * {span_days} // {ACTIVITIES} AS INTEGER))
                             + to_hours(CAST(i % 12 AS INTEGER)) AS local_start
                  FROM range(0, {ACTIVITIES}) r(i))""")
        conn.execute(f"""
            INSERT INTO segments (segment_id, name, activity_type, distance, synced_at, raw)
            SELECT 3000000 + s, 'Segment ' || s, 'Ride', 500 + s * 20, now(), '{{}}' FROM range(0, {SEGMENTS}) r(s)""")
        conn.execute(f"""
            INSERT INTO segment_efforts (effort_id, activity_id, athlete_id, segment_id, name, elapsed_time,
                moving_time, start_date, start_date_local, pr_rank, hidden, raw)
            SELECT 900000000 + a.i * {EFFORTS_PER_ACTIVITY} + j, 50000000 + a.i, {ATHLETE},
                   3000000 + (a.i * 7 + j * 13) % {SEGMENTS}, 'Segment',
                   200 + ((a.i * 7919 + j * 104729) % 600), 200 + ((a.i * 7919 + j * 104729) % 600),
                   a.start_date + to_seconds(CAST(j * 60 AS INTEGER)),
                   a.start_date_local + to_seconds(CAST(j * 60 AS INTEGER)), NULL, (a.i + j) % 97 = 0, '{{}}'
            FROM (SELECT activity_id - 50000000 AS i, start_date, start_date_local FROM activities) a,
                 range(0, {EFFORTS_PER_ACTIVITY}) r(j)""")
        conn.execute("""
            INSERT INTO activity_zone_buckets
            SELECT activity_id, 'heartrate', k, [0, 120, 145, 160, 175][k], [120, 145, 160, 175, -1][k],
                   (activity_id * 31 + k * 977) % 2400
            FROM activities, range(1, 6) r(k)""")
        conn.execute("""
            INSERT INTO activity_zone_buckets
            SELECT activity_id, 'power', k, [0, 143, 195, 234, 273, 312, 390][k], [143, 195, 234, 273, 312, 390, -1][k],
                   (activity_id * 17 + k * 613) % 1800
            FROM activities, range(1, 8) r(k) WHERE device_watts""")
        conn.execute(f"""
            INSERT INTO athlete_zones (athlete_id, snapshot_date, zone_type, bucket_index, min, max, seconds, synced_at, raw)
            SELECT {ATHLETE}, DATE '2012-01-01' + CAST(y * 365 AS INTEGER), 'heartrate', k,
                   [0, 120, 145, 160, 175][k] + y // 3, [120, 145, 160, 175, -1][k], 0, now(), '{{}}'
            FROM range(0, {YEARS}) r(y), range(1, 6) s(k)""")
        counts = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("activities", "segment_efforts", "activity_zone_buckets", "segments")
        }
        conn.execute("CHECKPOINT")
    return counts


def timed(run: Callable[[], Any], runs: int) -> tuple[float, int]:
    """Median milliseconds over `runs` runs after one warm-up, and the row count."""
    rows = len(run())
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), rows


def measure(path: Path, runs: int) -> list[dict[str, Any]]:
    with db.reading(path) as conn:
        segment = conn.execute(
            "SELECT segment_id FROM segment_efforts GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1"
        ).fetchall()[0][0]
        cases: list[tuple[str, dict[str, Any]]] = [
            ("PR progression (all segments)", {"name": "segment_effort_progression"}),
            ("PR progression (one segment)", {"name": "segment_effort_progression", "segment_id": segment}),
            ("PR events (all segments)", {"name": "segment_pr_events"}),
            ("weekly zone trend", {"name": "zone_time_weekly"}),
            ("weekly Seiler + PI", {"name": "seiler_weekly"}),
            ("PMC (CTL/ATL/TSB)", {"name": "pmc"}),
            ("training load per activity", {"name": "activity_load"}),
            ("critical power", {"name": "critical_power"}),
        ]
        results = []
        for label, read in cases:
            median, rows = timed(lambda: analysis.view(conn, athlete_id=ATHLETE, **read), runs)
            results.append(
                {
                    "analysis": label,
                    "view": read["name"],
                    "median_ms": round(median, 1),
                    "rows": rows,
                    "under_target": median < TARGET_MS,
                }
            )
        return results


@click.command()
@click.option("--runs", default=7, show_default=True, help="Timed runs per query (the median is reported).")
@click.option(
    "--keep",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Build the warehouse at this path and keep it (default: a temporary folder).",
)
def main(runs: int, keep: Path | None) -> None:
    """Latency of the PR progression, zone trend, PMC, load and CP views on a busy athlete."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path = keep or Path(tmp) / "busy.duckdb"
        if path.exists():
            path.unlink()
        t0 = time.perf_counter()
        counts = build(path)
        built_s = time.perf_counter() - t0
        load_before = os.getloadavg()[0]
        results = measure(path, runs)
        load_after = os.getloadavg()[0]
    rows = [(r["analysis"], f"`{r['view']}`", r["median_ms"], r["rows"], r["under_target"]) for r in results]
    caption = (
        f"{counts['activities']:,} activities, {counts['segment_efforts']:,} efforts on {counts['segments']} "
        f"segments, {counts['activity_zone_buckets']:,} zone buckets (built in {built_s:.1f} s); median of "
        f"{runs} runs after a warm-up; load average {load_before:.1f} → {load_after:.1f} on "
        f"{os.cpu_count()} CPUs during the runs."
    )
    columns = ["analysis", "view", "median ms", "rows", f"< {TARGET_MS:.0f} ms"]
    tables = [common.table("Trend queries on a busy athlete", columns, rows, caption)]
    slowest = max(results, key=lambda r: r["median_ms"])
    targets = [
        common.target(
            f"each under {TARGET_MS:.0f} ms",
            f"slowest: {slowest['analysis']} {slowest['median_ms']} ms",
            all(r["under_target"] for r in results),
        )
    ]
    common.save(
        "query",
        params={
            "runs": runs,
            "athlete_activities": ACTIVITIES,
            "efforts_per_activity": EFFORTS_PER_ACTIVITY,
            "segments": SEGMENTS,
            "years": YEARS,
            "load_average": [round(load_before, 2), round(load_after, 2)],
        },
        tables=tables,
        targets=targets,
        data={"warehouse": counts, "build_seconds": round(built_s, 2), "results": results},
        started=started,
    )


if __name__ == "__main__":
    main()
