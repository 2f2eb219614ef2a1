"""Training load in Polars (views ftp_timeline, activity_load, daily_load, daily_load_by_family, pmc_by_family,
pmc, load_risk_daily, load_coverage_weekly): a load per activity with
its source, a dense daily series, CTL/ATL/TSB and ramp rate by the exponential recurrence, and load coverage."""

from __future__ import annotations

import math

import polars as pl

from .analysis_base import Tables, activity_calendar, athlete_as_of, day_ranges
from .analysis_zones import athlete_zone_history as zones_history


def ftp_timeline(t: Tables) -> pl.LazyFrame:
    return t.cached("ftp_timeline", lambda: _ftp_timeline(t))


def _ftp_timeline(t: Tables) -> pl.LazyFrame:
    seen = (t["athlete_snapshots"].filter(pl.col("ftp") > 0).sort("athlete_id", "snapshot_date")
            .filter(pl.col("ftp").ne_missing(pl.col("ftp").shift(1).over("athlete_id")))
            .select("athlete_id", pl.col("snapshot_date").alias("valid_from"), "ftp",
                    pl.lit("profile").alias("source"), pl.lit(1).alias("preference")))
    explicit = t["analysis_ftp_history"].select("athlete_id", "valid_from", pl.col("ftp").cast(pl.Float64),
                                                pl.lit("history").alias("source"), pl.lit(0).alias("preference"))
    return (
        pl.concat([explicit, seen])
        .sort("athlete_id", "valid_from", "preference")
        .unique(["athlete_id", "valid_from"], keep="first", maintain_order=True)
        .select("athlete_id", "valid_from",
                pl.col("valid_from").shift(-1).over("athlete_id").alias("valid_to"), "ftp", "source")
    )


def activity_load(t: Tables) -> pl.LazyFrame:
    return t.cached("activity_load", lambda: _activity_load(t))


def _dated(frame: pl.LazyFrame, value: str) -> pl.LazyFrame:
    """(athlete_id, valid_from, value) rows where the value is set, sorted for an as-of join."""
    return frame.filter(pl.col(value).is_not_null()).select("athlete_id", "valid_from", value).sort("valid_from")


def _first(frame: pl.LazyFrame, value: str, name: str) -> pl.LazyFrame:
    return frame.group_by("athlete_id").agg(pl.col(value).sort_by("valid_from").first().alias(name))


def _zone_load(t: Tables) -> pl.LazyFrame:
    """Per activity: its seconds in each heart-rate zone times the zone's load per hour (uncalibrated)."""
    weights = t["analysis_hr_zone_weights"]
    return (t["activity_zone_buckets"].filter(pl.col("zone_type") == "heartrate")
            .with_columns(pl.len().over("activity_id").cast(pl.Int32).alias("zone_count"))
            .join(weights, left_on=["zone_count", "bucket_index"], right_on=["zone_count", "zone"], how="inner")
            .group_by("activity_id")
            .agg((pl.col("seconds") * pl.col("load_per_hour")).sum().truediv(3600).alias("zone_load"),
                 pl.col("seconds").sum().alias("zone_seconds"))
            .filter(pl.col("zone_seconds") > 0).drop("zone_seconds"))


def _gap_speed(t: Tables) -> pl.LazyFrame:
    """Per run whose every split carries a grade-adjusted speed: their time-weighted mean."""
    gap, moving = pl.col("average_grade_adjusted_speed"), pl.col("moving_time")
    return (t["splits_metric"].filter(moving > 0).group_by("activity_id")
            .agg(((gap * moving).sum() / moving.sum()).alias("gap_speed"), gap.fill_null(0).min().alias("lowest"))
            .filter(pl.col("lowest") > 0).drop("lowest"))


