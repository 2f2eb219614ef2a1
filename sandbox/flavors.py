"""The `real` flavour: answers shaped as the real service gives them where it differs from the spec.

The default (`spec`) follows the spec. `real` follows what recorded answers of the real service and its
public clients show (docs/real-service.md lists each difference, its source and the test that covers it),
so fitsync — and any third-party client — can be tried against both from one world.
"""

from __future__ import annotations

from typing import Any

from .faults import ApiError, invalid_token
from .world_activity import CLIMB_K
from .world_course import grade_factor
from .world_tables import FALLBACK_SPORT, SPORTS

# The real service names the zone kinds as object keys; the spec's zone objects carry them as `type`.
REAL_ZONE_KEYS = {"heartrate": "heart_rate", "power": "power"}


def athlete_zones(zones: list[dict[str, Any]], flavor: str) -> Any:
    """GET /athlete/zones: the spec's array of zone objects, or the real object of bounds (no time in zone)."""
    if flavor != "real":
        return zones
    out: dict[str, Any] = {}
    for zone in zones:
        bounds = [{"min": b["min"], "max": b["max"]} for b in zone["distribution_buckets"]]
        key = REAL_ZONE_KEYS[zone["type"]]
        out[key] = (
            {"custom_zones": zone.get("custom_zones", False), "zones": bounds}
            if key == "heart_rate"
            else {"zones": bounds}
        )
    return out


def detailed_activity(body: dict[str, Any], flavor: str) -> dict[str, Any]:
    """A run's kilometre splits carry the real service's grade-adjusted speed (recorded answers; not in the spec or
    the public swagger): the flat speed of the same effort, by the sandbox's own grade model."""
    if flavor != "real" or SPORTS.get(str(body.get("sport_type")), FALLBACK_SPORT).base != "run":
        return body
    for split in body.get("splits_metric") or []:
        distance, speed = split.get("distance") or 0.0, split.get("average_speed") or 0.0
        if distance > 0 and speed > 0:
            grade_pct = (split.get("elevation_difference") or 0.0) / distance * 100
            split["average_grade_adjusted_speed"] = round(speed / grade_factor(grade_pct, CLIMB_K["run"]), 2)
    return body


def stats_of_another_athlete(flavor: str) -> ApiError:
    """The real service's 401 in both flavours: the spec gives no status (§4.2 "must match the authenticated
    athlete"), and clients (stravalib's AccessUnauthorized, which says why) expect the real one."""
    return invalid_token()


def token_exchange_body(body: dict[str, Any], scope: str, flavor: str) -> dict[str, Any]:
    """The spec's exchange answer carries the granted `scope`; the real one does not (the redirect has it)."""
    return body if flavor == "real" else {**body, "scope": scope}
