"""Zone trends in Polars (views activity_zone_seconds, zone_time_weekly/monthly, seiler_weekly/monthly,
athlete_zone_history): time per zone from each activity's own buckets, shares, Seiler's three zones and the
polarization index."""

from __future__ import annotations

import polars as pl

from .analysis_base import Tables, activity_calendar

PERIODS = {
    "week": ["week_start", "iso_year", "iso_week"],
    "month": ["month_start", "year", "month"],
}


def activity_zone_seconds(t: Tables) -> pl.LazyFrame:
    return t.cached("activity_zone_seconds", lambda: _zone_seconds(t))


def _zone_seconds(t: Tables) -> pl.LazyFrame:
    buckets = t["activity_zone_buckets"].with_columns(
        pl.col("seconds").fill_null(0).cast(pl.Int64),
        pl.len().over("activity_id", "zone_type").cast(pl.Int32).alias("zone_count"))
    seiler = t["analysis_seiler_zones"]
    keys = ["zone_type", "zone_count", "bucket_index"]
    own = seiler.filter(pl.col("athlete_id") != 0).select("athlete_id", *keys, pl.col("seiler_zone").alias("own"))
    default = seiler.filter(pl.col("athlete_id") == 0).select(*keys, pl.col("seiler_zone").alias("dflt"))
    calendar = activity_calendar(t).select("athlete_id", "activity_id", "sport_type", "start_date_local",
                                           "local_date", "week_start", "iso_year", "iso_week", "month_start",
                                           "year", "month")
    return (
        buckets.join(calendar, on="activity_id", how="inner")
        .join(own, on=["athlete_id", *keys], how="left")
        .join(default, on=keys, how="left")
        .select("athlete_id", "activity_id", "sport_type", "start_date_local", "local_date", "week_start", "iso_year",
                "iso_week", "month_start", "year", "month", "zone_type", pl.col("bucket_index").alias("zone"),
                "zone_count", pl.col("min").alias("zone_min"), pl.col("max").alias("zone_max"), "seconds",
                pl.coalesce("own", "dflt").alias("seiler_zone"))
        .sort("athlete_id", "start_date_local", "activity_id", "zone_type", "zone")
    )


def _latest(column: str) -> pl.Expr:
    """The value in the period's latest activity (like DuckDB's arg_max, which skips NULL values)."""
    return pl.col(column).sort_by("start_date_local", "activity_id").drop_nulls().last()


def zone_time(t: Tables, period: str) -> pl.LazyFrame:
    keys = PERIODS[period]
    total = pl.col("seconds").sum().over("athlete_id", keys[0], "zone_type")
    return (
        activity_zone_seconds(t)
        .group_by("athlete_id", *keys, "zone_type", "zone")
        .agg(pl.col("seconds").sum().cast(pl.Int64), _latest("zone_min").alias("zone_min"),
             _latest("zone_max").alias("zone_max"), pl.len().cast(pl.Int64).alias("activities"))
        .with_columns(pl.when(total != 0).then(pl.col("seconds") / total).alias("share"))
        .select("athlete_id", *keys, "zone_type", "zone", "seconds", "share", "zone_min", "zone_max", "activities")
        .sort("athlete_id", keys[0], "zone_type", "zone")
    )


def zone_time_weekly(t: Tables) -> pl.LazyFrame:
    return zone_time(t, "week")


def zone_time_monthly(t: Tables) -> pl.LazyFrame:
    return zone_time(t, "month")


# Treff et al. 2019's eq. 2 for a distribution without zone-2 time: 1 % moved from zone 3 to zone 2.
PI_Z2_ZERO = 0.01


def polarization_index(z1: pl.Expr, z2: pl.Expr, z3: pl.Expr) -> pl.Expr:
    """Treff et al. 2019 on the shares of the three zones, with the paper's rules (analysis_views.sql)."""
    total = z1 + z2 + z3
    f1, f2, f3 = z1 / total, z2 / total, z3 / total
    return (pl.when((total <= 0) | (z3 > z1)).then(None)
            .when(z3 == 0).then(0.0)
            .when((z2 == 0) & (f3 > PI_Z2_ZERO)).then((f1 / PI_Z2_ZERO * (f3 - PI_Z2_ZERO) * 100).log10())
            .when(z2 == 0).then(0.0)
            .otherwise((f1 / f2 * f3 * 100).log10()))


