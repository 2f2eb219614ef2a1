"""Athletes (profile, gear, HR zones, FTP history), their home regions' segments and their stars."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polyline

from .world_common import (
    ATHLETE_BASE,
    MIN_CLIMB_GRADE,
    SEGMENT_BASE,
    UTC,
    box,
    climb_category,
    dumps,
    epoch,
    iso,
    next_gear_number,
    next_id,
    pick,
    seeded,
)
from .world_course import XY, Plane, offset, path_length, wander
from .world_tables import (
    BIKES,
    FIRST_NAMES,
    KIND_MIX,
    LAST_NAMES,
    PRIVATE_SEGMENT_NAMES,
    REGIONS,
    REGIONS_BY_NAME,
    SHOES,
    Region,
    SegmentSpec,
    Sport,
)

_HR_ZONE_SHARES = (0.65, 0.81, 0.89, 0.97)  # of max HR: upper bounds of zones 1-4
_YEAR = 365.25 * 86400


@dataclass
class Athlete:
    """An athlete as the generator needs it: stored data plus derived, never-stored traits."""

    id: int
    data: dict[str, Any]
    gear: list[tuple[str, str, str, bool]]  # (id, kind, name, primary)
    region: Region
    plane: Plane
    created_ts: int
    trend: float  # fitness gain per year
    season: float  # amplitude of the yearly fitness wave
    peak_day: float  # day of year of best form
    ability: float  # 0..1, for speeds not tied to FTP

    @property
    def home(self) -> tuple[float, float]:
        return (self.data["home"]["lat"], self.data["home"]["lng"])

    @property
    def tz(self) -> str:
        return self.data["home"]["timezone"]

    def fitness(self, ts: float) -> float:
        """Slow improvement plus a seasonal wave: what makes PRs happen over the years."""
        years = min(5.0, max(0.0, (ts - self.created_ts) / _YEAR))
        day = (ts / 86400.0) % 365.25
        return 1.0 + self.trend * years + self.season * math.cos(2 * math.pi * (day - self.peak_day) / 365.25)

    def ftp_at(self, ts: float) -> int | None:
        history = self.data.get("ftp_history") or []
        if not history:
            return None
        day = datetime.fromtimestamp(ts, UTC).date().isoformat()
        current = history[0]["ftp"]
        for entry in history:
            if entry["from"] <= day:
                current = entry["ftp"]
        return current

    def base_speed(self, sport: Sport) -> float:
        """Speed on the flat for the sport's base ('ride'/'run') before fitness and day form."""
        history = self.data.get("ftp_history") or []
        if sport.base == "ride":
            if history:
                return 4.9 + 1.05 * history[0]["ftp"] / self.data["weight"]
            return 6.0 + 0.9 * self.ability
        if self.data["athlete_type"] == 1:
            return 3.0 + 1.1 * self.ability
        return 2.5 + 0.6 * self.ability


def _traits(athlete_id: int, created_at: str, lat: float) -> dict[str, float]:
    """Per-athlete traits derived from stable stored facts, so nothing extra has to be stored."""
    rng = seeded("traits", athlete_id, created_at)
    return {
        "trend": rng.uniform(0.012, 0.04),
        "season": rng.uniform(0.015, 0.03),
        "peak_day": (200.0 if lat >= 0 else 20.0) + rng.uniform(-30, 30),
        "ability": rng.random(),
    }


def load_athlete(conn: sqlite3.Connection, athlete_id: int) -> Athlete:
    row = conn.execute("SELECT id, data FROM athletes WHERE id = ?", (athlete_id,)).fetchone()
    if row is None:
        raise LookupError(f"no athlete {athlete_id}")
    data = json.loads(row["data"])
    gear = [
        (g["id"], g["kind"], g["name"], bool(g["is_primary"]))
        for g in conn.execute("SELECT * FROM gear WHERE athlete_id = ? ORDER BY id", (athlete_id,))
    ]
    home = data["home"]
    created_ts = int(datetime.fromisoformat(data["created_at"].replace("Z", "+00:00")).timestamp())
    region = REGIONS_BY_NAME.get(home["region"]) or REGIONS[0]
    return Athlete(
        athlete_id,
        data,
        gear,
        region,
        Plane(home["lat"], home["lng"]),
        created_ts,
        **_traits(athlete_id, data["created_at"], home["lat"]),
    )


def _hr_zones(max_hr: int) -> list[dict[str, int]]:
    edges = [round(max_hr * s) for s in _HR_ZONE_SHARES]
    lows = [0] + edges
    return [{"min": lo, "max": hi} for lo, hi in zip(lows, edges + [-1])]