def _activity_load(t: Tables) -> pl.LazyFrame:
    columns = t["activities"].select("activity_id", "moving_time", "elapsed_time", "distance", "device_watts",
                                     "weighted_average_watts", "average_heartrate", "suffer_score")
    families = t["analysis_sport_families"].select("sport_type", "power_tss", "estimate_if")
    timeline = ftp_timeline(t)
    dated_ftp = timeline.select("athlete_id", "valid_from", pl.col("ftp").alias("dated_ftp"),
                                pl.col("source").alias("dated_source")).sort("valid_from")
    thresholds = t["analysis_thresholds"]
    zones = (zones_history(t).filter(pl.col("zone_type") == "heartrate")
             .with_columns(pl.len().over("athlete_id", "zone_type", "version").alias("zones"))
             .filter((pl.col("zones") == 5) & (pl.col("zone") == int(t.setting("lthr_zone")))
                     & (pl.col("zone_min") > 0))
             .select("athlete_id", "valid_from", pl.col("zone_min").cast(pl.Float64).alias("zone_lthr")))

    def asof(frame: pl.LazyFrame, right: pl.LazyFrame) -> pl.LazyFrame:
        # sorted here, every time: a join in between (to the athlete's first values) does not keep the order, and an
        # as-of join over unsorted dates gives wrong answers, now and then
        return frame.sort("local_date").join_asof(right.sort("valid_from"), left_on="local_date",
                                                  right_on="valid_from", by="athlete_id", strategy="backward",
                                                  check_sortedness=False).drop("valid_from")

    base = (
        activity_calendar(t)
        .select("activity_id", "athlete_id", "sport_type", "sport_family", "local_date", "week_start", "iso_year",
                "iso_week")
        .join(columns, on="activity_id", how="inner")
        .join(families, on="sport_type", how="left")
        .join(_zone_load(t), on="activity_id", how="left")
        .join(_gap_speed(t), on="activity_id", how="left")
        .with_columns(pl.col("power_tss").fill_null(False),
                      pl.col("estimate_if").fill_null(t.setting("estimate_if_default")),
                      pl.when(pl.col("moving_time") != 0).then(pl.col("moving_time"))
                      .otherwise(pl.col("elapsed_time")).alias("duration_s"))
    )
    base = asof(base, dated_ftp).join(_first(timeline, "ftp", "first_ftp"), on="athlete_id", how="left")
    base = asof(base, _dated(thresholds, "lthr").rename({"lthr": "set_lthr"}))
    base = (asof(base, zones).join(_first(zones, "zone_lthr", "first_zone_lthr"), on="athlete_id", how="left")
            .with_columns(pl.coalesce("zone_lthr", "first_zone_lthr").alias("zone_lthr")))
    base = asof(base, _dated(thresholds, "threshold_pace_s_per_km").rename(
        {"threshold_pace_s_per_km": "threshold_pace"}))

    ftp, lthr = pl.coalesce("dated_ftp", "first_ftp"), pl.coalesce("set_lthr", "zone_lthr")
    seconds, watts, hr = pl.col("duration_s"), pl.col("weighted_average_watts"), pl.col("average_heartrate")
    timed = seconds > 0

    def load_of(factor: str) -> pl.Expr:
        return seconds * pl.col(factor) * pl.col(factor) / 3600 * 100

    rated = base.with_columns(
        ftp.alias("ftp"), lthr.alias("lthr"),
        pl.when(pl.col("dated_ftp").is_not_null()).then(pl.col("dated_source"))
        .when(pl.col("first_ftp").is_not_null()).then(pl.lit("known_later")).alias("ftp_source"),
        pl.when(pl.col("set_lthr").is_not_null()).then(pl.lit("setting"))
        .when(pl.col("zone_lthr").is_not_null()).then(pl.lit("zones")).alias("lthr_source"),
    ).with_columns(
        pl.when(timed & pl.col("power_tss") & pl.col("device_watts").fill_null(False) & (watts > 0)
                & (pl.col("ftp") > 0)).then(watts / pl.col("ftp")).alias("power_if"),
        pl.when(timed & (pl.col("sport_family") == "Run") & (pl.col("threshold_pace") > 0) & (pl.col("distance") > 0))
        .then(pl.coalesce("gap_speed", pl.col("distance") / seconds) * pl.col("threshold_pace") / 1000)
        .alias("pace_if"),
        pl.when(timed & (hr > 0) & (pl.col("lthr") > 0)).then(hr / pl.col("lthr")).alias("hr_if"),
        pl.when(timed & (pl.col("estimate_if") > 0)).then(pl.col("estimate_if")).alias("estimate_if_used"),
    ).with_columns(load_of("power_if").alias("power_load"), load_of("pace_if").alias("pace_load"),
                   load_of("estimate_if_used").alias("estimated_load"))
    calibration = (rated.filter((pl.col("power_load") > 0) & (pl.col("zone_load") > 0)).group_by("athlete_id")
                   .agg(pl.len().alias("rides"), (pl.col("power_load") / pl.col("zone_load")).median().alias("ratio")))
    ratio = pl.col("ratio")
    accepted = ((pl.col("rides") >= t.setting("hr_calibration_min_rides"))
                & ratio.is_between(t.setting("hr_calibration_min_ratio"), t.setting("hr_calibration_max_ratio")))
    zoned = pl.col("zone_load") > 0
    with_hr = (
        rated.join(calibration, on="athlete_id", how="left")
        .with_columns(pl.when(accepted).then(ratio).alias("hr_calibration"))
        .with_columns(pl.when(zoned).then(pl.col("zone_load") * pl.col("hr_calibration").fill_null(1.0))
                      .when(pl.col("hr_if").is_not_null()).then(load_of("hr_if")).alias("hr_load"),
                      pl.when(zoned & pl.col("hr_calibration").is_not_null()).then(pl.lit("zones_calibrated"))
                      .when(zoned).then(pl.lit("zones"))
                      .when(pl.col("hr_if").is_not_null()).then(pl.lit("average_hr")).alias("hr_load_basis"))
    )
    source = (pl.when(pl.col("power_load").is_not_null()).then(pl.lit("power"))
              .when(pl.col("pace_load").is_not_null()).then(pl.lit("pace"))
              .when(pl.col("hr_load").is_not_null()).then(pl.lit("heart_rate"))
              .when(pl.col("suffer_score").is_not_null()).then(pl.lit("suffer_score"))
              .when(pl.col("estimated_load").is_not_null()).then(pl.lit("estimate"))
              .otherwise(pl.lit("none")))
    chosen = pl.col("load_source")
    hr_factor = (pl.when(pl.col("hr_load_basis") == "average_hr").then(pl.col("hr_if"))
                 .when(timed).then((pl.col("hr_load") * 36 / seconds).sqrt()))
    intensity = (pl.when(chosen == "power").then(pl.col("power_if"))
                 .when(chosen == "pace").then(pl.col("pace_if"))
                 .when(chosen == "heart_rate").then(hr_factor)
                 .when(chosen == "estimate").then(pl.col("estimate_if_used")))
    load = (pl.when(chosen == "power").then(pl.col("power_load"))
            .when(chosen == "pace").then(pl.col("pace_load"))
            .when(chosen == "heart_rate").then(pl.col("hr_load"))
            .when(chosen == "suffer_score").then(pl.col("suffer_score"))
            .when(chosen == "estimate").then(pl.col("estimated_load")))
    return (
        with_hr.with_columns(source.alias("load_source"))
        .select("activity_id", "athlete_id", "sport_type", "sport_family", "local_date", "week_start", "iso_year",
                "iso_week", "moving_time", "duration_s", watts.alias("np_watts"), "ftp", "ftp_source",
                hr.alias("average_hr"), "lthr", "lthr_source", pl.col("threshold_pace").alias("threshold_pace_s_per_km"),
                "power_load", "pace_load",
                pl.when(pl.col("pace_load").is_not_null())
                .then(pl.when(pl.col("gap_speed").is_not_null()).then(pl.lit("grade_adjusted"))
                      .otherwise(pl.lit("average_speed"))).alias("pace_basis"),
                "hr_load", "hr_load_basis", "hr_calibration", "suffer_score", "estimated_load",
                intensity.alias("intensity_factor"), load.alias("load"), "load_source")
        .sort("athlete_id", "local_date", "activity_id")
    )


