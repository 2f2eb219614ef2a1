"""Conformance: activity and segment-effort streams (issue 34, item 1), over loopback HTTP.

Streams are not in the spec: the public swagger rules (`GET /activities/{id}/streams`, `GET
/segment_efforts/{id}/streams`, StreamSet), with the real service's differences in the `real` flavour
(sandbox/world_streams.py says what each flavour answers and why). The streams are generated from the
activity the service already describes, so they must agree with its summary, laps, splits and efforts.
"""

from __future__ import annotations

import functools
import json
import math
from datetime import UTC, datetime, timedelta
from itertools import takewhile
from typing import Any

import pytest

from fitsync.sandbox import store, world, world_streams

from .sandbox_harness import ALL_SCOPES, Grant, Harness, add_athlete, assert_fault, query, record

ALL_KEYS = "time,distance,latlng,altitude,velocity_smooth,heartrate,cadence,watts,temp,moving,grade_smooth"
PRIVACY_RADIUS_M = 400.0


def ok(response: Any) -> Any:
    assert response.status_code == 200, f"{response.status_code}: {response.text[:300]}"
    return response.json()


def streams(sb: Harness, grant: Grant, path: str, keys: str = ALL_KEYS, **params: Any) -> dict[str, list[Any]]:
    """The keyed answer as {type: data}, checking each stream's envelope."""
    body = ok(sb.get(grant, path, params={"keys": keys, "key_by_type": "true", **params}))
    assert isinstance(body, dict)
    sizes = set()
    for kind, stream in body.items():
        assert set(stream) == {"data", "series_type", "original_size", "resolution"}, kind
        assert stream["original_size"] == len(stream["data"]) and stream["resolution"] == "high"
        assert stream["series_type"] in ("distance", "time")
        sizes.add(len(stream["data"]))
    assert len(sizes) <= 1, "every stream has the same length"
    return {kind: stream["data"] for kind, stream in body.items()}


@pytest.fixture(scope="module")
def cyclist(sb: Harness) -> int:
    return sb.athlete_id(premium=True, index=0)  # metric laps (10 km), a power meter and a heart-rate strap


@pytest.fixture(scope="module")
def grant(sb: Harness, cyclist: int) -> Grant:
    return sb.connect(athlete_id=cyclist)


def pick(sb: Harness, where: str, *args: Any) -> int:
    rows = query(
        sb,
        f"""SELECT a.id FROM activities a WHERE a.visibility = 'everyone' AND {where}
            ORDER BY json_extract(a.data, '$.moving_time') DESC LIMIT 1""",
        *args,
    )
    assert rows, f"the seeded world has an activity where {where}"
    return int(rows[0]["id"])


@pytest.fixture(scope="module")
def power_ride(sb: Harness, cyclist: int) -> int:
    return pick(
        sb,
        """a.athlete_id = ? AND json_extract(a.data, '$.device_watts') AND json_extract(a.data, '$.has_heartrate')
           AND json_array_length(json_extract(a.data, '$.laps')) > 1
           AND EXISTS (SELECT 1 FROM efforts e WHERE e.activity_id = a.id AND e.hidden = 0)""",
        cyclist,
    )


def mean(values: list[int]) -> float:
    return sum(values) / len(values)


def gain(values: list[float]) -> float:
    return sum(max(0.0, b - a) for a, b in zip(values, values[1:]))


