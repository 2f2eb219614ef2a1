"""The report renders: an HTML page that opens offline (every chart embedded, no external URL), a PNG per chart
with something drawn on it, a Markdown summary with the athlete's numbers; and `fitsync report` writes it."""

from __future__ import annotations

import base64
import datetime as dt
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from PIL import Image, ImageChops

from fitsync.cli.report import report as report_command
from fitsync.warehouse import report

from .conftest import World

CHARTS = [
    "pmc",
    "weekly_volume",
    "weekly_zones",
    "segment_history",
    "eddington",
    "ytd",
    "load_risk",
    "power_curve",
    "best_efforts",
    "calendar",
    "routes",
    "routes_season",
]
# athlete 2 has none of these: a message
NO_DATA_FOR_2 = {"weekly_zones", "load_risk", "power_curve", "best_efforts", "routes", "routes_season"}
EXTERNAL = re.compile(r"(https?:)?//[\w.-]+\.[a-z]{2,}|\b(src|href)\s*=\s*[\"'](?!data:|#)", re.IGNORECASE)


def assert_self_contained(html_path: Path, pngs: list[Path]) -> None:
    page = html_path.read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert not EXTERNAL.search(page), EXTERNAL.search(page)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert [base64.b64decode(e) for e in embedded] == [p.read_bytes() for p in pngs]


def assert_drawn(png: Path, *, min_ink: float) -> None:
    """A drawn chart, not a blank image: big enough, enough pixels not (near) white, more than a few colours."""
    with Image.open(png) as image:
        assert image.format == "PNG" and image.width >= 600 and image.height >= 200, (png.name, image.size)
        rgb = image.convert("RGB")
    darkest = ImageChops.darker(ImageChops.darker(*rgb.split()[:2]), rgb.split()[2])  # each pixel's darkest channel
    inked = sum(darkest.histogram()[:235]) / (rgb.width * rgb.height)
    assert inked > min_ink, (png.name, inked)
    assert len(rgb.getcolors(maxcolors=rgb.width * rgb.height) or []) > 3, png.name


def test_report_renders_for_an_athlete_with_segments(world: World, tmp_path: Path) -> None:
    result = report.build_report(world.path, tmp_path / "r2", athlete_id=2)
    assert result.html_path == tmp_path / "r2" / "report.html" and result.html_path.stat().st_size > 50_000
    assert [p.name for p in result.png_paths] == [f"{c}.png" for c in CHARTS]
    assert_self_contained(result.html_path, result.png_paths)
    for png in result.png_paths:
        # charts without data for this athlete say so (text only), the others draw data
        assert_drawn(png, min_ink=0.001 if png.stem in NO_DATA_FOR_2 else 0.02)
    summary = result.summary_markdown
    assert summary.startswith("### Test Athlete (2) — as of 2024-06-20")
    assert "| 2024-06-15 | Test Hill | 4:30 | 0:10 faster (3.6 %) |" in summary
    markdown = result.markdown_path.read_text(encoding="utf-8")
    assert result.markdown_path == tmp_path / "r2" / "summary.md" and markdown.startswith(summary)
    assert all(f"]({c}.png)" in markdown for c in CHARTS)  # the Markdown shows the charts beside it
    page = result.html_path.read_text(encoding="utf-8")
    assert "Test Hill" in page and "No heart-rate or power zone data" not in page  # the message is in the image


def test_counts_are_said_in_the_right_number() -> None:
    from fitsync.warehouse.report_charts import counted

    assert [counted(n, "more day") for n in (0, 1, 2)] == ["0 more days", "1 more day", "2 more days"]


def test_report_in_the_athletes_units_and_with_zones(world: World, tmp_path: Path) -> None:
    result = report.build_report(world.path, tmp_path / "r6", athlete_id=6)  # prefers feet: miles
    assert "**Eddington (Ride)**: 4 km (2 more days for 5), 3 mi (2 more days for 4)" in result.summary_markdown
    assert "mi of Ride" in result.summary_markdown
    assert_self_contained(result.html_path, result.png_paths)
    zones = report.build_report(world.path, tmp_path / "r5", athlete_id=5)
    assert_drawn(zones.html_path.parent / "weekly_zones.png", min_ink=0.02)
    assert "heart-rate" in zones.summary_markdown


