"""Durability, efficiency and gear in Polars (views aerobic_decoupling, efficiency_factor_weekly, gear_mileage)."""

from __future__ import annotations

import polars as pl

from .analysis_base import Tables, activity_calendar

MIN_SPLITS, MIN_LAPS = 4, 2


def aerobic_decoupling(t: Tables) -> pl.LazyFrame:
    """Pa:HR by halves after the warm-up; NULL unless the output was steady (the view's comment says how)."""
    warmup, max_cv = t.setting("decoupling_warmup_s"), t.setting("decoupling_max_cv")
    t_ = pl.col("moving_time")
    splits = (t["splits_metric"].filter((t_ > 0) & (pl.col("average_heartrate") > 0) & (pl.col("distance") > 0))
              .select("activity_id", pl.lit("splits").alias("basis"), pl.col("split").alias("n"), t_.alias("t"),
                      (pl.col("distance") / t_ * 60).alias("output"), pl.lit("speed").alias("output_kind"),
                      pl.col("average_heartrate").alias("hr")))
    laps = t["laps"].filter((t_ > 0) & (pl.col("average_heartrate") > 0))
    powered = laps.group_by("activity_id").agg(
        (pl.col("device_watts").fill_null(False) & (pl.col("average_watts") > 0)).all().alias("all_power"))
    laps = (laps.join(powered, on="activity_id", how="inner")
            .filter(pl.col("all_power") | (pl.col("distance") > 0))
            .select("activity_id", pl.lit("laps").alias("basis"), pl.col("lap_index").alias("n"), t_.alias("t"),
                    pl.when("all_power").then(pl.col("average_watts")).otherwise(pl.col("distance") / t_ * 60)
                    .alias("output"),
                    pl.when("all_power").then(pl.lit("power")).otherwise(pl.lit("speed")).alias("output_kind"),
                    pl.col("average_heartrate").alias("hr")))
    enough_splits = splits.group_by("activity_id").agg(pl.len().alias("k")).filter(pl.col("k") >= MIN_SPLITS)
    enough_laps = laps.group_by("activity_id").agg(pl.len().alias("k")).filter(pl.col("k") >= MIN_LAPS)
    units = pl.concat([
        splits.join(enough_splits, on="activity_id", how="semi"),
        laps.join(enough_splits, on="activity_id", how="anti").join(enough_laps, on="activity_id", how="semi"),
    ], how="vertical_relaxed")
    kept = (units.sort("activity_id", "n")
            .filter(pl.col("t").cum_sum().over("activity_id") > warmup))
    placed = (kept.with_columns((pl.col("t").cum_sum().over("activity_id") - pl.col("t") / 2).alias("middle"),
                                pl.col("t").sum().over("activity_id").alias("total"),
                                ((pl.col("output") * pl.col("t")).sum() / pl.col("t").sum()).over("activity_id")
                                .alias("mean_output")))
    first = pl.col("middle") < pl.col("total") / 2

    def mean(column: str, half: pl.Expr) -> pl.Expr:
        return (pl.col(column) * pl.col("t")).filter(half).sum() / pl.col("t").filter(half).sum()

    halves = (placed.group_by("activity_id")
              .agg(pl.col("basis").first(), pl.col("output_kind").first(), pl.len().cast(pl.Int32).alias("units"),
                   pl.col("t").sum().alias("moving_time_s"),
                   ((pl.col("t") * (pl.col("output") - pl.col("mean_output")) ** 2).sum() / pl.col("t").sum()).sqrt()
                   .truediv(pl.col("mean_output").first()).alias("output_cv"),
                   mean("output", first).alias("output_1"),
                   mean("hr", first).alias("hr_1"), mean("output", ~first).alias("output_2"),
                   mean("hr", ~first).alias("hr_2")))
    ef1, ef2 = pl.col("output_1") / pl.col("hr_1"), pl.col("output_2") / pl.col("hr_2")
    steady = pl.col("output_cv") <= max_cv
    return (
        halves.filter((pl.col("hr_1") > 0) & (pl.col("hr_2") > 0) & (pl.col("output_1") > 0))
        .join(activity_calendar(t).select("activity_id", "athlete_id", "local_date", "sport_family"),
              on="activity_id", how="inner")
        .select("athlete_id", "activity_id", "local_date", "sport_family", "basis", "output_kind", "units",
                pl.col("moving_time_s").cast(pl.Int64), ef1.alias("first_half_ef"), ef2.alias("second_half_ef"),
                "output_cv", pl.when(steady).then((ef1 - ef2) / ef1 * 100).alias("decoupling_pct"),
                pl.when(steady).then(pl.lit("steady"))
                .otherwise(pl.lit("not steady: output varies ")
                           + (pl.col("output_cv") * 100).round(0).cast(pl.Int64).cast(pl.String)
                           + pl.lit(f" % (above {round(max_cv * 100)} %)")).alias("decoupling_note"))
        .sort("athlete_id", "local_date", "activity_id")
    )