def polarization_note(z1: pl.Expr, z2: pl.Expr, z3: pl.Expr) -> pl.Expr:
    total = z1 + z2 + z3
    return (pl.when(total <= 0).then(pl.lit("undefined: no time in mapped zones"))
            .when(z3 > z1).then(pl.lit("not valid: more zone-3 than zone-1 time"))
            .when(z3 == 0).then(pl.lit("zone 3 is 0: PI 0 by definition"))
            .when((z2 == 0) & (z3 / total > PI_Z2_ZERO)).then(pl.lit("zone 2 is 0: eq. 2 (1 % of zone 3 moved to zone 2)"))
            .when(z2 == 0).then(pl.lit("zone 2 is 0 and zone 3 at most 1 %: PI 0, as for zone 3 = 0"))
            .otherwise(pl.lit("ok")))


def seiler(t: Tables, period: str) -> pl.LazyFrame:
    keys = PERIODS[period]
    zone = pl.col("seiler_zone")

    def seconds_in(condition: pl.Expr) -> pl.Expr:
        return pl.col("seconds").filter(condition).sum().cast(pl.Int64)

    z1, z2, z3, total = (pl.col(c) for c in ("z1_seconds", "z2_seconds", "z3_seconds", "total_seconds"))
    share = {f"z{i}_share": pl.when(total != 0).then(pl.col(f"z{i}_seconds") / total) for i in (1, 2, 3)}
    return (
        activity_zone_seconds(t)
        .group_by("athlete_id", *keys, "zone_type")
        .agg(seconds_in(zone == 1).alias("z1_seconds"), seconds_in(zone == 2).alias("z2_seconds"),
             seconds_in(zone == 3).alias("z3_seconds"), seconds_in(zone.is_null()).alias("unmapped_seconds"))
        .with_columns((z1 + z2 + z3).alias("total_seconds"))
        .select("athlete_id", *keys, "zone_type", "z1_seconds", "z2_seconds", "z3_seconds", "total_seconds",
                "unmapped_seconds", **share,
                polarization_index=polarization_index(z1, z2, z3),
                pi_note=polarization_note(z1, z2, z3))
        .sort("athlete_id", keys[0], "zone_type")
    )


def seiler_weekly(t: Tables) -> pl.LazyFrame:
    return seiler(t, "week")


def seiler_monthly(t: Tables) -> pl.LazyFrame:
    return seiler(t, "month")


def athlete_zone_history(t: Tables) -> pl.LazyFrame:
    zones = t["athlete_zones"]
    group = ["athlete_id", "zone_type"]
    snapshots = (
        zones.group_by(*group, "snapshot_date")
        .agg(pl.concat_str(pl.col("min").cast(pl.String), pl.lit(":"), pl.col("max").cast(pl.String))
             .sort_by("bucket_index").str.join(",").alias("signature"))
        .sort(*group, "snapshot_date")
        .with_columns((~pl.col("signature").eq_missing(pl.col("signature").shift(1).over(group)))
                      .cast(pl.Int64).alias("changed"))
        .with_columns(pl.col("changed").cum_sum().over(group).alias("version"))
    )
    ranges = (
        snapshots.group_by(*group, "version")
        .agg(pl.col("snapshot_date").min().alias("valid_from"), pl.col("snapshot_date").max().alias("last_seen"))
        .sort(*group, "version")
        .with_columns(pl.col("valid_from").shift(-1).over(group).alias("valid_to"))
    )
    return (
        ranges.join(zones, left_on=[*group, "valid_from"], right_on=[*group, "snapshot_date"], how="inner")
        .select("athlete_id", "zone_type", pl.col("version").cast(pl.Int32), "valid_from", "valid_to", "last_seen",
                pl.col("bucket_index").alias("zone"), pl.col("min").alias("zone_min"),
                pl.col("max").alias("zone_max"))
        .sort("athlete_id", "zone_type", "version", "zone")
    )
