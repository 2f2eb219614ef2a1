"""fitsync's analyses in Polars — the same results as the SQL views of analysis_views.sql.

Every function takes the warehouse (a path, opened read-only; a DuckDB connection; or `Tables` to share reads
between calls) and optionally one athlete, reads the tables it needs over Arrow into lazy frames and returns a
DataFrame with the view's columns, in the view's order:

    from fitsync.warehouse import analysis
    prs = analysis.segment_pr_events("~/.fitsync/warehouse.duckdb", athlete_id=42, segment_id=2000017)
    form = analysis.pmc(path, athlete_id=42).tail(1)

`view(source, name, athlete_id)` reads a view itself, for comparison or for SQL users' results as frames. The
lazy builders are in the analysis_* modules (`analysis_load.pmc(tables)` → LazyFrame) for composition.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import polars as pl

from . import analysis_base as base
from . import analysis_durability as durability
from . import analysis_load as load
from . import analysis_power as power
from . import analysis_segments as segments
from . import analysis_volume as volume
from . import analysis_zones as zones
from .analysis_base import Source, Tables, tables

__all__ = ["ANALYSES", "ORDER", "Source", "Tables", "tables", "view", "run"]

# Every analysis by its view name: the lazy builder over Tables.
ANALYSES: dict[str, Callable[[Tables], pl.LazyFrame]] = {
    "activity_calendar": base.activity_calendar,
    "athlete_as_of": base.athlete_as_of,
    "segment_effort_progression": segments.segment_effort_progression,
    "segment_pr_events": segments.segment_pr_events,
    "segment_pr_summary": segments.segment_pr_summary,
    "pr_monthly": segments.pr_monthly,
    "activity_zone_seconds": zones.activity_zone_seconds,
    "zone_time_weekly": zones.zone_time_weekly,
    "zone_time_monthly": zones.zone_time_monthly,
    "seiler_weekly": zones.seiler_weekly,
    "seiler_monthly": zones.seiler_monthly,
    "athlete_zone_history": zones.athlete_zone_history,
    "ftp_timeline": load.ftp_timeline,
    "activity_load": load.activity_load,
    "daily_load": load.daily_load,
    "daily_load_by_family": load.daily_load_by_family,
    "pmc": load.pmc,
    "pmc_by_family": load.pmc_by_family,
    "load_risk_daily": load.load_risk_daily,
    "load_coverage_weekly": load.load_coverage_weekly,
    "power_duration_curve": power.power_duration_curve,
    "critical_power": power.critical_power,
    "running_best_efforts": power.running_best_efforts,
    "aerobic_decoupling": durability.aerobic_decoupling,
    "efficiency_factor_weekly": durability.efficiency_factor_weekly,
    "gear_mileage": durability.gear_mileage,
    "volume_weekly": volume.volume_weekly,
    "volume_monthly": volume.volume_monthly,
    "volume_yearly": volume.volume_yearly,
    "ytd_cumulative": volume.ytd_cumulative,
    "eddington": volume.eddington,
    "eddington_curve": volume.eddington_curve,
}
# The order of each analysis's rows (unique keys): the views and the Polars functions both return rows so.
ORDER: dict[str, tuple[str, ...]] = {
    "activity_calendar": ("athlete_id", "start_date_local", "activity_id"),
    "athlete_as_of": ("athlete_id",),
    "segment_effort_progression": ("athlete_id", "segment_id", "attempt"),
    "segment_pr_events": ("athlete_id", "segment_id", "attempt"),
    "segment_pr_summary": ("athlete_id", "segment_id"),
    "pr_monthly": ("athlete_id", "month_start"),
    "activity_zone_seconds": ("athlete_id", "start_date_local", "activity_id", "zone_type", "zone"),
    "zone_time_weekly": ("athlete_id", "week_start", "zone_type", "zone"),
    "zone_time_monthly": ("athlete_id", "month_start", "zone_type", "zone"),
    "seiler_weekly": ("athlete_id", "week_start", "zone_type"),
    "seiler_monthly": ("athlete_id", "month_start", "zone_type"),
    "athlete_zone_history": ("athlete_id", "zone_type", "version", "zone"),
    "ftp_timeline": ("athlete_id", "valid_from"),
    "activity_load": ("athlete_id", "local_date", "activity_id"),
    "daily_load": ("athlete_id", "date"),
    "daily_load_by_family": ("athlete_id", "sport_family", "date"),
    "pmc": ("athlete_id", "date"),
    "pmc_by_family": ("athlete_id", "sport_family", "date"),
    "load_risk_daily": ("athlete_id", "date"),
    "load_coverage_weekly": ("athlete_id", "week_start"),
    "power_duration_curve": ("athlete_id", "season", "duration_s"),
    "critical_power": ("athlete_id", "season"),
    "running_best_efforts": ("athlete_id", "season", "splits"),
    "aerobic_decoupling": ("athlete_id", "local_date", "activity_id"),
    "efficiency_factor_weekly": ("athlete_id", "week_start", "sport_family", "basis"),
    "gear_mileage": ("athlete_id", "gear_id"),
    "volume_weekly": ("athlete_id", "week_start", "sport_type"),
    "volume_monthly": ("athlete_id", "month_start", "sport_type"),
    "volume_yearly": ("athlete_id", "year", "sport_type"),
    "ytd_cumulative": ("athlete_id", "sport_family", "year", "date"),
    "eddington": ("athlete_id", "sport_family", "unit"),
    "eddington_curve": ("athlete_id", "sport_family", "unit", "n"),
}


# Filters applied while reading the tables, for the analyses computed separately per value of that column (each
# segment's progression, each zone type's buckets): the same rows, less to read.
PUSHDOWN: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "segment_id": (frozenset({"segment_effort_progression", "segment_pr_events", "segment_pr_summary"}),
                   {"segment_efforts": "segment_id", "segments": "segment_id"}),
    "zone_type": (frozenset({"activity_zone_seconds", "zone_time_weekly", "zone_time_monthly", "seiler_weekly",
                             "seiler_monthly", "athlete_zone_history"}),
                  {"activity_zone_buckets": "zone_type", "athlete_zones": "zone_type",
                   "analysis_seiler_zones": "zone_type"}),
}


def run(name: str, source: Source, athlete_id: int | None = None, **filters: object) -> pl.DataFrame:
    """The analysis `name` computed with Polars, for one athlete or all, with optional column filters."""
    build = ANALYSES[name]
    if not isinstance(source, Tables):
        where: dict[str, dict[str, object]] = {}
        for column, value in filters.items():
            if value is not None and column in PUSHDOWN and name in PUSHDOWN[column][0]:
                for table, table_column in PUSHDOWN[column][1].items():
                    where.setdefault(table, {})[table_column] = value
        if where:
            opened = base.db.reading(Path(source).expanduser()) if isinstance(source, (str, Path)) else _as_is(source)
            with opened as conn:
                return _collect(build(Tables(conn, athlete_id, where)), athlete_id, filters)
    with tables(source, athlete_id) as t:
        return _collect(build(t), athlete_id, filters)


def _collect(frame: pl.LazyFrame, athlete_id: int | None, filters: dict[str, object]) -> pl.DataFrame:
    frame = base.only(frame, athlete_id)
    for column, value in filters.items():
        if value is not None:
            frame = frame.filter(pl.col(column) == value)
    return frame.collect()


@contextlib.contextmanager
def _as_is(conn: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    yield conn


def view(source: Source, name: str, athlete_id: int | None = None, **filters: object) -> pl.DataFrame:
    """The SQL view `name` read from DuckDB (same filters as `run`), as a DataFrame."""
    if name not in ANALYSES:
        raise KeyError(f"no analysis view {name!r}")
    where, params = [], {}
    for column, value in {"athlete_id": athlete_id, **filters}.items():
        if value is not None:
            where.append(f"{column} = ${column}")
            params[column] = value
    sql = f"SELECT * FROM {name}" + (" WHERE " + " AND ".join(where) if where else "")
    # no ORDER BY here: each view orders its rows by ORDER[name] itself, and DuckDB keeps that order through a filter
    conn_source = source.conn if isinstance(source, Tables) else source
    if isinstance(conn_source, duckdb.DuckDBPyConnection):
        return pl.from_arrow(conn_source.sql(sql, params=params or None).to_arrow_table())  # type: ignore[return-value]
    with base.db.reading(Path(conn_source).expanduser()) as conn:
        return pl.from_arrow(conn.sql(sql, params=params or None).to_arrow_table())  # type: ignore[return-value]


# --- one function per analysis (the names of the views) ------------------------------------------------------

def activity_calendar(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Each activity's local calendar: local_date, iso_year, iso_week (Monday start), week_start, month, year."""
    return run("activity_calendar", source, athlete_id)


