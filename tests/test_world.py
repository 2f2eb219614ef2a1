"""The synthetic world: deterministic, and internally consistent the way the real service's data is."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import polyline
import pytest

from fitsync.sandbox import store, world

ANCHOR = datetime(2026, 3, 29, 9, 30, tzinfo=UTC)  # the morning Europe switched to summer time
TABLES = ("athletes", "gear", "segments", "stars", "activities", "efforts", "meta")


def _seeded(seed: int = 11, athletes: int = 4, per: int = 60) -> store.sqlite3.Connection:
    conn = store.connect(":memory:")
    world.seed_world(conn, seed=seed, athletes=athletes, activities_per_athlete=per, anchor=ANCHOR)
    return conn


def _dump(conn) -> dict[str, list[tuple]]:
    return {t: [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2")] for t in TABLES}


def _rows(conn, sql: str, *args) -> list[dict]:
    out = []
    for r in conn.execute(sql, args):
        row = dict(r)
        if "data" in row:
            row["data"] = json.loads(row["data"])
        out.append(row)
    return out


def _epoch(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())


@pytest.fixture(scope="module")
def db():
    return _seeded()


@pytest.fixture(scope="module")
def activities(db):
    return _rows(db, "SELECT * FROM activities ORDER BY id")


@pytest.fixture(scope="module")
def efforts(db):
    return _rows(db, "SELECT e.*, a.visibility FROM efforts e JOIN activities a ON a.id = e.activity_id ORDER BY e.id")


def test_same_arguments_give_the_same_world():
    assert _dump(_seeded(5, 3, 25)) == _dump(_seeded(5, 3, 25))
    assert _dump(_seeded(5, 3, 25))["activities"] != _dump(_seeded(6, 3, 25))["activities"]


def test_a_full_size_world_is_seeded():
    """Its speed is measured by `fitsync bench demo` (the demo seeds a world), not timed here."""
    conn = store.connect(":memory:")
    world.seed_world(conn, seed=1, athletes=3, activities_per_athlete=300, anchor=ANCHOR)
    assert conn.execute("SELECT COUNT(*) FROM activities").fetchone()[0] == 900


def test_seed_world_refuses_a_filled_db(db):
    with pytest.raises(ValueError):
        world.seed_world(db, seed=1, athletes=1, activities_per_athlete=1, anchor=ANCHOR)


def test_ids_meta_and_counts(db, activities, efforts):
    assert store.get_meta(db, "seed") == "11"
    assert datetime.fromisoformat(store.get_meta(db, "anchor")) == ANCHOR
    assert [r[0] for r in db.execute("SELECT id FROM athletes ORDER BY id")] == list(range(48000001, 48000005))
    assert min(r[0] for r in db.execute("SELECT id FROM segments")) == 2000001
    assert activities[0]["id"] == 9000000001 and len(activities) == 240
    assert efforts and min(e["id"] for e in efforts) == 30000000001
    laps = [lap["id"] for a in activities for lap in a["data"]["laps"]]
    assert min(laps) == 50000000001 and len(set(laps)) == len(laps)


def test_athletes(db):
    athletes = _rows(db, "SELECT * FROM athletes")
    gear = _rows(db, "SELECT * FROM gear")
    for a in athletes:
        d = a["data"]
        assert not {"id", "resource_state", "premium", "bikes", "shoes"} & d.keys()
        assert d["home"]["timezone"] and len(d["hr_zones"]) == 5 and d["hr_zones"][-1]["max"] == -1
        if d["ftp"] is None:
            assert d["ftp_history"] == []
        else:
            assert d["ftp_history"][-1]["ftp"] == d["ftp"]
            assert [h["from"] for h in d["ftp_history"]] == sorted(h["from"] for h in d["ftp_history"])
        for kind in ("bike", "shoe"):
            mine = [g for g in gear if g["athlete_id"] == a["id"] and g["kind"] == kind]
            assert not mine or sum(g["is_primary"] for g in mine) == 1
    assert any(not a["premium"] for a in athletes)
    runner_only = [
        a
        for a in athletes
        if a["data"]["ftp"] is None and not any(g["athlete_id"] == a["id"] and g["kind"] == "bike" for g in gear)
    ]
    assert runner_only
    assert {a["data"]["measurement_preference"] for a in athletes} == {"meters", "feet"}


def test_segments_geometry(db):
    segments = _rows(db, "SELECT * FROM segments")
    assert any(s["private"] and s["owner_id"] for s in segments)
    assert any(s["data"]["hazardous"] for s in segments)
    assert {s["activity_type"] for s in segments} == {"Ride", "Run"}
    for s in segments:
        d = s["data"]
        pts = polyline.decode(d["map"]["polyline"], 5)
        assert list(pts[0]) == d["start_latlng"] and list(pts[-1]) == d["end_latlng"]
        assert (s["start_lat"], s["start_lng"]) == tuple(d["start_latlng"])
        assert d["climb_category"] == s["climb_category"] == world.climb_category(d["distance"], d["average_grade"])
        assert d["maximum_grade"] >= d["average_grade"]
        if d["average_grade"] >= 3:
            rise = d["elevation_high"] - d["elevation_low"]
            assert rise == pytest.approx(d["distance"] * d["average_grade"] / 100, abs=0.5)


def test_times_follow_the_zone_rules(activities):
    anchor = int(ANCHOR.timestamp())
    assert all(a["start_ts"] < anchor for a in activities)
    assert any(anchor - a["start_ts"] < 28 * 86400 for a in activities)
    assert max(anchor - a["start_ts"] for a in activities) > 3 * 365 * 86400
    offsets = set()
    for a in activities:
        d = a["data"]
        tz = d["timezone"].split(" ", 1)[1]
        expected = datetime.fromtimestamp(a["start_ts"], ZoneInfo(tz)).utcoffset().total_seconds()
        assert d["utc_offset"] == expected
        offsets.add(expected)
        assert _epoch(d["start_date"]) == a["start_ts"]
        assert _epoch(d["start_date_local"]) == a["start_ts"] + d["utc_offset"]
        # The label carries the zone's standard offset all year, as the real service's payloads do.
        year = int(d["start_date"][:4])
        standard = min(
            datetime(year, m, 1, tzinfo=ZoneInfo("UTC")).astimezone(ZoneInfo(tz)).utcoffset().total_seconds()
            for m in (1, 7)
        )
        hours, minutes = divmod(int(abs(standard)) // 60, 60)
        assert d["timezone"].startswith(f"(GMT{'-' if standard < 0 else '+'}{hours:02d}:{minutes:02d})")
    assert len(offsets) >= 3  # several zones and DST


def test_parts_add_up(activities):
    kinds = defaultdict(int)
    for a in activities:
        d = a["data"]
        kinds[a["sport_type"]] += 1
        assert a["type"] == d["type"] == world.sport_family(a["sport_type"])
        assert d["elapsed_time"] >= d["moving_time"] > 0 and not d["manual"]
        if d["distance"]:
            assert d["average_speed"] == pytest.approx(d["distance"] / d["moving_time"], abs=1e-3)
            assert sum(s["distance"] for s in d["splits_metric"]) == pytest.approx(d["distance"], abs=0.05)
            assert sum(s["moving_time"] for s in d["splits_metric"]) == d["moving_time"]
            assert sum(s["elapsed_time"] for s in d["splits_metric"]) == d["elapsed_time"]
        laps = d["laps"]
        assert [lap["lap_index"] for lap in laps] == list(range(1, len(laps) + 1))
        assert sum(lap["distance"] for lap in laps) == pytest.approx(d["distance"], abs=0.05)
        assert sum(lap["moving_time"] for lap in laps) == d["moving_time"]
        assert sum(lap["elapsed_time"] for lap in laps) == d["elapsed_time"]
        gain = sum(lap["total_elevation_gain"] for lap in laps)
        assert gain == pytest.approx(d["total_elevation_gain"], abs=0.06 * len(laps))
        assert all(lap["max_speed"] <= d["max_speed"] for lap in laps)
        for zone in d["zones"]:
            buckets = zone["distribution_buckets"]
            assert sum(b["time"] for b in buckets) == d["moving_time"] and buckets[-1]["max"] == -1
        expected = {"heartrate"} if d["has_heartrate"] else set()
        assert {z["type"] for z in d["zones"]} == expected | ({"power"} if d["device_watts"] else set())
        if d["device_watts"]:
            assert d["weighted_average_watts"] >= d["average_watts"] - 1  # rounded to whole watts
            assert d["kilojoules"] == pytest.approx(d["average_watts"] * d["moving_time"] / 1000, abs=0.1)
        if d["map"]["polyline"]:
            for key in ("polyline", "summary_polyline"):
                pts = polyline.decode(d["map"][key], 5)
                assert list(pts[0]) == d["start_latlng"] and list(pts[-1]) == d["end_latlng"]
    assert len(kinds) >= 6


def test_efforts_sit_inside_their_activity(activities, efforts):
    by_id = {a["id"]: a for a in activities}
    per_activity = defaultdict(list)
    for e in efforts:
        a = by_id[e["activity_id"]]
        d = e["data"]
        per_activity[a["id"]].append(e)
        assert a["start_ts"] <= e["start_ts"]
        assert e["start_ts"] + d["elapsed_time"] <= a["start_ts"] + a["data"]["elapsed_time"]
        assert 0 <= d["start_index"] < d["end_index"] <= a["data"]["moving_time"]
        assert e["elapsed_time"] == d["elapsed_time"] and bool(e["hidden"]) == d["hidden"]
        assert _epoch(d["start_date_local"]) == e["start_ts"] + a["data"]["utc_offset"]
    for activity_id, mine in per_activity.items():
        d = by_id[activity_id]["data"]
        assert d["achievement_count"] == sum(len(e["data"]["achievements"]) for e in mine)
        assert d["pr_count"] == sum(e["data"]["pr_rank"] == 1 for e in mine)
        assert all((e["data"]["max_heartrate"] or 0) <= (d["max_heartrate"] or 0) for e in mine)


def test_ranks_match_an_independent_recount(db, efforts):
    hazardous = {s["id"] for s in _rows(db, "SELECT * FROM segments") if s["data"]["hazardous"]}
    seen_pr = seen_kom = 0
    for e in efforts:
        d = e["data"]
        if e["hidden"]:
            assert d["pr_rank"] is None and d["kom_rank"] is None and d["achievements"] == []
            continue
        # What was stored when it was uploaded (an earlier activity id) and started before it.
        earlier = [
            p
            for p in efforts
            if p["segment_id"] == e["segment_id"]
            and not p["hidden"]
            and p["start_ts"] < e["start_ts"]
            and p["activity_id"] < e["activity_id"]
        ]
        mine = [p for p in earlier if p["athlete_id"] == e["athlete_id"]]
        rank = 1 + sum(p["elapsed_time"] <= e["elapsed_time"] for p in mine)
        assert d["pr_rank"] == (rank if rank <= 3 else None)
        best: dict[int, int] = {}
        for p in earlier:
            if p["visibility"] != "only_me":
                best[p["athlete_id"]] = min(best.get(p["athlete_id"], 10**9), p["elapsed_time"])
        kom = None
        on_board = e["visibility"] != "only_me" and e["segment_id"] not in hazardous
        if on_board and best.get(e["athlete_id"], 10**9) > e["elapsed_time"]:
            place = 1 + sum(t <= e["elapsed_time"] for who, t in best.items() if who != e["athlete_id"])
            kom = place if place <= 10 else None
        assert d["kom_rank"] == kom
        seen_pr += d["pr_rank"] is not None
        seen_kom += d["kom_rank"] is not None
    assert seen_pr and seen_kom


def test_a_faster_upload_sets_a_pr():
    conn = _seeded(3, 3, 40)
    athlete = 48000001  # the first athlete always rides
    for seed in range(40):
        aid = world.record_activity(
            conn,
            athlete,
            seed=seed,
            sport_type="Ride",
            distance=60_000,
            moving_time=3000,
            start_date=ANCHOR + timedelta(hours=seed + 1),
            now=ANCHOR + timedelta(days=3),
        )
        mine = _rows(conn, "SELECT * FROM efforts WHERE activity_id = ? AND hidden = 0", aid)
        if mine:
            break
    assert mine
    for e in mine:
        before = conn.execute(
            "SELECT MIN(elapsed_time) FROM efforts"
            " WHERE segment_id = ? AND athlete_id = ? AND start_ts < ? AND hidden = 0",
            (e["segment_id"], athlete, e["start_ts"]),
        ).fetchone()[0]
        assert before is None or e["elapsed_time"] < before
        assert e["data"]["pr_rank"] == 1
        assert {"type_id": 3, "type": "pr", "rank": 1} in e["data"]["achievements"]
    activity = _rows(conn, "SELECT * FROM activities WHERE id = ?", aid)[0]
    assert activity["data"]["moving_time"] == 3000 and activity["data"]["distance"] == pytest.approx(60_000, abs=0.1)


def test_record_activity_defaults_to_a_finished_recent_one():
    conn = _seeded(4, 1, 5)
    now = ANCHOR + timedelta(days=1)
    aid = world.record_activity(conn, 48000001, seed=1, sport_type="Run", now=now)
    a = _rows(conn, "SELECT * FROM activities WHERE id = ?", aid)[0]
    assert a["start_ts"] == int((now - timedelta(hours=1)).timestamp())
    assert a["start_ts"] + a["data"]["elapsed_time"] <= now.timestamp()
    odd = world.record_activity(conn, 48000001, seed=2, sport_type="Padel", now=now, visibility="only_me")
    o = _rows(conn, "SELECT * FROM activities WHERE id = ?", odd)[0]
    assert o["type"] == o["sport_type"] == o["data"]["type"] == "Padel" and o["visibility"] == "only_me"


def test_manual_activity():
    conn = _seeded(4, 1, 5)
    athlete = _rows(conn, "SELECT * FROM athletes")[0]
    tz = ZoneInfo(athlete["data"]["home"]["timezone"])
    local = datetime(2026, 3, 8, 10, 15)
    aid = world.create_manual_activity(
        conn,
        athlete["id"],
        name="Treadmill",
        sport_type="Run",
        type=None,
        start_date_local=local,
        elapsed_time=1800,
        description="easy",
        distance=5000.0,
        trainer=True,
        commute=False,
    )
    a = _rows(conn, "SELECT * FROM activities WHERE id = ?", aid)[0]
    d = a["data"]
    assert a["visibility"] == "everyone" and a["type"] == "Run" and d["manual"] and d["trainer"]
    assert a["start_ts"] == int(local.replace(tzinfo=tz).timestamp())
    assert d["start_date_local"] == "2026-03-08T10:15:00Z"
    assert d["map"]["polyline"] is None and d["laps"] == d["splits_metric"] == d["zones"] == []
    assert not d["has_heartrate"] and d["average_watts"] is None and d["moving_time"] == 1800
    assert conn.execute("SELECT COUNT(*) FROM efforts WHERE activity_id = ?", (aid,)).fetchone()[0] == 0


def test_add_athlete_on_its_own():
    conn = store.connect(":memory:")
    a = world.add_athlete(
        conn, seed=1, firstname="Ana", region="Girona", sex="F", measurement_preference="meters", now=ANCHOR
    )
    b = world.add_athlete(conn, seed=2, region="Girona", premium=False, now=ANCHOR)
    assert (a, b) == (48000001, 48000002)
    data = json.loads(conn.execute("SELECT data FROM athletes WHERE id = ?", (a,)).fetchone()[0])
    assert data["firstname"] == "Ana" and data["home"]["timezone"] == "Europe/Madrid"
    public = conn.execute("SELECT COUNT(*) FROM segments WHERE private = 0").fetchone()[0]
    assert 12 <= public <= 25  # one region's segments, created once
    with pytest.raises(ValueError):
        world.add_athlete(conn, seed=3, region="Atlantis", now=ANCHOR)


def test_tables():
    assert world.climb_category(2680, 5.7) == 1 and world.climb_category(20000, 2.9) == 0
    assert [world.climb_category(d, 5) for d in (1000, 4000, 7000, 13000, 17000)] == [0, 2, 3, 4, 5]
    assert world.CLIMB_CATEGORY_DESC[5] == "HC"
    assert world.sport_family("MountainBikeRide") == "Ride" and world.sport_family("VirtualRide") == "VirtualRide"
    assert world.sport_family("TrailRun") == "Run" and world.sport_family("Kitesurf") == "Kitesurf"
    assert world.sport_family("Tennis") == "Workout" and world.sport_family("Padel") == "Padel"
    assert {"Ride", "Pickleball", "Kitesurf"} <= world.SPORT_TYPES and "Padel" not in world.SPORT_TYPES
    assert {"Ride", "Run", "Workout"} <= world.LEGACY_TYPES and "GravelRide" not in world.LEGACY_TYPES
    zones = world.power_zones(200)
    assert [z["min"] for z in zones] == [0, 110, 150, 180, 210, 240, 300] and zones[-1]["max"] == -1
    assert world.power_zones(None) == []


def test_no_stream_speed_above_its_laps_max_speed():
    """Boundaries a few metres and one rounded second apart once made 15.2 m/s in a lap whose max_speed was 13.5."""
    from fitsync.sandbox import world_streams

    conn = store.connect(":memory:")
    world.seed_world(
        conn, seed=7, athletes=4, activities_per_athlete=40, anchor=datetime(2026, 12, 1, 1, 20, tzinfo=UTC)
    )
    checked = 0
    for row in _rows(conn, "SELECT id, data FROM activities ORDER BY id"):
        efforts = [
            json.loads(r["data"]) for r in conn.execute("SELECT data FROM efforts WHERE activity_id = ?", (row["id"],))
        ]
        built = world_streams.generate(row["id"], row["data"], efforts)
        if built is None or "velocity_smooth" not in built.available:
            continue
        v = built.stream("velocity_smooth")
        assert max(v) <= row["data"]["max_speed"], row["id"]
        for lap in row["data"]["laps"]:
            assert max(v[lap["start_index"] + 1 : lap["end_index"] + 1], default=0.0) <= lap["max_speed"], row["id"]
        checked += 1
    assert checked > 100


def test_the_figures_the_service_derives_agree_with_its_streams(activities, efforts):
    """Normalized power and the seconds in each zone are read off the streams the sandbox serves (as the real service
    reads them off the recording): computed here independently, with Polars."""
    import polars as pl

    from fitsync.sandbox import world_streams

    by_activity = defaultdict(list)
    for e in efforts:
        by_activity[e["activity_id"]].append(e["data"])
    powered = zoned = 0
    for a in activities:
        d = a["data"]
        built = world_streams.generate(a["id"], d, by_activity[a["id"]])
        if built is None:
            continue
        if "watts" in built.available and built.size >= 30:
            rolling = pl.Series(built.stream("watts"), dtype=pl.Float64).rolling_mean(30).drop_nulls()
            assert d["weighted_average_watts"] == round(float((rolling**4).mean()) ** 0.25), a["id"]
            powered += 1
        for zone in d["zones"]:
            values = built.stream({"heartrate": "heartrate", "power": "watts"}[zone["type"]])[1:]
            for b in zone["distribution_buckets"]:
                inside = sum(1 for v in values if v >= b["min"] and (b["max"] == -1 or v < b["max"]))
                assert b["time"] == inside, (a["id"], zone["type"], b)
            zoned += 1
    assert powered > 10 and zoned > 50
