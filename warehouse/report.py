"""`build_report`: a self-contained HTML report of an athlete's training (charts embedded as PNG data URIs, no
network, no external URL) plus a PNG file per chart and a Markdown summary.

Everything comes from the analysis views (warehouse/analysis_views.sql, read into Polars): the numbers in the
report are the numbers an analyst's SQL gives.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import os
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, cast

import polars as pl
import polyline as polyline_codec

from . import analysis, db, streams
from . import report_charts as charts

PMC_DAYS = 365
VOLUME_WEEKS = 52
ZONE_WEEKS = 26
PI_WEEKS = 4  # the polarization index is drawn over this many weeks of zone time
PI_MIN_HOURS = 3.0  # and only where they hold at least this much
# Power load on an FTP fitsync saw only after the activity (activity_load.measured says the rest is measured)
LATER_FTP = (pl.col("load_source") == "power") & ~pl.col("measured")
# Why a load was not measured, besides power on an FTP known later (said on its own, with the command that fixes it).
UNMEASURED = {
    "from heart rate on partial zone buckets or an LTHR known only later": (pl.col("load_source") == "heart_rate")
    & ~pl.col("measured"),
    "estimated from duration and sport": pl.col("load_source") == "estimate",
}
# Heart-rate zone buckets that do not match the activity's duration (hr_coverage under 1: a strap that dropped out;
# over: buckets longer than the activity), and what activity_load made of them.
_UNMATCHED_BUCKETS = {
    True: "a strap that dropped out: the rest counted at the sport's usual intensity",
    False: "buckets longer than the activity: scaled down to it",
}
TOP_SEGMENTS = 4
UNITS = {"km": 1000.0, "mi": 1609.344}
CHART_SCALE = 2  # PNGs are drawn at twice their size on the page, for sharp text on dense screens
# The latest hard session, whose W′ balance the report draws: the latest ride with streams whose W′ balance fell below
# this share of W′ (it used more than half of it).
HARD_SHARE = 0.5
CURVE_PERIODS = ("this season", "last season", "all time")  # the stream power curve's lines
CURVE_MARKS = (5, 60, 300, 1200)  # the durations the power curve's subtitle and the summary quote
TURN_ON = (
    '`fitsync sync` fetches them when config.toml has `streams = "recent"` (the default: the last `streams_days` '
    'days) or `streams = "all"` (the whole history); `streams = "off"` fetches none'
)


@dataclass(frozen=True)
class ReportResult:
    html_path: Path
    png_paths: list[Path]
    summary_markdown: str
    athlete_id: int = 0
    figures: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    markdown_path: Path | None = None
    title: str = ""


class ReportError(Exception):
    """The report cannot be built (no warehouse, no such athlete, several athletes and none chosen)."""


def build_report(
    warehouse: db.Where,
    out_dir: Path | str,
    athlete_id: int | None = None,
    drawing: Callable[[int, int], None] = lambda chart, charts: None,
) -> ReportResult:
    """Write out_dir/report.html and one PNG per chart for the athlete (the only one, when None). `drawing` hears
    each chart's number and their count before it is drawn (the drawing takes most of the seconds)."""
    out_dir = Path(out_dir)
    data = _gathered(warehouse, athlete_id)
    athlete_id = data["athlete_id"]
    figures = _figures(data)
    drawn = _charts(figures)
    pngs = {}
    for number, (name, chart) in enumerate(drawn.items(), 1):
        drawing(number, len(drawn))
        pngs[name] = charts.render_png(chart, scale=CHART_SCALE)
    summary = _summary_markdown(data)
    files = {f"{name}.png": png for name, png in pngs.items()}
    files["summary.md"] = (
        summary + "\n\n" + "\n".join(_markdown_section(data, n, figures[n]) for n in figures) + "\n"
    ).encode()
    files["report.html"] = _html(data, figures, pngs).encode()
    _write_all(out_dir, files)
    paths = [out_dir / f"{name}.png" for name in pngs]
    html_path, markdown_path = out_dir / "report.html", out_dir / "summary.md"
    return ReportResult(
        html_path,
        paths,
        summary,
        athlete_id,
        figures=drawn,
        markdown_path=markdown_path,
        title=f"{data['name']} ({athlete_id}) — as of {data['as_of'].isoformat()}, {AS_OF_DATE}",
    )


def charts_of(warehouse: db.Where, athlete_id: int | None = None) -> dict[str, Any]:
    """The report's charts for the athlete (the only one, when None) as Altair charts, not drawn: to show in a
    notebook, or to read their Vega-Lite (`.to_dict()`) without the seconds the drawing takes."""
    return _charts(_figures(_gathered(warehouse, athlete_id)))


def _charts(figures: Figures) -> dict[str, Any]:
    """The figures that are charts (a figure without one is a table or a message), by name."""
    return {name: chart for name, (_, chart, _) in figures.items() if chart is not None}


def _gathered(warehouse: db.Where, athlete_id: int | None) -> dict[str, Any]:
    """What the report shows of the athlete (the only one, when None), read on one connection."""
    if not db.exists(warehouse):
        raise ReportError(f"no warehouse at {warehouse}: run `fitsync sync` first")
    db.ensure_schema(warehouse)
    known = db.athletes_held(warehouse)
    if athlete_id is None:
        if len(known) != 1:
            raise ReportError(
                "the warehouse has no activities yet"
                if not known
                else f"the warehouse has several athletes ({', '.join(map(str, known))}): choose one"
            )
        athlete_id = known[0]
    elif athlete_id not in known:
        raise ReportError(f"athlete {athlete_id} has no activities in the warehouse")
    with db.reading(warehouse) as conn:
        return _gather(conn, athlete_id)


# What the as-of date is: a day behind the reader's calendar west of UTC, and said so wherever it is shown.
AS_OF_DATE = "the athlete's local date"


def _write_all(out_dir: Path, files: dict[str, bytes]) -> None:
    """Every file rendered before the first is written, each written beside its place and renamed onto it: a report
    stopped while its charts render (the seconds it takes) leaves the folder's last report as it was, not half of a
    new one."""
    out_dir.mkdir(parents=True, exist_ok=True)
    partials = {}
    try:
        for name, content in files.items():
            partial = out_dir / f".{name}.{uuid.uuid4().hex}.partial"
            partial.write_bytes(content)
            partials[name] = partial
        for name, partial in partials.items():
            os.replace(partial, out_dir / name)
    finally:
        for partial in partials.values():
            partial.unlink(missing_ok=True)


# --- the data -----------------------------------------------------------------------------------------------


