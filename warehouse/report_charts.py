"""The report's charts, in Altair (Vega-Lite), rendered to PNG offline by vl-convert.

Each function takes the analysis frames (Polars) and returns an Altair chart; dates go to Vega-Lite as local
wall-clock strings (no zone), so they display as the athlete's local days wherever the report is rendered.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, cast

import altair as alt
import polars as pl
import vl_convert as vlc

from . import chart_labels

WIDTH = 760
YTD_YEARS = 6  # seasons compared in the year-to-date chart
FONT = "Helvetica, Arial, sans-serif"
BAND_COLORS = {
    "high risk": "#f4c7c3",
    "optimal": "#cfe8cf",
    "grey zone": "#e6e6e6",
    "fresh": "#cfe0f4",
    "transition": "#fbe3b8",
}
ZONE_COLORS = {
    5: ["#9ecae1", "#74c476", "#f6d04d", "#fb8c00", "#d7301f"],
    # power: a ramp of its own, so one colour never means two different zones side by side (ColorBrewer's Purples,
    # its seven darkest: the two lightest are hardly seen on white, and zone 1 is most of most weeks)
    7: ["#dadaeb", "#bcbddc", "#9e9ac8", "#807dba", "#6a51a3", "#54278f", "#3f007d"],
}
ZONE_TYPE_LABELS = {"heartrate": "heart-rate", "power": "power"}
# One colour-blind-safe palette (Okabe & Ito) for every categorical colour; zones keep their ordered ramps.
OKABE_ITO = {
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "purple": "#CC79A7",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}
CTL_COLOR, ATL_COLOR, TSB_COLOR = OKABE_ITO["blue"], OKABE_ITO["vermillion"], "#222222"
PR_COLOR = OKABE_ITO["orange"]
# Load sources, best first; a load that is not a measurement of the day (activity_load.measured false: power on an
# FTP known only later, heart rate from partial buckets) pale beside its source; an estimate grey.
LOAD_SOURCES = {
    "power": ("power TSS", OKABE_ITO["blue"]),
    "power unmeasured": ("power TSS on an FTP known later", OKABE_ITO["sky"]),
    "heart_rate": ("heart-rate TSS", OKABE_ITO["purple"]),
    "heart_rate unmeasured": ("heart-rate TSS, partly estimated", "#E8BFD6"),
    "pace": ("pace TSS", OKABE_ITO["green"]),
    "suffer_score": ("relative effort", OKABE_ITO["orange"]),
    "estimate": ("estimate (duration × sport)", "#b8b8b8"),
}
YEAR_COLORS = [OKABE_ITO[c] for c in ("sky", "green", "purple", "orange", "yellow", "vermillion")]
MMSS = (
    "floor(datum.value / 3600) > 0 ? floor(datum.value / 3600) + ':' + "
    "(floor(datum.value % 3600 / 60) < 10 ? '0' : '') + floor(datum.value % 3600 / 60) + ':' + "
    "(datum.value % 60 < 10 ? '0' : '') + datum.value % 60 : "
    "floor(datum.value / 60) + ':' + (datum.value % 60 < 10 ? '0' : '') + datum.value % 60"
)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 day', '2 days', '2 activities': a count with its noun in the right number (English plurals with -s, -ies
    after a consonant's y, else `plural`)."""
    if plural is None:
        plural = (
            noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u") else noun + "s"
        )
    return f"{n} {noun}" if n == 1 else f"{n} {plural}"


def render_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes, rendered in-process with no network access (no external data or fonts are fetched)."""
    with alt.data_transformers.disable_max_rows():  # the data is ours and bounded (a year, a few seasons)
        spec = chart.to_json()
    return vlc.vegalite_to_png(spec, scale=scale, allowed_base_urls=[])


def _config(chart: Any) -> Any:
    return (
        chart.configure(font=FONT, background="white")
        .configure_title(fontSize=16, anchor="start", subtitleColor="#555", subtitleFontSize=12, offset=10)
        .configure_axis(labelFontSize=11, titleFontSize=12, gridColor="#eeeeee", domainColor="#999", tickColor="#999")
        .configure_legend(labelFontSize=11, titleFontSize=12, orient="top")
        .configure_view(stroke=None)
    )


# Polars types a column's min() and max() as any Python value; a numeric column's are numbers, a date column's dates
# (None when the column holds no value).
def _low(column: pl.Series) -> float | None:
    """The least value of a numeric column, None if it has none."""
    return cast("float | None", column.min())


def _high(column: pl.Series) -> float | None:
    """The greatest value of a numeric column, None if it has none."""
    return cast("float | None", column.max())


def _int_bounds(column: pl.Series) -> tuple[int, int]:
    """The least and greatest value of a numeric column that has values, as ints."""
    return int(cast(float, column.min())), int(cast(float, column.max()))


def _day_bounds(column: pl.Series) -> tuple[dt.date, dt.date]:
    """The first and last day of a date column that has values."""
    return cast(dt.date, column.min()), cast(dt.date, column.max())


def _local(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Dates as local wall-clock ISO strings (Vega parses them as local time: no shift by a zone)."""
    return frame.with_columns(pl.col(c).cast(pl.Date).dt.strftime("%Y-%m-%dT00:00:00") for c in columns)


def empty(title: str, message: str) -> Any:
    """A chart that says there is nothing to show yet (still a real image)."""
    text = (
        alt.Chart(pl.DataFrame({"message": [message]}))
        .mark_text(fontSize=15, color="#666")
        .encode(text="message:N")
        .properties(width=WIDTH, height=120, title=alt.TitleParams(title))
    )
    return _config(text)


def pmc(frame: pl.DataFrame, bands: pl.DataFrame, loads: pl.DataFrame, title_suffix: str = "") -> Any:
    """Fitness (CTL) and fatigue (ATL); below them the daily load by source; then form (TSB) over its bands.

    `loads`: one row per day and load source (date, load_source, load) over the same days as `frame`."""
    if frame.is_empty():
        return empty("Performance management chart", "No activities with a training load yet.")
    data = _local(frame, "date")
    first_day, last_day = _day_bounds(frame["date"])
    x = _day_axis(first_day, last_day)
    panels = [
        _fitness_and_fatigue_panel(data, x, title_suffix),
        _daily_load_panel(loads, x, (last_day - first_day).days + 1),
        _form_panel(data, bands, x),
    ]
    return _config(alt.vconcat(*(p for p in panels if p is not None), spacing=18).resolve_scale(color="independent"))


def _fitness_and_fatigue_panel(data: pl.DataFrame, x: Any, title_suffix: str) -> Any:
    """The fitness chart's top panel: CTL and ATL, one line each."""
    lines = (
        alt.Chart(data)
        .transform_fold(["ctl", "atl"], as_=["measure", "value"])
        .transform_calculate(label="datum.measure == 'ctl' ? 'Fitness (CTL, 42 d)' : 'Fatigue (ATL, 7 d)'")
        .mark_line(strokeWidth=2.2)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="load per day"),
            color=alt.Color(
                "label:N",
                title=None,
                scale=alt.Scale(domain=["Fitness (CTL, 42 d)", "Fatigue (ATL, 7 d)"], range=[CTL_COLOR, ATL_COLOR]),
            ),
        )
    )
    return lines.properties(
        width=WIDTH,
        height=200,
        title=alt.TitleParams(
            "Fitness, fatigue and form" + title_suffix,
            subtitle="CTL and ATL: the daily load averaged exponentially over 42 and 7 days (TSS scale: an hour at "
            "threshold = 100).",
        ),
    )


