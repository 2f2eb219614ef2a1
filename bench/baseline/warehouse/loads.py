"""Idempotent batch loads: Polars frames of fetched JSON → DuckDB upserts, one transaction per batch.

Re-loading the same data changes nothing (rows are only updated when their JSON differs); children of a
re-pulled activity (splits, laps, efforts, zone buckets) are replaced, never duplicated.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Iterable, Sequence

import duckdb
import polars as pl

from . import mappings as m
from .expressions import parse_once
from .mappings import Mapping

# What each kind of fetched object fills, in order (parents before children).
BUNDLES: dict[str, tuple[Mapping, ...]] = {
    "activity_summaries": (m.ACTIVITY_SUMMARIES,),
    "activity_details": (m.ACTIVITY_DETAILS, m.SPLITS, m.LAPS, m.EFFORTS, m.EFFORT_SEGMENTS),
    "activity_zones": (m.ACTIVITY_ZONES, m.ACTIVITY_ZONE_BUCKETS),
    "athlete": (m.ATHLETES, m.GEAR),
    "athlete_stats": (m.ATHLETE_STATS, m.ATHLETE_STATS_TOTALS),
    "athlete_zones": (m.ATHLETE_ZONES,),
    "starred_segments": (m.STARRED,),
    "segments": (m.SEGMENTS,),
    "segment_efforts": (m.EFFORTS, m.EFFORT_SEGMENTS),
    "unrecognized": (m.UNRECOGNIZED,),
}
# The parent key of each bundle's batch rows: children of these parents are replaced.
PARENT_KEY = {
    "activity_details": "TRY_CAST(raw->>'$.id' AS BIGINT)",
    "activity_zones": "batch_activity_id",
    "starred_segments": "batch_athlete_id",
}
REPLACE_COLUMN = {"splits_metric": "activity_id", "laps": "activity_id", "segment_efforts": "activity_id",
                  "activity_zones": "activity_id", "activity_zone_buckets": "activity_id",
                  "starred_segments": "athlete_id"}

BATCH_SCHEMA: dict[str, Any] = {
    "raw": pl.String,
    "batch_athlete_id": pl.Int64,
    "batch_activity_id": pl.Int64,
    "fetched_at": pl.Datetime("us", "UTC"),
    "snapshot_date": pl.Date,
    "issues": pl.List(pl.String),
}


def frame(objects: Iterable[Any], *, athlete_id: int | None = None, activity_ids: Sequence[int] | None = None,
          fetched_at: dt.datetime | None = None, issues: Sequence[Sequence[str]] | None = None) -> pl.DataFrame:
    """A batch: one row per fetched object with its raw JSON and the context the mappings read."""
    fetched_at = fetched_at or dt.datetime.now(dt.timezone.utc)
    raws = [o if isinstance(o, str) else json.dumps(o, separators=(",", ":")) for o in objects]
    n = len(raws)
    return pl.DataFrame(
        {
            "raw": raws,
            "batch_athlete_id": [athlete_id] * n,
            "batch_activity_id": list(activity_ids) if activity_ids is not None else [None] * n,
            "fetched_at": [fetched_at] * n,
            "snapshot_date": [fetched_at.date()] * n,
            "issues": [list(x) for x in issues] if issues is not None else [[] for _ in range(n)],
        },
        schema=BATCH_SCHEMA,
    )


def load(conn: duckdb.DuckDBPyConnection, bundle: str, batch: pl.DataFrame,
         parents: Sequence[int] | None = None) -> dict[str, int]:
    """Upsert one batch in one transaction; returns rows written per table.

    `parents` names the parents whose children are replaced even when the batch has none for them
    (an athlete who unstarred every segment).
    """
    conn.register("batch", batch.to_arrow())
    written: dict[str, int] = {}
    try:
        conn.execute("BEGIN")
        if bundle in PARENT_KEY:
            _delete_children(conn, bundle, parents)
        for mapping in BUNDLES[bundle]:
            written[mapping.table] = written.get(mapping.table, 0) + _upsert(conn, mapping)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.unregister("batch")
    return written


def _delete_children(conn: duckdb.DuckDBPyConnection, bundle: str, parents: Sequence[int] | None) -> None:
    conn.execute("CREATE OR REPLACE TEMP TABLE replaced_parents AS "
                 f"SELECT DISTINCT {PARENT_KEY[bundle]} AS id FROM batch")
    if parents:
        conn.execute("INSERT INTO replaced_parents SELECT unnest(?::BIGINT[])", [list(parents)])
    for mapping in BUNDLES[bundle]:
        column = REPLACE_COLUMN.get(mapping.table)
        if not column:
            continue
        # Rows of these parents that the new batch no longer has go; the rest are upserted in place, so
        # re-loading identical data writes nothing.
        key_columns, source = parse_once({k: mapping.columns[k] for k in mapping.key}, mapping.source)
        keys = ", ".join(f"{expr} AS {k}" for k, expr in key_columns.items())
        conn.execute(f"CREATE OR REPLACE TEMP TABLE kept_keys AS SELECT DISTINCT {keys} FROM {source}")
        match = " AND ".join(f"kept_keys.{k} = {mapping.table}.{k}" for k in mapping.key)
        conn.execute(f"DELETE FROM {mapping.table} WHERE {column} IN (SELECT id FROM replaced_parents) "
                     f"AND NOT EXISTS (SELECT 1 FROM kept_keys WHERE {match})")


def upsert_sql(mapping: Mapping) -> str:
    cols = list(mapping.columns)
    columns, source = parse_once(mapping.columns, mapping.source)
    exprs = ", ".join(f"{expr} AS {col}" for col, expr in columns.items())
    updates = [c for c in cols if c not in mapping.key and c not in mapping.keep_on_update]
    dedupe = ", ".join(mapping.key)
    sql = (f"INSERT INTO {mapping.table} ({', '.join(cols)}) "
           f"SELECT DISTINCT ON ({dedupe}) * FROM (SELECT {exprs} FROM {source}) WHERE "
           + " AND ".join(f"{k} IS NOT NULL" for k in mapping.key)
           + f" ON CONFLICT ({', '.join(mapping.key)}) DO UPDATE SET "
           + ", ".join(f"{c} = excluded.{c}" for c in updates))
    if mapping.update_when:
        sql += f" WHERE {mapping.update_when}"
    return sql


def _upsert(conn: duckdb.DuckDBPyConnection, mapping: Mapping) -> int:
    row = conn.execute(upsert_sql(mapping)).fetchone()
    return int(row[0]) if row else 0


def delete_activities(conn: duckdb.DuckDBPyConnection, activity_ids: Sequence[int], reason: str,
                      when: dt.datetime | None = None, athlete_id: int | None = None) -> int:
    """Remove activities and their children, recording each in deleted_activities (with its last JSON, so it can be
    restored). With `athlete_id`, only that athlete's: an event about one athlete never removes another's rows."""
    if not activity_ids:
        return 0
    when = when or dt.datetime.now(dt.timezone.utc)
    ids = list(activity_ids)
    if athlete_id is not None:
        ids = [r[0] for r in conn.execute("SELECT activity_id FROM activities WHERE athlete_id = ? AND activity_id IN "
                                          "(SELECT unnest(?::BIGINT[]))", [athlete_id, ids]).fetchall()]
        if not ids:
            return 0
    conn.execute("BEGIN")
    try:
        conn.execute(
            """INSERT INTO deleted_activities (activity_id, athlete_id, deleted_at, reason, last_summary_raw)
               SELECT activity_id, athlete_id, ?, ?, summary_raw FROM activities WHERE activity_id IN (SELECT unnest(?::BIGINT[]))""",
            [when, reason, ids],
        )
        removed = conn.execute("SELECT count(*) FROM activities WHERE activity_id IN (SELECT unnest(?::BIGINT[]))",
                               [ids]).fetchone()[0]
        for table in ("splits_metric", "laps", "segment_efforts", "activity_zones", "activity_zone_buckets", "activities"):
            conn.execute(f"DELETE FROM {table} WHERE activity_id IN (SELECT unnest(?::BIGINT[]))", [ids])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return int(removed)