def _gather(conn: Any, athlete_id: int) -> dict[str, Any]:
    """Every frame the report draws or sums up, read once from the analysis views (keys named for what they hold)."""

    def view(name: str) -> pl.DataFrame:
        return analysis.view(conn, name, athlete_id)

    name, unit = _name_and_unit(conn, athlete_id)
    as_of_row = view("athlete_as_of").row(0, named=True)
    as_of: dt.date = as_of_row["as_of_date"]
    week0 = as_of - dt.timedelta(days=as_of.weekday())
    calendar = view("activity_calendar")
    activity_load = view("activity_load")  # every activity with its family, local date and moving time
    pmc_all = view("pmc")
    pmc = pmc_all.filter(pl.col("date") > as_of - dt.timedelta(days=PMC_DAYS))
    return {
        "athlete_id": athlete_id,
        "name": name,
        "week0": week0,
        "unit": unit,
        "as_of": as_of,
        "as_of_row": as_of_row,
        "calendar": calendar,
        "recent": calendar.filter(pl.col("local_date") > as_of - dt.timedelta(days=365)),
        "main_family": _main_family(activity_load, as_of),
        "pmc_all": pmc_all,
        "pmc": pmc,
        "bands": conn.sql("SELECT band, tsb_from, tsb_to, sort_order FROM analysis_form_bands").pl(),
        "ctl_days": conn.sql("SELECT max(value) FILTER (WHERE name = 'ctl_days') FROM analysis_settings").fetchone()[0],
        "volume": view("volume_weekly").filter(pl.col("week_start") > week0 - dt.timedelta(weeks=VOLUME_WEEKS)),
        **_zone_frames(conn, view, week0),
        "daily": view("daily_load"),
        "tracks": _tracks(conn, athlete_id),
        **_segment_frames(view),
        "eddington": view("eddington"),
        "curve": view("eddington_curve"),
        "ytd": view("ytd_cumulative"),
        "coverage": view("load_coverage_weekly"),
        "activity_load": activity_load,
        "loads": _loads_by_source(activity_load, cast(dt.date, pmc["date"].min()) if pmc.height else as_of),
        "risk": view("load_risk_daily").filter(pl.col("date") > as_of - dt.timedelta(days=PMC_DAYS)),
        "power_curve": view("power_duration_curve"),
        "cp": view("critical_power"),
        "ftp_unused": view("profile_ftp_unused"),
        "duplicates": view("duplicate_activities"),
        "future": view("future_activities"),
        "best_efforts": view("running_best_efforts"),
        **_stream_frames(conn, view, athlete_id, as_of),
    }


def _stream_frames(conn: Any, view: Callable[[str], pl.DataFrame], athlete_id: int, as_of: dt.date) -> dict[str, Any]:
    """The streams sections' frames: the season power curve, the latest hard session's W′ balance, the exact best
    efforts of runs, and what the athlete has in stream storage (to say why a section is empty)."""
    w_summary = view("w_prime_balance_summary")
    hard = w_summary.filter(pl.col("min_w_prime_balance_j") < HARD_SHARE * pl.col("w_prime_j")).tail(1)
    hard_row = hard.row(0, named=True) if hard.height else None
    season, hard_season = conn.execute(
        "SELECT season_of(?::DATE, s.m), season_of(?::DATE, s.m) FROM (SELECT CAST(value AS INTEGER) AS m "
        "FROM analysis_settings WHERE name = 'season_start_month') s",
        [as_of, hard_row["local_date"] if hard_row else None],
    ).fetchall()[0]
    w_seconds = (
        analysis.view(conn, "w_prime_balance", athlete_id, activity_id=hard_row["activity_id"])
        if hard_row
        else pl.DataFrame()
    )
    curve = view("season_power_curve").filter(pl.col("period").is_in(CURVE_PERIODS))
    stream_best = view("stream_best_efforts").filter(pl.col("season").is_in([0, season]))
    ids = {*curve["activity_id"].to_list(), *stream_best["activity_id"].to_list()}
    if hard_row:
        ids.add(hard_row["activity_id"])
    names = dict(
        conn.execute(
            "SELECT activity_id, name FROM activities WHERE athlete_id = ? AND list_contains(?, activity_id)",
            [athlete_id, sorted(ids)],
        ).fetchall()
    )
    streamed = conn.execute(
        "SELECT count(DISTINCT activity_id) FROM activity_mmp WHERE athlete_id = ?", [athlete_id]
    ).fetchall()[0][0]
    return {
        "season": season,
        "hard_season": hard_season,
        "stream_curve": curve.with_columns(
            pl.col("activity_id").replace_strict(names, default="", return_dtype=pl.String).alias("activity")
        ),
        "w_summary": w_summary,
        "hard": hard_row,
        "w_seconds": w_seconds,
        "stream_best": stream_best,
        "critical_speed": view("critical_speed"),
        "activity_names": names,
        "streamed": int(streamed),
        "streams_waiting": len(streams.waiting(conn, athlete_id, None, looking=True)),
    }


def _name_and_unit(conn: Any, athlete_id: int) -> tuple[str, str]:
    """The name the report is headed with and the distance unit of the athlete's preference (miles for "feet")."""
    found = conn.execute(
        "SELECT firstname, lastname, measurement_preference FROM athletes WHERE athlete_id = ?", [athlete_id]
    ).fetchall()
    first, last, preference = found[0] if found else (None, None, None)
    name = " ".join(p for p in (first, last) if p) or f"Athlete {athlete_id}"
    return name, "mi" if preference == "feet" else "km"


def _main_family(activity_load: pl.DataFrame, as_of: dt.date) -> str:
    """The sport family the distance figures follow: the most moving time in the last 365 days, then all time (no
    "Other"); "All" when there is none."""
    family_time = (
        activity_load.filter(pl.col("sport_family") != "Other")
        .group_by("sport_family")
        .agg(pl.col("moving_time").sum().alias("t"), pl.col("local_date").max().alias("last"))
    )
    recent_families = family_time.join(
        activity_load.filter(pl.col("local_date") > as_of - dt.timedelta(days=365))
        .group_by("sport_family")
        .agg(pl.col("moving_time").sum().alias("recent")),
        on="sport_family",
        how="left",
    )
    if not recent_families.height:
        return "All"
    ordered = recent_families.sort(["recent", "t", "sport_family"], descending=[True, True, False], nulls_last=True)
    return cast(str, ordered["sport_family"].first())


def _zone_frames(conn: Any, view: Callable[[str], pl.DataFrame], week0: dt.date) -> dict[str, Any]:
    """The zone charts' frames: ZONE_WEEKS of zone time of the type drawn (heart rate when there is any), power's
    apart for a chart of its own, and the rolling polarization index of each."""
    zone_weeks = view("zone_time_weekly").filter(pl.col("week_start") > week0 - dt.timedelta(weeks=ZONE_WEEKS))
    present = set(zone_weeks["zone_type"].to_list())
    zone_type = "heartrate" if "heartrate" in present or not present else sorted(present)[0]
    seiler_all = view("seiler_weekly")
    seiler = seiler_all.filter(pl.col("zone_type") == zone_type)
    first_zone_week = week0 - dt.timedelta(weeks=ZONE_WEEKS - 1)
    return {
        "zone_type": zone_type,
        "zones": zone_weeks.filter(pl.col("zone_type") == zone_type),
        "power_zones": zone_weeks.filter(pl.col("zone_type") == "power") if zone_type != "power" else None,
        "pi": _rolling_pi(conn, seiler, first_zone_week, week0),
        "power_pi": _rolling_pi(conn, seiler_all.filter(pl.col("zone_type") == "power"), first_zone_week, week0),
        "first_zone_week": first_zone_week,
        "seiler": seiler,
        "pi_threshold": conn.execute(
            "SELECT value FROM analysis_settings WHERE name = 'pi_polarized_above'"
        ).fetchall()[0][0],
    }


