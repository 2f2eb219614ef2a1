"""Per-second streams of a recorded activity (GET /activities/{id}/streams, /segment_efforts/{id}/streams).

Streams are not stored: they are generated on request from what the activity stores (its totals, laps,
kilometre splits, segment efforts and map), so that they agree with what the service already said about the
activity, and deterministically (every random choice is seeded by the activity id and the channel), so the same
world always serves the same samples. The timeline the activity was recorded from is gone by then; what is kept
pins it down closely enough:

- One sample per moving second, as a device with auto-pause records: sample `i` is moving second `i`, so the
  `start_index`/`end_index` the laps and efforts already carry (moving seconds, tests/test_world.py) are indices
  into these streams. A stop is a jump in `time` (the seconds a lap or split spent stopped: its elapsed minus
  moving time), placed inside that lap or split and never inside a segment effort, as the recording placed it.
  So `time` runs 0..elapsed_time, there are moving_time + 1 samples, and `moving` is true on every sample but
  the first: the number of moving samples is moving_time.
- `distance` passes exactly through every split boundary (whole kilometres at the split's cumulative moving
  time) and lap boundary, and ends at the activity's distance; a segment effort's span covers the effort's
  distance at the effort's constant speed (as the recording rode it), ending on a boundary when it ends there;
  between those points the road speed swings gently around the mean. A last split or lap of no moving second (a
  sliver of a few metres) has no sample of its own: the one before it ends at the activity's distance.
- `altitude` (decimetre steps, as the service rounds) passes through each split's elevation difference exactly
  and climbs each lap's total_elevation_gain exactly (in rolling waves when a lap climbs more than its splits'
  net rises; a lap whose splits' rounded rises already pass its gain climbs those), shifted so that its lowest
  sample is elev_low.
- `heartrate`, `watts`, `cadence` and `temp` are integers whose mean over the moving samples matches the
  activity's average (and each effort's, lap's and split's where the activity reports one: heart rate off the
  efforts fitted to both the splits' and the laps' means); the highest
  heart-rate sample is max_heartrate, each effort's and lap's highest is its max_heartrate where the recording's
  figures allow it (the activity's maximum wins over a lap's: the recording drew them independently), and the
  highest power sample is max_watts.

What exists follows the activity: no streams for manual activities; `latlng` only with a map; `altitude` and
`grade_smooth` only when the activity reports elevation; `heartrate` only with has_heartrate; `watts` only with a
power meter (device_watts: the service's estimated power is not a stream); `cadence` and `temp` only when the
activity reports an average of them. Activities recorded without distance (time-only sports) have `time`,
`moving` and their sensor streams only.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import accumulate
from typing import Any

import polyline as polyline_codec

STREAM_TYPES: tuple[str, ...] = (
    "time",
    "distance",
    "latlng",
    "altitude",
    "velocity_smooth",
    "heartrate",
    "cadence",
    "watts",
    "temp",
    "moving",
    "grade_smooth",
)
# The real service adds these to any request (recorded answers: an unknown or missing type still gets `distance`;
# see `requested`); the spec flavour answers exactly what was asked for.
REAL_ALWAYS = ("distance", "time")
_GRADE_WINDOW = 5  # samples each side for grade_smooth
_SPEED_SWING = (0.06, 0.14)  # road speed swings of ± this share around the mean, between anchors
_SPEED_PERIOD = 240  # seconds per road speed swing
_WAVE_SAMPLES = (150, 420)  # moving seconds per rolling-terrain wave in altitude
_FIT_ROUNDS = 8  # rounds of fitting road heart rate to both the splits' and the laps' means

Anchor = tuple[int, float]


def _seeded(*parts: object) -> random.Random:
    return random.Random(":".join(map(str, ("streams", *parts))))


def _spread(total: int, weights: Sequence[float]) -> list[int]:
    """Integers proportional to `weights` that sum exactly to `total` (largest remainder)."""
    s = sum(weights)
    if not weights:
        return []
    if s <= 0:
        return [total] + [0] * (len(weights) - 1)
    scaled = [w * total / s for w in weights]
    out = [math.floor(v) for v in scaled]
    order = sorted(range(len(weights)), key=lambda i: (out[i] - scaled[i], i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


class ActivityStreams:
    """Every stream one activity has, each built on first use (a request pays only for the channels it reads)."""

    def __init__(self, activity_id: int, data: Mapping[str, Any], efforts: Sequence[Mapping[str, Any]]) -> None:
        self.id = activity_id
        self.data = data
        self.moving_time = int(data.get("moving_time") or 0)
        self.elapsed_time = max(int(data.get("elapsed_time") or 0), self.moving_time)
        self.distance = float(data.get("distance") or 0.0)
        self.splits: list[Mapping[str, Any]] = list(data.get("splits_metric") or [])
        self.laps: list[Mapping[str, Any]] = sorted(data.get("laps") or [], key=lambda lap: lap["start_index"])
        m = self.moving_time
        self.efforts = sorted(
            (
                e
                for e in efforts
                if 0 <= int(e.get("start_index", -1)) < int(e.get("end_index", -1)) <= m
                and float(e.get("distance") or 0) > 0
            ),
            key=lambda e: int(e["start_index"]),
        )
        self.has_distance = self.distance > 0 and bool(self.splits)

    # -- which streams exist ----------------------------------------------------------------------------------

    @cached_property
    def available(self) -> tuple[str, ...]:
        d = self.data
        have = {"time", "moving"}
        if self.has_distance:
            have |= {"distance", "velocity_smooth"}
            if d.get("elev_high") is not None and d.get("elev_low") is not None:
                have |= {"altitude", "grade_smooth"}
            if d.get("start_latlng") and (d.get("map") or {}).get("polyline"):
                have.add("latlng")
        if d.get("has_heartrate") and d.get("average_heartrate") is not None:
            have.add("heartrate")
        if d.get("device_watts") and d.get("average_watts") is not None:
            have.add("watts")
        if d.get("average_cadence") is not None:
            have.add("cadence")
        if d.get("average_temp") is not None:
            have.add("temp")
        return tuple(t for t in STREAM_TYPES if t in have)

    def stream(self, kind: str) -> list[Any]:
        if kind not in self.available:
            raise KeyError(kind)
        built: list[Any] = getattr(self, f"_{kind}")
        return built

    @property
    def size(self) -> int:
        return self.moving_time + 1

    # -- anchors: where the stored figures pin the samples ------------------------------------------------------

    @cached_property
    def _split_bounds(self) -> list[tuple[int, float, int]]:
        """(sample index, cumulative distance, cumulative stopped seconds) at the end of each split."""
        out, idx, x, stopped = [], 0, 0.0, 0
        for s in self.splits:
            idx += int(s["moving_time"])
            x = round(x + float(s["distance"]), 1)
            stopped += int(s["elapsed_time"]) - int(s["moving_time"])
            out.append((min(idx, self.moving_time), x, stopped))
        return out

    @cached_property
    def _lap_bounds(self) -> list[tuple[int, float, int]]:
        out, x, clock = [], 0.0, 0
        for lap in self.laps:
            x = round(x + float(lap["distance"]), 1)
            clock += int(lap["elapsed_time"])
            end = min(int(lap["end_index"]), self.moving_time)
            out.append((end, x, clock - end))
        return out

    @cached_property
    def _effort_spans(self) -> list[tuple[int, int]]:
        return [(int(e["start_index"]), int(e["end_index"])) for e in self.efforts]

    def _in_effort(self, a: int, b: int) -> bool:
        """Whether the samples a..b lie inside one effort's span."""
        return any(i0 <= a and b <= i1 for i0, i1 in self._effort_spans)

    @cached_property
    def _anchors(self) -> list[Anchor]:
        """(sample index, cumulative distance) through which `distance` passes exactly."""
        m, total = self.moving_time, round(self.distance, 1)
        hard: dict[int, float] = {0: 0.0, m: total}
        for idx, x, _ in self._split_bounds + self._lap_bounds:
            hard.setdefault(idx, min(x, total))
        points = sorted(hard.items())
        pinned: dict[int, float] = {}
        loose: list[Mapping[str, Any]] = []
        indices = [i for i, _ in points]
        for e in self.efforts:  # an effort crossing split or lap boundaries: its line fitted through them
            i0, i1, length = int(e["start_index"]), int(e["end_index"]), float(e["distance"])
            inside = points[bisect.bisect_right(indices, i0) : bisect.bisect_left(indices, i1)]
            if not inside:
                loose.append(e)
                continue
            v = length / (i1 - i0)
            start = hard.get(i0, sum(x - v * (i - i0) for i, x in inside) / len(inside))
            if i0 not in hard:  # its end on the next boundary at the latest (on it when it ends there)
                after = points[bisect.bisect_left(indices, i1)]
                start = after[1] - length if after[0] == i1 else min(start, after[1] - length)
                start = max(start, points[bisect.bisect_right(indices, i0) - 1][1])
            pinned.setdefault(i0, start)
            pinned.setdefault(i1, start + length)
        merged = dict(hard)
        for i, x in pinned.items():
            merged.setdefault(i, x)
        points = sorted(merged.items())
        indices = [i for i, _ in points]
        groups: dict[int, list[Mapping[str, Any]]] = {}
        for e in loose:  # efforts inside one interval: the road around them shares what remains
            groups.setdefault(bisect.bisect_right(indices, int(e["start_index"])) - 1, []).append(e)
        for k, group in groups.items():
            (ia, xa), (ib, xb) = points[k], points[min(k + 1, len(points) - 1)]
            lengths = sum(float(e["distance"]) for e in group)
            secs = sum(int(e["end_index"]) - int(e["start_index"]) for e in group)
            road_x, road_t = (xb - xa) - lengths, (ib - ia) - secs
            rate = road_x / road_t if road_x > 0 and road_t > 0 else None
            pos_i, pos_x = ia, xa
            for e in group:
                i0, i1, length = int(e["start_index"]), int(e["end_index"]), float(e["distance"])
                if rate is None:
                    start = xa + (xb - xa) * (i0 - ia) / max(1, ib - ia)
                else:
                    start = pos_x + rate * (i0 - pos_i)
                start = min(max(start, pos_x), max(pos_x, xb - length))
                merged.setdefault(i0, start)
                merged.setdefault(i1, min(start + length, xb))
                pos_i, pos_x = i1, min(start + length, xb)
        out: list[Anchor] = []
        fixed = sorted(hard.items())
        fixed_at = [i for i, _ in fixed]
        for i, x in sorted(merged.items()):  # never backwards; an effort's point never past the next fixed one
            if i not in hard:
                x = min(x, fixed[min(bisect.bisect_right(fixed_at, i), len(fixed) - 1)][1])
            out.append((i, min(max(x, out[-1][1] if out else 0.0), total)))
        return out

    # -- channels ----------------------------------------------------------------------------------------------

    @cached_property
    def _time(self) -> list[int]:
        """Moving second i at clock time i + the stops before it; each stop inside its split or lap."""
        m = self.moving_time
        checkpoints: dict[int, int] = {0: 0, m: self.elapsed_time - m}
        for idx, _, stopped in self._split_bounds + self._lap_bounds:
            checkpoints.setdefault(idx, stopped)
        gaps = [0] * (m + 1)
        previous_i, previous_p = 0, 0
        for i, p in sorted(checkpoints.items()):
            if i == 0:
                continue
            extra = p - previous_p
            if extra > 0:
                gaps[self._stop_at(previous_i, i)] += extra
            previous_i, previous_p = i, max(p, previous_p)
        out, clock = [], 0
        for i in range(m + 1):
            clock += gaps[i]
            out.append(i + clock)
        return out

    def _stop_at(self, a: int, b: int) -> int:
        """A sample in (a, b] outside every effort's span, near the middle: the stop comes just before it."""
        mid = (a + b + 1) // 2
        for offset in range(b - a):
            for j in (mid - offset, mid + offset):
                if a < j <= b and not any(i0 < j <= i1 for i0, i1 in self._effort_spans):
                    return j
        return b

    @cached_property
    def _moving(self) -> list[bool]:
        return [False] + [True] * self.moving_time

    @cached_property
    def _distance_raw(self) -> list[float]:
        rng = _seeded(self.id, "distance")
        out = [0.0] * (self.moving_time + 1)
        anchors = self._anchors
        max_speed = float(self.data.get("max_speed") or 0.0)
        sin = math.sin
        for (ia, xa), (ib, xb) in zip(anchors, anchors[1:]):
            n, dx = ib - ia, xb - xa
            if n <= 0:
                continue
            share = rng.uniform(*_SPEED_SWING)
            if max_speed > 0 and dx > 0:  # the swing's top stays under the activity's max_speed
                share = min(share, max(0.0, max_speed * n / dx * 0.97 - 1.0))
            if n < 8 or share <= 0 or self._in_effort(ia, ib):
                step = dx / n
                out[ia + 1 : ib + 1] = [xa + step * j for j in range(1, n + 1)]
                continue
            waves = max(1, round(n / _SPEED_PERIOD))
            amp, phase_step = share / (2 * math.pi * waves), 2 * math.pi * waves / n
            out[ia + 1 : ib + 1] = [xa + dx * (j / n + amp * sin(phase_step * j)) for j in range(1, n + 1)]
        out[-1] = anchors[-1][1]
        return out

    @cached_property
    def _distance(self) -> list[float]:
        return [round(x * 10) / 10 for x in self._distance_raw]

    @cached_property
    def _velocity_smooth(self) -> list[float]:
        """The speed over the 4 moving seconds around each sample (2 at the ends), never above its lap's max_speed.

        Boundaries are whole seconds, so two of them a few metres apart can be a second closer than the course
        had them: a burst the device's smoothing never shows. The lap's max_speed is the top of its stretch.
        """
        d, m = self._distance_raw, self.moving_time
        if m < 4:
            raw = [0.0] + [round(d[i] - d[i - 1], 1) for i in range(1, m + 1)]
        else:
            middle = [round((b - a) * 2.5) / 10 for a, b in zip(d, d[4:])]
            ends = [round((d[3] - d[0]) / 3, 1), round((d[m] - d[m - 3]) / 3, 1), round((d[m] - d[m - 2]) / 2, 1)]
            raw = [0.0, ends[0], *middle, ends[1], ends[2]]
        top = [float(self.data.get("max_speed") or 0.0)] * len(raw)
        for lap in self.laps:
            if lap.get("max_speed"):
                a, b = int(lap["start_index"]), min(int(lap["end_index"]), m)
                top[a + 1 : b + 1] = [float(lap["max_speed"])] * (b - a)
        return [min(v, cap) if cap > 0 else v for v, cap in zip(raw, top)]

    @cached_property
    def _latlng(self) -> list[tuple[float, float]]:
        """Along the map's polyline, at each sample's share of the distance."""
        points = polyline_codec.decode(self.data["map"]["polyline"], 5)
        if len(points) < 2:
            return [(points[0][0], points[0][1])] * self.size if points else []
        cum = [0.0]
        for (la1, lo1), (la2, lo2) in zip(points, points[1:]):
            k = math.cos(math.radians((la1 + la2) / 2))
            cum.append(cum[-1] + math.hypot(la2 - la1, (lo2 - lo1) * k))
        scale = (cum[-1] or 1.0) / (self.distance or 1.0)
        targets = [min(cum[-1], max(0.0, x * scale)) for x in self._distance_raw]
        out: list[tuple[float, float]] = []
        start = 0
        for j in range(len(points) - 1):  # the samples on each polyline edge, in one sweep
            end = bisect.bisect_right(targets, cum[j + 1], lo=start) if j < len(points) - 2 else len(targets)
            (la1, lo1), (la2, lo2), c0 = points[j], points[j + 1], cum[j]
            span = cum[j + 1] - c0
            if span <= 0:
                out += [(la1, lo1)] * (end - start)
            else:
                dla, dlo = (la2 - la1) / span, (lo2 - lo1) / span
                a1, o1, dla, dlo = la1 * 1e6, lo1 * 1e6, dla * 1e6, dlo * 1e6  # whole microdegrees: 6 decimals
                steps = [t - c0 for t in targets[start:end]]
                out += zip([round(a1 + dla * x) / 1e6 for x in steps], [round(o1 + dlo * x) / 1e6 for x in steps])
            start = end
        return out

    @cached_property
    def _altitude_dm(self) -> list[int]:
        """Altitude in decimetres: splits' elevation differences exactly, laps' gains exactly, lowest at elev_low."""
        rng = _seeded(self.id, "altitude")
        wave = rng.randint(*_WAVE_SAMPLES)
        pieces: list[tuple[int, int, int]] = []  # (start index, end index, net change in dm)
        a = 0
        lap_cuts = sorted({int(lap["end_index"]) for lap in self.laps})
        for (b, _, _), split in zip(self._split_bounds, self.splits):
            net = round(float(split.get("elevation_difference") or 0.0) * 10)
            cuts = [a] + lap_cuts[bisect.bisect_right(lap_cuts, a) : bisect.bisect_left(lap_cuts, b)] + [b]
            shares = _spread(net, [q - p for p, q in zip(cuts, cuts[1:])]) if net >= 0 else None
            if shares is None:  # a fall: spread its size, then make it one
                shares = [-v for v in _spread(-net, [q - p for p, q in zip(cuts, cuts[1:])])]
            pieces += [(p, q, v) for p, q, v in zip(cuts, cuts[1:], shares)]
            a = b
        ups = [max(net, 0) for _, _, net in pieces]
        lap_ends = [end for end, _, _ in self._lap_bounds]
        lap_of = [min(bisect.bisect_left(lap_ends, (p0 + p1) / 2), len(self.laps) - 1) for p0, p1, _ in pieces]
        for n, lap in enumerate(self.laps):  # what a lap climbs beyond its splits' net rises: rolling waves
            mine = [k for k, owner in enumerate(lap_of) if owner == n and pieces[k][1] - pieces[k][0] >= 6]
            extra = round(float(lap.get("total_elevation_gain") or 0.0) * 10) - sum(
                max(pieces[k][2], 0) for k, owner in enumerate(lap_of) if owner == n
            )
            if extra > 0 and mine:
                for k, share in zip(mine, _spread(extra, [pieces[k][1] - pieces[k][0] for k in mine])):
                    ups[k] += share
        z = [0] * (self.moving_time + 1)
        level = 0
        for (p0, p1, net), up in zip(pieces, ups):
            down = up - net
            runs: list[int] = []
            if up > 0 and down > 0:
                waves = max(1, min((p1 - p0) // 6, round((p1 - p0) / wave)))
                for u, d in zip(_spread(up, [1.0] * waves), _spread(down, [1.0] * waves)):
                    runs += [r for r in (u, -d) if r]
            elif net:
                runs = [net]
            if not runs or p1 <= p0:
                for i in range(p0 + 1, p1 + 1):
                    z[i] = level
                continue
            lengths = _spread(p1 - p0 - len(runs), [abs(r) + 1.0 for r in runs])
            i = p0
            for r, extra_len in zip(runs, lengths):
                steps = extra_len + 1
                for t in range(1, steps + 1):
                    z[i + t] = level + round(r * t / steps)
                i += steps
                level += r
        shift = round(float(self.data["elev_low"]) * 10) - min(z)
        return [v + shift for v in z]

    @cached_property
    def _altitude(self) -> list[float]:
        return [v / 10 for v in self._altitude_dm]

    @cached_property
    def _grade_smooth(self) -> list[float]:
        """Rise over run across 2 × 5 moving seconds (fewer at the ends), in percent."""
        z, d, m, w = self._altitude_dm, self._distance_raw, self.moving_time, _GRADE_WINDOW

        def grade(lo: int, hi: int) -> float:
            run = d[hi] - d[lo]
            return round((z[hi] - z[lo]) * 10 / run, 1) if run >= 1.0 else 0.0

        if m <= 2 * w:
            return [grade(max(0, i - w), min(m, i + w)) for i in range(m + 1)]
        middle = [
            round((zb - za) * 100 / run) / 10 if (run := db - da) >= 1.0 else 0.0
            for za, zb, da, db in zip(z, z[2 * w :], d, d[2 * w :])
        ]
        head = [grade(0, i + w) for i in range(w)]
        tail = [grade(i - w, m) for i in range(m - w + 1, m + 1)]
        return head + middle + tail

    # -- sensor channels: integers with exact means over pieces ---------------------------------------------

    def _boundaries(self, with_splits: bool) -> list[int]:
        cuts = {0, self.moving_time}
        for lap in self.laps:
            cuts |= {int(lap["start_index"]), int(lap["end_index"])}
        for i0, i1 in self._effort_spans:
            cuts |= {i0, i1}
        if with_splits:
            cuts |= {idx for idx, _, _ in self._split_bounds}
        return sorted(c for c in cuts if 0 <= c <= self.moving_time)

    def _road_targets(self, ranges: list[tuple[int, int, float | None]], field: str) -> list[tuple[int, int, float]]:
        """Per range (a, b] with its mean: the mean of its samples outside efforts, given the efforts' own means."""
        out = []
        for a, b, mean in ranges:
            if mean is None or b <= a:
                continue
            total, road = mean * (b - a), b - a
            for e, (i0, i1) in zip(self.efforts, self._effort_spans):
                overlap = min(b, i1) - max(a, i0)
                if overlap > 0 and e.get(field) is not None:
                    total -= float(e[field]) * overlap
                    road -= overlap
            if road > 0:
                out.append((a, b, total / road))
        return out

    def _pieces(
        self, cuts: list[int], road: list[tuple[int, int, float]], field: str, overall: float
    ) -> list[tuple[int, int, float]]:
        """(a, b, mean) for the samples a+1..b between consecutive cuts: an effort's mean inside it, the road
        mean of the range around it otherwise."""
        out = []
        starts = [a for a, _, _ in road]
        for a, b in zip(cuts, cuts[1:]):
            if b <= a:
                continue
            effort = next(
                (e for e, (i0, i1) in zip(self.efforts, self._effort_spans) if i0 <= a and b <= i1 and e.get(field)),
                None,
            )
            if effort is not None:
                out.append((a, b, float(effort[field])))
                continue
            k = bisect.bisect_right(starts, a) - 1
            mean = road[k][2] if 0 <= k < len(road) and road[k][0] <= a and b <= road[k][1] else overall
            out.append((a, b, mean))
        return out

    def _integers(
        self,
        pieces: list[tuple[int, int, float]],
        pattern: list[float],
        *,
        scaled: bool = False,
        cap: list[int] | None = None,
        low: int = 0,
        spikes: Mapping[int, int] | None = None,
    ) -> list[int]:
        """Integer samples whose sum over each piece is its mean × length, rounded: the pattern moved to the
        piece's mean (added, or multiplied when `scaled`, which keeps a power stream's zeros), rounded by error
        diffusion, capped, spiked, then nudged one unit at a time back to each piece's sum."""
        out = [0] * (self.moving_time + 1)
        spikes = spikes or {}
        for a, b, mean in pieces:
            part = pattern[a + 1 : b + 1]
            have = sum(part) / len(part)
            if scaled:
                k = mean / have if have > 0 else 0.0
                raw = [v * k for v in part] if have > 0 else [mean] * len(part)
            else:
                shift = mean - have
                raw = [v + shift for v in part]
            sums = [round(x) for x in accumulate(raw, initial=0.0)]
            out[a + 1 : b + 1] = [y - x for x, y in zip(sums, sums[1:])]
        top = cap
        if top is not None:
            out = [c if v > c else low if v < low else v for v, c in zip(out, top)]
        else:
            out = [low if v < low else v for v in out]
        for i, value in spikes.items():
            out[i] = value
        for a, b, mean in pieces:
            diff = round(mean * (b - a)) - sum(out[a + 1 : b + 1])
            if not diff:
                continue
            free = [i for i in range(a + 1, b + 1) if i not in spikes]
            while diff and free:
                step = 1 if diff > 0 else -1
                moved = False
                for i in free[:: max(1, len(free) // abs(diff))]:
                    if diff == 0:
                        break
                    if out[i] + step >= low and (top is None or out[i] + step <= top[i]):
                        out[i] += step
                        diff -= step
                        moved = True
                if not moved:
                    break
        out[0] = out[1] if self.moving_time else 0
        return out

    def _fitted(
        self, pieces: list[tuple[int, int, float]], partitions: list[list[tuple[int, int, float | None]]]
    ) -> list[tuple[int, int, float]]:
        """The road pieces' means moved until each range of every partition (splits, laps) has its mean: each
        range's shortfall spread over its road pieces, in turn, a few rounds (alternating projections); the
        efforts' pieces stay as they are."""
        means = [mean for _, _, mean in pieces]
        road = [not any(i0 <= a and b <= i1 for i0, i1 in self._effort_spans) for a, b, _ in pieces]
        starts = [a for a, _, _ in pieces]
        for _ in range(_FIT_ROUNDS):
            for ranges in partitions:
                for a, b, target in ranges:
                    if target is None or b <= a:
                        continue
                    ks = range(bisect.bisect_left(starts, a), bisect.bisect_left(starts, b))
                    free = sum(pieces[k][1] - pieces[k][0] for k in ks if road[k])
                    if free:
                        shift = (target * (b - a) - sum(means[k] * (pieces[k][1] - pieces[k][0]) for k in ks)) / free
                        for k in ks:
                            if road[k]:
                                means[k] += shift
        return [(a, b, mean) for (a, b, _), mean in zip(pieces, means)]

    def _split_ranges(self, field: str) -> list[tuple[int, int, float | None]]:
        out, a = [], 0
        for (b, _, _), split in zip(self._split_bounds, self.splits):
            out.append((a, b, split.get(field)))
            a = b
        return out

    def _lap_ranges(self, field: str) -> list[tuple[int, int, float | None]]:
        return [(int(lap["start_index"]), int(lap["end_index"]), lap.get(field)) for lap in self.laps]

    def _wave(self, rng: random.Random, amplitude: float, period: tuple[float, float], noise: float) -> list[float]:
        """A slow swing plus noise, one value per sample: one period and a noise table, tiled (no draw per sample)."""
        size, length = self.moving_time + 1, max(2, round(rng.uniform(*period)))
        phase, sin = rng.uniform(0, 2 * math.pi), math.sin
        swing = [amplitude * sin(phase + 2 * math.pi * j / length) for j in range(length)]
        table = [rng.gauss(0, noise) for _ in range(97)]
        swings = (swing * (size // length + 1))[:size]
        noises = (table * (size // 97 + 1))[:size]
        return [a + b for a, b in zip(swings, noises)]

    @cached_property
    def _effort_mask(self) -> list[bool]:
        """Whether sample i (the moving second ending at i) lies inside an effort."""
        mask = [False] * (self.moving_time + 1)
        for i0, i1 in self._effort_spans:
            mask[i0 + 1 : i1 + 1] = [True] * (i1 - i0)
        return mask

    @cached_property
    def _heartrate(self) -> list[int]:
        rng = _seeded(self.id, "heartrate")
        average = float(self.data["average_heartrate"])
        top = int(self.data.get("max_heartrate") or round(average) + 10)
        use_splits = any(s.get("average_heartrate") is not None for s in self.splits)
        ranges = self._split_ranges("average_heartrate") if use_splits else self._lap_ranges("average_heartrate")
        road = self._road_targets(ranges, "average_heartrate")
        pieces = self._pieces(self._boundaries(with_splits=True), road, "average_heartrate", average)
        if use_splits:
            pieces = self._fitted(pieces, [ranges, self._lap_ranges("average_heartrate")])
        m = self.moving_time
        cap = [top] * (m + 1)
        lap_tops: list[tuple[int, int, int]] = []
        for lap in self.laps:  # a lap's samples stay under its highest, an effort's under its own (it wins)
            a, b, high = int(lap["start_index"]), int(lap["end_index"]), lap.get("max_heartrate")
            if high is not None and b > a:
                ceiling = int(high)
                cap[a + 1 : b + 1] = [ceiling if c > ceiling else c for c in cap[a + 1 : b + 1]]
                lap_tops.append((min(int(high), top), a, b))
        spikes: dict[int, int] = {}
        for e, (i0, i1) in zip(self.efforts, self._effort_spans):
            if e.get("max_heartrate") is not None:
                high = min(int(e["max_heartrate"]), top)
                cap[i0 + 1 : i1 + 1] = [high] * (i1 - i0)
                spikes[i0 + max(1, (i1 - i0) * 3 // 4)] = high
        for high, a, b in lap_tops:
            if not any(a < i <= b and v == high for i, v in spikes.items()):
                spot = self._quiet_sample(rng, a, b, spikes)
                if spot is not None:
                    spikes[spot] = high
        if top not in spikes.values():  # the activity's maximum: in the lap that comes closest to it
            a, b = max(lap_tops, default=(top, 0, m))[1:]
            spot = self._quiet_sample(rng, a, b, spikes) or self._quiet_sample(rng, 0, m, spikes)
            if spot is not None:
                spikes[spot] = top
        for i, value in spikes.items():
            cap[i] = max(cap[i], value)
        pattern = self._wave(rng, 2.5, (180, 420), 0.8)
        return self._integers(pieces, pattern, cap=cap, low=40, spikes=spikes)

    def _quiet_sample(self, rng: random.Random, a: int, b: int, taken: Mapping[int, int]) -> int | None:
        """A sample in a+1..b outside every effort and not spiked yet."""
        if b <= a:
            return None
        start, mask = rng.randint(a + 1, b), self._effort_mask
        for offset in range(b - a):
            i = a + 1 + (start - a - 1 + offset) % (b - a)
            if i not in taken and not mask[i]:
                return i
        return None

    @cached_property
    def _watts(self) -> list[int]:
        """Power varies more than heart rate, with coasting zeros outdoors; efforts are steadier."""
        rng = _seeded(self.id, "watts")
        average = float(self.data["average_watts"])
        top = self.data.get("max_watts")
        indoor = bool(self.data.get("trainer"))
        sd, zero = (0.12, 0.01) if indoor else (0.22, 0.07)
        road = self._road_targets(self._lap_ranges("average_watts"), "average_watts")
        pieces = self._pieces(self._boundaries(with_splits=False), road, "average_watts", average)
        m = self.moving_time
        limit = int(top) - 1 if top else 10 * round(average)
        spikes: dict[int, int] = {}
        cap = [max(0, limit)] * (m + 1)
        if top:
            spot = self._quiet_sample(rng, 0, m, spikes) or m
            spikes[spot] = cap[spot] = int(top)
        swing = self._wave(rng, 0.5 * sd, (20, 90), 0.85 * sd)
        coasting = [rng.random() < zero for _ in range(101)]
        coasts = (coasting * (m // 101 + 1))[: m + 1]
        pattern = [
            0.0 if coast and not inside else 1.0 + (w * 0.5 if inside else w)
            for w, inside, coast in zip(swing, self._effort_mask, coasts)
        ]
        pattern = [v if v > 0.05 or v == 0.0 else 0.05 for v in pattern]
        return self._integers(pieces, pattern, scaled=True, cap=cap, low=0, spikes=spikes)

    @cached_property
    def _cadence(self) -> list[int]:
        rng = _seeded(self.id, "cadence")
        average = float(self.data["average_cadence"])
        road = self._road_targets([(0, self.moving_time, average)], "average_cadence")
        pieces = self._pieces(self._boundaries(with_splits=False), road, "average_cadence", average)
        return self._integers(pieces, self._wave(rng, 1.0, (60, 240), 1.5), low=0)

    @cached_property
    def _temp(self) -> list[int]:
        rng = _seeded(self.id, "temp")
        pieces = [(0, self.moving_time, float(self.data["average_temp"]))]
        pattern = self._wave(rng, 1.2, (self.moving_time + 1, self.moving_time + 2), 0.0)
        return self._integers(pieces, pattern, low=-40)


def generate(activity_id: int, data: Mapping[str, Any], efforts: Sequence[Mapping[str, Any]]) -> ActivityStreams | None:
    """The activity's streams, or None when it has none (manual entries: the real service answers 404)."""
    if data.get("manual") or int(data.get("moving_time") or 0) < 1:
        return None
    return ActivityStreams(activity_id, data, efforts)


def requested(keys: str, flavor: str, available: Sequence[str]) -> list[str]:
    """The stream types to answer, in request order: unknown names are ignored (the real service answers an
    unknown type with the distance stream, not a 400: javastravav3api issue 88), types the activity lacks are left
    out (the swagger: "if the activity does not have that stream it will not be included"). The real flavour adds
    `distance` and `time` to any request: recorded answers show `distance` coming with other types and with unknown
    ones (stravadotnet issue 32, javastravav3api issue 88), and clients report `time` alike."""
    wanted = [k for k in dict.fromkeys(p.strip() for p in keys.split(",")) if k in STREAM_TYPES]
    if flavor == "real":
        wanted += [k for k in REAL_ALWAYS if k not in wanted]
    return [k for k in wanted if k in available]


def outside_zone(points: Sequence[Sequence[float]], home: tuple[float, float], radius: float) -> list[bool]:
    """Whether each point lies farther than `radius` metres from home (a flat approximation: the zone is small)."""
    k = math.pi * 6_371_000 / 180
    lat0, lng0, cos0 = home[0], home[1], math.cos(math.radians(home[0]))
    r2 = radius * radius
    return [((p[0] - lat0) * k) ** 2 + ((p[1] - lng0) * k * cos0) ** 2 > r2 for p in points]


def answer(
    channels: Mapping[str, Sequence[Any]], order: Sequence[str], *, keyed: bool, series_type: str
) -> dict[str, Any] | list[dict[str, Any]]:
    """The StreamSet: keyed by type ({"distance": {"data", "series_type", "original_size", "resolution"}}), or the
    list of the same objects each with its `type`; full resolution always ("high", original_size = len(data))."""
    streams = [
        (k, {"data": channels[k], "series_type": series_type, "original_size": len(channels[k]), "resolution": "high"})
        for k in order
    ]
    if keyed:
        return dict(streams)
    return [{"type": k, **body} for k, body in streams]
