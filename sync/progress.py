"""Per-athlete sync progress in the state store: what has been listed, what still needs a detail or zones.

Progress lives here (SQLite), not in Dagster run state, so a run killed or stopped by the rate budget is
continued by the next one without re-fetching anything it already has.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fitsync.client.records import Record
from fitsync.client.state_store import StateStore
from fitsync.warehouse.plausible import implausible

# Summary fields whose change means the detail must be fetched again (kudos and comments do not).
FINGERPRINT_FIELDS = (
    "name",
    "type",
    "sport_type",
    "start_date",
    "distance",
    "moving_time",
    "elapsed_time",
    "total_elevation_gain",
    "private",
    "visibility",
    "gear_id",
    "trainer",
    "commute",
    "workout_type",
    "device_watts",
    "has_heartrate",
    "manual",
    "achievement_count",
    "pr_count",
)
LISTED_AFTER = "activities_listed_after"
FULL_LISTED_AT = "activities_full_listing_at"  # when the last complete full listing ended
STATS_TOTAL = "stats_all_time_count"  # the service's all-time ride + run + swim count, at the last stats fetch
STATS_GAP = "stats_gap_after_full_listing"  # stats count minus fitsync's, right after the last full listing
# What the last complete incremental listing (`<after>:<digest>`) and the last profile answered, whole: a sync that
# gets the same answers has nothing new (pipelines/nothing_new.py).
LISTING_DIGEST = "activities_listing_digest"
PROFILE_DIGEST = "athlete_profile_digest"
NOTHING_NEW_AT = "nothing_new_checked_at"  # when a sync last found nothing new, without a run
# An incremental listing starts this long before the newest start seen: an activity uploaded late with an older
# start time is still listed.
OVERLAP_SECONDS = 14 * 86400

# The activity `type`s the service's stats totals count (Everyone activities only).
STATS_GROUPS = {
    "Ride": "ride",
    "VirtualRide": "ride",
    "EBikeRide": "ride",
    "Run": "run",
    "VirtualRun": "run",
    "Swim": "swim",
}


@dataclass(frozen=True)
class ListingOutcome:
    seen: int
    new: int
    changed: int

    def __add__(self, other: ListingOutcome) -> ListingOutcome:
        return ListingOutcome(self.seen + other.seen, self.new + other.new, self.changed + other.changed)


# A fingerprint holds a short hash per field (FINGERPRINT_FIELDS, in order), so a listing can tell which fields
# changed; a field whose value was implausible (warehouse/plausible.py) is UNKNOWN: never a change, either way.
FINGERPRINT_VERSION, PART, UNKNOWN = "v2:", 6, "~" * 6


def fingerprint(summary: dict[str, Any]) -> str:
    odd = implausible("activities", summary, FINGERPRINT_FIELDS)
    return FINGERPRINT_VERSION + "".join(
        UNKNOWN if k in odd else hashlib.sha256(json.dumps(summary.get(k), sort_keys=True).encode()).hexdigest()[:PART]
        for k in FINGERPRINT_FIELDS
    )


def _legacy_fingerprint(summary: dict[str, Any]) -> str:
    """Before per-field parts: one hash of the fields (stored by fitsync before issue 28)."""
    picked = {k: summary.get(k) for k in FINGERPRINT_FIELDS}
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:20]


def compare(stored: str, summary: dict[str, Any]) -> tuple[list[str], str]:
    """(the fields a summary changed, the fingerprint to store). A field the summary or the stored fingerprint holds
    as implausible is no change: a broken server's `distance: 1e308` queues no re-pull, and the stored part stays."""
    new = fingerprint(summary)
    if not stored.startswith(FINGERPRINT_VERSION):
        return (
            [] if stored == _legacy_fingerprint(summary) else ["(fields stored before per-field fingerprints)"]
        ), new
    old_parts, new_parts = (_parts(p) for p in (stored, new))
    changed = [k for k, o, n in zip(FINGERPRINT_FIELDS, old_parts, new_parts) if o != n and UNKNOWN not in (o, n)]
    kept = "".join(o if n == UNKNOWN else n for o, n in zip(old_parts, new_parts))
    return changed, FINGERPRINT_VERSION + kept