def _daily_load_panel(loads: pl.DataFrame, x: Any, days: int) -> Any | None:
    """The fitness chart's middle panel: each day's load stacked by source, best first; None when no day has one."""
    present = [k for k in LOAD_SOURCES if k in set(loads["load_source"].to_list())] if loads.height else []
    if not present:
        return None
    noon = loads.filter(pl.col("load_source").is_in(present)).with_columns(
        (pl.col("date").cast(pl.Datetime) + pl.duration(hours=12)).dt.strftime("%Y-%m-%dT%H:%M:%S").alias("date")
    )
    return (
        alt.Chart(noon)  # a day's bar stands on its middle
        .transform_calculate(order="indexof(" + str(present) + ", datum.load_source)")
        .mark_bar(width=min(14.0, max(1.5, WIDTH / max(1, days) * 0.8)))
        .encode(
            x=x,
            y=alt.Y("load:Q", title="daily load", stack="zero"),
            color=alt.Color(
                "load_source:N",
                title="load from",
                sort=present,
                scale=alt.Scale(domain=present, range=[LOAD_SOURCES[k][1] for k in present]),
                legend=alt.Legend(labelExpr=_labels_expr({k: LOAD_SOURCES[k][0] for k in present}), labelLimit=300),
            ),
            order=alt.Order("order:Q"),
        )
        .properties(width=WIDTH, height=110, title=alt.TitleParams("Daily load, by where it came from", fontSize=13))
    )


def _form_panel(data: pl.DataFrame, bands: pl.DataFrame, x: Any) -> Any:
    """The fitness chart's bottom panel: form (TSB) over the form bands, clipped to the range it spans."""
    low = min(-40.0, float(_low(data["tsb"]) or 0) - 5)
    high = max(35.0, float(_high(data["tsb"]) or 0) + 5)
    band_rows = bands.sort("sort_order").with_columns(
        pl.col("tsb_from").fill_null(low).clip(low, high).alias("y0"),
        pl.col("tsb_to").fill_null(high).clip(low, high).alias("y1"),
    )
    rects = (
        alt.Chart(band_rows)
        .mark_rect(opacity=0.9)
        .encode(
            y=alt.Y("y0:Q", scale=alt.Scale(domain=[low, high], nice=False), title="form (TSB)"),
            y2="y1:Q",
            color=alt.Color(
                "band:N",
                title="form band",
                sort=list(band_rows["band"]),
                scale=alt.Scale(
                    domain=list(band_rows["band"]), range=[BAND_COLORS.get(b, "#eeeeee") for b in band_rows["band"]]
                ),
            ),
        )
    )
    tsb = (
        alt.Chart(data)
        .mark_line(color=TSB_COLOR, strokeWidth=1.8)
        .encode(x=x, y=alt.Y("tsb:Q", scale=alt.Scale(domain=[low, high], nice=False)))
    )
    return alt.layer(rects, tsb).properties(
        width=WIDTH, height=150, title=alt.TitleParams("Form (TSB = yesterday's CTL − ATL)", fontSize=13)
    )


def _labels_expr(labels: dict[str, str]) -> str:
    """A Vega label expression that shows each value's label."""
    cases = " : ".join(f"datum.value == '{k}' ? '{v}'" for k, v in labels.items())
    return f"{cases} : datum.value" if cases else "datum.value"


def _weeks(frame: pl.DataFrame) -> pl.DataFrame:
    """`mid`: the middle of each row's week (Thursday noon, local), where its bar stands."""
    return frame.with_columns(
        (pl.col("week_start").cast(pl.Datetime) + pl.duration(days=3, hours=12))
        .dt.strftime("%Y-%m-%dT%H:%M:%S")
        .alias("mid")
    )