def check_agreement(activity: dict[str, Any], s: dict[str, list[Any]], efforts: list[dict[str, Any]]) -> None:
    """What the streams must say about the activity: see sandbox/world_streams.py for each figure."""
    m, t = activity["moving_time"], s["time"]
    assert len(t) == m + 1 and t[0] == 0 and t[-1] == activity["elapsed_time"]
    assert all(b > a for a, b in zip(t, t[1:])), "time only goes forward (stops are jumps)"
    assert sum(s["moving"]) == m and s["moving"][0] is False
    for lap in activity["laps"]:
        a, b = lap["start_index"], lap["end_index"]
        assert t[b] - t[a] == lap["elapsed_time"] and b - a == lap["moving_time"]
        if b == a:  # a last lap of no moving second has no sample
            continue
        if "heartrate" in s:
            assert mean(s["heartrate"][a + 1 : b + 1]) == pytest.approx(lap["average_heartrate"], abs=1)
        if "watts" in s and lap.get("average_watts") is not None:
            assert mean(s["watts"][a + 1 : b + 1]) == pytest.approx(lap["average_watts"], abs=1)
    if "heartrate" in s:
        assert mean(s["heartrate"][1:]) == pytest.approx(activity["average_heartrate"], abs=1)
        assert max(s["heartrate"]) == activity["max_heartrate"]
    if "watts" in s:
        assert mean(s["watts"][1:]) == pytest.approx(activity["average_watts"], abs=1)
        assert max(s["watts"]) == activity["max_watts"] and min(s["watts"]) >= 0
    if "cadence" in s:
        assert mean(s["cadence"][1:]) == pytest.approx(activity["average_cadence"], abs=1)
    if "temp" in s:
        assert mean(s["temp"][1:]) == pytest.approx(activity["average_temp"], abs=1)
    if "distance" not in s:
        assert activity["distance"] == 0 and not activity["splits_metric"], "only time-only sports lack distance"
        return
    d = s["distance"]
    assert d[-1] == activity["distance"] and all(b >= a for a, b in zip(d, d[1:]))
    split_ends, i = [], 0
    splits = activity["splits_metric"]
    for n, split in enumerate(splits):
        j = i + split["moving_time"]
        split_ends.append(j)
        assert t[j] - t[i] == split["elapsed_time"]
        if split["moving_time"]:  # a last sliver with no moving second has no span: the split before covers it
            sliver = sum(later["distance"] for later in takewhile(lambda x: not x["moving_time"], splits[n + 1 :]))
            assert d[j] - d[i] == pytest.approx(split["distance"] + sliver, abs=0.11)
            if "altitude" in s:
                assert s["altitude"][j] - s["altitude"][i] == pytest.approx(split["elevation_difference"], abs=0.11)
            if "heartrate" in s and j - i >= 1:
                assert mean(s["heartrate"][i + 1 : j + 1]) == pytest.approx(split["average_heartrate"], abs=1)
        i = j
    aligned = set(split_ends + [m])
    laps = activity["laps"]
    for n, lap in enumerate(laps):
        a, b = lap["start_index"], lap["end_index"]
        if b > a:  # as for splits: a last lap of no moving second is covered by the lap before
            sliver = sum(later["distance"] for later in takewhile(lambda x: x["end_index"] == b, laps[n + 1 :]))
            assert d[b] - d[a] == pytest.approx(lap["distance"] + sliver, abs=0.11)
        if "altitude" in s and {a, b} <= aligned | {0}:  # laps on split boundaries (metric): the gain exactly,
            # but for the rounding of the splits' elevation differences (0.05 m each) the stream must meet too
            inside = sum(1 for end in split_ends if a < end <= b)
            assert gain(s["altitude"][a : b + 1]) == pytest.approx(lap["total_elevation_gain"], abs=0.05 * inside + 0.1)
    if "altitude" in s:
        assert min(s["altitude"]) == activity["elev_low"]
        if all(lap["end_index"] in aligned for lap in activity["laps"]):
            laps = max(1, len(activity["laps"]))
            assert gain(s["altitude"]) == pytest.approx(activity["total_elevation_gain"], abs=0.06 * laps + 0.1)
    if "velocity_smooth" in s:
        assert max(s["velocity_smooth"]) <= activity["max_speed"]
    for effort in efforts:
        a, b = effort["start_index"], effort["end_index"]
        assert t[b] - t[a] == effort["elapsed_time"], "no stop inside a segment effort"
        assert d[b] - d[a] == pytest.approx(effort["distance"], abs=2.0)
        if "heartrate" in s and effort.get("average_heartrate") is not None:
            assert mean(s["heartrate"][a + 1 : b + 1]) == pytest.approx(effort["average_heartrate"], abs=1)
            assert max(s["heartrate"][a + 1 : b + 1]) == effort["max_heartrate"]
        if "watts" in s and effort.get("average_watts") is not None:
            assert mean(s["watts"][a + 1 : b + 1]) == pytest.approx(effort["average_watts"], abs=1)


