"""Ids, time formatting and small db helpers shared by the synthetic-world modules."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from .world_tables import OTHER_SPORT_TYPES, SPORTS

UTC = UTC
ATHLETE_BASE = 48_000_001
SEGMENT_BASE = 2_000_001
ACTIVITY_BASE = 9_000_000_001
EFFORT_BASE = 30_000_000_001
LAP_BASE = 50_000_000_001
GEAR_BASE = 10_000_001  # numeric part of gear ids "b<n>" / "g<n>"
PRIVATE_ATHLETE_KEYS = ("home", "hr_zones", "ftp_history", "max_hr")  # in athletes.data, never in API output
VISIBILITIES = ("everyone", "followers_only", "only_me")
CLIMB_CATEGORY_DESC = ["NC", "4", "3", "2", "1", "HC"]
MIN_CLIMB_GRADE = 3.0  # flatter segments are never categorised
SPORT_TYPES = frozenset(SPORTS) | frozenset(OTHER_SPORT_TYPES)
LEGACY_TYPES = frozenset(s.legacy_type for s in SPORTS.values()) | frozenset(OTHER_SPORT_TYPES.values())

_CLIMB_SCORES = ((80_000, 5), (64_000, 4), (32_000, 3), (16_000, 2), (8_000, 1))  # distance × grade
_POWER_ZONE_SHARES = (0.55, 0.75, 0.90, 1.05, 1.20, 1.50)  # of FTP: Coggan-like boundaries


def climb_category(distance_m: float, avg_grade_pct: float) -> int:
    """Category 0 (NC) … 5 (HC) from distance × grade, as the real service derives it."""
    if avg_grade_pct < MIN_CLIMB_GRADE:
        return 0
    score = distance_m * avg_grade_pct
    return next((cat for limit, cat in _CLIMB_SCORES if score > limit), 0)


def sport_family(sport_type: str) -> str:
    """The legacy `type` of a sport_type; unknown sport types are their own type."""
    row = SPORTS.get(sport_type)
    return row.legacy_type if row else OTHER_SPORT_TYPES.get(sport_type, sport_type)


def power_zones(ftp: float | None) -> list[dict[str, int]]:
    """Power zone bounds from an FTP (last max -1); none without an FTP."""
    if not ftp:
        return []
    edges = [round(ftp * share) for share in _POWER_ZONE_SHARES]
    return [{"min": lo, "max": hi} for lo, hi in zip([0] + edges, edges + [-1])]


def seeded(*parts: object) -> random.Random:
    """A generator seeded from a string (hashed with SHA-512 by `random`): stable across runs."""
    return random.Random(":".join(map(str, parts)))


def pick(rng: random.Random, rows: Sequence[tuple[Any, float]]) -> Any:
    return rng.choices([r[0] for r in rows], weights=[r[1] for r in rows])[0]


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(value: datetime) -> int:
    if value.tzinfo is None:
        raise ValueError("expected a timezone-aware datetime")
    return int(value.timestamp())


@dataclass(frozen=True)
class LocalTime:
    """How the real service reports local time: wall clock with a 'Z', zone label and offset at that instant."""

    utc_offset: int
    timezone: str

    def local(self, ts: float) -> str:
        return iso(ts + self.utc_offset)


def _offset(ts: float, zone: ZoneInfo) -> int:
    offset = datetime.fromtimestamp(ts, zone).utcoffset()
    assert offset is not None  # an aware datetime's
    return int(offset.total_seconds())


def local_time(ts: int, tz_name: str) -> LocalTime:
    """The label shows the zone's standard offset all year (as the real service's payloads do: a summer
    activity reads "(GMT-08:00) America/Los_Angeles" with utc_offset -25200); utc_offset is the real one."""
    zone = ZoneInfo(tz_name)
    year = datetime.fromtimestamp(ts, UTC).year
    standard = min(_offset(datetime(year, month, 1, tzinfo=UTC).timestamp(), zone) for month in (1, 7))
    sign, mins = ("+" if standard >= 0 else "-"), abs(standard) // 60
    return LocalTime(_offset(ts, zone), f"(GMT{sign}{mins // 60:02d}:{mins % 60:02d}) {tz_name}")


def id_floor(conn: sqlite3.Connection, name: str) -> int:
    """The highest id ever given out (kept when the newest rows are deleted), so ids are never reused."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (f"id_floor:{name}",)).fetchone()
    return int(row[0]) if row else 0


def raise_id_floor(conn: sqlite3.Connection, name: str, value: int | None) -> None:
    if value is not None and value > id_floor(conn, name):
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (f"id_floor:{name}", str(value)))


def next_id(conn: sqlite3.Connection, table: str, base: int) -> int:
    top = max(conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0], id_floor(conn, table))
    return base if top < base else top + 1


def next_lap_id(conn: sqlite3.Connection) -> int:
    """Lap ids live inside activity JSON; the newest activity with laps holds the highest ones."""
    row = conn.execute(
        "SELECT MAX(json_extract(l.value, '$.id')) FROM (SELECT data FROM activities"
        " WHERE json_array_length(data, '$.laps') > 0 ORDER BY id DESC LIMIT 1) a, json_each(a.data, '$.laps') l"
    ).fetchone()
    top = max(row[0] or 0, id_floor(conn, "laps"))
    return LAP_BASE if top < LAP_BASE else top + 1


def next_gear_number(conn: sqlite3.Connection, kind: str) -> int:
    top = conn.execute("SELECT MAX(CAST(substr(id, 2) AS INTEGER)) FROM gear WHERE kind = ?", (kind,)).fetchone()[0]
    return GEAR_BASE if top is None else top + 1


def box(lat: float, lng: float, km: float) -> tuple[float, float, float, float]:
    dlat = km / 111.0
    dlng = km / (111.0 * max(0.1, math.cos(math.radians(lat))))
    return lat - dlat, lat + dlat, lng - dlng, lng + dlng