def _segment_frames(view: Callable[[str], pl.DataFrame]) -> dict[str, Any]:
    """The segments' efforts, PR events and summary, and the TOP_SEGMENTS with the most attempts (drawn)."""
    summary = view("segment_pr_summary")
    top = (
        summary.filter(pl.col("attempts") > 0)
        .sort(["attempts", "segment_id"], descending=[True, False])
        .head(TOP_SEGMENTS)
    )
    return {
        "progression": view("segment_effort_progression"),
        "events": view("segment_pr_events"),
        "segment_summary": summary,
        "top_segments": top["segment_id"].to_list(),
    }


def _loads_by_source(activity_load: pl.DataFrame, first_day: dt.date) -> pl.DataFrame:
    """Each day's load per load source from first_day (the fitness chart's first day): its stacked daily bars; a
    power or heart-rate load that is not measured (activity_load.measured) a source of its own."""
    unmeasured = pl.col("load_source").is_in(["power", "heart_rate"]) & ~pl.col("measured").fill_null(False)
    return (
        activity_load.filter(pl.col("local_date") >= first_day)
        .with_columns(
            pl.when(unmeasured)
            .then(pl.col("load_source") + pl.lit(" unmeasured"))
            .otherwise(pl.col("load_source"))
            .alias("load_source")
        )
        .group_by(pl.col("local_date").alias("date"), "load_source")
        .agg(pl.col("load").sum())
        .sort("date", "load_source")
    )


def _rolling_pi(conn: Any, seiler: pl.DataFrame, first_week: dt.date, last_week: dt.date) -> pl.DataFrame:
    """Per week: the polarization index of the last PI_WEEKS weeks of zone time (NULL under PI_MIN_HOURS; the
    warehouse's polarization_index macro), and its kind: measured, or zero (no zone-3 time: 0 by definition)."""
    start = first_week - dt.timedelta(weeks=PI_WEEKS - 1)
    weeks = pl.DataFrame({"week_start": pl.date_range(start, last_week, "1w", eager=True)})
    z = [pl.col(c).rolling_sum(window_size=PI_WEEKS, min_samples=1) for c in ("z1", "z2", "z3")]
    dense = (
        weeks.join(
            seiler.select(
                "week_start",
                pl.col("z1_seconds").alias("z1"),
                pl.col("z2_seconds").alias("z2"),
                pl.col("z3_seconds").alias("z3"),
            ),
            on="week_start",
            how="left",
        )
        .with_columns(pl.col("z1", "z2", "z3").fill_null(0).cast(pl.Float64))
        .sort("week_start")
        .with_columns(z[0].alias("r1"), z[1].alias("r2"), z[2].alias("r3"))
    )
    enough = (pl.col("r1") + pl.col("r2") + pl.col("r3")) >= PI_MIN_HOURS * 3600
    index = conn.sql("SELECT polarization_index(r1, r2, r3) AS pi FROM dense").pl()["pi"]
    return (
        dense.with_columns(pl.when(enough).then(index).alias("polarization_index"))
        .with_columns(
            pl.when(pl.col("polarization_index").is_null())
            .then(None)
            .when(pl.col("r3") == 0)
            .then(pl.lit("zero"))
            .otherwise(pl.lit("measured"))
            .alias("kind")
        )
        .filter(pl.col("week_start") >= first_week)
        .select("week_start", "polarization_index", "kind")
    )


def _tracks(conn: Any, athlete_id: int) -> pl.DataFrame:
    """Every route of the athlete as points (activity_id, season, seq, lat, lon), from the summary polylines of the
    activities the analyses count (activity_calendar: a second recording draws no second line)."""
    rows = conn.execute(
        "SELECT a.activity_id, season_of(c.local_date, (SELECT CAST(value AS INTEGER) FROM analysis_settings "
        "WHERE name = 'season_start_month')), a.summary_polyline "
        "FROM activities a JOIN activity_calendar c ON c.activity_id = a.activity_id "
        "WHERE a.athlete_id = ? AND coalesce(a.summary_polyline, '') <> ''",
        [athlete_id],
    ).fetchall()
    ids, seasons, seqs, lats, lons = [], [], [], [], []
    for activity_id, season, encoded in rows:
        try:
            points = polyline_codec.decode(encoded)
        except (ValueError, IndexError, TypeError):
            continue  # a damaged polyline draws nothing rather than a wrong line
        for seq, (lat, lon) in enumerate(points):
            ids.append(activity_id)
            seasons.append(season)
            seqs.append(seq)
            lats.append(lat)
            lons.append(lon)
    return pl.DataFrame(
        {"activity_id": ids, "season": seasons, "seq": seqs, "lat": lats, "lon": lons},
        schema={"activity_id": pl.Int64, "season": pl.Int32, "seq": pl.Int32, "lat": pl.Float64, "lon": pl.Float64},
    )


# name → (heading, chart, caption), in the report's order; a chart of None is a section of text only (its caption
# says why there is no chart, or stands over a table)
Figures = dict[str, tuple[str, Any | None, str]]


def _figures(d: dict[str, Any]) -> Figures:
    """Every chart of the report with its heading and caption; power zones only when the athlete has some."""
    figures = {
        **_training_figures(d),
        **_record_figures(d),
        **_performance_figures(d),
        **_stream_figures(d),
        **_calendar_and_route_figures(d),
    }
    if d["power_zones"] is not None and d["power_zones"].height:
        figures["power_zones"] = (
            "Weekly time in power zones",
            _weekly_zones_chart(d, d["power_zones"], d["power_pi"], "power"),
            "Each ride's time in its own power zones, summed per week.",
        )
    return figures


def _training_figures(d: dict[str, Any]) -> Figures:
    """What the training was: load and form, weekly time by sport, weekly time in zones."""
    return {
        "pmc": (
            "Fitness, fatigue and form",
            charts.pmc(d["pmc"], d["bands"], d["loads"], _pmc_title_suffix(d["pmc"])),
            "Daily training load on the TSS scale (an hour at threshold = 100), each activity from its best source: "
            "power, heart rate, running pace, the relative effort score, else an estimate from its duration and "
            "sport (the summary says how much was measured); CTL and ATL by the exponential recurrence; form "
            "bands after intervals.icu.",
        ),
        "weekly_volume": (
            "Weekly volume by sport",
            charts.weekly_volume(
                d["volume"],
                d["week0"] - dt.timedelta(weeks=VOLUME_WEEKS - 1),
                d["week0"],
                f" — last {VOLUME_WEEKS} weeks",
            ),
            "Moving time per ISO week, by the activities' local dates.",
        ),
        "weekly_zones": (
            "Weekly time in zones",
            _weekly_zones_chart(d, d["zones"], d["pi"], d["zone_type"]),
            "Each activity's time in its own zones (as its zones were then), summed per week; the "
            f"polarization index uses Seiler's three zones mapped from them, over {PI_WEEKS} weeks.",
        ),
    }


