"""Analysis from streams (issue 34, item 4), on a real DuckDB file with streams written by `streams.write` the way the
fetch step writes them: each view against a hand figure on a stream built to a known answer, the resampling of a
3-second stream and of a pause, and the done-when: the MMP of sandbox activities equals a brute force over their
stored streams, and NP equals Coggan's formula by hand.

| athlete | activity | stream |
|---|---|---|
| 1 | square (2025) | 600 s at 200 W then 300 s at 300 W, 1 Hz; heart rate 130 then 165 |
| 1 | smart (2025) | 250 W sampled every 3 s for 30 min, one power sample of 100 → 400 W |
| 1 | paused (2025) | 600 s at 300 W, a 20-minute stop (a jump in time), 600 s at 300 W |
| 1 | steady (2025) | 3000 s at 200 W and heart rate 140 |
| 1 | old (2024) | 600 s at 150 W: last season |
| 2 | hard (2024) | W' balance: 60 s at 150 W, 60 s at 450 W, 120 s at 150 W, on efforts of CP 250 W, W' 20 kJ |
| 3 | run_2024 | 4 m/s for 1300 s, 1 Hz; heart rate 100, then 150, then 160 (decoupling) |
| 3 | run_2025 | 5 m/s for 1101 s, sampled every 3 s |
| 3 | run_2026 | 5 m/s for 180 s then 4 m/s: critical speed 4 m/s, D' 180 m |
| 3 | jumped (2023) | 2 m/s for 600 s, a GPS jump of 200 m at 300 s |
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from fitsync.warehouse import analysis, db, documents, stream_mmp, streams

from .builder import HR_BOUNDS, Builder
from .conftest import CP, CP_EFFORTS, W_PRIME, held_open

POWER_BOUNDS = [(0, 150), (150, 250), (250, 350), (350, -1)]


def answer(
    activity_id: int,
    start: str,
    time: list[int],
    *,
    watts: list[float] | None = None,
    heartrate: list[float] | None = None,
    distance: list[float] | None = None,
    velocity: list[float] | None = None,
) -> streams.Answer:
    """An answer as sync/stream_answers.read frames it: the channels given, the others NULL, every sample moving."""
    n = len(time)
    columns: dict[str, Any] = {c.column: [None] * n for c in streams.CHANNELS}
    columns.update(time=time, moving=[True] * n)
    for name, values in (
        ("watts", watts),
        ("heartrate", heartrate),
        ("distance", distance),
        ("velocity_smooth", velocity),
    ):
        if values is not None:
            columns[name] = values
    frame = pl.DataFrame(
        {"activity_id": [activity_id] * n, "fetched_us": [1] * n, "sample": list(range(n)), **columns},
        schema=streams.SOURCE_SCHEMA,
    )
    begun = dt.datetime.fromisoformat(start).replace(tzinfo=dt.UTC)
    channels = tuple(k for k in streams.STREAMS if k in ("time", "moving") or columns.get(k) is not None)
    return streams.Answer(activity_id, begun, 1, streams.STORED, "{}", frame, channels)


@dataclass
class Streamed:
    path: Path
    ids: dict[str, int] = field(default_factory=dict)


def build(path: Path) -> Streamed:
    b = Builder(path)
    world = Streamed(path)
    ids = world.ids
    root = path.resolve().with_name(path.name + ".documents")
    # 1: a cyclist with FTP 250, heart-rate and power zones
    b.athlete(1, ftp=250, synced_at="2025-06-30 12:00:00+00")
    zones(b, 1, "2025-01-01")
    b.ftp(1, "2025-05-01", 240)  # in force on the rides' dates; the profile's 250 is seen only later
    ids["square"] = b.activity(1, "2025-06-01 08:00:00", device_watts=True, np=255, moving_time=900)
    b.buckets(ids["square"], [0, 600, 0, 300, 0])
    ids["smart"] = b.activity(1, "2025-06-02 08:00:00", device_watts=True, moving_time=1800)
    ids["paused"] = b.activity(1, "2025-06-03 08:00:00", device_watts=True, moving_time=1200, elapsed=2400)
    ids["steady"] = b.activity(1, "2025-06-04 08:00:00", device_watts=True, moving_time=3000)
    ids["old"] = b.activity(1, "2024-06-04 08:00:00", device_watts=True, moving_time=600)
    square = list(range(900))
    smart = list(range(0, 1801, 3))
    paused = list(range(600)) + list(range(1800, 2400))
    rides = [
        answer(ids["square"], "2025-06-01", square, watts=[200.0] * 600 + [300.0] * 300,
               heartrate=[130.0] * 600 + [165.0] * 300),
        answer(ids["smart"], "2025-06-02", smart, watts=[100.0, 400.0] + [250.0] * (len(smart) - 2)),
        answer(ids["paused"], "2025-06-03", paused, watts=[300.0] * 1200),
        answer(ids["steady"], "2025-06-04", list(range(3000)), watts=[200.0] * 3000, heartrate=[140.0] * 3000),
        answer(ids["old"], "2024-06-04", list(range(600)), watts=[150.0] * 600),
    ]  # fmt: skip
    # 2: W' balance on a known CP: efforts on P = CP + W'/t (no streams), one ride with streams below the curve
    b.athlete(2, synced_at="2024-12-31 12:00:00+00")
    for n, t in enumerate(CP_EFFORTS):
        ride = b.activity(2, f"2024-03-{n + 1:02d} 09:00:00", device_watts=True, moving_time=3 * 3600)
        b.effort(2, ride, 700 + n, f"2024-03-{n + 1:02d} 09:30:00", t, watts=CP + W_PRIME / t)
    ids["hard"] = b.activity(2, "2024-05-01 09:00:00", device_watts=True, moving_time=240)
    hard = answer(ids["hard"], "2024-05-01", list(range(240)), watts=[150.0] * 60 + [450.0] * 60 + [150.0] * 120)
    # 3: a runner
    b.athlete(3, synced_at="2026-03-01 12:00:00+00")
    ids["run_2024"] = b.activity(3, "2024-04-01 07:00:00", sport="Run", distance=5196, moving_time=1300)
    ids["run_2025"] = b.activity(3, "2025-04-01 07:00:00", sport="Run", distance=5500, moving_time=1101)
    ids["run_2026"] = b.activity(3, "2026-02-01 07:00:00", sport="Run", distance=5820, moving_time=1500)
    ids["jumped"] = b.activity(3, "2023-04-01 07:00:00", sport="Run", distance=1400, moving_time=600)
    t24 = list(range(1300))
    t25 = list(range(0, 1101, 3))
    curve = [5.0 * s if s <= 180 else 900 + 4.0 * (s - 180) for s in range(1501)]
    runs = [
        answer(ids["run_2024"], "2024-04-01", t24, distance=[4.0 * s for s in t24], velocity=[4.0] * 1300,
               heartrate=[100.0] * 100 + [150.0] * 600 + [160.0] * 600),
        answer(ids["run_2025"], "2025-04-01", t25, distance=[5.0 * s for s in t25], velocity=[5.0] * len(t25)),
        answer(ids["run_2026"], "2026-02-01", list(range(1501)), distance=curve),
        answer(ids["jumped"], "2023-04-01", list(range(600)),  # 2 m/s, a GPS jump of 200 m at 300 s
               distance=[2.0 * s + (200 if s >= 300 else 0) for s in range(600)]),
    ]  # fmt: skip
    b.conn.execute("UPDATE analysis_settings SET value = 100 WHERE name = 'decoupling_warmup_s'")
    b.close()
    streams.write(root, 1, rides)
    streams.write(root, 2, [hard])
    streams.write(root, 3, runs)
    return world


def zones(b: Builder, athlete_id: int, day: str) -> None:
    b.athlete_zones(athlete_id, day, HR_BOUNDS)
    b.athlete_zones(athlete_id, day, POWER_BOUNDS, zone_type="power")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Streamed]:
    built = build(tmp_path_factory.mktemp("streams-analysis") / "warehouse.duckdb")
    with held_open(built.path):
        yield built


def read(world: Streamed, name: str, athlete_id: int | None = None, **filters: Any) -> pl.DataFrame:
    return analysis.view(world.path, name, athlete_id, **filters)


def mmp(world: Streamed, key: str) -> dict[int, float]:
    frame = read(world, "activity_mmp", activity_id=world.ids[key])
    return dict(zip(frame["duration_s"].to_list(), frame["watts"].to_list()))


# --- resampling and mean-maximal power ---------------------------------------------------------------------


def test_mmp_of_a_square_wave_by_hand(world: Streamed) -> None:
    best = mmp(world, "square")
    assert best[1] == best[300] == 300
    assert best[600] == pytest.approx((5 * 300 + 5 * 200) / 10)  # 250: the 300 W block and 300 s before it
    assert best[900] == pytest.approx((600 * 200 + 300 * 300) / 900)
    assert 1200 not in best, "no window longer than the ride"
    row = read(world, "activity_mmp", activity_id=world.ids["square"], duration_s=600).row(0, named=True)
    assert (row["watts_start_s"], row["watts_start_sample"]) == (300, 300)


def test_a_3_second_stream_is_resampled_to_seconds_by_interpolation(world: Streamed) -> None:
    seconds = read(world, "activity_stream_seconds", activity_id=world.ids["smart"])
    assert seconds["second"].to_list() == list(range(1801)), "one row a second, 0 to the last sample"
    assert seconds["watts"].head(4).to_list() == [100, 200, 300, 400]  # 100 W at 0 s, 400 W at 3 s
    assert seconds["sample"].head(7).to_list() == [0, 0, 0, 1, 1, 1, 2]
    assert not seconds["paused"].any()
    best = mmp(world, "smart")
    # seconds 0-6: 100, 200, 300, 400 (a sample), 350, 300 (400 → 250 by thirds), 250 (a sample); then 250
    assert best[1] == 400 and best[3] == pytest.approx((300 + 400 + 350) / 3)
    assert best[60] == pytest.approx((300 + 400 + 350 + 300 + 56 * 250) / 60)
    assert best[1200] == pytest.approx((300 + 400 + 350 + 300 + 1196 * 250) / 1200)


def test_a_pause_counts_as_stopped_not_as_samples(world: Streamed) -> None:
    seconds = read(world, "activity_stream_seconds", activity_id=world.ids["paused"])
    assert seconds.height == 2400 and seconds["paused"].sum() == 1800 - 600, "600 s to 1,799 s: stopped"
    assert seconds.filter(pl.col("paused"))["watts"].unique().to_list() == [0]
    assert not seconds.filter(pl.col("paused"))["moving"].any()
    best = mmp(world, "paused")
    assert best[600] == 300
    # 1,200 samples at 300 W, but no 20 minutes of them without the stop: the best 20 min holds 600 s of 300 W
    assert best[1200] == pytest.approx(300 * 600 / 1200)


def test_a_pause_without_a_power_meter_or_speed_is_no_power_and_no_speed(tmp_path: Path) -> None:
    """A pause is 0 W only in an activity with power: a ride without a power meter that stopped once has no power
    curve (it had one of 0 W at every duration, in season_power_curve's count of activities too)."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(4, synced_at="2025-06-30 12:00:00+00")
    ride = b.activity(4, "2025-06-05 08:00:00", device_watts=False, moving_time=1200, elapsed=2400)
    b.close()
    paused = list(range(600)) + list(range(1800, 2400))
    root = path.resolve().with_name(path.name + ".documents")
    streams.write(root, 4, [answer(ride, "2025-06-05", paused, distance=[5.0 * t for t in paused])])
    best = analysis.view(path, "activity_mmp", activity_id=ride)
    assert best["watts"].null_count() == best.height > 0 and best["speed"].null_count() == 0
    seconds = analysis.view(path, "activity_stream_seconds", activity_id=ride)
    stopped = seconds.filter(pl.col("paused"))
    assert stopped.height == 1200 and stopped["watts"].null_count() == stopped["speed"].null_count() == 1200
    assert analysis.view(path, "season_power_curve", 4).is_empty()
    # a file an earlier fitsync wrote (0 W in every window), and its view, are read as they are written now
    [written] = (root / stream_mmp.FOLDER / "athlete=4").rglob("*.parquet")
    glob = str(root / stream_mmp.FOLDER / "**" / "*.parquet")
    with duckdb.connect(str(path)) as conn:
        conn.execute(f"COPY (SELECT * REPLACE (0.0 AS watts, 0 AS watts_start_s) FROM '{written}') TO '{written}'")
        conn.execute(f"CREATE OR REPLACE VIEW activity_mmp AS SELECT * FROM read_parquet('{glob}')")
    db.migrate(path)
    again = analysis.view(path, "activity_mmp", activity_id=ride)
    assert again["watts"].null_count() == again["watts_start_s"].null_count() == again.height == best.height


def test_a_stop_shorter_than_a_pause_is_a_stop_not_invented_power(tmp_path: Path) -> None:
    """A red light of 80 s (the time jumps, the distance does not move) was interpolated as every gap up to 90 s: a
    standing start of 700 W after it made the stop a ramp of 9-691 W, moving — 28 kJ invented, the best minute 516 W.
    A gap over which the athlete stood still is a pause, as GoldenCheetah's stationary rule has it; smart recording
    (a few seconds between samples while moving) is still interpolated. MMP files computed by the earlier rule are
    computed again from the stored samples by the next migrate."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(7, synced_at="2025-06-30 12:00:00+00")
    ride = b.activity(7, "2025-06-02 08:00:00", device_watts=True, moving_time=1120, elapsed=1200, distance=4560)
    b.close()
    time = list(range(600)) + list(range(680, 1200))
    watts = [150.0] * 599 + [0.0] + [700.0] * 10 + [150.0] * 510
    distance = [5.0 * t for t in range(599)] + [2990.0] + [2993.0 + 3.0 * (t - 680) for t in range(680, 1200)]
    root = path.resolve().with_name(path.name + ".documents")
    streams.write(root, 7, [answer(ride, "2025-06-02", time, watts=watts, distance=distance)])
    stop = analysis.view(path, "activity_stream_seconds", activity_id=ride).filter(
        pl.col("second").is_between(600, 679)
    )
    assert stop["paused"].all() and not stop["moving"].any() and set(stop["watts"].to_list()) == {0.0}
    best = dict(analysis.view(path, "activity_mmp", activity_id=ride).select("duration_s", "watts").iter_rows())
    assert best[60] == pytest.approx((10 * 700 + 50 * 150) / 60) and best[10] == 700

    # MMP files of the earlier rule (the stop interpolated) are computed again when the views are made again
    [written] = (root / stream_mmp.FOLDER / "athlete=7").rglob("*.parquet")
    with duckdb.connect(str(path)) as conn:
        conn.execute(f"COPY (SELECT * REPLACE (watts * 2 AS watts) FROM '{written}') TO '{written}'")
        conn.execute(f"CREATE OR REPLACE VIEW {stream_mmp.SECONDS_VIEW} AS SELECT 1 AS has_watts")  # an earlier one
    (root / stream_mmp.FOLDER / streams.RULE_FILE).write_text("1\n")
    assert analysis.view(path, "activity_mmp", activity_id=ride)["watts"].max() == 1400
    db.migrate(path)
    again = dict(analysis.view(path, "activity_mmp", activity_id=ride).select("duration_s", "watts").iter_rows())
    assert again == best and not written.exists()
    assert (root / stream_mmp.FOLDER / streams.RULE_FILE).read_text().strip() == str(stream_mmp.RULE)


def test_a_stream_s_power_is_not_carried_to_shorter_durations(tmp_path: Path) -> None:
    """Three minutes of 400 W, 0 W, 400 W: the best 2 min is 200 W, the whole 3 min 267 W. The power-duration curve
    carried every effort down to shorter durations ("an effort holds its power over every shorter window"), so it
    read 267 W at 2 min, more than the ride ever held for 2 min (an analyst's check: 1.5 h beat the exact hour). A
    streamed ride gives its exact mean-maximal power at each duration."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(7, synced_at="2025-06-30 12:00:00+00")
    ride = b.activity(7, "2025-06-02 08:00:00", device_watts=True, moving_time=180, elapsed=180)
    b.close()
    root = path.resolve().with_name(path.name + ".documents")
    watts = [400.0] * 60 + [0.0] * 60 + [400.0] * 60
    streams.write(root, 7, [answer(ride, "2025-06-02", list(range(180)), watts=watts)])
    curve = dict(
        analysis.view(path, "power_duration_curve", 7, season=0).select("duration_s", "best_watts").iter_rows()
    )
    assert curve[120] == pytest.approx(200.0) and curve[180] == pytest.approx(800 / 3) and curve[60] == 400.0


def test_heart_rate_alone_has_no_decoupling_and_says_so(tmp_path: Path) -> None:
    """Weight training with a strap: heart rate in both halves, no power, no speed. Its row read `ok` with no figure
    (an analyst's check); the note says there is no output."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(7, synced_at="2025-06-30 12:00:00+00")
    gym = b.activity(7, "2025-06-02 08:00:00", sport="WeightTraining", moving_time=3000, elapsed=3000)
    b.close()
    root = path.resolve().with_name(path.name + ".documents")
    streams.write(root, 7, [answer(gym, "2025-06-02", list(range(3000)), heartrate=[110.0] * 3000)])
    [row] = analysis.view(path, "stream_decoupling", 7).rows(named=True)
    assert row["decoupling_pct"] is None and row["decoupling_note"].startswith("no output"), row


def test_critical_speed_from_runs_that_were_not_maximal_is_refused(tmp_path: Path) -> None:
    """Easy hours at 3.0 m/s, each starting with 4 minutes at 3.2 m/s, gave CS 3.005 m/s (below the hour's speed)
    and D' 44 m, 'ok', printed in the report. Critical speed has critical power's gates: D' in d_prime_min_m ..
    d_prime_max_m, CS not below cp_hour_share of the best hour's speed."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-30 12:00:00+00")
    runs = []
    for day in ("2025-06-02", "2025-06-04", "2025-06-06"):
        run = b.activity(9, f"{day} 07:00:00", sport="Run", distance=10900, moving_time=3600)
        easy = [3.2 * s if s <= 240 else 768 + 3.0 * (s - 240) for s in range(3601)]
        runs.append(answer(run, day, list(range(3601)), distance=easy))
    b.close()
    streams.write(path.resolve().with_name(path.name + ".documents"), 9, runs)
    [fit] = analysis.view(path, "critical_speed", 9, season=0).rows(named=True)
    assert fit["cs_m_s"] is None and fit["d_prime_m"] is None
    assert fit["cs_note"].startswith("implausible D' 44 m (outside 50-500 m): the runs are not maximal"), fit

    # a curve of distance = 4 t + 360 m (CS 4 m/s, D' 360 m) beside an hour held at 4.3 m/s: CS below the hour's speed
    b = Builder(path := tmp_path / "hour.duckdb")
    b.athlete(9, synced_at="2025-06-30 12:00:00+00")
    short = b.activity(9, "2025-06-02 07:00:00", sport="Run", distance=4880, moving_time=1200)
    hour = b.activity(9, "2025-06-04 07:00:00", sport="Run", distance=15480, moving_time=3600)
    b.close()
    fast_start = [6.0 * s if s <= 180 else 1080 + 4.0 * (s - 180) for s in range(1201)]
    runs = [
        answer(short, "2025-06-02", list(range(1201)), distance=fast_start),
        answer(hour, "2025-06-04", list(range(3601)), distance=[4.3 * s for s in range(3601)]),
    ]
    streams.write(path.resolve().with_name(path.name + ".documents"), 9, runs)
    [fit] = analysis.view(path, "critical_speed", 9, season=0).rows(named=True)
    assert fit["cs_m_s"] is None
    assert fit["cs_note"].startswith("implausible: CS 4.0 m/s below 4.3 m/s held for 60 min or more"), fit


def test_a_gps_jump_is_no_best_effort_and_no_pace(tmp_path: Path) -> None:
    """A run at 4 m/s whose distance leaps 400 m in 3 s (133 m/s: a GPS jump) had a best 400 m of 3 s, 1 km of 2:33
    and a pace curve of 81 m/s. A step faster than run_max_speed is a jump (run_jumps): no effort holds it, and a run
    whose best window of a duration holds one has no pace figure at that duration."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(8, synced_at="2025-06-30 12:00:00+00")
    run = b.activity(8, "2025-06-01 07:00:00", sport="Run", distance=10400, moving_time=2500)
    b.close()
    t = list(range(2501))
    d = [4.0 * s if s <= 1000 else 4000 + 400 * min(s - 1000, 3) / 3 + 4.0 * max(s - 1003, 0) for s in t]
    root = path.resolve().with_name(path.name + ".documents")
    streams.write(root, 8, [answer(run, "2025-06-01", t, distance=d, velocity=[4.0] * len(t))])
    jumps = analysis.view(path, "run_jumps", 8)
    assert jumps["time"].to_list() == [1001, 1002, 1003] and jumps["metres"].to_list() == pytest.approx(
        [400 / 3] * 3, abs=0.01
    )
    best = dict(analysis.view(path, "stream_best_efforts", 8, season=0).select("distance_m", "best_time_s").rows())
    assert best[400] == pytest.approx(100) and best[1000] == pytest.approx(250) and best[5000] == pytest.approx(1250)
    # its best window of every duration holds the jump (the MMP keeps only the best): no pace figure, rather than 81 m/s
    assert analysis.view(path, "pace_duration_curve", 8, season=0).is_empty()
    assert analysis.view(path, "critical_speed", 8, season=0)["cs_m_s"].to_list() in ([], [None])


def test_one_athletes_stream_views_are_read_from_their_own_streams_only(tmp_path: Path) -> None:
    """A filter on stream_best_efforts' or stream_zone_seconds' athlete_id did not reach the streams through their
    shared CTEs: one athlete's read in a coach's warehouse computed every athlete's (20 athletes: 36 s against 1.2 s
    alone; 7.6 s against 0.4 s). analysis.view reads their macro of the athlete (OF_ATHLETE): the view's rows of that
    athlete, the athlete in the macro's plan."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    root = path.resolve().with_name(path.name + ".documents")
    runs: dict[int, list[streams.Answer]] = {8: [], 9: []}
    for athlete, speed in ((8, 4.0), (9, 5.0)):
        b.athlete(athlete, synced_at="2025-06-30 12:00:00+00")
        zones(b, athlete, "2025-01-01")
        for day in ("2025-06-02", "2025-06-04"):
            run = b.activity(athlete, f"{day} 07:00:00", sport="Run", distance=speed * 1500, moving_time=1500)
            distance, heartrate = [speed * t for t in range(1501)], [140.0 + athlete] * 1501
            runs[athlete].append(answer(run, day, list(range(1501)), distance=distance, heartrate=heartrate))
    b.close()
    for athlete, answers in runs.items():
        streams.write(root, athlete, answers)
    with db.reading(path) as conn:
        for name, macro in analysis.OF_ATHLETE.items():
            every = conn.execute(f"SELECT * FROM {name}").pl()
            for athlete in (8, 9):
                own = analysis.view(conn, name, athlete)
                assert own.height and own.equals(every.filter(pl.col("athlete_id") == athlete)), (name, athlete)
                plan = conn.execute(f"EXPLAIN SELECT * FROM {macro}({athlete})").fetchall()[0][1]
                assert f"={athlete}" in plan.replace(" ", ""), (name, "the athlete filters the streams it reads")
        best = analysis.view(conn, "stream_best_efforts", 9).filter(pl.col("distance_m") == 1000)
        assert best["best_time_s"].to_list() == pytest.approx([200.0, 200.0])


def test_a_rebuild_of_the_mmp_waits_for_a_stream_write(tmp_path: Path) -> None:
    """A stream write whose samples landed before a rebuild's listing and whose MMP file after its removal left that
    activity's MMP twice. Writes and rebuilds hold one lock on the MMP folder: the rebuild waits for the write."""
    import threading

    root = tmp_path / "warehouse.duckdb.documents"
    streams.write(root, 9, [answer(1, "2025-06-02", list(range(120)), watts=[200.0] * 120)])
    (root / stream_mmp.FOLDER / streams.RULE_FILE).unlink(missing_ok=True)  # MMP files of an earlier rule
    rebuilt: list[int] = []
    with streams.mmp_lock(root):  # a write in progress
        rebuild = threading.Thread(target=lambda: rebuilt.append(streams.rebuild_mmp(root)))
        rebuild.start()
        rebuild.join(0.5)
        assert rebuild.is_alive() and rebuilt == [], "the rebuild went on during the write"
    rebuild.join()
    assert rebuilt == [1] and len(list((root / stream_mmp.FOLDER / "athlete=9").rglob("*.parquet"))) == 1


def test_running_power_is_not_judged_on_the_cycling_ftp_and_cp(tmp_path: Path) -> None:
    """A run with a power pod (its `watts` stream) was rated on the cycling FTP (IF 1.2), drained the cycling W′ and
    filled the cycling power zones (the report drew such a run as the latest hard ride). Its NP stays (its own figure); FTP,
    IF, W′ balance and power zones are for cycling sport types (power_tss), as the load and power curve are."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(6, ftp=250, synced_at="2025-06-30 12:00:00+00")
    zones(b, 6, "2025-01-01")
    for n, t in enumerate(CP_EFFORTS):
        ride = b.activity(6, f"2025-03-{n + 1:02d} 09:00:00", device_watts=True, moving_time=3 * 3600)
        b.effort(6, ride, 700 + n, f"2025-03-{n + 1:02d} 09:30:00", t, watts=CP + W_PRIME / t)
    run = b.activity(6, "2025-06-01 07:00:00", sport="Run", distance=7200, moving_time=1800, device_watts=True)
    ride = b.activity(6, "2025-06-02 07:00:00", device_watts=True, moving_time=1800)
    for each in (run, ride):  # the service's own power buckets, on the one (cycling) set of power zones
        b.buckets(each, [0, 1800, 0, 0], zone_type="power", bounds=POWER_BOUNDS)
    b.close()
    held = {"watts": [200.0] * 1800, "heartrate": [150.0] * 1800, "distance": [4.0 * s for s in range(1800)]}
    streams.write(
        path.resolve().with_name(path.name + ".documents"),
        6,
        [answer(run, "2025-06-01", list(range(1800)), **held), answer(ride, "2025-06-02", list(range(1800)), **held)],
    )
    np_ = analysis.view(path, "activity_normalized_power", 6).sort("activity_id")
    assert np_["activity_id"].to_list() == [run, ride]
    assert np_["np_watts"].to_list() == pytest.approx([200, 200])
    assert np_["ftp"].to_list() == [None, 250] and np_["intensity_factor"].to_list() == [None, pytest.approx(0.8)]
    assert analysis.view(path, "w_prime_balance_summary", 6)["activity_id"].to_list() == [ride]
    in_zones = analysis.view(path, "stream_zone_seconds", 6).filter(pl.col("seconds") > 0)
    assert sorted(in_zones.filter(pl.col("activity_id") == run)["zone_type"].to_list()) == ["heartrate"]
    assert sorted(in_zones.filter(pl.col("activity_id") == ride)["zone_type"].to_list()) == ["heartrate", "power"]
    service = analysis.view(path, "activity_zone_seconds", 6).filter(pl.col("zone_type") == "power")
    assert set(service["activity_id"]) == {ride}, "the run's power buckets are in no weekly zone time"


def test_two_answers_of_one_activity_written_together_are_two_series(tmp_path: Path) -> None:
    """Each answer is resampled on its own (the samples of two answers of one activity were one series, in sample
    order, interleaved); the latest is the one read."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(5, synced_at="2025-06-30 12:00:00+00")
    ride = b.activity(5, "2025-06-06 08:00:00", device_watts=True, moving_time=600)
    b.close()
    first = answer(ride, "2025-06-06", list(range(600)), watts=[200.0] * 600)
    again = answer(ride, "2025-06-06", list(range(0, 1200, 2)), watts=[300.0] * 600)
    again = dataclasses.replace(again, fetched_us=2, frame=again.frame.with_columns(fetched_us=pl.lit(2, pl.Int64)))
    streams.write(path.resolve().with_name(path.name + ".documents"), 5, [first, again])
    best = dict(analysis.view(path, "activity_mmp", activity_id=ride).select("duration_s", "watts").iter_rows())
    assert best[1] == best[600] == best[900] == 300 and 1200 not in best


def test_the_mmp_s_seconds_follow_the_view_s_rule() -> None:
    """The MMP's 1-s series (stream_mmp.seconds, Polars, as streams are written) and the view's (resampled, DuckDB) are
    one rule: equal on answers made where the two could part."""
    cases = [
        # a short gap, a missing power value, a pause, another short gap
        answer(1, "2025-01-01", [0, 1, 2, 5, 6, 200, 201, 204],
               watts=[100.0, None, 300.0, 200.0, 250.0, 50.0, 60.0, 90.0],
               distance=[0.0, 5.0, 10.0, 30.0, 36.0, None, 505.0, 520.0]),
        # a time twice, a time that goes back, a sample without time, a pause at the end
        answer(2, "2025-01-01", [0, 1, 1, 2, 10, 8, 9, None, 400],  # type: ignore[list-item]
               watts=[10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0],
               distance=[float(d) for d in range(9)]),
        # no power meter, a pause; one sample
        answer(3, "2025-01-01", [0, 3, 100, 103], distance=[0.0, 9.0, 12.0, 30.0]),
        answer(4, "2025-01-01", [7], watts=[300.0]),
        # stops (the distance still) at the rule's edges: 9, 10 and 11 missing seconds, exactly STOP_SPEED a second,
        # just under it, a NULL distance across a gap, a long move
        answer(5, "2025-01-01", [0, 10, 21, 33, 45, 57, 70, 160],
               watts=[100.0, 200.0, 300.0, 250.0, 150.0, 120.0, 80.0, 60.0],
               distance=[0.0, 1.0, 2.0, 8.5, 14.49, None, 20.0, 900.0]),
    ]  # fmt: skip
    again = answer(1, "2025-01-01", [0, 2, 95], watts=[1.0, 2.0, 3.0])  # the same activity answered again: its own
    cases.insert(1, dataclasses.replace(again, frame=again.frame.with_columns(fetched_us=pl.lit(2, pl.Int64))))
    samples = pl.concat([a.frame for a in cases if a.frame is not None])
    with duckdb.connect() as conn:
        conn.register("samples", samples)
        view = conn.execute(
            "SELECT activity_id, fetched_us, second, sample, watts, distance "
            f"FROM ({stream_mmp.resampled('samples', channels=('watts',))})"
        ).pl()
    order = [*stream_mmp.ANSWER, "second", "sample"]
    mmp = stream_mmp.seconds(samples)
    assert mmp.height == view.height > 700
    assert_frame_equal(mmp.sort(order), view.sort(order), check_dtypes=False, check_exact=False, rel_tol=1e-12)


def test_pace_duration_curve_and_critical_speed(world: Streamed) -> None:
    curve = read(world, "pace_duration_curve", 3)
    s2024 = curve.filter(pl.col("season") == 2024)
    assert s2024["speed_m_s"].unique().to_list() == [4.0] and s2024["duration_s"].max() == 1200
    assert s2024.filter(pl.col("duration_s") == 60)["pace_s_per_km"].item() == 250
    s2026 = curve.filter(pl.col("season") == 2026)
    assert s2026.filter(pl.col("duration_s") == 180)["distance_m"].item() == pytest.approx(900)
    assert s2026.filter(pl.col("duration_s") == 600)["distance_m"].item() == pytest.approx(4 * 600 + 180)
    alltime = curve.filter(pl.col("season") == 0)
    assert alltime.filter(pl.col("duration_s") == 60)["speed_m_s"].item() == 5.0
    assert set(curve["period"]) == {"all time", "this season", "last season", "earlier"}
    cs = {r["season"]: r for r in read(world, "critical_speed", 3).iter_rows(named=True)}
    assert cs[2026]["cs_m_s"] == pytest.approx(4.0) and cs[2026]["d_prime_m"] == pytest.approx(180)
    assert cs[2026]["points"] == 9 and cs[2026]["cs_pace_s_per_km"] == pytest.approx(250)
    assert cs[2024]["cs_m_s"] is None and cs[2024]["cs_note"] == "no physical fit (CS or D' not positive)"


# --- power curve and critical power ---------------------------------------------------------------------------


def test_season_power_curve_this_season_last_and_all_time(world: Streamed) -> None:
    curve = read(world, "season_power_curve", 1)
    this = curve.filter(pl.col("season") == 2025)
    assert set(this["period"]) == {"this season"}
    assert set(curve.filter(pl.col("season") == 2024)["period"]) == {"last season"}
    at = {r["duration_s"]: r for r in this.iter_rows(named=True)}
    assert at[1]["best_watts"] == 400 and at[1]["activity_id"] == world.ids["smart"]
    assert at[300]["best_watts"] == 300 and at[300]["activity_id"] == world.ids["square"], "the earliest on a tie"
    assert at[1800]["best_watts"] == 250 and at[3600]["best_watts"] is None if 3600 in at else True
    assert at[2400]["best_watts"] == 200 and at[2400]["activity_id"] == world.ids["steady"]
    last = curve.filter((pl.col("season") == 2024) & (pl.col("duration_s") == 600))
    assert last["best_watts"].item() == 150
    alltime = curve.filter(pl.col("season") == 0)
    assert alltime.filter(pl.col("duration_s") == 600)["best_watts"].item() == 300


def test_seasons_can_start_in_another_month(world: Streamed, tmp_path: Path) -> None:
    copy = tmp_path / "w.duckdb"
    copy.write_bytes(world.path.read_bytes())
    documents_folder = world.path.resolve().with_name(world.path.name + ".documents")
    (tmp_path / "w.duckdb.documents").symlink_to(documents_folder)
    with db.writing(copy) as conn:
        conn.execute("UPDATE analysis_settings SET value = 7 WHERE name = 'season_start_month'")
    db.migrate(copy)  # the views read this file's folder
    moved = Streamed(copy)
    seasons = set(read(moved, "season_power_curve", 1)["season"])
    assert seasons == {0, 2023, 2024}, "June 2024 is in season 2023 (July to June), June 2025 in 2024"
    # every season of the power analyses follows the setting, not only the stream curves
    assert set(read(moved, "power_duration_curve", 1)["season"]) == seasons
    assert set(read(moved, "critical_power", 1)["season"]) == seasons
    assert set(read(world, "critical_power", 1)["season"]) == {0, 2024, 2025}, "the calendar year by default"


def test_power_curve_and_cp_fit_use_streams_where_stored(world: Streamed) -> None:
    curve = read(world, "power_duration_curve", 1)
    season = {r["duration_s"]: r for r in curve.filter(pl.col("season") == 2025).iter_rows(named=True)}
    assert season[5]["source"] == "stream" and season[5]["best_watts"] == pytest.approx(mmp(world, "smart")[5])
    assert season[300]["best_watts"] == 300 and season[300]["effort_duration_s"] == 300
    cp = read(world, "critical_power", 2).filter(pl.col("season") == 2024).row(0, named=True)
    assert cp["cp_watts"] == pytest.approx(CP) and cp["w_prime_j"] == pytest.approx(W_PRIME)
    assert cp["source"] == "efforts", "the streamed ride is below the envelope: the points are the efforts"
    assert read(world, "critical_power", 1).filter(pl.col("season") == 2025)["source"].item() == "streams"


# --- NP, W' balance, decoupling, best efforts, zones -----------------------------------------------------------


def coggan_np(watts: list[float]) -> float:
    rolling = [sum(watts[i - 29 : i + 1]) / 30 for i in range(29, len(watts))]
    return (sum(r**4 for r in rolling) / len(rolling)) ** 0.25


def test_normalized_power_by_hand_and_intensity_factor(world: Streamed) -> None:
    row = read(world, "activity_normalized_power", 1, activity_id=world.ids["square"]).row(0, named=True)
    assert row["np_watts"] == pytest.approx(coggan_np([200.0] * 600 + [300.0] * 300), rel=1e-12)
    assert row["average_watts"] < row["np_watts"] < 250  # the 4th power weighs the 300 W third
    assert row["service_np_watts"] == 255 and row["ftp"] == 240 and row["ftp_source"] == "history"
    assert row["intensity_factor"] == pytest.approx(row["np_watts"] / 240)
    old = read(world, "activity_normalized_power", 1, activity_id=world.ids["old"]).row(0, named=True)
    assert (old["ftp"], old["ftp_source"], old["np_watts"]) == (240, "known_later", pytest.approx(150))
    assert row["average_watts"] == pytest.approx((600 * 200 + 300 * 300) / 900)
    paused = read(world, "activity_normalized_power", 1, activity_id=world.ids["paused"]).row(0, named=True)
    assert paused["np_watts"] == pytest.approx(300) and paused["recorded_s"] == 1200, "a pause is not recorded"


def test_w_prime_balance_by_skibas_formula(world: Streamed) -> None:
    bal = read(world, "w_prime_balance", 2, activity_id=world.ids["hard"])
    assert bal.height == 240 and bal["cp_source"].unique().to_list() == ["season"]
    dcp = CP - 150  # the mean of the seconds below CP
    tau = 546 * math.exp(-0.01 * dcp) + 316
    assert bal["tau_s"][0] == pytest.approx(tau)

    def by_hand(t: int) -> float:
        return W_PRIME - sum((450 - CP) * math.exp(-(t - u) / tau) for u in range(60, min(t, 119) + 1))

    at = dict(zip(bal["second"].to_list(), bal["w_prime_balance_j"].to_list()))
    assert at[59] == pytest.approx(W_PRIME)
    for t in (60, 90, 119, 180, 239):
        assert at[t] == pytest.approx(by_hand(t), rel=1e-9), t
    low = read(world, "w_prime_balance_summary", 2).row(0, named=True)
    assert (low["activity_id"], low["min_at_s"]) == (world.ids["hard"], 119)
    assert low["min_w_prime_balance_j"] == pytest.approx(by_hand(119))
    assert low["w_prime_used"] == pytest.approx(1 - by_hand(119) / W_PRIME)


def test_decoupling_from_the_streams_halves(world: Streamed) -> None:
    steady = read(world, "stream_decoupling", 1, activity_id=world.ids["steady"]).row(0, named=True)
    assert (steady["output_kind"], steady["decoupling_pct"]) == ("power", 0.0)
    assert steady["moving_time_s"] == 3000 - 100, "100 s of warm-up (decoupling_warmup_s) left out"
    run = read(world, "stream_decoupling", 3, activity_id=world.ids["run_2024"]).row(0, named=True)
    # after 100 s of warm-up: 1,200 moving seconds, heart rate 150 for 600 s then 160 for 600 s, at 4 m/s
    assert run["output_kind"] == "speed" and run["first_half_output"] == pytest.approx(240)
    assert run["first_half_hr"] == pytest.approx(150) and run["second_half_hr"] == pytest.approx(160)
    assert run["decoupling_pct"] == pytest.approx((240 / 150 - 240 / 160) / (240 / 150) * 100)  # 6.25
    assert run["decoupling_note"] == "ok"
    # 900 s with heart rate: 800 s after the warm-up are too few halves to say anything (decoupling_min_s)
    square = read(world, "stream_decoupling", 1, activity_id=world.ids["square"]).row(0, named=True)
    assert (
        square["decoupling_pct"] is None
        and square["decoupling_note"] == "too short: 800 s after the warm-up (needs 1200)"
    )


def test_a_power_dropout_is_no_decoupling(tmp_path: Path) -> None:
    """A ride at a constant 200 W and 140 bpm whose power meter dropped out for 5 minutes in its second half read
    11 % decoupling: the seconds without power counted 0 W. Each half's mean is over the seconds that have a value."""
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(9, synced_at="2025-06-30 12:00:00+00")
    ride = b.activity(9, "2025-06-02 08:00:00", device_watts=True, moving_time=3000)
    b.close()
    watts: list[Any] = [200.0] * 3000
    watts[2000:2300] = [None] * 300
    streams.write(
        path.resolve().with_name(path.name + ".documents"),
        9,
        [answer(ride, "2025-06-02", list(range(3000)), watts=watts, heartrate=[140.0] * 3000)],
    )
    found = analysis.view(path, "stream_decoupling", 9).row(0, named=True)
    assert (found["output_kind"], found["decoupling_note"]) == ("power", "ok")
    assert found["second_half_output"] == 200 and found["decoupling_pct"] == 0


def test_exact_distance_best_efforts_by_hand(world: Streamed) -> None:
    best = read(world, "stream_best_efforts", 3)
    at = {(r["season"], r["label"]): r for r in best.iter_rows(named=True)}
    assert at[(2024, "400 m")]["best_time_s"] == pytest.approx(100)
    assert at[(2024, "1 km")]["best_time_s"] == pytest.approx(250)
    assert at[(2024, "1 mile")]["best_time_s"] == pytest.approx(1609.344 / 4)
    assert at[(2024, "5 km")]["best_time_s"] == pytest.approx(5000 / 4)
    assert (2024, "10 km") not in at, "the run is 5.2 km"
    # sampled every 3 s: 1 km at 5 m/s is 200 s, between samples at both ends
    assert at[(2025, "1 km")]["best_time_s"] == pytest.approx(200)
    assert at[(2025, "1 mile")]["best_time_s"] == pytest.approx(1609.344 / 5)
    assert at[(0, "5 km")]["best_time_s"] == pytest.approx(1000)
    assert at[(0, "5 km")]["activity_id"] == world.ids["run_2025"]
    assert at[(0, "1 km")]["pace_s_per_km"] == pytest.approx(200)
    # 5 m/s in 2025 and for the first 180 s of the 2026 run: 80 s both, and the earlier wins the tie
    assert at[(0, "400 m")]["best_time_s"] == pytest.approx(80) and at[(0, "400 m")]["local_date"] == dt.date(
        2025, 4, 1
    )
    assert at[(2026, "400 m")]["best_time_s"] == pytest.approx(80) and at[(2026, "1 km")][
        "best_time_s"
    ] == pytest.approx(180 + 100 / 4), "900 m in 180 s, then 100 m at 4 m/s"


def test_time_in_zones_from_the_streams_beside_the_service(world: Streamed) -> None:
    z = read(world, "stream_zone_seconds", 1, activity_id=world.ids["square"])
    hr = z.filter(pl.col("zone_type") == "heartrate")
    assert hr["seconds"].to_list() == [0, 600, 0, 300, 0]
    assert hr["service_seconds"].to_list() == [0, 600, 0, 300, 0]
    power = z.filter(pl.col("zone_type") == "power")
    assert power["seconds"].to_list() == [0, 600, 300, 0] and power["service_seconds"].null_count() == 4
    assert power["zone_min"].to_list() == [0, 150, 250, 350]


# --- every stream view ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", analysis.FROM_STREAMS)
def test_every_stream_view_orders_its_rows_and_reads_the_same_per_athlete(world: Streamed, name: str) -> None:
    whole = read(world, name)
    assert whole.height > 0, name
    keys = list(analysis.ORDER[name])
    assert whole.select(keys).is_unique().all(), name
    assert_frame_equal(whole, whole.sort(keys, nulls_last=False, maintain_order=True))
    for athlete in (1, 2, 3):
        part = read(world, name, athlete)
        assert_frame_equal(part, whole.filter(pl.col("athlete_id") == athlete), check_exact=False, rel_tol=1e-9)


def test_mmp_files_sit_beside_the_samples_and_go_with_a_purge(world: Streamed, tmp_path: Path) -> None:
    root = world.path.resolve().with_name(world.path.name + ".documents")
    files = sorted(p.relative_to(root).parts[:3] for p in (root / stream_mmp.FOLDER).rglob("*.parquet"))
    assert ("activity_mmp", "athlete=1", "month=2025-06") in files and (
        "activity_mmp",
        "athlete=3",
        "month=2026-02",
    ) in files
    copy = tmp_path / "docs"
    copy.mkdir()
    streams.write(copy, 9, [answer(1, "2025-01-01", [0, 1, 2], watts=[1.0, 2.0, 3.0])])
    assert list((copy / stream_mmp.FOLDER).glob("athlete=9/*/*.parquet"))
    assert streams.remove_athlete(copy, 9) == 3 and not (copy / stream_mmp.FOLDER / "athlete=9").exists()


# --- done when: sandbox activities against a brute force over their stored streams ------------------------------


def one_second_power(time: list[int], watts: list[float], distance: list[float]) -> tuple[list[float], list[bool]]:
    """The resampling rule written out sample by sample: (power each second, whether the second is paused)."""
    power: list[float] = []
    paused: list[bool] = []
    for i, (t0, w0, d0) in enumerate(zip(time, watts, distance)):
        if i + 1 == len(time):
            power.append(w0)
            paused.append(False)
            break
        t1, w1, d1 = time[i + 1], watts[i + 1], distance[i + 1]
        span = t1 - t0
        still = span - 1 >= stream_mmp.STOP_MIN_S and d1 - d0 < stream_mmp.STOP_SPEED * span
        for k in range(span):
            stop = k > 0 and (span - 1 > stream_mmp.MAX_GAP_S or still)
            power.append(w0 if k == 0 else 0.0 if stop else w0 + (w1 - w0) * k / span)
            paused.append(stop)
    return power, paused


def brute_mmp(power: list[float], d: int) -> float:
    return max(sum(power[i : i + d]) for i in range(len(power) - d + 1)) / d


def test_sandbox_mmp_equals_a_brute_force_over_the_stored_streams(sb: Any, tmp_path: Path) -> None:
    from fitsync.sync import streams as fetched

    from ..sandbox_harness import query

    cyclist = sb.athlete_id(premium=True, index=0)
    grant = sb.connect(athlete_id=cyclist)
    rides = query(
        sb,
        """SELECT id, json_extract(data, '$.start_date_local') AS local, json_extract(data, '$.sport_type') AS sport,
                  json_extract(data, '$.moving_time') AS moving
           FROM activities WHERE athlete_id = ? AND visibility = 'everyone' AND json_extract(data, '$.device_watts')
             AND json_extract(data, '$.moving_time') BETWEEN 1500 AND 7200
           ORDER BY id LIMIT 3""",
        cyclist,
    )
    assert len(rides) == 3
    path = tmp_path / "warehouse.duckdb"
    b = Builder(path)
    b.athlete(cyclist)
    answers = []
    for ride in rides:
        local = str(ride["local"]).rstrip("Z").replace("T", " ")
        b.activity(
            cyclist, local, activity_id=ride["id"], sport=ride["sport"], device_watts=True, moving_time=ride["moving"]
        )
        body = sb.get(grant, f"/activities/{ride['id']}/streams", params={"keys": fetched.KEYS, "key_by_type": "true"})
        answers.append(
            fetched.read_bytes(ride["id"], dt.datetime.fromisoformat(local).replace(tzinfo=dt.UTC), 1, body.content)
        )
    b.close()
    assert streams.write(documents.folder(path).parent, cyclist, answers) > 0
    with db.reading(path) as conn:
        for ride in rides:
            samples = conn.execute(
                "SELECT time, watts, distance FROM activity_streams WHERE activity_id = $1 ORDER BY sample",
                {"1": ride["id"]},
            ).fetchall()
            power, paused = one_second_power(
                [r[0] for r in samples], [float(r[1]) for r in samples], [float(r[2]) for r in samples]
            )
            got = dict(
                conn.execute(
                    "SELECT duration_s, watts FROM activity_mmp WHERE activity_id = $1", {"1": ride["id"]}
                ).fetchall()
            )
            for d in (5, 60, 300, 1200):
                assert got[d] == pytest.approx(brute_mmp(power, d), rel=1e-12), (ride["id"], d)
            recorded = [p for p, stop in zip(power, paused) if not stop]
            ((np_watts,),) = conn.execute(
                "SELECT np_watts FROM activity_normalized_power WHERE activity_id = $1", {"1": ride["id"]}
            ).fetchall()
            assert np_watts == pytest.approx(coggan_np(recorded), rel=1e-12), ride["id"]
