"""Records as the service sends them, checked against expectations but never rejected.

A record that does not match (a sport type fitsync does not know, a missing field, a wrong type) is
kept whole with its raw JSON and a list of issues, so one odd activity never fails its page.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The service's sport types (legacy `type` values are a subset); new ones appear from time to time.
SPORT_TYPES = frozenset(
    {
        "AlpineSki",
        "BackcountrySki",
        "Badminton",
        "Canoeing",
        "Crossfit",
        "EBikeRide",
        "Elliptical",
        "EMountainBikeRide",
        "Golf",
        "GravelRide",
        "Handcycle",
        "HighIntensityIntervalTraining",
        "Hike",
        "IceSkate",
        "InlineSkate",
        "Kayaking",
        "Kitesurf",
        "MountainBikeRide",
        "NordicSki",
        "Pickleball",
        "Pilates",
        "Racquetball",
        "Ride",
        "RockClimbing",
        "RollerSki",
        "Rowing",
        "Run",
        "Sail",
        "Skateboard",
        "Snowboard",
        "Snowshoe",
        "Soccer",
        "Squash",
        "StairStepper",
        "StandUpPaddling",
        "Surfing",
        "Swim",
        "TableTennis",
        "Tennis",
        "TrailRun",
        "Velomobile",
        "VirtualRide",
        "VirtualRow",
        "VirtualRun",
        "Walk",
        "WeightTraining",
        "Wheelchair",
        "Windsurf",
        "Workout",
        "Yoga",
    }
)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_iso(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


Check = Callable[[Any], bool]
# kind → field → check; fields absent from a kind's table are not checked.
EXPECTATIONS: dict[str, dict[str, Check]] = {
    "athlete": {"id": _is_int},
    "activity": {
        "id": _is_int,
        "name": lambda v: isinstance(v, str),
        "start_date": _is_iso,
        "start_date_local": _is_iso,
        "distance": _is_number,
        "moving_time": _is_int,
        "elapsed_time": _is_int,
        "sport_type": lambda v: v in SPORT_TYPES,
        "utc_offset": _is_number,
    },
    "lap": {"id": _is_int, "lap_index": _is_int, "elapsed_time": _is_int},
    "segment": {"id": _is_int, "name": lambda v: isinstance(v, str), "distance": _is_number},
    "effort": {"id": _is_int, "elapsed_time": _is_int, "start_date": _is_iso, "segment": lambda v: isinstance(v, dict)},
    "zone": {"type": lambda v: isinstance(v, str), "distribution_buckets": lambda v: isinstance(v, list)},
    "stats": {},
    "subscription": {"id": _is_int},
}


# The members the warehouse reads as numbers, booleans and instants, wherever they sit in an answer (the columns of
# warehouse/mappings.py; tests/client/test_real_payloads.py keeps them equal). Another JSON type there ("abc" or true
# for a distance, 5 for a flag, "yesterday" for a date) is no value of the service's: read leniently it would be
# stored as NULL or 1 over what was right.
NUMBER_MEMBERS = frozenset(
    {
        *("achievement_count", "athlete_count", "average_cadence", "average_grade", "average_grade_adjusted_speed"),
        *("average_heartrate", "average_speed", "average_temp", "average_watts", "biggest_climb_elevation_gain"),
        *("biggest_ride_distance", "calories", "climb_category", "count", "distance", "effort_count", "elapsed_time"),
        *("elev_high", "elev_low", "elevation_difference", "elevation_gain", "elevation_high", "elevation_low"),
        *("end_index", "ftp", "kilojoules", "kom_rank", "kudos_count", "lap_index", "max", "max_heartrate"),
        *("max_speed", "max_watts", "maximum_grade", "min", "moving_time", "pace_zone", "points", "pr_count"),
        *("pr_rank", "resource_state", "score", "split", "star_count", "start_index", "suffer_score", "time"),
        *("total_elevation_gain", "utc_offset", "weight", "weighted_average_watts", "workout_type"),
    }
)
BOOLEAN_MEMBERS = frozenset(
    {
        *("commute", "custom_zones", "device_watts", "flagged", "has_heartrate", "hazardous", "hidden", "manual"),
        *("premium", "primary", "private", "retired", "sensor_based", "trainer"),
    }
)
INSTANT_MEMBERS = frozenset({"created_at", "start_date", "start_date_local", "updated_at"})
# The objects and lists inside an answer whose members the warehouse reads (the mappings' arrays and nested members):
# only those are checked, never one it keeps raw without reading (a real segment's `local_legend` counts efforts as
# text, "24").
READ_INSIDE = frozenset(
    {
        *("laps", "splits_metric", "segment_efforts", "segment", "activity", "distribution_buckets"),
        *("bikes", "shoes"),
        *(f"{period}_{sport}_totals" for period in ("recent", "ytd", "all") for sport in ("ride", "run", "swim")),
    }
)
_MEMBER_CHECKS: tuple[tuple[frozenset[str], Check, str], ...] = (
    # an id of 12.5 or true, rounded to another row's id, would replace that row
    (frozenset({"id"}), lambda v: isinstance(v, str) or _is_int(v) or isinstance(v, float) and v.is_integer(), "an id"),
    (NUMBER_MEMBERS, lambda v: _is_number(v), "a number"),
    (BOOLEAN_MEMBERS, lambda v: isinstance(v, bool), "true or false"),
    (INSTANT_MEMBERS, _is_iso, "a date"),
)


def wrong_member(body: Any, *, numbers_on_top: bool = True, at: str = "") -> str | None:
    """The first member the warehouse reads (at the top of `body`, or inside READ_INSIDE) whose value is not of the
    type it reads it as (null is no value, never wrong): `laps[2].distance='abc' where a number belongs`, or None.
    `numbers_on_top`: False for an activity, whose top-level numbers a load refuses one by one (records' issues,
    plausible.type_issues)."""
    if isinstance(body, list):
        for i, item in enumerate(body):
            if found := wrong_member(item, numbers_on_top=numbers_on_top, at=f"{at}[{i}]"):
                return found
        return None
    if not isinstance(body, dict):
        return None
    for name, value in body.items():
        if isinstance(value, (dict, list)):
            if name in READ_INSIDE and (found := wrong_member(value, at=f"{at}.{name}" if at else str(name))):
                return found
            continue
        for members, holds, what in _MEMBER_CHECKS:
            if value is None or name not in members or holds(value) or (not numbers_on_top and what == "a number"):
                continue
            return f"{at}.{name}={value!r} where {what} belongs"[:200].lstrip(".")
    return None


@dataclass(frozen=True)
class Record:
    kind: str
    raw: dict[str, Any]
    issues: tuple[str, ...] = field(default=())

    @property
    def flagged(self) -> bool:
        return bool(self.issues)

    @property
    def id(self) -> Any:
        return self.raw.get("id")

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


def record(kind: str, raw: Any) -> Record:
    if not isinstance(raw, dict):
        return Record(kind, {"value": raw}, (f"expected an object, got {type(raw).__name__}",))
    issues = []
    for name, check in EXPECTATIONS[kind].items():
        if name not in raw:
            issues.append(f"missing {name}")
        elif not check(raw[name]):
            issues.append(f"unexpected {name}={raw[name]!r}"[:200])
    return Record(kind, raw, tuple(issues))


class UnexpectedShape(ValueError):
    """A body that is not what the operation answers (an object where a list belongs, an athlete without an id): kept
    raw by the caller, never taken for data."""

    def __init__(self, endpoint: str, kind: str, body: Any, problem: str | None = None) -> None:
        self.endpoint, self.kind, self.body = endpoint, kind, body
        self.problem = problem or f"{JSON_KINDS.get(type(body), 'a value')} instead of a list of {kind} records"
        super().__init__(f"{endpoint}: {self.problem}")


def _totals(body: dict[str, Any]) -> list[Any]:
    return [
        body.get(f"{period}_{sport}_totals") for period in ("recent", "ytd", "all") for sport in ("ride", "run", "swim")
    ]


# kind → what makes a single answer of that kind something else altogether (None: it is one). A field that is odd is
# an issue of the record (kept, flagged); an answer without what identifies it is not a record of that kind at all.
SHAPES: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "athlete": lambda b: None if _is_int(b.get("id")) else "an athlete without a numeric id",
    "activity": lambda b: None if _is_int(b.get("id")) else "an activity without a numeric id",
    "segment": lambda b: None if _is_int(b.get("id")) else "a segment without a numeric id",
    "effort": lambda b: None if _is_int(b.get("id")) else "an effort without a numeric id",
    "stats": lambda b: (
        None
        if any(isinstance(t, dict) for t in _totals(b))
        and all(t is None or isinstance(t, dict) and _is_number(t.get("count", 0)) for t in _totals(b))
        else "stats without their ride, run and swim totals"
    ),
}


# How a JSON value that is not an object is named in a problem ("… answered a list instead of an activity object").
JSON_KINDS: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}
JSON_KINDS[type(None)] = "null"


def _a(kind: str) -> str:
    """`an activity`, `a zone`."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def shape_problem(kind: str, body: Any) -> str | None:
    """Why a single answer is not a `kind` at all (or holds a value of the wrong type: wrong_member), or None."""
    if not isinstance(body, dict):
        return f"{JSON_KINDS.get(type(body), 'a value')} instead of {_a(kind)} object"
    check = SHAPES.get(kind)
    return (check(body) if check else None) or wrong_member(body, numbers_on_top=kind != "activity")


def owner_problem(body: dict[str, Any], athlete_id: int, kind: str = "activity") -> str | None:
    """Why an activity (or an effort) answered to `athlete_id`'s token is not theirs to store (its `athlete.id` names
    another), or None. One without an owner is taken as the athlete's: the spec's summaries and details carry one."""
    owner = body.get("athlete")
    owner_id = owner.get("id") if isinstance(owner, dict) else None
    if _is_int(owner_id) and owner_id != athlete_id:
        return f"{_a(kind)} of athlete {owner_id}, not of athlete {athlete_id}"
    return None


def records(kind: str, body: Any, endpoint: str = "") -> list[Record]:
    if not isinstance(body, list):
        raise UnexpectedShape(endpoint or kind, kind, body)
    return [record(kind, item) for item in body]
