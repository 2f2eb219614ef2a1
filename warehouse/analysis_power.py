"""Power-duration, critical power and running best efforts in Polars (views power_duration_curve, critical_power,
running_best_efforts): from segment efforts, laps, whole activities and kilometre splits, the only durations the
service gives without streams."""

from __future__ import annotations

import polars as pl

from .analysis_base import Tables, activity_calendar

SEASON = ["athlete_id", "season"]


def power_efforts(t: Tables) -> pl.LazyFrame:
    """Device power on cycling sport types (power_tss): efforts by elapsed time, laps and activities by moving time,
    once per season (the year) and once for all time (season 0)."""
    return t.cached("power_efforts", lambda: _power_efforts(t))


def _power_efforts(t: Tables) -> pl.LazyFrame:
    cycling = t["analysis_sport_families"].filter(pl.col("power_tss")).select("sport_type")
    acts = t["activities"].join(cycling, on="sport_type", how="semi")
    rides = acts.select("activity_id", "athlete_id")
    columns = ["athlete_id", "source", "source_id", "activity_id", "local_date", "duration_s", "watts"]
    efforts = (t["segment_efforts"].filter(pl.col("device_watts") & ~pl.col("hidden").fill_null(False))
               .drop("athlete_id").join(rides, on="activity_id", how="inner")
               .select("athlete_id", pl.lit("segment_effort").alias("source"), pl.col("effort_id").alias("source_id"),
                       "activity_id", pl.col("start_date_local").dt.date().alias("local_date"),
                       pl.col("elapsed_time").cast(pl.Int32).alias("duration_s"), pl.col("average_watts").alias("watts")))
    laps = (t["laps"].filter(pl.col("device_watts")).join(rides, on="activity_id", how="inner")
            .select("athlete_id", pl.lit("lap").alias("source"), pl.col("lap_id").alias("source_id"), "activity_id",
                    pl.col("start_date_local").dt.date().alias("local_date"),
                    pl.col("moving_time").cast(pl.Int32).alias("duration_s"), pl.col("average_watts").alias("watts")))
    whole = (acts.filter(pl.col("device_watts"))
             .select("athlete_id", pl.lit("activity").alias("source"), pl.col("activity_id").alias("source_id"),
                     "activity_id", pl.col("start_date_local").dt.date().alias("local_date"),
                     pl.col("moving_time").cast(pl.Int32).alias("duration_s"), pl.col("average_watts").alias("watts")))
    every = (pl.concat([efforts.select(columns), laps.select(columns), whole.select(columns)])
             .filter((pl.col("duration_s") > 0) & (pl.col("watts") > 0) & pl.col("local_date").is_not_null()))
    return pl.concat([every.with_columns(pl.col("local_date").dt.year().cast(pl.Int32).alias("season")),
                      every.with_columns(pl.lit(0, dtype=pl.Int32).alias("season"))])


BEST_FIRST = (["watts", "local_date", "source_id"], [True, False, False])


def power_duration_curve(t: Tables) -> pl.LazyFrame:
    durations = (t["analysis_power_durations"].sort("duration_s")
                 .select(pl.col("duration_s").alias("bucket"), "label", pl.col("duration_s").shift(-1).alias("next_s")))
    return (
        power_efforts(t).join(durations, how="cross").filter(pl.col("duration_s") >= pl.col("bucket"))
        .sort(*BEST_FIRST[0], descending=BEST_FIRST[1])
        .group_by(*SEASON, "bucket")
        .agg(pl.col("label").first(), pl.col("watts").first().alias("best_watts"), pl.col("source").first(),
             pl.col("source_id").first(), pl.col("activity_id").first(), pl.col("local_date").first(),
             pl.col("duration_s").first().alias("effort_duration_s"), pl.col("next_s").first())
        .select(*SEASON, pl.col("bucket").cast(pl.Int32).alias("duration_s"), "label", "best_watts", "source",
                "source_id", "activity_id", "local_date", "effort_duration_s",
                (pl.col("effort_duration_s") < pl.col("next_s")).fill_null(True).alias("at_duration"))
        .sort(*SEASON, "duration_s")
    )


