"""The athlete's zones in either shape the service answers, read into one form.

The spec (§2.5) answers an array of zone objects (`type`, `distribution_buckets` with time in zone); the real
service answers an object of bounds, `{"heart_rate": {"custom_zones": false, "zones": [{"min", "max"}…]},
"power": {"zones": […]}}`, with no time. Both land in `athlete_zones`, with the shape that was seen; a shape
neither of these is kept raw and reported, never a failed run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .records import record

# Keys of the real object → the spec's zone `type`, so both shapes fill the same rows.
REAL_KEYS = {"heart_rate": "heartrate", "power": "power"}


@dataclass(frozen=True)
class AthleteZones:
    shape: str  # "array" (the spec), "object" (the real service) or "unknown"
    zones: list[dict[str, Any]]  # per zone type: type, custom_zones, distribution_buckets, received (as sent)
    problems: tuple[str, ...] = field(default=())
    raw: Any = None

    def payload(self) -> dict[str, Any]:
        """What is landed for the warehouse: the zones in one form and the shape they came in."""
        return {"shape": self.shape, "zones": self.zones}


def _buckets_ok(buckets: Any) -> bool:
    return isinstance(buckets, list) and all(isinstance(b, dict) for b in buckets)


def read(body: Any) -> AthleteZones:
    zones: list[dict[str, Any]] = []
    problems: list[str] = []
    if isinstance(body, list):
        for item in body:
            checked = record("zone", item)
            if checked.issues or not _buckets_ok(item.get("distribution_buckets")):
                problems.extend(checked.issues or ("distribution_buckets is not a list of objects",))
                continue
            zones.append(
                {
                    "type": item["type"],
                    "custom_zones": item.get("custom_zones"),
                    "distribution_buckets": item["distribution_buckets"],
                    "received": item,
                }
            )
        return AthleteZones("array", zones, tuple(problems), body)
    if isinstance(body, dict):
        for key, value in body.items():
            if not isinstance(value, dict) or not _buckets_ok(value.get("zones")):
                problems.append(f"unexpected {key}: not an object with a list of zones")
                continue
            if key not in REAL_KEYS:
                problems.append(f"unknown zone kind {key!r} (loaded as zone_type {key!r})")
            zones.append(
                {
                    "type": REAL_KEYS.get(key, key),
                    "custom_zones": value.get("custom_zones"),
                    "distribution_buckets": value["zones"],
                    "received": value,
                }
            )
        if zones or not body:
            return AthleteZones("object", zones, tuple(problems), body)
        return AthleteZones("unknown", [], tuple(problems), body)
    return AthleteZones("unknown", [], (f"expected an array or an object of zones, got {type(body).__name__}",), body)