def daily_load(t: Tables) -> pl.LazyFrame:
    return t.cached("daily_load", lambda: _daily_load(t))


def _daily_load(t: Tables) -> pl.LazyFrame:
    days = day_ranges(athlete_as_of(t), "first_activity_date", "as_of_date").select("athlete_id", "date")
    per_day = (activity_load(t).group_by("athlete_id", "local_date")
               .agg(pl.col("load").sum(), pl.len().alias("activities")))
    return (
        days.join(per_day, left_on=["athlete_id", "date"], right_on=["athlete_id", "local_date"], how="left")
        .select("athlete_id", "date", pl.col("load").fill_null(0.0),
                pl.col("activities").fill_null(0).cast(pl.Int64))
        .sort("athlete_id", "date")
    )


def daily_load_by_family(t: Tables) -> pl.LazyFrame:
    return t.cached("daily_load_by_family", lambda: _daily_load_by_family(t))


def _daily_load_by_family(t: Tables) -> pl.LazyFrame:
    loads = activity_load(t).select("athlete_id", "sport_family", "local_date", "load")
    loads = pl.concat([loads, loads.with_columns(pl.lit("All").alias("sport_family"))])
    families = pl.concat([loads.select("athlete_id", "sport_family"),
                          athlete_as_of(t).select("athlete_id", pl.lit("All").alias("sport_family"))]).unique()
    days = day_ranges(athlete_as_of(t), "first_activity_date", "as_of_date").select("athlete_id", "date")
    per_day = (loads.group_by("athlete_id", "sport_family", "local_date")
               .agg(pl.col("load").sum(), pl.len().alias("activities")))
    return (
        families.join(days, on="athlete_id", how="inner")
        .join(per_day, left_on=["athlete_id", "sport_family", "date"],
              right_on=["athlete_id", "sport_family", "local_date"], how="left")
        .select("athlete_id", "sport_family", "date", pl.col("load").fill_null(0.0),
                pl.col("activities").fill_null(0).cast(pl.Int64))
        .sort("athlete_id", "sport_family", "date")
    )


