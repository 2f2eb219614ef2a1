"""End to end against the sandbox: a sync makes the warehouse equal to what the service shows, incrementals follow
adds, renames, retypes, visibility changes, deletes and late uploads, with the minimum of API calls; 402 and 404
are handled; readers are never refused while the loader writes."""

from __future__ import annotations

import datetime as dt
import math
import re
import threading
from typing import Any

import duckdb
import pytest

from fitsync.client import athlete_zones
from fitsync.warehouse import db
from fitsync.warehouse import streams as stored_streams

from ..sandbox_harness import Grant, Harness
from .conftest import Connect, Home, Recorder, add_athlete, change, delete, duplicate_keys, record, record_many

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow

READ_ONLY_SCOPES = ("read", "profile:read_all", "activity:read")


def listing(sb: Harness, grant: Grant) -> list[dict[str, Any]]:
    out, page = [], 1
    while True:
        batch = sb.get(grant, "/athlete/activities", params={"per_page": 200, "page": page}).json()
        out += batch
        if len(batch) < 200:
            return out
        page += 1


def api_ok(sb: Harness, grant: Grant, path: str, **params: Any) -> Any:
    response = sb.get(grant, path, params=params)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def wall_clock(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.rstrip("Z"))


def warehouse_ids(home: Home) -> set[int]:
    return {r[0] for r in home.query("SELECT activity_id FROM activities WHERE athlete_id = ?", home.athlete_id)}


def api_calls(outcome: Any, asset: str) -> int:
    return int(outcome.metadata[asset]["api_calls"])


# --- 1. the warehouse equals the sandbox -------------------------------------------------------------------------


