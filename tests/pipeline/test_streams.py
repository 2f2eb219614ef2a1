"""Streams (issue 34, item 2 and 3): fetched last, one call per recorded activity of the last `streams_days` days,
newest first, written to Parquet beside the warehouse and read through `activity_streams`; over loopback HTTP into a
real DuckDB file and real Parquet files."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fitsync.sync import stream_answers, streams
from fitsync.warehouse import streams as stored

from ..sandbox_harness import Harness, wait_until
from .conftest import PROXY_404, ROUTE_404, Connect, Home, Recorder, add_athlete, record, subprocess_env

# the PostgreSQL variants run with -m slow (tests/conftest.py): the state store plays no part in streams
pytestmark = pytest.mark.postgres_slow

KEYS = ",".join(stored.STREAMS)
WINDOW = 30  # seconds: a rate window the test's first run surely ends within


def asked(recorder: Recorder) -> list[str]:
    return [s.path for s in recorder.sent if s.path.endswith("/streams")]


def served(sb: Harness, athlete_id: int, activity_id: int) -> dict[str, Any]:
    """The activity's streams as the sandbox serves them (keyed by type), to answer altered."""
    grant = sb.connect(athlete_id=athlete_id)
    answer: dict[str, Any] = sb.get(
        grant, f"/activities/{activity_id}/streams", params={"keys": KEYS, "key_by_type": "true"}
    ).json()
    return answer


def seeded(sb: Harness) -> tuple[int, list[int], int, int]:
    """An athlete with three recent recordings (a ride with every sensor, a run, a phone ride: newest first), one
    recording from long ago and one manual activity of last week."""
    aid = add_athlete(sb, premium=True)
    recent = [
        record(sb, aid, days_ago=2, sport_type="Ride", moving_time=1800),
        record(sb, aid, days_ago=5, sport_type="Run", moving_time=1200),
        record(sb, aid, days_ago=9, sport_type="Ride", moving_time=900, device=False),
    ]
    old = record(sb, aid, days_ago=200, sport_type="Ride", moving_time=900)
    grant = sb.connect(athlete_id=aid)
    manual = sb.api(
        grant,
        "POST",
        "/activities",
        data={"name": "Gym", "sport_type": "Run", "start_date_local": _days_ago(6), "elapsed_time": "1800"},
    )
    assert manual.status_code == 201, manual.text
    return aid, recent, old, manual.json()["id"]


