"""What every Polars analysis shares: the warehouse tables as LazyFrames over Arrow from DuckDB, the local
calendar and the as-of date. The functions here and in the analysis_* modules mirror the SQL views of
analysis_views.sql column for column and row for row (tests assert it)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Union

import duckdb
import polars as pl

from . import db

# The columns each analysis reads (never the raw JSON), and how a table is narrowed to one athlete.
COLUMNS: dict[str, tuple[str, ...]] = {
    "activities": ("activity_id", "athlete_id", "sport_type", "start_date_local", "utc_offset", "distance",
                   "moving_time", "elapsed_time", "total_elevation_gain", "device_watts", "weighted_average_watts",
                   "average_heartrate", "average_watts", "suffer_score", "gear_id"),
    "athletes": ("athlete_id", "ftp", "synced_at"),
    "athlete_snapshots": ("athlete_id", "snapshot_date", "ftp"),
    "segment_efforts": ("athlete_id", "segment_id", "name", "effort_id", "activity_id", "start_date",
                        "start_date_local", "elapsed_time", "moving_time", "pr_rank", "hidden", "device_watts",
                        "average_watts"),
    "laps": ("lap_id", "activity_id", "lap_index", "start_date_local", "moving_time", "distance", "device_watts",
             "average_watts", "average_heartrate"),
    "splits_metric": ("activity_id", "split", "distance", "elapsed_time", "moving_time", "average_heartrate",
                      "average_grade_adjusted_speed"),
    "gear": ("gear_id", "athlete_id", "kind", "name", "is_primary", "distance", "retired"),
    "segments": ("segment_id", "name"),
    "activity_zone_buckets": ("activity_id", "zone_type", "bucket_index", "min", "max", "seconds"),
    "athlete_zones": ("athlete_id", "zone_type", "snapshot_date", "bucket_index", "min", "max"),
    "analysis_settings": ("name", "value"),
    "analysis_seiler_zones": ("athlete_id", "zone_type", "zone_count", "bucket_index", "seiler_zone"),
    "analysis_ftp_history": ("athlete_id", "valid_from", "ftp"),
    "analysis_thresholds": ("athlete_id", "valid_from", "lthr", "threshold_pace_s_per_km"),
    "analysis_sport_families": ("sport_type", "family", "power_tss", "estimate_if"),
    "analysis_form_bands": ("band", "tsb_from", "tsb_to", "sort_order"),
    "analysis_power_durations": ("duration_s", "label"),
    "analysis_run_distances": ("splits", "label"),
    "analysis_hr_zone_weights": ("zone_count", "zone", "load_per_hour"),
}
ATHLETE_FILTER: dict[str, str] = {
    "activities": "athlete_id = $athlete",
    "athletes": "athlete_id = $athlete",
    "athlete_snapshots": "athlete_id = $athlete",
    "gear": "athlete_id = $athlete",
    "segment_efforts": "athlete_id = $athlete",
    "athlete_zones": "athlete_id = $athlete",
    "analysis_ftp_history": "athlete_id = $athlete",
    "analysis_thresholds": "athlete_id = $athlete",
    "analysis_seiler_zones": "athlete_id IN (0, $athlete)",
    "activity_zone_buckets": "activity_id IN (SELECT activity_id FROM activities WHERE athlete_id = $athlete)",
    "laps": "activity_id IN (SELECT activity_id FROM activities WHERE athlete_id = $athlete)",
    "splits_metric": "activity_id IN (SELECT activity_id FROM activities WHERE athlete_id = $athlete)",
    "segments": "segment_id IN (SELECT segment_id FROM segment_efforts WHERE athlete_id = $athlete)",
}


class Tables:
    """The warehouse tables as LazyFrames, each read once over Arrow, optionally only one athlete's rows."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, athlete_id: int | None = None,
                 where: dict[str, dict[str, Any]] | None = None) -> None:
        """`where`: table → {column: value} read filters (only for analyses partitioned by those columns)."""
        self.conn = conn
        self.athlete_id = athlete_id
        self.where = where or {}
        self._frames: dict[str, pl.LazyFrame] = {}

    def __getitem__(self, table: str) -> pl.LazyFrame:
        if table not in self._frames:
            sql = f"SELECT {', '.join(COLUMNS[table])} FROM {table}"
            params: dict[str, Any] = {}
            conditions = []
            if self.athlete_id is not None and table in ATHLETE_FILTER:
                conditions.append(ATHLETE_FILTER[table])
                params["athlete"] = self.athlete_id
            for n, (column, value) in enumerate(self.where.get(table, {}).items()):
                conditions.append(f"{column} = $w{n}")
                params[f"w{n}"] = value
            if conditions:
                sql += " WHERE " + " AND ".join(conditions)
            arrow = self.conn.sql(sql, params=params or None).to_arrow_table()
            self._frames[table] = pl.from_arrow(arrow).lazy()  # type: ignore[union-attr]
        return self._frames[table]

    def setting(self, name: str) -> float:
        value = self["analysis_settings"].filter(pl.col("name") == name).select("value").collect()
        if value.height != 1:
            raise KeyError(f"analysis_settings has no {name!r}")
        return float(value.item())

    def cached(self, key: str, build: Any) -> pl.LazyFrame:
        """Intermediate results (the calendar, the as-of dates) computed once per Tables."""
        if key not in self._frames:
            self._frames[key] = build().collect().lazy()
        return self._frames[key]