def test_warehouse_equals_the_service_after_a_sync(sb: Harness, connect: Connect, flavor: str) -> None:
    aid = add_athlete(sb, premium=True)
    ids = record_many(sb, aid, 10, oldest_days=40, only_me_every=4)
    home = connect(aid)
    home.sync()
    grant = home.grant()

    listed = listing(sb, grant)
    only_me = {a["id"] for a in listed if a["visibility"] == "only_me"}
    assert len(only_me) == 2 and {a["id"] for a in listed} == set(ids)
    assert warehouse_ids(home) == set(ids)  # Only You ones too: the grant has activity:read_all

    with home.reading():  # one connection for the many reads below
        segment_ids: set[int] = set()
        for activity_id in ids:
            detail = api_ok(sb, grant, f"/activities/{activity_id}", include_all_efforts="true")
            zones = api_ok(sb, grant, f"/activities/{activity_id}/zones")
            counts = home.query(
                "SELECT (SELECT count(*) FROM splits_metric WHERE activity_id = $1), "
                "(SELECT count(*) FROM laps WHERE activity_id = $1), "
                "(SELECT count(*) FROM segment_efforts WHERE activity_id = $1)",
                activity_id,
            )[0]
            assert counts == (
                len(detail.get("splits_metric") or []),
                len(detail.get("laps") or []),
                len(detail.get("segment_efforts") or []),
            ), activity_id
            assert {
                r[0] for r in home.query("SELECT effort_id FROM segment_efforts WHERE activity_id = ?", activity_id)
            } == {e["id"] for e in detail.get("segment_efforts") or []}
            assert {r[0] for r in home.query("SELECT lap_id FROM laps WHERE activity_id = ?", activity_id)} == {
                lap["id"] for lap in detail.get("laps") or []
            }
            expected_buckets = sorted(
                (z["type"], i, float(b["min"]), float(b["max"]), b["time"])
                for z in zones
                for i, b in enumerate(z["distribution_buckets"], start=1)
            )
            assert (
                home.query(
                    "SELECT zone_type, bucket_index, min, max, seconds FROM activity_zone_buckets "
                    "WHERE activity_id = ? ORDER BY ALL",
                    activity_id,
                )
                == expected_buckets
            )
            assert sorted(
                r[0] for r in home.query("SELECT zone_type FROM activity_zones WHERE activity_id = ?", activity_id)
            ) == sorted(z["type"] for z in zones)
            segment_ids |= {e["segment"]["id"] for e in detail.get("segment_efforts") or []}

            # field by field (every activity: the world is small)
            row = home.query(
                "SELECT name, sport_type, type, distance, moving_time, elapsed_time, start_date, "
                "start_date_local, timezone, utc_offset, private, visibility, gear_id, description, "
                "detail_fetched_at IS NOT NULL FROM activities WHERE activity_id = ?",
                activity_id,
            )[0]
            (
                name,
                sport,
                kind,
                distance,
                moving,
                elapsed,
                start,
                start_local,
                tz,
                offset,
                private,
                visibility,
                gear,
                description,
                detailed,
            ) = row
            assert (name, sport, kind, moving, elapsed) == (
                detail["name"],
                detail["sport_type"],
                detail["type"],
                detail["moving_time"],
                detail["elapsed_time"],
            )
            assert distance == pytest.approx(detail["distance"])
            assert start == instant(detail["start_date"])  # an instant: equal whatever zone DuckDB shows it in
            assert start_local == wall_clock(detail["start_date_local"]) and start_local.tzinfo is None
            assert tz == re.sub(r"^\(GMT[^)]*\)\s*", "", detail["timezone"]) and offset == detail["utc_offset"]
            # the wall clock is the instant seen in the activity's zone, not a relabelled UTC time
            assert start_local == (start + dt.timedelta(seconds=offset)).replace(tzinfo=None)
            assert (private, visibility) == (detail["private"], detail["visibility"])
            assert (private, visibility) == ((True, "only_me") if activity_id in only_me else (False, "everyone"))
            assert gear == detail.get("gear_id") and description == detail.get("description") and detailed

        profile = api_ok(sb, grant, "/athlete")
        assert home.query("SELECT athlete_id, firstname, lastname, premium, weight FROM athletes") == [
            (aid, profile["firstname"], profile["lastname"], profile["premium"], profile.get("weight"))
        ]
        gear = [(g["id"], kind) for kind in ("bike", "shoe") for g in profile.get(kind + "s") or []]
        assert gear and home.query("SELECT gear_id, kind FROM gear WHERE athlete_id = ? ORDER BY ALL", aid) == sorted(
            gear
        )

        stats = api_ok(sb, grant, f"/athletes/{aid}/stats")
        today = dt.datetime.now(dt.UTC).date()
        snapshot = home.query(
            "SELECT snapshot_date, biggest_ride_distance FROM athlete_stats WHERE athlete_id = ?", aid
        )
        assert len(snapshot) == 1 and snapshot[0][0] in (today, today - dt.timedelta(days=1))
        assert snapshot[0][1] == pytest.approx(stats["biggest_ride_distance"])
        totals = {(p, s): stats[f"{p}_{s}_totals"] for p in ("recent", "ytd", "all") for s in ("ride", "run", "swim")}
        rows = home.query(
            "SELECT period, sport, count, distance, moving_time FROM athlete_stats_totals WHERE athlete_id = ?", aid
        )
        assert {(p, s): (c, pytest.approx(d), m) for p, s, c, d, m in rows} == {
            k: (t["count"], pytest.approx(t["distance"]), t["moving_time"]) for k, t in totals.items()
        }

        # the spec's array (bounds and time in zone) or the real object (bounds only): the same rows, the shape recorded
        zones = athlete_zones.read(api_ok(sb, grant, "/athlete/zones"))
        assert zones.shape == {"spec": "array", "real": "object"}[flavor] and not zones.problems
        assert "heartrate" in {z["type"] for z in zones.zones}
        assert home.query(
            "SELECT zone_type, bucket_index, min, max, seconds, shape FROM athlete_zones WHERE athlete_id = ? ORDER BY ALL",
            aid,
        ) == sorted(
            (z["type"], i, float(b["min"]), float(b["max"]), b.get("time"), zones.shape)
            for z in zones.zones
            for i, b in enumerate(z["distribution_buckets"], start=1)
        )
        assert home.query("SELECT count(*) FROM unrecognized_payloads") == [(0,)]
        assert home.state("SELECT endpoint, problem FROM shape_reports") == []  # every field of the answers is known

        starred = api_ok(sb, grant, "/segments/starred", per_page=200)
        assert starred, "a new athlete stars some segments"
        assert {r[0] for r in home.query("SELECT segment_id FROM starred_segments WHERE athlete_id = ?", aid)} == {
            s["id"] for s in starred
        }
        segment_ids |= {s["id"] for s in starred}
        stored = {r[0]: r[1:] for r in home.query("SELECT segment_id, name, distance, resource_state FROM segments")}
        assert segment_ids <= set(stored)
        for segment_id in sorted(segment_ids):
            response = sb.get(grant, f"/segments/{segment_id}")
            if response.status_code == 200:  # fetched in detail once: the detailed representation is kept
                body = response.json()
                assert stored[segment_id] == (body["name"], pytest.approx(body["distance"]), body["resource_state"])
        assert not any(duplicate_keys(home.warehouse).values())
        assert home.query("SELECT count(*) FROM deleted_activities") == [(0,)]


