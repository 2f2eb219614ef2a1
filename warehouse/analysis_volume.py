"""Volume in Polars (views volume_weekly/monthly/yearly, ytd_cumulative, eddington, eddington_curve)."""

from __future__ import annotations

import polars as pl

from .analysis_base import Tables, activity_calendar, athlete_as_of, day_ranges

PERIODS = {
    "week": ["week_start", "iso_year", "iso_week"],
    "month": ["month_start", "year", "month"],
    "year": ["year"],
}
UNITS = pl.LazyFrame({"unit": ["km", "mi"], "unit_m": [1000.0, 1609.344]})


def _activities(t: Tables) -> pl.LazyFrame:
    amounts = t["activities"].select("activity_id", "distance", "moving_time", "total_elevation_gain")
    return activity_calendar(t).join(amounts, on="activity_id", how="inner")


def volume(t: Tables, period: str) -> pl.LazyFrame:
    keys = PERIODS[period]
    return (
        _activities(t)
        .group_by("athlete_id", *keys, "sport_type")
        .agg(pl.col("sport_family").first(), pl.len().cast(pl.Int64).alias("activities"),
             pl.col("distance").sum().alias("distance_m"),
             pl.col("moving_time").sum().cast(pl.Int64).alias("moving_time_s"),
             pl.col("total_elevation_gain").sum().alias("elevation_gain_m"))
        .sort("athlete_id", keys[0], "sport_type")
    )


def volume_weekly(t: Tables) -> pl.LazyFrame:
    return volume(t, "week")


def volume_monthly(t: Tables) -> pl.LazyFrame:
    return volume(t, "month")


def volume_yearly(t: Tables) -> pl.LazyFrame:
    return volume(t, "year")


def ytd_cumulative(t: Tables) -> pl.LazyFrame:
    as_of = athlete_as_of(t)
    years = (as_of.with_columns(pl.int_ranges(pl.col("first_activity_date").dt.year(),
                                              pl.col("as_of_date").dt.year() + 1).alias("year"))
             .explode("year")
             .with_columns(pl.date(pl.col("year"), 1, 1).alias("jan1"),
                           pl.min_horizontal(pl.date(pl.col("year"), 12, 31), pl.col("as_of_date")).alias("last")))
    days = day_ranges(years, "jan1", "last").select("athlete_id", pl.col("year").cast(pl.Int32), "date")
    acts = _activities(t).select("athlete_id", "sport_family", "local_date", "distance", "moving_time",
                                 "total_elevation_gain")
    families = pl.concat([acts.select("athlete_id", "sport_family"),
                          as_of.select("athlete_id", pl.lit("All").alias("sport_family"))]).unique()
    per_day = (
        pl.concat([acts, acts.with_columns(pl.lit("All").alias("sport_family"))])
        .group_by("athlete_id", "sport_family", "local_date")
        .agg(pl.len().alias("activities"), pl.col("distance").sum().alias("distance_m"),
             pl.col("moving_time").sum().alias("moving_time_s"),
             pl.col("total_elevation_gain").sum().alias("elevation_gain_m"))
    )
    running = ["athlete_id", "sport_family", "year"]
    return (
        days.join(families, on="athlete_id", how="inner")
        .join(per_day, left_on=["athlete_id", "sport_family", "date"],
              right_on=["athlete_id", "sport_family", "local_date"], how="left")
        .sort(*running, "date")
        .select(*running, "date", pl.col("date").dt.ordinal_day().cast(pl.Int32).alias("day_of_year"),
                pl.col("activities").fill_null(0).cum_sum().over(running).cast(pl.Int64),
                pl.col("distance_m").fill_null(0.0).cum_sum().over(running),
                pl.col("moving_time_s").fill_null(0).cum_sum().over(running).cast(pl.Int64),
                pl.col("elevation_gain_m").fill_null(0.0).cum_sum().over(running))
    )


def _daily_distance(t: Tables) -> pl.LazyFrame:
    """Meters per athlete, family (and 'All') and local day, in each unit."""
    acts = _activities(t)
    every = acts.with_columns(pl.lit("All").alias("sport_family"))
    return (pl.concat([acts, every]).group_by("athlete_id", "sport_family", "local_date")
            .agg(pl.col("distance").fill_null(0).sum().alias("meters"))
            .join(UNITS, how="cross"))


def eddington(t: Tables) -> pl.LazyFrame:
    group = ["athlete_id", "sport_family", "unit"]
    ranked = (_daily_distance(t)
              .with_columns((pl.col("meters") / pl.col("unit_m")).alias("dist"))
              .sort(*group, "meters", descending=[False, False, False, True])
              .with_columns(pl.int_range(1, pl.len() + 1).over(group).alias("r")))
    e = (ranked.group_by(group)
         .agg(pl.col("r").filter(pl.col("dist") >= pl.col("r")).max().fill_null(0).alias("eddington"),
              pl.len().cast(pl.Int64).alias("days")))
    return (
        ranked.join(e, on=group, how="inner")
        .group_by(*group, "eddington", "days")
        .agg((pl.col("dist") >= pl.col("eddington") + 1).sum().cast(pl.Int64).alias("days_at_next"))
        .select(*group, pl.col("eddington").cast(pl.Int32), "days", "days_at_next",
                (pl.col("eddington") + 1 - pl.col("days_at_next")).cast(pl.Int64).alias("days_to_next"))
        .sort(group)
    )


def eddington_curve(t: Tables) -> pl.LazyFrame:
    group = ["athlete_id", "sport_family", "unit"]
    hist = (_daily_distance(t)
            .select(*group, (pl.col("meters") / pl.col("unit_m")).floor().cast(pl.Int64).alias("whole"))
            .group_by(*group, "whole").agg(pl.len().alias("days")))
    grid = (hist.group_by(group).agg(pl.col("whole").max())
            .with_columns(pl.int_ranges(1, pl.col("whole") + 1).alias("n")).explode("n")
            .drop("whole").drop_nulls("n"))
    # days reaching n = days whose whole units are at least n: a suffix sum of the histogram over n
    return (
        grid.join(hist, left_on=[*group, "n"], right_on=[*group, "whole"], how="left")
        .sort(*group, "n", descending=[False, False, False, True])
        .with_columns(pl.col("days").fill_null(0).cum_sum().over(group).alias("days_at_least"))
        .select(*group, pl.col("n").cast(pl.Int32), pl.col("days_at_least").cast(pl.Int64))
        .sort(*group, "n")
    )
