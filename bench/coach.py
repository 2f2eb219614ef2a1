"""coach: one athlete's report read from a coach's warehouse of many athletes, against the same athlete alone.

Two warehouses generated in SQL: ATHLETES athletes of ACTIVITIES activities each (ten years: rides with power on
most, runs, swims; five heart-rate zone buckets each, ten kilometre splits per run, two laps each, five segment
efforts per ride; activity ids interleaved between athletes, as the service's are), and one of them alone. Timed:
what `fitsync report` reads for that athlete before it draws (every analysis view it shows, filtered to the
athlete: warehouse/report._gathered), median of `--runs`, the two warehouses alternating. A view whose filter on
the athlete does not reach its reads computes every athlete's rows: the ratio grows with the number of athletes.

Target: the athlete's report reads in the coach's warehouse within 3x those of the athlete alone.

    python -m bench coach [--athletes 200] [--runs 3]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import click

from . import common

ACTIVITIES = 2_500
ATHLETE_SLOT = 5  # the athlete read: 1000 + this
TARGET_RATIO = 3.0


def build(path: Path, slots: range) -> int:
    """A warehouse of the athletes 1000 + slot, ACTIVITIES each."""
    from fitsync.warehouse import db

    db.migrate(path)
    athletes = f"range({slots.start}, {slots.stop}) r(a)"
    with db.writing(path) as conn:
        conn.execute(f"""INSERT INTO athletes (athlete_id, firstname, lastname, measurement_preference, ftp, synced_at,
                             raw)
                         SELECT 1000 + a, 'A', 'B', 'meters', 250, now(), '{{}}' FROM {athletes}""")
        conn.execute(f"""
            INSERT INTO activities (activity_id, athlete_id, name, sport_type, type, start_date, start_date_local,
                timezone, utc_offset, distance, moving_time, elapsed_time, total_elevation_gain, device_watts,
                weighted_average_watts, suffer_score, listed_at, summary_raw)
            SELECT 50000000 + i * 1000 + a, 1000 + a, 'activity', sport, sport,
                   (local_start - INTERVAL 1 HOUR) AT TIME ZONE 'UTC', local_start, 'Europe/Berlin', 3600,
                   30000, 3600, 3700, 100, sport = 'Ride' AND i % 5 <> 0,
                   CASE WHEN sport = 'Ride' AND i % 5 <> 0 THEN 180 + i % 60 END, 50, now(), '{{}}'
            FROM (SELECT a, i, CASE WHEN i % 10 < 6 THEN 'Ride' WHEN i % 10 < 9 THEN 'Run' ELSE 'Swim' END AS sport,
                         TIMESTAMP '2016-01-02 06:00:00' + to_days(CAST(i * 3650 // {ACTIVITIES} AS INTEGER))
                             + to_hours(CAST(i % 12 AS INTEGER)) AS local_start
                  FROM {athletes}, range({ACTIVITIES}) s(i))""")
        conn.execute("""
            INSERT INTO activity_zone_buckets
            SELECT activity_id, 'heartrate', k, [0, 120, 145, 160, 175][k], [120, 145, 160, 175, -1][k],
                   (activity_id * 31 + k * 977) % 1400
            FROM activities, range(1, 6) r(k)""")
        conn.execute("""
            INSERT INTO splits_metric (activity_id, split, distance, elapsed_time, moving_time, average_heartrate, raw)
            SELECT activity_id, k, 1000, 300 + k, 300 + k, 140 + k, '{}' FROM activities, range(1, 11) r(k)
            WHERE sport_type = 'Run'""")
        conn.execute("""
            INSERT INTO laps (lap_id, activity_id, lap_index, moving_time, elapsed_time, distance, start_date_local,
                device_watts, average_watts, average_heartrate, raw)
            SELECT activity_id * 10 + k, activity_id, k, 1800, 1850, 15000,
                   start_date_local + to_seconds(CAST(1800 * (k - 1) AS BIGINT)), device_watts,
                   CASE WHEN device_watts THEN 190 + k * 10 END, 135 + k, '{}'
            FROM activities, range(1, 3) r(k)""")
        conn.execute("""
            INSERT INTO segment_efforts (effort_id, activity_id, athlete_id, segment_id, name, elapsed_time,
                moving_time, start_date, start_date_local, distance, device_watts, average_watts, hidden, raw)
            SELECT activity_id * 10 + k, activity_id, athlete_id, 3000 + (activity_id + k) % 50, 'segment',
                   200 + (activity_id * 7 + k) % 300, 200, start_date + to_seconds(CAST(k * 300 AS BIGINT)),
                   start_date_local + to_seconds(CAST(k * 300 AS BIGINT)), 1000 + (activity_id + k) % 50 * 20,
                   device_watts, CASE WHEN device_watts THEN 250 END, false, '{}'
            FROM activities, range(1, 6) r(k) WHERE sport_type = 'Ride'""")
        conn.execute("CHECKPOINT")
        return int(conn.execute("SELECT count(*) FROM activities").fetchone()[0])


def gathered(path: Path, athlete_id: int) -> tuple[float, dict[str, float]]:
    """Seconds the report's reads take for the athlete, and per view."""
    from fitsync.warehouse import analysis, report

    spent: dict[str, float] = defaultdict(float)
    view = analysis.view

    def timed(conn: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return view(conn, name, *args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t0

    analysis.view = timed  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        report._gathered(path, athlete_id)
        return time.perf_counter() - t0, dict(spent)
    finally:
        analysis.view = view  # type: ignore[assignment]


@click.command()
@click.option("--athletes", default=200, show_default=True, help="Athletes in the coach's warehouse.")
@click.option("--runs", default=3, show_default=True, help="Timed reads of each warehouse (median).")
def main(athletes: int, runs: int) -> None:
    """One athlete's report reads in a warehouse of many athletes, against the athlete alone."""
    started = time.monotonic()
    athlete_id = 1000 + ATHLETE_SLOT
    with tempfile.TemporaryDirectory() as tmp:
        coach, alone = Path(tmp) / "coach.duckdb", Path(tmp) / "alone.duckdb"
        t0 = time.perf_counter()
        total = build(coach, range(athletes))
        build(alone, range(ATHLETE_SLOT, ATHLETE_SLOT + 1))
        built_s = time.perf_counter() - t0
        for path in (coach, alone):  # a warm-up each
            gathered(path, athlete_id)
        times: dict[str, list[float]] = {"coach": [], "alone": []}
        views: dict[str, dict[str, list[float]]] = {"coach": defaultdict(list), "alone": defaultdict(list)}
        for _ in range(runs):
            for name, path in (("coach", coach), ("alone", alone)):
                seconds, per_view = gathered(path, athlete_id)
                times[name].append(seconds)
                for view, s in per_view.items():
                    views[name][view].append(s)
    coach_s, alone_s = statistics.median(times["coach"]), statistics.median(times["alone"])
    ratio = coach_s / alone_s
    slowest = sorted(views["coach"], key=lambda v: -statistics.median(views["coach"][v]))[:8]
    rows = [
        (
            f"`{v}`",
            round(statistics.median(views["coach"][v]) * 1000),
            round(statistics.median(views["alone"][v]) * 1000),
        )
        for v in slowest
    ]
    caption = (
        f"{athletes} athletes × {ACTIVITIES:,} activities ({total:,}; built in {built_s:.0f} s), athlete "
        f"{athlete_id} read; median of {runs} alternating runs. All reads: {coach_s:.2f} s in the coach's warehouse, "
        f"{alone_s:.2f} s alone ({ratio:.1f}×)."
    )
    tables = [
        common.table("The report's slowest reads for one athlete", ["view", "coach's, ms", "alone, ms"], rows, caption)
    ]
    targets = [
        common.target(
            f"one athlete's report reads within {TARGET_RATIO:g}× of the athlete alone at {athletes} athletes",
            f"{ratio:.1f}× ({coach_s:.2f} s against {alone_s:.2f} s)",
            ratio <= TARGET_RATIO,
        )
    ]
    common.save(
        "coach",
        params={"athletes": athletes, "activities_per_athlete": ACTIVITIES, "runs": runs},
        tables=tables,
        targets=targets,
        data={"coach_s": times["coach"], "alone_s": times["alone"], "build_seconds": round(built_s, 1)},
        started=started,
    )


if __name__ == "__main__":
    main()
