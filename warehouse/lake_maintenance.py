"""A lake's housekeeping. Every load commits new Parquet files (one per table it touched) and a snapshot; left alone,
a table of a year of nightly syncs is hundreds of small files that every read opens, and loads of a few rows (up to
DuckLake's data-inlining limit, 10) keep those rows in the catalog database, where every read fetches them again.
Maintenance writes inlined rows out to Parquet, merges adjacent small files, forgets snapshots older than `keep_days`
and deletes the files only those read.

Old snapshots are how a lake is recovered: `SELECT … FROM activities AT (TIMESTAMP => now() - INTERVAL 3 DAY)` reads
it as it was, a purge or a mistaken deletion included, for `keep_days` (the setting lake_keep_days). What is
forgotten and deleted is logged by the caller with these counts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import duckdb

from . import db
from .location import LAKE_ALIAS, Warehouse

FILES = (
    f"SELECT coalesce(sum(file_count), 0), coalesce(sum(delete_file_count), 0) FROM ducklake_table_info('{LAKE_ALIAS}')"
)


@dataclass(frozen=True)
class Maintained:
    data_files_before: int
    data_files_after: int
    inlined_tables_flushed: int
    delete_files_before: int
    delete_files_after: int
    snapshots_expired: int
    files_deleted: int

    def as_metadata(self) -> dict[str, int]:
        return asdict(self)


def maintain(warehouse: Warehouse, keep_days: float) -> Maintained:
    """Merge, expire and clean up the lake; each step its own transaction (retried when a load commits meanwhile)."""
    if not warehouse.is_lake:
        raise ValueError("a warehouse file needs no maintenance")
    older = f"now() - INTERVAL {float(keep_days) * 86400:.0f} SECOND"
    with db.writing(warehouse) as conn:
        data_before, deletes_before = _files(conn)
        flushed = db.transaction(
            conn, lambda: conn.execute(f"CALL ducklake_flush_inlined_data('{LAKE_ALIAS}')").fetchall()
        )
        db.transaction(conn, lambda: conn.execute(f"CALL ducklake_merge_adjacent_files('{LAKE_ALIAS}')").fetchall())
        # files most of whose rows a later load replaced: rewritten without them
        db.transaction(conn, lambda: conn.execute(f"CALL ducklake_rewrite_data_files('{LAKE_ALIAS}')").fetchall())
        expired = db.transaction(
            conn,
            lambda: conn.execute(f"CALL ducklake_expire_snapshots('{LAKE_ALIAS}', older_than => {older})").fetchall(),
        )
        deleted = db.transaction(
            conn,
            lambda: conn.execute(f"CALL ducklake_cleanup_old_files('{LAKE_ALIAS}', older_than => {older})").fetchall(),
        )
        data_after, deletes_after = _files(conn)
    return Maintained(data_before, data_after, len(flushed), deletes_before, deletes_after, len(expired), len(deleted))


def _files(conn: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    row = conn.execute(FILES).fetchall()[0]
    return int(row[0]), int(row[1])
