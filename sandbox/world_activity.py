"""Recording activities: a course through home segments, its timeline, and everything read off it.

Each effort's pr/kom rank is a snapshot of the efforts already stored with an earlier start, which is
what the real service shows for an upload.
"""

from __future__ import annotations

import hashlib
import math
import random
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import polyline

from .world_common import (
    ACTIVITY_BASE,
    EFFORT_BASE,
    SPORT_TYPES,
    VISIBILITIES,
    LocalTime,
    dumps,
    epoch,
    iso,
    local_time,
    next_id,
    next_lap_id,
    pick,
    power_zones,
    seeded,
    sport_family,
)
from .world_course import (
    XY,
    Leg,
    Timeline,
    connector,
    cut_points,
    grade_factor,
    offset,
    round_to_total,
    spread,
    thin,
    weighted,
    xy_dist,
)
from .world_derived import SUFFER_PER_HOUR, derive
from .world_people import Athlete, Segment, load_athlete, segments_near
from .world_tables import (
    BIKE_COMPUTERS,
    CUSTOM_NAMES,
    DAY_PARTS,
    DESCRIPTIONS,
    FALLBACK_SPORT,
    GEAR_ROLES,
    INDOOR_APPS,
    PHONE_APP,
    SPORTS,
    WATCHES,
    Region,
    Sport,
)

_PACE_ZONE_RATIOS = (0.78, 0.88, 0.94, 1.01, 1.06)  # of threshold speed: upper bounds of pace zones 1-5
CLIMB_K = {"ride": 0.25, "run": 0.07, "fixed": 0.09}  # speed loss per % of grade
_WORKOUT_INTENSITY = {1: 1.06, 11: 1.06, 3: 1.03, 12: 1.03, 2: 0.95}
_ROLLING = {
    "Ride": 0.005,
    "VirtualRide": 0.005,
    "GravelRide": 0.012,
    "MountainBikeRide": 0.025,
    "EMountainBikeRide": 0.025,
}  # rolling resistance for power estimates
_POLYLINE_POINTS = 500
_SUMMARY_POINTS = 60