def _week_axis(first_week: dt.date, last_week: dt.date) -> tuple[Any, float]:
    """The x encoding over whole weeks from first_week to last_week (Mondays), and the pixel width of a bar."""
    weeks = (last_week - first_week).days // 7 + 1
    domain = [f"{first_week.isoformat()}T00:00:00", f"{(last_week + dt.timedelta(days=7)).isoformat()}T00:00:00"]
    step = -(-weeks // 13)
    mondays = [first_week + dt.timedelta(weeks=i) for i in range(0, weeks, step)]
    ticks = [alt.DateTime(year=m.year, month=m.month, date=m.day) for m in mondays]
    x = alt.X(
        "mid:T",
        title="week (Monday start)",
        scale=alt.Scale(domain=domain, nice=False),
        axis=alt.Axis(format="%d %b %Y", labelAngle=-40, values=ticks, labelAlign="right"),
    )
    return x, max(2.0, WIDTH / weeks * 0.72)


FAMILY_COLORS = {
    "Ride": OKABE_ITO["blue"],
    "Run": OKABE_ITO["vermillion"],
    "Swim": OKABE_ITO["sky"],
    "Walk/Hike": OKABE_ITO["green"],
    "Ski": OKABE_ITO["purple"],
    "E-bike": OKABE_ITO["orange"],
    "Other": "#b8b8b8",
}


def weekly_volume(frame: pl.DataFrame, first_week: dt.date, last_week: dt.date, title_suffix: str = "") -> Any:
    """Stacked weekly moving time by sport family (a colour each; sport types in the tooltip)."""
    if frame.is_empty():
        return empty("Weekly volume by sport", "No activities in this period.")
    order = list(FAMILY_COLORS)
    frame = frame.with_columns(
        pl.when(pl.col("sport_family").is_in(order))
        .then(pl.col("sport_family"))
        .otherwise(pl.lit("Other"))
        .alias("sport_family")
    )
    families = [f for f in order if f in set(frame["sport_family"].to_list())]
    data = _weeks(
        frame.with_columns(
            (pl.col("moving_time_s") / 3600).alias("hours"),
            (pl.col("distance_m") / 1000).round(1).alias("km"),
            pl.col("sport_family")
            .replace_strict(order, list(range(len(order))), return_dtype=pl.Int32)
            .alias("family_order"),
        )
    )
    data = _local(data, "week_start")
    x, width = _week_axis(first_week, last_week)
    chart = (
        alt.Chart(data)
        .mark_bar(width=width)
        .encode(
            x=x,
            y=alt.Y("sum(hours):Q", title="moving time (hours)"),
            color=alt.Color(
                "sport_family:N",
                title="sport",
                sort=families,
                scale=alt.Scale(domain=families, range=[FAMILY_COLORS[f] for f in families]),
            ),
            order=alt.Order("family_order:Q"),
            tooltip=["week_start:T", "sport_family:N", "sport_type:N", alt.Tooltip("hours:Q", format=".1f"), "km:Q"],
        )
        .properties(
            width=WIDTH,
            height=260,
            title=alt.TitleParams(
                "Weekly training time by sport" + title_suffix,
                subtitle="Moving time per ISO week (Monday start, local dates), stacked by sport family.",
            ),
        )
    )
    return _config(chart)


ZONE_UNITS = {"heartrate": "bpm", "power": "W"}
PI_KINDS = {"measured": ("4-week index", "#222"), "zero": ("no zone-3 time: 0 by definition", "#9a9a9a")}


def zone_labels(zones: pl.DataFrame, zone_type: str) -> list[str]:
    """ "Z1 < 120 bpm", "Z2 120–145 bpm", …, "Z5 ≥ 175 bpm": each zone with the bounds of its latest week."""
    unit = ZONE_UNITS.get(zone_type, "")
    latest = zones.sort("week_start").group_by("zone").agg(pl.col("zone_min").last(), pl.col("zone_max").last())
    bounds = {r["zone"]: (r["zone_min"], r["zone_max"]) for r in latest.iter_rows(named=True)}
    out = []
    for zone in range(1, int(_high(zones["zone"]) or 0) + 1):
        low, high = bounds.get(zone, (None, None))
        if low is None:
            out.append(f"Z{zone}")
        elif high is None or high < 0:
            out.append(f"Z{zone} ≥ {low:g} {unit}")
        elif low <= 0:
            out.append(f"Z{zone} < {high:g} {unit}")
        else:
            out.append(f"Z{zone} {low:g}–{high:g} {unit}")
    return out


def bounds_since(zones: pl.DataFrame) -> dt.date | None:
    """The first week from which every week shown has the zones' latest bounds (those the legend gives), when an
    earlier week had others; None when they never changed."""
    weeks: dict[dt.date, tuple[Any, ...]] = {}
    for row in zones.sort("week_start", "zone").iter_rows(named=True):
        weeks[row["week_start"]] = (*weeks.get(row["week_start"], ()), row["zone"], row["zone_min"], row["zone_max"])
    ordered = sorted(weeks)
    if not ordered:
        return None
    latest = weeks[ordered[-1]]
    changed = [week for week in ordered if weeks[week] != latest]
    return next((week for week in ordered if week > changed[-1]), None) if changed else None


def weekly_zones(
    zones: pl.DataFrame,
    pi: pl.DataFrame,
    zone_type: str,
    pi_threshold: float,
    first_week: dt.date,
    last_week: dt.date,
    title_suffix: str = "",
    pi_min_hours: float = 3.0,
) -> Any:
    """Stacked hours per zone each week (legend: each zone's bounds); below, the polarization index over the last
    four weeks, only where they hold enough zone time; "0 by definition" weeks drawn apart."""
    kind = ZONE_TYPE_LABELS.get(zone_type, zone_type)
    if zones.is_empty():
        return empty(f"Weekly time in {kind} zones", f"No {kind} zone data in this period.")
    x, width = _week_axis(first_week, last_week)
    hours = _zone_hours_panel(zones, zone_type, x, width, title_suffix)
    index = _polarization_panel(pi, pi_threshold, pi_min_hours, x)
    return _config(alt.vconcat(hours, index, spacing=14).resolve_scale(color="independent", shape="independent"))


def _zone_hours_panel(zones: pl.DataFrame, zone_type: str, x: Any, width: float, title_suffix: str) -> Any:
    """The zones chart's top panel: hours per zone each week, stacked from zone 1, coloured along the zones' ramp."""
    kind = ZONE_TYPE_LABELS.get(zone_type, zone_type)
    zone_count = int(_high(zones["zone"]) or 5)
    palette = ZONE_COLORS.get(zone_count) or ZONE_COLORS[7][:zone_count]
    labels = zone_labels(zones, zone_type)
    data = _weeks(
        zones.with_columns(
            (pl.col("seconds") / 3600).alias("hours"),
            pl.col("zone").map_elements(lambda z: labels[z - 1], return_dtype=pl.String).alias("zone_label"),
        )
    )
    bars = (
        alt.Chart(_local(data, "week_start"))
        .mark_bar(width=width)
        .encode(
            x=x,
            y=alt.Y("hours:Q", title=f"time in {kind} zones (hours)"),
            color=alt.Color(
                "zone_label:N",
                title="zone",
                sort=labels,
                scale=alt.Scale(domain=labels, range=palette),
                legend=alt.Legend(orient="right", direction="vertical"),
            ),
            order=alt.Order("zone:Q", sort="ascending"),
        )
    )
    return bars.properties(
        width=WIDTH,
        height=230,
        title=alt.TitleParams(
            f"Weekly time in {kind} zones" + title_suffix,
            subtitle="Hours per zone each ISO week, stacked from zone 1 (bottom); the legend gives each zone's bounds"
            + (f" since {since:%d %b %Y} (earlier weeks had others)." if (since := bounds_since(zones)) else "."),
        ),
    )


def _polarization_panel(pi: pl.DataFrame, pi_threshold: float, pi_min_hours: float, x: Any) -> Any:
    """The zones chart's bottom panel: the 4-week polarization index with its threshold; "0 by definition" weeks in a
    shape and colour of their own; a note instead when no 4 weeks hold enough zone time."""
    points = _weeks(pi)
    top = max(3.0, float(_high(points["polarization_index"]) or 0) + 0.2)
    # below 0 where zone 3 is a sliver beside zone 2 (log10 of under 1): drawn on the axis, not under it
    bottom = min(0.0, math.floor(float(_low(points["polarization_index"]) or 0) * 2) / 2)
    pi_axis = alt.Y("polarization_index:Q", title="PI", scale=alt.Scale(domain=[bottom, top], nice=False))
    kinds = [k for k in PI_KINDS if k in set(points["kind"].drop_nulls().to_list())]
    line = (
        alt.Chart(
            points.with_columns(
                pl.when(pl.col("kind") == "measured").then(pl.col("polarization_index")).alias("polarization_index")
            )
        )
        .mark_line(color="#222", strokeWidth=1.4)
        .encode(x=x, y=pi_axis)
    )
    dots = _polarization_kind_dots(points, kinds, pi_axis, x)
    rule = (
        alt.Chart(pl.DataFrame({"polarization_index": [pi_threshold]}))
        .mark_rule(color="#222", strokeDash=[5, 4], opacity=0.6)
        .encode(y=pi_axis)
    )
    index_layers = (
        [line, dots, rule]
        if kinds
        else [
            rule,
            alt.Chart(pl.DataFrame({"m": [f"No 4 weeks with {pi_min_hours:g} h of zone time yet."]}))
            .mark_text(fontSize=13, color="#666")
            .encode(text="m:N"),
        ]
    )
    return alt.layer(*index_layers).properties(
        width=WIDTH,
        height=110,
        title=alt.TitleParams(
            "Polarization index (Treff et al. 2019), over the last 4 weeks",
            fontSize=13,
            subtitle=f"Seiler's three zones; dashed: {pi_threshold:g}, above is polarized. No point: under "
            f"{pi_min_hours:g} h of zone time in the 4 weeks, or more zone-3 than zone-1 time.",
        ),
    )


def _polarization_kind_dots(points: pl.DataFrame, kinds: list[str], pi_axis: Any, x: Any) -> Any:
    """The polarization index's weekly points, coloured and shaped by their kind (measured, or 0 by definition),
    with a legend naming each kind."""
    return (
        alt.Chart(points.filter(pl.col("kind").is_not_null()))
        .mark_point(size=30, filled=True)
        .encode(
            x=x,
            y=pi_axis,
            color=alt.Color(
                "kind:N",
                title=None,
                sort=kinds,
                scale=alt.Scale(domain=kinds, range=[PI_KINDS[k][1] for k in kinds]),
                legend=alt.Legend(
                    labelExpr=_labels_expr({k: PI_KINDS[k][0] for k in kinds}), orient="right", direction="vertical"
                ),
            ),
            shape=alt.Shape(
                "kind:N",
                sort=kinds,
                legend=None,
                scale=alt.Scale(domain=kinds, range=["circle", "square"][: len(kinds)]),
            ),
        )
    )


def segment_history(progression: pl.DataFrame, events: pl.DataFrame, segment_ids: list[int]) -> Any:
    """Per segment: every effort, the running best as a step line, PR markers."""
    if not segment_ids:
        return empty("Segment history", "No segment efforts yet.")
    panels = [_segment_panel(progression, events, segment_id) for segment_id in segment_ids]
    rows = [alt.hconcat(*panels[i : i + 2], spacing=40) for i in range(0, len(panels), 2)]
    chart = alt.vconcat(*rows, spacing=20).properties(
        title=alt.TitleParams(
            "Segment history",
            subtitle="The segments with the most attempts. Dots: efforts (lower is faster). Blue steps: the running best. "
            "Diamonds: PRs (hidden efforts excluded).",
        )
    )
    return _config(chart)


def _wall_clock(day: dt.date) -> alt.DateTime:
    """A day as Vega-Lite's local date-time (no zone), as the charts' date strings are read."""
    return alt.DateTime(year=day.year, month=day.month, date=day.day)


def _segment_panel(progression: pl.DataFrame, events: pl.DataFrame, segment_id: int) -> Any:
    """One segment's panel of the segment history: its efforts, the running best, its PRs, on a time axis of its own."""
    efforts = _local(progression.filter(pl.col("segment_id") == segment_id), "local_date")
    prs = _local(events.filter(pl.col("segment_id") == segment_id), "local_date")
    name = efforts["segment_name"][0] or f"segment {segment_id}"
    low, high = _int_bounds(efforts["elapsed_time"])
    step = _time_step(high - low)
    bottom, top = max(0, (low - step // 2) // step * step), -(-(high + step // 2) // step) * step
    y_scale = alt.Scale(domain=[bottom, top], nice=False)
    first_day, last_day = _day_bounds(progression.filter(pl.col("segment_id") == segment_id)["local_date"])
    days = (last_day - first_day).days + 1
    margin = dt.timedelta(days=max(1, round(days * 0.04)))  # the first and last diamonds whole, off the axes
    x = alt.X(
        "local_date:T",
        title=None,
        axis=alt.Axis(format=_date_format(days), labelAngle=0, tickCount=5),
        scale=alt.Scale(domain=[_wall_clock(first_day - margin), _wall_clock(last_day + margin)]),
    )
    y_axis = alt.Axis(
        labelExpr=MMSS,
        values=list(range(bottom, top + 1, step)),
        title="elapsed time (h:mm:ss), lower is faster" if top >= 3600 else "elapsed time (m:ss), lower is faster",
    )
    points = (
        alt.Chart(efforts)
        .mark_circle(size=36, color="#7a8ca5", opacity=0.75)
        .encode(
            x=x,
            y=alt.Y("elapsed_time:Q", scale=y_scale, axis=y_axis),
            tooltip=["local_date:T", "elapsed_time:Q", "attempt:Q"],
        )
    )
    best = (
        alt.Chart(efforts)
        .mark_line(interpolate="step-after", color=CTL_COLOR, strokeWidth=2)
        .encode(x=x, y=alt.Y("running_best:Q", scale=y_scale))
    )
    stars = (
        alt.Chart(prs)
        .mark_point(shape="diamond", size=110, filled=True, color=PR_COLOR, stroke="#8a5a00", strokeWidth=0.8)
        .encode(
            x=x,
            y=alt.Y("elapsed_time:Q", scale=y_scale),
            tooltip=["local_date:T", "elapsed_time:Q", alt.Tooltip("improvement_s:Q", title="seconds faster")],
        )
    )
    pr = prs.tail(1)
    subtitle = (
        f"{_count(efforts.height, 'effort')}, {_count(prs.height - 1, 'PR')} after the first; best "
        f"{_mmss(int(pr['elapsed_time'][0]))} on {pr['local_date'][0][:10]}"
    )
    return alt.layer(points, best, stars).properties(
        width=WIDTH // 2 - 40, height=190, title=alt.TitleParams(name, subtitle=subtitle, fontSize=13)
    )


def eddington(curve: pl.DataFrame, number: int, days_to_next: int, family: str, unit: str) -> Any:
    """Days reaching n (bars) against the n = days line; the Eddington number is where they cross."""
    if curve.is_empty():
        return empty("Eddington number", "No distance yet.")
    limit = max(10, min(int(cast(float, curve["n"].max())), max(2 * number, number + 20)))
    data = curve.filter(pl.col("n") <= limit).with_columns(
        pl.when(pl.col("n") <= number).then(pl.lit("reached")).otherwise(pl.lit("not yet")).alias("status")
    )
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "n:Q",
                title=f"n ({unit} in a day)",
                scale=alt.Scale(domain=[0, limit + 1], nice=False),
                axis=alt.Axis(tickMinStep=1, format="d"),
            ),
            y=alt.Y("days_at_least:Q", title=f"days with at least n {unit}", axis=alt.Axis(tickMinStep=1, format="d")),
            color=alt.Color(
                "status:N",
                title=None,
                scale=alt.Scale(domain=["reached", "not yet"], range=[OKABE_ITO["green"], "#c9ced6"]),
            ),
            tooltip=["n:Q", "days_at_least:Q"],
        )
    )
    diagonal = (
        alt.Chart(pl.DataFrame({"n": [0, limit + 1], "days_at_least": [0, limit + 1]}))
        .mark_line(color=OKABE_ITO["vermillion"], strokeDash=[6, 4])
        .encode(x="n:Q", y="days_at_least:Q")
    )
    top = int(_high(data["days_at_least"]) or 1)
    rule = alt.Chart(pl.DataFrame({"n": [number + 0.5]})).mark_rule(color="#222", strokeDash=[2, 3]).encode(x="n:Q")
    mark = (
        alt.Chart(pl.DataFrame({"n": [number + 0.5], "days_at_least": [top], "label": [f"E = {number}"]}))
        .mark_text(dx=-6, dy=4, align="right", baseline="top", fontSize=13, fontWeight="bold", color="#222")
        .encode(x="n:Q", y="days_at_least:Q", text="label:N")
    )
    chart = alt.layer(bars, diagonal, rule, mark).properties(
        width=WIDTH,
        height=260,
        title=alt.TitleParams(
            f"Eddington number ({family}, {unit}): {number}",
            subtitle=f"E days of at least E {unit} (local days, activities summed). "
            f"{counted(days_to_next, 'more day')} of {number + 1}+ {unit} for {number + 1}. Dashed: days = n; "
            "the dotted line marks E.",
        ),
    )
    return _config(chart)


