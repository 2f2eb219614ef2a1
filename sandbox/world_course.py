"""Geometry and the distance/time/elevation timeline of one synthetic activity.

Everything an activity reports (splits, laps, efforts, zones, elevation) is read off one timeline, so
the pieces agree with each other and with the totals by construction.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

EARTH_RADIUS = 6_371_000.0
STEP = 100.0  # metres between timeline samples

LatLng = tuple[float, float]
XY = tuple[float, float]


# --- geometry -------------------------------------------------------------------------------------------


def haversine(a: LatLng, b: LatLng) -> float:
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * EARTH_RADIUS * math.asin(min(1.0, math.sqrt(h)))


def path_length(points: Sequence[LatLng]) -> float:
    return sum(haversine(points[i - 1], points[i]) for i in range(1, len(points)))


@dataclass(frozen=True)
class Plane:
    """A local flat projection around an origin: metres east/north, good to well under 1% within 50 km."""

    lat: float
    lng: float

    def to_xy(self, p: LatLng) -> XY:
        k = math.pi * EARTH_RADIUS / 180
        return ((p[1] - self.lng) * k * math.cos(math.radians(self.lat)), (p[0] - self.lat) * k)

    def to_ll(self, p: XY) -> LatLng:
        """Rounded to 5 decimals: what an encoded polyline keeps, so endpoints survive a round trip."""
        k = math.pi * EARTH_RADIUS / 180
        return (round(self.lat + p[1] / k, 5), round(self.lng + p[0] / (k * math.cos(math.radians(self.lat))), 5))


def offset(p: XY, bearing_deg: float, dist: float) -> XY:
    b = math.radians(bearing_deg)
    return (p[0] + dist * math.sin(b), p[1] + dist * math.cos(b))


def xy_dist(a: XY, b: XY) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def wander(
    rng: random.Random, start: XY, bearing: float, length: float, step: float = 60.0, wiggle: float = 10.0
) -> list[XY]:
    """A road-like path of about `length` metres: a random walk on the heading."""
    points = [start]
    n = max(2, round(length / step))
    for _ in range(n):
        bearing += rng.gauss(0, wiggle)
        points.append(offset(points[-1], bearing, length / n))
    return points


def connector(rng: random.Random, a: XY, b: XY, spacing: float) -> list[XY]:
    """Interior points of a road from a to b: straight-ish with a sideways meander (ends excluded)."""
    length = xy_dist(a, b)
    n = int(length // spacing)
    if n < 1:
        return []
    ux, uy = (b[0] - a[0]) / length, (b[1] - a[1]) / length
    amp = min(300.0, length * 0.04)
    phase = rng.uniform(0, math.pi)
    out = []
    for i in range(1, n + 1):
        f = i / (n + 1)
        side = amp * math.sin(math.pi * f) * math.sin(phase + 3 * math.pi * f) + rng.gauss(0, spacing * 0.05)
        out.append((a[0] + ux * length * f - uy * side, a[1] + uy * length * f + ux * side))
    return out


def thin(points: Sequence[Any], limit: int) -> list[Any]:
    """At most `limit` points, always keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    k = math.ceil((len(points) - 1) / (limit - 1))
    out = list(points[::k])
    if out[-1] != points[-1]:
        out.append(points[-1])
    return out


# --- the timeline ----------------------------------------------------------------------------------------


def grade_factor(grade_pct: float, climb_k: float) -> float:
    """Speed factor on a grade: slower uphill, faster (but capped) downhill."""
    if grade_pct >= 0:
        return 1.0 / (1.0 + climb_k * grade_pct)
    return min(1.45, 1.0 - 0.6 * climb_k * grade_pct)


@dataclass
class Leg:
    """A stretch of the activity: a road between segments (speed varies with grade) or a segment effort."""

    length: float  # reported metres
    z0: float
    z1: float
    speed: float  # connectors: speed on the flat; efforts: constant speed
    effort: bool = False
    hills: float = 0.0  # amplitude of rolling terrain
    waves: int = 0
    hr: float | None = None
    watts: float | None = None
    payload: Any = None  # the segment of an effort leg

    def elev(self, x: float) -> float:
        if not self.length:
            return self.z0
        z = self.z0 + (self.z1 - self.z0) * x / self.length
        if self.waves:
            z += self.hills * math.sin(math.pi * self.waves * x / self.length)
        return max(0.0, z)