# --- 2. incremental syncs follow the athlete's changes -----------------------------------------------------------


def test_incremental_follows_adds_renames_retypes_visibility_and_late_uploads(
    sb: Harness, connect: Connect, e2e_flavor: str, recorder: Recorder
) -> None:
    aid = add_athlete(sb)
    old = record_many(sb, aid, 4, oldest_days=60)  # > 14 days before the newest: outside the overlap
    recent = [record(sb, aid, days_ago=d, sport_type="Ride") for d in (3.0, 2.0, 1.0)]
    home = connect(aid)
    home.sync()
    assert home.outcomes[-1].metadata["activities"]["mode"] == "full reconciliation"
    newest_start = max(r[0] for r in home.query("SELECT start_date FROM activities"))

    renamed, retyped, hidden = recent
    change(sb, renamed, name="Renamed after the ride")
    after = change(sb, retyped, sport_type="Run")
    assert after["type"] == "Run"
    change(sb, hidden, visibility="only_me")
    added = [record(sb, aid, sport_type="Run"), record(sb, aid, sport_type="Swim")]
    late = record(sb, aid, days_ago=5, name="Uploaded late")
    grant = home.grant()
    # a plain `after=<newest start seen>` would miss the late upload: only the overlap window finds it
    plain = sb.get(grant, "/athlete/activities", params={"after": int(newest_start.timestamp()), "per_page": 200})
    assert late not in {a["id"] for a in plain.json()}

    recorder.clear()
    outcome = home.sync()
    meta = outcome.metadata
    assert meta["activities"]["mode"] == "incremental"
    assert (meta["activities"]["new"], meta["activities"]["changed"]) == (3, 3)
    [listing_call] = recorder.listings()
    assert int(listing_call.params["after"]) <= int(newest_start.timestamp()) - 14 * 86400
    assert sorted(recorder.details()) == sorted(f"/activities/{i}" for i in [renamed, retyped, hidden, *added, late])
    assert sorted(recorder.zones()) == sorted(f"/activities/{i}/zones" for i in home.with_zones([*added, late]))

    assert warehouse_ids(home) == {a["id"] for a in listing(sb, grant)} == {*old, *recent, *added, late}
    rows = {
        r[0]: r[1:]
        for r in home.query(
            "SELECT activity_id, name, sport_type, type, visibility, private, d.raw->>'$.name', "
            "d.raw->>'$.sport_type' FROM activities LEFT JOIN activity_documents d USING (activity_id)"
        )
    }
    assert rows[renamed][0] == rows[renamed][5] == "Renamed after the ride"
    assert rows[retyped][1:3] == ("Run", "Run") and rows[retyped][6] == "Run"
    assert rows[hidden][3:5] == ("only_me", True)
    assert rows[late][0] == "Uploaded late"
    for activity_id in (*added, late):
        detail = api_ok(sb, grant, f"/activities/{activity_id}", include_all_efforts="true")
        assert home.query("SELECT count(*) FROM laps WHERE activity_id = ?", activity_id) == [(len(detail["laps"]),)]
        assert home.query("SELECT count(*) FROM activity_zones WHERE activity_id = ?", activity_id) == [
            (len(api_ok(sb, grant, f"/activities/{activity_id}/zones")),)
        ]
    # the retyped activity's children were replaced by the new detail's, not added to
    detail = api_ok(sb, grant, f"/activities/{retyped}", include_all_efforts="true")
    assert home.query("SELECT count(*) FROM splits_metric WHERE activity_id = ?", retyped) == [
        (len(detail["splits_metric"]),)
    ]

    # and back to Everyone
    change(sb, hidden, visibility="everyone")
    home.sync()
    assert home.query("SELECT visibility, private FROM activities WHERE activity_id = ?", hidden) == [
        ("everyone", False)
    ]
    assert not any(duplicate_keys(home.warehouse).values())


