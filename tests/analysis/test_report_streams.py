"""The report's streams sections (issue 34, item 5): the power curve this season, last season and all time, the W′
balance of the latest hard session, the exact best efforts of runs; on the stream warehouse of
test_streams_analysis (streams written by `streams.write`), and the one line each says without streams."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from fitsync.warehouse import db, report

from .conftest import World
from .test_report import assert_drawn, assert_self_contained
from .test_streams_analysis import Streamed, build

STREAM_SECTIONS = ("stream_power_curve", "w_prime_balance", "stream_best_efforts")


@pytest.fixture(scope="module")
def streamed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Streamed]:
    yield build(tmp_path_factory.mktemp("report-streams") / "warehouse.duckdb")


def gathered(path: Path, athlete_id: int) -> tuple[dict[str, Any], report.Figures]:
    """The report's frames and figures for an athlete, without rendering a chart."""
    with db.reading(path) as conn:
        d = report._gather(conn, athlete_id)
    return d, report._figures(d)


def _rows(spec: dict, *keys: str) -> list[dict]:
    return [row for rows in spec.get("datasets", {}).values() for row in rows if all(k in row for k in keys)]


def test_a_riders_power_curve_and_w_prime_balance(streamed: Streamed, tmp_path: Path) -> None:
    """Athlete 2: one ride with streams (60 s at 150 W, 60 s at 450 W, 120 s at 150 W) on a fit of CP 250 W and W′
    20 kJ; no runs."""
    result = report.build_report(streamed.path, tmp_path / "r2", athlete_id=2)
    names = [p.stem for p in result.png_paths]
    assert names.index("best_efforts") + 1 == names.index("stream_power_curve")  # after the other performance charts
    assert names[names.index("stream_power_curve") + 1] == "w_prime_balance"
    assert_self_contained(result.html_path, result.png_paths)
    assert_drawn(tmp_path / "r2" / "stream_power_curve.png", min_ink=0.02)  # one line: no band beneath
    assert_drawn(tmp_path / "r2" / "w_prime_balance.png", min_ink=0.05)

    curve = result.figures["stream_power_curve"].to_dict()
    points = {(r["label"], r["duration_s"]): r for r in _rows(curve, "label", "duration_s", "best_watts")}
    # one ride: all time is this season's curve, drawn once and named for both (no ride in 2023: no line)
    assert {label for label, _ in points} == {"this season (2024), also all time"}
    season = "this season (2024), also all time"
    assert points[season, 60]["best_watts"] == 450  # the 60 s at 450 W
    assert points[season, 5]["activity"] == "a" and points[season, 5]["local_date"].startswith("2024-05-01")
    assert "From the per-second power of 1 ride with streams stored" in str(curve["title"]["subtitle"])
    x = curve["layer"][0]["encoding"]["x"]
    assert x["scale"]["type"] == "log" and x["axis"]["values"][:4] == [1, 5, 15, 60]

    # Skiba's integral by hand: the lowest balance is at the last second above CP (119)
    tau = 546 * math.exp(-0.01 * (250 - 150)) + 316
    lowest = 20000 - sum(200 * math.exp(-(119 - u) / tau) for u in range(60, 120))
    page = result.html_path.read_text(encoding="utf-8")
    w = result.figures["w_prime_balance"].to_dict()
    assert f"lowest {lowest / 1000:.1f} kJ" in str(w["vconcat"][0]["title"]) and "at 1:59" in str(w)
    assert "CP 250 W and W′ 20.0 kJ (the 2024 fit" in page and "below 50% of W′" in page
    marked = [r for r in _rows(w, "minutes", "kj") if str(r.get("t", "")).startswith("lowest")]
    assert (
        marked and marked[0]["minutes"] == pytest.approx(119 / 60) and marked[0]["kj"] == pytest.approx(lowest / 1000)
    )
    assert "No run streams: the only recording with streams stored is not a run." in page


