"""Detailed activities and listed summaries as the service sent them, kept whole in Parquet files beside the
warehouse file (`Kind`: DETAILS since schema 9, SUMMARIES since schema 11).

A detail's JSON is ≈ 13 KB, two thirds of it splits and laps. Kept in a DuckDB column, every checkpoint re-read and
re-compressed the stored documents: a backfill's peak memory grew with the history (1.08× → 1.46× from 1k to 10k
activities), and writing the text cost a batch more than parsing it. In Parquet files, written once per batch
(zstd) and never rewritten, they cost ≈ 4 ms a batch and no memory later. The warehouse reads them through the view
`activity_documents` (the latest document per activity); `activities.detail_hash` tells which documents are new, so
re-loading the same data writes no file.

Layout: `<warehouse>.documents/<kind>/athlete=<id>/<uuid>.parquet` beside a file, `<data path>/documents/<kind>/…` in a
lake (location.py), plus one empty file per kind holding the schema so the view has something to read before the
first document arrives. Purging an athlete removes their folders.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb


@dataclass(frozen=True)
class Kind:
    """One kind of document kept whole: where its files go, the view over them, and the `activities` columns that tell
    a new document from one stored already (`hash`) and hold documents loaded before they moved out (`legacy`)."""

    folder: str
    view: str
    hash: str
    fetched: str
    legacy: str
    what: str


DETAILS = Kind(
    "activity_details",
    "activity_documents",
    "detail_hash",
    "detail_fetched_at",
    "detail_raw",
    "Each detailed activity as the service last sent it, whole (splits, laps and efforts included): read "
    "from the Parquet files in <warehouse>.documents/activity_details/ (details loaded before schema 9 and "
    "not fetched since: activities.detail_raw, without splits, laps and efforts)",
)
# Summaries moved out in schema 11: ≈ 1.5 KB of JSON in every activities row made each checkpoint that merged the
# table's row group rewrite it (a 10k-activity backfill's warehouse step: 1.13× the 1k one's peak, 1.03× without).
SUMMARIES = Kind(
    "activity_summaries",
    "activity_summary_documents",
    "summary_hash",
    "listed_at",
    "summary_raw",
    "Each activity as the listing last sent it, whole: read from the Parquet files in "
    "<warehouse>.documents/activity_summaries/ (summaries loaded before schema 11 and not listed since: "
    "activities.summary_raw)",
)
KINDS = (DETAILS, SUMMARIES)
SCHEMA_FILE = "_schema.parquet"


def folder(database: Path | str, kind: Kind = DETAILS) -> Path:
    """Where the documents of one kind of this warehouse file live."""
    path = Path(database).resolve()
    return path.with_name(path.name + ".documents") / kind.folder


def root(conn: duckdb.DuckDBPyConnection) -> Path | None:
    """The documents' folder of the connection's current database: beside its file, or under a lake's data path
    (None in memory)."""
    path, kind, options = _current(conn)
    if not path:
        return None
    if kind == "ducklake":
        return Path(str(options["data_path"]).rstrip("/")) / "documents"
    return Path(path).resolve().with_name(Path(path).name + ".documents")


def _current(conn: duckdb.DuckDBPyConnection) -> tuple[str | None, str, dict[str, str]]:
    """The current database's path, type ("duckdb", "ducklake") and options."""
    row = conn.execute(
        "SELECT path, type, options FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    return (row[0], row[1], row[2]) if row else (None, "duckdb", {})


def views_current(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether every documents view exists and reads this warehouse's folder (a moved file's views do not)."""
    documents = root(conn)
    if documents is None:
        return True
    found = dict(
        conn.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() AND NOT internal"
        ).fetchall()
    )
    return all(_quoted(documents / kind.folder) in (found.get(kind.view) or "") for kind in KINDS)


def create_view(conn: duckdb.DuckDBPyConnection) -> None:
    """The views over this warehouse's documents, by absolute path (re-created by every migrate: a moved warehouse
    finds its documents again once fitsync writes to it). A document counts only while its activity's row has its
    hash: a file written for a load that then failed, or for a deleted activity, is not shown."""
    documents = root(conn)
    if documents is None:
        return
    lake = _current(conn)[1] == "ducklake"
    for kind in KINDS:
        base = documents / kind.folder
        base.mkdir(parents=True, exist_ok=True)
        schema = base / SCHEMA_FILE
        if not schema.exists():
            conn.execute(
                "COPY (SELECT * FROM (VALUES (NULL::BIGINT, NULL::BIGINT, NULL::TIMESTAMPTZ, NULL::UBIGINT, "
                f"NULL::JSON)) AS t(activity_id, athlete_id, fetched_at, {kind.hash}, raw) LIMIT 0) "
                f"TO '{_quoted(schema)}' (FORMAT parquet)"
            )
        glob = _quoted(base / "**" / "*.parquet")
        conn.execute(f"""CREATE OR REPLACE VIEW {kind.view} AS
            SELECT p.activity_id, p.athlete_id, p.fetched_at, p.raw::JSON AS raw
            FROM read_parquet('{glob}', hive_partitioning = false) p
            JOIN activities a ON a.activity_id = p.activity_id AND a.{kind.hash} = p.{kind.hash}
            QUALIFY row_number() OVER (PARTITION BY p.activity_id ORDER BY p.fetched_at DESC) = 1
            UNION ALL
            SELECT activity_id, athlete_id, {kind.fetched}, {kind.legacy} FROM activities a
            WHERE {kind.legacy} IS NOT NULL AND {kind.hash} IS NULL""")
        conn.execute(f"COMMENT ON VIEW {kind.view} IS '{kind.what}'")
        if lake:  # DuckLake keeps no comment on a view's columns
            continue
        for column, text in (
            ("activity_id", "The activity"),
            ("athlete_id", "Its athlete"),
            ("fetched_at", "When fitsync loaded this document (UTC)"),
            ("raw", "The activity JSON as received"),
        ):
            conn.execute(f"COMMENT ON COLUMN {kind.view}.{column} IS '{text}'")


def write_new(conn: duckdb.DuckDBPyConnection, staged: str, kind: Kind) -> int:
    """Write the documents of a batch's staged activity rows (their `document` column) that are new or changed (their
    hash differs from the stored one) to one Parquet file per athlete; returns how many. The file appears whole
    (written under a temporary name) before the batch's transaction commits: a load that then fails leaves a document
    no row has the hash of (the view leaves it out), never a row without its document."""
    documents = root(conn)
    if documents is None:
        return 0
    conn.execute(f"""CREATE OR REPLACE TEMP TABLE new_documents AS
        SELECT activity_id, {kind.hash}, athlete_id FROM {staged} s
        WHERE NOT EXISTS (SELECT 1 FROM activities a WHERE a.activity_id = s.activity_id
                          AND a.{kind.hash} = s.{kind.hash})""")
    written = 0
    for athlete, count in conn.execute("SELECT athlete_id, count(*) FROM new_documents GROUP BY ALL").fetchall():
        target = documents / kind.folder / f"athlete={athlete}"
        target.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        partial = target / f".{name}.partial"
        match = f"athlete_id IS NOT DISTINCT FROM {'NULL' if athlete is None else int(athlete)}"
        conn.execute(
            f"COPY (SELECT s.activity_id, s.athlete_id, s.{kind.fetched} AS fetched_at, s.{kind.hash}, "
            f"s.document AS raw FROM {staged} s SEMI JOIN new_documents n USING (activity_id, {kind.hash}) "
            f"WHERE s.{match}) TO '{_quoted(partial)}' (FORMAT parquet, COMPRESSION zstd)"
        )
        partial.rename(target / f"{name}.parquet")
        written += count
    return written


def remove_athlete(documents: Path, athlete_id: int) -> int:
    """Delete an athlete's document files of every kind (a purge) from the documents' folder; returns how many."""
    count = 0
    for kind in KINDS:
        target = documents / kind.folder / f"athlete={athlete_id}"
        if target.exists():
            count += sum(1 for _ in target.glob("*.parquet"))
            shutil.rmtree(target)
    return count


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