@dataclass
class Batch:
    """Caches for one batch of recordings (ids advance in memory; athletes and segments do not change)."""

    conn: sqlite3.Connection
    next_activity: int = 0
    next_effort: int = 0
    next_lap: int = 0
    athletes: dict[int, Athlete] = field(default_factory=dict)
    segments: dict[int, list[Segment]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.next_activity = next_id(self.conn, "activities", ACTIVITY_BASE)
        self.next_effort = next_id(self.conn, "efforts", EFFORT_BASE)
        self.next_lap = next_lap_id(self.conn)

    def athlete(self, athlete_id: int) -> Athlete:
        if athlete_id not in self.athletes:
            self.athletes[athlete_id] = load_athlete(self.conn, athlete_id)
        return self.athletes[athlete_id]

    def segments_for(self, athlete: Athlete) -> list[Segment]:
        if athlete.id not in self.segments:
            self.segments[athlete.id] = segments_near(self.conn, athlete)
        return self.segments[athlete.id]


@dataclass
class _Plan:
    """What a recording decided before building the course."""

    sport_type: str
    sport: Sport
    speed: float  # m/s on the flat, with fitness, day form and intensity
    climb_k: float
    workout_type: int | None
    intensity: float
    commute: bool
    hr_frac: float
    power: bool  # a power meter (device_watts)
    ftp: int | None


def record(
    batch: Batch,
    athlete_id: int,
    *,
    seed: int,
    sport_type: str,
    start_ts: int,
    distance: float | None,
    moving_time: int | None,
    name: str | None,
    visibility: str,
    device: bool,
    short: bool,
) -> int:
    """Record one device activity: plan, course, timeline, then efforts, laps and totals read off it."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    athlete = batch.athlete(athlete_id)
    rng = seeded("activity", seed, athlete_id, start_ts, sport_type)
    plan = _plan(rng, athlete, sport_type, start_ts, device, distance is not None or moving_time is not None)
    activity_id = batch.next_activity
    batch.next_activity += 1
    gear_id = _pick_gear(rng, athlete, plan)

    timed = distance == 0 or (plan.sport.distance_km is None and distance is None)
    if plan.sport.distance_km is None and not moving_time:  # time-only sports keep their usual duration
        minutes = rng.uniform(*plan.sport.minutes)
        moving_time = round(min(minutes, 45.0) * 60 if short else minutes * 60)
    if timed:
        tl, points = None, None
        seconds = float(moving_time or rng.uniform(30, 90) * 60)
        seconds = min(seconds, 2700.0) if short else seconds
    else:
        target = _target_distance(rng, plan, distance, moving_time, short)
        course, points = _course(rng, batch, athlete, plan, target)
        tl = Timeline(course, plan.climb_k)
        tl.pauses = _pauses(rng, tl, plan)
        if moving_time or tl.t[-1] < 1:
            tl.scale_time(max(1, moving_time or 1) / tl.t[-1])
        seconds = tl.t[-1]

    lt = local_time(start_ts, athlete.tz)
    hr_on = device and rng.random() < 0.96
    body = _ActivityBuilder(rng, athlete, plan, activity_id, start_ts, lt, tl, seconds, hr_on, device)
    efforts = body.efforts(batch, visibility) if tl else []
    data = body.data(
        seed=seed,
        name=name or _default_name(rng, plan.sport, sport_type, lt.local(start_ts)),
        gear_id=gear_id,
        points=points,
        efforts=efforts,
        laps=body.laps(batch),
        visibility=visibility,
    )
    batch.conn.execute(
        "INSERT INTO activities (id, athlete_id, start_ts, visibility, type, sport_type, gear_id, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (activity_id, athlete_id, start_ts, visibility, sport_family(sport_type), sport_type, gear_id, dumps(data)),
    )
    batch.conn.executemany(
        "INSERT INTO efforts (id, activity_id, athlete_id, segment_id, start_ts, elapsed_time, hidden, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                e["id"],
                activity_id,
                athlete_id,
                e["segment_id"],
                e["start_ts"],
                e["data"]["elapsed_time"],
                int(e["data"]["hidden"]),
                dumps(e["data"]),
            )
            for e in efforts
        ],
    )
    return activity_id


def _plan(
    rng: random.Random, athlete: Athlete, sport_type: str, start_ts: int, device: bool, fixed_size: bool
) -> _Plan:
    """Speed, intensity and sensors for this session, from the sport row, fitness and day form."""
    sport = SPORTS.get(sport_type, FALLBACK_SPORT)
    workout_type = pick(rng, sport.workout_types)
    intensity = _WORKOUT_INTENSITY.get(workout_type, 1.0) if workout_type is not None else 1.0
    form = athlete.fitness(start_ts) * rng.gauss(1.0, 0.025)
    if sport.base == "fixed":
        speed = rng.uniform(*sport.speed) * (0.97 + 0.06 * athlete.ability)
    else:
        speed = athlete.base_speed(sport) * rng.uniform(*sport.speed) * form * intensity
    commute = not fixed_size and sport.segment_type is not None and workout_type in (0, 10) and rng.random() < 0.06
    ftp = athlete.ftp_at(start_ts)
    # A power meter on the road bike and the smart trainer, for athletes who know their FTP.
    meter = sport.power and (sport.indoor or _primary_role(athlete) == "road")
    power = device and sport.legacy_type in ("Ride", "VirtualRide") and ftp is not None and meter
    if sport.distance_km is None:  # a time-only sport given a distance: its pace comes from the duration
        speed = 1.5
    return _Plan(
        sport_type,
        sport,
        speed,
        CLIMB_K[sport.base],
        workout_type,
        intensity,
        commute,
        rng.uniform(*sport.hr_frac) * (1 + (intensity - 1) * 1.5),
        bool(power),
        ftp,
    )


def _primary_role(athlete: Athlete) -> str | None:
    return next(
        (GEAR_ROLES.get(name, "road") for _, kind, name, primary in athlete.gear if kind == "bike" and primary), None
    )


def _pick_gear(rng: random.Random, athlete: Athlete, plan: _Plan) -> str | None:
    """The gear a sport would use: first by preferred role, else the primary of its kind; rarely none."""
    kind = plan.sport.gear
    owned = [g for g in athlete.gear if g[1] == kind]
    if kind is None or not owned or rng.random() < 0.03:
        return None
    roles = ("race",) + plan.sport.gear_roles if plan.workout_type == 1 else plan.sport.gear_roles
    for role in roles:
        match = [g for g in owned if GEAR_ROLES.get(g[2], "road") == role]
        if match:
            return sorted(match, key=lambda g: not g[3])[0][0]
    return next(g[0] for g in owned if g[3])


def _target_distance(
    rng: random.Random, plan: _Plan, distance: float | None, moving_time: int | None, short: bool
) -> float:
    """The distance asked for, or one that fits the time asked for, or a typical one for the sport."""
    if distance is not None:
        return max(float(distance), 10.0)
    if moving_time:
        return moving_time * plan.speed * 0.93
    lo, hi = plan.sport.distance_km or (1.0, 5.0)
    if plan.commute:
        lo, hi = 4.0, min(hi, 14.0)
    elif plan.workout_type == 2:  # long run
        lo = max(lo, hi * 0.7)
        hi = hi * 1.5
    target = (lo + (hi - lo) * rng.random() ** 1.6) * 1000
    return min(target, plan.speed * 2700) if short else target


def _course(
    rng: random.Random, batch: Batch, athlete: Athlete, plan: _Plan, target: float
) -> tuple[list[Leg], list[tuple[float, float]] | None]:
    """Legs of the activity and, outdoors, its GPS track through the chosen segments."""
    sport, region = plan.sport, athlete.region
    home_z = region.elevation
    hills = region.hills * sport.hills * rng.uniform(0.5, 1.2)
    wavelength = rng.uniform(1500, 4000) * max(1.0, sport.hills / 1.5)

    def road(length: float, z0: float, z1: float) -> Leg:
        waves = max(1, round(length / wavelength)) if hills > 0 else 0
        return Leg(length, z0, z1, plan.speed * (0.92 if sport.base == "ride" else 0.97), hills=hills, waves=waves)

    if not sport.gps or plan.sport.indoor:
        return [road(target, home_z, home_z)], None

    segments = (
        []
        if plan.commute or sport.segment_type is None
        else [s for s in batch.segments_for(athlete) if s.activity_type == sport.segment_type]
    )
    chosen = _choose_segments(rng, segments, target, sport)
    chains = _chains(rng, chosen, target, plan.commute)
    spacing = max(40.0, target / 450)
    tracks = []
    for chain in chains:
        pts: list[XY] = [chain[0]]
        for a, b in zip(chain, chain[1:]):
            pts += connector(rng, a, b, spacing) + [b]
        tracks.append(pts)
    road_geom = sum(sum(xy_dist(p, q) for p, q in zip(t, t[1:])) for t in tracks)
    effort_lengths = [s.distance * (1 + rng.gauss(0, 0.003)) for s in chosen]
    scale = max(0.2, (target - sum(effort_lengths)) / road_geom) if road_geom > 0 else 1.0

    legs: list[Leg] = []
    points = [athlete.home]
    z = home_z
    for i, track in enumerate(tracks):
        seg = chosen[i] if i < len(chosen) else None
        next_z = seg.z0 if seg else home_z
        length = max(1.0, sum(xy_dist(p, q) for p, q in zip(track, track[1:])) * scale)
        legs.append(road(length, z, next_z))
        points += [athlete.plane.to_ll(p) for p in track[1:-1]]
        if seg:
            legs.append(_effort_leg(rng, plan, seg, effort_lengths[i]))
            points += seg.points
            z = seg.z1
    end = athlete.home if not plan.commute else athlete.plane.to_ll(tracks[-1][-1])
    points.append(end)
    points = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
    return legs, points


def _effort_leg(rng: random.Random, plan: _Plan, seg: Segment, length: float) -> Leg:
    """A segment ridden a bit harder than the road around it; speed follows grade and day form."""
    push = rng.uniform(1.0, 1.08) * rng.gauss(1.0, 0.035)
    speed = plan.speed * grade_factor(seg.grade, plan.climb_k) * push
    return Leg(length, seg.z0, seg.z1, speed, effort=True, payload=seg)


def _approx_length(route: Sequence[Segment]) -> float:
    """Straight-line length of home → segments → home: good enough to decide what fits."""
    pos, total = (0.0, 0.0), 0.0
    for s in route:
        total += xy_dist(pos, s.start) + s.distance
        pos = s.end
    return total + xy_dist(pos, (0.0, 0.0))


def _bearing(p: XY) -> float:
    return math.atan2(p[0], p[1])


def _choose_segments(rng: random.Random, segments: list[Segment], target: float, sport: Sport) -> list[Segment]:
    """Some segments that fit in the distance, visited in a loop around home."""
    if not segments:
        return []
    wanted = rng.choice((0, 1, 2, 3, 3, 4, 5, 6) if sport.segment_type == "Ride" else (0, 1, 1, 2, 2, 3))
    pool = segments[:]
    rng.shuffle(pool)
    chosen: list[Segment] = []
    for seg in pool:
        if len(chosen) >= wanted:
            break
        trial = sorted(chosen + [seg], key=lambda s: _bearing(s.start))
        if _approx_length(trial) <= 0.9 * target:
            chosen = trial
    return chosen


def _chains(rng: random.Random, chosen: list[Segment], target: float, commute: bool) -> list[list[XY]]:
    """Waypoints of the roads: home → segment → … → home, one detour stretching it to the target."""
    home = (0.0, 0.0)
    if commute:
        return [[home, offset(home, rng.uniform(0, 360), target * 0.93)]]
    if not chosen:
        side, heading = target / 3.2, rng.uniform(0, 360)
        p1 = offset(home, heading, side)
        return [[home, p1, offset(p1, heading + 120, side), home]]
    stops = [home] + [p for s in chosen for p in (s.start, s.end)] + [home]
    chains = [[stops[i], stops[i + 1]] for i in range(0, len(stops), 2)]
    missing = target * 0.97 - _approx_length(chosen)
    if missing > 0:
        longest = max(chains, key=lambda c: xy_dist(*c))
        a, b = longest
        c = max(1.0, xy_dist(a, b))
        h = math.sqrt(max(0.0, ((c + missing) / 2) ** 2 - (c / 2) ** 2))
        mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
        ux, uy = ((b[0] - a[0]) / c, (b[1] - a[1]) / c) if c > 1 else (1.0, 0.0)
        side = rng.choice((-1, 1))
        longest.insert(1, (mid[0] - uy * h * side, mid[1] + ux * h * side))
    return chains


def _pauses(rng: random.Random, tl: Timeline, plan: _Plan) -> list[tuple[float, int]]:
    """Stops (lights, café, shoelaces) on the roads, never inside a segment."""
    roads = [(b0, b1) for leg, (b0, b1) in zip(tl.legs, tl.bounds) if not leg.effort and b1 - b0 > 200]
    if not roads:
        return []
    if plan.sport.base == "ride":
        count, secs = int(tl.distance // 25_000) + (rng.random() < 0.5), (20, 300)
    else:
        count, secs = rng.randint(0, 2), (10, 90)
    out = []
    for _ in range(count if not plan.sport.indoor else int(rng.random() < 0.3)):
        b0, b1 = rng.choice(roads)
        out.append((rng.uniform(b0 + 50, b1 - 50), rng.randint(*secs)))
    if plan.sport.base == "ride" and tl.distance > 70_000 and rng.random() < 0.5:
        b0, b1 = rng.choice(roads)
        out.append((rng.uniform(b0 + 50, b1 - 50), rng.randint(900, 1800)))
    return sorted(out)


def _default_name(rng: random.Random, sport: Sport, sport_type: str, local_iso: str) -> str:
    legacy = sport_family(sport_type)
    if (legacy == "VirtualRide" and rng.random() < 0.6) or rng.random() < 0.12:
        return rng.choice(CUSTOM_NAMES.get(legacy, CUSTOM_NAMES["other"]))
    hour = int(local_iso[11:13])
    part = [word for first, word in DAY_PARTS if hour >= first][-1]
    noun = sport.noun if sport_type in SPORTS else sport_type  # unknown sport types name themselves
    return f"{part} {noun}"


def _hr(leg: Leg) -> float:
    """A leg's heart rate (_ActivityBuilder._set_leg_intensity sets one on every leg of the timeline)."""
    assert leg.hr is not None
    return leg.hr


def _watts(leg: Leg) -> float:
    """A leg's power (_ActivityBuilder._set_leg_intensity sets it on every leg of the timeline)."""
    assert leg.watts is not None
    return leg.watts


class _ActivityBuilder:
    """Reads everything an activity reports off its timeline, so parts and totals agree."""

    def __init__(
        self,
        rng: random.Random,
        athlete: Athlete,
        plan: _Plan,
        activity_id: int,
        start_ts: int,
        lt: LocalTime,
        tl: Timeline | None,
        seconds: float,
        hr_on: bool,
        device: bool,
    ) -> None:
        self.rng, self.athlete, self.plan, self.id, self.start_ts, self.lt, self.tl = (
            rng,
            athlete,
            plan,
            activity_id,
            start_ts,
            lt,
            tl,
        )
        self.hr_on, self.device = hr_on, device
        self.moving_time = tl.sec(tl.distance) if tl else round(seconds)
        self.elapsed_time = tl.clock(tl.distance) if tl else self.moving_time + rng.choice((0, 0, 30, 120))
        self.is_ride = plan.sport.legacy_type in ("Ride", "VirtualRide")
        self.cadence = rng.uniform(*plan.sport.cadence) if device and plan.sport.cadence else None
        self.spike = rng.uniform(1.05, 1.2) if plan.sport.indoor else rng.uniform(1.1, 1.3)
        self._set_leg_intensity()
        avg = self._avg("watts", 0.0, tl.distance) if tl else None
        self.device_watts, self.average_watts = self._watts_fields(avg)
        variability = rng.uniform(1.01, 1.05) if plan.sport.indoor else rng.uniform(1.04, 1.12)
        self.np_watts = self.average_watts * variability if self.device_watts and self.average_watts else None

    def _set_leg_intensity(self) -> None:
        """Heart rate and power per leg: roads at the session's intensity, segments near threshold."""
        rng, plan, tl, max_hr = self.rng, self.plan, self.tl, self.athlete.data["max_hr"]
        ftp = plan.ftp or self.athlete.data["weight"] * 2.6
        self.timed_hr = max_hr * plan.hr_frac
        if tl is None:
            return
        for leg, (b0, b1) in zip(tl.legs, tl.bounds):
            secs = max(1e-6, tl.moving(b1) - tl.moving(b0))
            if leg.effort:
                minutes = secs / 60
                leg.hr = max_hr * rng.uniform(0.84, 0.93)
                band = (1.05, 1.25) if minutes < 5 else (0.95, 1.05) if minutes < 20 else (0.85, 0.95)
                leg.watts = ftp * rng.uniform(*band)
            else:
                leg.hr = max_hr * plan.hr_frac * rng.gauss(1.0, 0.015)
                leg.watts = ftp * rng.uniform(0.58, 0.7) * plan.intensity
            if self.is_ride and not plan.power:
                leg.watts = self._estimated_watts(leg.length / secs, (tl.gained(b1) - tl.gained(b0)) / secs)

    def _estimated_watts(self, v: float, climb_rate: float) -> float:
        """What the service estimates without a power meter: rolling, air and climbing resistance."""
        mass = self.athlete.data["weight"] + 9.0
        crr = _ROLLING.get(self.plan.sport_type, 0.006)
        return mass * 9.81 * (crr * v + climb_rate) + 0.5 * 1.2 * 0.32 * v**3

    # -- parts ------------------------------------------------------------------------------------------

    def _leg_parts(self, x0: float, x1: float) -> list[tuple[Leg, float]]:
        return self.tl.leg_times(x0, x1) if self.tl else []

    def _avg(self, attr: str, x0: float, x1: float) -> float | None:
        return weighted((getattr(leg, attr), secs) for leg, secs in self._leg_parts(x0, x1))

    def _watts_fields(self, avg: float | None) -> tuple[bool, float | None]:
        if not self.is_ride or avg is None or not self.device:
            return False, None
        return self.plan.power, round(avg, 1)

    def efforts(self, batch: Batch, visibility: str) -> list[dict[str, Any]]:
        """One effort per segment leg, ranked against the efforts stored before it."""
        out = []
        tl, rng = self.tl, self.rng
        assert tl is not None  # record() asks for efforts only when the activity has a timeline
        for leg, (b0, b1) in zip(tl.legs, tl.bounds):
            if not leg.effort:
                continue
            seg: Segment = leg.payload
            elapsed = max(1, tl.sec(b1) - tl.sec(b0))
            start_ts = self.start_ts + tl.clock(b0)
            hidden = rng.random() < 0.02
            pr_rank, kom_rank = (
                (None, None) if hidden else _ranks(batch.conn, seg, self.athlete.id, start_ts, elapsed, visibility)
            )
            device_watts, watts = self._watts_fields(leg.watts)
            cadence = self.cadence and self.cadence - (4 if self.is_ride and seg.grade >= 3 else 0) + rng.gauss(0, 1.5)
            data = {
                "name": seg.name,
                "elapsed_time": elapsed,
                "moving_time": elapsed,
                "start_date": iso(start_ts),
                "start_date_local": self.lt.local(start_ts),
                "distance": round(leg.length, 1),
                "start_index": tl.sec(b0),
                "end_index": tl.sec(b1),
                "average_cadence": round(cadence, 1) if cadence else None,
                "device_watts": device_watts,
                "average_watts": watts,
                "average_heartrate": round(_hr(leg), 1) if self.hr_on else None,
                "max_heartrate": round(min(self.athlete.data["max_hr"], _hr(leg) + rng.uniform(3, 10)))
                if self.hr_on
                else None,
                "kom_rank": kom_rank,
                "pr_rank": pr_rank,
                "achievements": _achievements(pr_rank, kom_rank),
                "hidden": hidden,
            }
            out.append({"id": batch.next_effort, "segment_id": seg.id, "start_ts": start_ts, "data": data})
            batch.next_effort += 1
        return out

    def _lap_cuts(self, tl: Timeline) -> list[float]:
        sport = self.plan.sport
        feet = self.athlete.data["measurement_preference"] == "feet"
        every = {"ride": 8046.72 if feet else 10_000.0, "run": 1609.344 if feet else 1000.0}.get(sport.base)
        if every is None or self.rng.random() < 0.3:
            return [0.0, tl.distance]
        return cut_points(tl.distance, every)

    def laps(self, batch: Batch) -> list[dict[str, Any]]:
        """Auto-laps by the athlete's unit (or one lap); they partition the totals exactly."""
        tl = self.tl
        ref = {
            "activity": {"id": self.id, "resource_state": 1},
            "athlete": {"id": self.athlete.id, "resource_state": 1},
        }
        rows: list[dict[str, Any]]
        if tl is None:
            rows = [
                dict(
                    distance=0.0,
                    elapsed=self.elapsed_time,
                    moving=self.moving_time,
                    clock=0,
                    i0=0,
                    i1=self.moving_time,
                    gain=0.0,
                    max_speed=0.0,
                    watts=None,
                    x0=None,
                    x1=None,
                )
            ]
        else:
            points = self._lap_cuts(tl)
            rows = [
                dict(
                    distance=round(round(b1, 1) - round(b0, 1), 1),
                    elapsed=tl.clock(b1) - tl.clock(b0),
                    moving=tl.sec(b1) - tl.sec(b0),
                    clock=tl.clock(b0),
                    i0=tl.sec(b0),
                    i1=tl.sec(b1),
                    gain=round(tl.gained(b1) - tl.gained(b0), 1),
                    max_speed=round(tl.max_speed(b0, b1) * self.spike, 1),
                    watts=self._avg("watts", b0, b1),
                    x0=b0,
                    x1=b1,
                )
                for b0, b1 in zip(points, points[1:])
            ]
        out = []
        for n, row in enumerate(rows, start=1):
            device_watts, watts = self._watts_fields(row["watts"])
            out.append(
                {
                    "id": batch.next_lap,
                    "resource_state": 2,
                    "name": f"Lap {n}",
                    **ref,
                    "elapsed_time": row["elapsed"],
                    "moving_time": row["moving"],
                    "start_date": iso(self.start_ts + row["clock"]),
                    "start_date_local": self.lt.local(self.start_ts + row["clock"]),
                    "distance": row["distance"],
                    "start_index": row["i0"],
                    "end_index": row["i1"],
                    "total_elevation_gain": row["gain"],
                    "average_speed": round(row["distance"] / row["moving"], 2) if row["moving"] else 0.0,
                    "max_speed": row["max_speed"],
                    "average_cadence": round(self.cadence + self.rng.gauss(0, 1.2), 1) if self.cadence else None,
                    "device_watts": device_watts,
                    "average_watts": watts,
                    **self._heart_rate(row["x0"], row["x1"], with_max=True, seconds=row["moving"]),
                    "lap_index": n,
                    "split": n,
                }
            )
            batch.next_lap += 1
        return out

    def splits(self) -> list[dict[str, Any]]:
        """Per-kilometre splits; they partition distance, moving and elapsed time exactly."""
        tl = self.tl
        if tl is None:
            return []
        out = []
        points = cut_points(tl.distance, 1000.0)
        threshold = self.athlete.base_speed(SPORTS["Run"]) * self.athlete.fitness(self.start_ts) * 1.12
        for n, (b0, b1) in enumerate(zip(points, points[1:]), start=1):
            dist = round(round(b1, 1) - round(b0, 1), 1)
            moving = tl.sec(b1) - tl.sec(b0)
            speed = dist / moving if moving else 0.0
            out.append(
                {
                    "distance": dist,
                    "elapsed_time": tl.clock(b1) - tl.clock(b0),
                    "elevation_difference": round(tl.elev(b1) - tl.elev(b0), 1),
                    "moving_time": moving,
                    "split": n,
                    "average_speed": round(speed, 2),
                    **self._heart_rate(b0, b1, with_max=False),
                    "pace_zone": _pace_zone(speed / threshold) if self.plan.sport.base == "run" else 0,
                }
            )
        return out

    def _heart_rate(
        self, x0: float | None, x1: float | None, *, with_max: bool, seconds: int | None = None
    ) -> dict[str, Any]:
        """A split's or lap's heart rate, as the real service sends it (the spec is silent): time-weighted over the
        legs it spans; the lap's highest a few beats above its hardest leg, its average in a lap of one moving
        second or none (one sample is its own highest). Nothing without a heart-rate sensor."""
        if not self.hr_on:
            return {}
        parts = self._leg_parts(x0, x1) if x0 is not None and x1 is not None else []
        average = weighted((leg.hr, secs) for leg, secs in parts) if parts else self.timed_hr
        assert average is not None  # every leg has a heart rate, and a part of a leg has moving time
        out = {"average_heartrate": round(average, 1)}
        if with_max:
            top = max((_hr(leg) for leg, _ in parts), default=average)
            out["max_heartrate"] = float(round(min(self.athlete.data["max_hr"], top + 4)))
            if seconds is not None and seconds <= 1:
                out["max_heartrate"] = float(round(average))
        return out

    def zones(self) -> tuple[list[dict[str, Any]], int | None]:
        """The activity's zone distributions (moving time only) and the suffer score from HR."""
        out: list[dict[str, Any]] = []
        suffer = None
        x1 = self.tl.distance if self.tl else 0.0
        parts = self._leg_parts(0.0, x1)
        if self.hr_on:
            zones = self.athlete.data["hr_zones"]
            hr_parts = [(secs, _hr(leg), 7.0, 0.0) for leg, secs in parts]
            hr_parts = hr_parts or [(self.moving_time, self.timed_hr, 9.0, 0.0)]
            times = round_to_total(spread(hr_parts, [z["max"] for z in zones[:-1]]), self.moving_time)
            suffer = round(sum(t / 3600 * w for t, w in zip(times, SUFFER_PER_HOUR)))
            out.append(_zone("heartrate", suffer, round(sum(times[3:]) / 60), zones, times))
        if self.plan.power and parts:
            ftp = self.plan.ftp
            assert ftp is not None  # a power meter only for an athlete with an FTP (_plan)
            buckets = power_zones(ftp)
            edges = [b["max"] for b in buckets[:-1]]
            sd, zero = (0.15, 0.01) if self.plan.sport.indoor else (0.28, 0.08)
            times = round_to_total(
                spread([(secs, _watts(leg), _watts(leg) * sd, zero) for leg, secs in parts], edges), self.moving_time
            )
            tss = round(self.moving_time / 3600 * ((self.np_watts or 0.0) / ftp) ** 2 * 100)
            out.append(_zone("power", tss, round(sum(times[4:]) / 60), buckets, times))
        return out, suffer

    # -- the whole ------------------------------------------------------------------------------------

    def data(
        self,
        *,
        seed: int,
        name: str,
        gear_id: str | None,
        points: list[tuple[float, float]] | None,
        efforts: list[dict[str, Any]],
        laps: list[dict[str, Any]],
        visibility: str,
    ) -> dict[str, Any]:
        rng, plan, sport, tl, athlete = self.rng, self.plan, self.plan.sport, self.tl, self.athlete
        distance = round(tl.distance, 1) if tl else 0.0
        device_watts, avg_watts = self.device_watts, self.average_watts
        zones, suffer = self.zones()
        avg_hr = (self._avg("hr", 0.0, tl.distance) if tl else self.timed_hr) if self.hr_on else None
        peak_hr = min(athlete.data["max_hr"], max(_hr(leg) for leg in tl.legs) if tl else self.timed_hr)
        peak_hr = max([peak_hr + rng.uniform(4, 12)] + [e["data"]["max_heartrate"] or 0 for e in efforts])
        kilojoules = round(avg_watts * self.moving_time / 1000, 1) if avg_watts is not None else None
        weight = athlete.data["weight"]
        met_kcal = sport.met * plan.intensity * weight * self.moving_time / 3600
        calories = round(kilojoules * rng.uniform(0.95, 1.1) if kilojoules else met_kcal, 1)
        achievements = sum(len(e["data"]["achievements"]) for e in efforts)
        elevations = tl.z if tl is not None and (sport.gps or sport.hills > 0) else None
        kudos_max = {"everyone": 30, "followers_only": 12, "only_me": 0}[visibility]
        device_name = (INDOOR_APPS.get(sport.sport_type) or _device_for(athlete, sport)) if self.device else PHONE_APP
        out = {
            "external_id": _external_id(rng, device_name) if self.device else None,
            "upload_id": self.id + 5_000_000_000,
            "name": name,
            "description": rng.choice(DESCRIPTIONS) if rng.random() < 0.2 else None,
            "distance": distance,
            "moving_time": self.moving_time,
            "elapsed_time": self.elapsed_time,
            "total_elevation_gain": round(tl.gained(tl.distance), 1) if tl else 0.0,
            "type": sport_family(plan.sport_type),
            "sport_type": plan.sport_type,
            "workout_type": plan.workout_type,
            "start_date": iso(self.start_ts),
            "start_date_local": self.lt.local(self.start_ts),
            "timezone": self.lt.timezone,
            "utc_offset": self.lt.utc_offset,
            "start_latlng": list(points[0]) if points else None,
            "end_latlng": list(points[-1]) if points else None,
            "location_city": athlete.region.city if points else None,
            "location_state": athlete.region.state if points else None,
            "location_country": athlete.region.country,
            "achievement_count": achievements,
            "kudos_count": int(kudos_max * rng.random() ** 2),
            "comment_count": rng.choice((0, 0, 0, 1, 2)) if kudos_max else 0,
            "athlete_count": rng.randint(2, 12) if points and sport.segment_type and rng.random() < 0.12 else 1,
            "photo_count": 0,
            "total_photo_count": rng.randint(1, 4) if points and rng.random() < 0.15 else 0,
            "pr_count": sum(1 for e in efforts if e["data"]["pr_rank"] == 1),
            "map": _map(self.id, points),
            "trainer": sport.indoor and sport.legacy_type in ("VirtualRide", "VirtualRun"),
            "commute": plan.commute,
            "manual": False,
            "flagged": False,
            "gear_id": gear_id,
            "from_accepted_tag": False,
            "average_speed": round(distance / self.moving_time, 3) if self.moving_time else 0.0,
            "max_speed": max((lap["max_speed"] for lap in laps), default=0.0),
            "average_cadence": round(self.cadence, 1) if self.cadence else None,
            "average_temp": _temperature(rng, athlete.region, sport, self.start_ts) if self.device else None,
            "average_watts": avg_watts,
            "weighted_average_watts": round(self.np_watts) if self.np_watts else None,
            "kilojoules": kilojoules,
            "device_watts": device_watts,
            "max_watts": round(plan.ftp * rng.uniform(2.0, 3.3)) if device_watts and plan.ftp else None,
            "has_heartrate": self.hr_on,
            "average_heartrate": round(avg_hr, 1) if avg_hr else None,
            "max_heartrate": round(min(athlete.data["max_hr"], peak_hr)) if self.hr_on else None,
            "elev_high": round(max(elevations), 1) if elevations is not None else None,
            "elev_low": round(min(elevations), 1) if elevations is not None else None,
            "suffer_score": suffer,
            "calories": calories,
            "has_kudoed": False,
            "hide_from_home": plan.commute and rng.random() < 0.3,
            "device_name": device_name,
            "embed_token": hashlib.sha1(f"{seed}:{self.id}".encode()).hexdigest(),
            "partner_brand_tag": None,
            "segment_leaderboard_opt_out": False,
            "leaderboard_opt_out": False,
            "splits_metric": self.splits(),
            "laps": laps,
            "zones": zones,
        }
        derive(self.id, out, [e["data"] for e in efforts], plan.ftp)  # as the service reads them off the recording
        return out


def _zone(
    kind: str, score: int, points: int, buckets: Sequence[Mapping[str, float]], times: list[int]
) -> dict[str, Any]:
    return {
        "score": score,
        "distribution_buckets": [{"min": b["min"], "max": b["max"], "time": t} for b, t in zip(buckets, times)],
        "type": kind,
        "resource_state": 3,
        "sensor_based": True,
        "points": points,
        "custom_zones": False,
    }


def pace_zones(
    conn: sqlite3.Connection, athlete_id: int, start_ts: float, data: dict[str, Any]
) -> dict[str, Any] | None:
    """The real service's pace distribution of a run with GPS (time per pace zone, from its splits' pace zones; the
    bounds in m/s), or None for anything else. A run without a heart-rate strap has only this one."""
    sport, splits = SPORTS.get(str(data.get("sport_type"))), data.get("splits_metric") or []
    if sport is None or sport.base != "run" or not data.get("start_latlng") or not splits:
        return None
    athlete = load_athlete(conn, athlete_id)
    threshold = athlete.base_speed(SPORTS["Run"]) * athlete.fitness(start_ts) * 1.12
    edges = [round(r * threshold, 2) for r in _PACE_ZONE_RATIOS]
    buckets = [{"min": low, "max": high} for low, high in zip([0, *edges], [*edges, -1])]
    times = [0] * len(buckets)
    for split in splits:
        times[min(max(int(split["pace_zone"]), 1), len(buckets)) - 1] += int(split["moving_time"])
    return _zone("pace", 0, 0, buckets, times)


def _pace_zone(ratio: float) -> int:
    return next((i + 1 for i, edge in enumerate(_PACE_ZONE_RATIOS) if ratio < edge), len(_PACE_ZONE_RATIOS) + 1)


def _map(activity_id: int, points: list[tuple[float, float]] | None) -> dict[str, Any]:
    if not points:
        return {"id": f"a{activity_id}", "polyline": None, "summary_polyline": "", "resource_state": 3}
    return {
        "id": f"a{activity_id}",
        "polyline": polyline.encode(thin(points, _POLYLINE_POINTS), 5),
        "summary_polyline": polyline.encode(thin(points, _SUMMARY_POINTS), 5),
        "resource_state": 3,
    }


def _device_for(athlete: Athlete, sport: Sport) -> str:
    """Each athlete owns one bike computer and one watch (stable per athlete)."""
    rng = seeded("devices", athlete.id)
    computer, watch = rng.choice(BIKE_COMPUTERS), rng.choice(WATCHES)
    return computer if sport.base == "ride" and athlete.data["athlete_type"] == 0 else watch


def _external_id(rng: random.Random, device_name: str) -> str:
    n = rng.getrandbits(40)
    if device_name.startswith("Garmin"):
        return f"garmin_ping_{n}"
    if device_name == "Zwift":
        return f"zwift-activity-{n}.fit"
    return f"{n:x}.fit"


def _temperature(rng: random.Random, region: Region, sport: Sport, ts: int) -> int:
    if sport.indoor:
        return round(rng.gauss(21, 1))
    day = (ts / 86400.0) % 365.25
    return round(region.temp_mean + region.temp_swing * math.cos(2 * math.pi * (day - 196) / 365.25) + rng.gauss(0, 3))


def _ranks(
    conn: sqlite3.Connection, seg: Segment, athlete_id: int, start_ts: int, elapsed: int, visibility: str
) -> tuple[int | None, int | None]:
    """PR and leaderboard rank against the efforts stored with an earlier start (ties go to the earlier)."""
    earlier_as_good = conn.execute(
        "SELECT COUNT(*) FROM efforts WHERE segment_id = ? AND athlete_id = ? AND hidden = 0 AND start_ts < ?"
        " AND elapsed_time <= ?",
        (seg.id, athlete_id, start_ts, elapsed),
    ).fetchone()[0]
    pr_rank = earlier_as_good + 1 if earlier_as_good < 3 else None
    if visibility == "only_me" or seg.hazardous:
        return pr_rank, None
    board = dict(
        conn.execute(
            "SELECT e.athlete_id, MIN(e.elapsed_time) FROM efforts e JOIN activities a ON a.id = e.activity_id"
            " WHERE e.segment_id = ? AND e.hidden = 0 AND e.start_ts < ? AND a.visibility != 'only_me'"
            " GROUP BY e.athlete_id",
            (seg.id, start_ts),
        ).fetchall()
    )
    if board.get(athlete_id, math.inf) <= elapsed:
        return pr_rank, None  # not a new best: the athlete's leaderboard entry is an older effort
    rank = 1 + sum(1 for other, best in board.items() if other != athlete_id and best <= elapsed)
    return pr_rank, rank if rank <= 10 else None


def _achievements(pr_rank: int | None, kom_rank: int | None) -> list[dict[str, Any]]:
    out = []
    if kom_rank:
        out.append({"type_id": 2, "type": "overall", "rank": kom_rank})
    if pr_rank:
        out.append({"type_id": 3, "type": "pr", "rank": pr_rank})
    return out


def manual_activity(
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
) -> int:
    """Insert what POST /activities creates; the caller holds the transaction."""
    athlete = load_athlete(conn, athlete_id)
    zone = ZoneInfo(athlete.tz)
    local = start_date_local if start_date_local.tzinfo else start_date_local.replace(tzinfo=zone)
    start_ts = epoch(local.replace(microsecond=0))
    lt = local_time(start_ts, athlete.tz)
    sport = SPORTS.get(sport_type, FALLBACK_SPORT)
    legacy = sport_family(sport_type) if sport_type in SPORT_TYPES else (type or sport_type)
    dist = float(distance or 0.0)
    activity_id = next_id(conn, "activities", ACTIVITY_BASE)
    primary = [g for g in athlete.gear if g[1] == sport.gear and g[3]]
    gear_id = primary[0][0] if primary else None
    data = {
        "external_id": None,
        "upload_id": None,
        "name": name,
        "description": description,
        "distance": dist,
        "moving_time": elapsed_time,
        "elapsed_time": elapsed_time,
        "total_elevation_gain": 0.0,
        "type": legacy,
        "sport_type": sport_type,
        "workout_type": None,
        "start_date": iso(start_ts),
        "start_date_local": lt.local(start_ts),
        "timezone": lt.timezone,
        "utc_offset": lt.utc_offset,
        "start_latlng": None,
        "end_latlng": None,
        "location_city": None,
        "location_state": None,
        "location_country": None,
        "achievement_count": 0,
        "kudos_count": 0,
        "comment_count": 0,
        "athlete_count": 1,
        "photo_count": 0,
        "total_photo_count": 0,
        "pr_count": 0,
        "map": _map(activity_id, None),
        "trainer": bool(trainer),
        "commute": bool(commute),
        "manual": True,
        "flagged": False,
        "gear_id": gear_id,
        "from_accepted_tag": False,
        "average_speed": round(dist / elapsed_time, 3) if elapsed_time else 0.0,
        "max_speed": 0.0,
        "average_cadence": None,
        "average_temp": None,
        "average_watts": None,
        "weighted_average_watts": None,
        "kilojoules": None,
        "device_watts": False,
        "max_watts": None,
        "has_heartrate": False,
        "average_heartrate": None,
        "max_heartrate": None,
        "elev_high": None,
        "elev_low": None,
        "suffer_score": None,
        "calories": round(sport.met * athlete.data["weight"] * elapsed_time / 3600, 1),
        "has_kudoed": False,
        "hide_from_home": False,
        "device_name": None,
        "embed_token": hashlib.sha1(f"manual:{activity_id}:{start_ts}".encode()).hexdigest(),
        "partner_brand_tag": None,
        "segment_leaderboard_opt_out": False,
        "leaderboard_opt_out": False,
        "splits_metric": [],
        "laps": [],
        "zones": [],
    }
    conn.execute(
        "INSERT INTO activities (id, athlete_id, start_ts, visibility, type, sport_type, gear_id, data)"
        " VALUES (?, ?, ?, 'everyone', ?, ?, ?, ?)",
        (activity_id, athlete_id, start_ts, legacy, sport_type, gear_id, dumps(data)),
    )
    return activity_id
