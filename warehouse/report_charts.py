"""The report's charts, in Altair (Vega-Lite), rendered to PNG offline by vl-convert.

Each function takes the analysis frames (Polars) and returns an Altair chart; dates go to Vega-Lite as local
wall-clock strings (no zone), so they display as the athlete's local days wherever the report is rendered.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import altair as alt
import polars as pl
import vl_convert as vlc

WIDTH = 760
YTD_YEARS = 6  # seasons compared in the year-to-date chart
FONT = "Helvetica, Arial, sans-serif"
BAND_COLORS = {"high risk": "#f4c7c3", "optimal": "#cfe8cf", "grey zone": "#e6e6e6", "fresh": "#cfe0f4",
               "transition": "#fbe3b8"}
ZONE_COLORS = {
    5: ["#9ecae1", "#74c476", "#f6d04d", "#fb8c00", "#d7301f"],
    7: ["#c6dbef", "#6baed6", "#74c476", "#f6d04d", "#fb8c00", "#d7301f", "#7a0177"],
}
ZONE_TYPE_LABELS = {"heartrate": "heart-rate", "power": "power"}
CTL_COLOR, ATL_COLOR, TSB_COLOR, LOAD_COLOR = "#1f5fa8", "#c2185b", "#333333", "#9e9e9e"
PR_COLOR = "#f5a623"
MMSS = ("floor(datum.value / 3600) > 0 ? floor(datum.value / 3600) + ':' + "
        "(floor(datum.value % 3600 / 60) < 10 ? '0' : '') + floor(datum.value % 3600 / 60) + ':' + "
        "(datum.value % 60 < 10 ? '0' : '') + datum.value % 60 : "
        "floor(datum.value / 60) + ':' + (datum.value % 60 < 10 ? '0' : '') + datum.value % 60")


def render_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes, rendered in-process with no network access (no external data or fonts are fetched)."""
    with alt.data_transformers.disable_max_rows():  # the data is ours and bounded (a year, a few seasons)
        spec = chart.to_json()
    return vlc.vegalite_to_png(spec, scale=scale, allowed_base_urls=[])


def _config(chart: Any) -> Any:
    return (chart.configure(font=FONT, background="white")
            .configure_title(fontSize=16, anchor="start", subtitleColor="#555", subtitleFontSize=12, offset=10)
            .configure_axis(labelFontSize=11, titleFontSize=12, gridColor="#eeeeee", domainColor="#999",
                            tickColor="#999")
            .configure_legend(labelFontSize=11, titleFontSize=12, orient="top")
            .configure_view(stroke=None))