def _pmc_title_suffix(pmc: pl.DataFrame) -> str:
    """The fitness chart's span: the last PMC_DAYS days, or since the first day with a load when that is later."""
    if pmc.height >= PMC_DAYS:
        return f" — last {PMC_DAYS} days"
    return f" — since {cast(dt.date, pmc['date'].min()):%d %b %Y}" if pmc.height else ""


def _weekly_zones_chart(d: dict[str, Any], zones: pl.DataFrame, pi: pl.DataFrame, zone_type: str) -> Any:
    """The weekly zones chart over the report's ZONE_WEEKS (the main zone type's and power's share it)."""
    return charts.weekly_zones(
        zones,
        pi,
        zone_type,
        d["pi_threshold"],
        d["first_zone_week"],
        d["week0"],
        f" — last {ZONE_WEEKS} weeks",
        PI_MIN_HOURS,
    )


def _record_figures(d: dict[str, Any]) -> Figures:
    """Records and distance: segment PRs, and the main family's Eddington number and year to date."""
    family, unit = d["main_family"], d["unit"]
    edd = d["eddington"].filter((pl.col("sport_family") == family) & (pl.col("unit") == unit))
    number = int(edd["eddington"][0]) if edd.height else 0
    to_next = int(edd["days_to_next"][0]) if edd.height else 1
    curve = d["curve"].filter((pl.col("sport_family") == family) & (pl.col("unit") == unit))
    ytd = d["ytd"].filter(pl.col("sport_family") == family)
    return {
        "segment_history": (
            "Segment history",
            charts.segment_history(d["progression"], d["events"], d["top_segments"]),
            "The segments with the most attempts. PRs are recomputed from the efforts in time "
            "order: an effort faster than every earlier one.",
        ),
        "eddington": (
            "Eddington number",
            charts.eddington(curve, number, to_next, family, unit),
            "The largest E such that on E days the distance reached E.",
        ),
        "ytd": (
            "Year to date",
            charts.ytd(ytd, family, unit, UNITS[unit], d["as_of"]),
            "Cumulative distance from 1 January, per year, to compare seasons at the same date.",
        ),
    }


def _performance_figures(d: dict[str, Any]) -> Figures:
    """How load changes and what the athlete can do: load risk, the power-duration curve, running best efforts."""
    fits = d["cp"].filter(pl.col("season") == 0)
    cp_all = fits.row(0, named=True) if fits.height else None
    pmc_first = d["pmc"]["date"].min() if d["pmc"].height else d["as_of"]
    return {
        "load_risk": (
            "Load risk",
            charts.load_risk(d["risk"], pmc_first, d["as_of"]),
            "Acute:chronic workload ratio, rolling (7-day mean ÷ 28-day mean) and exponentially weighted, "
            "and Foster's training monotony, from the daily load above.",
        ),
        "power_curve": (
            "Power-duration curve",
            charts.power_curve(d["power_curve"], cp_all, d["season"]),
            "Mean-maximal power from segment efforts, laps and rides with device power (a ride's power stream "
            "instead where it is stored), and the critical "
            "power model fitted on the power-duration envelope between 2 and 20 minutes (drawn only when "
            "it passes its physiological gates).",
        ),
        "best_efforts": (
            "Running best efforts",
            charts.best_efforts(d["best_efforts"], d["season"]),
            "The fastest 1, 5, 10, 21 and 42 km within runs, from whole kilometre splits.",
        ),
    }


def _stream_figures(d: dict[str, Any]) -> Figures:
    """From the per-second streams: the power curve this season, last season and all time; the W′ balance of the latest
    hard session; the exact best efforts of runs (a table). Each says in one line why it is empty, when it is."""
    return {
        "stream_power_curve": _stream_power_curve_figure(d),
        "w_prime_balance": _w_prime_figure(d),
        "stream_best_efforts": (
            "Best efforts of runs, from the streams",
            None,
            _stream_best_caption(d) if d["stream_best"].height else _no_streams(d, "run"),
        ),
    }


def _no_streams(d: dict[str, Any], kind: str) -> str:
    """Why a streams section is empty, in one line, and what fills it: no streams at all (streams off, or not fetched
    yet), or none of the stored ones a `kind` ("ride with power", "run")."""
    waiting = d["streams_waiting"]
    if not d["streamed"]:
        have = f" ({charts.counted(waiting, 'recording')} without them)" if waiting else ""
        return f"No streams stored yet{have}: {TURN_ON}."
    what = "a ride with a power meter" if kind == "ride with power" else "a run"
    more = (
        f" Without streams yet: {charts.counted(waiting, 'more recording')}; `fitsync sync` fetches them "
        '(`streams = "all"` in config.toml reaches past the last `streams_days` days).'
        if waiting
        else ""
    )
    stored = (
        "the only recording with streams stored is not"
        if d["streamed"] == 1
        else f"none of the {d['streamed']} recordings with streams stored is"
    )
    return f"No {kind} streams: {stored} {what}.{more}"


def _curve_labels(d: dict[str, Any]) -> dict[str, str]:
    season = d["season"]
    return {
        "this season": f"this season ({season})",
        "last season": f"last season ({season - 1})",
        "all time": "all time",
    }


def _curve_marks(curve: pl.DataFrame, period: str) -> str:
    """ "5 s 900 W · 1 min 520 W · …": a period's best power at CURVE_MARKS ("" when it has none)."""
    rows = {r["duration_s"]: r["best_watts"] for r in curve.filter(pl.col("period") == period).iter_rows(named=True)}
    return " · ".join(f"{charts._duration_text(t)} {rows[t]:.0f} W" for t in CURVE_MARKS if t in rows)


def _same_curve(curve: pl.DataFrame, period: str, other: str) -> bool:
    """Whether two periods' stream power curves are the same at every duration (all of all time's bests this
    season's)."""
    one, two = (
        curve.filter(pl.col("period") == p).select("duration_s", "best_watts").sort("duration_s")
        for p in (period, other)
    )
    return one.height > 0 and one.equals(two)


def _stream_power_curve_figure(d: dict[str, Any]) -> tuple[str, Any | None, str]:
    heading = "Power curve from the streams"
    curve = d["stream_curve"]
    if not curve.height:
        return heading, None, _no_streams(d, "ride with power")
    labels = _curve_labels(d)
    rides = charts.counted(
        int(cast(int, curve.filter(pl.col("period") == "all time")["activities"].max() or 0)), "ride"
    )
    missing = [labels[p] for p in CURVE_PERIODS if p not in set(curve["period"].to_list())]
    if _same_curve(curve, "this season", "all time"):  # one line, named for both: a band under it said nothing
        curve = curve.filter(pl.col("period") != "all time")
        labels["this season"] += ", also all time"
    present = [p for p in CURVE_PERIODS if p in set(curve["period"].to_list())]
    subtitle = [
        f"From the per-second power of {rides} with streams stored: rides "
        "without are in the power-duration curve only.",
        *(f"{labels[p]}: {_curve_marks(curve, p)}" for p in present if _curve_marks(curve, p)),
    ]
    caption = (
        "Mean-maximal power: the best average power over every duration from 1 second to 5 hours within one ride, "
        f"from the per-second power of {rides} with streams stored (a "
        "pause counts as 0 W). "
        + (
            "The grey band is the all-time best; where a season's line runs along it, that season set the record."
            if "all time" in present
            else "Every all-time best is this season's."
        )
        + (f" No line for {' or '.join(missing)}: no ride with a power stream then." if missing else "")
    )
    return heading, charts.stream_power_curve(curve, labels, subtitle), caption