def test_full_reconciliation_finds_old_renames_and_deletions_no_webhook_announced(
    sb: Harness, connect: Connect, e2e_flavor: str, recorder: Recorder
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 6, oldest_days=90)
    newest = record(sb, aid, days_ago=0.5)
    home = connect(aid)
    home.sync()
    gone, renamed = ids[0], ids[1]  # both long before the overlap window of an incremental listing
    laps = home.query("SELECT count(*) FROM laps WHERE activity_id = ?", gone)[0][0]
    assert laps > 0
    delete(sb, gone)
    change(sb, renamed, name="Renamed months later")

    home.sync()  # incremental: lists only the overlap window, so it cannot know yet
    recorder.clear()
    outcome = home.sync(full=True)
    assert outcome.metadata["activities"]["mode"] == "full reconciliation"
    assert outcome.metadata["activities"]["reconciled_deletions"] == 1
    # the one missing asked for by id (the proof it is gone: 404), the renamed one re-pulled
    assert recorder.details() == [f"/activities/{gone}", f"/activities/{renamed}"] and recorder.zones() == []
    assert warehouse_ids(home) == {*ids[1:], newest}
    for table in ("laps", "splits_metric", "segment_efforts", "activity_zones", "activity_zone_buckets"):
        assert home.query(f"SELECT count(*) FROM {table} WHERE activity_id = ?", gone) == [(0,)], table
    [(reason, summary_id, when)] = home.query(
        "SELECT reason, last_summary_raw->>'$.id', deleted_at FROM deleted_activities WHERE activity_id = ?", gone
    )
    assert reason == "missing in reconciliation, confirmed: the service answers 404" and int(summary_id) == gone
    assert abs((dt.datetime.now(dt.UTC) - when).total_seconds()) < 120
    assert home.query("SELECT name FROM activities WHERE activity_id = ?", renamed) == [("Renamed months later",)]

    home.sync(full=True)  # nothing changed: nothing deleted twice, nothing re-fetched
    assert home.query("SELECT count(*) FROM deleted_activities") == [(1,)]
    assert home.outcomes[-1].metadata["activity_details"]["api_calls"] == 0


def test_only_you_activity_leaves_a_read_only_grant_on_full_reconciliation(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=10)
    home = connect(aid, scopes=READ_ONLY_SCOPES)
    home.sync()
    assert warehouse_ids(home) == set(ids)
    # one with heart rate, so its zones can come back (4 % of the sandbox's device recordings have none)
    hidden = next(a["id"] for a in listing(sb, home.grant()) if a["has_heartrate"])
    change(sb, hidden, visibility="only_me")

    home.sync(full=True)
    assert warehouse_ids(home) == set(ids) - {hidden} == {a["id"] for a in listing(sb, home.grant())}
    assert home.query("SELECT count(*) FROM laps WHERE activity_id = ?", hidden) == [(0,)]
    assert home.query("SELECT reason FROM deleted_activities WHERE activity_id = ?", hidden) == [
        ("missing in reconciliation, confirmed: made Only You (this grant may not see it)",)
    ]
    # the tombstone keeps what an activity deleted by mistake is rebuilt from: its detail and its zones
    [(laps, zones)] = home.query(
        "SELECT json_array_length(last_detail_raw->'$.laps'), json_array_length(last_zones_raw) "
        "FROM deleted_activities WHERE activity_id = ?",
        hidden,
    )
    assert laps > 0 and zones > 0

    change(sb, hidden, visibility="everyone")  # back: an incremental finds it again (inside the overlap)
    outcome = home.sync()
    assert outcome.metadata["activities"]["new"] == 1
    assert warehouse_ids(home) == set(ids)
    assert home.query(
        "SELECT detail_fetched_at IS NOT NULL, visibility FROM activities WHERE activity_id = ?", hidden
    ) == [(True, "everyone")]
    assert home.query("SELECT count(*) FROM activity_zones WHERE activity_id = ?", hidden)[0][0] > 0
    assert home.query("SELECT count(*) FROM deleted_activities WHERE restored_at IS NULL") == [(0,)], "back"
    assert home.query("SELECT count(*) FROM deleted_activities WHERE restored_at IS NOT NULL") == [(1,)], "audited"


# --- 3. API calls: the minimum ----------------------------------------------------------------------------------


