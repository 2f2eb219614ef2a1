"""The sync queue: per-athlete cursors (`sync_cursors`), the activities fitsync knows and what each still needs
(`known_activities`), and the segments to fetch in detail (`known_segments`).

Functions given a `conn` run inside the caller's transaction (a fetch lands its payloads and ticks off its queue in
one); those given the store read on their own connection. What the values mean is sync/progress.py's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from .store import Connection, StateStore

QUEUES = {"detail": "needs_detail", "zones": "needs_zones"}  # what an activity may still need → its column


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


# sync_cursors ------------------------------------------------------------------------------------------------------


def get_cursor(store: StateStore, athlete_id: int, name: str) -> str | None:
    with store.reading() as conn:
        row = conn.execute(
            "SELECT value FROM sync_cursors WHERE athlete_id = ? AND name = ?", (athlete_id, name)
        ).fetchone()
    return None if row is None else str(row[0])


def set_cursor(conn: Connection, athlete_id: int, name: str, value: str) -> None:
    conn.execute(
        """INSERT INTO sync_cursors (athlete_id, name, value, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (athlete_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at""",
        (athlete_id, name, value, time.time()),
    )


def cursors(store: StateStore, athlete_id: int) -> dict[str, tuple[str, float]]:
    """Every cursor of the athlete: name → (value, when it was written)."""
    with store.reading() as conn:
        return {
            r["name"]: (r["value"], r["updated_at"])
            for r in conn.execute(
                "SELECT name, value, updated_at FROM sync_cursors WHERE athlete_id = ?", (athlete_id,)
            )
        }


# known_activities --------------------------------------------------------------------------------------------------


def stored_fingerprint(conn: Connection, athlete_id: int, activity_id: int) -> str | None:
    row = conn.execute(
        "SELECT fingerprint FROM known_activities WHERE athlete_id = ? AND activity_id = ?",
        (athlete_id, activity_id),
    ).fetchone()
    return None if row is None else str(row["fingerprint"])


def add_listed(conn: Connection, athlete_id: int, activity_id: int, start: int, print_: str, zones: bool) -> None:
    """A newly listed activity: it needs its detail, and its zones when it may have any."""
    conn.execute(
        "INSERT INTO known_activities (athlete_id, activity_id, start_ts, fingerprint, needs_detail, "
        "needs_zones) VALUES (?, ?, ?, ?, 1, ?)",
        (athlete_id, activity_id, start, print_, int(zones)),
    )


def update_listed(conn: Connection, athlete_id: int, activity_id: int, start: int, print_: str, changed: bool) -> None:
    """A listed activity fitsync knew: its new fingerprint, and its detail queued again when a field `changed`."""
    conn.execute(
        "UPDATE known_activities SET fingerprint = ?, start_ts = ?, "
        "needs_detail = CASE WHEN ? = 1 THEN 1 ELSE needs_detail END "
        "WHERE athlete_id = ? AND activity_id = ?",
        (print_, start, int(changed), athlete_id, activity_id),
    )


def set_stats_group(conn: Connection, athlete_id: int, activity_id: int, group: str | None) -> None:
    conn.execute(
        "UPDATE known_activities SET stats_group = ? WHERE athlete_id = ? AND activity_id = ?",
        (group, athlete_id, activity_id),
    )


def count_stats_counted(store: StateStore, athlete_id: int, excluding: Sequence[int] = ()) -> int:
    """How many known activities the service's stats count, leaving out `excluding`."""
    left_out = f" AND activity_id NOT IN ({_marks(excluding)})" if excluding else ""
    with store.reading() as conn:
        return int(
            conn.execute(
                f"SELECT count(*) FROM known_activities WHERE athlete_id = ? AND stats_group IS NOT NULL{left_out}",
                (athlete_id, *excluding),
            ).fetchone()[0]
        )


def needing(store: StateStore, athlete_id: int, what: str, limit: int, skip: Iterable[int] = ()) -> list[int]:
    """Activity ids still needing a detail (`what`="detail") or zones ("zones"), newest first: under the real
    service's limits a backfill takes days, and this month's rides are the ones the athlete asks about. `skip`: ids
    this run already asked and leaves queued (an answer of the wrong shape)."""
    skipped = sorted(skip)
    marks = f" AND activity_id NOT IN ({_marks(skipped)})" if skipped else ""
    with store.reading() as conn:
        return [
            int(r[0])
            for r in conn.execute(
                f"SELECT activity_id FROM known_activities WHERE athlete_id = ? AND {QUEUES[what]} = 1{marks} "
                "ORDER BY start_ts DESC, activity_id DESC LIMIT ?",
                (athlete_id, *skipped, limit),
            )
        ]


def needing_among(store: StateStore, athlete_id: int, activity_ids: list[int], what: str) -> set[int]:
    """Which of these activities still need a detail or zones."""
    with store.reading() as conn:
        return {
            int(r[0])
            for r in conn.execute(
                f"SELECT activity_id FROM known_activities WHERE athlete_id = ? AND {QUEUES[what]} = 1 "
                f"AND activity_id IN ({_marks(activity_ids)})",
                (athlete_id, *activity_ids),
            )
        }


def queue_span(store: StateStore, athlete_id: int) -> tuple[int | None, int | None]:
    """Start times (epoch) of the first and last activity the detail queue will fetch: newest first."""
    with store.reading() as conn:
        row = conn.execute(
            "SELECT max(start_ts), min(start_ts) FROM known_activities WHERE athlete_id = ? "
            "AND needs_detail = 1 AND start_ts > 0",
            (athlete_id,),
        ).fetchone()
    return row[0], row[1]


# How many queued activities were ever done, per queue (sync_cursors, as text): a run's progress is the growth of
# this count since it started (cli/sync_progress.py), not what the athlete's earlier runs already fetched.
DONE_COUNTS = {"detail": "queue_done_detail", "zones": "queue_done_zones"}


def add_done(conn: Connection, athlete_id: int, what: str, n: int) -> None:
    """`n` more activities of the `what` queue done (fetched, or found gone), inside the transaction that ticks them
    off."""
    if n <= 0:
        return
    row = conn.execute(
        "SELECT value FROM sync_cursors WHERE athlete_id = ? AND name = ?", (athlete_id, DONE_COUNTS[what])
    ).fetchone()
    set_cursor(conn, athlete_id, DONE_COUNTS[what], str(int(row[0] if row else 0) + n))


def count_done(store: StateStore, athlete_id: int, what: str) -> int:
    """How many activities of the `what` queue were ever done (add_done)."""
    value = get_cursor(store, athlete_id, DONE_COUNTS[what])
    return int(value) if value is not None else 0


def count_needing(store: StateStore, athlete_id: int, what: str, since_ts: int | None = None) -> int:
    """Activities needing `what`; `since_ts`: only those started then or later (epoch seconds; None: every one,
    whatever start a listing gave it)."""
    since = "" if since_ts is None else " AND start_ts >= ?"
    with store.reading() as conn:
        return int(
            conn.execute(
                f"SELECT count(*) FROM known_activities WHERE athlete_id = ? AND {QUEUES[what]} = 1{since}",
                (athlete_id,) if since_ts is None else (athlete_id, since_ts),
            ).fetchone()[0]
        )


def mark(conn: Connection, athlete_id: int, activity_ids: list[int], what: str, value: int = 0) -> None:
    conn.executemany(
        f"UPDATE known_activities SET {QUEUES[what]} = ? WHERE athlete_id = ? AND activity_id = ?",
        [(value, athlete_id, i) for i in activity_ids],
    )


def request_refresh(conn: Connection, athlete_id: int, activity_ids: list[int], zones: bool = False) -> None:
    """These activities need a fresh detail (and zones, when fitsync has never seen them, or with `zones`): a
    webhook's re-pull, or a warehouse started over. The details asset drops the zones call of an activity whose
    detail shows it can have none."""
    conn.executemany(
        f"""INSERT INTO known_activities (athlete_id, activity_id, start_ts, fingerprint, needs_detail, needs_zones)
           VALUES (?, ?, 0, '', 1, 1)
           ON CONFLICT (athlete_id, activity_id) DO UPDATE SET needs_detail = 1{", needs_zones = 1" if zones else ""}""",
        [(athlete_id, activity_id) for activity_id in activity_ids],
    )


def set_fingerprints(conn: Connection, athlete_id: int, prints: Iterable[tuple[int, str, int]]) -> None:
    """(activity id, fingerprint, start) of activities whose detail carried every summary field."""
    conn.executemany(
        "UPDATE known_activities SET fingerprint = ?, start_ts = ? WHERE athlete_id = ? AND activity_id = ?",
        [(print_, start, athlete_id, activity_id) for activity_id, print_, start in prints],
    )


def forget(conn: Connection, athlete_id: int, activity_ids: list[int]) -> None:
    conn.executemany(
        "DELETE FROM known_activities WHERE athlete_id = ? AND activity_id = ?", [(athlete_id, i) for i in activity_ids]
    )


def known_ids(store: StateStore, athlete_id: int) -> set[int]:
    with store.reading() as conn:
        return {
            int(r[0])
            for r in conn.execute("SELECT activity_id FROM known_activities WHERE athlete_id = ?", (athlete_id,))
        }


# known_segments ----------------------------------------------------------------------------------------------------


def note_segments(conn: Connection, athlete_id: int, segment_ids: list[int], starred: bool) -> None:
    """Segments to fetch in detail: starred ones and every one seen in an effort."""
    conn.executemany(
        """INSERT INTO known_segments (athlete_id, segment_id, starred, needs_detail) VALUES (?, ?, ?, 1)
           ON CONFLICT (athlete_id, segment_id) DO UPDATE SET starred = CASE WHEN excluded.starred > known_segments.starred
                                                                   THEN excluded.starred ELSE known_segments.starred END""",
        [(athlete_id, s, int(starred)) for s in segment_ids],
    )


def delete_cursors(conn: Connection, athlete_id: int, names: list[str]) -> None:
    conn.executemany("DELETE FROM sync_cursors WHERE athlete_id = ? AND name = ?", [(athlete_id, n) for n in names])


def segments_again(conn: Connection, athlete_id: int) -> None:
    """Every known segment's detail, and each starred one's whole effort history, to fetch again (a new warehouse)."""
    conn.execute("UPDATE known_segments SET needs_detail = 1, efforts_after = NULL WHERE athlete_id = ?", (athlete_id,))


def segments_to_detail(store: StateStore, athlete_id: int) -> list[int]:
    """Segments whose detail is still to fetch, by value: starred ones first (the athlete chose them), then in the
    order their efforts were seen, which is newest activity first since details are fetched newest first."""
    with store.reading() as conn:
        return [
            int(r[0])
            for r in conn.execute(
                "SELECT segment_id FROM known_segments WHERE athlete_id = ? AND needs_detail = 1 "
                "ORDER BY starred DESC, rowid",
                (athlete_id,),
            )
        ]


def unstar_all(conn: Connection, athlete_id: int) -> None:
    """Before the starred list is noted again: a segment the athlete unstarred is starred no more."""
    conn.execute("UPDATE known_segments SET starred = 0 WHERE athlete_id = ?", (athlete_id,))


def segment_fetched(conn: Connection, athlete_id: int, segment_id: int) -> None:
    conn.execute(
        "UPDATE known_segments SET needs_detail = 0 WHERE athlete_id = ? AND segment_id = ?", (athlete_id, segment_id)
    )


def starred_segments(store: StateStore, athlete_id: int) -> list[tuple[int, str | None]]:
    """(segment id, the local start time its effort history is fetched after) of each starred segment."""
    with store.reading() as conn:
        return [
            (int(r["segment_id"]), r["efforts_after"])
            for r in conn.execute(
                "SELECT segment_id, efforts_after FROM known_segments WHERE athlete_id = ? AND starred = 1 "
                "ORDER BY segment_id",
                (athlete_id,),
            )
        ]


def set_efforts_after(conn: Connection, athlete_id: int, segment_id: int, after: str | None) -> None:
    conn.execute(
        "UPDATE known_segments SET efforts_after = ? WHERE athlete_id = ? AND segment_id = ?",
        (after, athlete_id, segment_id),
    )