def _w_prime_figure(d: dict[str, Any]) -> tuple[str, Any | None, str]:
    heading = "W′ balance of the latest hard session"
    hard, summary = d["hard"], d["w_summary"]
    share = f"{HARD_SHARE:.0%}"
    if d["stream_curve"].is_empty():
        return heading, None, _no_streams(d, "ride with power")
    if hard is None:
        if summary.is_empty():
            cp = d["cp"].filter(pl.col("season") == 0)
            why = cp["cp_note"][0] if cp.height else "no power efforts"
            return heading, None, f"No W′ balance: it needs a critical power fit, and there is none ({why})."
        most = summary.sort(["w_prime_used", "local_date"], descending=True).row(0, named=True)
        return (
            heading,
            None,
            f"No hard session: no ride with streams took W′ below {share} (the most used: "
            f"{most['w_prime_used']:.0%} on {most['local_date']}, {charts.counted(summary.height, 'ride')} with power "
            "streams).",
        )
    name = d["activity_names"].get(hard["activity_id"]) or f"activity {hard['activity_id']}"
    fit = f"the {d['hard_season']} fit" if hard["cp_source"] == "season" else "the all-time fit"
    cp, w = float(hard["cp_watts"]), float(hard["w_prime_j"])
    caption = (
        f"{name} on {hard['local_date']}: the latest ride whose W′ balance fell below {share} of W′. Skiba's integral "
        f"model on CP {cp:.0f} W and W′ {w / 1000:.1f} kJ ({fit}, from the critical power of the power curve), "
        f"τ {hard['tau_s']:.0f} s; every second above CP spends W′, every second below lets it come back."
    )
    title = f"W′ balance — {name}, {hard['local_date']}"
    subtitle = [
        f"CP {cp:.0f} W, W′ {w / 1000:.1f} kJ ({fit}); lowest {hard['min_w_prime_balance_j'] / 1000:.1f} kJ: "
        f"{hard['w_prime_used']:.0%} of W′ used, at {charts._mmss(int(hard['min_at_s'] - int(cast(int, d['w_seconds']['second'].min()))))}."
    ]
    if hard["min_w_prime_balance_j"] < 0:  # more than all of W′: the model, not the rider, fell short
        below = (
            f"Below 0: this ride spent more than the fit's W′ of {w / 1000:.1f} kJ, which no rider can: for this ride "
            "the fit's W′ is too small or its CP too high."
        )
        subtitle.append(below)
        caption += " " + below
    return heading, charts.w_prime_balance(d["w_seconds"], cp, w, title, subtitle), caption


def _stream_best_caption(d: dict[str, Any]) -> str:
    runs = d["stream_best"].filter(pl.col("season") == 0)["runs"].max()
    cs = d["critical_speed"].filter(pl.col("season") == 0)
    speed = (
        f" Critical speed (all time, 3-20 min of the pace-duration curve of the runs with streams stored only): "
        f"{charts._mmss(int(round(cs['cs_pace_s_per_km'][0])))} per km, D′ {cs['d_prime_m'][0]:.0f} m."
        if cs.height and cs["cs_m_s"][0] is not None
        else ""
    )
    return (
        "The shortest time in which one run covered each distance, from its distance stream (interpolated between "
        f"samples; elapsed time, a stop inside counts), over {charts.counted(int(cast(int, runs or 0)), 'run')} with "
        f"streams stored.{_faster_in_splits(d)}{speed}"
    )


def _faster_in_splits(d: dict[str, Any]) -> str:
    """The distances whole-kilometre splits (Running best efforts, every run) cover at a faster pace than any run with
    streams: named, so that the table is not read as the athlete's all-time best when most runs have no streams.
    Paces, not times: five splits of at least 950 m each may fall short of 5 km."""
    streams = {
        r["distance_m"]: r["pace_s_per_km"]
        for r in d["stream_best"].filter(pl.col("season") == 0).iter_rows(named=True)
    }
    faster = [
        f"{r['splits']} km at {charts._mmss(int(round(r['pace_s_per_km'])))} /km ({r['local_date']})"
        for r in d["best_efforts"].filter(pl.col("season") == 0).sort("splits").iter_rows(named=True)
        if (mine := streams.get(r["splits"] * 1000)) is not None and r["pace_s_per_km"] < mine - 1
    ]
    return (
        f" Faster in the whole-kilometre splits of all runs (Running best efforts): {', '.join(faster)}."
        if faster
        else ""
    )


def _calendar_and_route_figures(d: dict[str, Any]) -> Figures:
    """When and where: the year's training calendar, every route, this season's routes."""
    season = d["season"]
    return {
        "calendar": (
            "Training calendar",
            charts.calendar(d["daily"], d["as_of"]),
            "Every day of the last year, coloured by its training load.",
        ),
        "routes": (
            "Where you train",
            charts.routes(d["tracks"], "Routes, all time"),
            "Every route from its summary polyline; roads used often build up dark.",
        ),
        "routes_season": (
            "Where you train this season",
            charts.routes(d["tracks"].filter(pl.col("season") == season), f"Routes, {season}"),
            f"The routes of {season}.",
        ),
    }


# --- the summary --------------------------------------------------------------------------------------------