def _assert_minimal_backfill(sb: Harness, home: Home, recorder: Recorder, ids: list[int]) -> None:
    n = len(ids)
    outcome = home.sync()
    assert api_calls(outcome, "activities") == math.ceil(n / 200) == len(recorder.listings())
    zoned = home.with_zones(ids)  # heart rate or a power meter: a zones call for nothing else
    assert api_calls(outcome, "activity_details") + api_calls(outcome, "activity_zones") == n + len(zoned)
    assert sorted(recorder.details()) == sorted(f"/activities/{i}" for i in ids)
    assert sorted(recorder.zones()) == sorted(f"/activities/{i}/zones" for i in zoned)
    # newest first, each activity's zones right after its detail: the newest are complete first
    order = [s.path for s in recorder.sent if s.path.startswith("/activities/")]
    starts = dict(home.query("SELECT activity_id, start_date FROM activities"))
    assert [p for p in order if not p.endswith(("/zones", "/streams"))] == [
        f"/activities/{i}" for i in sorted(ids, key=lambda i: (starts[i], i), reverse=True)
    ]
    assert all(order[order.index(f"/activities/{i}") + 1] == f"/activities/{i}/zones" for i in zoned)
    # then the streams of the recent recordings (streams = recent, the default), once each, after every detail
    recent = home.query(
        f"SELECT activity_id FROM activities a WHERE {stored_streams.WANTED} AND start_date >= now() - INTERVAL 90 DAY "
        "ORDER BY start_date DESC, activity_id DESC"
    )
    streamed = [p for p in order if p.endswith("/streams")]
    assert streamed == [f"/activities/{i}/streams" for (i,) in recent] == order[len(order) - len(streamed) :]
    assert all(s.params.get("include_all_efforts") == "true" for s in recorder.sent if s.path in recorder.details())
    # nothing else per activity (no laps or per-effort calls), and every other call once per object
    allowed = re.compile(
        r"^/(athlete|athlete/zones|athlete/activities|athletes/\d+/stats|activities/\d+(/zones|/streams)?|"
        r"segments/starred|segments/\d+|segment_efforts)$"
    )
    assert [p for p in recorder.paths() if not allowed.match(p)] == []
    once = [p for p in recorder.paths() if p not in ("/athlete/activities", "/segment_efforts")]
    assert len(once) == len(set(once))
    assert outcome.api_calls() == len(recorder.sent)  # the metadata counts every call made


@pytest.mark.sqlite_only  # the state store is incidental: the calls and rows of a sync
def test_backfill_costs_listing_pages_plus_one_detail_and_one_zones_call_each(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 12, oldest_days=30)
    phone = record(sb, aid, days_ago=3, sport_type="Ride", device=False)  # no heart rate, no power: no zones
    home = connect(aid, streams="recent")
    _assert_minimal_backfill(sb, home, recorder, [*ids, phone])
    assert phone not in home.with_zones() and f"/activities/{phone}/zones" not in recorder.zones()
    assert home.needing("zones") == 0

    added = [
        record(sb, aid, sport_type="Run"),
        record(sb, aid, sport_type="Ride", device=False),
        record(sb, aid, sport_type="Run", device=False),
    ]  # the last: pace zones only (a run with GPS)
    recorder.clear()
    outcome = home.sync()
    assert [api_calls(outcome, a) for a in ("activities", "activity_details", "activity_zones")] == [
        1,
        3 + len(home.with_zones(added)),
        0,
    ]
    assert sorted(recorder.details()) == sorted(f"/activities/{i}" for i in added)
    assert f"/activities/{added[1]}/zones" not in recorder.zones()
    assert f"/activities/{added[2]}/zones" in recorder.zones()

    recorder.clear()
    outcome = home.sync()
    assert [api_calls(outcome, a) for a in ("activities", "activity_details", "activity_zones")] == [1, 0, 0]
    assert recorder.details() == recorder.zones() == [] and len(recorder.listings()) == 1
    assert api_calls(outcome, "segments") == 0  # every segment already fetched once


