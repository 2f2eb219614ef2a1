"""The sandbox's synthetic world: athletes, gear, segments, stars, activities and segment efforts.

Deterministic: every random choice comes from a `random.Random` seeded with a string built from the
caller's seed and stable ids, never from the clock (seed_world only knows `anchor`). Activities are
recorded in start-time order, so each effort's pr/kom rank follows from the efforts before it.

Stored shapes (the HTTP layer builds representations from them):
- athletes.data: detailed athlete fields minus id/resource_state/premium/bikes/shoes, plus the private
  keys in PRIVATE_ATHLETE_KEYS (never part of API output).
- activities.data: detailed activity fields minus id/resource_state/athlete/private/visibility/
  segment_efforts/gear/photos/highlighted_kudosers, plus `zones` (GET /activities/{id}/zones).
- efforts.data: segment effort fields minus id/resource_state/activity/athlete/segment/athlete_segment_stats.
- segments.data: detailed segment fields minus id/resource_state/starred and the computed counts/stats.

Modules: world_tables (data tables), world_course (geometry and timeline), world_common (ids, time),
world_people (athletes, gear, segments, stars), world_activity (recording).
"""

from __future__ import annotations

import math
import random
import sqlite3
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from . import store
from .world_activity import Batch, manual_activity, record
from .world_common import (
    ACTIVITY_BASE,
    ATHLETE_BASE,
    CLIMB_CATEGORY_DESC,
    EFFORT_BASE,
    GEAR_BASE,
    LAP_BASE,
    LEGACY_TYPES,
    PRIVATE_ATHLETE_KEYS,
    SEGMENT_BASE,
    SPORT_TYPES,
    UTC,
    VISIBILITIES,
    climb_category,
    epoch,
    pick,
    power_zones,
    seeded,
    sport_family,
)
from .world_people import Athlete, create_athlete
from .world_tables import KIND_MIX, REGIONS, SPORT_MIX, START_HOURS

__all__ = [
    "ACTIVITY_BASE",
    "ATHLETE_BASE",
    "CLIMB_CATEGORY_DESC",
    "EFFORT_BASE",
    "GEAR_BASE",
    "LAP_BASE",
    "LEGACY_TYPES",
    "PRIVATE_ATHLETE_KEYS",
    "REGION_NAMES",
    "SEGMENT_BASE",
    "SPORT_TYPES",
    "VISIBILITIES",
    "add_athlete",
    "climb_category",
    "create_manual_activity",
    "power_zones",
    "record_activity",
    "seed_world",
    "sport_family",
]

REGION_NAMES = tuple(r.name for r in REGIONS)

_VISIBILITY_MIX = (("everyone", 80), ("followers_only", 12), ("only_me", 8))


def add_athlete(
    conn: sqlite3.Connection,
    *,
    seed: int,
    firstname: str | None = None,
    lastname: str | None = None,
    premium: bool = True,
    sex: str | None = None,
    measurement_preference: str | None = None,
    region: str | None = None,
    now: datetime | None = None,
) -> int:
    """Create an athlete with gear, HR zones, a home region (its segments created on first use) and stars."""
    now = now or datetime.now(UTC)
    with store.transaction(conn):
        return create_athlete(
            conn,
            seed=seed,
            firstname=firstname,
            lastname=lastname,
            premium=premium,
            sex=sex,
            measurement_preference=measurement_preference,
            region=region,
            now=now,
        )


def record_activity(
    conn: sqlite3.Connection,
    athlete_id: int,
    *,
    seed: int,
    sport_type: str = "Ride",
    start_date: datetime | None = None,
    distance: float | None = None,
    moving_time: int | None = None,
    name: str | None = None,
    visibility: str = "everyone",
    device: bool = True,
    now: datetime | None = None,
) -> int:
    """Record a watch/bike-computer activity with full detail; returns its id.

    `device=False` means a phone recording: GPS, splits, laps and efforts, but no heart rate, power,
    cadence or temperature. Without `start_date` the activity starts an hour before `now` and is kept
    short enough to have finished.
    """
    now = now or datetime.now(UTC)
    start = start_date or now - timedelta(hours=1)
    with store.transaction(conn):
        return record(
            Batch(conn),
            athlete_id,
            seed=seed,
            sport_type=sport_type,
            start_ts=epoch(start),
            distance=distance,
            moving_time=moving_time,
            name=name,
            visibility=visibility,
            device=device,
            short=start_date is None,
        )


def create_manual_activity(
    conn: sqlite3.Connection,
    athlete_id: int,
    *,
    name: str,
    sport_type: str,
    type: str | None,
    start_date_local: datetime,
    elapsed_time: int,
    description: str | None,
    distance: float | None,
    trainer: bool,
    commute: bool,
    now: datetime | None = None,
) -> int:
    """What POST /activities creates: manual, no GPS, no sensors, no efforts/splits/laps/zones.

    The legacy type follows the sport_type when it is known; `type` only names an unknown one.
    The start is the athlete's local wall clock (naive), placed in the home time zone. `now` is
    accepted for symmetry with the other writers; nothing here depends on it.
    """
    with store.transaction(conn):
        return manual_activity(
            conn,
            athlete_id,
            name=name,
            sport_type=sport_type,
            type=type,
            start_date_local=start_date_local,
            elapsed_time=elapsed_time,
            description=description,
            distance=distance,
            trainer=trainer,
            commute=commute,
        )


