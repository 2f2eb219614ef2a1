"""The one DuckDB writer: applies what the fetch assets landed, in order, one transaction per batch."""

from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from fitsync.client.records import record
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import DUCKDB_POOL, FIRST, LEFT_OUT
from fitsync.state.store import StateStore
from fitsync.sync import landing
from fitsync.warehouse import db, load_pipeline, loads
from fitsync.warehouse.location import Warehouse
from fitsync.warehouse.plausible import type_issues

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


def stage_batch(athlete: int, batch: landing.Landed) -> loads.Staged | None:
    """One landed batch parsed into warehouse rows (None for a deletion, which needs the warehouse itself)."""
    if batch.bundle == "delete_activities":
        return None
    extra: dict[str, Any] = {}
    if batch.bundle == "activity_zones":
        extra["activity_ids"] = [p["activity_id"] for p in batch.payloads]
    if batch.bundle in ("activity_summaries", "activity_details"):  # a detail is checked as its summary was
        extra["issues"] = [[*record("activity", p).issues, *type_issues("activities", p)] for p in batch.payloads]
    frame = loads.frame(batch.payloads, athlete_id=athlete, **extra)
    return loads.stage(batch.bundle, frame, parents=batch.context.get("replace_parents"))


def write_batch(
    conn: duckdb.DuckDBPyConnection, athlete: int, batch: landing.Landed, staged: loads.Staged | None
) -> dict[str, int]:
    """Write one staged batch (or apply a landed deletion) in its own transaction."""
    if staged is not None:
        return loads.write(conn, staged)
    removed = 0
    for item in batch.payloads:
        removed += loads.delete_activities(conn, item["ids"], item["reason"], athlete_id=athlete)
    return {"deleted_activities": removed}


def apply_batch(conn: duckdb.DuckDBPyConnection, athlete: int, batch: landing.Landed) -> dict[str, int]:
    """Turn one landed batch into warehouse rows."""
    return write_batch(conn, athlete, batch, stage_batch(athlete, batch))


@dataclass
class Loaded:
    """What applying the landed batches did: rows written per table, and what was left out of them."""

    batches: int = 0
    written: dict[str, int] = field(default_factory=dict)
    # rows left out per table for a value their table requires (an id) missing: their JSON stays in the documents
    left_out: dict[str, int] = field(default_factory=dict)
    # values refused as implausible (warehouse/plausible.py): (table, the row's key, "column=value; …")
    rejected: list[tuple[str, tuple[Any, ...], str]] = field(default_factory=list)

    def add(self, written: dict[str, int], staged: loads.Staged | None) -> None:
        self.batches += 1
        for table, rows in written.items():
            self.written[table] = self.written.get(table, 0) + rows
        if staged is not None:
            for table, rows in staged.left_out.items():
                self.left_out[table] = self.left_out.get(table, 0) + rows
            self.rejected += staged.rejected

    def problems(self, aid: int, shown: int = 3) -> list[str]:
        """One line per kind of thing left out, naming the athlete, the first few rows and where the JSON is."""
        lines = []
        by_table: dict[str, list[str]] = {}
        for table, key, text in self.rejected:
            by_table.setdefault(table, []).append(f"{'/'.join(map(str, key))} ({text})")
        for table, rows in sorted(by_table.items()):
            more = f" and {len(rows) - shown} more" if len(rows) > shown else ""
            lines.append(
                f"athlete {aid}: {len(rows)} {table} row(s) with implausible values, kept as they were stored "
                f"(the JSON as received is kept): {'; '.join(rows[:shown])}{more}"
            )
        if self.left_out:
            lines.append(
                f"athlete {aid}: "
                + ", ".join(f"{n} {t} row(s)" for t, n in sorted(self.left_out.items()))
                + " left out of the warehouse: a value their table requires (an id) is missing or not a "
                "number in what the service sent (a detailed activity's JSON is kept whole in "
                "activity_documents)"
            )
        return lines

    def metadata(self, aid: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "batches": self.batches,
            "rows_written": MetadataValue.json(self.written),
            "rows_left_out": MetadataValue.json(self.left_out),
            "implausible_rows": len(self.rejected),
        }
        if problems := self.problems(aid):
            out[LEFT_OUT] = MetadataValue.md("\n".join(f"- {line}" for line in problems))
        return out

    def check(self) -> AssetCheckResult:
        """The load's own check: every value it was sent was plausible (a failed check does not fail the run)."""
        tables: dict[str, int] = {}
        for table, _, _ in self.rejected:
            tables[table] = tables.get(table, 0) + 1
        return AssetCheckResult(
            check_name=PLAUSIBLE,
            passed=not self.rejected and not self.left_out,
            severity=AssetCheckSeverity.ERROR,
            metadata={"implausible": MetadataValue.json(tables), "left_out": MetadataValue.json(self.left_out)},
        )