Source = Union[str, Path, duckdb.DuckDBPyConnection, Tables]


@contextlib.contextmanager
def tables(source: Source, athlete_id: int | None = None) -> Iterator[Tables]:
    """Tables from a warehouse path (opened read-only, waiting out a writer), a connection, or Tables as is."""
    if isinstance(source, Tables):
        if athlete_id is not None and source.athlete_id not in (None, athlete_id):
            raise ValueError(f"these tables hold athlete {source.athlete_id}, not {athlete_id}")
        yield source
    elif isinstance(source, duckdb.DuckDBPyConnection):
        yield Tables(source, athlete_id)
    else:
        with db.reading(Path(source).expanduser()) as conn:
            yield Tables(conn, athlete_id)


def only(frame: pl.LazyFrame, athlete_id: int | None) -> pl.LazyFrame:
    """Rows of one athlete when the tables were read for all."""
    return frame if athlete_id is None else frame.filter(pl.col("athlete_id") == athlete_id)


# --- calendar ---------------------------------------------------------------------------------------------------

def activity_calendar(t: Tables) -> pl.LazyFrame:
    """View activity_calendar: local date, ISO year/week (Monday start), month, year — from start_date_local."""
    return t.cached("activity_calendar", lambda: _calendar(t))


def _calendar(t: Tables) -> pl.LazyFrame:
    families = t["analysis_sport_families"].select("sport_type", "family")
    local = pl.col("local_date")
    return (
        t["activities"]
        .filter(pl.col("start_date_local").is_not_null())
        .select("activity_id", "athlete_id", "sport_type", "start_date_local",
                pl.col("start_date_local").dt.date().alias("local_date"))
        .join(families, on="sport_type", how="left")
        .with_columns(pl.col("family").fill_null("Other").alias("sport_family"),
                      local.dt.iso_year().cast(pl.Int32).alias("iso_year"),
                      local.dt.week().cast(pl.Int32).alias("iso_week"))
        .select("activity_id", "athlete_id", "sport_type", "sport_family", "start_date_local", "local_date",
                "iso_year", "iso_week",
                pl.format("{}-W{}", pl.col("iso_year"), pl.col("iso_week").cast(pl.String).str.zfill(2))
                .alias("iso_week_label"),
                local.dt.truncate("1w").alias("week_start"),
                local.dt.month_start().alias("month_start"),
                local.dt.year().cast(pl.Int32).alias("year"),
                local.dt.month().cast(pl.Int32).alias("month"),
                local.dt.weekday().cast(pl.Int32).alias("iso_weekday"),
                local.dt.ordinal_day().cast(pl.Int32).alias("day_of_year"))
        .sort("athlete_id", "start_date_local", "activity_id")
    )


def athlete_as_of(t: Tables) -> pl.LazyFrame:
    """View athlete_as_of: first and last local activity dates and the date the data is known complete to."""
    return t.cached("athlete_as_of", lambda: _as_of(t))


def _as_of(t: Tables) -> pl.LazyFrame:
    acts = (
        t["activities"].filter(pl.col("start_date_local").is_not_null())
        .group_by("athlete_id")
        .agg(pl.col("start_date_local").min().dt.date().alias("first_activity_date"),
             pl.col("start_date_local").max().dt.date().alias("last_activity_date"),
             pl.col("utc_offset").sort_by("start_date_local", "activity_id").drop_nulls().last().alias("utc_offset"))
    )
    synced = t["athletes"].select("athlete_id", pl.col("synced_at").dt.convert_time_zone("UTC")
                                  .dt.replace_time_zone(None).alias("synced_utc"))
    return (
        acts.join(synced, on="athlete_id", how="left")
        .with_columns((pl.col("synced_utc") + pl.duration(seconds=pl.col("utc_offset").fill_null(0)))
                      .dt.date().alias("synced_local_date"))
        .select("athlete_id", "first_activity_date", "last_activity_date", "synced_local_date",
                pl.max_horizontal("last_activity_date", "synced_local_date").alias("as_of_date"))
        .sort("athlete_id")
    )


def day_ranges(frame: pl.LazyFrame, start: str, end: str, name: str = "date") -> pl.LazyFrame:
    """One row per day from `start` to `end` (inclusive) of every row."""
    return (frame.with_columns(pl.date_ranges(pl.col(start), pl.col(end), interval="1d").alias(name))
            .explode(name))