def test_report_refuses_what_it_cannot_build(world: World, tmp_path: Path) -> None:
    with pytest.raises(report.ReportError, match="several athletes"):
        report.build_report(world.path, tmp_path / "x")
    with pytest.raises(report.ReportError, match="athlete 99 has no activities"):
        report.build_report(world.path, tmp_path / "x", athlete_id=99)
    with pytest.raises(report.ReportError, match="no warehouse"):
        report.build_report(tmp_path / "missing.duckdb", tmp_path / "x")


def test_cli_writes_the_report_under_the_home(world: World, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "warehouse.duckdb").write_bytes(world.path.read_bytes())
    runner = CliRunner()
    result = runner.invoke(report_command, ["--athlete", "4"], env={"FITSYNC_HOME": str(home)})
    assert result.exit_code == 0, result.output
    assert (home / "reports" / "4" / "report.html").exists()
    assert all((home / "reports" / "4" / f"{c}.png").stat().st_size > 10_000 for c in CHARTS)
    lines = result.stdout.splitlines()  # what it wrote; what it was doing went to stderr
    assert "athlete 4: building the report" in result.stderr
    # the last activity (after the last sync), said to be local: west of UTC it is a day behind the reader's date
    assert lines[0] == "Test Athlete (4) — as of 2024-06-21, the athlete's local date"
    assert lines[1].split() == ["report", str(home / "reports" / "4" / "report.html")]
    assert lines[2].split() == ["summary", str(home / "reports" / "4" / "summary.md")]
    assert lines[3].startswith(f"  charts   {len(CHARTS)} PNGs in ") and "pmc.png" in lines[3]
    assert "|" not in result.output and "**" not in result.output  # paths, not raw Markdown
    out = tmp_path / "elsewhere"
    assert (
        runner.invoke(report_command, ["--athlete", "4", "--out", str(out)], env={"FITSYNC_HOME": str(home)}).exit_code
        == 0
    )
    assert (out / "4" / "report.html").exists()
    missing = runner.invoke(report_command, [], env={"FITSYNC_HOME": str(tmp_path / "nowhere")})
    assert missing.exit_code == 1 and "no warehouse" in missing.output


def _rows(spec: dict, *keys: str) -> list[dict]:
    """The rows of every inline dataset of a chart spec that carry all `keys`."""
    return [row for rows in spec.get("datasets", {}).values() for row in rows if all(k in row for k in keys)]


def test_charts_draw_only_what_was_measured(world: World) -> None:
    """Power dots are real efforts at their real length; pace runs faster-up; zones carry their bounds; the
    acute:chronic chart has no "safe" band. Read from the charts' Vega-Lite, not drawn (`report.charts_of`)."""
    from fitsync.warehouse.report_charts import _mmss

    power = report.charts_of(world.path, athlete_id=12)["power_curve"].to_dict()
    dots = _rows(power, "duration_s", "lasted", "source")  # the dots (their labels sit beside them)
    assert dots and all(_mmss(int(r["duration_s"])) == r["lasted"] for r in dots)
    assert 5 not in {r["duration_s"] for r in dots}  # no effort of 5 s: the 30 s effort is not drawn there
    runs = report.charts_of(world.path, athlete_id=13)["best_efforts"].to_dict()
    scales = [layer["encoding"]["y"]["scale"]["domain"] for layer in runs["layer"] if "y" in layer["encoding"]]
    assert scales and all(top > bottom for top, bottom in scales)  # the slower pace at the bottom
    zones = report.charts_of(world.path, athlete_id=5)
    hours = zones["weekly_zones"].to_dict()["vconcat"][0]
    legend = hours["encoding"]["color"]["scale"]["domain"]
    assert legend[0].startswith("Z1 < ") and legend[-1].startswith("Z5 ≥ ") and all("bpm" in z for z in legend)
    # the legend gives the latest bounds; athlete 5's earlier weeks had others (shifted zones, four zones at the end)
    assert "bounds since 03 Feb 2025 (earlier weeks had others)" in hours["title"]["subtitle"]
    from fitsync.warehouse.report_charts import bounds_since

    weeks = [dt.date(2025, 1, 6), dt.date(2025, 1, 13), dt.date(2025, 1, 20)]
    steady = pl.DataFrame({"week_start": weeks, "zone": [1] * 3, "zone_min": [0] * 3, "zone_max": [130] * 3})
    assert bounds_since(steady) is None
    assert bounds_since(steady.with_columns(zone_max=pl.Series([125, 130, 130]))) == weeks[1]
    assert bounds_since(steady.with_columns(zone_max=pl.Series([130, 125, 130]))) == weeks[2]
    risk = report.charts_of(world.path, athlete_id=11)["load_risk"].to_dict()
    assert not _rows(risk, "y0", "y1") and "safe" not in str(risk)