def ytd(frame: pl.DataFrame, family: str, unit: str, unit_m: float, as_of: dt.date) -> Any:
    """Cumulative distance through each year, one line per year, the current year bold; the first line starts the
    day before the family's first distance (no flat line at zero before it)."""
    if frame.is_empty():
        return empty("Year to date", "No activities yet.")
    frame = frame.filter(pl.col("year") > as_of.year - YTD_YEARS)
    started = cast("dt.date | None", frame.filter(pl.col("distance_m") > 0)["date"].min())
    if started is not None:
        frame = frame.filter(pl.col("date") >= started - dt.timedelta(days=1))
    data = frame.with_columns(
        (pl.col("distance_m") / unit_m).alias("distance"),
        pl.col("year").cast(pl.String).alias("year_label"),
        pl.date(2000, pl.col("date").dt.month(), pl.col("date").dt.day()).alias("plot_date"),
        (pl.col("year") == as_of.year).alias("current"),
    )
    data = _local(data, "plot_date", "date")
    years = sorted(data["year_label"].unique().to_list())
    past = [y for y in years if y != str(as_of.year)]
    current = [y for y in years if y == str(as_of.year)]
    colors = [YEAR_COLORS[i % len(YEAR_COLORS)] for i in range(len(past))] + ["#000000"] * len(current)
    year_axis = ["2000-01-01T00:00:00", "2001-01-01T00:00:00"]  # every year drawn on one leap year's days
    started_note = (
        f" The first {family.lower() if family != 'Other' else 'activity'} with a distance is on {started:%d %b %Y}: "
        "that year's line starts there."
        if started is not None and started.timetuple().tm_yday > 1
        else ""
    )
    chart = (
        alt.Chart(data)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X(
                "plot_date:T",
                title=None,
                scale=alt.Scale(domain=year_axis),
                axis=alt.Axis(format="%b", labelAngle=0, tickCount={"interval": "month", "step": 1}),
            ),
            y=alt.Y("distance:Q", title=f"distance since 1 January ({unit})"),
            color=alt.Color(
                "year_label:N", title="year", sort=years, scale=alt.Scale(domain=past + current, range=colors)
            ),
            strokeWidth=alt.condition("datum.current", alt.value(3.2), alt.value(1.8)),
            tooltip=["date:T", alt.Tooltip("distance:Q", format=".0f")],
        )
        .properties(
            width=WIDTH,
            height=260,
            title=alt.TitleParams(
                f"Year-to-date distance ({family})",
                subtitle=f"Cumulative {unit} by day of the year, one line per year; {as_of.year} in bold black "
                f"(through {as_of.isoformat()})." + started_note,
            ),
        )
    )
    return _config(chart)


def power_curve(curve: pl.DataFrame, fit: dict[str, Any] | None, season: int) -> Any:
    """Mean-maximal power (log duration axis), all time and this season, drawn from the efforts themselves: each dot
    is a real effort at its real length; the steps between them carry each dot's power to the shorter durations down
    to the next (an estimate where a ride has no power stream: an average is usually, not always, held over every
    shorter window). The CP model only over the efforts it was fitted on, and only when the
    fit passed its gates."""
    if curve.is_empty():
        return empty("Power-duration curve", "No rides with device power yet.")
    efforts, periods = _power_efforts(curve, season)
    shortest, longest = _int_bounds(efforts["duration_s"])
    ticks = [t for t in (5, 15, 60, 300, 1200, 3600, 14400, 36000) if t <= longest * 1.5]
    plot = chart_labels.Plot(
        WIDTH,
        POWER_CURVE_HEIGHT,
        (max(1, shortest * 0.8), max(16000, longest * 1.2)),
        _padded(efforts["best_watts"]),
        x_log=True,
    )
    x = alt.X(
        "duration_s:Q",
        title="duration",
        axis=alt.Axis(values=ticks, labelExpr=DURATION_LABEL),
        scale=alt.Scale(type="log", domain=list(plot.x_domain), nice=False),
    )
    y = alt.Y("best_watts:Q", title="best average power (W)", scale=alt.Scale(domain=list(plot.y_domain), nice=False))
    model = _cp_model(fit) if fit and fit.get("cp_watts") is not None else None
    layers, unlabelled = _power_period_layers(efforts, periods, x, y, plot, model)
    subtitle = [
        "Dots: the best power at each length (labelled); filled: exact, from a power stream; open: an effort's, "
        "lap's or ride's average, a floor."
        + (f" {counted(unlabelled, 'dot')} left unlabelled: no room beside {'it' if unlabelled == 1 else 'them'}."
           if unlabelled else ""),
        "Steps: each dot's power carried to the shorter lengths down to the next dot (the best there is at least "
        "that).",
    ]  # fmt: skip
    if fit and model is not None:
        layer, said = _critical_power_model(fit, model, x, y)
        layers.append(layer)
        subtitle.append(said)
    elif fit:
        subtitle.append(f"No critical power drawn: {fit['cp_note']}.")
    chart = alt.layer(*layers).properties(
        width=WIDTH,
        height=POWER_CURVE_HEIGHT,
        title=alt.TitleParams("Power-duration curve and critical power", subtitle=subtitle),
    )
    return _config(chart)