def test_a_ride_with_heart_rate_and_power_agrees_with_its_summary_laps_splits_and_efforts(
    sb: Harness, grant: Grant, power_ride: int
) -> None:
    activity = ok(sb.get(grant, f"/activities/{power_ride}", params={"include_all_efforts": "true"}))
    s = streams(sb, grant, f"/activities/{power_ride}/streams")
    assert set(s) == {*ALL_KEYS.split(",")}, "a device ride outdoors has every stream"
    check_agreement(activity, s, activity["segment_efforts"])
    assert s == streams(sb, grant, f"/activities/{power_ride}/streams"), "the same world serves the same samples"


def test_runs_and_other_recordings_agree_too(sb: Harness, grant: Grant) -> None:
    """A run with heart rate, a phone recording (no sensors) and a time-only sport (no distance)."""
    owner = add_athlete(sb, premium=True, measurement_preference="feet")
    mine = sb.connect(athlete_id=owner)
    run = pick(
        sb, "a.sport_type = 'Run' AND json_extract(a.data, '$.has_heartrate') AND a.athlete_id = ?", grant.athlete_id
    )
    phone = record(sb, owner, days_ago=3, sport_type="Ride", distance=25_000, device=False)
    timed = record(sb, owner, days_ago=2, sport_type="WeightTraining")
    for who, activity_id, expected in (
        (grant, run, {"time", "distance", "latlng", "altitude", "velocity_smooth", "heartrate", "cadence", "temp"}),
        (mine, phone, {"time", "distance", "latlng", "altitude", "velocity_smooth"}),
        (mine, timed, {"time"}),
    ):
        activity = ok(sb.get(who, f"/activities/{activity_id}", params={"include_all_efforts": "true"}))
        s = streams(sb, who, f"/activities/{activity_id}/streams")
        assert expected <= set(s) and "watts" not in s, (activity_id, sorted(s))
        assert ("heartrate" in s) == activity["has_heartrate"]
        check_agreement(activity, s, activity["segment_efforts"])


@pytest.fixture(scope="module")
def newcomer(sb: Harness) -> Grant:
    """An athlete of this module's own, for what it adds: the seeded world other modules read stays as it is."""
    return sb.connect(athlete_id=add_athlete(sb, premium=True))


def test_manual_activities_have_no_streams(sb: Harness, newcomer: Grant, flavor: str) -> None:
    grant = newcomer
    created = sb.api(
        grant,
        "POST",
        "/activities",
        data={"name": "Gym", "sport_type": "Run", "start_date_local": "2024-03-01T07:00:00Z", "elapsed_time": "1800"},
    )
    assert created.status_code == 201, created.text
    answer = sb.get(grant, f"/activities/{created.json()['id']}/streams", params={"keys": "time"})
    assert_fault(answer, 404)
    assert answer.json()["message"] == "Resource Not Found"


def test_both_flavours_and_both_forms(sb: Harness, grant: Grant, power_ride: int, flavor: str) -> None:
    """spec: the keys asked for, keyed by type unless key_by_type=false; real: `distance` and `time` come along,
    and without key_by_type the answer is the list (the swagger's example form)."""
    path = f"/activities/{power_ride}/streams"
    extra = {"distance", "time"} if flavor == "real" else set()
    keyed = ok(sb.get(grant, path, params={"keys": "heartrate,watts", "key_by_type": "true"}))
    assert set(keyed) == {"heartrate", "watts"} | extra
    listed = ok(sb.get(grant, path, params={"keys": "heartrate,watts", "key_by_type": "false"}))
    assert isinstance(listed, list) and [x["type"] for x in listed][:2] == ["heartrate", "watts"]
    assert {x["type"] for x in listed} == set(keyed)
    for item in listed:
        assert item["data"] == keyed[item["type"]]["data"] and item["original_size"] == len(item["data"])
    default = ok(sb.get(grant, path, params={"keys": "heartrate"}))
    if flavor == "real":
        assert isinstance(default, list) and {x["type"] for x in default} == {"heartrate", "distance", "time"}
    else:
        assert set(default) == {"heartrate"}