def test_a_ratio_on_a_day_or_two_says_why_in_the_plot() -> None:
    """A ratio on 1 day of 365 drew two dots at the year's edge of an empty panel (a coach's trial): under
    FEW_RATIO_DAYS the panel says why, with the most common reason the subtitle gives too."""
    from fitsync.warehouse import report_charts as charts

    days = [dt.date(2025, 1, 1) + dt.timedelta(days=i) for i in range(30)]
    risk = pl.DataFrame(
        {
            "date": days,
            "acwr_rolling": [None] * 29 + [1.1],
            "acwr_ewma": [None] * 29 + [1.2],
            "acwr_note": ["too few sessions: 2 in 28 days, 8 needed"] * 28
            + ["too few sessions: 7 in 28 days, 8 needed", "ok"],
            "monotony": [0.5] * 30,
        }
    )
    spec = str(charts.load_risk(risk, days[0], days[-1]).to_dict())
    assert "A ratio on 1 day only; on most others: too few sessions: 2 in 28 days, 8 needed." in spec
    assert "Shown on 1 of 30 days; on most others: too few sessions: 2 in 28 days, 8 needed." in spec


def test_close_power_efforts_are_labelled_where_no_label_overlaps_another() -> None:
    """Efforts of 1:27:40, 1:30:00 and 2:00:00 (and 2:57 beside 3:10) wrote over each other: every label's box (in
    the chart's pixels) now overlaps no other label and no dot, stays in the plot, and sits on its period's side of
    its dot where that side is free."""
    from fitsync.warehouse import chart_labels as cl
    from fitsync.warehouse import report_charts as charts

    durations = [5, 60, 177, 190, 300, 1200, 5260, 5400, 7200]
    watts = [700, 420, 330, 325, 300, 250, 205, 204, 190]
    curve = pl.DataFrame(
        {
            "season": [0] * len(durations) + [2026] * 2,
            "effort_duration_s": durations + [5300, 7000],
            "best_watts": [float(w) for w in watts] + [203.0, 185.0],
            "source": ["stream"] * (len(durations) + 2),
            "local_date": [dt.date(2026, 5, 1)] * (len(durations) + 2),
        }
    )
    spec = charts.power_curve(curve, None, 2026).to_dict()
    assert "unlabelled" not in str(spec["title"])
    x_domain, y_domain = (
        next(layer["encoding"][axis]["scale"]["domain"] for layer in spec["layer"] if axis in layer["encoding"])
        for axis in ("x", "y")
    )
    plot = cl.Plot(charts.WIDTH, charts.POWER_CURVE_HEIGHT, tuple(x_domain), tuple(y_domain), x_log=True)
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    placed = [row for layer in texts for row in spec["datasets"][layer["data"]["name"]]]
    assert sorted(r["lasted"] for r in placed) == sorted(
        ["0:05", "1:00", "2:57", "3:10", "5:00", "20:00", "1:27:40", "1:30:00", "2:00:00", "1:28:20", "1:56:40"]
    )  # fmt: skip
    boxes = []
    for r in placed:
        cx, cy = plot.pixels(r["duration_s"], r["best_watts"])
        w, h = cl.text_width(r["lasted"], 10) + 2, 11
        boxes.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    assert all(0 <= b[0] and b[2] <= plot.width + 0.01 and 0 <= b[1] and b[3] <= plot.height + 0.01 for b in boxes)
    overlapping = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if cl._overlap(a, b)]
    assert overlapping == []
    dots = [
        plot.pixels(float(d), float(w)) for d, w in zip(curve["effort_duration_s"], curve["best_watts"], strict=True)
    ]
    assert not any(cl._overlap(b, cl._around(dot, 4.2)) for b in boxes for dot in dots)
    five_s = next(r for r in placed if r["lasted"] == "0:05")
    assert five_s["best_watts"] > 700 and five_s["duration_s"] == pytest.approx(5)  # all time's: straight above
    # six efforts within a few pixels: those without room are left unlabelled, and the subtitle counts them
    crowded = curve.vstack(
        pl.DataFrame(
            {
                "season": [2026] * 4,
                "effort_duration_s": [5320, 5340, 5360, 5380],
                "best_watts": [202.9, 202.8, 202.7, 202.6],
                "source": ["stream"] * 4,
                "local_date": [dt.date(2026, 5, 1)] * 4,
            }
        )
    )
    spec = charts.power_curve(crowded, None, 2026).to_dict()
    drawn = sum(len(spec["datasets"][t["data"]["name"]]) for t in spec["layer"] if t["mark"]["type"] == "text")
    assert f"{15 - drawn} dots left unlabelled: no room beside them." in str(spec["title"]) and drawn < 15


