"""Analysis assets: per athlete, the analysis views (warehouse/analysis_views.sql) snapshotted as Parquet beside the
warehouse (for tools that read files) with Markdown previews, and the HTML report.

They read the warehouse after the `warehouse` asset (the views are always live; the snapshots are their rows at
the time of the run). With the automation condition they follow each load when
the Dagster daemon runs; `analysis_job` runs them for a partition on demand.
"""

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl
from dagster import (
    AssetExecutionContext,
    AssetSelection,
    AutomationCondition,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
)

from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.warehouse import analysis, db

GROUP = "analysis"
EAGER = AutomationCondition.eager()


def output_dir(home: Path, kind: str, athlete: int) -> Path:
    """FITSYNC_HOME/<kind>/<athlete>/ (kind: analysis | reports): this host's files, whichever the warehouse."""
    return home / kind / str(athlete)


def markdown(frame: pl.DataFrame, limit: int = 12) -> str:
    if frame.is_empty():
        return "_no rows yet_"
    shown = frame.head(limit)
    header = "| " + " | ".join(shown.columns) + " |\n|" + "---|" * len(shown.columns)
    lines = [
        "| " + " | ".join("" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v)) for v in row) + " |"
        for row in shown.iter_rows()
    ]
    more = f"\n\n_{frame.height - limit} more rows_" if frame.height > limit else ""
    return "\n".join([header, *lines]) + more


def _materialize(
    context: AssetExecutionContext, fitsync_api: FitsyncApi, names: list[str], preview: Any
) -> MaterializeResult:
    """Read the named analyses for the partition's athlete, write each as Parquet, describe them."""
    athlete = athlete_id(context.partition_key)
    folder = output_dir(fitsync_api.config().home, "analysis", athlete)
    folder.mkdir(parents=True, exist_ok=True)
    warehouse = fitsync_api.warehouse()
    db.ensure_schema(warehouse)
    frames = analysis.frames(warehouse, names, athlete)
    for name, frame in frames.items():
        frame.write_parquet(folder / f"{name}.parquet")
    title, shown = preview(frames)
    return MaterializeResult(
        metadata={
            "rows": MetadataValue.json({n: f.height for n, f in frames.items()}),
            "folder": MetadataValue.path(str(folder)),
            "preview": MetadataValue.md(f"**{title}**\n\n{markdown(shown)}"),
        }
    )


ASSET: dict[str, Any] = dict(
    partitions_def=athletes_partitions,
    deps=["warehouse"],
    group_name=GROUP,
    kinds={"duckdb", "polars"},
    automation_condition=EAGER,
)


