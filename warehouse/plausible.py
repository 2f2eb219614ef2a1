"""What a value from the service may be: each typed number column's plausible range, with the reason for its bounds.

A broken server or proxy can send `distance: 1e308` or `moving_time: 10^30`. Such a value is never stored over a good
one: the load keeps the row's stored value (NULL for a new row), the document keeps what arrived, and the run says
which values it left out (loads.Staged.rejected). A value that would not fit its column (an overflow) is out of range
here, so it never becomes NULL without a word. The bounds are generous — far past any human performance — so that
only a value no activity can have is refused; docs/warehouse.md shows them beside each column.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    why: str

    def holds(self, value: float) -> bool:
        return math.isfinite(value) and self.low <= value <= self.high

    def text(self) -> str:
        return f"{_number(self.low)} … {_number(self.high)}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


YEAR_S = 366 * 86400
KMH_1000 = 1000 / 3.6

# Ranges shared by every table with a column of that name; TABLE_RANGES refines them per table.
RANGES: dict[str, Range] = {
    "distance": Range(0, 10_000_000, "10,000 km: longer than any activity recorded in one piece"),
    "moving_time": Range(0, YEAR_S, "a year"),
    "elapsed_time": Range(0, YEAR_S, "a year"),
    "total_elevation_gain": Range(0, 200_000, "200 km of climbing"),
    "elev_high": Range(-1_000, 9_000, "below the Dead Sea to above Everest"),
    "elev_low": Range(-1_000, 9_000, "below the Dead Sea to above Everest"),
    "elevation_high": Range(-1_000, 9_000, "below the Dead Sea to above Everest"),
    "elevation_low": Range(-1_000, 9_000, "below the Dead Sea to above Everest"),
    "elevation_difference": Range(-10_000, 10_000, "more than the height of Everest"),
    "average_speed": Range(0, KMH_1000, "1,000 km/h"),
    "max_speed": Range(0, KMH_1000, "1,000 km/h"),
    "average_grade_adjusted_speed": Range(0, KMH_1000, "1,000 km/h"),
    "average_cadence": Range(0, 300, "300 rpm or steps a minute"),
    "average_temp": Range(-90, 80, "colder or hotter than anywhere on Earth"),
    "average_heartrate": Range(0, 300, "300 bpm"),
    "max_heartrate": Range(0, 300, "300 bpm"),
    "average_watts": Range(0, 3_000, "a sprinter's peak held as an average"),
    "weighted_average_watts": Range(0, 3_000, "a sprinter's peak held as an average"),
    "max_watts": Range(0, 5_000, "twice a track sprinter's peak"),
    "kilojoules": Range(0, 200_000, "a week at 300 W"),
    "suffer_score": Range(0, 20_000, "days of racing"),
    "calories": Range(0, 200_000, "a week of racing"),
    "achievement_count": Range(0, 100_000, "a count"),
    "pr_count": Range(0, 100_000, "a count"),
    "kudos_count": Range(0, 10_000_000, "a count"),
    "utc_offset": Range(-14 * 3600, 14 * 3600, "the time zones on Earth (UTC−14 … UTC+14)"),
    "workout_type": Range(0, 100, "the service's workout codes (0–3 runs, 10–12 rides)"),
    "start_lat": Range(-90, 90, "a latitude"),
    "end_lat": Range(-90, 90, "a latitude"),
    "start_lng": Range(-180, 180, "a longitude"),
    "end_lng": Range(-180, 180, "a longitude"),
    "split": Range(0, 100_000, "an index"),
    "lap_index": Range(0, 100_000, "an index"),
    "start_index": Range(0, 2**31 - 1, "a sample index"),
    "end_index": Range(0, 2**31 - 1, "a sample index"),
    "pace_zone": Range(0, 20, "a zone number"),
    "pr_rank": Range(0, 100, "a rank (1–3 on the service)"),
    "kom_rank": Range(0, 100, "a rank (1–10 on the service)"),
    "average_grade": Range(-100, 100, "a grade in percent"),
    "maximum_grade": Range(-100, 100, "a grade in percent"),
    "climb_category": Range(0, 5, "the spec's categories 0–5"),
    "effort_count": Range(0, 2e9, "a count"),
    "athlete_count": Range(0, 2e9, "a count"),
    "star_count": Range(0, 2e9, "a count"),
    "score": Range(0, 1e6, "a zone score"),
    "points": Range(0, 1e6, "a count"),
    "min": Range(-1, 100_000, "a zone bound (-1: none)"),
    "max": Range(-1, 100_000, "a zone bound (-1: no upper bound)"),
    "seconds": Range(0, YEAR_S, "a year"),
    "ftp": Range(0, 2_000, "twice the best hour ever ridden"),
    "weight": Range(0, 700, "kilograms: heavier than any human recorded"),
    "count": Range(0, 10_000_000, "a count"),
    "elevation_gain": Range(0, 1e9, "all-time climbing"),
    "biggest_ride_distance": Range(0, 10_000_000, "10,000 km"),
    "biggest_climb_elevation_gain": Range(0, 200_000, "200 km of climbing"),
}
# Where a table's column means more than one activity's worth: all-time totals and a bike's odometer.
TABLE_RANGES: dict[str, dict[str, Range]] = {
    "athlete_stats_totals": {
        "distance": Range(0, 1e10, "10 million km, all time"),
        "moving_time": Range(0, 60 * YEAR_S, "sixty years"),
        "elapsed_time": Range(0, 60 * YEAR_S, "sixty years"),
        "achievement_count": Range(0, 1e8, "a count"),
    },
    "gear": {"distance": Range(0, 1e10, "10 million km on one bike or pair of shoes")},
    "segments": {"distance": Range(0, 10_000_000, "10,000 km")},
}


def range_of(table: str, column: str) -> Range | None:
    return _ranges(table).get(column)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# How a record's issues (activities.issues) name a member that is not a number where its column holds one: a load
# keeps the stored value of that column (loads._plausible) and names it with the refused values.
NOT_A_NUMBER = "not a number: "


def type_issues(table: str, raw: Any) -> list[str]:
    """`not a number: distance='abc'` for each top-level member with a plausible range whose value is not a number."""
    return [
        f"{NOT_A_NUMBER}{name}={value!r}"[:200]
        for name, value in implausible(table, raw).items()
        if not _is_number(value)
    ]


def implausible(table: str, raw: Any, fields: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The top-level members of a document that a load would refuse for `table` ({field: value as sent}): a number
    out of its range (or not finite), or something else where a number belongs."""
    if not isinstance(raw, dict):
        return {}
    ranges = _ranges(table)  # every document of a batch is asked: one lookup per member, not two
    found = {}
    for name in fields if fields is not None else raw:
        value = raw.get(name)
        bounds = ranges.get(name)
        if bounds is None or value is None:
            continue
        if type(value) is int:  # most members: compared as they are (a huge one never overflows a float)
            if bounds.low <= value <= bounds.high:
                continue
        elif _is_number(value) and bounds.holds(float(value)):
            continue
        found[name] = value
    return found


@functools.cache
def _ranges(table: str) -> dict[str, Range]:
    """The range each column of `table` is held to: its table's own, else the one shared by every table."""
    return {**RANGES, **TABLE_RANGES.get(table, {})}