def _facts(d: dict[str, Any]) -> dict[str, Any]:
    as_of, unit, family = d["as_of"], d["unit"], d["main_family"]
    today = d["pmc_all"].tail(1).row(0, named=True) if d["pmc_all"].height else None
    if today is not None:  # CTL starts from 0 on the first day: until it has had its time constant, form reads low
        days = d["pmc_all"].height
        today["building"] = f"still building: {days} days of history" if days < (d["ctl_days"] or 0) else None
    six_weeks = d["activity_load"].filter(pl.col("local_date") > as_of - dt.timedelta(days=42))
    total_s = six_weeks["duration_s"].sum() or 0
    loaded_s = six_weeks.filter(pl.col("load").is_not_null())["duration_s"].sum() or 0
    later = LATER_FTP
    measured_s = six_weeks.filter(pl.col("measured"))["duration_s"].sum() or 0
    ytd = d["ytd"].filter(pl.col("sport_family") == family)
    this_year = ytd.filter(pl.col("date") == as_of)
    try:
        same_day_last_year = as_of.replace(year=as_of.year - 1)
    except ValueError:  # 29 February
        same_day_last_year = as_of.replace(year=as_of.year - 1, day=28)
    last_year = ytd.filter(pl.col("date") == same_day_last_year)
    edd = {r["unit"]: r for r in d["eddington"].filter(pl.col("sport_family") == family).iter_rows(named=True)}
    recent_pi = d["seiler"].filter(pl.col("week_start") > as_of - dt.timedelta(weeks=4))
    z = [int(recent_pi[c].sum()) for c in ("z1_seconds", "z2_seconds", "z3_seconds")]
    unmapped = int(recent_pi["unmapped_seconds"].sum())
    # the 4 weeks to as_of are the rolling PI's last week (week0 and the PI_WEEKS - 1 before it)
    pi = d["pi"].filter(pl.col("week_start") == d["week0"])["polarization_index"].first() if sum(z) else None
    # power's own index beside heart rate's, when the chart of power zones has one (the summary gave only the first)
    power_pi = (
        d["power_pi"].filter(pl.col("week_start") == d["week0"])["polarization_index"].first()
        if d["zone_type"] != "power" and d["power_pi"].height
        else None
    )
    return {
        "today": today,
        "coverage": loaded_s / total_s if total_s else None,
        "six_weeks": six_weeks,
        "measured": measured_s / total_s if total_s else None,
        "later_ftp": (six_weeks.filter(later.fill_null(False))["duration_s"].sum() or 0) / total_s if total_s else None,
        # the rest of the time not measured, by why: every share of it said beside the measured one
        "unmeasured": {
            why: (six_weeks.filter(rule.fill_null(False))["duration_s"].sum() or 0) / total_s
            for why, rule in UNMEASURED.items()
        }
        if total_s
        else {},
        "this_year": this_year["distance_m"][0] / UNITS[unit] if this_year.height else 0.0,
        "last_year": last_year["distance_m"][0] / UNITS[unit] if last_year.height else None,
        "this_year_hours": (
            d["ytd"].filter((pl.col("sport_family") == "All") & (pl.col("date") == as_of))["moving_time_s"].sum() or 0
        )
        / 3600,
        "eddington": edd,
        "pi": pi,
        "power_pi": power_pi,
        "pi_zones": z,
        "no_pi": (
            "no zone time in the last 4 weeks: the service sends an activity's zones to subscribers only, and only "
            "for activities with heart rate or power"
            if sum(z) + unmapped == 0
            else f"{unmapped / 3600:.1f} h of zone time in zones that map to no Seiler zone: only 5 heart-rate and 7 power "
            "zones have a default mapping; rows of analysis_seiler_zones map others"
            if sum(z) < PI_MIN_HOURS * 3600 <= sum(z) + unmapped
            else f"under {PI_MIN_HOURS:g} h of zone time, or more zone-3 than zone-1 time"
        ),
        "recent_prs": d["events"]
        .filter(~pl.col("is_first_attempt"))
        .sort(["local_date", "effort_id"], descending=True)
        .head(5),
    }


def _fmt_time(seconds: int | None) -> str:
    return "—" if seconds is None else charts._mmss(int(seconds))


def _faster(pr: dict[str, Any]) -> str:
    """How much a PR beat the best before it: "0:21 faster (7.0 %)"."""
    return f"{_fmt_time(pr['improvement_s'])} faster ({pr['improvement_pct']:.1f} %)"


def _summary_markdown(d: dict[str, Any]) -> str:
    f = _facts(d)
    unit, family, as_of = d["unit"], d["main_family"], d["as_of"]
    row = d["as_of_row"]
    lines = [
        f"### {d['name']} ({d['athlete_id']}) — as of {as_of.isoformat()}, {AS_OF_DATE}",
        "",
        f"- **Activities**: {d['calendar'].height} from {row['first_activity_date']} to "
        f"{row['last_activity_date']}; {d['recent'].height} in the last 365 days",
    ]
    if f["today"]:
        t = f["today"]
        lines.append(
            f"- **Form**: CTL {t['ctl']:.1f} · ATL {t['atl']:.1f} · TSB (yesterday's CTL − ATL) {t['tsb']:+.1f} "
            f"({t['form_band'] or 'no band'}) · ramp {t['ramp_rate']:+.1f} per week"
            + (
                f" · {t['building']} (fitness starts from 0 on the first day and needs about {d['ctl_days']:g} days: "
                "until then form reads lower than it is)"
                if t["building"]
                else ""
            )
        )
    sources = f["six_weeks"]["load_source"].value_counts().sort("load_source")
    counts = ", ".join(f"{s} {n}" for s, n in sources.iter_rows())
    lines.append(
        "- **Load coverage, last 42 days**: "
        + (
            f"{f['coverage']:.0%} of the time has a load, {f['measured']:.0%} measured"
            + (f", {f['later_ftp']:.0%} from power on an FTP known only later" if f["later_ftp"] else "")
            + "".join(f", {share:.0%} {why}" for why, share in f["unmeasured"].items() if share)
            + f" (by time; activities: {counts})"
            if f["coverage"] is not None
            else "no moving time"
        )
    )
    compare = f" (last year by this date: {f['last_year']:,.0f} {unit})" if f["last_year"] is not None else ""
    lines.append(
        f"- **This year**: {f['this_year']:,.0f} {unit} of {family}{compare}; {f['this_year_hours']:,.0f} h all sports"
    )
    if f["eddington"]:
        parts = [
            f"{r['eddington']} {u} ({charts.counted(r['days_to_next'], 'more day')} for {r['eddington'] + 1})"
            for u, r in sorted(f["eddington"].items())
        ]
        lines.append(f"- **Eddington ({family})**: " + ", ".join(parts))
    kind = charts.ZONE_TYPE_LABELS.get(d["zone_type"], d["zone_type"])
    said = (
        f"PI {f['pi']:.2f} ({_polarized(f['pi'], d['pi_threshold'])})"
        if f["pi"] is not None
        else f"no index ({f['no_pi']})"
    )
    if f["power_pi"] is not None:
        said += f"; power: PI {f['power_pi']:.2f} ({_polarized(f['power_pi'], d['pi_threshold'])})"
    lines.append(f"- **Polarization, last 4 weeks ({kind})**: {said}")
    lines += _estimates(d, f)
    if f["recent_prs"].height:
        lines += ["", "| date | segment | time | faster than the best before |", "|---|---|---|---|"]
        for r in f["recent_prs"].iter_rows(named=True):
            lines.append(f"| {r['local_date']} | {r['segment_name']} | {_fmt_time(r['elapsed_time'])} | {_faster(r)} |")
    return "\n".join(lines) + "\n"


def _seen(row: dict[str, Any]) -> str:
    first, last = row["first_seen"], row["last_seen"]
    return f"on {first}" if first == last else f"from {first} to {last}"


def _polarized(index: float, threshold: float) -> str:
    return "polarized" if index > threshold else "not polarized"


