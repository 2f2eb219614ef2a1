"""Idempotent batch loads: Polars frames of fetched JSON → DuckDB upserts, one transaction per batch.

A batch is first staged (`stage`: parsed into each table's rows, as Arrow tables, on the calling thread's own
in-memory DuckDB, without the warehouse), then written (`write`: one transaction on the warehouse);
load_pipeline.py overlaps the two. Re-loading the same data changes nothing (rows are only updated when they
differ); children of a re-pulled activity (splits, laps, efforts, zone buckets) are replaced, never duplicated; a
child table with no row of the batch's parents (a backfill's new activities) gets plain inserts.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from . import constraints, db, documents, staging
from . import mappings as m
from .mappings import Mapping
from .plausible import NOT_A_NUMBER
from .refused import REJECTED, rejects
from .sources import listed_column

# What each kind of fetched object fills, in order (parents before children).
BUNDLES: dict[str, tuple[Mapping, ...]] = {
    "activity_summaries": (m.ACTIVITY_SUMMARIES,),
    "activity_details": (m.ACTIVITY_DETAILS, m.SPLITS, m.LAPS, m.DETAIL_EFFORTS, m.EFFORT_SEGMENTS),
    "activity_zones": (m.ACTIVITY_ZONES, m.ACTIVITY_ZONE_BUCKETS),
    "athlete": (m.ATHLETES, m.ATHLETE_SNAPSHOTS, m.GEAR),
    "athlete_stats": (m.ATHLETE_STATS, m.ATHLETE_STATS_TOTALS),
    "athlete_zones": (m.ATHLETE_ZONES,),
    "starred_segments": (m.STARRED,),
    "segments": (m.SEGMENTS,),
    "segment_efforts": (m.EFFORTS, m.EFFORT_SEGMENTS),
    "unrecognized": (m.UNRECOGNIZED,),
}
# The parent key of each bundle's batch rows: children of these parents are replaced.
PARENT_KEY = {
    "activity_details": "parent_id",
    "activity_zones": "batch_activity_id",
    "starred_segments": "batch_athlete_id",
}
REPLACE_COLUMN = {
    "splits_metric": "activity_id",
    "laps": "activity_id",
    "segment_efforts": "activity_id",
    "activity_zones": "activity_id",
    "activity_zone_buckets": "activity_id",
    "starred_segments": "athlete_id",
}

# Documents per DuckDB task when a batch is parsed (see load).
CHUNK = 64

BATCH_SCHEMA: dict[str, Any] = {
    "raw": pl.String,
    "batch_athlete_id": pl.Int64,
    "batch_activity_id": pl.Int64,
    "fetched_at": pl.Datetime("us", "UTC"),
    "snapshot_date": pl.Date,
    "issues": pl.List(pl.String),
}


def frame(
    objects: Iterable[Any],
    *,
    athlete_id: int | None = None,
    activity_ids: Sequence[int] | None = None,
    fetched_at: dt.datetime | None = None,
    issues: Sequence[Sequence[str]] | None = None,
) -> pl.DataFrame:
    """A batch: one row per fetched object with its raw JSON and the context the mappings read."""
    fetched_at = fetched_at or dt.datetime.now(dt.UTC)
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


@dataclass(frozen=True)
class Staged:
    """A batch parsed and shaped into each mapping's rows, as Arrow tables: staged by any thread on its own in-memory
    connection (`stage`), written by the one writer (`write`)."""

    bundle: str
    rows: tuple[pa.Table, ...]
    # The parents whose children this batch replaces (bundles in PARENT_KEY).
    parents: pa.Table | None = None
    # Rows left out per table for a column the table requires (Mapping.required): their JSON stays in the document.
    left_out: dict[str, int] = field(default_factory=dict)
    # Values refused as implausible (plausible.py): (table, the row's key, "column=value; …"). The stored value stays.
    rejected: tuple[tuple[str, tuple[Any, ...], str], ...] = ()

    def tables(self) -> dict[str, pa.Table]:
        named = {_stage(i): t for i, t in enumerate(self.rows)}
        if self.parents is not None:
            named["replaced_parents"] = self.parents
        return named


def load(
    conn: duckdb.DuckDBPyConnection, bundle: str, batch: pl.DataFrame, parents: Sequence[int] | None = None
) -> dict[str, int]:
    """Upsert one batch in one transaction; returns rows written per table.

    `parents` names the parents whose children are replaced even when the batch has none for them
    (an athlete who unstarred every segment).
    """
    return write(conn, stage(bundle, batch, parents))


def stage(
    bundle: str,
    batch: pl.DataFrame,
    parents: Sequence[int] | None = None,
    not_null: constraints.NotNull | None = None,
) -> Staged:
    """Parse a batch into its rows, without the warehouse: on this thread's own in-memory DuckDB connection, so the
    next batches are staged while the writer writes this one (load_pipeline.py).

    Every JSON document is parsed as few times as it can be: the batch is staged with its fields and arrays read
    out in one parse (staging.py), each mapping's rows are staged once (the children's replacement and the upsert share
    them). A row missing a column its table holds no NULL in is left out: `not_null` is the schema's (default: the
    one the migrations make, constraints.migrated).
    """
    not_null = constraints.migrated() if not_null is None else not_null
    conn = staging_connection()
    # In record batches of CHUNK rows: DuckDB parses one record batch per task, so a batch of 500 documents in one
    # piece would keep every core but one idle while it is staged.
    table = batch.to_arrow(compat_level=pl.CompatLevel.newest())  # string views: no copy of the documents' text
    conn.register("batch_input", pa.Table.from_batches(table.to_batches(max_chunksize=CHUNK), table.schema))
    parse, selects = _statements(bundle)
    try:
        conn.execute(parse)
        left_out: dict[str, int] = {}
        rows = tuple(
            _complete(
                _plausible(_rows(conn, mapping, select), mapping), mapping, mapping.required_in(not_null), left_out
            )
            for mapping, select in zip(BUNDLES[bundle], selects)
        )
        staged_parents = None
        if bundle in PARENT_KEY:
            # per parent, which of its arrays it lists: only those children are replaced (_delete_children)
            flags = [listed_column(a) for a in plan_of(bundle).arrays]
            staged_parents = conn.sql(
                f"SELECT DISTINCT {', '.join([f'{PARENT_KEY[bundle]} AS id', *flags])} FROM batch "
                f"UNION SELECT unnest($parents::BIGINT[]){', true' * len(flags)}",
                params={"parents": list(parents or [])},
            ).to_arrow_table()
        return Staged(bundle, rows, staged_parents, left_out, _rejected(conn, bundle, rows))
    finally:
        conn.unregister("batch_input")
        conn.execute("DROP TABLE IF EXISTS batch")


def write(conn: duckdb.DuckDBPyConnection, staged: Staged) -> dict[str, int]:
    """Write a staged batch in one transaction: new keys inserted, existing keys updated only where they differ,
    children of replaced parents that the batch no longer has deleted; returns rows written per table."""
    tables = staged.tables()
    for name, table in tables.items():
        conn.register(name, table)
    try:
        for i, mapping in enumerate(BUNDLES[staged.bundle]):
            if mapping.documents:
                documents.write_new(conn, _stage(i), mapping.documents)
        written = db.transaction(conn, lambda: _write_rows(conn, staged))
    finally:
        for name in tables:
            conn.unregister(name)
    return written


def _write_rows(conn: duckdb.DuckDBPyConnection, staged: Staged) -> dict[str, int]:
    """The batch's rows written inside the caller's transaction (tried again whole after a lake's conflict)."""
    written: dict[str, int] = {}
    mappings = BUNDLES[staged.bundle]
    new = {i for i, mapping in enumerate(mappings) if _none_stored(conn, mapping, staged, i)}
    if staged.parents is not None:  # an answer with rows left out is no proof the stored ones are gone
        _delete_children(
            conn,
            staged.bundle,
            skip=new | {i for i, mapping in enumerate(mappings) if mapping.table in staged.left_out},
        )
    for i, mapping in enumerate(mappings):
        rows = _merge(conn, mapping, _stage(i), staged.rows[i].num_rows, i in new)
        written[mapping.table] = written.get(mapping.table, 0) + rows
        if mapping.restores and staged.rows[i].num_rows:
            match = " AND ".join(f"{k} IN (SELECT {k} FROM {_stage(i)})" for k in mapping.key)
            conn.execute(f"UPDATE {mapping.restores} SET restored_at = now() WHERE restored_at IS NULL AND {match}")
    return written


_local = threading.local()


def staging_connection() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB connection for staging (it never touches the warehouse file)."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = duckdb.connect(":memory:", config={"threads": 1})
        for statement in db.WORKAROUNDS:
            conn.execute(statement)
    return conn


def _statements(bundle: str) -> tuple[duckdb.Statement, tuple[duckdb.Statement, ...]]:
    """This thread's parsed statements staging a bundle (the batch's parse, each mapping's rows): built and parsed once
    per thread, not per batch; rebuilding and re-parsing them took ≈ 10 % of staging a batch of 500 details."""
    cache: dict[str, tuple[duckdb.Statement, tuple[duckdb.Statement, ...]]] = _local.__dict__.setdefault(
        "statements", {}
    )
    if bundle not in cache:
        plan = plan_of(bundle)
        [parse] = duckdb.extract_statements(staging.stage_sql(plan))
        cache[bundle] = (
            parse,
            tuple(duckdb.extract_statements(staging.select_sql(mapping, plan))[0] for mapping in BUNDLES[bundle]),
        )
    return cache[bundle]


def _stage(index: int) -> str:
    return f"staged_rows_{index}"


@functools.cache
def plan_of(bundle: str) -> staging.Plan:
    """How this bundle's documents are parsed (built once per process)."""
    return staging.plan(BUNDLES[bundle])


def _none_stored(conn: duckdb.DuckDBPyConnection, mapping: Mapping, staged: Staged, index: int) -> bool:
    """Whether a child table holds no row of the batch's parents (a backfill's new activities): then none is to be
    deleted, and the children are inserted (by a plain insert where the parent is part of the key).

    The parents' range bounds the scan as constants, so DuckDB reads only the row groups whose range of the column
    meets it (a backfill's batch rarely meets what is stored): the subquery alone read the whole column, a history's
    worth of blocks, into the writer's memory at every load."""
    column = REPLACE_COLUMN.get(mapping.table)
    parents = staged.parents
    if column is None or column not in mapping.names or (parents is None and column not in mapping.key):
        return False  # nothing the answer would change: no children to replace, no plain insert to choose
    ids = [staged.rows[index].column(column)] + ([parents.column("id")] if parents is not None else [])
    bounds = [pc.min_max(c) for c in ids if len(c) > c.null_count]
    if not bounds:
        return True  # no parent at all: nothing of theirs can be stored
    low = int(min(b["min"].as_py() for b in bounds))
    high = int(max(b["max"].as_py() for b in bounds))
    replaced = " UNION ALL SELECT id FROM replaced_parents" if parents is not None else ""
    return bool(
        conn.execute(
            f"SELECT NOT EXISTS (SELECT 1 FROM {mapping.table} WHERE {column} BETWEEN {low} AND {high} AND {column} IN "
            f"(SELECT {column} FROM {_stage(index)}{replaced}))"
        ).fetchall()[0][0]
    )


def _delete_children(conn: duckdb.DuckDBPyConnection, bundle: str, skip: set[int]) -> None:
    for i, mapping in enumerate(BUNDLES[bundle]):
        column = REPLACE_COLUMN.get(mapping.table)
        if not column or i in skip:
            continue
        # Rows of these parents that the new batch no longer has go; the rest are upserted in place, so
        # re-loading identical data writes nothing.
        match = " AND ".join(f"kept.{k} = {mapping.table}.{k}" for k in mapping.key)
        listed = "".join(f" AND {listed_column(a)}" for a in mapping.source.arrays if a in plan_of(bundle).arrays)
        conn.execute(
            f"DELETE FROM {mapping.table} WHERE {column} IN (SELECT id FROM replaced_parents WHERE true{listed}) "
            f"AND NOT EXISTS (SELECT 1 FROM {_stage(i)} AS kept WHERE {match})"
        )


def _rows(conn: duckdb.DuckDBPyConnection, mapping: Mapping, select: duckdb.Statement) -> pa.Table:
    """The mapping's rows, one per key. A key twice in one batch (the same object landed twice) is rare, and
    DISTINCT ON over wide rows doubles the staging time: it runs only when a key repeats."""
    rows = conn.sql(select).to_arrow_table()
    if not pl.from_arrow(rows.select(list(mapping.key))).is_duplicated().any():
        return rows
    conn.register("mapping_rows", rows)
    try:
        return conn.sql(f"SELECT DISTINCT ON ({', '.join(mapping.key)}) * FROM mapping_rows").to_arrow_table()
    finally:
        conn.unregister("mapping_rows")


def _plausible(rows: pa.Table, mapping: Mapping) -> pa.Table:
    """The rows with each value outside its column's plausible range (or not finite) cleared, the rows that had one
    marked `rejected` (NULL elsewhere), and the checked columns, staged as doubles, cast to their columns' types. A
    batch without such a value (nearly all) is only compared and cast."""
    if not mapping.checks:
        return rows
    values = cast(pl.DataFrame, pl.from_arrow(rows.select(list(mapping.checks))))  # a table: a DataFrame
    out = {c: ~pl.col(c).is_between(r.low, r.high) for c, r in mapping.checks.items()}
    for column, wrong in _not_numbers(rows, mapping).items():  # "abc" read as NULL, `true` read as 1: not the value
        values = values.with_columns(wrong.alias(f"{column}__not_a_number"))
        out[column] = out[column].fill_null(False) | pl.col(f"{column}__not_a_number")
    marked = values.select(pl.any_horizontal(list(out.values()))).to_series()
    flagged = bool(marked.any())
    if flagged:
        values = values.with_columns(pl.when(bad).then(None).otherwise(pl.col(c)).alias(c) for c, bad in out.items())
    for column in mapping.checks:
        typed = values[column].to_arrow().cast(mapping.check_types[column])
        rows = rows.set_column(rows.schema.get_field_index(column), column, typed)
    mark = pc.if_else(marked.to_arrow(), True, None) if flagged else pa.nulls(rows.num_rows, pa.bool_())
    return rows.append_column(REJECTED, mark)


def _not_numbers(rows: pa.Table, mapping: Mapping) -> dict[str, pl.Series]:
    """For each checked column a row's issues name as not a number (plausible.type_issues): which rows. Empty for a
    batch without such an issue (nearly all: one look at the issues' texts)."""
    if "issues" not in rows.column_names:
        return {}
    issues = cast(pl.DataFrame, pl.from_arrow(rows.select(["issues"]))).get_column("issues")  # a table: a DataFrame
    texts = issues.explode().drop_nulls()
    named = {t[len(NOT_A_NUMBER) :].split("=", 1)[0] for t in texts.filter(texts.str.starts_with(NOT_A_NUMBER))}
    return {
        c: issues.list.eval(pl.element().str.starts_with(f"{NOT_A_NUMBER}{c}=")).list.any().fill_null(False)
        for c in sorted(named & set(mapping.checks))
    }


def _complete(rows: pa.Table, mapping: Mapping, required: tuple[str, ...], left_out: dict[str, int]) -> pa.Table:
    """The rows with every `required` column (an effort without a segment id is left out and counted, rather than
    failing the batch's transaction). Arrow counts a column's NULLs already: nothing is scanned when none is."""
    missing = [c for c in required if rows.column(c).null_count]
    if not missing:
        return rows
    complete = rows.filter(functools.reduce(pc.and_, (pc.is_valid(rows.column(c)) for c in missing)))
    left_out[mapping.table] = left_out.get(mapping.table, 0) + rows.num_rows - complete.num_rows
    return complete


def _rejected(
    conn: duckdb.DuckDBPyConnection, bundle: str, rows: tuple[pa.Table, ...]
) -> tuple[tuple[str, tuple[Any, ...], str], ...]:
    """The staged rows' refused values, named. Arrow counts a column's NULLs: nothing is read again when none was
    refused; a batch with one reads the names and values of its refused ones from its documents (rare)."""
    found = []
    for table, mapping in zip(rows, BUNDLES[bundle]):
        if REJECTED not in table.column_names or table.column(REJECTED).null_count == table.num_rows:
            continue
        named = {
            tuple(row[:-1]): [row[-1]]
            for row in conn.sql(staging.select_sql(mapping, plan_of(bundle), refused=True)).fetchall()
        }
        if "issues" in table.column_names:  # members that are not numbers (plausible.type_issues)
            marked = cast(
                pl.DataFrame,
                pl.from_arrow(table.select([*mapping.key, "issues", REJECTED])),  # a table
            ).filter(pl.col(REJECTED))
            for row in marked.iter_rows():
                named.setdefault(tuple(row[:-2]), []).extend(t for t in row[-2] or () if t.startswith(NOT_A_NUMBER))
        found += sorted((mapping.table, key, "; ".join(t for t in texts if t)) for key, texts in named.items())
    return tuple(found)


def _new_value(mapping: Mapping, column: str) -> str:
    """What an update sets a column to: the staged value, but the stored one where the staged row refused it as
    implausible, or where the stored row's source is the richer one (Mapping.kept)."""
    value = f"excluded.{column}"
    if column in mapping.checks:
        value = f"CASE WHEN {rejects(column)} THEN {mapping.table}.{column} ELSE {value} END"
    if column in mapping.kept:
        value = f"CASE WHEN {mapping.keep_when} THEN {mapping.table}.{column} ELSE {value} END"
    return value


def merge_sql(mapping: Mapping, staged: str) -> tuple[str, str]:
    """(update, insert) statements writing staged rows: keys already stored are updated where `update_when` says
    they differ (never their `keep_on_update` columns; _new_value), new keys inserted. An anti-join and a plain insert
    cost a fraction of INSERT … ON CONFLICT, which probes and locks every row of the batch."""
    cols = list(mapping.names)
    updates = [c for c in cols if c not in mapping.key and c not in mapping.keep_on_update]
    match = " AND ".join(f"{mapping.table}.{k} = excluded.{k}" for k in mapping.key)
    update = (
        f"UPDATE {mapping.table} SET "
        + ", ".join(f"{c} = {_new_value(mapping, c)}" for c in updates)
        + f" FROM {staged} AS excluded WHERE {match}"
        + (f" AND ({mapping.update_when})" if mapping.update_when else "")
    )
    insert = (
        f"INSERT INTO {mapping.table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM {staged} "
        f"ANTI JOIN {mapping.table} USING ({', '.join(mapping.key)})"
    )
    return update, insert


def _merge(
    conn: duckdb.DuckDBPyConnection, mapping: Mapping, staged: str, staged_rows: int, none_stored: bool = False
) -> int:
    """Write a mapping's staged rows; returns rows written. New keys are inserted first: when every staged row was
    new (a backfill), the update, a join of the batch with the table, is not run. A row just inserted equals its
    staged row, so `update_when` (a difference) never holds for it; a mapping without one updates first."""
    columns = ", ".join(mapping.names)
    if none_stored and REPLACE_COLUMN[mapping.table] in mapping.key:  # no staged key can be stored already
        sql = f"INSERT INTO {mapping.table} ({columns}) SELECT {columns} FROM {staged}"
        return int(conn.execute(sql).fetchall()[0][0])
    update, insert = merge_sql(mapping, staged)
    if not mapping.update_when:
        return _count(conn, update) + _count(conn, insert)
    inserted = _count(conn, insert)
    return inserted if inserted == staged_rows else inserted + _count(conn, update)


def _count(conn: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0


def delete_activities(
    conn: duckdb.DuckDBPyConnection,
    activity_ids: Sequence[int],
    reason: str,
    when: dt.datetime | None = None,
    athlete_id: int | None = None,
) -> int:
    """Remove activities and their children, recording each in deleted_activities (with its last summary, detail and
    zones, so it can be audited and rebuilt). With `athlete_id`, only that athlete's: an event about one athlete never
    removes another's rows."""
    if not activity_ids:
        return 0
    when = when or dt.datetime.now(dt.UTC)
    ids = list(activity_ids)
    if athlete_id is not None:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT activity_id FROM activities WHERE athlete_id = ? AND activity_id IN "
                "(SELECT unnest(?::BIGINT[]))",
                [athlete_id, ids],
            ).fetchall()
        ]
        if not ids:
            return 0
    conn.execute("BEGIN")
    try:
        conn.execute(
            """INSERT INTO deleted_activities (activity_id, athlete_id, deleted_at, reason, last_summary_raw,
                 last_detail_raw, last_zones_raw)
               SELECT activity_id, athlete_id, ?, ?, coalesce(
                 (SELECT s.raw FROM activity_summary_documents s WHERE s.activity_id = activities.activity_id),
                 (SELECT d.raw FROM activity_documents d WHERE d.activity_id = activities.activity_id)),
                 (SELECT d.raw FROM activity_documents d WHERE d.activity_id = activities.activity_id),
                 (SELECT json_group_array(z.raw) FROM activity_zones z WHERE z.activity_id = activities.activity_id
                  HAVING count(*) > 0)
               FROM activities WHERE activity_id IN (SELECT unnest(?::BIGINT[]))""",
            [when, reason, ids],
        )
        removed = conn.execute(
            "SELECT count(*) FROM activities WHERE activity_id IN (SELECT unnest(?::BIGINT[]))", [ids]
        ).fetchall()[0][0]
        for table in (
            "splits_metric",
            "laps",
            "segment_efforts",
            "activity_zones",
            "activity_zone_buckets",
            "activities",
        ):
            conn.execute(f"DELETE FROM {table} WHERE activity_id IN (SELECT unnest(?::BIGINT[]))", [ids])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return int(removed)