@asset(**ASSET)
def pr_progression(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Segment PR progression: every effort with the running best, PR events, per-segment summary, PRs per month."""

    def preview(f: dict[str, pl.DataFrame]) -> tuple[str, pl.DataFrame]:
        top = f["segment_pr_summary"].sort(["attempts", "segment_id"], descending=[True, False])
        return "Segments by attempts", top.select(
            "segment_name", "attempts", "current_pr_s", "current_pr_date", "improvements", "days_since_pr"
        )

    return _materialize(
        context,
        fitsync_api,
        ["segment_effort_progression", "segment_pr_events", "segment_pr_summary", "pr_monthly"],
        preview,
    )


@asset(**ASSET)
def zone_trends(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Weekly and monthly time per zone with shares, Seiler's three zones with the polarization index, and the
    athlete's zone definitions over time."""

    def preview(f: dict[str, pl.DataFrame]) -> tuple[str, pl.DataFrame]:
        recent = f["seiler_weekly"].sort("week_start", descending=True).head(8)
        return "Latest weeks, Seiler zones (hours)", recent.select(
            "week_start",
            "zone_type",
            *(pl.col(f"z{i}_seconds").truediv(3600).round(2).alias(f"z{i}_h") for i in (1, 2, 3)),
            pl.col("polarization_index").round(2),
            "pi_note",
        )

    return _materialize(
        context,
        fitsync_api,
        ["zone_time_weekly", "zone_time_monthly", "seiler_weekly", "seiler_monthly", "athlete_zone_history"],
        preview,
    )


@asset(**ASSET)
def training_load(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Load per activity with its source and the FTP timeline, the dense daily series (all and per sport),
    CTL/ATL/TSB/ramp (all and per sport), load risk (ACWR, monotony, strain) and load coverage."""

    def preview(f: dict[str, pl.DataFrame]) -> tuple[str, pl.DataFrame]:
        last = f["pmc"].tail(7).sort("date", descending=True)
        return "The last 7 days", last.select(
            "date",
            pl.col("load").round(1),
            pl.col("ctl").round(1),
            pl.col("atl").round(1),
            pl.col("tsb").round(1),
            "form_band",
        )

    return _materialize(
        context,
        fitsync_api,
        [
            "ftp_timeline",
            "profile_ftp_unused",
            "activity_load",
            "daily_load",
            "daily_load_by_family",
            "pmc",
            "pmc_by_family",
            "load_risk_daily",
            "load_coverage_weekly",
        ],
        preview,
    )


@asset(**ASSET)
def performance(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Power-duration curve and critical power, running best efforts, aerobic decoupling and efficiency factor."""

    def preview(f: dict[str, pl.DataFrame]) -> tuple[str, pl.DataFrame]:
        fits = f["critical_power"].select(
            "season",
            pl.col("cp_watts").round(0),
            (pl.col("w_prime_j") / 1000).round(1).alias("w_prime_kj"),
            "points",
            "cp_note",
        )
        return "Critical power by season (0 = all time)", fits.sort("season", descending=True)

    return _materialize(
        context,
        fitsync_api,
        [
            "power_duration_curve",
            "critical_power",
            "running_best_efforts",
            "aerobic_decoupling",
            "efficiency_factor_weekly",
        ],
        preview,
    )


@asset(**ASSET)
def volume(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Weekly, monthly and yearly volume by sport type, year-to-date totals, the Eddington numbers and gear use (and
    the second recordings they leave out)."""

    def preview(f: dict[str, pl.DataFrame]) -> tuple[str, pl.DataFrame]:
        yearly = (
            f["volume_yearly"]
            .group_by("year")
            .agg(
                pl.col("activities").sum(),
                (pl.col("distance_m").sum() / 1000).round(0).alias("km"),
                (pl.col("moving_time_s").sum() / 3600).round(1).alias("hours"),
            )
            .sort("year", descending=True)
        )
        return "Per year, all sports", yearly

    return _materialize(
        context,
        fitsync_api,
        [
            "volume_weekly",
            "volume_monthly",
            "volume_yearly",
            "ytd_cumulative",
            "eddington",
            "eddington_curve",
            "gear_mileage",
            "duplicate_activities",
            "future_activities",
        ],
        preview,
    )


@asset(
    partitions_def=athletes_partitions,
    deps=[pr_progression, zone_trends, training_load, performance, volume],
    group_name=GROUP,
    kinds={"html"},
    automation_condition=EAGER,
)
def report(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """The athlete's HTML report (self-contained, opens offline) and a PNG per chart."""
    from fitsync.warehouse import report as reports  # charting libraries: loaded only to draw (≈ 0.4 s)

    athlete = athlete_id(context.partition_key)
    result = reports.build_report(
        fitsync_api.warehouse(), output_dir(fitsync_api.config().home, "reports", athlete), athlete
    )
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(result.html_path)),
            "summary": MetadataValue.md(result.summary_markdown),
            "charts": MetadataValue.json([p.name for p in result.png_paths]),
            "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )


analysis_job = define_asset_job(
    "analyze_athlete",
    selection=AssetSelection.groups(GROUP),
    description="Recompute an athlete's analyses and report from the warehouse (no API calls).",
)