def test_unknown_keys_are_ignored_and_missing_keys_are_400(
    sb: Harness, grant: Grant, power_ride: int, flavor: str
) -> None:
    path = f"/activities/{power_ride}/streams"
    answer = ok(sb.get(grant, path, params={"keys": "bogus,heartrate,watts_calc", "key_by_type": "true"}))
    assert set(answer) == {"heartrate"} | ({"distance", "time"} if flavor == "real" else set())
    only_unknown = ok(sb.get(grant, path, params={"keys": "bogus", "key_by_type": "true"}))
    assert set(only_unknown) == ({"distance", "time"} if flavor == "real" else set())
    missing = assert_fault(sb.get(grant, path, params={"key_by_type": "true"}), 400)
    assert missing["errors"][0]["field"] == "keys" and missing["errors"][0]["code"] == "missing"
    bad = assert_fault(sb.get(grant, path, params={"keys": "time", "key_by_type": "maybe"}), 400)
    assert bad["errors"][0]["field"] == "key_by_type"


def test_effort_streams_are_the_activitys_slice_and_need_read_all(sb: Harness, grant: Grant, power_ride: int) -> None:
    activity = ok(sb.get(grant, f"/activities/{power_ride}"))
    whole = streams(sb, grant, f"/activities/{power_ride}/streams")
    effort = activity["segment_efforts"][0]
    part = streams(sb, grant, f"/segment_efforts/{effort['id']}/streams")
    a, b = effort["start_index"], effort["end_index"]
    assert set(part) == set(whole)
    for kind, data in part.items():
        assert data == whole[kind][a : b + 1], kind
    assert part["time"][-1] - part["time"][0] == effort["elapsed_time"]
    assert part["distance"][-1] - part["distance"][0] == pytest.approx(effort["distance"], abs=2.0)
    no_read_all = sb.connect(scopes=tuple(s for s in ALL_SCOPES if s != "read_all"), athlete_id=grant.athlete_id)
    refused = assert_fault(
        sb.get(no_read_all, f"/segment_efforts/{effort['id']}/streams", params={"keys": "time"}), 401
    )
    assert refused["errors"][0]["field"] == "read_all_permission"


def test_scopes_owners_and_the_privacy_zone(sb: Harness, grant: Grant, cyclist: int, power_ride: int) -> None:
    reader = sb.connect(scopes=("read", "activity:read"), athlete_id=cyclist)
    private = query(sb, "SELECT id FROM activities WHERE athlete_id = ? AND visibility = 'only_me' LIMIT 1", cyclist)
    assert private, "the seeded cyclist has an Only You activity"
    refused = assert_fault(sb.get(reader, f"/activities/{private[0]['id']}/streams", params={"keys": "time"}), 401)
    assert refused["errors"][0]["field"] == "activity:read_all_permission"
    ok(sb.get(grant, f"/activities/{private[0]['id']}/streams", params={"keys": "time"}))
    other = query(sb, "SELECT id FROM activities WHERE athlete_id != ? LIMIT 1", cyclist)[0]["id"]
    assert_fault(sb.get(grant, f"/activities/{other}/streams", params={"keys": "time"}), 403)
    assert_fault(sb.get(grant, "/activities/8999999999/streams", params={"keys": "time"}), 404)
    assert_fault(sb.get(grant, "/segment_efforts/8999999999/streams", params={"keys": "time"}), 404)

    home = query(sb, "SELECT json_extract(data, '$.home') AS home FROM athletes WHERE id = ?", cyclist)[0]["home"]
    full = streams(sb, grant, f"/activities/{power_ride}/streams", keys="latlng,distance,time")
    cut = streams(sb, reader, f"/activities/{power_ride}/streams", keys="latlng,distance,time")
    near = [p for p in full["latlng"] if distance_m(p, home) <= PRIVACY_RADIUS_M]
    assert near, "rides start at home"
    assert len(cut["latlng"]) == len(full["latlng"]) - len(near) == len(cut["time"]) == len(cut["distance"])
    assert all(distance_m(p, home) > PRIVACY_RADIUS_M - 1 for p in cut["latlng"])