def seed_world(
    conn: sqlite3.Connection, *, seed: int, athletes: int, activities_per_athlete: int, anchor: datetime
) -> None:
    """Fill an empty db with a world ending at `anchor`; equal arguments give an identical db."""
    anchor_ts = epoch(anchor)
    rng = seeded("world", seed)
    with store.transaction(conn):
        if conn.execute("SELECT 1 FROM athletes LIMIT 1").fetchone():
            raise ValueError("seed_world needs an empty database")
        regions = rng.sample(REGIONS, len(REGIONS))
        used = min(len(REGIONS), max(1, (athletes + 1) // 2))
        roster = []
        for i in range(athletes):
            kind = _seed_kind(rng, i, athletes)
            span_days = rng.randint(1100, 1450)
            created = anchor - timedelta(days=span_days + rng.randint(10, 120), seconds=rng.randint(0, 86399))
            athlete_id = create_athlete(
                conn,
                seed=seed * 1000 + i,
                now=anchor,
                created=created,
                kind=kind,
                region=regions[i % used].name,
                premium=not (athletes >= 3 and i == 2) and (i < 3 or rng.random() < 0.85),
                measurement_preference=("meters", "feet")[i % 2] if i < 2 else None,
                private_segment=True if i == 0 else None,
            )
            roster.append((athlete_id, kind, span_days))

        batch = Batch(conn)
        plan: list[tuple[int, int, str, str]] = []
        for athlete_id, kind, span_days in roster:
            plan += _plan_athlete(
                seeded("plan", seed, athlete_id),
                batch.athlete(athlete_id),
                kind,
                span_days,
                activities_per_athlete,
                anchor_ts,
            )
        plan.sort()  # chronological across athletes, so every rank follows from the efforts before it
        for n, (start_ts, athlete_id, sport_type, visibility) in enumerate(plan):
            record(
                batch,
                athlete_id,
                seed=seed * 1_000_003 + n,
                sport_type=sport_type,
                start_ts=start_ts,
                distance=None,
                moving_time=None,
                name=None,
                visibility=visibility,
                device=True,
                short=False,
            )
        store.set_meta(conn, "seed", str(seed))
        store.set_meta(conn, "anchor", anchor.astimezone(UTC).isoformat())


def _seed_kind(rng: random.Random, i: int, athletes: int) -> str:
    """The first athlete rides; with three or more, the second runs only; the rest are a mix."""
    if i == 0:
        return "cyclist"
    if i == 1 and athletes >= 3:
        return "runner_only"
    return pick(rng, KIND_MIX)


def _plan_athlete(
    rng: random.Random, athlete: Athlete, kind: str, span_days: int, count: int, anchor_ts: int
) -> list[tuple[int, int, str, str]]:
    """Start times, sports and visibilities: mostly one a day over the years, a block in the last 4 weeks."""
    if count <= 0:
        return []
    recent = min(count, 27, max(1, math.ceil(count * 0.05)))
    days = rng.sample(range(1, 28), recent)
    pool = range(28, max(29, span_days))
    while len(days) < count:  # each pass uses a day at most once, so busy days stay rare
        days += rng.sample(pool, min(len(pool), count - len(days)))
    zone = ZoneInfo(athlete.tz)
    today = datetime.fromtimestamp(anchor_ts, zone).date()
    sessions = {day: days.count(day) for day in set(days)}
    seen: dict[int, int] = {}
    out = []
    for day in days:
        nth = seen[day] = seen.get(day, 0) + 1
        hours = _session_hours(sessions[day], nth)
        start = _local_start(rng, zone, today - timedelta(days=day), pick(rng, hours))
        start = min(start, anchor_ts - 8 * 3600 - rng.randint(0, 3 * 3600))  # finished well before the anchor
        out.append((start, athlete.id, pick(rng, SPORT_MIX[kind]), pick(rng, _VISIBILITY_MIX)))
    return out


def _session_hours(sessions: int, nth: int) -> list[tuple[int, float]]:
    """Start hours for the nth of a day's sessions: two a day are early morning and evening, so they never meet."""
    if sessions == 1:
        return list(START_HOURS)
    if sessions == 2:
        return [(h, w) for h, w in START_HOURS if (h <= 8 if nth == 1 else h >= 17)]
    size = math.ceil(len(START_HOURS) / sessions)  # more than two a day: best effort
    return list(START_HOURS[(nth - 1) * size : nth * size]) or list(START_HOURS[-1:])


def _local_start(rng: random.Random, zone: ZoneInfo, day: date, hour: int) -> int:
    wall = datetime.combine(day, time(hour, rng.randint(0, 59), rng.randint(0, 59)))
    return int(wall.replace(tzinfo=zone).timestamp())