def _local(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Dates as local wall-clock ISO strings (Vega parses them as local time: no shift by a zone)."""
    return frame.with_columns(pl.col(c).cast(pl.Date).dt.strftime("%Y-%m-%dT00:00:00") for c in columns)


def empty(title: str, message: str) -> Any:
    """A chart that says there is nothing to show yet (still a real image)."""
    text = (alt.Chart(pl.DataFrame({"message": [message]}))
            .mark_text(fontSize=15, color="#666").encode(text="message:N")
            .properties(width=WIDTH, height=120, title=alt.TitleParams(title)))
    return _config(text)


def pmc(frame: pl.DataFrame, bands: pl.DataFrame, title_suffix: str = "") -> Any:
    """Fitness (CTL), fatigue (ATL) and daily load above; form (TSB) over its colored bands below."""
    if frame.is_empty():
        return empty("Performance management chart", "No activities with a training load yet.")
    data = _local(frame, "date")
    x = alt.X("date:T", title=None, axis=alt.Axis(format="%b %Y", labelAngle=0))
    load = (alt.Chart(data).mark_bar(color=LOAD_COLOR, opacity=0.45, width=2)
            .encode(x=x, y=alt.Y("load:Q", title="daily load (TSS scale)",
                                 axis=alt.Axis(titleColor=LOAD_COLOR, orient="right"))))
    lines = (alt.Chart(data).transform_fold(["ctl", "atl"], as_=["measure", "value"])
             .transform_calculate(label="datum.measure == 'ctl' ? 'Fitness (CTL, 42 d)' : 'Fatigue (ATL, 7 d)'")
             .mark_line(strokeWidth=2.2)
             .encode(x=x, y=alt.Y("value:Q", title="CTL / ATL (load per day)"),
                     color=alt.Color("label:N", title=None,
                                     scale=alt.Scale(domain=["Fitness (CTL, 42 d)", "Fatigue (ATL, 7 d)"],
                                                     range=[CTL_COLOR, ATL_COLOR]))))
    top = (alt.layer(load, lines).resolve_scale(y="independent")
           .properties(width=WIDTH, height=230, title=alt.TitleParams(
               "Fitness, fatigue and form" + title_suffix,
               subtitle="Bars: daily load. CTL and ATL are exponentially weighted loads (42 and 7 days).")))
    low = min(-40.0, float(frame["tsb"].min() or 0) - 5)
    high = max(35.0, float(frame["tsb"].max() or 0) + 5)
    band_rows = bands.sort("sort_order").with_columns(
        pl.col("tsb_from").fill_null(low).clip(low, high).alias("y0"),
        pl.col("tsb_to").fill_null(high).clip(low, high).alias("y1"))
    rects = (alt.Chart(band_rows).mark_rect(opacity=0.9)
             .encode(y=alt.Y("y0:Q", scale=alt.Scale(domain=[low, high], nice=False), title="form (TSB)"),
                     y2="y1:Q",
                     color=alt.Color("band:N", title="form band", sort=list(band_rows["band"]),
                                     scale=alt.Scale(domain=list(band_rows["band"]),
                                                     range=[BAND_COLORS.get(b, "#eeeeee")
                                                            for b in band_rows["band"]]))))
    tsb = (alt.Chart(data).mark_line(color=TSB_COLOR, strokeWidth=1.8)
           .encode(x=x, y=alt.Y("tsb:Q", scale=alt.Scale(domain=[low, high], nice=False))))
    bottom = alt.layer(rects, tsb).properties(width=WIDTH, height=150, title=alt.TitleParams(
        "Form (TSB = yesterday's CTL − ATL)", fontSize=13))
    return _config(alt.vconcat(top, bottom, spacing=18).resolve_scale(color="independent"))


def _weeks(frame: pl.DataFrame) -> pl.DataFrame:
    """`mid`: the middle of each row's week (Thursday noon, local), where its bar stands."""
    return frame.with_columns((pl.col("week_start").cast(pl.Datetime) + pl.duration(days=3, hours=12))
                              .dt.strftime("%Y-%m-%dT%H:%M:%S").alias("mid"))


def _week_axis(first_week: dt.date, last_week: dt.date) -> tuple[Any, float]:
    """The x encoding over whole weeks from first_week to last_week (Mondays), and the pixel width of a bar."""
    weeks = (last_week - first_week).days // 7 + 1
    domain = [f"{first_week.isoformat()}T00:00:00", f"{(last_week + dt.timedelta(days=7)).isoformat()}T00:00:00"]
    step = -(-weeks // 13)
    mondays = [first_week + dt.timedelta(weeks=i) for i in range(0, weeks, step)]
    ticks = [alt.DateTime(year=m.year, month=m.month, date=m.day) for m in mondays]
    x = alt.X("mid:T", title="week (Monday start)", scale=alt.Scale(domain=domain, nice=False),
              axis=alt.Axis(format="%d %b %y", labelAngle=-40, values=ticks, labelAlign="right"))
    return x, max(2.0, WIDTH / weeks * 0.72)


def weekly_volume(frame: pl.DataFrame, first_week: dt.date, last_week: dt.date, title_suffix: str = "") -> Any:
    """Stacked weekly moving time by sport type."""
    if frame.is_empty():
        return empty("Weekly volume by sport", "No activities in this period.")
    data = _weeks(frame.with_columns((pl.col("moving_time_s") / 3600).alias("hours"),
                                     (pl.col("distance_m") / 1000).round(1).alias("km")))
    data = _local(data, "week_start")
    x, width = _week_axis(first_week, last_week)
    chart = (alt.Chart(data).mark_bar(width=width)
             .encode(x=x, y=alt.Y("sum(hours):Q", title="moving time (hours)"),
                     color=alt.Color("sport_type:N", title="sport", scale=alt.Scale(scheme="tableau10")),
                     order=alt.Order("sport_type:N"),
                     tooltip=["week_start:T", "sport_type:N", alt.Tooltip("hours:Q", format=".1f"), "km:Q"])
             .properties(width=WIDTH, height=260, title=alt.TitleParams(
                 "Weekly training time by sport" + title_suffix,
                 subtitle="Moving time per ISO week (Monday start, local dates), stacked by sport type.")))
    return _config(chart)


def weekly_zones(zones: pl.DataFrame, seiler: pl.DataFrame, zone_type: str, pi_threshold: float,
                 first_week: dt.date, last_week: dt.date, title_suffix: str = "") -> Any:
    """Stacked hours per zone each week, with the polarization index (right axis) and its 2.0 line."""
    if zones.is_empty():
        return empty("Weekly time in zones", "No heart-rate or power zone data in this period.")
    zone_count = int(zones["zone"].max() or 5)
    palette = ZONE_COLORS.get(zone_count) or ZONE_COLORS[7][:zone_count]
    labels = [f"Z{i}" for i in range(1, zone_count + 1)]
    data = _weeks(zones.with_columns((pl.col("seconds") / 3600).alias("hours"),
                                     pl.format("Z{}", pl.col("zone")).alias("zone_label")))
    kind = ZONE_TYPE_LABELS.get(zone_type, zone_type)
    x, width = _week_axis(first_week, last_week)
    bars = (alt.Chart(_local(data, "week_start")).mark_bar(width=width)
            .encode(x=x, y=alt.Y("hours:Q", title=f"time in {kind} zones (hours)"),
                    color=alt.Color("zone_label:N", title="zone", sort=labels,
                                    scale=alt.Scale(domain=labels, range=palette)),
                    order=alt.Order("zone:Q", sort="ascending")))
    # every week of the period, so the index line breaks where a week has none (no time, or no z2 / z3 time)
    weeks = pl.DataFrame({"week_start": pl.date_range(first_week, last_week, "1w", eager=True)})
    pi = _weeks(weeks.join(seiler.select("week_start", "polarization_index"), on="week_start", how="left"))
    pi_axis = alt.Y("polarization_index:Q", title="polarization index",
                    scale=alt.Scale(domain=[0, max(3.0, float(pi["polarization_index"].max() or 0) + 0.2)]),
                    axis=alt.Axis(orient="right", titleColor="#222"))
    pi_line = (alt.Chart(pi).mark_line(color="#222", strokeWidth=1.6, point=alt.OverlayMarkDef(color="#222", size=28))
               .encode(x=x, y=pi_axis))
    rule = (alt.Chart(pl.DataFrame({"polarization_index": [pi_threshold]}))
            .mark_rule(color="#222", strokeDash=[5, 4], opacity=0.6).encode(y=pi_axis))
    layered = (alt.layer(bars, alt.layer(pi_line, rule)).resolve_scale(y="independent")
               .properties(width=WIDTH, height=280, title=alt.TitleParams(
                   f"Weekly time in {kind} zones" + title_suffix,
                   subtitle=f"Bars: hours per zone. Line: polarization index (dashed: {pi_threshold:g}, above is "
                            "polarized); the line breaks for weeks without zone-2 or zone-3 time (no index).")))
    return _config(layered)


def segment_history(progression: pl.DataFrame, events: pl.DataFrame, segment_ids: list[int]) -> Any:
    """Per segment: every effort, the running best as a step line, PR markers."""
    if not segment_ids:
        return empty("Segment history", "No segment efforts yet.")
    panels = []
    for segment_id in segment_ids:
        efforts = _local(progression.filter(pl.col("segment_id") == segment_id), "local_date")
        prs = _local(events.filter(pl.col("segment_id") == segment_id), "local_date")
        name = efforts["segment_name"][0] or f"segment {segment_id}"
        low, high = int(efforts["elapsed_time"].min()), int(efforts["elapsed_time"].max())
        pad = max(5, (high - low) // 10)
        y_scale = alt.Scale(domain=[max(0, low - pad), high + pad], nice=False)
        x = alt.X("local_date:T", title=None, axis=alt.Axis(format="%b %Y", labelAngle=0))
        y_axis = alt.Axis(labelExpr=MMSS, title="elapsed time (m:ss)")
        points = (alt.Chart(efforts).mark_circle(size=36, color="#7a8ca5", opacity=0.75)
                  .encode(x=x, y=alt.Y("elapsed_time:Q", scale=y_scale, axis=y_axis),
                          tooltip=["local_date:T", "elapsed_time:Q", "attempt:Q"]))
        best = (alt.Chart(efforts).mark_line(interpolate="step-after", color=CTL_COLOR, strokeWidth=2)
                .encode(x=x, y=alt.Y("running_best:Q", scale=y_scale)))
        stars = (alt.Chart(prs).mark_point(shape="diamond", size=110, filled=True, color=PR_COLOR,
                                           stroke="#8a5a00", strokeWidth=0.8)
                 .encode(x=x, y=alt.Y("elapsed_time:Q", scale=y_scale),
                         tooltip=["local_date:T", "elapsed_time:Q", alt.Tooltip("improvement_s:Q", title="gain s")]))
        pr = prs.tail(1)
        subtitle = (f"{efforts.height} efforts, {prs.height - 1} PRs after the first; best "
                    f"{_mmss(int(pr['elapsed_time'][0]))} on {pr['local_date'][0][:10]}")
        panels.append(alt.layer(points, best, stars).properties(
            width=WIDTH // 2 - 40, height=190, title=alt.TitleParams(name, subtitle=subtitle, fontSize=13)))
    rows = [alt.hconcat(*panels[i:i + 2], spacing=40) for i in range(0, len(panels), 2)]
    chart = alt.vconcat(*rows, spacing=20).properties(title=alt.TitleParams(
        "Segment history",
        subtitle="Dots: efforts. Blue steps: the running best. Diamonds: PRs (hidden efforts excluded)."))
    return _config(chart)


def eddington(curve: pl.DataFrame, number: int, days_to_next: int, family: str, unit: str) -> Any:
    """Days reaching n (bars) against the n = days line; the Eddington number is where they cross."""
    if curve.is_empty():
        return empty("Eddington number", "No distance yet.")
    limit = max(10, min(int(curve["n"].max()), max(2 * number, number + 20)))
    data = curve.filter(pl.col("n") <= limit).with_columns(
        pl.when(pl.col("n") <= number).then(pl.lit("reached")).otherwise(pl.lit("not yet")).alias("status"))
    bars = (alt.Chart(data).mark_bar()
            .encode(x=alt.X("n:Q", title=f"n ({unit} in a day)", scale=alt.Scale(domain=[0, limit + 1], nice=False)),
                    y=alt.Y("days_at_least:Q", title=f"days with at least n {unit}"),
                    color=alt.Color("status:N", title=None, scale=alt.Scale(domain=["reached", "not yet"],
                                                                            range=["#2e7d32", "#b0bec5"])),
                    tooltip=["n:Q", "days_at_least:Q"]))
    diagonal = (alt.Chart(pl.DataFrame({"n": [0, limit + 1], "days_at_least": [0, limit + 1]}))
                .mark_line(color="#d7301f", strokeDash=[6, 4]).encode(x="n:Q", y="days_at_least:Q"))
    mark = (alt.Chart(pl.DataFrame({"n": [number], "days_at_least": [number], "label": [f"E = {number}"]}))
            .mark_text(dx=-10, dy=-16, align="right", fontSize=14, fontWeight="bold", color="#d7301f")
            .encode(x="n:Q", y="days_at_least:Q", text="label:N"))
    chart = alt.layer(bars, diagonal, mark).properties(width=WIDTH, height=260, title=alt.TitleParams(
        f"Eddington number ({family}, {unit}): {number}",
        subtitle=f"E days of at least E {unit} (local days, activities summed). "
                 f"{days_to_next} more day(s) of {number + 1}+ {unit} for {number + 1}. Dashed: days = n."))
    return _config(chart)


def ytd(frame: pl.DataFrame, family: str, unit: str, unit_m: float, as_of: dt.date) -> Any:
    """Cumulative distance through each year, one line per year, the current year bold."""
    if frame.is_empty():
        return empty("Year to date", "No activities yet.")
    frame = frame.filter(pl.col("year") > as_of.year - YTD_YEARS)
    data = (frame.with_columns((pl.col("distance_m") / unit_m).alias("distance"),
                               pl.col("year").cast(pl.String).alias("year_label"),
                               pl.date(2000, pl.col("date").dt.month(), pl.col("date").dt.day()).alias("plot_date"),
                               (pl.col("year") == as_of.year).alias("current")))
    data = _local(data, "plot_date", "date")
    years = sorted(data["year_label"].unique().to_list())
    past = [y for y in years if y != str(as_of.year)]
    blues = ["#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]
    colors = [blues[max(0, len(blues) - len(past) + i)] if len(past) <= len(blues) else "#6baed6"
              for i in range(len(past))] + (["#fc4c02"] if str(as_of.year) in years else [])
    chart = (alt.Chart(data).mark_line()
             .encode(x=alt.X("plot_date:T", title=None, axis=alt.Axis(format="%b", labelAngle=0)),
                     y=alt.Y("distance:Q", title=f"distance since 1 January ({unit})"),
                     color=alt.Color("year_label:N", title="year", sort=years,
                                     scale=alt.Scale(domain=past + [y for y in years if y not in past],
                                                     range=colors)),
                     strokeWidth=alt.condition("datum.current", alt.value(3.2), alt.value(1.4)),
                     tooltip=["date:T", alt.Tooltip("distance:Q", format=".0f")])
             .properties(width=WIDTH, height=260, title=alt.TitleParams(
                 f"Year-to-date distance ({family})",
                 subtitle=f"Cumulative {unit} by day of the year, one line per year; {as_of.year} in orange "
                          f"(through {as_of.isoformat()}).")))
    return _config(chart)


def _mmss(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