@pytest.mark.sqlite_only  # the state store is incidental: the calls and rows of a sync
def test_a_sync_with_nothing_new_costs_the_profile_and_one_listing_page(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """Stats, athlete zones, starred segments and effort histories are refreshed on their own cadence
    (slow_refresh_hours), not by every sync; `--full` and a lapsed cadence refresh them."""
    aid = add_athlete(sb)
    record_many(sb, aid, 4, oldest_days=20)
    home = connect(aid, slow_refresh_hours=20)
    home.sync()
    slow = {f"/athletes/{aid}/stats", "/athlete/zones", "/segments/starred"}
    assert slow <= set(recorder.paths())

    recorder.clear()
    outcome = home.sync()
    assert sorted(recorder.paths()) == ["/athlete", "/athlete/activities"] and outcome.api_calls() == 2
    for asset in ("athlete_stats", "athlete_zones", "starred_segments", "segment_effort_history"):
        assert re.search(r"not due: refreshed \d+ min ago, every 20 h", str(outcome.metadata[asset]["notes"])), asset

    recorder.clear()
    home.sync(full=True)  # asked for: everything, whatever the cadence
    assert slow <= set(recorder.paths())

    with home.store.transaction() as conn:  # 21 hours later
        conn.execute("UPDATE sync_cursors SET value = CAST(value AS REAL) - 21 * 3600 WHERE name LIKE 'refreshed_at:%'")
    recorder.clear()
    home.sync()
    assert slow <= set(recorder.paths())


@pytest.mark.sqlite_only  # the state store is incidental: the calls and rows of a sync
def test_backfill_of_two_listing_pages(sb: Harness, connect: Connect, recorder: Recorder) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 201, oldest_days=400)
    _assert_minimal_backfill(sb, connect(aid, streams="recent"), recorder, ids)


# --- 6. 402 and 404 ---------------------------------------------------------------------------------------------


def list_only(home: Home) -> None:
    """Run just the listing asset: the activities are known and queued for their detail, nothing more."""
    home.materialize(["activities"])
    assert home.needing("detail") > 0


def activity_zone_calls(recorder: Recorder) -> list[int]:
    return [s.status for s in recorder.sent if s.path.endswith("/zones") and s.path != "/athlete/zones"]