def _username(first: str, last: str, athlete_id: int) -> str:
    ascii_name = unicodedata.normalize("NFKD", f"{first}{last[:1]}").encode("ascii", "ignore").decode()
    return "".join(c for c in ascii_name.lower() if c.isalnum()) + str(athlete_id % 1000)


def create_athlete(
    conn: sqlite3.Connection,
    *,
    seed: int,
    now: datetime,
    firstname: str | None = None,
    lastname: str | None = None,
    premium: bool = True,
    sex: str | None = None,
    measurement_preference: str | None = None,
    region: str | None = None,
    kind: str | None = None,
    created: datetime | None = None,
    private_segment: bool | None = None,
) -> int:
    """Insert an athlete with gear; create its region's segments if it is the first one there; star some.

    `created` backdates the account (seed_world); `kind` is cyclist, runner or runner_only.
    """
    rng = seeded("athlete", seed)
    if region is not None and region not in REGIONS_BY_NAME:
        raise ValueError(f"unknown region {region!r}; known: {', '.join(REGIONS_BY_NAME)}")
    home_region = REGIONS_BY_NAME[region] if region else rng.choice(REGIONS)
    kind = kind or pick(rng, KIND_MIX)
    sex = sex or rng.choice("MF")
    first = firstname or rng.choice(FIRST_NAMES.get(sex, FIRST_NAMES["F"]))
    last = lastname or rng.choice(LAST_NAMES)
    us = home_region.country == "United States"
    pref = measurement_preference or ("feet" if rng.random() < (0.75 if us else 0.1) else "meters")
    created = created or now
    now_ts, created_ts = epoch(now), epoch(created)
    athlete_id = next_id(conn, "athletes", ATHLETE_BASE)

    home_xy = offset((0.0, 0.0), rng.uniform(0, 360), rng.uniform(500, 3000))
    home_lat, home_lng = Plane(home_region.lat, home_region.lng).to_ll(home_xy)
    created_at = iso(created_ts)
    weight = round(rng.gauss(73 if sex == "M" else 61, 6), 1)
    max_hr = rng.randint(172, 198)
    ftp_history = _ftp_history(rng, athlete_id, created_at, home_lat, weight, kind, created_ts, now_ts)

    data: dict[str, Any] = {
        "username": _username(first, last, athlete_id),
        "firstname": first,
        "lastname": last,
        "city": home_region.city,
        "state": home_region.state,
        "country": home_region.country,
        "sex": sex,
        "created_at": created_at,
        "updated_at": iso(now_ts),
        "badge_type_id": 1 if premium else 0,
        "profile_medium": f"https://sandbox.invalid/pictures/athletes/{athlete_id}/medium.jpg",
        "profile": f"https://sandbox.invalid/pictures/athletes/{athlete_id}/large.jpg",
        "friend": None,
        "follower": None,
        "follower_count": rng.randint(0, 250),
        "friend_count": rng.randint(0, 250),
        "mutual_friend_count": 0,
        "athlete_type": 0 if kind == "cyclist" else 1,
        "date_preference": "%m/%d/%Y",
        "measurement_preference": pref,
        "clubs": [],
        "ftp": ftp_history[-1]["ftp"] if ftp_history else None,
        "weight": weight,
        "home": {"region": home_region.name, "lat": home_lat, "lng": home_lng, "timezone": home_region.timezone},
        "hr_zones": _hr_zones(max_hr),
        "ftp_history": ftp_history,
        "max_hr": max_hr,
    }
    data["mutual_friend_count"] = rng.randint(0, min(data["follower_count"], data["friend_count"]))
    conn.execute("INSERT INTO athletes (id, premium, data) VALUES (?, ?, ?)", (athlete_id, int(premium), dumps(data)))
    _add_gear(conn, rng, athlete_id, kind)

    _ensure_region_segments(conn, home_region, seed, now_ts)
    if private_segment is None:
        private_segment = rng.random() < 0.5
    if private_segment:
        _add_private_segment(conn, rng, athlete_id, kind, home_region, (home_lat, home_lng), created_ts, now_ts)
    _add_stars(conn, rng, athlete_id, home_region, created_ts, now_ts)
    return athlete_id