def _estimates(d: dict[str, Any], f: dict[str, Any]) -> list[str]:
    """What rests on estimates or defaults rather than measurement, said next to the figures it affects."""
    every = d["activity_load"]
    out = ["", "**What rests on estimates**", ""]
    six = f["six_weeks"]
    estimated = six.filter(pl.col("load_source") == "estimate")
    if estimated.height:
        out.append(
            f"- Load, last 42 days: {estimated.height} of {six.height} activities estimated from duration and "
            "sport (no power, pace, heart-rate load or relative effort; a heart-rate load needs 5-zone buckets or an "
            "LTHR: `fitsync thresholds set --from DATE --lthr BPM`)"
        )
    elif six.height:
        out.append(f"- Load, last 42 days: none of {six.height} activities estimated from duration and sport")
    hr = every.filter(pl.col("load_source") == "heart_rate")
    if hr.height:
        basis = hr["hr_load_basis"].value_counts().sort("hr_load_basis")
        counts = {r["hr_load_basis"]: r["count"] for r in basis.iter_rows(named=True)}
        calibration = hr["hr_calibration"].drop_nulls()
        parts = []
        if counts.get("zones_calibrated"):
            parts.append(
                f"{charts.counted(counts['zones_calibrated'], 'activity')} from heart-rate zones calibrated to your "
                f"power (× {calibration[0]:.2f})"
            )
        if counts.get("zones"):
            parts.append(
                f"{charts.counted(counts['zones'], 'activity')} from heart-rate zones at default loads per zone (too "
                "few rides with "
                "power and heart rate to calibrate)"
            )
        if counts.get("average_hr"):
            parts.append(
                f"{charts.counted(counts['average_hr'], 'activity')} from average heart rate only (no zone data: the "
                "roughest)"
            )
        out.append(f"- Heart-rate load, all time: {'; '.join(parts)}")
        partial = hr.filter(~pl.col("measured") & pl.col("hr_coverage").is_not_null())
        for shorter, what in _UNMATCHED_BUCKETS.items():
            group = partial.filter((pl.col("hr_coverage") < 1) == shorter)
            if n := group.height:
                low, high = group["hr_coverage"].min(), group["hr_coverage"].max()
                out.append(
                    f"- Heart-rate load of {charts.counted(n, 'activity')} from zone buckets covering "
                    f"{low:.0%}" + (f" to {high:.0%}" if high != low else "") + f" of {'its' if n == 1 else 'their'} "
                    f"duration ({what}): not counted as measured"
                )
        later = hr.filter((pl.col("hr_load_basis") == "average_hr") & (pl.col("lthr_source") == "known_later"))
        if n := later.height:
            out.append(
                f"- Heart-rate load of {charts.counted(n, 'activity')} on an LTHR known only later (before "
                "the first heart-rate zones fitsync saw): not counted as measured (`fitsync thresholds set --from DATE "
                "--lthr BPM` sets one)"
            )
    if twice := d["duplicates"].height:
        out.append(
            f"- {twice} {'activity is a second recording' if twice == 1 else 'activities are second recordings'} of a "
            "session another device recorded too (same sport, overlapping): left out, each session counted once "
            "(`duplicate_activities`)"
        )
    if ahead := d["future"].height:
        latest = d["future"]["start_date"].max()
        out.append(
            f"- {ahead} {'activity is' if ahead == 1 else 'activities are'} dated after fitsync received "
            f"{'it' if ahead == 1 else 'them'} (a device clock ahead; the latest {latest:%Y-%m-%d}): left out until "
            "the date is corrected on the service (`future_activities`)"
        )
    for r in d["ftp_unused"].iter_rows(named=True):
        out.append(
            f"- The profile's FTP of {r['ftp']:g} W (seen {_seen(r)}) is outside {r['ftp_min_w']:g}–"
            f"{r['ftp_max_w']:g} W: not used for power loads (`fitsync thresholds set --from DATE --ftp W` sets one)"
        )
    later = every.filter(LATER_FTP)
    if later.height:
        out.append(
            f"- Power load on an FTP known only later: {later.height} activities before the first FTP fitsync "
            "saw (`fitsync thresholds set --from DATE --ftp W` sets the FTP of those seasons)"
        )
    cp = d["cp"]
    if cp.height:
        seasons = []
        for r in cp.sort("season", descending=True).iter_rows(named=True):
            name = "all time" if r["season"] == 0 else str(r["season"])
            seasons.append(
                f"{name} {r['cp_watts']:.0f} W / {r['w_prime_j'] / 1000:.1f} kJ"
                if r["cp_watts"] is not None
                else f"{name} none ({r['cp_note']})"
            )
        out.append(
            "- Critical power by season (from power streams where stored, else segment efforts, laps and rides): "
            + "; ".join(seasons)
        )
    return out


# --- the page -----------------------------------------------------------------------------------------------


def _card(label: str, value: str, note: str = "") -> str:
    return (
        f'    <div class="card"><div class="label">{html.escape(label)}</div>'
        f'<div class="value">{html.escape(value)}</div><div class="note">{html.escape(note)}</div></div>'
    )


def _html(d: dict[str, Any], figures: Figures, pngs: dict[str, bytes]) -> str:
    """The report page: the headline cards, each chart with its caption, the PR tables, from the page template."""
    f = _facts(d)
    sections = [
        _chart_section(name, heading, caption, pngs[name])
        if name in pngs
        else _text_section(name, heading, caption, _stream_best_tables(d) if name == "stream_best_efforts" else "")
        for name, (heading, _, caption) in figures.items()
    ]
    sections.append(_pr_tables(d, f))
    template = Template(resources.files(__package__).joinpath("report_template.html").read_text(encoding="utf-8"))
    return template.substitute(
        title=html.escape(f"fitsync report — {d['name']}"),
        heading=html.escape(d["name"]),
        subheading=html.escape(
            f"Training report as of {d['as_of'].isoformat()} · athlete {d['athlete_id']} · "
            f"dates are the athlete's local dates"
        ),
        cards="\n".join(_cards(d, f)),
        sections="\n".join(sections),
        footer=html.escape(
            f"Made by fitsync from the local warehouse on {dt.date.today().isoformat()}. "
            "Every number here is also a SQL view in the warehouse (see docs/analysis.md)."
        ),
    )


def _cards(d: dict[str, Any], f: dict[str, Any]) -> list[str]:
    """The headline figures at the top of the page: activities, today's form, the year, Eddington, coverage, PI."""
    unit, family = d["unit"], d["main_family"]
    cards = [_card("Activities", f"{d['calendar'].height}", f"{d['recent'].height} in the last 365 days")]
    if f["today"]:
        t = f["today"]
        cards += [
            _card("Fitness (CTL)", f"{t['ctl']:.1f}", f"ramp {t['ramp_rate']:+.1f} per week"),
            _card("Fatigue (ATL)", f"{t['atl']:.1f}", "7-day load"),
            _card(
                "Form (TSB)",
                f"{t['tsb']:+.1f}",
                "; ".join(x for x in (t["building"] or t["form_band"], "yesterday's fitness − fatigue") if x),
            ),
        ]
    cards.append(
        _card(
            f"{d['as_of'].year} {family}",
            f"{f['this_year']:,.0f} {unit}",
            f"last year by now: {f['last_year']:,.0f} {unit}" if f["last_year"] is not None else "",
        )
    )
    if unit in f["eddington"]:
        r = f["eddington"][unit]
        cards.append(
            _card(
                f"Eddington ({family})",
                f"{r['eddington']} {unit}",
                f"{charts.counted(r['days_to_next'], 'more day')} for {r['eddington'] + 1}",
            )
        )
    cards.append(
        _card(
            "Measured load (42 d)",
            f"{f['measured']:.0%}" if f["measured"] is not None else "—",
            "share of moving time whose load was measured (power, pace, heart rate, relative effort), not estimated"
            if f["coverage"] is None or f["coverage"] == f["measured"]
            else f"measured, of moving time; {f['coverage']:.0%} has a load, estimates included",
        )
    )
    kind = charts.ZONE_TYPE_LABELS.get(d["zone_type"], d["zone_type"])
    cards.append(
        _card(
            f"Polarization (4 wk, {kind})",
            f"{f['pi']:.2f}" if f["pi"] is not None else "—",
            (f"above {d['pi_threshold']:g} is polarized" if f["pi"] is not None else f"no PI: {f['no_pi']}")
            + (f"; power {f['power_pi']:.2f}" if f["power_pi"] is not None else ""),
        )
    )
    return cards