def test_the_power_curve_s_dates_are_wall_clock_days() -> None:
    """A bare date in a chart's data is read by Vega as UTC midnight: the tooltip showed the day before west of UTC.
    The power curve's efforts carry their day as a local wall-clock time, as every other chart's dates."""
    from fitsync.warehouse.report_charts import _power_efforts

    curve = pl.DataFrame(
        {
            "season": [0, 2025],
            "effort_duration_s": [300, 300],
            "best_watts": [300.0, 300.0],
            "source": ["effort", "effort"],
            "local_date": [dt.date(2025, 6, 1)] * 2,
        }
    )
    efforts, periods = _power_efforts(curve, 2025)
    assert periods == ["all time", "2025"] and efforts["local_date"].to_list() == ["2025-06-01T00:00:00"] * 2


def test_routes_of_this_season_follow_the_season_start(tmp_path: Path) -> None:
    """ "Where you train this season" drew the calendar year: with seasons from November, March's route (last season)
    was in it. Each route carries its season; a second recording of a session draws no second line."""
    import duckdb

    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-12-05 12:00:00+00")
    march = b.activity(9, "2025-03-10 08:00:00", distance=20000)
    november = b.activity(9, "2025-11-10 08:00:00", distance=20000)
    again = b.activity(9, "2025-11-10 08:00:30", distance=20000, moving_time=3500)
    b.close()
    with duckdb.connect(str(path)) as conn:
        conn.execute("UPDATE activities SET summary_polyline = '_p~iF~ps|U_ulLnnqC'")
        conn.execute("UPDATE analysis_settings SET value = 11 WHERE name = 'season_start_month'")
    with db.reading(path) as conn:
        tracks = report._tracks(conn, 9)
    seasons = dict(tracks.group_by("activity_id").agg(pl.col("season").first()).iter_rows())
    assert seasons == {march: 2024, november: 2025} and again not in seasons


def test_the_headline_card_counts_measured_load_not_estimates(tmp_path: Path) -> None:
    """Ten rides without power, heart rate or relative effort: the page's card read "Load coverage 100 %", estimates
    counted as coverage. The card shows the measured share, and says how much has a load at all."""
    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-30 12:00:00+00")
    for day in range(10):
        b.activity(9, f"2025-06-{day + 10:02d} 08:00:00", distance=30000)
    b.close()
    with db.reading(path) as conn:
        gathered = report._gather(conn, 9)
    cards = "\n".join(report._cards(gathered, report._facts(gathered)))
    assert 'Measured load (42 d)</div><div class="value">0%</div>' in cards
    assert "100% has a load, estimates included" in cards and "Load coverage" not in cards


def test_form_in_the_first_weeks_says_it_is_still_building(tmp_path: Path) -> None:
    """A steady 60 a day for three weeks read TSB -34, "high risk", without a word: fitness starts from 0 on the first
    day in the warehouse. Until the history is as long as ctl_days the card and the summary say it is still
    building."""
    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-21 20:00:00+00")
    for day in range(21):
        b.activity(9, (dt.date(2025, 6, 1) + dt.timedelta(days=day)).isoformat() + " 08:00:00", suffer=60)
    b.close()
    with db.reading(path) as conn:
        gathered = report._gather(conn, 9)
    facts = report._facts(gathered)
    cards = "\n".join(report._cards(gathered, facts))
    assert 'Form (TSB)</div><div class="value">-3' in cards and "still building: 21 days of history" in cards
    assert "high risk" not in cards
    assert "still building: 21 days of history (fitness starts from 0" in report._summary_markdown(gathered)