def _ftp_history(
    rng: random.Random,
    athlete_id: int,
    created_at: str,
    lat: float,
    weight: float,
    kind: str,
    created_ts: int,
    now_ts: int,
) -> list[dict[str, Any]]:
    """FTP tests over the years, following the athlete's fitness curve; none for runners."""
    if kind != "cyclist":
        return []
    traits = _traits(athlete_id, created_at, lat)
    probe = Athlete(athlete_id, {}, [], REGIONS[0], Plane(lat, 0), created_ts, **traits)
    base = weight * rng.uniform(2.4, 4.3)
    days = (now_ts - created_ts) // 86400
    count = min(5, days // 240)  # roughly one test every 8 months, spread over the years
    tests = [created_ts] + [
        created_ts + int((k + rng.uniform(0.6, 1.2)) * (days - 14) / (count + 1)) * 86400 for k in range(count)
    ]
    out: list[dict[str, Any]] = []
    for ts in tests:
        ftp = base * probe.fitness(ts) / probe.fitness(created_ts) * rng.gauss(1.0, 0.015)
        entry = {"from": datetime.fromtimestamp(ts, UTC).date().isoformat(), "ftp": round(ftp)}
        if not out or out[-1]["ftp"] != entry["ftp"]:
            out.append(entry)
    return out


def _add_gear(conn: sqlite3.Connection, rng: random.Random, athlete_id: int, kind: str) -> None:
    """Bikes by role (road first and primary), then shoes; exactly one primary per kind."""

    def name_for(catalogue: Sequence[tuple[str, str]], role: str) -> str:
        return rng.choice([name for name, r in catalogue if r == role])

    bike_roles = {
        "cyclist": ["road"] + [r for r, p in (("gravel", 0.6), ("mtb", 0.35), ("trainer", 0.35)) if rng.random() < p],
        "runner": [rng.choice(["road", "gravel"])] if rng.random() < 0.85 else [],
        "runner_only": [],
    }[kind]
    shoe_roles = ["road"] + [r for r, p in (("race", 0.7), ("trail", 0.7)) if kind != "cyclist" and rng.random() < p]
    if kind == "cyclist" and rng.random() < 0.4:
        shoe_roles.append("trail")
    for gear_kind, prefix, catalogue, roles in (("bike", "b", BIKES, bike_roles), ("shoe", "g", SHOES, shoe_roles)):
        number = next_gear_number(conn, gear_kind)
        for i, role in enumerate(roles):
            conn.execute(
                "INSERT INTO gear (id, athlete_id, kind, name, is_primary) VALUES (?, ?, ?, ?, ?)",
                (f"{prefix}{number + i}", athlete_id, gear_kind, name_for(catalogue, role), int(i == 0)),
            )


def _ensure_region_segments(conn: sqlite3.Connection, region: Region, seed: int, now_ts: int) -> None:
    """A region's public segments are created once, by the first athlete who lives there."""
    lat0, lat1, lng0, lng1 = box(region.lat, region.lng, 40)
    found = conn.execute(
        "SELECT 1 FROM segments WHERE private = 0 AND start_lat BETWEEN ? AND ? AND start_lng BETWEEN ? AND ? LIMIT 1",
        (lat0, lat1, lng0, lng1),
    ).fetchone()
    if found:
        return
    rng = seeded("segments", seed, region.name)
    plane = Plane(region.lat, region.lng)
    hazardous = set(rng.sample(range(len(region.segments)), max(1, round(len(region.segments) / 10))))
    first_ts, last_ts = epoch(datetime(2009, 1, 1, tzinfo=UTC)), epoch(datetime(2021, 1, 1, tzinfo=UTC))
    for i, spec in enumerate(region.segments):
        climb = spec.grade >= MIN_CLIMB_GRADE
        ring = (300, 3500) if spec.activity_type == "Run" else (3000, 14000) if climb else (1000, 9000)
        start = offset((0.0, 0.0), rng.uniform(0, 360), rng.uniform(*ring))
        created = rng.randint(first_ts, max(first_ts, min(last_ts, now_ts)))
        _insert_segment(conn, rng, spec, region, plane, start, i in hazardous, None, created, now_ts)


def _add_private_segment(
    conn: sqlite3.Connection,
    rng: random.Random,
    athlete_id: int,
    kind: str,
    region: Region,
    home: tuple[float, float],
    created_ts: int,
    now_ts: int,
) -> None:
    plane = Plane(*home)
    spec = SegmentSpec(
        rng.choice(PRIVATE_SEGMENT_NAMES),
        "Ride" if kind == "cyclist" else "Run",
        rng.uniform(300, 1500),
        round(rng.choice([rng.uniform(-1, 2), rng.uniform(3, 8)]), 1),
    )
    start = offset((0.0, 0.0), rng.uniform(0, 360), rng.uniform(300, 1500))
    created = rng.randint(created_ts, max(created_ts, now_ts - 86400))
    _insert_segment(conn, rng, spec, region, plane, start, False, athlete_id, created, now_ts)


def _insert_segment(
    conn: sqlite3.Connection,
    rng: random.Random,
    spec: SegmentSpec,
    region: Region,
    plane: Plane,
    start: XY,
    hazardous: bool,
    owner_id: int | None,
    created_ts: int,
    now_ts: int,
) -> int:
    """A segment whose polyline length is its distance and whose elevation follows its grade."""
    climb = spec.grade >= MIN_CLIMB_GRADE
    xy = wander(rng, start, rng.uniform(0, 360), spec.distance, step=50.0, wiggle=14.0 if climb else 6.0)
    points = [plane.to_ll(p) for p in xy]
    points = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
    distance = round(path_length(points), 1)
    grade = round(spec.grade, 1)
    rise = distance * grade / 100
    z_start = region.elevation + rng.uniform(0, 120) + max(0.0, -rise)
    z_end = z_start + rise
    bumps = 0.0 if climb else rng.uniform(0.5, 6.0)
    low, high = min(z_start, z_end), max(z_start, z_end) + bumps
    segment_id = next_id(conn, "segments", SEGMENT_BASE)
    category = climb_category(distance, grade)
    data = {
        "name": spec.name,
        "activity_type": spec.activity_type,
        "distance": distance,
        "average_grade": grade,
        "maximum_grade": round(abs(grade) + (rng.uniform(1.5, 8) if climb else rng.uniform(0.5, 3)), 1),
        "elevation_high": round(high, 1),
        "elevation_low": round(low, 1),
        "start_latlng": list(points[0]),
        "end_latlng": list(points[-1]),
        "climb_category": category,
        "city": region.city,
        "state": region.state,
        "country": region.country,
        "private": owner_id is not None,
        "hazardous": hazardous,
        "created_at": iso(created_ts),
        "updated_at": iso(rng.randint(created_ts, max(created_ts, now_ts))),
        "total_elevation_gain": round(max(0.0, rise) * (1 + rng.uniform(0, 0.03)) + bumps, 1),
        "map": {"id": f"s{segment_id}", "polyline": polyline.encode(points, 5), "resource_state": 3},
    }
    conn.execute(
        "INSERT INTO segments (id, activity_type, private, owner_id, climb_category, start_lat, start_lng, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            segment_id,
            spec.activity_type,
            int(owner_id is not None),
            owner_id,
            category,
            points[0][0],
            points[0][1],
            dumps(data),
        ),
    )
    return segment_id