def efficiency_factor_weekly(t: Tables) -> pl.LazyFrame:
    families = t["analysis_sport_families"].select("sport_type", "power_tss")
    acts = t["activities"].select("activity_id", "moving_time", "distance", "device_watts", "weighted_average_watts",
                                  "average_heartrate")
    powered = (pl.col("power_tss").fill_null(False) & pl.col("device_watts").fill_null(False)
               & (pl.col("weighted_average_watts") > 0))
    seconds = pl.col("moving_time")
    per_activity = (
        activity_calendar(t).join(acts, on="activity_id", how="inner").join(families, on="sport_type", how="left")
        .filter((pl.col("average_heartrate") > 0) & (seconds > 0))
        .with_columns(pl.when(powered).then(pl.lit("power")).otherwise(pl.lit("speed")).alias("basis"),
                      (pl.when(powered).then(pl.col("weighted_average_watts"))
                       .otherwise(pl.col("distance") / seconds * 60) / pl.col("average_heartrate")).alias("ef"))
        .filter(pl.col("ef") > 0)
    )
    keys = ["athlete_id", "week_start", "iso_year", "iso_week", "sport_family", "basis"]
    return (
        per_activity.group_by(keys)
        .agg(pl.len().cast(pl.Int64).alias("activities"), seconds.sum().cast(pl.Int64).alias("moving_time_s"),
             ((pl.col("ef") * seconds).sum() / seconds.sum()).alias("efficiency_factor"))
        .sort("athlete_id", "week_start", "sport_family", "basis")
    )


def gear_mileage(t: Tables) -> pl.LazyFrame:
    used = (activity_calendar(t).select("activity_id", "athlete_id", "local_date")
            .join(t["activities"].select("activity_id", "gear_id", "distance", "moving_time"), on="activity_id")
            .filter(pl.col("gear_id").is_not_null())
            .group_by("athlete_id", "gear_id")
            .agg(pl.len().cast(pl.Int64).alias("activities"), pl.col("distance").fill_null(0).sum().alias("distance_m"),
                 pl.col("moving_time").fill_null(0).sum().cast(pl.Int64).alias("moving_time_s"),
                 pl.col("local_date").min().alias("first_used"), pl.col("local_date").max().alias("last_used")))
    gear = t["gear"].with_columns(pl.lit(True).alias("profile_lists"))
    return (
        used.join(gear, on=["athlete_id", "gear_id"], how="full", coalesce=True)
        .select("athlete_id", "gear_id", "kind", "name", "is_primary",
                pl.col("activities").fill_null(0), pl.col("distance_m").fill_null(0.0),
                pl.col("moving_time_s").fill_null(0), "first_used", "last_used",
                pl.col("distance").alias("service_distance_m"), "retired",
                pl.when(pl.col("retired")).then(pl.col("last_used")).alias("retired_on"),
                pl.col("profile_lists").fill_null(False))
        .sort("athlete_id", "gear_id")
    )