def athlete_as_of(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """First/last local activity date and as_of_date (the later of the last activity and the last sync)."""
    return run("athlete_as_of", source, athlete_id)


def segment_effort_progression(source: Source, athlete_id: int | None = None,
                               segment_id: int | None = None) -> pl.DataFrame:
    """Every visible effort per segment in time order with attempt, running_best, previous_best and is_pr."""
    return run("segment_effort_progression", source, athlete_id, segment_id=segment_id)


def segment_pr_events(source: Source, athlete_id: int | None = None, segment_id: int | None = None) -> pl.DataFrame:
    """The PRs: date, time, improvement in seconds and % over the previous best (first attempts flagged)."""
    return run("segment_pr_events", source, athlete_id, segment_id=segment_id)


def segment_pr_summary(source: Source, athlete_id: int | None = None, segment_id: int | None = None) -> pl.DataFrame:
    """Per segment: attempts, current PR (time, date, effort), improvements and days since the PR."""
    return run("segment_pr_summary", source, athlete_id, segment_id=segment_id)


def pr_monthly(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """The PR trend: PRs, first attempts and efforts per month (dense)."""
    return run("pr_monthly", source, athlete_id)


def activity_zone_seconds(source: Source, athlete_id: int | None = None,
                          zone_type: str | None = None) -> pl.DataFrame:
    """Every activity's zone buckets with its own bounds, local calendar and Seiler zone."""
    return run("activity_zone_seconds", source, athlete_id, zone_type=zone_type)


def zone_time_weekly(source: Source, athlete_id: int | None = None, zone_type: str | None = None) -> pl.DataFrame:
    """Seconds and share per zone per ISO week."""
    return run("zone_time_weekly", source, athlete_id, zone_type=zone_type)


def zone_time_monthly(source: Source, athlete_id: int | None = None, zone_type: str | None = None) -> pl.DataFrame:
    """Seconds and share per zone per month."""
    return run("zone_time_monthly", source, athlete_id, zone_type=zone_type)


def seiler_weekly(source: Source, athlete_id: int | None = None, zone_type: str | None = None) -> pl.DataFrame:
    """Seiler's three zones per ISO week with shares and the polarization index (NULL + pi_note when undefined)."""
    return run("seiler_weekly", source, athlete_id, zone_type=zone_type)


def seiler_monthly(source: Source, athlete_id: int | None = None, zone_type: str | None = None) -> pl.DataFrame:
    """Seiler's three zones per month with shares and the polarization index."""
    return run("seiler_monthly", source, athlete_id, zone_type=zone_type)


def athlete_zone_history(source: Source, athlete_id: int | None = None,
                         zone_type: str | None = None) -> pl.DataFrame:
    """The athlete's zone definitions over time (valid_from / valid_to per version of the bounds)."""
    return run("athlete_zone_history", source, athlete_id, zone_type=zone_type)


def ftp_timeline(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """FTP by date: analysis_ftp_history rows and the profile FTP as fitsync saw it, merged."""
    return run("ftp_timeline", source, athlete_id)


def activity_load(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Per activity: load and load_source (power TSS, suffer_score or none), FTP in force and its source."""
    return run("activity_load", source, athlete_id)


def daily_load_by_family(source: Source, athlete_id: int | None = None,
                         sport_family: str | None = None) -> pl.DataFrame:
    """Dense daily load per sport family (and All) from the first activity to as_of_date."""
    return run("daily_load_by_family", source, athlete_id, sport_family=sport_family)


def pmc_by_family(source: Source, athlete_id: int | None = None, sport_family: str | None = None) -> pl.DataFrame:
    """CTL/ATL/TSB per sport family (All: every activity, as pmc)."""
    return run("pmc_by_family", source, athlete_id, sport_family=sport_family)


def load_risk_daily(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Acute:chronic workload ratio (rolling and EWMA), monotony and strain per day."""
    return run("load_risk_daily", source, athlete_id)


def power_duration_curve(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Mean-maximal power per season (0 = all time) and duration, from efforts, laps and activities."""
    return run("power_duration_curve", source, athlete_id)


def critical_power(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """CP and W' per season (0 = all time): the 2-parameter model on 2-20 min bests, with its fit quality."""
    return run("critical_power", source, athlete_id)


def running_best_efforts(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Fastest 1 km, 5 km, 10 km, half and marathon per season (0 = all time) from kilometre splits."""
    return run("running_best_efforts", source, athlete_id)


def aerobic_decoupling(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Pa:HR decoupling per activity: first-half against second-half efficiency, from splits or laps."""
    return run("aerobic_decoupling", source, athlete_id)


def efficiency_factor_weekly(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Normalized power or speed per heartbeat, per ISO week, family and basis."""
    return run("efficiency_factor_weekly", source, athlete_id)


def gear_mileage(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Distance, time and use dates per bike or shoe, the service's total, and retirement."""
    return run("gear_mileage", source, athlete_id)


def daily_load(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Dense daily load from the first activity to as_of_date (rest days 0)."""
    return run("daily_load", source, athlete_id)


def pmc(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Daily CTL (42 d), ATL (7 d), TSB (yesterday's CTL - ATL), ramp rate and form band."""
    return run("pmc", source, athlete_id)


def load_coverage_weekly(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Per ISO week: share of moving time that has a load, and activities per load source."""
    return run("load_coverage_weekly", source, athlete_id)


def volume_weekly(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Distance, moving time, elevation and count per ISO week and sport type."""
    return run("volume_weekly", source, athlete_id)


def volume_monthly(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Distance, moving time, elevation and count per month and sport type."""
    return run("volume_monthly", source, athlete_id)


def volume_yearly(source: Source, athlete_id: int | None = None) -> pl.DataFrame:
    """Distance, moving time, elevation and count per year and sport type."""
    return run("volume_yearly", source, athlete_id)


def ytd_cumulative(source: Source, athlete_id: int | None = None, sport_family: str | None = None) -> pl.DataFrame:
    """Year-to-date running totals per day, year and sport family ('All' = every sport)."""
    return run("ytd_cumulative", source, athlete_id, sport_family=sport_family)


def eddington(source: Source, athlete_id: int | None = None, sport_family: str | None = None,
              unit: str | None = None) -> pl.DataFrame:
    """Eddington number per sport family in km and mi, with the days still needed for the next."""
    return run("eddington", source, athlete_id, sport_family=sport_family, unit=unit)


def eddington_curve(source: Source, athlete_id: int | None = None, sport_family: str | None = None,
                    unit: str | None = None) -> pl.DataFrame:
    """Days that reached n km (or mi) for every n up to the longest day."""
    return run("eddington_curve", source, athlete_id, sport_family=sport_family, unit=unit)