def _add_stars(
    conn: sqlite3.Connection, rng: random.Random, athlete_id: int, region: Region, created_ts: int, now_ts: int
) -> None:
    lat0, lat1, lng0, lng1 = box(region.lat, region.lng, 40)
    rows = conn.execute(
        "SELECT id, private, owner_id FROM segments WHERE start_lat BETWEEN ? AND ? AND start_lng BETWEEN ? AND ?"
        " ORDER BY id",
        (lat0, lat1, lng0, lng1),
    ).fetchall()
    public = [r["id"] for r in rows if not r["private"]]
    own = [r["id"] for r in rows if r["owner_id"] == athlete_id]
    chosen = rng.sample(public, min(len(public), rng.randint(2, 5))) + [s for s in own if rng.random() < 0.6]
    for segment_id in sorted(chosen):
        conn.execute(
            "INSERT INTO stars (athlete_id, segment_id, starred_at) VALUES (?, ?, ?)",
            (athlete_id, segment_id, rng.randint(created_ts, max(created_ts, now_ts - 60))),
        )


@dataclass
class Segment:
    """A segment as a route needs it: geometry in the athlete's plane and start/end elevations."""

    id: int
    name: str
    activity_type: str
    hazardous: bool
    distance: float
    grade: float
    z0: float
    z1: float
    points: list[tuple[float, float]]
    start: XY
    end: XY


def segments_near(conn: sqlite3.Connection, athlete: Athlete) -> list[Segment]:
    """Home-region segments the athlete can ride: public ones and its own private ones."""
    lat0, lat1, lng0, lng1 = box(*athlete.home, 45)
    out = []
    for row in conn.execute(
        "SELECT id, data FROM segments WHERE start_lat BETWEEN ? AND ? AND start_lng BETWEEN ? AND ?"
        " AND (private = 0 OR owner_id = ?) ORDER BY id",
        (lat0, lat1, lng0, lng1, athlete.id),
    ):
        d = json.loads(row["data"])
        points = [(lat, lng) for lat, lng in polyline.decode(d["map"]["polyline"], 5)]
        rise = d["distance"] * d["average_grade"] / 100
        z0 = d["elevation_low"] if rise >= 0 else d["elevation_low"] - rise
        out.append(
            Segment(
                row["id"],
                d["name"],
                d["activity_type"],
                d["hazardous"],
                d["distance"],
                d["average_grade"],
                z0,
                z0 + rise,
                points,
                athlete.plane.to_xy(points[0]),
                athlete.plane.to_xy(points[-1]),
            )
        )
    return out
