"""Removing everything fitsync holds of an athlete who revoked access (the service's terms require it)."""

from __future__ import annotations

import duckdb

from . import documents, streams

# Tables with the athlete's rows, children first.
BY_ACTIVITY = ("splits_metric", "laps", "activity_zones", "activity_zone_buckets")
BY_ATHLETE = (
    "segment_efforts",
    "activities",
    "starred_segments",
    "gear",
    "athlete_stats",
    "athlete_stats_totals",
    "athlete_zones",
    "athlete_snapshots",
    "deleted_activities",
    "analysis_ftp_history",
    "analysis_seiler_zones",
    "analysis_thresholds",
    "unrecognized_payloads",
    "athletes",
)


def purge_athlete(conn: duckdb.DuckDBPyConnection, athlete_id: int) -> dict[str, int]:
    """Delete the athlete's rows in one transaction; returns rows removed per table.

    The athlete's document and stream files (documents.py, streams.py) go after the rows. Segments are shared public data, but their JSON
    carries the fetching athlete's own stats: segments no other athlete references are removed too.
    """
    removed: dict[str, int] = {}
    conn.execute("BEGIN")
    try:
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE purged_activities AS SELECT activity_id FROM activities WHERE athlete_id = ?",
            [athlete_id],
        )
        for table in BY_ACTIVITY:
            removed[table] = _count_deleted(
                conn, f"DELETE FROM {table} WHERE activity_id IN (SELECT activity_id FROM purged_activities)"
            )
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE purged_segments AS SELECT DISTINCT segment_id FROM ("
            "SELECT segment_id FROM segment_efforts WHERE athlete_id = $1 UNION "
            "SELECT segment_id FROM starred_segments WHERE athlete_id = $1) s WHERE NOT EXISTS ("
            "SELECT 1 FROM segment_efforts e WHERE e.segment_id = s.segment_id AND e.athlete_id <> $1) "
            "AND NOT EXISTS (SELECT 1 FROM starred_segments t WHERE t.segment_id = s.segment_id "
            "AND t.athlete_id <> $1)",
            [athlete_id],
        )
        for table in BY_ATHLETE:
            removed[table] = _count_deleted(conn, f"DELETE FROM {table} WHERE athlete_id = ?", [athlete_id])
        removed["segments"] = _count_deleted(
            conn, "DELETE FROM segments WHERE segment_id IN (SELECT segment_id FROM purged_segments)"
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    folder = documents.root(conn)
    if folder is not None:  # after the commit: a failed purge leaves the documents with their rows
        removed["document_files"] = documents.remove_athlete(folder, athlete_id)
        removed["stream_files"] = streams.remove_athlete(folder, athlete_id)
    return removed


def _count_deleted(conn: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> int:
    row = conn.execute(sql, params or []).fetchall()
    return int(row[0][0]) if row else 0
