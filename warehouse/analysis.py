"""fitsync's analyses, read as Polars DataFrames from their one definition: the SQL views of analysis_views.sql.

Analysts query the views in SQL; Python reads the same rows with `view`, filtered by athlete and any other column
(the filters reach the view's tables: DuckDB pushes them through the views' window partitions):

    from fitsync.warehouse import analysis
    prs = analysis.view("~/.fitsync/warehouse.duckdb", "segment_pr_events", athlete_id=42, segment_id=2000017)
    form = analysis.view(path, "pmc", athlete_id=42).tail(1)

`ANALYSES` names every analysis view with what it holds (docs/analysis.md has the formulas and their sources).
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

import duckdb
import polars as pl

from . import db
from .location import Warehouse

__all__ = ["ANALYSES", "FROM_STREAMS", "ORDER", "Source", "view", "frames"]

Source = Union[str, Path, Warehouse, duckdb.DuckDBPyConnection]

# Every analysis view: what it holds, and the unique keys its rows are ordered by.
ANALYSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "future_activities": (
        "Activities dated after fitsync received them (a device clock ahead): left out of every analysis",
        ("athlete_id", "activity_id"),
    ),
    "duplicate_activities": (
        "Second recordings of one session (same sport, overlapping): left out of every analysis",
        ("athlete_id", "activity_id"),
    ),
    "activity_calendar": (
        "Each activity's local calendar: local_date, ISO year and week (Monday start), month, year",
        ("athlete_id", "start_date_local", "activity_id"),
    ),
    "athlete_as_of": (
        "First and last local activity date and as_of_date (the later of the last activity and the last sync)",
        ("athlete_id",),
    ),
    "segment_effort_progression": (
        "Every visible effort per segment in time order with attempt, running_best, previous_best and is_pr",
        ("athlete_id", "segment_id", "attempt"),
    ),
    "segment_pr_events": (
        "The PRs: date, time, improvement in seconds and % over the previous best",
        ("athlete_id", "segment_id", "attempt"),
    ),
    "segment_pr_summary": (
        "Per segment: attempts, current PR (time, date, effort), improvements, days since the PR",
        ("athlete_id", "segment_id"),
    ),
    "pr_monthly": ("PRs, first attempts and efforts per month (dense)", ("athlete_id", "month_start")),
    "activity_zone_seconds": (
        "Every activity's zone buckets with its own bounds, local calendar and Seiler zone",
        ("athlete_id", "start_date_local", "activity_id", "zone_type", "zone"),
    ),
    "zone_time_weekly": ("Seconds and share per zone per ISO week", ("athlete_id", "week_start", "zone_type", "zone")),
    "zone_time_monthly": ("Seconds and share per zone per month", ("athlete_id", "month_start", "zone_type", "zone")),
    "seiler_weekly": (
        "Seiler's three zones per ISO week with shares and the polarization index",
        ("athlete_id", "week_start", "zone_type"),
    ),
    "seiler_monthly": (
        "Seiler's three zones per month with shares and the polarization index",
        ("athlete_id", "month_start", "zone_type"),
    ),
    "athlete_zone_history": (
        "The athlete's zone definitions over time (valid_from / valid_to per version)",
        ("athlete_id", "zone_type", "version", "zone"),
    ),
    "ftp_timeline": (
        "FTP by date: analysis_ftp_history rows and the profile FTP as fitsync saw it, merged",
        ("athlete_id", "valid_from"),
    ),
    "profile_ftp_unused": (
        "Profile FTPs the loads do not use (outside ftp_min_w .. ftp_max_w), with the days they were seen",
        ("athlete_id", "first_seen", "ftp"),
    ),
    "activity_load": (
        "Per activity: every load candidate, the load chosen and its source, the FTP in force",
        ("athlete_id", "local_date", "activity_id"),
    ),
    "daily_load": ("Dense daily load from the first activity to as_of_date (rest days 0)", ("athlete_id", "date")),
    "daily_load_by_family": ("Dense daily load per sport family (and All)", ("athlete_id", "sport_family", "date")),
    "pmc": ("Daily CTL, ATL, TSB (yesterday's CTL - ATL), ramp rate and form band", ("athlete_id", "date")),
    "pmc_by_family": (
        "CTL/ATL/TSB per sport family (All: every activity, as pmc)",
        ("athlete_id", "sport_family", "date"),
    ),
    "load_risk_daily": (
        "Acute:chronic workload ratio (rolling and EWMA), monotony and strain per day",
        ("athlete_id", "date"),
    ),
    "load_coverage_weekly": (
        "Per ISO week: the share of moving time with a load, and activities per load source",
        ("athlete_id", "week_start"),
    ),
    "power_duration_curve": (
        "Mean-maximal power per season (0 = all time) and duration, from efforts, laps and activities",
        ("athlete_id", "season", "duration_s"),
    ),
    "critical_power": (
        "CP and W' per season (0 = all time) on the power-duration envelope, with its gates",
        ("athlete_id", "season"),
    ),
    "running_best_efforts": (
        "Fastest 1 km to marathon per season (0 = all time) from kilometre splits",
        ("athlete_id", "season", "splits"),
    ),
    "activity_stream_seconds": (
        "Each activity's streams at one row per second: short gaps interpolated, long ones a pause",
        ("athlete_id", "activity_id", "second"),
    ),
    "activity_mmp": (
        "Each activity's mean-maximal power and speed, 1 s to 5 h, computed once when its streams were written",
        ("athlete_id", "activity_id", "duration_s"),
    ),
    "season_power_curve": (
        "Mean-maximal power from streams per season (0 = all time) and duration, this season vs last",
        ("athlete_id", "season", "duration_s"),
    ),
    "run_jumps": (
        "Steps of a run's distance stream faster than run_max_speed: GPS jumps no effort or pace holds",
        ("athlete_id", "activity_id", "time"),
    ),
    "pace_duration_curve": (
        "Best average speed of runs from streams per season (0 = all time) and duration, with its pace",
        ("athlete_id", "season", "duration_s"),
    ),
    "critical_speed": (
        "CS and D' per season (0 = all time) fitted on the pace-duration curve",
        ("athlete_id", "season"),
    ),
    "activity_normalized_power": (
        "NP computed from the power stream (Coggan), the service's beside it, IF on the FTP of the date",
        ("athlete_id", "local_date", "activity_id"),
    ),
    "w_prime_balance": (
        "W' balance per second (Skiba's integral model) on the CP fit: filter by activity_id",
        ("athlete_id", "activity_id", "second"),
    ),
    "w_prime_balance_summary": (
        "Per activity: the lowest W' balance, when, and the share of W' used",
        ("athlete_id", "local_date", "activity_id"),
    ),
    "stream_decoupling": (
        "Pa:HR decoupling per activity from the streams' halves of moving time, warm-up excluded",
        ("athlete_id", "local_date", "activity_id"),
    ),
    "stream_best_efforts": (
        "Fastest 400 m to marathon of runs per season (0 = all time) from the distance stream, interpolated",
        ("athlete_id", "season", "distance_m"),
    ),
    "stream_zone_seconds": (
        "Seconds in each heart-rate and power zone per activity from the streams, beside the service's buckets",
        ("athlete_id", "local_date", "activity_id", "zone_type", "zone"),
    ),
    "aerobic_decoupling": (
        "Pa:HR decoupling per activity: first against second half of the steady part",
        ("athlete_id", "local_date", "activity_id"),
    ),
    "efficiency_factor_weekly": (
        "Normalized power or speed per heartbeat, per ISO week, family and basis",
        ("athlete_id", "week_start", "sport_family", "basis"),
    ),
    "gear_mileage": (
        "Distance, time and use dates per bike or shoe, the service's total, and retirement",
        ("athlete_id", "gear_id"),
    ),
    "volume_weekly": (
        "Distance, moving time, elevation and count per ISO week and sport type",
        ("athlete_id", "week_start", "sport_type"),
    ),
    "volume_monthly": (
        "Distance, moving time, elevation and count per month and sport type",
        ("athlete_id", "month_start", "sport_type"),
    ),
    "volume_yearly": (
        "Distance, moving time, elevation and count per year and sport type",
        ("athlete_id", "year", "sport_type"),
    ),
    "ytd_cumulative": (
        "Year-to-date running totals per day, year and sport family ('All' = every sport)",
        ("athlete_id", "sport_family", "year", "date"),
    ),
    "eddington": (
        "Eddington number per sport family in km and mi, with the days still needed for the next",
        ("athlete_id", "sport_family", "unit"),
    ),
    "eddington_curve": (
        "Days that reached n km (or mi) for every n up to the longest day",
        ("athlete_id", "sport_family", "unit", "n"),
    ),
}
ORDER: dict[str, tuple[str, ...]] = {name: keys for name, (_, keys) in ANALYSES.items()}
# The analyses that read the streams (rows only for activities whose streams are stored).
FROM_STREAMS = (
    "activity_stream_seconds",
    "activity_mmp",
    "season_power_curve",
    "run_jumps",
    "pace_duration_curve",
    "critical_speed",
    "activity_normalized_power",
    "w_prime_balance",
    "w_prime_balance_summary",
    "stream_decoupling",
    "stream_best_efforts",
    "stream_zone_seconds",
)
# The views one athlete's read takes from a macro of the athlete (analysis_views.sql): their own filter on athlete_id
# does not reach what they read.
OF_ATHLETE = {"stream_best_efforts": "stream_best_efforts_of", "stream_zone_seconds": "stream_zone_seconds_of"}


def view(source: Source, name: str, athlete_id: int | None = None, **filters: object) -> pl.DataFrame:
    """The analysis view `name` for one athlete (or all), rows equal to `filters` (None: no filter), in the view's
    own order (ORDER[name])."""
    if name not in ANALYSES:
        raise KeyError(f"no analysis view {name!r}")
    where, params = [], {}
    for column, value in {"athlete_id": athlete_id, **filters}.items():
        if value is not None:
            where.append(f'"{column}" = ${column}')
            params[column] = value
    source_sql = f"{OF_ATHLETE[name]}($athlete_id)" if name in OF_ATHLETE and athlete_id is not None else name
    # no ORDER BY here: each view orders its rows itself, and DuckDB keeps that order through a filter
    sql = f"SELECT * FROM {source_sql}" + (" WHERE " + " AND ".join(where) if where else "")
    if isinstance(source, duckdb.DuckDBPyConnection):
        return _read(source, sql, params)
    with db.reading(_opened(source)) as conn:
        return _read(conn, sql, params)


def frames(source: Source, names: list[str], athlete_id: int | None = None) -> dict[str, pl.DataFrame]:
    """Several analyses on one read (a warehouse path is opened once)."""
    if isinstance(source, duckdb.DuckDBPyConnection):
        return {name: view(source, name, athlete_id) for name in names}
    with db.reading(_opened(source)) as conn:
        return {name: view(conn, name, athlete_id) for name in names}


def _read(conn: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> pl.DataFrame:
    """The rows of `sql` as Polars. A prepared statement's result goes to Arrow whole: DuckDB 1.5's
    `sql(..., params=...)` materializes a relation first (≈ 8× the time for 250k rows of segment_effort_progression,
    bench/query.py)."""
    return conn.execute(sql, params or None).pl()


def _opened(source: str | Path | Warehouse) -> Path | Warehouse:
    """A warehouse as given, a file's path with ~ expanded."""
    return source if isinstance(source, Warehouse) else Path(source).expanduser()