def _parts(print_: str) -> list[str]:
    body = print_[len(FINGERPRINT_VERSION) :]
    return [body[i : i + PART] for i in range(0, len(body), PART)]


def digest(documents: Iterable[Any]) -> str:
    """One hash of whole answers, in order: any change of any member (kudos included) changes it."""
    hasher = hashlib.sha256()
    for document in documents:
        hasher.update(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
        hasher.update(b"\n")
    return hasher.hexdigest()


def incremental_after(cursor: str) -> int:
    """Where an incremental listing starts, given the newest start seen."""
    return max(0, int(cursor) - OVERLAP_SECONDS)


def start_ts(summary: dict[str, Any]) -> int | None:
    """The start instant in epoch seconds; None when absent or not a date (the record is flagged, never a failure)."""
    try:
        return int(datetime.fromisoformat(str(summary["start_date"]).replace("Z", "+00:00")).timestamp())
    except (KeyError, ValueError, OverflowError):
        return None


# Sports whose activities the real service gives pace zones when they have distance and GPS (real-service notes).
PACE_SPORTS = frozenset({"Run", "TrailRun"})


def may_have_zones(summary: dict[str, Any]) -> bool:
    """Whether a zones call can answer with anything: zone distributions come from heart rate, a power meter, or
    (pace zones) a run's distance over GPS. A summary that does not say (`has_heartrate` absent: a shape fitsync
    does not know) is asked."""
    return (
        summary.get("has_heartrate") is not False
        or summary.get("device_watts") is True
        or (
            summary.get("sport_type") in PACE_SPORTS
            and bool(summary.get("start_latlng"))
            and isinstance(summary.get("distance"), (int, float))
            and summary["distance"] > 0
        )
    )


def record_listing(conn: sqlite3.Connection, athlete_id: int, summaries: list[Record]) -> ListingOutcome:
    """Mark new activities for detail, and for zones when they may have any; changed ones for detail (inside the
    caller's transaction). A listed activity that cannot have zones leaves the zones queue, whatever queued it."""
    new = changed = 0
    for summary in summaries:
        started = start_ts(summary.raw)
        if not isinstance(summary.id, int) or started is None:
            continue
        zones = may_have_zones(summary.raw)
        row = conn.execute(
            "SELECT fingerprint FROM known_activities WHERE athlete_id = ? AND activity_id = ?",
            (athlete_id, summary.id),
        ).fetchone()
        if row is None:
            new += 1
            conn.execute(
                "INSERT INTO known_activities (athlete_id, activity_id, start_ts, fingerprint, needs_detail, "
                "needs_zones) VALUES (?, ?, ?, ?, 1, ?)",
                (athlete_id, summary.id, started, fingerprint(summary.raw), int(zones)),
            )
        elif (found := compare(row["fingerprint"], summary.raw))[1] != row["fingerprint"]:
            fields, print_ = found
            changed += bool(fields)
            conn.execute(
                "UPDATE known_activities SET fingerprint = ?, start_ts = ?, "
                "needs_detail = CASE WHEN ? = 1 THEN 1 ELSE needs_detail END "
                "WHERE athlete_id = ? AND activity_id = ?",
                (print_, started, int(bool(fields)), athlete_id, summary.id),
            )
        if not zones and row is not None:
            mark(conn, athlete_id, [summary.id], "zones")
        conn.execute(
            "UPDATE known_activities SET stats_group = ? WHERE athlete_id = ? AND activity_id = ?",
            (stats_group(summary.raw), athlete_id, summary.id),
        )
    return ListingOutcome(len(summaries), new, changed)


FULL_EVERY = 7 * 86400  # a full listing at least this often, whoever schedules the syncs


def full_listing_due(store: StateStore, athlete_id: int, cursor: str | None) -> str | None:
    """Why the next listing must go all the way back even unasked, or None."""
    if cursor is None:
        return "first sync"
    last_full = get_cursor(store, athlete_id, FULL_LISTED_AT)
    if last_full is None or time.time() - int(last_full) > FULL_EVERY:
        return f"the last full listing is more than {FULL_EVERY // 86400} days old"
    return None


def stats_group(summary: dict[str, Any]) -> str | None:
    """The stats total that counts this activity, if any: only activities visible to Everyone are counted."""
    visibility = summary.get("visibility")
    public = visibility == "everyone" if visibility is not None else summary.get("private") is False
    return STATS_GROUPS.get(str(summary.get("type"))) if public else None


def stats_gap(store: StateStore, athlete_id: int) -> int | None:
    """How many more activities the service's stats count than fitsync knows (None: no stats yet)."""
    total = get_cursor(store, athlete_id, STATS_TOTAL)
    if total is None:
        return None
    with store.reading() as conn:
        known = conn.execute(
            "SELECT count(*) FROM known_activities WHERE athlete_id = ? AND stats_group IS NOT NULL", (athlete_id,)
        ).fetchone()[0]
    return int(total) - known


def needing(store: StateStore, athlete_id: int, what: str, limit: int, skip: Iterable[int] = ()) -> list[int]:
    """Activity ids still needing a detail (`what`="detail") or zones ("zones"), newest first: under the real
    service's limits a backfill takes days, and this month's rides are the ones the athlete asks about. `skip`: ids
    this run already asked and leaves queued (an answer of the wrong shape)."""
    column = {"detail": "needs_detail", "zones": "needs_zones"}[what]
    skipped = sorted(skip)
    marks = f" AND activity_id NOT IN ({','.join('?' * len(skipped))})" if skipped else ""
    with store.reading() as conn:
        return [
            r[0]
            for r in conn.execute(
                f"SELECT activity_id FROM known_activities WHERE athlete_id = ? AND {column} = 1{marks} "
                "ORDER BY start_ts DESC, activity_id DESC LIMIT ?",
                (athlete_id, *skipped, limit),
            )
        ]


def needing_among(store: StateStore, athlete_id: int, activity_ids: list[int], what: str) -> set[int]:
    """Which of these activities still need a detail or zones."""
    column = {"detail": "needs_detail", "zones": "needs_zones"}[what]
    marks = ",".join("?" * len(activity_ids))
    with store.reading() as conn:
        return {
            r[0]
            for r in conn.execute(
                f"SELECT activity_id FROM known_activities WHERE athlete_id = ? AND {column} = 1 "
                f"AND activity_id IN ({marks})",
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


def count_needing(store: StateStore, athlete_id: int, what: str) -> int:
    column = {"detail": "needs_detail", "zones": "needs_zones"}[what]
    with store.reading() as conn:
        return conn.execute(
            f"SELECT count(*) FROM known_activities WHERE athlete_id = ? AND {column} = 1", (athlete_id,)
        ).fetchone()[0]


def mark(conn: sqlite3.Connection, athlete_id: int, activity_ids: list[int], what: str, value: int = 0) -> None:
    column = {"detail": "needs_detail", "zones": "needs_zones"}[what]
    conn.executemany(
        f"UPDATE known_activities SET {column} = ? WHERE athlete_id = ? AND activity_id = ?",
        [(value, athlete_id, i) for i in activity_ids],
    )


def request_refresh(conn: sqlite3.Connection, athlete_id: int, activity_ids: list[int], zones: bool = False) -> None:
    """These activities need a fresh detail (and zones, when fitsync has never seen them, or with `zones`): a
    webhook's re-pull, or a warehouse started over. The details asset drops the zones call of an activity whose
    detail shows it can have none."""
    conn.executemany(
        f"""INSERT INTO known_activities (athlete_id, activity_id, start_ts, fingerprint, needs_detail, needs_zones)
           VALUES (?, ?, 0, '', 1, 1)
           ON CONFLICT (athlete_id, activity_id) DO UPDATE SET needs_detail = 1{", needs_zones = 1" if zones else ""}""",
        [(athlete_id, activity_id) for activity_id in activity_ids],
    )


def note_details(conn: sqlite3.Connection, athlete_id: int, details: list[dict[str, Any]]) -> None:
    """A detail carries every summary field: remember its fingerprint so the next listing sees no change, and
    drop the zones call of an activity that cannot have zones (a webhook queued it before anything was known)."""
    conn.executemany(
        "UPDATE known_activities SET fingerprint = ?, start_ts = ? WHERE athlete_id = ? AND activity_id = ?",
        [(fingerprint(d), start_ts(d), athlete_id, d["id"]) for d in details if start_ts(d) is not None],
    )
    mark(conn, athlete_id, [d["id"] for d in details if not may_have_zones(d)], "zones")


def note_segments(conn: sqlite3.Connection, athlete_id: int, segment_ids: list[int], starred: bool) -> None:
    """Segments to fetch in detail: starred ones and every one seen in an effort."""
    conn.executemany(
        """INSERT INTO known_segments (athlete_id, segment_id, starred, needs_detail) VALUES (?, ?, ?, 1)
           ON CONFLICT (athlete_id, segment_id) DO UPDATE SET starred = CASE WHEN excluded.starred > known_segments.starred
                                                                   THEN excluded.starred ELSE known_segments.starred END""",
        [(athlete_id, s, int(starred)) for s in segment_ids],
    )


def segments_to_detail(store: StateStore, athlete_id: int) -> list[int]:
    """Segments whose detail is still to fetch, by value: starred ones first (the athlete chose them), then in the
    order their efforts were seen, which is newest activity first since details are fetched newest first."""
    with store.reading() as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT segment_id FROM known_segments WHERE athlete_id = ? AND needs_detail = 1 "
                "ORDER BY starred DESC, rowid",
                (athlete_id,),
            )
        ]


def forget(conn: sqlite3.Connection, athlete_id: int, activity_ids: list[int]) -> None:
    conn.executemany(
        "DELETE FROM known_activities WHERE athlete_id = ? AND activity_id = ?", [(athlete_id, i) for i in activity_ids]
    )


def known_ids(store: StateStore, athlete_id: int) -> set[int]:
    with store.reading() as conn:
        return {
            r[0] for r in conn.execute("SELECT activity_id FROM known_activities WHERE athlete_id = ?", (athlete_id,))
        }


def get_cursor(store: StateStore, athlete_id: int, name: str) -> str | None:
    with store.reading() as conn:
        row = conn.execute(
            "SELECT value FROM sync_cursors WHERE athlete_id = ? AND name = ?", (athlete_id, name)
        ).fetchone()
    return row[0] if row else None


def set_cursor(conn: sqlite3.Connection, athlete_id: int, name: str, value: str) -> None:
    conn.execute(
        """INSERT INTO sync_cursors (athlete_id, name, value, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (athlete_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at""",
        (athlete_id, name, value, time.time()),
    )


NOT_SUBSCRIBED = "skipped: the athlete's profile says no subscription (premium false), which this needs"


def note_subscriber(conn: sqlite3.Connection, athlete_id: int, subscriber: bool) -> None:
    """What the profile's `premium` (or a 402) says about the athlete's subscription."""
    conn.execute("UPDATE athletes SET subscriber = ? WHERE athlete_id = ?", (int(subscriber), athlete_id))


def known_non_subscriber(store: StateStore, athlete_id: int) -> bool:
    """True only when the last profile (or a 402 since) said so: unknown means try, and learn from the answer."""
    with store.reading() as conn:
        row = conn.execute("SELECT subscriber FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return row is not None and row["subscriber"] == 0