def distance_m(p: list[float], home: Any) -> float:
    home = json.loads(home) if isinstance(home, str) else home
    k = math.pi * 6_371_000 / 180
    return math.hypot((p[0] - home["lat"]) * k, (p[1] - home["lng"]) * k * math.cos(math.radians(home["lat"])))


def test_a_streams_request_counts_as_a_read(sb: Harness, cyclist: int, power_ride: int) -> None:
    fresh = sb.connect(athlete_id=cyclist)  # its own app: its own rate budget
    first = sb.get(fresh, f"/activities/{power_ride}/streams", params={"keys": "time"})
    second = sb.get(fresh, f"/activities/{power_ride}/streams", params={"keys": "time"})
    usage = [int(r.headers["X-ReadRateLimit-Usage"].split(",")[0]) for r in (first, second)]
    overall = [int(r.headers["X-RateLimit-Usage"].split(",")[0]) for r in (first, second)]
    assert usage[1] == usage[0] + 1 and overall[1] == overall[0] + 1


def test_a_long_ride_is_served_whole(sb: Harness) -> None:
    """A 4-hour ride's full set, a sample a second (how fast: `bench streams` says, as it fetches its answers)."""
    owner = add_athlete(sb, premium=True)
    ride = record(sb, owner, days_ago=4, sport_type="Ride", moving_time=4 * 3600)
    grant = sb.connect(athlete_id=owner)
    response = sb.get(grant, f"/activities/{ride}/streams", params={"keys": ALL_KEYS, "key_by_type": "true"})
    assert len(ok(response)["time"]["data"]) == 4 * 3600 + 1


# Worlds of the tests' size (seed 7, 4 athletes × 40 activities), anchored 7 h apart from WORLD_ANCHOR, each with an
# activity whose streams once disagreed with its summary: an effort ending on a split boundary started off it (51,
# 154), a last split or lap of no moving second (52, 129), a lap's gain under its splits' rounded rises (56), a lap
# of one second whose highest heart rate was not its average (143), a short lap's mean heart rate off by 1.3 (95).
WORLD_ANCHOR = datetime(2026, 12, 1, 1, 20, tzinfo=UTC)
ONCE_DISAGREED = [(0, 9000000051), (0, 9000000052), (0, 9000000056), (6, 9000000143), (7, 9000000143),
                  (15, 9000000129), (22, 9000000095), (22, 9000000154)]  # fmt: skip


@functools.cache
def world_of(k: int) -> Any:
    conn = store.connect(":memory:")
    world.seed_world(conn, seed=7, athletes=4, activities_per_athlete=40, anchor=WORLD_ANCHOR + timedelta(hours=7 * k))
    return conn


def check_in_process(conn: Any, activity_id: int) -> bool:
    """check_agreement on the world's own figures (no HTTP: the generator itself); False when it has no streams."""
    data = json.loads(conn.execute("SELECT data FROM activities WHERE id = ?", (activity_id,)).fetchone()[0])
    efforts = [json.loads(r[0]) for r in conn.execute("SELECT data FROM efforts WHERE activity_id = ?", (activity_id,))]
    built = world_streams.generate(activity_id, data, efforts)
    if built is None:
        return False
    check_agreement(data, {kind: built.stream(kind) for kind in built.available}, efforts)
    return True


@pytest.mark.parametrize(("k", "activity_id"), ONCE_DISAGREED)
def test_activities_that_once_disagreed_agree(k: int, activity_id: int) -> None:
    assert check_in_process(world_of(k), activity_id)


@pytest.mark.slow
@pytest.mark.parametrize("k", [0, 22])
def test_every_activity_of_a_world_agrees(k: int) -> None:
    conn = world_of(k)
    ids = [r[0] for r in conn.execute("SELECT id FROM activities ORDER BY id")]
    assert sum(check_in_process(conn, i) for i in ids) > 100