POWER_CURVE_HEIGHT = 280


def _padded(values: pl.Series) -> tuple[float, float]:
    """A y domain on round watts around `values`, with room above the highest dot for its label and below the
    lowest for the season's."""
    low, high = float(values.min()), float(values.max())  # type: ignore[arg-type]
    span = max(high - low, 20.0)
    step = next(s for s in (5, 10, 20, 25, 50, 100, 200, 250, 500, 1000) if s >= span / 6)
    return math.floor((low - 0.12 * span) / step) * step, math.ceil((high + 0.12 * span) / step) * step


def _power_efforts(curve: pl.DataFrame, season: int) -> tuple[pl.DataFrame, list[str]]:
    """The best power at each effort length, per period ("all time", then the season when it has any), with how long
    each lasted as text; and the periods present."""
    named = curve.with_columns(
        pl.when(pl.col("season") == 0)
        .then(pl.lit("all time"))
        .otherwise(pl.col("season").cast(pl.String))
        .alias("period")
    )
    periods = [p for p in ("all time", str(season)) if p in set(named["period"].to_list())]
    efforts = (
        named.filter(pl.col("period").is_in(periods))
        .group_by("period", "effort_duration_s")
        .agg(pl.col("best_watts").max(), pl.col("source").first(), pl.col("local_date").first())
        .rename({"effort_duration_s": "duration_s"})
        .with_columns(pl.col("duration_s").map_elements(_mmss, return_dtype=pl.String).alias("lasted"))
        .sort("period", "duration_s")
    )
    return _local(efforts, "local_date"), periods  # the tooltip's date: a day early west of UTC as a bare date


def _power_period_layers(
    efforts: pl.DataFrame,
    periods: list[str],
    x: Any,
    y: Any,
    plot: chart_labels.Plot,
    model: pl.DataFrame | None,
) -> tuple[list[Any], int]:
    """Per period: the steps (all time's wide and pale beneath, the season's narrow on top: where the season is the
    all-time best, both show), the dots, and each dot's length as a label placed where it overlaps nothing
    (chart_labels: all time's above its dots, the season's below; an effort that is also the all-time one is
    labelled once); and how many dots are left unlabelled."""
    steps = efforts.select("period", "duration_s", "best_watts")
    colors = alt.Scale(domain=periods, range=[OKABE_ITO["blue"], OKABE_ITO["orange"]][: len(periods)])
    color = alt.Color("period:N", title=None, sort=periods, scale=colors)
    tooltip = [
        alt.Tooltip("lasted:N", title="effort lasted"),
        alt.Tooltip("best_watts:Q", format=".0f"),
        "source:N",
        "local_date:T",
    ]
    everything = efforts.filter(pl.col("period") == periods[0]).select("duration_s", "best_watts")
    shown = {
        period: efforts.filter(pl.col("period") == period).join(everything, on=["duration_s", "best_watts"], how="anti")
        if period != periods[0]
        else efforts.filter(pl.col("period") == period)
        for period in periods
    }
    labels = [
        (period, chart_labels.Label(float(r["duration_s"]), float(r["best_watts"]), r["lasted"], i == 0))
        for i, period in enumerate(periods)
        for r in shown[period].iter_rows(named=True)
    ]
    lines = [
        chart_labels.Line(
            steps.filter(pl.col("period") == p).select(pl.col("duration_s", "best_watts").cast(pl.Float64)).rows(),
            5 if i == 0 and len(periods) > 1 else 1.6,
        )
        for i, p in enumerate(periods)
    ]
    if model is not None:
        lines.append(chart_labels.Line(model.rows(), 1.6, steps=False))
    spots = chart_labels.place(plot, [label for _, label in labels], [(label.x, label.y) for _, label in labels], lines)
    layers = []
    for i, period in enumerate(periods):
        wide = i == 0 and len(periods) > 1
        placed = [
            {"duration_s": spot[0], "best_watts": spot[1], "lasted": label.text}
            for (owner, label), spot in zip(labels, spots, strict=True)
            if owner == period and spot is not None
        ]
        exact = pl.col("source") == "stream"
        layers += [
            alt.Chart(steps.filter(pl.col("period") == period))
            .mark_line(strokeWidth=5 if wide else 1.6, opacity=0.4 if wide else 1, interpolate="step-before")
            .encode(x=x, y=y, color=color),
            alt.Chart(shown[period].filter(exact))
            .mark_circle(size=55, opacity=1)
            .encode(x=x, y=y, color=color, tooltip=tooltip),
            # an effort's, lap's or ride's average: the best power over that length is at least this (open)
            alt.Chart(shown[period].filter(~exact))
            .mark_point(size=55, opacity=1, filled=False, strokeWidth=2, fill="white")
            .encode(x=x, y=y, color=color, tooltip=tooltip),
        ]
        if placed:
            layers.append(
                alt.Chart(pl.DataFrame(placed))
                .mark_text(align="center", baseline="middle", fontSize=10, color="#333" if i == 0 else "#8a5a00")
                .encode(x=x, y=y, text="lasted:N")
            )
    return layers, sum(spot is None for spot in spots)


def _cp_model(fit: dict[str, Any]) -> pl.DataFrame:
    """The fitted model P = CP + W′/t over the durations it was fitted on (duration_s, best_watts)."""
    cp, w = float(fit["cp_watts"]), float(fit["w_prime_j"])
    lo, hi = int(fit["shortest_s"]), int(fit["longest_s"])
    return pl.DataFrame({"duration_s": [float(lo + (hi - lo) * i / 40) for i in range(41)]}).with_columns(
        (cp + w / pl.col("duration_s")).alias("best_watts")
    )


def _critical_power_model(fit: dict[str, Any], model: pl.DataFrame, x: Any, y: Any) -> tuple[Any, str]:
    """The model (`_cp_model`) dashed, and the subtitle line saying it."""
    cp, w = float(fit["cp_watts"]), float(fit["w_prime_j"])
    lo, hi = int(fit["shortest_s"]), int(fit["longest_s"])
    layer = alt.Chart(model).mark_line(color="#222", strokeDash=[5, 4], strokeWidth=1.6).encode(x=x, y=y)
    said = (
        f"Dashed: P = CP + W′/t over the {fit['points']} envelope efforts it was fitted on "
        f"({_mmss(lo)}-{_mmss(hi)}): CP {cp:.0f} W, W′ {w / 1000:.1f} kJ (all time), "
        f"error {fit['rmse_watts']:.0f} W."
    )
    return layer, said