def test_no_polarization_index_says_when_the_zones_map_to_no_seiler_zone(tmp_path: Path) -> None:
    """Seven heart-rate zones, 12 h in four weeks: no index, and the page said "under 3 h of zone time, or more zone-3
    than zone-1" — both false. It says the zones map to no Seiler zone, and where a mapping is added."""
    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-28 20:00:00+00")
    for day in range(12):
        ride = b.activity(9, (dt.date(2025, 6, 1) + dt.timedelta(days=2 * day)).isoformat() + " 08:00:00", hr=130)
        b.buckets(ride, [1800, 1200, 300, 200, 100, 0, 0], bounds=[(i * 20 + 80, i * 20 + 100) for i in range(7)])
    b.close()
    with db.reading(path) as conn:
        gathered = report._gather(conn, 9)
    facts = report._facts(gathered)
    assert facts["pi"] is None
    assert facts["no_pi"].startswith(
        "11.0 h of zone time in zones that map to no Seiler zone"
    )  # 11 rides in 4 weeks, facts["no_pi"]
    assert "no PI: 11.0 h of zone time in zones" in "\n".join(report._cards(gathered, facts))


def test_no_polarization_index_says_when_there_is_no_zone_time_at_all(tmp_path: Path) -> None:
    """An athlete whose activities' zones the service never sent (not a subscriber) read "under 3 h of zone time,
    or more zone-3 than zone-1 time" (a coach's trial); the form card's TSB, not today's CTL − ATL, said nothing of
    being yesterday's."""
    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-28 20:00:00+00")
    for day in range(12):
        b.activity(9, (dt.date(2025, 6, 1) + dt.timedelta(days=2 * day)).isoformat() + " 08:00:00", hr=130)
    b.close()
    with db.reading(path) as conn:
        gathered = report._gather(conn, 9)
    facts = report._facts(gathered)
    assert facts["no_pi"].startswith("no zone time in the last 4 weeks: the service sends an activity's zones")
    cards = "\n".join(report._cards(gathered, facts))
    assert "no PI: no zone time in the last 4 weeks" in cards and "yesterday&#x27;s fitness − fatigue" in cards


def test_the_load_coverage_line_says_why_each_share_was_not_measured(tmp_path: Path) -> None:
    """ "0 % measured, 64 % from power on an FTP known only later" left the other 36 % unexplained (a coach's
    trial): every unmeasured share is said."""
    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, ftp=250, synced_at="2025-06-28 20:00:00+00")  # the FTP first seen after the ride
    b.activity(9, "2025-06-20 08:00:00", distance=30000, moving_time=3600, device_watts=True, np=200)
    b.activity(9, "2025-06-21 08:00:00", sport="Yoga", moving_time=1800)
    b.close()
    with db.reading(path) as conn:
        gathered = report._gather(conn, 9)
    said = report._summary_markdown(gathered)
    assert "100% of the time has a load, 0% measured" in said, said
    assert "67% from power on an FTP known only later, 33% estimated from duration and sport" in said, said


def test_a_season_best_tying_the_all_time_best_is_drawn_once_with_both_dates() -> None:
    """A 2026 5 km in 28:39 tying the 2025 one: two dots on one spot, the 2026 one on top labelled with neither, the
    2025 date under a dot of 2026's colour (a coach's read). Now one dot, all time's, with both dates."""
    from fitsync.warehouse.report_charts import _best_effort_points

    best = pl.DataFrame(
        {
            "season": [0, 0, 2026, 2026],
            "splits": [5, 10, 5, 10],
            "label": ["5 km", "10 km", "5 km", "10 km"],
            "best_time_s": [1719, 3500, 1719, 3600],
            "pace_s_per_km": [343.8, 350.0, 343.8, 360.0],
            "activity_id": [1, 2, 3, 4],
            "local_date": [dt.date(2025, 10, 31), dt.date(2025, 5, 1), dt.date(2026, 10, 22), dt.date(2026, 6, 1)],
        }
    )
    points = _best_effort_points(best, 2026)
    five = points.filter(pl.col("splits") == 5)
    assert five["period"].to_list() == ["all time"]
    assert five["text"].item() == "5:44/km\n28:39 · 2025-10-31 and 2026-10-22"
    ten = points.filter(pl.col("splits") == 10).sort("season")
    assert ten["period"].to_list() == ["all time", "2026"] and " and " not in "".join(ten["text"])