def critical_power(t: Tables) -> pl.LazyFrame:
    """The 2-parameter fit on the power-duration envelope, gated by physiology (the view's comment says how)."""
    lo, hi, min_points = t.setting("cp_min_s"), t.setting("cp_max_s"), int(t.setting("cp_min_points"))
    min_spread, hour_s, hour_share = t.setting("cp_min_spread"), t.setting("cp_hour_s"), t.setting("cp_hour_share")
    w_min, w_max = t.setting("w_prime_min_j"), t.setting("w_prime_max_j")
    bands = (t["analysis_power_durations"].sort("duration_s")
             .select(pl.col("duration_s").alias("band_from"), pl.col("duration_s").shift(-1).alias("band_to"))
             .filter((pl.col("band_from") >= lo) & (pl.col("band_from") < hi))
             .with_columns(pl.when(pl.col("band_to").is_null() | (pl.col("band_to") >= hi)).then(pl.lit(hi + 1))
                           .otherwise(pl.col("band_to")).alias("band_to")))
    efforts = power_efforts(t)
    # the strongest effort strictly longer than each duration: an effort below it is not on the envelope
    longer = (efforts.group_by(*SEASON, "duration_s").agg(pl.col("watts").max().alias("at"))
              .sort(*SEASON, "duration_s", descending=[False, False, True])
              .with_columns(pl.col("at").cum_max().shift(1).over(SEASON).alias("longer_best"))
              .select(*SEASON, "duration_s", "longer_best"))
    hour = (efforts.filter(pl.col("duration_s") >= hour_s).group_by(SEASON)
            .agg(pl.col("watts").max().alias("best_hour_watts")))
    points = (
        efforts.join(longer, on=[*SEASON, "duration_s"], how="left")
        .filter(pl.col("longer_best").is_null() | (pl.col("longer_best") < pl.col("watts")))
        .join(bands, how="cross")
        .filter((pl.col("duration_s") >= pl.col("band_from")) & (pl.col("duration_s") < pl.col("band_to")))
        .sort(*BEST_FIRST[0], descending=BEST_FIRST[1])
        .group_by(*SEASON, "band_from")
        .agg(pl.col("duration_s").first().cast(pl.Float64).alias("t"), pl.col("watts").first().alias("p"))
        .with_columns((pl.col("p") * pl.col("t")).alias("w"), (1 / pl.col("t")).alias("inv"))
    )

    def slope(x: pl.Expr, y: pl.Expr) -> pl.Expr:
        return ((x * y).mean() - x.mean() * y.mean()) / ((x * x).mean() - x.mean() ** 2)

    t_, w, p, inv = pl.col("t"), pl.col("w"), pl.col("p"), pl.col("inv")
    fit = (points.group_by(SEASON)
           .agg(pl.len().cast(pl.Int32).alias("points"), slope(t_, w).alias("cp"),
                (w.mean() - slope(t_, w) * t_.mean()).alias("w_prime"), (pl.corr(t_, w) ** 2).alias("r2"),
                (p.mean() - slope(inv, p) * inv.mean()).alias("cp_inv"), slope(inv, p).alias("w_prime_inv"),
                t_.min().cast(pl.Int32).alias("shortest_s"), t_.max().cast(pl.Int32).alias("longest_s")))
    fit = (efforts.select(SEASON).unique().join(fit, on=SEASON, how="left")
           .with_columns(pl.col("points").fill_null(0)).join(hour, on=SEASON, how="left"))
    cp, wp, n = pl.col("cp"), pl.col("w_prime"), pl.col("points")

    def text(expr: pl.Expr) -> pl.Expr:
        return expr.round(0).cast(pl.Int64).cast(pl.String)

    note = (pl.when(n < min_points)
            .then(pl.lit(f"too few envelope efforts between {int(lo)} and {int(hi)} s: ") + n.cast(pl.String)
                  + pl.lit(f" of {min_points}"))
            .when(pl.col("longest_s") < min_spread * pl.col("shortest_s"))
            .then(pl.lit("efforts too alike in length: ") + pl.col("shortest_s").cast(pl.String) + pl.lit("-")
                  + pl.col("longest_s").cast(pl.String) + pl.lit(f" s, needs {int(min_spread)}x"))
            .when((cp <= 0) | (wp <= 0)).then(pl.lit("no physical fit (CP or W' not positive)"))
            .when((wp < w_min) | (wp > w_max))
            .then(pl.lit("implausible W' ") + text(wp) + pl.lit(f" J (outside {int(w_min)}-{int(w_max)} J): "
                                                                 "the efforts are not maximal"))
            .when(cp < hour_share * pl.col("best_hour_watts"))
            .then(pl.lit("implausible: CP ") + text(cp) + pl.lit(" W below ")
                  + pl.col("best_hour_watts").round(1).cast(pl.String)
                  + pl.lit(f" W held for {int(hour_s // 60)} min or more: the short efforts are not maximal"))
            .otherwise(pl.lit("ok")))
    judged = fit.with_columns(note.alias("cp_note")).with_columns((pl.col("cp_note") == "ok").alias("ok"))
    errors = (judged.filter(pl.col("ok")).join(points, on=SEASON, how="inner")
              .group_by(SEASON)
              .agg(((p - (cp + wp / t_)) ** 2).mean().sqrt().alias("rmse_watts")))

    def when_ok(column: str, name: str) -> pl.Expr:
        return pl.when("ok").then(pl.col(column)).alias(name)

    return (
        judged.join(errors, on=SEASON, how="left")
        .select(*SEASON, "points", "shortest_s", "longest_s", when_ok("cp", "cp_watts"),
                when_ok("w_prime", "w_prime_j"), when_ok("r2", "r2"), "rmse_watts",
                when_ok("cp_inv", "cp_inverse_t_watts"), when_ok("w_prime_inv", "w_prime_inverse_t_j"),
                "best_hour_watts", "cp_note")
        .sort(SEASON)
    )