def best_efforts(best: pl.DataFrame, season: int) -> Any:
    """Running best efforts as pace on a pace axis (faster is higher), all time and this season, each labelled with
    its pace and date."""
    if best.is_empty():
        return empty("Running best efforts", "No runs with kilometre splits yet.")
    data = _best_effort_points(best, season)
    periods = [p for p in ("all time", str(season)) if p in set(data["period"].to_list())]
    labels = best.sort("splits")["label"].unique(maintain_order=True).to_list()
    y = _pace_axis(data["pace"])
    x = alt.X(
        "label:N", title="distance (consecutive whole kilometre splits)", sort=labels, axis=alt.Axis(labelAngle=0)
    )
    color = alt.Color(
        "period:N",
        title=None,
        sort=periods,
        scale=alt.Scale(domain=periods, range=[OKABE_ITO["blue"], OKABE_ITO["orange"]][: len(periods)]),
    )
    dots = (
        alt.Chart(data)
        .mark_point(size=90, filled=True, opacity=1)
        .encode(x=x, y=y, color=color, tooltip=["label:N", "period:N", "text:N"])
    )
    text = [
        (
            alt.Chart(data.filter(pl.col("period") == period))
            .mark_text(dy=-20 if period == "all time" else 22, fontSize=10, color="#333", lineBreak="\n")
            .encode(x=x, y=y, text="text:N")
        )
        for period in periods
    ]
    chart = alt.layer(dots, *text).properties(
        width=WIDTH,
        height=280,
        title=alt.TitleParams(
            "Running best efforts",
            subtitle=f"Fastest stretch of consecutive whole kilometre splits in one run: its pace, time and date. A "
            f"{season} best as fast as the all-time best is drawn once, with both dates when two runs tie.",
        ),
    )
    return _config(chart)


def _best_effort_points(best: pl.DataFrame, season: int) -> pl.DataFrame:
    """The all-time and this season's best efforts, each with its period, whole-second pace and label text; a season
    best that is also the all-time one (same run, same time) is left out, so it is drawn once."""
    data = (
        best.with_columns(
            pl.when(pl.col("season") == 0)
            .then(pl.lit("all time"))
            .otherwise(pl.col("season").cast(pl.String))
            .alias("period"),
            pl.col("pace_s_per_km").round(0).cast(pl.Int64).alias("pace"),
        )
        .filter(pl.col("season").is_in([0, season]))
        .with_columns(
            (
                pl.col("pace").map_elements(_mmss, return_dtype=pl.String)
                + pl.lit("/km\n")
                + pl.col("best_time_s").cast(pl.Int64).map_elements(_mmss, return_dtype=pl.String)
                + pl.lit(" · ")
                + pl.col("local_date").cast(pl.String)
            ).alias("text")
        )
    )
    all_time = data.filter(pl.col("season") == 0).select("splits", pl.col("best_time_s").alias("t0"))
    this_season = data.filter(pl.col("season") == season).select(
        "splits", pl.col("best_time_s").alias("t1"), pl.col("activity_id").alias("a1"), pl.col("local_date").alias("d1")
    )
    # a season best as fast as the all-time one is drawn once, as all time's: its dot would hide the other (a tie
    # of two runs: the all-time best is the earlier one, its date on a dot of this season's colour)
    tied = (pl.col("season") == 0) & (pl.col("best_time_s") == pl.col("t1")) & (pl.col("activity_id") != pl.col("a1"))
    return (
        data.join(all_time, on="splits", how="left")
        .join(this_season, on="splits", how="left")
        .filter(~((pl.col("season") == season) & (pl.col("best_time_s") == pl.col("t0")).fill_null(False)))
        .with_columns(
            pl.when(tied.fill_null(False))
            .then(pl.col("text") + pl.lit(" and ") + pl.col("d1").cast(pl.String))
            .otherwise(pl.col("text"))
            .alias("text")
        )
        .drop("t0", "t1", "a1", "d1")
    )


def _pace_axis(pace: pl.Series) -> Any:
    """A pace y encoding (min:ss per km) on round steps, reversed so that faster is higher."""
    low, high = _int_bounds(pace)
    step = _time_step(max(30, high - low))
    bottom, top = max(0, (low - step) // step * step), -(-(high + step) // step) * step
    return alt.Y(
        "pace:Q",
        title="pace (min:ss per km), faster is higher",
        scale=alt.Scale(domain=[top, bottom], nice=False),
        axis=alt.Axis(labelExpr=MMSS, values=list(range(bottom, top + 1, step))),
    )


def load_risk(risk: pl.DataFrame, first_day: dt.date, last_day: dt.date) -> Any:
    """Acute:chronic workload ratio (rolling and EWMA), only where the chronic window holds enough sessions and
    load; monotony below with its 2.0 line. Same time window as the fitness chart; a point on every day."""
    if risk.is_empty():
        return empty("Load risk", "No training load yet.")
    data = _local(risk, "date")
    x = _day_axis(first_day, last_day)
    ratio = _workload_ratio_panel(risk, data, x)
    mono = _monotony_panel(data, x)
    return _config(alt.vconcat(ratio, mono, spacing=14).resolve_scale(color="independent"))


def _workload_ratio_panel(risk: pl.DataFrame, data: pl.DataFrame, x: Any) -> Any:
    """The load risk chart's top panel: both ratios with their 1.0 and 1.5 lines, and on how many days they are shown
    (a note instead of lines when on none)."""
    labels = ["rolling 7 d / 28 d", "EWMA 7 d / 28 d"]
    shown = data.filter(pl.col("acwr_rolling").is_not_null() | pl.col("acwr_ewma").is_not_null())
    top_value = (
        max(2.0, float(shown.select(pl.max_horizontal("acwr_rolling", "acwr_ewma").max()).item() or 0) + 0.1)
        if shown.height
        else 2.0
    )
    y = alt.Y("value:Q", title="acute : chronic", scale=alt.Scale(domain=[0, top_value], nice=False))
    folded = (
        alt.Chart(data)
        .transform_fold(["acwr_rolling", "acwr_ewma"], as_=["measure", "value"])
        .transform_calculate(label=f"datum.measure == 'acwr_rolling' ? '{labels[0]}' : '{labels[1]}'")
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "label:N",
                title=None,
                sort=labels,
                scale=alt.Scale(domain=labels, range=[OKABE_ITO["blue"], OKABE_ITO["vermillion"]]),
            ),
        )
    )
    one = alt.Chart(pl.DataFrame({"value": [1.0]})).mark_rule(color="#777", strokeDash=[4, 4]).encode(y=y)
    rise = alt.Chart(pl.DataFrame({"value": [1.5]})).mark_rule(color="#777", strokeDash=[1, 3]).encode(y=y)
    layers = [one, rise, folded.mark_line(strokeWidth=1.6), folded.mark_circle(size=9, opacity=0.9)]
    note = risk.filter(pl.col("acwr_note") != "ok")["acwr_note"].tail(1).to_list()
    mostly = risk.filter(pl.col("acwr_note") != "ok")["acwr_note"].mode().to_list()
    if shown.height < FEW_RATIO_DAYS:  # a dot or two at the edge of a year reads as an empty chart: say why
        message = (
            f"No ratio yet: {note[0]}."
            if not shown.height
            else f"A ratio on {counted(shown.height, 'day')} only; on most others: {mostly[0]}."
            if note
            else "No ratio yet."
        )
        layers.append(
            alt.Chart(pl.DataFrame({"m": [message], "value": [top_value * 0.85]}))
            .mark_text(fontSize=14, color="#666")
            .encode(y=y, text="m:N")
        )
    shown_days = risk.filter(pl.col("acwr_note") == "ok").height
    coverage = f"Shown on {shown_days} of {risk.height} days" + (
        f"; on {'most others' if shown_days else 'all'}: {mostly[0]}." if mostly else "."
    )
    return alt.layer(*layers).properties(
        width=WIDTH,
        height=200,
        title=alt.TitleParams(
            "Load change: acute:chronic workload ratio",
            subtitle=[
                "Last 7 days' load against the last 28 (dashed: equal), only with at least 8 sessions and a load of "
                "10 a day on average in the 28 days.",
                coverage,
                "Above 1.5 (dotted), load rose faster than fitness. The ratio's link to injury is disputed "
                "(Impellizzeri et al. 2020): read it as a change in load, not a risk score.",
            ],
        ),
    )


# Fewer days with a ratio than this: the panel says why in its plot, not only in its subtitle.
FEW_RATIO_DAYS = 7


