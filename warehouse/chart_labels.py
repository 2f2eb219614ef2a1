"""Labels beside a chart's dots placed where they overlap nothing: no other label, no dot, not the plot's edge, and
where they can, no line. Vega-Lite places text at a fixed offset from its point, so close efforts wrote over each
other (1:27:40 / 1:30:00 / 2:00:00 on a power curve, a label across the axis' "4 h"); here each label's box is
worked out in pixels from the chart's own scales (explicit domains, so the mapping is known) and the first free spot
of a few around its dot is taken, in an order that keeps one series' labels above its dots and the other's below.
A label with no free spot is left out (and counted), never drawn over another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Glyph widths of the charts' sans-serif at 1 px (Liberation Sans, as vl-convert draws it): digits 0.556 em, the
# colon 0.278 em; others as a digit.
NARROW = {":": 0.278, ".": 0.278, " ": 0.278, "/": 0.278}
DIGIT = 0.556
DOT_RADIUS = 4.5  # a circle mark of size 55 px² has a radius of 4.2 px
GAP = 2.0


@dataclass(frozen=True)
class Plot:
    """The plot area in pixels and its scales' domains (x logarithmic or linear, y linear; both as drawn: nice off,
    no padding)."""

    width: float
    height: float
    x_domain: tuple[float, float]
    y_domain: tuple[float, float]
    x_log: bool = False

    def pixels(self, x: float, y: float) -> tuple[float, float]:
        (x0, x1), (y0, y1) = self.x_domain, self.y_domain
        share = math.log(x / x0) / math.log(x1 / x0) if self.x_log else (x - x0) / (x1 - x0)
        return share * self.width, (1 - (y - y0) / (y1 - y0)) * self.height

    def data(self, px: float, py: float) -> tuple[float, float]:
        (x0, x1), (y0, y1) = self.x_domain, self.y_domain
        share = px / self.width
        x = x0 * (x1 / x0) ** share if self.x_log else x0 + share * (x1 - x0)
        return x, y0 + (1 - py / self.height) * (y1 - y0)


@dataclass(frozen=True)
class Line:
    """A line drawn on the plot, in data units: a step-before line (each step vertical, then across, as Vega draws
    `interpolate="step-before"`) or straight segments; `width` in pixels."""

    points: Sequence[tuple[float, float]]
    width: float
    steps: bool = True


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    above: bool  # its preferred side: above its dot (else below)


Box = tuple[float, float, float, float]  # left, top, right, bottom, in pixels


def text_width(text: str, font_size: float) -> float:
    return sum(NARROW.get(c, DIGIT) for c in text) * font_size


def place(
    plot: Plot,
    labels: Sequence[Label],
    dots: Sequence[tuple[float, float]],
    lines: Sequence[Line] = (),
    font_size: float = 10,
) -> list[tuple[float, float] | None]:
    """Each label's centre in data units (for a text mark with align center, baseline middle), or None where no spot
    around its dot is free. `dots`: every dot drawn (labelled or not). Where it can, a label also keeps off `lines`
    and sits nearer its own dot than any other (beside another dot it reads as that one's)."""
    centres = [plot.pixels(x, y) for x, y in dots]
    taken: list[Box] = [_around(centre, DOT_RADIUS) for centre in centres]
    strokes = [box for line in lines for box in _strokes(plot, line)]
    placed: list[tuple[float, float] | None] = []
    for label in labels:
        cx, cy = plot.pixels(label.x, label.y)
        width, height = text_width(label.text, font_size) + 2, font_size + 1
        boxes = [_box(cx + dx, cy + dy, width, height) for dx, dy in _spots(width, height, label.above)]
        inside = [b for b in boxes if b[0] >= 0 and b[1] >= 0 and b[2] <= plot.width and b[3] <= plot.height]
        free = [b for b in inside if not any(_overlap(b, t) for t in taken)]
        own = [b for b in free if _nearest(b, centres) in (None, (cx, cy))]
        clear = [b for b in own if not any(_overlap(b, s) for s in strokes)]
        options = clear or own or free
        if not options:
            placed.append(None)
            continue
        chosen = options[0]
        taken.append(chosen)
        placed.append(plot.data((chosen[0] + chosen[2]) / 2, (chosen[1] + chosen[3]) / 2))
    return placed


def _spots(width: float, height: float, above: bool) -> list[tuple[float, float]]:
    """Offsets of a label's centre from its dot, in order of preference: on its side (straight, then diagonally, then
    a line further out), beside the dot, then on the other side likewise."""
    out = DOT_RADIUS + GAP + height / 2
    side = DOT_RADIUS + GAP + width / 2
    rows = [out, out + height]
    near = [(dx, -dy) for dy in rows for dx in (0.0, width / 2, -width / 2)]
    far = [(dx, -dy) for dx, dy in near]
    mine, other = (near, far) if above else (far, near)
    beside = [(side, 0.0), (-side, 0.0), (side, -height if above else height), (-side, -height if above else height)]
    return [*mine, *beside, *other]


def _box(cx: float, cy: float, width: float, height: float) -> Box:
    return cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2


def _around(point: tuple[float, float], radius: float) -> Box:
    return point[0] - radius, point[1] - radius, point[0] + radius, point[1] + radius


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _nearest(box: Box, centres: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """The dot nearest the box's centre: the one a reader takes the label for."""
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return min(centres, key=lambda c: math.hypot(c[0] - x, c[1] - y), default=None)


def _strokes(plot: Plot, line: Line) -> list[Box]:
    """The boxes a line's strokes cover: a step-before line from each point vertically to the next one's height,
    then across to it; else each straight segment's bounding box."""
    points = [plot.pixels(x, y) for x, y in line.points]
    half = line.width / 2 + 0.5
    boxes = []
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if line.steps:
            boxes.append((x0 - half, min(y0, y1) - half, x0 + half, max(y0, y1) + half))
            boxes.append((min(x0, x1) - half, y1 - half, max(x0, x1) + half, y1 + half))
        else:
            boxes.append((min(x0, x1) - half, min(y0, y1) - half, max(x0, x1) + half, max(y0, y1) + half))
    return boxes
