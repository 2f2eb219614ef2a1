"""The warehouse assets: what the fetch assets landed, loaded in order (sync/load_landed.py), and checks of it."""

from collections.abc import Iterator
from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset_check,
)

from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import DUCKDB_POOL, FIRST, LEFT_OUT, adopted, load_notice
from fitsync.state import landing
from fitsync.sync import load_landed
from fitsync.sync.load_landed import Loaded
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse

FETCH_ASSETS = [
    "athlete",
    "athlete_stats",
    "athlete_zones",
    "activities",
    "activity_details",
    "activity_zones",
    "starred_segments",
    "segments",
    "segment_effort_history",
]


def _metadata(loaded: Loaded, aid: int, earlier: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "batches": loaded.batches,
        "rows_written": MetadataValue.json(loaded.written),
        "rows_left_out": MetadataValue.json(loaded.left_out),
        "implausible_rows": len(loaded.rejected),
    }
    if earlier:  # their rows count here: the run that fetched them stopped before its load
        out["notes"] = MetadataValue.md(f"- with {earlier} fetched batch(es) an earlier run did not load")
    if problems := loaded.problems(aid):
        out[LEFT_OUT] = MetadataValue.md("\n".join(f"- {line}" for line in problems))
    return out


def _check(loaded: Loaded) -> AssetCheckResult:
    """The load's own check: every value it was sent was plausible (a failed check does not fail the run)."""
    tables: dict[str, int] = {}
    for table, _, _ in loaded.rejected:
        tables[table] = tables.get(table, 0) + 1
    return AssetCheckResult(
        check_name=PLAUSIBLE,
        passed=not loaded.rejected and not loaded.left_out,
        severity=AssetCheckSeverity.ERROR,
        metadata={"implausible": MetadataValue.json(tables), "left_out": MetadataValue.json(loaded.left_out)},
    )


PLAUSIBLE = "values_plausible"


def _load(context: AssetExecutionContext, fitsync_api: FitsyncApi, aid: int, where: Warehouse) -> tuple[Loaded, int]:
    """The load, and how many of the batches it took an earlier run had fetched (landed before this run began)."""
    store = fitsync_api.client().store
    record = context.instance.get_run_record_by_id(context.run.run_id)
    earlier = landing.count_older(store, aid, record.create_timestamp.timestamp()) if record else 0
    return load_landed.load_landed(store, aid, where, load_notice(context), context.log.warning), earlier