@dataclass
class Timeline:
    """Samples (distance, elevation, moving time, cumulative gain) along the activity, plus pauses."""

    legs: list[Leg]
    climb_k: float
    d: list[float] = field(default_factory=list)
    z: list[float] = field(default_factory=list)
    t: list[float] = field(default_factory=list)
    gain: list[float] = field(default_factory=list)
    bounds: list[tuple[float, float]] = field(default_factory=list)
    pauses: list[tuple[float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Sample every leg about every STEP metres; connector speed follows the local grade."""
        d, z, t, gain = [0.0], [self.legs[0].elev(0.0)], [0.0], [0.0]
        for leg in self.legs:
            start = d[-1]
            n = max(1, math.ceil(leg.length / STEP))
            step = leg.length / n
            for i in range(1, n + 1):
                zi = leg.elev(leg.length * i / n)
                if step <= 0:
                    dt = 0.0
                elif leg.effort:
                    dt = step / leg.speed
                else:
                    dt = step / (leg.speed * grade_factor((zi - z[-1]) / step * 100, self.climb_k))
                gain.append(gain[-1] + max(0.0, zi - z[-1]))
                d.append(start + step * i)
                z.append(zi)
                t.append(t[-1] + dt)
            self.bounds.append((start, d[-1]))
        self.d, self.z, self.t, self.gain = d, z, t, gain

    @property
    def distance(self) -> float:
        return self.d[-1]

    def scale_time(self, factor: float) -> None:
        self.t = [x * factor for x in self.t]

    def _at(self, arr: list[float], x: float) -> float:
        i = min(max(bisect.bisect_right(self.d, x) - 1, 0), len(self.d) - 2)
        span = self.d[i + 1] - self.d[i]
        f = 0.0 if span <= 0 else min(1.0, max(0.0, (x - self.d[i]) / span))
        return arr[i] + (arr[i + 1] - arr[i]) * f

    def moving(self, x: float) -> float:
        return self._at(self.t, x)

    def elev(self, x: float) -> float:
        return self._at(self.z, x)

    def gained(self, x: float) -> float:
        """Cumulative gain up to x; differences are additive, so laps add up to the total."""
        return self._at(self.gain, x)

    def paused(self, x: float) -> int:
        return sum(s for at, s in self.pauses if at < x)

    def sec(self, x: float) -> int:
        """Moving seconds at x, rounded: the sample index, and telescoping sums for splits and laps."""
        return round(self.moving(x))

    def clock(self, x: float) -> int:
        """Elapsed seconds since the start at x (moving time plus earlier pauses)."""
        return self.sec(x) + self.paused(x)

    def max_speed(self, x0: float, x1: float) -> float:
        i0 = max(bisect.bisect_right(self.d, x0) - 1, 0)
        i1 = min(bisect.bisect_left(self.d, x1), len(self.d) - 1)
        best = 0.0
        for i in range(i0, i1):
            dt = self.t[i + 1] - self.t[i]
            if dt > 0:
                best = max(best, (self.d[i + 1] - self.d[i]) / dt)
        return best

    def leg_times(self, x0: float, x1: float) -> list[tuple[Leg, float]]:
        """Moving time spent on each leg between x0 and x1 (for time-weighted HR, power, zones)."""
        out = []
        for leg, (b0, b1) in zip(self.legs, self.bounds):
            lo, hi = max(x0, b0), min(x1, b1)
            if hi > lo:
                out.append((leg, self.moving(hi) - self.moving(lo)))
        return out


def cut_points(total: float, every: float) -> list[float]:
    """0, every, 2*every, …, total (no sliver: a last piece under 1 m joins the one before)."""
    pts = [0.0]
    while pts[-1] + every < total - 1.0:
        pts.append(pts[-1] + every)
    pts.append(total)
    return pts


def weighted(pairs: Iterable[tuple[float | None, float]]) -> float | None:
    """Time-weighted mean of the values that exist."""
    num = den = 0.0
    for value, weight in pairs:
        if value is not None and weight > 0:
            num += value * weight
            den += weight
    return num / den if den else None


# --- zones -----------------------------------------------------------------------------------------------


def _cdf(x: float, mean: float, sd: float) -> float:
    return 0.5 * (1 + math.erf((x - mean) / (sd * math.sqrt(2))))


def spread(parts: Iterable[tuple[float, float, float, float]], edges: Sequence[float]) -> list[float]:
    """Seconds per bucket for (seconds, mean, sd, share at zero) parts, buckets split at `edges`."""
    out = [0.0] * (len(edges) + 1)
    for secs, mean, sd, zero in parts:
        out[0] += secs * zero
        prev = 0.0
        for i, edge in enumerate(edges):
            c = _cdf(edge, mean, sd)
            out[i] += secs * (1 - zero) * (c - prev)
            prev = c
        out[-1] += secs * (1 - zero) * (1 - prev)
    return out


def round_to_total(values: Sequence[float], total: int) -> list[int]:
    """Integers that sum exactly to `total`, by largest remainder."""
    s = sum(values)
    if s <= 0:  # nothing to spread: it all goes to the first bucket
        return [total] + [0] * (len(values) - 1)
    scaled = [v * total / s for v in values]
    out = [math.floor(v) for v in scaled]
    order = sorted(range(len(values)), key=lambda i: (out[i] - scaled[i], i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out