def _monotony_panel(data: pl.DataFrame, x: Any) -> Any:
    """The load risk chart's bottom panel: Foster's monotony with its 2.0 line (a note while there is none yet)."""
    top_m = max(2.5, float(_high(data["monotony"]) or 0) + 0.2)
    my = alt.Y("monotony:Q", title="monotony", scale=alt.Scale(domain=[0, top_m], nice=False))
    mono_base = alt.Chart(data).encode(x=x, y=my)
    two = alt.Chart(pl.DataFrame({"monotony": [2.0]})).mark_rule(color="#444", strokeDash=[5, 4]).encode(y=my)
    mono_layers = [two, mono_base.mark_line(color="#444", strokeWidth=1.3), mono_base.mark_circle(color="#444", size=9)]
    if data["monotony"].drop_nulls().is_empty():
        mono_layers.append(
            alt.Chart(
                pl.DataFrame({"m": ["No monotony yet: needs 7 days with different loads."], "monotony": [top_m / 2]})
            )
            .mark_text(fontSize=13, color="#666")
            .encode(y=my, text="m:N")
        )
    return alt.layer(*mono_layers).properties(
        width=WIDTH,
        height=110,
        title=alt.TitleParams(
            "Training monotony (Foster): 7-day mean ÷ standard deviation; above 2 (dashed), little variety", fontSize=13
        ),
    )


def calendar(daily: pl.DataFrame, last_day: dt.date, weeks: int = 53) -> Any:
    """A year of days as a grid (columns: weeks, rows: Monday to Sunday), each day coloured by its load; rest days
    light grey."""
    if daily.is_empty():
        return empty("Training calendar", "No activities yet.")
    monday = last_day - dt.timedelta(days=last_day.weekday()) - dt.timedelta(weeks=weeks - 1)
    days = pl.DataFrame({"date": pl.date_range(monday, last_day, "1d", eager=True)})
    data = (
        days.join(daily.select("date", "load", "activities"), on="date", how="left")
        .with_columns(
            pl.col("load").fill_null(0.0),
            pl.col("activities").fill_null(0),
            (pl.col("date") - pl.col("date").dt.truncate("1w")).dt.total_days().alias("weekday"),
            pl.col("date").dt.truncate("1w").alias("week"),
        )
        .with_columns(pl.when(pl.col("load") > 0).then(pl.col("load")).alias("shown"))
    )
    firsts = sorted(w for w in data["week"].unique().to_list() if w.day <= 7)  # the week each month starts in
    months = {w.isoformat(): w.strftime("%b %Y" if i == 0 or w.month == 1 else "%b") for i, w in enumerate(firsts)}
    data = _local(data, "date").with_columns(pl.col("week").cast(pl.String))
    names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    month_label = " : ".join(f"datum.value == '{w}' ? '{label}'" for w, label in sorted(months.items())) + " : ''"
    x = alt.X(
        "week:O",
        title=None,
        axis=alt.Axis(labelExpr=month_label, labelAngle=0, ticks=False, domain=False, labelOverlap=False),
    )
    y = alt.Y("weekday:O", title=None, axis=alt.Axis(labelExpr=f"{names}[datum.value]", ticks=False, domain=False))
    rest = alt.Chart(data).mark_rect(color="#eeeeee", stroke="white", strokeWidth=1.5).encode(x=x, y=y)
    top = float(_high(data["load"]) or 1.0)
    loaded = (
        alt.Chart(data)
        .mark_rect(stroke="white", strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "shown:Q", title="load that day", scale=alt.Scale(scheme="blues", domain=[0, max(top, 1.0)])
            ),
            tooltip=["date:T", alt.Tooltip("load:Q", format=".0f"), "activities:Q"],
        )
        .transform_filter("datum.shown != null")
    )
    chart = alt.layer(rest, loaded).properties(
        width=WIDTH,
        height=130,
        title=alt.TitleParams(
            "Training calendar",
            subtitle=f"Each day's training load (TSS scale), the last {weeks} weeks to {last_day.isoformat()}; "
            "grey: no training.",
        ),
    )
    return _config(chart)


MIN_ROUTE_POINTS = 10