@asset(
    partitions_def=athletes_partitions,
    pool=DUCKDB_POOL,
    group_name="warehouse",
    kinds={"duckdb"},
    deps=["activities"],
    op_tags=FIRST,
    check_specs=[AssetCheckSpec(PLAUSIBLE, asset="activity_summaries")],
)
def activity_summaries(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """What the listing brought (and the profile and stats before it), in the warehouse before any detail.

    Under the real service's limits the details of a backfill take days; the summaries alone already answer
    volume, YTD, Eddington, the calendar and a first PMC. Rows whose detail has not arrived have
    `detail_fetched_at` NULL (`detail_loaded` false in activities_status).
    """
    aid = athlete_id(context.partition_key)
    done = adopted(context, "activity_summaries")  # `fitsync sync` loaded them before the run
    if done is not None and done.loaded is not None:
        loaded, earlier = done.loaded, done.earlier
    else:
        loaded, earlier = _load(context, fitsync_api, aid, fitsync_api.warehouse())
    return MaterializeResult(metadata=_metadata(loaded, aid, earlier), check_results=[_check(loaded)])


@asset(
    partitions_def=athletes_partitions,
    pool=DUCKDB_POOL,
    group_name="warehouse",
    kinds={"duckdb"},
    deps=[*FETCH_ASSETS, activity_summaries],
    check_specs=[AssetCheckSpec(PLAUSIBLE, asset="warehouse")],
)
def warehouse(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Everything fetched for the athlete, upserted into the warehouse tables."""
    aid = athlete_id(context.partition_key)
    where = fitsync_api.warehouse()
    loaded, earlier = _load(context, fitsync_api, aid, where)
    if not loaded.batches:  # the load made the schema current on its connection; with nothing to load, here
        db.migrate(where)
    with db.reading(where) as conn:
        counts = {
            t: conn.execute(f"SELECT count(*) FROM {t} WHERE athlete_id = ?", [aid]).fetchall()[0][0]
            for t in ("activities", "segment_efforts", "starred_segments")
        }
        cursor = conn.execute(
            "SELECT strftime(start_date_local, '%Y-%m-%d %H:%M') AS start_local, sport_type, name, "
            "round(distance / 1000, 1) AS km FROM activities WHERE athlete_id = ? "
            "ORDER BY start_date DESC LIMIT 5",
            [aid],
        )
        rows = cursor.fetchall()
        preview = pl.DataFrame(rows, schema=[d[0] for d in cursor.description], orient="row")
    return MaterializeResult(
        metadata={
            **_metadata(loaded, aid, earlier),
            **{f"{t}_total": n for t, n in counts.items()},
            "latest_activities": MetadataValue.md(_markdown(preview)),
            "path": MetadataValue.path(str(where)),
        },
        check_results=[_check(loaded)],
    )


def _markdown(frame: pl.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, *rows])


CHILD_TABLES = ("splits_metric", "laps", "segment_efforts", "activity_zones", "activity_zone_buckets")
# The child tables have no key index since schema 12 (their keys are unique by construction): this check is what
# would tell if a load ever broke that.
KEYS = {
    "activities": "activity_id",
    "laps": "lap_id",
    "segment_efforts": "effort_id",
    "segments": "segment_id",
    "gear": "gear_id",
    "athletes": "athlete_id",
    "splits_metric": "activity_id, split",
    "activity_zones": "activity_id, zone_type",
    "activity_zone_buckets": "activity_id, zone_type, bucket_index",
}


CHECKS = [
    AssetCheckSpec("unique_keys", asset=warehouse, description="Every table's key is unique."),
    AssetCheckSpec(
        "children_have_parents", asset=warehouse, description="Every split, lap, effort and zone row has its activity."
    ),
    AssetCheckSpec(
        "details_present",
        asset=warehouse,
        description="Every listed activity has its detail (a warning while a backfill is still catching up under the "
        "rate limit).",
    ),
]


@multi_asset_check(specs=CHECKS, can_subset=True)
def warehouse_checks(context: AssetCheckExecutionContext, fitsync_api: FitsyncApi) -> Iterator[AssetCheckResult]:
    """The warehouse's checks in one step on one read connection: a step and a connection each cost a sync about a
    tenth of a second on two slow cores (its event log, DuckDB's open and close). Each can still run alone."""
    wanted = {key.name for key in context.selected_asset_check_keys}
    with db.reading(fitsync_api.warehouse()) as conn:
        if "unique_keys" in wanted:
            dupes = {
                t: conn.execute(f"SELECT count(*) - count(DISTINCT ({k})) FROM {t}").fetchall()[0][0]
                for t, k in KEYS.items()
            }
            yield AssetCheckResult(
                check_name="unique_keys",
                passed=not any(dupes.values()),
                metadata={"duplicates": MetadataValue.json(dupes)},
            )
        if "children_have_parents" in wanted:
            orphans = {
                t: conn.execute(
                    f"SELECT count(*) FROM {t} c WHERE NOT EXISTS "
                    f"(SELECT 1 FROM activities a WHERE a.activity_id = c.activity_id)"
                ).fetchall()[0][0]
                for t in CHILD_TABLES
            }
            yield AssetCheckResult(
                check_name="children_have_parents",
                passed=not any(orphans.values()),
                metadata={"orphans": MetadataValue.json(orphans)},
            )
        if "details_present" in wanted:
            missing = conn.execute("SELECT count(*) FROM activities WHERE detail_fetched_at IS NULL").fetchall()[0][0]
            yield AssetCheckResult(
                check_name="details_present",
                passed=missing == 0,
                severity=AssetCheckSeverity.WARN,
                metadata={"activities_without_detail": missing},
            )