PLAUSIBLE = "values_plausible"


def load_landed(context: AssetExecutionContext, store: StateStore, aid: int, database: Warehouse) -> Loaded:
    """Apply every batch landed for the athlete, in order; what was left out is said in the run's log.

    The next batch is read and parsed on a worker thread while this one is written (load_pipeline.ahead), and one write
    connection serves consecutive batches for up to a second (load_pipeline.write_held); each batch is removed from the
    landing area once its transaction has committed.
    """
    loaded = Loaded()
    if not landing.count(store, aid):
        return loaded
    db.migrate(database)

    def write_one(conn: duckdb.DuckDBPyConnection, item: tuple[landing.Landed, loads.Staged | None]) -> None:
        batch, staged = item
        loaded.add(write_batch(conn, aid, batch, staged), staged)
        landing.remove(store, batch.ids)

    staged = load_pipeline.ahead((batch, stage_batch(aid, batch)) for batch in landing.pending(store, aid))

    # waits out readers (an analyst's session), saying so in the run's log
    def notice(message: str) -> None:
        context.log.warning(message)
        db.log.warning(message)

    load_pipeline.write_held(database, staged, write_one, notice=notice)
    for line in loaded.problems(aid):
        context.log.warning(line)
    return loaded


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
    loaded = load_landed(context, fitsync_api.client().store, aid, fitsync_api.warehouse())
    return MaterializeResult(metadata=loaded.metadata(aid), check_results=[loaded.check()])


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
    db.migrate(where)
    loaded = load_landed(context, fitsync_api.client().store, aid, where)
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
            **loaded.metadata(aid),
            **{f"{t}_total": n for t, n in counts.items()},
            "latest_activities": MetadataValue.md(_markdown(preview)),
            "path": MetadataValue.path(str(where)),
        },
        check_results=[loaded.check()],
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


@asset_check(asset=warehouse, description="Every table's key is unique.")
def unique_keys(fitsync_api: FitsyncApi) -> AssetCheckResult:
    with db.reading(fitsync_api.warehouse()) as conn:
        dupes = {
            t: conn.execute(f"SELECT count(*) - count(DISTINCT ({k})) FROM {t}").fetchall()[0][0]
            for t, k in KEYS.items()
        }
    return AssetCheckResult(passed=not any(dupes.values()), metadata={"duplicates": MetadataValue.json(dupes)})


@asset_check(asset=warehouse, description="Every split, lap, effort and zone row has its activity.")
def children_have_parents(fitsync_api: FitsyncApi) -> AssetCheckResult:
    with db.reading(fitsync_api.warehouse()) as conn:
        orphans = {
            t: conn.execute(
                f"SELECT count(*) FROM {t} c WHERE NOT EXISTS "
                f"(SELECT 1 FROM activities a WHERE a.activity_id = c.activity_id)"
            ).fetchall()[0][0]
            for t in CHILD_TABLES
        }
    return AssetCheckResult(passed=not any(orphans.values()), metadata={"orphans": MetadataValue.json(orphans)})


@asset_check(
    asset=warehouse,
    description="Every listed activity has its detail (a warning while a backfill is "
    "still catching up under the rate limit).",
)
def details_present(fitsync_api: FitsyncApi) -> AssetCheckResult:
    with db.reading(fitsync_api.warehouse()) as conn:
        missing = conn.execute("SELECT count(*) FROM activities WHERE detail_fetched_at IS NULL").fetchall()[0][0]
    return AssetCheckResult(
        passed=missing == 0, severity=AssetCheckSeverity.WARN, metadata={"activities_without_detail": missing}
    )