def _days_ago(days: float) -> str:
    import datetime as dt

    return (dt.datetime.now(dt.UTC) - dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def stream_of(home: Home, activity_id: int) -> dict[str, list[object]]:
    rows = home.query(
        "SELECT time, distance, lat, lng, altitude, velocity_smooth, heartrate, cadence, watts, temp, moving, "
        "grade_smooth FROM activity_streams WHERE activity_id = ? ORDER BY sample",
        activity_id,
    )
    names = ("time", "distance", "lat", "lng", "altitude", "velocity_smooth", "heartrate", "cadence", "watts", "temp")
    out: dict[str, list[object]] = {name: [r[i] for r in rows] for i, name in enumerate(names)}
    out["moving"] = [r[10] for r in rows]
    out["grade_smooth"] = [r[11] for r in rows]
    return out


@pytest.mark.sqlite_only  # the state store is incidental: the streams in the warehouse
def test_recent_streams_are_stored_once_as_the_service_sent_them(
    sb: Harness, connect: Connect, recorder: Recorder, flavor: str
) -> None:
    aid, recent, old, manual = seeded(sb)
    home = connect(aid, streams="recent")
    home.sync()
    assert asked(recorder) == [f"/activities/{i}/streams" for i in recent], "newest first, once each, nothing else"
    assert all(s.params == {"keys": KEYS, "key_by_type": "true"} for s in recorder.sent if s.path.endswith("/streams"))
    assert home.outcomes[-1].metadata["activity_streams"]["remaining"] == 0

    ride = recent[0]
    answer = home.sb.get(home.grant(), f"/activities/{ride}/streams", params={"keys": KEYS, "key_by_type": "true"})
    sent = {kind: s["data"] for kind, s in answer.json().items()}
    mine = stream_of(home, ride)
    ((distance, moving_time),) = home.query("SELECT distance, moving_time FROM activities WHERE activity_id = ?", ride)
    assert len(mine["time"]) == moving_time + 1 and mine["distance"][-1] == distance
    for kind, data in sent.items():
        if kind == "latlng":
            assert [[a, b] for a, b in zip(mine["lat"], mine["lng"])] == data
        else:
            assert mine[kind] == data, kind
    ((status, samples, problems, raw),) = home.query(
        "SELECT status, samples, problems, raw FROM activity_stream_answers WHERE activity_id = ?", ride
    )
    assert (status, samples, problems, json.loads(raw)) == ("stored", moving_time + 1, [], answer.json())
    assert home.query("SELECT count(DISTINCT activity_id) FROM activity_streams") == [(3,)]
    phone = stream_of(home, recent[2])
    assert phone["heartrate"] == [None] * len(phone["time"]) and phone["lat"][0] is not None

    recorder.clear()
    home.sync()
    assert asked(recorder) == [], "a second sync asks nothing again"
    status = subprocess.run(
        [sys.executable, "-m", "fitsync.cli.main", "status", "--json"],
        env=subprocess_env(home.config.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(status.stdout)["athletes"][0]["pending"]["streams"] == 0, status.stderr

    all_of_them = home.config.model_copy(update={"streams": "all"})
    home.config = all_of_them
    recorder.clear()
    home.sync()
    assert asked(recorder) == [f"/activities/{old}/streams"], "never a manual activity"
    assert manual not in {r[0] for r in home.query("SELECT activity_id FROM activity_stream_answers")}


@pytest.mark.sqlite_only  # the state store is incidental: the streams in the warehouse
def test_streams_off_asks_for_none(sb: Harness, connect: Connect, recorder: Recorder) -> None:
    aid, _, _, _ = seeded(sb)
    home = connect(aid, streams="off")
    home.sync()
    assert asked(recorder) == []
    assert home.query("SELECT count(*) FROM activity_streams") == [(0,)]


@pytest.mark.sqlite_only  # the state store is incidental: the streams in the warehouse
def test_streams_waiting_are_not_taken_for_nothing_new(sb: Harness, connect: Connect) -> None:
    """A caught-up athlete whose streams wait (turned on later, or a budget spent before them) gets a run from
    `fitsync sync`, not "nothing new": the nothing-new check looks at the streams queue too."""
    from fitsync.client.runtime import FitsyncClient
    from fitsync.pipelines import nothing_new

    aid, recent, _, _ = seeded(sb)
    home = connect(aid, streams="off", slow_refresh_hours=20)
    home.sync()
    home.sync()
    with FitsyncClient(home.config) as client:
        assert nothing_new.waiting(client, aid) is None
    home.config = home.config.model_copy(update={"streams": "recent"})
    with FitsyncClient(home.config) as client:
        assert nothing_new.waiting(client, aid) == f"{len(recent)} activities wait for their streams"


def test_a_run_stopped_by_the_budget_continues_without_repeating_a_call(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """The window's budget runs out among the streams: the step says so (not a failure) and the run after the window
    asks only for the streams still missing."""
    from fitsync.client.runtime import FitsyncClient

    aid = add_athlete(sb, premium=True)
    ids = [record(sb, aid, days_ago=1 + i, sport_type="Ride", moving_time=600) for i in range(4)]
    # stats, zones and starred segments on their cadence: a sync then spends two reads before the streams
    with sb.settings(short_window=WINDOW):  # the home's client counts the service's windows
        home = connect(
            aid, short_window=WINDOW, boundary_guard=0.05, bulk_reserve=0, streams="off", slow_refresh_hours=20
        )
        home.sync()
        home.config = home.config.model_copy(update={"streams": "recent"})
        # well inside one window, so the budget below is this window's (all of it: no bulk reserve): two reads, then
        # two streams, then spent
        wait_until(lambda: time.time() % WINDOW < WINDOW - 12, WINDOW, "the first half of a rate window", 0.05)
        with FitsyncClient(home.config) as client:
            client.athlete(aid).athlete()
        used = int(recorder.sent[-1].headers["x-readratelimit-usage"].split(",")[0])
        with sb.settings(read_limit_short=used + 4):
            first = home.sync(max_wait_seconds=0.5).metadata["activity_streams"]
    assert first["stopped_early"] and "rate budget spent" in str(first["notes"]), first
    assert 0 < first["fetched"] < len(ids) and first["remaining"] == len(ids) - first["fetched"], first
    # the next window, as the home's client counts it (its ledger's window has ended: nothing is spent in it)
    home.config = home.config.model_copy(update={"short_window": 2})
    second = home.sync().metadata["activity_streams"]
    assert second["remaining"] == 0 and not second.get("stopped_early"), second
    assert second["fetched"] == len(ids) - first["fetched"]
    assert sorted(asked(recorder)) == sorted(f"/activities/{i}/streams" for i in ids), "each exactly once"
    assert home.query("SELECT count(DISTINCT activity_id) FROM activity_streams") == [(len(ids),)]


@pytest.mark.sqlite_only  # the state store is incidental: the streams in the warehouse
def test_an_odd_answer_is_kept_raw_and_reported_not_a_failure(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    aid = add_athlete(sb, premium=True)
    ride = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=600)
    odd = {
        "power_balance": {"data": [50] * 601, "series_type": "time", "original_size": 601, "resolution": "high"},
        "heartrate": {"data": [120, 121], "series_type": "time", "original_size": 2, "resolution": "high"},
    }
    home = connect(aid, streams="recent")
    with sb.settings(fault_answers={"GET /activities/{id}/streams": {"merge": odd}}):
        outcome = home.sync(check=False)
    assert outcome.success, outcome.error
    left_out = " ".join(outcome.left_out())
    assert "'power_balance'" in left_out and "'heartrate' has 2 samples, the others 601" in left_out
    ((status, problems, balance),) = home.query(
        "SELECT status, problems, raw -> '$.power_balance.data[0]' FROM activity_stream_answers WHERE activity_id = ?",
        ride,
    )
    assert status == "partly stored" and len(problems) == 2 and balance == "50"
    # the other channels are stored: power where the sandbox's ride has a power meter (its world is random)
    ((device_watts,),) = home.query("SELECT device_watts FROM activities WHERE activity_id = ?", ride)
    assert home.query(
        "SELECT count(*), count(distance), count(heartrate), count(watts) FROM activity_streams WHERE activity_id = ?",
        ride,
    ) == [(601, 601, 0, 601 if device_watts else 0)]
    recorder.clear()
    home.sync(check=False)
    assert asked(recorder) == [], "kept raw is stored: not asked again"


@pytest.mark.sqlite_only  # the state store is incidental: the streams in the warehouse
def test_values_no_body_or_place_can_have_are_left_out_and_named(sb: Harness, connect: Connect) -> None:
    """A heart rate of 5,000 (and −40), −500 W and 30,000 W, a latitude of 120.5, a speed of −20 m/s, one GPS glitch
    of 4,000 km/h: each fits its column's type, none a human or the Earth. Those values are NULL in the samples and
    named (the answer kept raw), every other value stored, and the power curve never sees 30,000 W."""
    aid = add_athlete(sb, premium=True)
    ride = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=600)
    answer = served(sb, aid, ride)
    n = len(answer["time"]["data"])
    answer["heartrate"] = {"data": [5000 if i % 2 else -40 for i in range(n)], "series_type": "time"}
    answer["watts"] = {"data": [30000 if i < 60 else -500 for i in range(n)], "series_type": "time"}
    answer["latlng"]["data"] = [[120.5, -100.0]] * n
    answer["velocity_smooth"]["data"][100] = 1111.1  # 4,000 km/h in one sample: that sample only
    home = connect(aid, streams="recent")
    with sb.settings(fault_answers={"GET /activities/{id}/streams": {"body": answer}}):
        outcome = home.sync(check=False)
    left_out = " ".join(outcome.left_out())
    for channel, count in (("heartrate", n), ("watts", n), ("latlng", n), ("velocity_smooth", 1)):
        assert f"channel {channel!r}: {count:,} values outside" in left_out, left_out
    ((status,),) = home.query("SELECT status FROM activity_stream_answers")
    assert status == "partly stored"
    assert home.query(
        "SELECT count(*), count(heartrate), count(watts), count(lat), count(velocity_smooth), count(distance) "
        "FROM activity_streams"
    ) == [(n, 0, 0, 0, n - 1, n)]
    assert home.query("SELECT count(watts) FROM activity_mmp") == [(0,)]


@pytest.mark.sqlite_only  # the state store is incidental: the streams queue
@pytest.mark.parametrize("cut", ["short", "empty"])
def test_a_short_or_empty_answer_is_said_and_asked_again_a_few_times(
    sb: Harness, connect: Connect, recorder: Recorder, cut: str
) -> None:
    """Every channel cut to a quarter while `original_size` counts them all, or `{}` for a ride with GPS and a heart
    rate: nothing of it stored as the activity's streams, said, and asked again on later runs (ASKS answers in all),
    so the service's next whole answer is stored."""
    aid = add_athlete(sb, premium=True)
    ride = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=600)
    answer = served(sb, aid, ride)
    n = len(answer["time"]["data"])
    for channel in answer.values():
        channel["data"] = channel["data"][: n // 4]
    fault = {"GET /activities/{id}/streams": {"body": answer if cut == "short" else {}}}

    home = connect(aid, streams="recent")
    with sb.settings(fault_answers=fault):
        outcome = home.sync(check=False)
        said = " ".join(outcome.left_out())
        assert ("samples of the" if cut == "short" else "an empty answer") in said, said
        assert home.query("SELECT count(*) FROM activity_streams") == [(0,)]
        for _ in range(stored.stream_queue.ASKS - 1):
            home.sync(check=False)
        recorder.clear()
        home.sync(check=False)
    assert asked(recorder) == [], f"asked {stored.stream_queue.ASKS} times, then no more"
    status = {"short": "short", "empty": "no streams"}[cut]
    assert home.query("SELECT status FROM activity_stream_answers") == [(status,)]

    home2 = connect(aid, name="home2", streams="recent")  # another home, answered whole after one short answer: stored
    with sb.settings(fault_answers=fault):
        home2.sync(check=False)
    home2.sync(check=False)
    assert home2.query("SELECT status, samples FROM activity_stream_answers") == [("stored", n)]


@pytest.mark.sqlite_only  # the state store is incidental: the streams in the warehouse
def test_an_answer_the_service_downsampled_is_stored_not_taken_for_short(sb: Harness, connect: Connect) -> None:
    """The real service answers a long recording at `resolution: high` with ≈ 10,000 of its samples, original_size
    counting them all: the samples span the whole activity, so it is stored, not refused as cut short."""
    aid = add_athlete(sb, premium=True)
    ride = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=1200)
    answer = served(sb, aid, ride)
    n = len(answer["time"]["data"])
    for channel in answer.values():
        channel["data"] = channel["data"][::4]  # every 4th sample, first to last
    home = connect(aid, streams="recent")
    with sb.settings(fault_answers={"GET /activities/{id}/streams": {"body": answer}}):
        outcome = home.sync(check=False)
    assert outcome.success and not outcome.left_out(), outcome.left_out()
    assert home.query("SELECT status, samples FROM activity_stream_answers") == [("stored", len(range(0, n, 4)))]


@pytest.mark.sqlite_only  # the state store is incidental: what a 404 says
@pytest.mark.parametrize(
    "answer",
    [{"status": 404, "body": ROUTE_404}, {"status": 404, "text": PROXY_404, "media_type": "text/html"}],
    ids=["route", "html"],
)
def test_a_404_that_is_not_about_the_activity_is_not_taken_for_no_streams(
    sb: Harness, connect: Connect, answer: dict[str, object]
) -> None:
    """A 404 for the request's path (a wrong base_url or a proxy) says nothing about the activity: the run fails
    saying so, nothing is recorded as "not found" (that answer is never asked for again), and the streams come next
    time."""
    aid = add_athlete(sb, premium=True)
    ride = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=300)
    home = connect(aid, streams="recent")
    with sb.settings(fault_answers={"GET /activities/{id}/streams": answer}):
        outcome = home.sync(check=False)
    assert not outcome.success and "404" in (outcome.error or "")
    assert home.query("SELECT count(*) FROM activity_stream_answers") == [(0,)]
    assert home.sync(check=False).success
    assert home.query("SELECT status FROM activity_stream_answers WHERE activity_id = ?", ride) == [("stored",)]


def test_an_answer_too_large_is_recorded_and_the_queue_goes_on(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """A streams answer larger than max_response_bytes would be as large at every run: it is recorded as too large and
    named, the older activities' streams are still fetched, and it is not asked for again (it failed the run, every
    run, with every activity behind it waiting)."""
    aid = add_athlete(sb, premium=True)
    older = record(sb, aid, days_ago=4, sport_type="Ride", moving_time=300)
    huge = record(sb, aid, days_ago=2, sport_type="Ride", moving_time=4 * 3600)  # ≈ 1 MB of streams
    home = connect(aid, streams="recent", max_response_bytes=300_000)  # every other answer is under it
    outcome = home.sync(check=False)
    assert outcome.success, outcome.error
    assert "max_response_bytes" in " ".join(outcome.left_out())
    statuses = dict(home.query("SELECT activity_id, status FROM activity_stream_answers"))
    assert statuses == {huge: "too large", older: "stored"}
    recorder.clear()
    home.sync(check=False)
    assert asked(recorder) == [], "a recorded answer is not asked for again"


def test_both_shapes_read_alike(sb: Harness, flavor: str) -> None:
    """The keyed answer and the list (the real service's answer without key_by_type) make the same samples; a shape
    of neither kind is kept raw."""
    aid = add_athlete(sb, premium=True)
    ride = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=300)
    grant = sb.connect(athlete_id=aid)
    path = f"/activities/{ride}/streams"
    keyed = sb.get(grant, path, params={"keys": KEYS, "key_by_type": "true"}).json()
    listed = sb.get(grant, path, params={"keys": KEYS, "key_by_type": "false"}).json()
    assert isinstance(listed, list)
    a, b = (stream_answers.read(ride, None, 1, body) for body in (keyed, listed))
    assert a.status == b.status == "stored" and a.channels == b.channels
    assert a.frame is not None and b.frame is not None and a.frame.equals(b.frame)
    assert stream_answers.read(ride, None, 1, {"message": "odd"}).status == "kept raw"

    # the bytes as received: a keyed answer is read by DuckDB straight into the same samples, kept as it came
    content = sb.get(grant, path, params={"keys": KEYS, "key_by_type": "true"}).content
    fast = streams.read_bytes(ride, None, 1, content)
    assert fast.raw == content.decode() and fast.status == "stored" and fast.channels == a.channels
    assert fast.frame is not None and fast.frame.equals(a.frame)
    # anything the fast parse does not take goes the careful way, which names it
    odd = (
        dict(keyed, heartrate={**keyed["heartrate"], "data": keyed["heartrate"]["data"][:-1]})
        if "heartrate" in keyed
        else {}
    )
    if odd:
        careful = streams.read_bytes(ride, None, 1, json.dumps(odd).encode())
        assert careful.status == "partly stored" and "'heartrate' has" in careful.problems[0]
    halves = dict(keyed, time={**keyed["time"], "data": [t + 0.5 for t in keyed["time"]["data"]]})
    assert "more than 0 decimals" in " ".join(streams.read_bytes(ride, None, 1, json.dumps(halves).encode()).problems)
    assert streams.read_bytes(ride, None, 1, b"\xff\xfe not text").status == "kept raw"
    assert streams.read_bytes(ride, None, 1, b"[1, 2").status == "kept raw"


def test_a_chunk_read_the_quick_way_frames_each_answer_as_the_careful_way_does() -> None:
    """DuckDB's quick way over a chunk (sync/stream_answers.framed) takes only what the careful way would store whole:
    every answer of a chunk mixing good ones with every kind of odd one comes out as `read` frames it alone (status,
    channels, problems, samples), the odd ones named. A lenient JSON transform alone would store "3" as 3, true as
    1 and 2.5 as 2."""
    n = 6
    good = {
        "time": {"data": list(range(n)), "series_type": "distance", "original_size": n, "resolution": "high"},
        "distance": {"data": [0.0, 4.25, 8.5, 12.75, 17.0, 21.25]},
        "latlng": {"data": [[45.123456, -73.5], [45.1235, -73.5001]] * 3},
        "temp": {"data": [-2, -1, 0, 1, 2, 3]},  # negative and positive integers (json_structure: HUGEINT)
        "heartrate": {"data": [120, None, 122, 123, 124, 125]},
        "moving": {"data": [False, True, True, True, True, True]},
    }
    odd = [
        {"watts": {"data": [200, "3", 210, 220, 230, 240]}},  # a string of a number
        {"watts": {"data": [200, True, 210, 220, 230, 240]}},  # a boolean among numbers
        {"time": {"data": [0, 1, 2.5, 3, 4, 5]}},  # a decimal where integers go
        {"watts": {"data": [200, 40000, 210, 220, 230, 240]}},  # beyond SMALLINT
        {"time": {"data": [0, 1, 2, 3, 4, 2_000_000_000]}},  # a time no recording reaches (a pause of 63 years)
        {"time": {"data": [0, 2_592_000, 0, 2_592_000, 0, 2_592_000]}},  # back and forth: 30 days of seconds a step
        {"time": {"data": [0, 1, 5, None, 4, 6]}},  # a time that goes back, past a missing one
        {"distance": {"data": [0.0, float("nan"), 8.5, 12.75, 17.0, 21.25]}},  # NaN, which Python's JSON writes
        {"distance": {"data": [0.0, 4.255, 8.5, 12.75, 17.0, 21.25]}},  # a third decimal
        {"latlng": {"data": [[45.1, -73.5, 3.0]] + [[45.1, -73.5]] * 5}},  # a point of three numbers
        {"heartrate": {"data": [120, 121, 122]}},  # shorter than the others
        {"power_balance": {"data": [50] * n}},  # a channel fitsync does not know
        {"moving": {"data": [1, 0, 1, 1, 1, 1]}},  # numbers where booleans go
        {"cadence": {"data": 7}},  # data that is not a list
        {"watts": {"data": [200, [], 210, 220, 230, 240]}},  # a list among numbers
        {"watts": {"data": [200, {}, 210, 220, 230, 240]}},  # an object among numbers
        {"watts": None},  # a channel that is not an object
        {  # a list among numbers, and a text holding the `null` its lenient NULL lacks
            "watts": {"data": [200, [], 210, 220, 230, 240], "resolution": "null"},
        },
        {  # a list among numbers, and an escape that holds a `null` its reading does not ("\n" then "ull")
            "watts": {"data": [200, [], 210, 220, 230, 240], "resolution": "\null"},
        },
        {  # a list among numbers, and a text that holds a `null` once its digits are left out (as tokens counts)
            "watts": {"data": [200, [], 210, 220, 230, 240], "resolution": "nu1l2l"},
        },
        {  # a boolean among numbers, and a text holding a `true` of its own
            "watts": {"data": [200, True, 210, 220, 230, 240], "series_type": "true"},
        },
    ]
    bodies = [good, *({**good, **change} for change in odd), [{"type": "time", "data": [0, 1]}], {}]
    nested = '{"time": {"data": ' + "[" * 5000 + "]" * 5000 + "}}"  # deeper than Python's JSON parser goes
    texts = [json.dumps(body) for body in bodies] + ["[1, 2", '{"time": {"data": [0, 1]', nested, json.dumps(good)]
    received = [streams.received(i, None, 1, text.encode()) for i, text in enumerate(texts)]
    with stored.scratch() as conn:
        quick = stream_answers.framed(conn, received)
        taken = [i for i, a in enumerate(stream_answers._read_many(conn, received)) if a is not None]
    assert taken == [0, len(texts) - 1], "the good ones, and only they, are read the quick way in a mixed chunk"
    alone = [stream_answers.careful(answer) for answer in received]
    for q, a, text in zip(quick, alone, texts, strict=True):
        assert (q.status, q.channels, q.problems, q.raw) == (a.status, a.channels, a.problems, text), text
        assert (q.frame is None) == (a.frame is None) and (q.frame is None or q.frame.equals(a.frame)), text
    assert [q.status for q in quick].count("stored") == 3, "the good ones and the list shape"
    assert all(q.problems for q in quick[1 : 1 + len(odd)]), "each odd one is named"
    assert quick[0].frame is not None and quick[0].frame["temp"].to_list() == [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]


def test_the_writer_writes_chunks_in_order_beside_the_fetching_and_raises_a_failed_write(tmp_path: Path) -> None:
    """Chunks are written on the writer's thread, in order; each is reported on the caller's thread once whole; a
    write that fails is raised to the caller, never lost on the thread."""
    import datetime as dt
    import threading

    import duckdb

    start = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
    body = {"time": {"data": list(range(50))}, "watts": {"data": [200] * 50}}
    answers = [stream_answers.read(i, start, 1, body) for i in range(streams.CHUNK_ACTIVITIES + 5)]
    reported: list[tuple[list[int], int, str]] = []

    def written(batch: list[stored.Answer], samples: int) -> None:
        reported.append(([a.activity_id for a in batch], samples, threading.current_thread().name))

    root = tmp_path / "documents"
    with streams.Writer(root, 7, written) as writer:
        for answer in answers:
            writer.add(answer)
    assert [(ids[0], len(ids), samples) for ids, samples, _ in reported] == [
        (0, streams.CHUNK_ACTIVITIES, 50 * streams.CHUNK_ACTIVITIES),
        (streams.CHUNK_ACTIVITIES, 5, 250),
    ]
    assert {thread for _, _, thread in reported} == {threading.current_thread().name}
    glob = root / stored.ANSWERS / "athlete=7" / "**" / "*.parquet"
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall() == [(len(answers),)]

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(OSError), streams.Writer(blocked, 7, written) as writer:
        writer.add(answers[0])
