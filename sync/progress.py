"""Per-athlete sync progress: what has been listed, what still needs a detail or zones, and what that means.

Progress lives in the state store (state/progress.py holds its SQL), not in Dagster run state, so a run killed or
stopped by the rate budget is continued by the next one without re-fetching anything it already has. This module
decides (fingerprints, which fields changed, what may have zones); the queue's reads and writes are the state
repository's, and the sync's callers reach them through here.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fitsync.client.records import Record
from fitsync.state import progress as queue
from fitsync.state.athletes import known_non_subscriber, note_subscriber
from fitsync.state.progress import (
    add_done,
    count_done,
    count_needing,
    count_stats_counted,
    delete_cursors,
    forget,
    get_cursor,
    known_ids,
    mark,
    needing,
    needing_among,
    note_segments,
    queue_span,
    request_refresh,
    segments_again,
    segments_to_detail,
    set_cursor,
)
from fitsync.state.store import Connection, StateStore
from fitsync.warehouse.plausible import implausible

__all__ = [  # the queue's repository functions the sync's callers use through this module
    "add_done",
    "count_done",
    "count_needing",
    "count_stats_counted",
    "forget",
    "get_cursor",
    "known_ids",
    "known_non_subscriber",
    "mark",
    "needing",
    "needing_among",
    "note_segments",
    "note_subscriber",
    "queue_span",
    "request_refresh",
    "delete_cursors",
    "segments_again",
    "segments_to_detail",
    "set_cursor",
]

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
# When a sync last failed before starting a run (the service silent, the athlete's token refused), and why.
FAILED_BEFORE_RUN = "sync_failed_before_a_run"
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


def incremental_after(cursor: str | int) -> int:
    """Where an incremental listing starts, given the newest start seen."""
    return max(0, int(cursor) - OVERLAP_SECONDS)


def window_digest(summaries: Iterable[dict[str, Any]], after: int) -> str:
    """`<after>:<digest>` of the summaries an incremental listing from `after` answers (start at or after it; those
    without a readable start too), in one order whatever the listing's: a full listing (newest first) and the
    incremental one a later sync makes (oldest first) agree when nothing changed, so "nothing new" holds from the
    second sync on, whichever kind of listing the last run made (pipelines/nothing_new.py)."""
    members = [(start_ts(s), s) for s in summaries]
    window = sorted(
        ((started or 0, str(s.get("id")), s) for started, s in members if started is None or started >= after),
        key=lambda m: m[:2],
    )
    return f"{after}:{digest(s for _, _, s in window)}"


def in_window(summary: dict[str, Any], newest: int) -> bool:
    """Whether a summary can still be in the incremental window once the newest start seen is at least `newest`
    (the window only moves later): a listing keeps just these for window_digest."""
    started = start_ts(summary)
    return started is None or started >= incremental_after(newest)


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


def record_listing(conn: Connection, athlete_id: int, summaries: list[Record]) -> ListingOutcome:
    """Mark new activities for detail, and for zones when they may have any; changed ones for detail (inside the
    caller's transaction). A listed activity that cannot have zones leaves the zones queue, whatever queued it."""
    new = changed = 0
    for summary in summaries:
        started = start_ts(summary.raw)
        if not isinstance(summary.id, int) or started is None:
            continue
        zones = may_have_zones(summary.raw)
        stored = queue.stored_fingerprint(conn, athlete_id, summary.id)
        if stored is None:
            new += 1
            queue.add_listed(conn, athlete_id, summary.id, started, fingerprint(summary.raw), zones)
        elif (found := compare(stored, summary.raw))[1] != stored:
            fields, print_ = found
            changed += bool(fields)
            queue.update_listed(conn, athlete_id, summary.id, started, print_, bool(fields))
        if not zones and stored is not None:
            mark(conn, athlete_id, [summary.id], "zones")
        queue.set_stats_group(conn, athlete_id, summary.id, stats_group(summary.raw))
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
    return int(total) - count_stats_counted(store, athlete_id)


def note_details(conn: Connection, athlete_id: int, details: list[dict[str, Any]]) -> None:
    """A detail carries every summary field: remember its fingerprint so the next listing sees no change, and
    drop the zones call of an activity that cannot have zones (a webhook queued it before anything was known)."""
    queue.set_fingerprints(
        conn, athlete_id, [(d["id"], fingerprint(d), started) for d in details if (started := start_ts(d)) is not None]
    )
    mark(conn, athlete_id, [d["id"] for d in details if not may_have_zones(d)], "zones")


NOT_SUBSCRIBED = "skipped: the athlete's profile says no subscription (premium false), which this needs"