def test_a_runners_best_efforts_all_time_and_this_season(streamed: Streamed) -> None:
    """Athlete 3 (as of 2026-03-01): 5 m/s in 2025; 5 m/s for 180 s then 4 m/s in 2026; 2 m/s in 2023; no rides."""
    d, figures = gathered(streamed.path, 3)
    assert figures["stream_best_efforts"][1] is None  # a table, not a chart
    all_time = {r["distance"]: r for r in report._best_rows(d, 0)}
    season = {r["distance"]: r for r in report._best_rows(d, 2026)}
    # 5 km at 5 m/s: 1000 s; this season at 5 m/s for 900 m then 4 m/s: 180 + 4100 / 4 = 1205 s
    assert all_time["5 km"] == {
        "distance": "5 km", "time": "16:40", "pace": "3:20 /km", "date": "2025-04-01", "activity": "a",
    }  # fmt: skip
    assert (season["5 km"]["time"], season["5 km"]["pace"], season["5 km"]["date"]) == (
        "20:05",
        "4:01 /km",
        "2026-02-01",
    )
    # 80 s; 180 + 100 / 4 s: tenths under 5 km, so that the time and its pace agree
    assert (season["400 m"]["time"], season["1 km"]["time"]) == ("1:20.0", "3:25.0")
    assert report._effort_time(110.4, 400) == "1:50.4" and report._effort_time(110.96, 400) == "1:51.0"
    assert report._effort_time(1204.6, 5000) == "20:05"
    assert "10 km" not in all_time  # no run that long
    tables = report._stream_best_tables(d)
    assert "<h3>All time, runs with streams</h3>" in tables and "16:40" in tables
    assert "<h3>This season (2026), runs with streams</h3>" in tables
    assert "over 4 runs with streams stored" in figures["stream_best_efforts"][2]  # one with a GPS jump
    assert "whole-kilometre splits" not in figures["stream_best_efforts"][2]  # no run without streams is faster
    # a run without streams, faster over 5 km in its splits (not over 1 km): named beside the table
    splits = pl.DataFrame(
        {
            "season": [0, 0],
            "splits": [1, 5],
            "distance_m": [1000.0, 5000.0],
            "pace_s_per_km": [250.0, 180.0],
            "local_date": [dt.date(2024, 9, 1)] * 2,
        }
    )
    caption = report._stream_best_caption({**d, "best_efforts": splits})
    faster = "Faster in the whole-kilometre splits of all runs (Running best efforts): 5 km at 3:00 /km (2024-09-01)."
    assert faster in caption
    for name in ("stream_power_curve", "w_prime_balance"):
        heading, chart, line = figures[name]
        assert chart is None
        assert (
            line
            == "No ride with power streams: none of the 4 recordings with streams stored is a ride with a power meter."
        )
    markdown = report._markdown_section(d, "stream_best_efforts", figures["stream_best_efforts"])
    assert "| 5 km | 16:40 | 3:20 /km | 2025-04-01 | a |" in markdown and "All time, runs with streams:" in markdown


def test_a_season_line_per_period_and_why_no_w_prime(streamed: Streamed) -> None:
    """Athlete 1 (as of 2025-06-30): rides in 2025 and one in 2024; its streams' efforts give no CP fit."""
    d, figures = gathered(streamed.path, 1)
    assert set(d["stream_curve"]["period"].to_list()) == {"this season", "last season", "all time"}
    subtitle = figures["stream_power_curve"][1].to_dict()["title"]["subtitle"]
    assert subtitle == [
        "From the per-second power of 5 rides with streams stored: rides without are in the power-duration curve only.",
        "this season (2025), also all time: 5 s 320 W · 1 min 300 W · 5 min 300 W · 20 min 250 W",
        "last season (2024): 5 s 150 W · 1 min 150 W · 5 min 150 W",
    ]  # every all-time best is this season's: one line for both
    heading, chart, line = figures["w_prime_balance"]
    assert chart is None and line.startswith("No W′ balance: it needs a critical power fit, and there is none (")


def test_without_streams_each_section_says_why_and_what_turns_them_on(world: World, tmp_path: Path) -> None:
    d, figures = gathered(world.path, 12)  # rides with device power, no streams stored
    for name in STREAM_SECTIONS:
        heading, chart, line = figures[name]
        assert chart is None, name
        assert line.startswith("No streams stored yet (1 recording without them): "), line
        assert '`streams = "recent"`' in line and "`fitsync sync`" in line and '`streams = "off"`' in line
    png = bytes(16) + struct.pack(">II", 2, 2)  # all the page reads of a PNG: its size
    page = report._html(d, figures, {n: png for n, f in figures.items() if f[1] is not None})
    for name in STREAM_SECTIONS:  # a heading and the line, no image
        section = page.split(f'<section id="{name}">')[1].split("</section>")[0]
        assert "<h2>" in section and "No streams stored yet" in section and "<img" not in section


def test_all_time_gets_a_band_of_its_own_only_where_it_differs_from_this_season() -> None:
    curve = pl.DataFrame(
        {
            "period": ["this season", "this season", "all time", "all time"],
            "duration_s": [5, 60, 5, 60],
            "best_watts": [320.0, 300.0, 320.0, 310.0],
        }
    )
    assert not report._same_curve(curve, "this season", "all time")  # a minute at 310 W in an earlier season
    same = curve.with_columns(
        pl.when(pl.col("duration_s") == 60).then(300.0).otherwise("best_watts").alias("best_watts")
    )
    assert report._same_curve(same, "this season", "all time")
    assert not report._same_curve(same.filter(pl.col("period") == "all time"), "this season", "all time")
