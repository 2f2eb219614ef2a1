"""Which activities wait for their streams: the query of the streams queue and the folder names it reads, without
Polars (`fitsync status` and the nothing-new check ask it on every start; the files' writing is streams.py)."""

from __future__ import annotations

import datetime as dt
from datetime import datetime

import duckdb

from . import documents

SAMPLES = "activity_streams"
ANSWERS = "activity_stream_answers"
SCHEMA_FILE = documents.SCHEMA_FILE

# Answers that may be the service's mistake (an empty answer, or fewer samples than it counts, for an activity with
# a recording): the activity is asked again on later runs, until it has ASKS answers.
NO_STREAMS, SHORT = "no streams", "short"  # two of streams.STATUSES
RETRIED = (NO_STREAMS, SHORT)
ASKS = 3
# Which activities have streams to ask for: recorded (never manual) with GPS or a sensor, as the summary says.
WANTED = """a.manual IS DISTINCT FROM true
    AND (a.start_lat IS NOT NULL OR a.has_heartrate OR a.device_watts OR a.average_cadence IS NOT NULL)"""


def since(setting: str, days: float, now: dt.datetime | None = None) -> dt.datetime | None:
    """The earliest start whose streams are wanted: `recent` the last `days` days, `all` any (None)."""
    if setting == "all":
        return None
    return (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=days)


def waiting(
    conn: duckdb.DuckDBPyConnection, athlete_id: int, since: datetime | None, *, looking: bool = False
) -> list[tuple[int, datetime, int | None]]:
    """(activity id, start, elapsed seconds) of the athlete's activities whose streams are wanted and not stored yet (or answered in a
    way worth asking again: RETRIED), newest first;
    `since`: only those started then or later (None: all). `looking`: create nothing (`fitsync status`)."""
    root = documents.root(conn)
    if root is None:
        return []
    if not looking:
        from .streams import prepare  # Polars: only where the files are written

        prepare(root)
    answered = ""
    if (root / ANSWERS / SCHEMA_FILE).exists():
        glob = quoted(root / ANSWERS / "**" / "*.parquet")
        retried = ", ".join(f"'{status}'" for status in RETRIED)
        answered = f"""AND a.activity_id NOT IN (
            SELECT activity_id FROM read_parquet('{glob}') GROUP BY activity_id
            HAVING arg_max(status, fetched_us) NOT IN ({retried}) OR count(*) >= {ASKS})"""
    return [
        (int(r[0]), r[1], r[2])
        for r in conn.execute(
            f"""SELECT a.activity_id, a.start_date, a.elapsed_time FROM activities a
                WHERE a.athlete_id = $1 AND {WANTED} AND ($2::TIMESTAMPTZ IS NULL OR a.start_date >= $2) {answered}
                ORDER BY a.start_date DESC NULLS LAST, a.activity_id DESC""",
            [athlete_id, since],
        ).fetchall()
    ]


def quoted(path: object) -> str:
    """A path inside an SQL string literal."""
    return str(path).replace("'", "''")