def routes(tracks: pl.DataFrame, title: str, max_points: int = 60_000) -> Any:
    """Every route drawn thin and translucent, so often-ridden roads build up dark: a heatmap of where the athlete
    trains. `tracks`: activity_id, seq, lat, lon (decoded summary polylines). The view keeps the central 96 % of
    points, so one trip abroad does not shrink home to a dot; the subtitle says how many routes lie outside."""
    sparse = tracks.group_by("activity_id").agg(pl.len().alias("n")).filter(pl.col("n") < MIN_ROUTE_POINTS)
    tracks = tracks.join(sparse, on="activity_id", how="anti")  # two or three points draw a chord, not a road
    if tracks.is_empty():
        return empty(title, "No routes with GPS yet.")
    lat_lo, lat_hi = tracks["lat"].quantile(0.02), tracks["lat"].quantile(0.98)
    lon_lo, lon_hi = tracks["lon"].quantile(0.02), tracks["lon"].quantile(0.98)
    # None only for a column without values: tracks has rows, and decoded points their lat and lon
    assert lat_lo is not None and lat_hi is not None and lon_lo is not None and lon_hi is not None
    pad_lat, pad_lon = max(0.005, (lat_hi - lat_lo) * 0.05), max(0.005, (lon_hi - lon_lo) * 0.05)
    inside = pl.col("lat").is_between(lat_lo - pad_lat, lat_hi + pad_lat) & pl.col("lon").is_between(
        lon_lo - pad_lon, lon_hi + pad_lon
    )
    # a route that leaves the area is cut there: each stretch inside is its own line (no chord across the gap)
    marked = tracks.sort("activity_id", "seq").with_columns(inside.alias("inside"))
    kept = (
        marked.with_columns(
            (pl.col("inside") != pl.col("inside").shift(1).over("activity_id"))
            .fill_null(True)
            .cum_sum()
            .over("activity_id")
            .alias("stretch")
        )
        .filter(pl.col("inside"))
        .with_columns(pl.format("{}-{}", "activity_id", "stretch").alias("line"))
    )
    every = max(1, -(-kept.height // max_points))
    kept = kept.filter((pl.col("seq") % every == 0) | (pl.col("seq") == pl.col("seq").max().over("line")))
    total = tracks["activity_id"].n_unique()
    drawn = kept["activity_id"].n_unique()
    outside = total - tracks.group_by("activity_id").agg(inside.all().alias("in"))["in"].sum()
    lines = (
        alt.Chart(kept)
        .mark_line(strokeWidth=1.1, opacity=max(0.08, min(0.6, 6 / max(1, drawn))), color=OKABE_ITO["vermillion"])
        .encode(longitude="lon:Q", latitude="lat:Q", detail="line:N", order="seq:Q")
    )
    note = (
        counted(total, "route")
        + (f"; {outside} leave the area shown and are cut at its edge" if outside else "")
        + (f"; {sparse.height} with fewer than {MIN_ROUTE_POINTS} points left out" if sparse.height else "")
    )
    chart = lines.project(type="mercator").properties(
        width=WIDTH,
        height=420,
        title=alt.TitleParams(
            title, subtitle=f"Every route, thin and translucent: the darker, the more often. {note}."
        ),
    )
    return _config(chart)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _day_axis(first_day: dt.date, last_day: dt.date) -> Any:
    """The x encoding over whole local days from first_day to last_day (the fitness and load-change charts share
    it, so their windows line up)."""
    days = (last_day - first_day).days + 1
    span = [f"{first_day.isoformat()}T00:00:00", f"{(last_day + dt.timedelta(days=1)).isoformat()}T00:00:00"]
    return alt.X(
        "date:T",
        title=None,
        scale=alt.Scale(domain=span),
        axis=alt.Axis(format=_date_format(days), labelAngle=0, tickCount=min(12, days)),
    )


def _date_format(days: int) -> str:
    """Month and year over a long span; the day too over a short one (not "Nov 2026" eleven times). Always the
    year: a short span can cross New Year."""
    return "%b %Y" if days > 90 else "%d %b %Y"


def _time_step(span: int) -> int:
    """A round tick step in seconds giving about four to six ticks over `span`."""
    for step in (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 5:
            return step
    return 7200


DURATION_LABEL = (
    "datum.value < 60 ? datum.value + ' s' : datum.value < 3600 ? datum.value / 60 + ' min' : datum.value / 3600 + ' h'"
)


def _mmss(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# --- from the streams ----------------------------------------------------------------------------------------

# The power curve's periods, drawn in this order (all time underneath, this season on top): all time a grey shaded
# area that the seasons' lines run along where they equal it, last season blue, this season vermillion.
STREAM_PERIODS = {
    "all time": ("#9a9a9a", 1.5),
    "last season": (OKABE_ITO["blue"], 2.0),
    "this season": (OKABE_ITO["vermillion"], 2.4),
}
SMOOTH_FROM_S = 1200  # the W′ balance chart draws power second by second up to 20 minutes, as a 30-s mean beyond
CURVE_TICKS = (1, 5, 15, 60, 300, 1200, 3600, 7200, 18000)  # 1 s, 5 s, 15 s, 1 min, 5 min, 20 min, 1 h, 2 h, 5 h


def stream_power_curve(curve: pl.DataFrame, labels: dict[str, str], subtitle: list[str]) -> Any:
    """The mean-maximal power curve from the power streams on a log duration axis, one line per period of
    `labels` (period → legend label, e.g. "this season" → "this season (2026)"). `curve`: season_power_curve's rows of
    those periods with `activity` (the activity's name) for the tooltip."""
    periods = [p for p in STREAM_PERIODS if p in labels and p in set(curve["period"].to_list())]
    data = curve.filter(pl.col("period").is_in(periods)).with_columns(
        pl.col("period").replace_strict(labels, return_dtype=pl.String).alias("label"),
        pl.col("duration_s").map_elements(_duration_text, return_dtype=pl.String).alias("duration"),
    )
    data = _local(data, "local_date")
    shortest, longest = _int_bounds(data["duration_s"])
    x = alt.X(
        "duration_s:Q",
        title="duration (log scale)",
        scale=alt.Scale(type="log", domain=[shortest, longest], nice=False),
        axis=alt.Axis(values=[t for t in CURVE_TICKS if shortest <= t <= longest], labelExpr=DURATION_LABEL),
    )
    top = float(_high(data["best_watts"]) or 1.0)
    y = alt.Y("best_watts:Q", title="best average power (W)", scale=alt.Scale(domain=[0, top * 1.05], nice=False))
    domain = [labels[p] for p in periods]
    color = alt.Color(
        "label:N",
        title=None,
        sort=domain,
        scale=alt.Scale(domain=domain, range=[STREAM_PERIODS[p][0] for p in periods]),
        legend=alt.Legend(symbolType="square", symbolOpacity=1),
    )
    tooltip = [
        alt.Tooltip("label:N", title="period"),
        alt.Tooltip("duration:N", title="duration"),
        alt.Tooltip("best_watts:Q", title="watts", format=".0f"),
        alt.Tooltip("activity:N", title="activity"),
        alt.Tooltip("local_date:T", title="date", format="%d %b %Y"),
    ]
    layers = []
    for period in periods:
        mine = alt.Chart(data.filter(pl.col("period") == period)).encode(x=x, y=y, color=color, tooltip=tooltip)
        if period == "all time":  # a shaded area under a grey line: still seen where a season's line runs along it
            layers.append(mine.mark_area(opacity=0.35, line={"strokeWidth": STREAM_PERIODS[period][1]}))
            continue
        layers += [mine.mark_line(strokeWidth=STREAM_PERIODS[period][1]), mine.mark_circle(size=14, opacity=1)]
    chart = alt.layer(*layers).properties(
        width=WIDTH,
        height=300,
        title=alt.TitleParams("Power curve from the power streams", subtitle=subtitle),
    )
    return _config(chart)


def w_prime_balance(seconds: pl.DataFrame, cp_watts: float, w_prime_j: float, title: str, subtitle: list[str]) -> Any:
    """W′ balance (kJ) over one session's time in minutes with W′ (full) and 0 as rules and the lowest point marked;
    below, the power (30-s average) against CP. `seconds`: w_prime_balance's rows of the activity."""
    start, end = _int_bounds(seconds["second"])
    smooth = 1 if end - start <= SMOOTH_FROM_S else 30  # a short session's every second; a long one's 30-s mean
    data = seconds.sort("second").select(
        ((pl.col("second") - start) / 60).alias("minutes"),
        (pl.col("w_prime_balance_j") / 1000).alias("kj"),
        pl.col("watts").rolling_mean(window_size=smooth, min_samples=1).alias("power"),
    )
    low = data.filter(pl.col("kj") == pl.col("kj").min()).head(1)
    low_kj, low_min = float(low["kj"][0]), float(low["minutes"][0])
    full = w_prime_j / 1000
    bottom = min(0.0, low_kj) - full * 0.08
    kj_axis = alt.Y("kj:Q", title="W′ balance (kJ)", scale=alt.Scale(domain=[bottom, full * 1.08], nice=False))
    last = float(_high(data["minutes"]) or 1.0)
    x = alt.X(
        "minutes:Q",
        title="time into the session (minutes)",
        scale=alt.Scale(domain=[0, last], nice=False),
        axis=alt.Axis(tickMinStep=1),
    )
    top_x = alt.X("minutes:Q", title=None, scale=alt.Scale(domain=[0, last], nice=False), axis=alt.Axis(tickMinStep=1))
    rules = (
        alt.Chart(pl.DataFrame({"kj": [full, 0.0], "what": ["full", "empty"]}))
        .mark_rule(color="#777", strokeDash=[4, 4])
        .encode(y=kj_axis)
    )
    rule_text = (
        alt.Chart(pl.DataFrame({"kj": [full], "minutes": [0.0], "t": [f"W′ {full:.1f} kJ (full)"]}))
        .mark_text(align="left", baseline="bottom", dx=4, dy=-3, fontSize=11, color="#555")
        .encode(x=top_x, y=kj_axis, text="t:N")
    )
    area = (
        alt.Chart(data)
        .mark_area(line={"color": OKABE_ITO["blue"], "strokeWidth": 1.6}, color=OKABE_ITO["blue"], opacity=0.18)
        .encode(x=top_x, y=kj_axis, y2=alt.datum(bottom))
    )
    share = 1 - low_kj / full
    said = f"lowest {low_kj:.1f} kJ ({share:.0%} of W′ used) at {_mmss(int(round(low_min * 60)))}"
    point = (
        alt.Chart(low)
        .mark_point(shape="triangle-down", size=140, filled=True, color=OKABE_ITO["vermillion"], stroke="#7a2a00")
        .encode(x=top_x, y=kj_axis)
    )
    on_right = low_min > last * 0.6
    label = (
        alt.Chart(low.with_columns(pl.lit(said).alias("t")))
        .mark_text(
            align="right" if on_right else "left",
            dx=-10 if on_right else 10,
            dy=12,
            fontSize=12,
            fontWeight="bold",
            color="#7a2a00",
        )
        .encode(x=top_x, y=kj_axis, text="t:N")
    )
    balance = alt.layer(area, rules, rule_text, point, label).properties(
        width=WIDTH, height=240, title=alt.TitleParams(title, subtitle=subtitle)
    )
    watts_axis = alt.Y("power:Q", title="power (W)" if smooth == 1 else f"power (W, {smooth}-s mean)")
    power = alt.Chart(data).mark_line(color="#555", strokeWidth=1).encode(x=x, y=watts_axis)
    cp_rule = (
        alt.Chart(pl.DataFrame({"power": [cp_watts]}))
        .mark_rule(color=OKABE_ITO["vermillion"], strokeDash=[5, 4], strokeWidth=1.5)
        .encode(y=watts_axis)
    )
    cp_text = (
        alt.Chart(pl.DataFrame({"power": [cp_watts], "minutes": [last], "t": [f"CP {cp_watts:.0f} W"]}))
        .mark_text(align="right", baseline="bottom", dy=-3, fontSize=11, color=OKABE_ITO["vermillion"])
        .encode(x=x, y=watts_axis, text="t:N")
    )
    below = alt.layer(power, cp_rule, cp_text).properties(
        width=WIDTH,
        height=110,
        title=alt.TitleParams(
            "Power: above CP (dashed) W′ is spent, below it W′ comes back",
            fontSize=13,
            subtitle=f"Drawn as {smooth}-s means: W′ moves with every second, so a surge above CP the mean hides still "
            "spends it."
            if smooth > 1
            else "",
        ),
    )
    return _config(alt.vconcat(balance, below, spacing=14))


def _duration_text(seconds: int) -> str:
    """ "5 s", "1 min", "1.5 min", "1 h": a duration of the MMP grid as the axis labels it."""
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:g} h"
