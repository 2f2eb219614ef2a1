"""Detailed activities as the service sent them, kept whole in Parquet files beside the warehouse file.

A detail's JSON is ≈ 13 KB, two thirds of it splits and laps. Kept in a DuckDB column, every checkpoint re-read and
re-compressed the stored documents: a backfill's peak memory grew with the history (1.08× → 1.46× from 1k to 10k
activities), and writing the text cost a batch more than parsing it. In Parquet files, written once per batch
(zstd) and never rewritten, they cost ≈ 4 ms a batch and no memory later. The warehouse reads them through the view
`activity_documents` (the latest document per activity); `activities.detail_hash` tells which documents are new, so
re-loading the same data writes no file.

Layout: `<warehouse>.documents/activity_details/athlete=<id>/<uuid>.parquet`, plus one empty file holding the
schema so the view has something to read before the first detail arrives. Purging an athlete removes their folder.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import duckdb

KIND = "activity_details"
VIEW = "activity_documents"
SCHEMA_FILE = "_schema.parquet"


def folder(database: Path | str) -> Path:
    """Where the documents of this warehouse file live."""
    path = Path(database).resolve()
    return path.with_name(path.name + ".documents") / KIND


def database_path(conn: duckdb.DuckDBPyConnection) -> Path | None:
    """The file of the connection's current database (None in memory)."""
    row = conn.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return Path(row[0]) if row and row[0] else None


def create_view(conn: duckdb.DuckDBPyConnection, database: Path | str) -> None:
    """The view over this warehouse's documents, by absolute path (re-created by every migrate: a moved warehouse
    finds its documents again once fitsync writes to it). A document counts only while its activity's row has its
    hash: a file written for a load that then failed, or for a deleted activity, is not shown."""
    base = folder(database)
    base.mkdir(parents=True, exist_ok=True)
    schema = base / SCHEMA_FILE
    if not schema.exists():
        conn.execute("COPY (SELECT * FROM (VALUES (NULL::BIGINT, NULL::BIGINT, NULL::TIMESTAMPTZ, NULL::UBIGINT, "
                     "NULL::JSON)) AS t(activity_id, athlete_id, fetched_at, detail_hash, raw) LIMIT 0) "
                     f"TO '{_quoted(schema)}' (FORMAT parquet)")
    glob = _quoted(base / "**" / "*.parquet")
    conn.execute(f"""CREATE OR REPLACE VIEW {VIEW} AS
        SELECT p.activity_id, p.athlete_id, p.fetched_at, p.raw::JSON AS raw
        FROM read_parquet('{glob}', hive_partitioning = false) p
        JOIN activities a ON a.activity_id = p.activity_id AND a.detail_hash = p.detail_hash
        QUALIFY row_number() OVER (PARTITION BY p.activity_id ORDER BY p.fetched_at DESC) = 1
        UNION ALL
        SELECT activity_id, athlete_id, detail_fetched_at, detail_raw FROM activities a
        WHERE detail_raw IS NOT NULL AND detail_hash IS NULL""")
    conn.execute(f"COMMENT ON VIEW {VIEW} IS 'Each detailed activity as the service last sent it, whole (splits, laps "
                 "and efforts included): read from the Parquet files in <warehouse>.documents/ (details loaded before "
                 "schema 9 and not fetched since: activities.detail_raw, without splits, laps and efforts)'")
    for column, text in (("activity_id", "The activity"), ("athlete_id", "Its athlete"),
                         ("fetched_at", "When fitsync loaded this document (UTC)"),
                         ("raw", "The detailed activity JSON as received")):
        conn.execute(f"COMMENT ON COLUMN {VIEW}.{column} IS '{text}'")


def write_new(conn: duckdb.DuckDBPyConnection, staged: str) -> int:
    """Write the documents of a batch's staged activity rows (their `document` column) that are new or changed (their
    hash differs from the stored detail_hash) to one Parquet file per athlete; returns how many. The file appears whole
    (written under a temporary name) before the batch's transaction commits: a load that then fails leaves a document
    no row has the hash of (the view leaves it out), never a row without its document."""
    database = database_path(conn)
    if database is None:
        return 0
    conn.execute(f"""CREATE OR REPLACE TEMP TABLE new_documents AS
        SELECT activity_id, detail_hash, athlete_id FROM {staged} s
        WHERE NOT EXISTS (SELECT 1 FROM activities a WHERE a.activity_id = s.activity_id
                          AND a.detail_hash = s.detail_hash)""")
    written = 0
    for athlete, count in conn.execute("SELECT athlete_id, count(*) FROM new_documents GROUP BY ALL").fetchall():
        target = folder(database) / f"athlete={athlete}"
        target.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        partial = target / f".{name}.partial"
        match = f"athlete_id IS NOT DISTINCT FROM {'NULL' if athlete is None else int(athlete)}"
        conn.execute(f"COPY (SELECT s.activity_id, s.athlete_id, s.detail_fetched_at AS fetched_at, s.detail_hash, "
                     f"s.document AS raw FROM {staged} s SEMI JOIN new_documents n USING (activity_id, detail_hash) "
                     f"WHERE s.{match}) TO '{_quoted(partial)}' (FORMAT parquet, COMPRESSION zstd)")
        partial.rename(target / f"{name}.parquet")
        written += count
    return written


def remove_athlete(database: Path | str, athlete_id: int) -> int:
    """Delete an athlete's document files (a purge); returns how many."""
    target = folder(database) / f"athlete={athlete_id}"
    if not target.exists():
        return 0
    count = sum(1 for _ in target.glob("*.parquet"))
    shutil.rmtree(target)
    return count


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