SERIES = ["athlete_id", "sport_family"]


def load_ewma(t: Tables, alpha_a: float, alpha_b: float) -> pl.LazyFrame:
    """x[t] = x[t-1] + alpha (load[t] - x[t-1]) from 0 before each series' first day, for two alphas (a, b)."""
    daily = daily_load_by_family(t).select(*SERIES, "date", "load", pl.lit(False).alias("seed"))
    seeds = daily.group_by(SERIES).agg((pl.col("date").min() - pl.duration(days=1)).alias("date"),
                                       pl.lit(0.0).alias("load"), pl.lit(True).alias("seed"))
    return (
        pl.concat([seeds.select(daily.collect_schema().names()), daily])
        .sort(*SERIES, "date")
        .with_columns(pl.col("load").ewm_mean(alpha=alpha_a, adjust=False).over(SERIES).alias("a"),
                      pl.col("load").ewm_mean(alpha=alpha_b, adjust=False).over(SERIES).alias("b"))
        .filter(~pl.col("seed"))
        .drop("seed")
    )


def pmc_by_family(t: Tables) -> pl.LazyFrame:
    return t.cached("pmc_by_family", lambda: _pmc_by_family(t))


def _pmc_by_family(t: Tables) -> pl.LazyFrame:
    ramp_days = int(t.setting("ramp_days"))
    def constant(days: float) -> float:
        return 1 / days if t.setting("pmc_constant_form") == 1 else 1 - math.exp(-1 / days)

    series = load_ewma(t, constant(t.setting("ctl_days")), constant(t.setting("atl_days"))
                       ).rename({"a": "ctl", "b": "atl"})

    def earlier(column: str, days: int) -> pl.Expr:
        return pl.col(column).shift(days, fill_value=0.0).over(SERIES)

    bands = t["analysis_form_bands"].sort("sort_order").collect()
    band = pl.lit(None, dtype=pl.String)
    for row in reversed(bands.to_dicts()):
        low = row["tsb_from"] if row["tsb_from"] is not None else -math.inf
        high = row["tsb_to"] if row["tsb_to"] is not None else math.inf
        band = pl.when((pl.col("tsb") >= low) & (pl.col("tsb") < high)).then(pl.lit(row["band"])).otherwise(band)
    return (
        series.with_columns((earlier("ctl", 1) - earlier("atl", 1)).alias("tsb"),
                            (pl.col("ctl") - earlier("ctl", ramp_days)).alias("ramp_rate"))
        .select(*SERIES, "date", "load", "ctl", "atl", "tsb", "ramp_rate", band.alias("form_band"))
        .sort(*SERIES, "date")
    )


def pmc(t: Tables) -> pl.LazyFrame:
    return (pmc_by_family(t).filter(pl.col("sport_family") == "All").drop("sport_family")
            .sort("athlete_id", "date"))


