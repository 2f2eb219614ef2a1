"""What the service derives from an activity's recording once it is uploaded: normalized power
(`weighted_average_watts`), the seconds in each heart-rate and power zone (`GET /activities/{id}/zones`) and the
scores read off them. The real service derives them from the recorded file, so an analysis of its streams agrees with
its own figures; the sandbox derives them from the very streams it serves (world_streams), or they would disagree by
10 % (power) to 40 % (a zone's seconds) and the demo's analysis would compare two unrelated worlds."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

from . import world_streams

NP_WINDOW = 30  # seconds of the rolling mean normalized power raises to the 4th power (Coggan)
SUFFER_PER_HOUR = (12, 24, 45, 100, 120)  # relative-effort points per hour in heart-rate zones 1-5
ZONE_STREAM = {"heartrate": "heartrate", "power": "watts"}


def normalized_power(watts: Sequence[int]) -> float | None:
    """The 4th root of the mean 4th power of the 30-second rolling mean, from the 30th sample on."""
    if len(watts) < NP_WINDOW:
        return None
    total, fourth = float(sum(watts[:NP_WINDOW])), 0.0
    for i in range(NP_WINDOW, len(watts) + 1):
        fourth += (total / NP_WINDOW) ** 4
        if i < len(watts):
            total += watts[i] - watts[i - NP_WINDOW]
    return float((fourth / (len(watts) - NP_WINDOW + 1)) ** 0.25)


def zone_seconds(values: Sequence[int], buckets: Sequence[Mapping[str, float]]) -> list[int]:
    """Samples per bucket, a value in the bucket whose min it reaches and whose max it stays under (last max -1)."""
    lows = [b["min"] for b in buckets[1:]]
    seconds = [0] * len(buckets)
    for value in values:
        seconds[bisect.bisect_right(lows, value)] += 1
    return seconds


def derive(activity_id: int, data: dict[str, Any], efforts: Sequence[Mapping[str, Any]], ftp: float | None) -> None:
    """Set the derived figures of `data` (a device activity's detail) from its streams: sample 0 is the start, each
    later sample one moving second, so the zones' seconds add up to moving_time."""
    built = world_streams.generate(activity_id, data, efforts)
    if built is None:
        return
    moving = data["moving_time"]
    np_watts = normalized_power(built.stream("watts")) if "watts" in built.available else None
    if np_watts is not None:
        data["weighted_average_watts"] = round(np_watts)
    for zone in data.get("zones") or []:
        kind = ZONE_STREAM.get(zone["type"])
        if kind not in built.available:
            continue
        buckets = zone["distribution_buckets"]
        for bucket, seconds in zip(buckets, zone_seconds(built.stream(kind)[1:], buckets)):
            bucket["time"] = seconds
        times = [b["time"] for b in buckets]
        if zone["type"] == "heartrate":
            data["suffer_score"] = zone["score"] = round(sum(t / 3600 * w for t, w in zip(times, SUFFER_PER_HOUR)))
            zone["points"] = round(sum(times[3:]) / 60)
        else:
            if np_watts is not None and ftp:
                zone["score"] = round(moving / 3600 * (np_watts / ftp) ** 2 * 100)
            zone["points"] = round(sum(times[4:]) / 60)
