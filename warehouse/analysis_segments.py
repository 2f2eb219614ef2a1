"""Segment PR progression in Polars (views segment_effort_progression, segment_pr_events, segment_pr_summary,
pr_monthly): recomputed from the efforts themselves; hidden and untimed efforts left out, and counted."""

from __future__ import annotations

import polars as pl

from .analysis_base import Tables, athlete_as_of

GROUP = ["athlete_id", "segment_id"]


def segment_effort_progression(t: Tables) -> pl.LazyFrame:
    return t.cached("segment_effort_progression", lambda: _progression(t))


def _progression(t: Tables) -> pl.LazyFrame:
    names = t["segments"].select("segment_id", pl.col("name").alias("segment_name_s"))
    efforts = (
        t["segment_efforts"]
        .filter(~pl.col("hidden").fill_null(False) & (pl.col("elapsed_time") > 0))
        .sort([*GROUP, "start_date", "effort_id"], nulls_last=True)
        .join(names, on="segment_id", how="left", maintain_order="left")
    )
    best = pl.col("elapsed_time").cum_min().over(GROUP)
    previous = pl.col("elapsed_time").cum_min().shift(1).over(GROUP)
    improved = pl.col("elapsed_time") < pl.col("previous_best")
    return (
        efforts.with_columns(pl.coalesce("segment_name_s", "name").alias("segment_name"),
                             pl.col("start_date_local").dt.date().alias("local_date"),
                             pl.int_range(1, pl.len() + 1).over(GROUP).cast(pl.Int32).alias("attempt"),
                             best.alias("running_best"), previous.alias("previous_best"))
        .select("athlete_id", "segment_id", "segment_name", "effort_id", "activity_id", "start_date",
                "start_date_local", "local_date", "elapsed_time", "moving_time", "attempt", "running_best",
                "previous_best",
                (pl.col("previous_best").is_null() | improved.fill_null(False)).alias("is_pr"),
                pl.col("previous_best").is_null().alias("is_first_attempt"),
                pl.when(improved).then(pl.col("previous_best") - pl.col("elapsed_time")).alias("improvement_s"),
                pl.when(improved).then(100.0 * (pl.col("previous_best") - pl.col("elapsed_time"))
                                       / pl.col("previous_best")).alias("improvement_pct"),
                pl.col("pr_rank").alias("service_pr_rank"))
        # already in (athlete, segment, attempt) order: the sort above made the attempts
    )


def segment_pr_events(t: Tables) -> pl.LazyFrame:
    return (
        segment_effort_progression(t)
        .filter(pl.col("is_pr"))
        .select("athlete_id", "segment_id", "segment_name", "effort_id", "activity_id", "start_date_local",
                "local_date", "elapsed_time", "previous_best", "improvement_s", "improvement_pct", "is_first_attempt",
                "attempt", pl.int_range(1, pl.len() + 1).over(GROUP).cast(pl.Int32).alias("pr_number"))
    )


def segment_pr_summary(t: Tables) -> pl.LazyFrame:
    prs = pl.col("is_pr")
    summary = (
        segment_effort_progression(t)
        .group_by(GROUP)
        .agg(pl.col("segment_name").max(),
             pl.len().cast(pl.Int32).alias("attempts"),
             pl.col("local_date").min().alias("first_attempt_date"),
             pl.col("local_date").max().alias("last_attempt_date"),
             pl.col("elapsed_time").min().alias("current_pr_s"),
             pl.col("effort_id").filter(prs).last().alias("current_pr_effort_id"),  # rows are in attempt order
             pl.col("local_date").filter(prs).last().alias("current_pr_date"),
             (prs & ~pl.col("is_first_attempt")).sum().cast(pl.Int32).alias("improvements"))
    )
    hidden = pl.col("hidden").fill_null(False)
    left_out = (
        t["segment_efforts"]
        .group_by(GROUP)
        .agg(pl.col("name").max().alias("effort_name"),
             hidden.sum().cast(pl.Int32).alias("hidden_efforts"),
             (~hidden & (pl.col("elapsed_time").fill_null(0) <= 0)).sum().cast(pl.Int32).alias("untimed_efforts"))
    )
    names = t["segments"].select("segment_id", pl.col("name").alias("segment_name_s"))
    as_of = athlete_as_of(t).select("athlete_id", "as_of_date")
    untimed, hid = pl.col("untimed_efforts"), pl.col("hidden_efforts")
    note = pl.concat_str(
        pl.when(untimed > 0).then(untimed.cast(pl.String) + " without a time (elapsed_time 0 or missing)"),
        pl.when(hid > 0).then(hid.cast(pl.String) + " hidden"), separator="; ", ignore_nulls=True)
    return (
        left_out.join(summary, on=GROUP, how="left")
        .join(names, on="segment_id", how="left")
        .join(as_of, on="athlete_id", how="left")
        .with_columns(pl.coalesce("segment_name", "segment_name_s", "effort_name").alias("segment_name"),
                      pl.col("attempts").fill_null(0), pl.col("improvements").fill_null(0),
                      (pl.coalesce("as_of_date", "last_attempt_date") - pl.col("current_pr_date")).dt.total_days()
                      .cast(pl.Int32).alias("days_since_pr"),
                      pl.when(untimed + hid == 0).then(pl.lit("ok")).otherwise(note + ": left out")
                      .alias("exclusion_note"))
        .select("athlete_id", "segment_id", "segment_name", "attempts", "first_attempt_date", "last_attempt_date",
                "current_pr_s", "current_pr_effort_id", "current_pr_date", "improvements", "days_since_pr",
                "hidden_efforts", "untimed_efforts", "exclusion_note")
        .sort(GROUP)
    )


def pr_monthly(t: Tables) -> pl.LazyFrame:
    per_month = (
        segment_effort_progression(t)
        .with_columns(pl.col("local_date").dt.month_start().alias("month_start"))
        .group_by("athlete_id", "month_start")
        .agg(pl.len().alias("efforts"),
             (pl.col("is_pr") & ~pl.col("is_first_attempt")).sum().alias("prs"),
             pl.col("is_first_attempt").sum().alias("first_attempts"))
    )
    span = (
        per_month.join(athlete_as_of(t).select("athlete_id", "as_of_date"), on="athlete_id", how="left")
        .group_by("athlete_id")
        .agg(pl.col("month_start").min().alias("first_month"),
             pl.max_horizontal(pl.col("month_start").max(), pl.col("as_of_date").first().dt.month_start())
             .alias("last_month"))
    )
    months = (span.with_columns(pl.date_ranges("first_month", "last_month", interval="1mo").alias("month_start"))
              .explode("month_start").select("athlete_id", "month_start"))
    return (
        months.join(per_month, on=["athlete_id", "month_start"], how="left")
        .select("athlete_id", "month_start",
                pl.col("month_start").dt.year().cast(pl.Int32).alias("year"),
                pl.col("month_start").dt.month().cast(pl.Int32).alias("month"),
                *(pl.col(c).fill_null(0).cast(pl.Int64) for c in ("prs", "first_attempts", "efforts")))
        .sort("athlete_id", "month_start")
    )