def load_risk_daily(t: Tables) -> pl.LazyFrame:
    acute, chronic = int(t.setting("acwr_acute_days")), int(t.setting("acwr_chronic_days"))
    window = int(t.setting("monotony_days"))
    min_sessions, min_chronic = t.setting("acwr_min_sessions"), t.setting("acwr_min_chronic_load")
    ewma = (load_ewma(t, 2 / (acute + 1), 2 / (chronic + 1)).filter(pl.col("sport_family") == "All")
            .select("athlete_id", "date", pl.col("a").alias("ewma_acute"), pl.col("b").alias("ewma_chronic")))
    load = pl.col("load")

    def summed(days: int) -> pl.Expr:
        return load.rolling_sum(window_size=days, min_samples=1).over("athlete_id")

    mean, sd = pl.col("week_mean"), pl.col("week_sd")
    full = pl.col("days") >= window
    return (
        daily_load_by_family(t).filter(pl.col("sport_family") == "All").sort("athlete_id", "date")
        .with_columns(pl.int_range(1, pl.len() + 1).over("athlete_id").alias("days"),
                      (summed(acute) / acute).alias("acute_load"), (summed(chronic) / chronic).alias("chronic_load"),
                      summed(window).alias("week_load"),
                      pl.col("activities").rolling_sum(window_size=chronic, min_samples=1).over("athlete_id")
                      .cast(pl.Int64).alias("chronic_sessions"),
                      load.rolling_mean(window_size=window, min_samples=1).over("athlete_id").alias("week_mean"),
                      load.rolling_std(window_size=window, min_samples=1, ddof=0).over("athlete_id").alias("week_sd"))
        .join(ewma, on=["athlete_id", "date"], how="inner")
        .with_columns(((pl.col("days") >= chronic) & (pl.col("chronic_sessions") >= min_sessions)
                       & (pl.col("chronic_load") >= min_chronic)).alias("ratio_ok"))
        .select("athlete_id", "date", "load", "acute_load", "chronic_load", "chronic_sessions",
                pl.when(pl.col("ratio_ok") & (pl.col("chronic_load") > 1e-9))
                .then(pl.col("acute_load") / pl.col("chronic_load")).alias("acwr_rolling"),
                "ewma_acute", "ewma_chronic",
                pl.when(pl.col("ratio_ok") & (pl.col("ewma_chronic") > 1e-9))
                .then(pl.col("ewma_acute") / pl.col("ewma_chronic")).alias("acwr_ewma"),
                pl.when(pl.col("days") < chronic).then(pl.lit(f"fewer than {chronic} days of history"))
                .when(pl.col("chronic_sessions") < min_sessions)
                .then(pl.lit(f"too few sessions in {chronic} days: ") + pl.col("chronic_sessions").cast(pl.String)
                      + pl.lit(f" (needs {int(min_sessions)})"))
                .when((pl.col("chronic_load") < min_chronic) | (pl.col("chronic_load") <= 1e-9))
                .then(pl.lit("chronic load too low: ") + pl.col("chronic_load").round(1).cast(pl.String)
                      + pl.lit(f" a day, under {int(min_chronic)}"))
                .otherwise(pl.lit("ok")).alias("acwr_note"),
                pl.when(full & (sd > 1e-6)).then(mean / sd).alias("monotony"),
                pl.when(full & (sd > 1e-6)).then(pl.col("week_load") * mean / sd).alias("strain"))
        .sort("athlete_id", "date")
    )


# Power load on an FTP fitsync saw only after the activity: an estimate, not a measurement.
ON_LATER_FTP = (pl.col("load_source") == "power") & (pl.col("ftp_source") == "known_later")


def load_coverage_weekly(t: Tables) -> pl.LazyFrame:
    seconds, source = pl.col("duration_s"), pl.col("load_source")
    counts = (("power", "power_activities"), ("heart_rate", "heart_rate_activities"), ("pace", "pace_activities"),
              ("suffer_score", "suffer_score_activities"), ("estimate", "estimated_activities"),
              ("none", "unloaded_activities"))
    later = ON_LATER_FTP
    total = pl.col("moving_time_s")
    return (
        activity_load(t)
        .group_by("athlete_id", "week_start", "iso_year", "iso_week")
        .agg(pl.len().cast(pl.Int64).alias("activities"),
             seconds.sum().cast(pl.Int64).alias("moving_time_s"),
             seconds.filter(pl.col("load").is_not_null()).sum().cast(pl.Int64).alias("loaded_moving_time_s"),
             seconds.filter(~source.is_in(["estimate", "none"]) & ~later.fill_null(False)).sum().alias("measured_s"),
             *((source == name).sum().cast(pl.Int64).alias(column) for name, column in counts),
             later.fill_null(False).sum().cast(pl.Int64).alias("later_ftp_activities"))
        .with_columns(pl.when(total != 0).then(pl.col("loaded_moving_time_s") / total).alias("coverage"),
                      pl.when(total != 0).then(pl.col("measured_s") / total).alias("measured_coverage"))
        .select("athlete_id", "week_start", "iso_year", "iso_week", "activities", "moving_time_s",
                "loaded_moving_time_s", "coverage", "measured_coverage", *(column for _, column in counts),
                "later_ftp_activities")
        .sort("athlete_id", "week_start")
    )