def running_best_efforts(t: Tables) -> pl.LazyFrame:
    runs = activity_calendar(t).filter(pl.col("sport_family") == "Run").select("athlete_id", "activity_id",
                                                                              "local_date")
    splits = (t["splits_metric"].filter((pl.col("distance") >= 950) & (pl.col("elapsed_time") > 0))
              .join(runs, on="activity_id", how="inner").sort("activity_id", "split"))
    distances = t["analysis_run_distances"].collect()
    spans = []
    for k, label in distances.iter_rows():
        def over(expr: pl.Expr, k: int = k) -> pl.Expr:
            return expr.rolling_sum(window_size=k).over("activity_id")
        spans.append(
            splits.with_columns(over(pl.col("elapsed_time").cast(pl.Int64)).alias("time_s"),
                                over(pl.col("distance")).alias("distance_m"),
                                pl.col("split").shift(k - 1).over("activity_id").alias("first_split"),
                                pl.lit(k, dtype=pl.Int32).alias("splits"), pl.lit(label).alias("label"))
            .filter(pl.col("time_s").is_not_null() & (pl.col("split") - pl.col("first_split") == k - 1)))
    whole = pl.concat(spans)
    scoped = pl.concat([whole.with_columns(pl.col("local_date").dt.year().cast(pl.Int32).alias("season")),
                        whole.with_columns(pl.lit(0, dtype=pl.Int32).alias("season"))])
    return (
        scoped.sort("time_s", "local_date", "activity_id", "first_split")
        .group_by(*SEASON, "splits")
        .agg(pl.col("label").first(), pl.col("time_s").first().alias("best_time_s"), pl.col("distance_m").first(),
             pl.col("activity_id").first(), pl.col("local_date").first(), pl.col("first_split").first())
        .with_columns((pl.col("best_time_s") / (pl.col("distance_m") / 1000)).alias("pace_s_per_km"))
        .select(*SEASON, "splits", "label", "best_time_s", "distance_m", "activity_id", "local_date", "first_split",
                "pace_s_per_km")
        .sort(*SEASON, "splits")
    )