def _chart_section(name: str, heading: str, caption: str, png: bytes) -> str:
    """One chart's section of the page: the PNG inline at its size on the page (CHART_SCALE smaller), its caption."""
    data = base64.b64encode(png).decode("ascii")
    width, height = (v // CHART_SCALE for v in struct.unpack(">II", png[16:24]))  # the PNG header
    return (
        f'  <section id="{name}">\n'
        f'    <figure><img alt="{html.escape(heading)}" width="{width}" height="{height}" '
        f'src="data:image/png;base64,{data}"></figure>\n'
        f'    <p class="caption">{html.escape(caption)}</p>\n'
        f"  </section>"
    )


def _text_section(name: str, heading: str, caption: str, body: str = "") -> str:
    """A section without a chart: its heading, one line (why it is empty, or what the table below holds), the table."""
    return (
        f'  <section id="{name}">\n    <h2>{html.escape(heading)}</h2>\n'
        f'    <p class="caption">{html.escape(caption)}</p>\n' + (f"    {body}\n" if body else "") + "  </section>"
    )


# Exact best efforts shorter than this show tenths of a second: a 400 m in 1:50.4 is 4:36 /km, where "1:50" beside
# its pace read as 4:35.
TENTHS_UNDER_M = 5000


def _effort_time(seconds: float, distance_m: float) -> str:
    if distance_m >= TENTHS_UNDER_M:
        return charts._mmss(int(round(seconds)))
    tenths = int(round(seconds * 10))
    return f"{charts._mmss(tenths // 10)}.{tenths % 10}"


def _best_rows(d: dict[str, Any], season: int) -> list[dict[str, str]]:
    """One season's (0: all time) exact best efforts as the table shows them: distance, time, pace per km, date,
    activity."""
    rows = []
    for r in d["stream_best"].filter(pl.col("season") == season).sort("distance_m").iter_rows(named=True):
        rows.append(
            {
                "distance": r["label"],
                "time": _effort_time(r["best_time_s"], r["distance_m"]),
                "pace": f"{charts._mmss(int(round(r['pace_s_per_km'])))} /km",
                "date": str(r["local_date"]),
                "activity": d["activity_names"].get(r["activity_id"]) or f"activity {r['activity_id']}",
            }
        )
    return rows


BEST_COLUMNS = ("distance", "time", "pace", "date", "activity")


def _best_periods(d: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The best-effort tables' titles and seasons (0: all time): of the runs with streams only, as the titles say."""
    return (("All time, runs with streams", 0), (f"This season ({d['season']}), runs with streams", d["season"]))


def _stream_best_tables(d: dict[str, Any]) -> str:
    """All-time and this season's exact best efforts side by side (a season without runs says so)."""
    if d["stream_best"].is_empty():
        return ""
    parts = []
    for title, season in _best_periods(d):
        rows = _best_rows(d, season)
        head = "".join(f"<th>{c}</th>" for c in BEST_COLUMNS)
        body = "".join(
            "<tr>"
            + "".join(
                f"<td class=num>{html.escape(r[c])}</td>" if c in ("time", "pace") else f"<td>{html.escape(r[c])}</td>"
                for c in BEST_COLUMNS
            )
            + "</tr>"
            for r in rows
        )
        table = f"<table><tr>{head}</tr>{body}</table>" if rows else '<p class="caption">No run with streams yet.</p>'
        parts.append(f"<div><h3>{html.escape(title)}</h3>{table}</div>")
    return f'<div class="grid2">{"".join(parts)}</div>'


def _markdown_section(d: dict[str, Any], name: str, figure: tuple[str, Any | None, str]) -> str:
    """summary.md's line for a figure: the chart's image, or a text section's heading and line (and table)."""
    heading, chart, caption = figure
    if chart is not None:
        return f"![{heading}]({name}.png)"
    lines = ["", f"**{heading}**: {caption}"]
    if name == "stream_best_efforts" and d["stream_best"].height:
        for title, season in _best_periods(d):
            rows = _best_rows(d, season)
            lines += ["", f"{title}:", ""]
            if not rows:
                lines.append("No run with streams yet.")
                continue
            lines += ["| " + " | ".join(BEST_COLUMNS) + " |", "|" + "---|" * len(BEST_COLUMNS)]
            lines += ["| " + " | ".join(r[c].replace("|", "/") for c in BEST_COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _pr_tables(d: dict[str, Any], f: dict[str, Any]) -> str:
    rows = []
    for r in f["recent_prs"].iter_rows(named=True):
        rows.append(
            f"<tr><td>{r['local_date']}</td><td>{html.escape(r['segment_name'] or '')}</td>"
            f"<td class=num>{_fmt_time(r['elapsed_time'])}</td>"
            f"<td class=num>{_faster(r)}</td></tr>"
        )
    recent = (
        (
            "<table><tr><th>date</th><th>segment</th><th>time</th><th>faster than the best before</th></tr>"
            + "".join(rows)
            + "</table>"
        )
        if rows
        else "<p class=caption>No PRs yet.</p>"
    )
    seg_rows = []
    for r in d["segment_summary"].sort(["attempts", "segment_id"], descending=[True, False]).iter_rows(named=True):
        left_out = r["hidden_efforts"] + r["untimed_efforts"] + r["other_course_efforts"]
        seg_rows.append(
            f"<tr><td>{html.escape(r['segment_name'] or str(r['segment_id']))}</td>"
            f"<td class=num>{r['attempts']}</td><td class=num>{_fmt_time(r['current_pr_s'])}</td>"
            f"<td>{r['current_pr_date'] or '—'}</td><td class=num>{r['improvements']}</td>"
            f"<td class=num>{'—' if r['days_since_pr'] is None else r['days_since_pr']}</td>"
            f'<td class=num title="{html.escape(r["exclusion_note"])}">{left_out or ""}</td></tr>'
        )
    segments_table = (
        (
            "<table><tr><th>segment</th><th>attempts</th><th>PR</th><th>PR date</th><th>PRs</th>"
            '<th>days since</th><th title="efforts hidden or without a time">left out</th></tr>'
            + "".join(seg_rows)
            + "</table>"
        )
        if seg_rows
        else ""
    )
    return (
        '  <section id="prs">\n    <h2>Personal records</h2>\n'
        '    <p class="caption">The latest PRs (improvements on a segment already done) and every segment.</p>\n'
        f'    <div class="grid2"><div>{recent}</div><div>{segments_table}</div></div>\n  </section>'
    )