def test_daily_load_shows_power_on_a_later_ftp_apart_from_measured_power() -> None:
    """The fitness chart drew power TSS on an FTP known only later (65 % of a rider's load) as measured power."""
    loads = pl.DataFrame(
        {
            "local_date": [dt.date(2026, 1, 1)] * 4,
            "load_source": ["power", "power", "heart_rate", "estimate"],
            "measured": [True, False, False, False],
            "load": [50.0, 60.0, 30.0, 20.0],
        }
    )
    by_source = dict(report._loads_by_source(loads, dt.date(2026, 1, 1)).select("load_source", "load").iter_rows())
    assert by_source == {"power": 50.0, "power unmeasured": 60.0, "heart_rate unmeasured": 30.0, "estimate": 20.0}
    from fitsync.warehouse.report_charts import LOAD_SOURCES

    assert set(by_source) <= set(LOAD_SOURCES)


def test_a_polarization_index_below_zero_is_drawn_on_its_axis() -> None:
    """Zone 3 a sliver beside zone 2 gives an index below 0 (log10 of under 1: 50/49.5/0.5 % is −0.3): the panel's
    axis began at 0, and those weeks' points were drawn under it, over the dates."""
    from fitsync.warehouse import report_charts as charts

    weeks = [dt.date(2026, 6, 1) + dt.timedelta(weeks=i) for i in range(4)]
    zones = pl.DataFrame(
        {
            "week_start": [w for w in weeks for _ in range(3)],
            "zone": [1, 2, 3] * 4,
            "seconds": [3600.0, 3600.0, 36.0] * 4,
            "zone_min": [0, 120, 150] * 4,
            "zone_max": [120, 150, -1] * 4,
        }
    )
    pi = pl.DataFrame({"week_start": weeks, "polarization_index": [-0.3, -0.31, 0.4, 1.2], "kind": ["measured"] * 4})
    spec = charts.weekly_zones(zones, pi, "heartrate", 2.0, weeks[0], weeks[-1]).to_dict()
    domains = [
        layer["encoding"]["y"]["scale"]["domain"] for layer in spec["vconcat"][1]["layer"] if "y" in layer["encoding"]
    ]
    assert domains and all(low <= -0.31 and high >= 3 for low, high in domains), domains


def test_the_summary_gives_the_power_polarization_index_beside_heart_rates(tmp_path: Path) -> None:
    """The report draws a chart of power zones with its own index below, and the summary and card gave heart rate's
    only (a chart review): both give power's too, where it has one."""
    from fitsync.warehouse import db

    from .builder import Builder

    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-28 20:00:00+00")
    for day in range(12):
        ride = b.activity(9, (dt.date(2025, 6, 1) + dt.timedelta(days=2 * day)).isoformat() + " 08:00:00", hr=130)
        b.buckets(ride, [1800, 1200, 300, 200, 100])
        b.buckets(ride, [2400, 600, 300, 100, 100, 50, 50], "power")
    b.close()
    with db.reading(path) as conn:
        gathered = report._gather(conn, 9)
    facts = report._facts(gathered)
    assert facts["pi"] is not None and facts["power_pi"] is not None and facts["power_pi"] != facts["pi"]
    line = next(s for s in report._summary_markdown(gathered).splitlines() if "Polarization" in s)
    assert line.endswith(f"PI {facts['pi']:.2f} (not polarized); power: PI {facts['power_pi']:.2f} (not polarized)")
    assert f"above 2 is polarized; power {facts['power_pi']:.2f}" in "\n".join(report._cards(gathered, facts))


def test_power_dots_from_a_stream_are_filled_and_an_efforts_average_open() -> None:
    """The steps and dots looked the same whether exact (a stream's mean-maximal power) or a floor (an effort's
    average: the best over its length may be higher), said only in the subtitle (a chart review)."""
    from fitsync.warehouse import report_charts as charts

    curve = pl.DataFrame(
        {
            "season": [0, 0, 0],
            "effort_duration_s": [60, 1200, 5400],
            "best_watts": [400.0, 280.0, 220.0],
            "source": ["stream", "segment_effort", "activity"],
            "local_date": [dt.date(2026, 5, 1)] * 3,
        }
    )
    spec = charts.power_curve(curve, None, 2026).to_dict()
    dots = {
        (layer["mark"]["type"], layer["mark"].get("filled", True)): sorted(
            r["duration_s"] for r in spec["datasets"][layer["data"]["name"]]
        )
        for layer in spec["layer"]
        if layer["mark"]["type"] in ("circle", "point")
    }
    assert dots == {("circle", True): [60], ("point", False): [1200, 5400]}, dots
    assert "filled: exact, from a power stream; open: an effort's, lap's or ride's average" in str(spec["title"])