@pytest.mark.sqlite_only  # the state store is incidental: the calls and rows of a sync
def test_non_subscriber_skips_zones_and_effort_histories_with_a_note(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    aid = add_athlete(sb, premium=False)
    ids = record_many(sb, aid, 4, oldest_days=20)
    home = connect(aid)
    outcome = home.sync()  # succeeds, without spending a call on what the profile says it may not have
    zones, history = outcome.metadata["activity_zones"], outcome.metadata["segment_effort_history"]
    assert "premium false" in str(zones["notes"]) and zones["fetched"] == 0 and zones["api_calls"] == 0
    zoned = home.with_zones()
    assert zones["remaining"] == len(zoned) > 0  # still queued for when the athlete subscribes
    assert "premium false" in str(history["notes"]) and history["skipped"] is True and history["api_calls"] == 0
    assert activity_zone_calls(recorder) == [] and not [s for s in recorder.sent if s.path == "/segment_efforts"]
    assert warehouse_ids(home) == set(ids)
    assert home.query("SELECT count(*) FROM activities WHERE detail_fetched_at IS NULL") == [(0,)]
    assert home.query("SELECT count(*) FROM activity_zones") == [(0,)]
    assert outcome.metadata["warehouse"]["activities_total"] == 4

    # the athlete subscribes: the next sync reads it from the profile and fetches the queued zones, once each
    sb.console.put(f"/athletes/{aid}/premium", json={"premium": True}).raise_for_status()
    recorder.clear()
    outcome = home.sync()
    assert outcome.metadata["activity_zones"]["fetched"] == len(zoned)
    assert outcome.metadata["activity_zones"]["remaining"] == 0
    assert activity_zone_calls(recorder) == [200] * len(zoned)
    grant = home.grant()  # what the service has: an activity without heart rate or power has no zones
    with_zones = {i for i in ids if api_ok(sb, grant, f"/activities/{i}/zones")}
    assert {r[0] for r in home.query("SELECT DISTINCT activity_id FROM activity_zones")} == with_zones


def test_a_402_despite_the_profile_is_a_skip_that_is_remembered(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """Runs without the profile (webhook re-pulls) learn from one 402 and spend no more calls until the next
    profile says the athlete subscribes."""
    aid = add_athlete(sb, premium=False)
    record_many(sb, aid, 3, oldest_days=5)
    home = connect(aid)
    list_only(home)  # no profile fetched yet: the subscription is unknown, so zones are tried
    zones = home.materialize(["activity_zones"])
    assert "402" in str(zones["activity_zones"]["notes"]) and zones["activity_zones"]["api_calls"] == 1
    again = home.materialize(["activity_zones"])
    assert "premium false" in str(again["activity_zones"]["notes"]) and again["activity_zones"]["api_calls"] == 0
    assert activity_zone_calls(recorder) == [402]


def test_activity_deleted_between_listing_and_detail_is_audited_and_the_run_succeeds(
    sb: Harness, connect: Connect
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=20)
    home = connect(aid)
    list_only(home)
    gone = ids[1]
    delete(sb, gone)

    outcome = home.sync()
    details = outcome.metadata["activity_details"]
    assert (details["fetched"], details["not_found"], details["remaining"]) == (4, 1, 0)
    zones = outcome.metadata["activity_details"]["zones_fetched"] + outcome.metadata["activity_zones"]["fetched"]
    assert zones == len(home.with_zones())
    assert warehouse_ids(home) == set(ids) - {gone}
    assert home.query("SELECT reason FROM deleted_activities WHERE activity_id = ?", gone) == [("not found",)]
    assert home.needing("detail") == home.needing("zones") == 0
    assert home.state("SELECT count(*) FROM known_activities WHERE activity_id = ?", gone) == [(0,)]


def test_activity_made_only_you_before_its_detail_leaves_a_read_only_grant(sb: Harness, connect: Connect) -> None:
    """A read-only grant may not read an Only You activity: that one goes (audited), the others still come."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=20)
    home = connect(aid, scopes=READ_ONLY_SCOPES)
    list_only(home)
    hidden = ids[0]  # the oldest: last in the detail queue
    change(sb, hidden, visibility="only_me")

    outcome = home.sync()
    assert outcome.metadata["activity_details"]["remaining"] == 0
    assert warehouse_ids(home) == set(ids) - {hidden}
    assert home.query("SELECT count(*) FROM activities WHERE detail_fetched_at IS NULL") == [(0,)]
    assert home.query("SELECT count(*) FROM deleted_activities WHERE activity_id = ?", hidden) == [(1,)]
    assert home.needing("detail") == home.needing("zones") == 0


# --- 7. reads during a write -----------------------------------------------------------------------------------

READER = """
import sys, time
from fitsync.client import athlete_zones
from fitsync.warehouse import db
path, stop = sys.argv[1], sys.argv[2]
import os
reads = errors = 0
while not os.path.exists(stop):
    try:
        with db.reading(path) as conn:
            conn.execute("SELECT count(*) FROM activities").fetchall()
        reads += 1
    except Exception as error:
        errors += 1
        print(repr(error), file=sys.stderr)
print(reads, errors)
"""


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse file
def test_reads_while_the_loader_writes_never_fail(sb: Harness, connect: Connect, tmp_path: Any) -> None:
    """Readers in this process (a thread) and in another one query in a loop while a sync loads; every read
    succeeds and sees whole batches only (a lap never without its activity)."""
    import subprocess
    import sys

    from .conftest import REPO, subprocess_env

    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=30)
    home = connect(aid)
    home.sync()  # the warehouse exists
    ids = record_many(sb, aid, 30, oldest_days=20)
    stop = threading.Event()
    reads: list[int] = []
    errors: list[str] = []
    orphans: list[int] = []

    def read_loop() -> None:
        while not stop.is_set():
            try:
                with db.reading(home.warehouse) as conn:
                    orphans.append(
                        conn.execute(
                            "SELECT count(*) FROM laps l WHERE NOT EXISTS (SELECT 1 FROM activities a "
                            "WHERE a.activity_id = l.activity_id)"
                        ).fetchone()[0]
                    )
                    reads.append(conn.execute("SELECT count(*) FROM activities").fetchone()[0])
            except Exception as error:  # noqa: BLE001 - any failure is what this test looks for
                errors.append(repr(error))

    stop_file = tmp_path / "stop-reading"
    other = subprocess.Popen(
        [sys.executable, "-c", READER, str(home.warehouse), str(stop_file)],
        cwd=REPO,
        env=subprocess_env(home.config.home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    reader = threading.Thread(target=read_loop, daemon=True)
    reader.start()
    try:
        outcome = home.sync(check=False)
    finally:
        stop.set()
        stop_file.touch()
        reader.join(timeout=60)
        out, err = other.communicate(timeout=60)
    assert outcome.success, outcome.metadata
    assert errors == [] and reads and set(orphans) == {0}, errors[:3]
    other_reads, other_errors = map(int, out.decode().split())
    assert other_errors == 0 and other_reads > 0, err.decode()[-2000:]
    assert reads[-1] in (2 + len(ids), 2)  # the thread saw the new rows once they were committed, or not yet
    assert warehouse_ids(home) >= set(ids)


@pytest.mark.sqlite_only  # the state store is incidental: the calls and rows of a sync
def test_a_run_without_a_strap_gets_its_pace_zones_on_both_flavours(
    sb: Harness, connect: Connect, flavor: str, recorder: Recorder
) -> None:
    """The real service answers pace zones for a run with GPS: a run recorded on a phone has only those. fitsync asks
    for them and for nothing that cannot have zones (a ride without sensors); the spec's sandbox answers none."""
    aid = add_athlete(sb)
    run = record(sb, aid, days_ago=2, sport_type="Run", device=False)
    ride = record(sb, aid, days_ago=1, sport_type="Ride", device=False)
    home = connect(aid)
    home.sync()
    asked = [p for p in recorder.zones() if p.split("/")[2] in (str(run), str(ride))]
    assert asked == [f"/activities/{run}/zones"], "one zones call: the run's"
    buckets = home.query(
        "SELECT zone_type, count(*), sum(seconds) FROM activity_zone_buckets WHERE activity_id = ? GROUP BY ALL", run
    )
    [(moving,)] = home.query("SELECT moving_time FROM activities WHERE activity_id = ?", run)
    assert buckets == ([("pace", 6, moving)] if flavor == "real" else [])
    assert home.query("SELECT count(*) FROM activity_zones WHERE activity_id = ?", ride) == [(0,)]


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse file
def test_a_warehouse_moved_aside_is_rebuilt_by_the_next_sync(sb: Harness, connect: Connect) -> None:
    """`fitsync doctor` says to move a damaged warehouse aside and sync: the state still says every detail was
    fetched, so the sync must fetch them again rather than rebuild summaries only."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=10)
    home = connect(aid)
    home.sync()
    full = home.query("SELECT count(*) FILTER (detail_loaded), (SELECT count(*) FROM laps) FROM activities")
    home.warehouse.rename(home.warehouse.with_name("warehouse.duckdb.damaged"))
    outcome = home.sync()
    assert outcome.metadata["activities"]["mode"] == "full reconciliation"
    assert outcome.metadata["activity_details"]["fetched"] == len(ids)
    assert home.query("SELECT count(*) FILTER (detail_loaded), (SELECT count(*) FROM laps) FROM activities") == full
    assert full[0][0] == len(ids)


@pytest.mark.sqlite_only  # the state store is incidental: the calls and rows of a sync
def test_splits_and_laps_carry_heart_rate_and_the_real_service_grade_adjusted_speed(
    sb: Harness, connect: Connect, flavor: str
) -> None:
    """Heart rate on splits and laps (both flavours: the real service sends it, the spec is silent) makes
    decoupling computable; a run's grade-adjusted speed (real flavour) is what its rTSS uses once a threshold pace
    is set."""
    aid = add_athlete(sb)
    # the sandbox's device records heart rate 96 % of the time: three runs, one with it (all but 1 in 15,000)
    runs = [record(sb, aid, days_ago=2 + i, sport_type="Run", device=True, distance=12000) for i in range(3)]
    home = connect(aid)
    home.sync()
    run = home.query(
        "SELECT min(activity_id) FROM activities WHERE activity_id IN (?, ?, ?) AND average_heartrate IS NOT NULL",
        *runs,
    )[0][0]
    [(splits, with_hr, with_gap)] = home.query(
        "SELECT count(*), count(average_heartrate), count(average_grade_adjusted_speed) FROM splits_metric "
        "WHERE activity_id = ?",
        run,
    )
    [(has_hr,)] = home.query("SELECT average_heartrate IS NOT NULL FROM activities WHERE activity_id = ?", run)
    assert splits >= 10 and has_hr and with_hr == splits
    assert with_gap == (splits if flavor == "real" else 0)
    assert home.query("SELECT count(*) = count(average_heartrate) FROM laps WHERE activity_id = ?", run) == [(True,)]
    with duckdb.connect(str(home.warehouse)) as conn:
        conn.execute("INSERT INTO analysis_thresholds VALUES (?, DATE '2000-01-01', NULL, 300, 'test')", [aid])
    assert home.query("SELECT load_source, pace_basis FROM activity_load WHERE activity_id = ?", run) == [
        ("pace", "grade_adjusted" if flavor == "real" else "average_speed")
    ]
    assert home.query("SELECT count(*) FROM aerobic_decoupling WHERE activity_id = ?", run) == [(1,)]
