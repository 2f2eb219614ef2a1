"""A wrong answer from outside never overwrites what fitsync knew, and a run that met one never says "ok" (issue 28).

The sandbox answers as a broken server or proxy would (its `fault_answers` setting): absurd numbers in a listing,
stats of the wrong shape, a detail that is not an activity. Over loopback HTTP, into a real DuckDB file.
"""

from __future__ import annotations

from typing import Any

import pytest
from dagster import DagsterEventType, DagsterInstance

from fitsync.cli.last_runs import last_runs
from fitsync.sync import progress

from ..processes import run_fitsync
from ..sandbox_harness import Harness, record_with_heart_rate
from .conftest import ROUTE_404, Connect, Home, Recorder, add_athlete, change, record, record_many, subprocess_env


@pytest.fixture
def dagster_instance(persistent_instance: DagsterInstance) -> DagsterInstance:
    """`fitsync status` reads the runs from DAGSTER_HOME's files (cli/last_runs.py): this module's syncs go there."""
    return persistent_instance


# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


ABSURD = {"distance": 1e308, "moving_time": 10**30, "elapsed_time": -(2**63), "kudos_count": 2**70}
NUMBERS = "activity_id, distance, moving_time, elapsed_time, kudos_count, average_speed, name"
WRONG_STATS = {"id": "x", "access_token": 5, "items": [1, 2]}


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse's plausibility checks
def test_a_listing_of_absurd_numbers_changes_nothing_stored_and_is_not_ok(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 12, oldest_days=20)
    home = connect(aid)
    home.sync()
    before = home.query(f"SELECT {NUMBERS} FROM activities ORDER BY activity_id")
    assert len(before) == 12 and all(None not in row for row in before)
    recorder.clear()
    with sb.settings(fault_answers={"GET /athlete/activities": {"merge": ABSURD}}):
        outcome = home.sync(full=True, check=False)
        cli = run_fitsync(["sync", "--full"], env=subprocess_env(home.config.home))
    assert home.query(f"SELECT {NUMBERS} FROM activities ORDER BY activity_id") == before
    assert recorder.details() == [], "an implausible change queues no re-pull"
    assert home.query("SELECT count(*) FROM deleted_activities") == [(0,)]
    assert outcome.success, outcome.error  # the rest of the run went on
    [line] = [line for line in outcome.left_out() if "activities" in line]
    assert f"athlete {aid}: 12 activities row(s) with implausible values: those values were not stored" in line
    assert "distance=1e+308" in line and "moving_time=1e+30" in line and "kudos_count=" in line
    assert _plausible_check(home) is False, "Dagster's check on the load says so too"
    assert cli.returncode == 4, cli.stdout + cli.stderr
    assert "implausible values" in cli.stderr and "LEFT OUT" in cli.stderr and "Traceback" not in cli.stderr

    documents = home.query(
        "SELECT count(*) FROM activity_summary_documents WHERE json_extract(raw, '$.distance') ::DOUBLE = 1e308"
    )
    assert documents == [(12,)], "the summaries are kept as they arrived"
    again = home.sync(full=True)  # the service answers right again: nothing to repair, nothing re-pulled
    assert again.left_out() == [] and recorder.details() == []
    assert {r[0] for r in home.query("SELECT activity_id FROM activities")} == set(ids)


def _plausible_check(home: Home) -> bool:
    """Whether the last run's loads all passed their `values_plausible` check."""
    run = home.instance.get_runs(limit=1)[0]
    return all(
        entry.dagster_event.event_specific_data.passed  # type: ignore[union-attr]
        for entry in home.instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
        if entry.dagster_event.event_specific_data.check_name == "values_plausible"
    )  # type: ignore[union-attr]


@pytest.mark.sqlite_only  # the state store is incidental: an answer's shape
def test_stats_of_the_wrong_shape_store_nothing_and_fail_the_athlete(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """`{"id":"x","access_token":5,"items":[1,2]}` for the stats: nothing of it stored, nothing marked refreshed,
    the athlete's sync fails naming the endpoint — and the listing and the load still ran."""
    aid = add_athlete(sb)
    record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid, slow_refresh_hours=20)
    with sb.settings(fault_answers={"GET /athletes/{id}/stats": {"body": WRONG_STATS}}):
        outcome = home.sync(check=False)
    assert not outcome.success
    assert (
        f"athlete {aid}: athlete_stats: GET /athletes/{{id}}/stats answered stats without their ride, run and "
        "swim totals: kept raw in unrecognized_payloads, nothing stored"
    ) in (outcome.error or "")
    assert home.query("SELECT count(*) FROM athlete_stats") == [(0,)]
    assert home.query("SELECT count(*) FROM athlete_stats_totals") == [(0,)]
    assert home.query("SELECT count(*) FROM activities") == [(4,)], "the other steps went on"
    assert last_runs(home.config.home, [aid])[aid]["status"] == "FAILURE", "`fitsync status` says it failed"
    assert home.query("SELECT endpoint, json_extract(raw, '$.access_token')::INT FROM unrecognized_payloads") == [
        ("GET /athletes/{id}/stats", 5)
    ]

    recorder.clear()
    assert home.sync().success  # not marked refreshed: asked again at once, though the cadence is 20 h
    assert last_runs(home.config.home, [aid])[aid]["status"] == "SUCCESS"
    assert f"/athletes/{aid}/stats" in recorder.paths()
    totals = home.query("SELECT count(*), count(count) FROM athlete_stats_totals")
    assert totals == [(9, 9)]

    recorder.clear()
    with sb.settings(fault_answers={"GET /athletes/{id}/stats": {"body": WRONG_STATS}}):
        assert not home.sync(full=True, check=False).success  # --full asks whatever the cadence says
    assert home.query("SELECT count(*), count(count) FROM athlete_stats_totals") == totals, "good totals stay"


def test_a_detail_that_is_not_an_activity_stays_queued(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    with sb.settings(fault_answers={"GET /activities/{id}": {"body": {"id": "x"}}}):
        outcome = home.sync(check=False)
    assert not outcome.success and "GET /activities/{id} answered an activity without a numeric id" in (
        outcome.error or ""
    )
    assert (outcome.error or "").count("without a numeric id") == 1, "one problem said once, with its count"
    assert "nothing stored (3 answers: activity " in (outcome.error or ""), outcome.error
    with sb.settings(fault_answers={"GET /activities/{id}": {"body": [1, 2]}}):
        listed = home.sync(check=False)
    assert "GET /activities/{id} answered a list instead of an activity object" in (listed.error or ""), listed.error
    assert home.needing("detail") == 3 and home.query("SELECT count(*) FROM activities WHERE detail_loaded") == [(0,)]
    assert home.sync().success and home.needing("detail") == 0
    assert home.query("SELECT count(*) FROM activities WHERE detail_loaded") == [(3,)]


@pytest.mark.sqlite_only  # the state store is incidental: what a load keeps
def test_a_value_of_the_wrong_type_anywhere_keeps_what_was_stored(sb: Harness, connect: Connect) -> None:
    """ "abc" or true for a lap's distance, a year's totals, the FTP or a bike's odometer; "yesterday" for a start date;
    5 for a flag; "abc" for a zone's seconds: read leniently they became NULL or 1 over what was stored, in a run
    called ok. Each answer is kept raw and named, nothing stored changes, and the next right answer loads."""
    aid = add_athlete(sb, premium=True)
    run = record_with_heart_rate(sb, aid, days_ago=3, sport_type="Run", moving_time=1800)  # zones need it
    home = connect(aid)
    home.sync()
    tables = {
        "laps": "SELECT lap_index, distance, moving_time FROM laps ORDER BY ALL",
        "totals": "SELECT period, sport, distance, moving_time FROM athlete_stats_totals ORDER BY ALL",
        "athlete": "SELECT ftp, weight FROM athletes",
        "gear": "SELECT gear_id, distance FROM gear ORDER BY ALL",
        "activity": "SELECT start_date, start_date_local, trainer FROM activities",
        "zones": "SELECT zone_type, bucket_index, seconds FROM activity_zone_buckets ORDER BY ALL",
    }
    before = {name: home.query(sql) for name, sql in tables.items()}
    assert all(before.values()), before

    grant = sb.connect(athlete_id=aid)

    def answer(path: str) -> Any:
        return sb.get(
            grant, path, params={"include_all_efforts": "true"} if path.startswith("/activities/") else None
        ).json()

    detail = answer(f"/activities/{run}")
    for lap in detail["laps"]:
        lap.update(distance="abc", moving_time=True)
    stats = answer(f"/athletes/{aid}/stats")
    stats["all_run_totals"].update(distance="abc", moving_time=True)
    profile = answer("/athlete")
    profile.update(ftp="n/a", weight=True)
    for bike in profile["bikes"]:
        bike["distance"] = "abc"
    zones = answer(f"/activities/{run}/zones")
    for bucket in zones[0]["distribution_buckets"]:
        bucket["time"] = "abc"
    dated = {**answer(f"/activities/{run}"), "start_date": "yesterday", "start_date_local": 1712345678, "trainer": 5}
    faults = {
        "GET /activities/{id}": {"body": detail},
        "GET /athletes/{id}/stats": {"body": stats},
        "GET /athlete": {"body": profile},
        "GET /activities/{id}/zones": {"body": zones},
    }
    change(sb, run, name="Renamed")  # the detail (and its zones) is asked for again
    with home.store.transaction() as conn:
        progress.request_refresh(conn, aid, [run], zones=True)
    with sb.settings(fault_answers=faults):
        outcome = home.sync(full=True, check=False)
    said = outcome.error or ""
    assert not outcome.success
    for named in ("laps[0].", "all_run_totals.distance='abc'", "ftp='n/a'", "distribution_buckets[0].time='abc'"):
        assert named in said, said
    assert {name: home.query(sql) for name, sql in tables.items()} == before
    with sb.settings(fault_answers={"GET /activities/{id}": {"body": dated}}):
        outcome = home.sync(check=False)
    assert not outcome.success and "start_date='yesterday' where a date belongs" in (outcome.error or "")
    assert {name: home.query(sql) for name, sql in tables.items()} == before
    assert home.query("SELECT count(*) FROM unrecognized_payloads WHERE problem LIKE '%belongs'")[0][0] >= 5

    assert home.sync(full=True).success  # the right answers load
    assert home.query("SELECT name FROM activities") == [("Renamed",)]


@pytest.mark.sqlite_only  # the state store is incidental: what a load keeps
def test_an_empty_or_typeless_zones_answer_keeps_the_stored_zones(sb: Harness, connect: Connect) -> None:
    """`[]` for a run whose heart-rate zones are stored deleted them in a run called ok; a zone without its type was
    left out of the load without a word. The empty answer replaces nothing, the type-less one is a wrong answer."""
    aid = add_athlete(sb, premium=True)
    run = record_with_heart_rate(sb, aid, days_ago=3, sport_type="Run", moving_time=1800)
    home = connect(aid)
    home.sync()
    stored = "SELECT zone_type, bucket_index, seconds FROM activity_zone_buckets ORDER BY ALL"
    before = home.query(stored)
    assert before

    def refreshed(answer: Any) -> Any:
        with home.store.transaction() as conn:
            progress.request_refresh(conn, aid, [run], zones=True)
        with sb.settings(fault_answers={"GET /activities/{id}/zones": {"body": answer}}):
            return home.sync(check=False)

    assert refreshed([]).success and home.query(stored) == before
    assert home.needing("zones") == 0
    typeless = {"score": 3, "distribution_buckets": [{"min": 0, "max": -1, "time": 99}]}
    outcome = refreshed([*sb.get(sb.connect(athlete_id=aid), f"/activities/{run}/zones").json(), typeless])
    assert not outcome.success and "missing type" in (outcome.error or ""), outcome.error
    assert home.query(stored) == before and home.needing("zones") == 1


@pytest.mark.sqlite_only  # the state store is incidental: what a load keeps
def test_zones_go_when_the_re_pulled_detail_says_the_activity_can_have_none(sb: Harness, connect: Connect) -> None:
    """An athlete who removes a ride's heart rate on the service: its re-pulled detail says no heart rate and no
    power meter, so no zones call is made, and the stored heart-rate zones stayed, counted in every time-in-zone
    figure. The detail is the service's own word that the activity has no zones: they go with it."""
    aid = add_athlete(sb, premium=True)
    ride = record_with_heart_rate(sb, aid, days_ago=3, sport_type="Ride", moving_time=1800)
    home = connect(aid)
    home.sync()
    zones = f"SELECT DISTINCT zone_type FROM activity_zone_buckets WHERE activity_id = {ride}"
    assert ("heartrate",) in home.query(zones)

    with home.store.transaction() as conn:
        progress.request_refresh(conn, aid, [ride], zones=True)
    no_sensors = {"has_heartrate": False, "device_watts": False}
    with sb.settings(fault_answers={"GET /activities/{id}": {"merge": no_sensors}}):
        assert home.sync().success
    assert home.query(zones) == []
    assert home.query(f"SELECT count(*) FROM activity_zones WHERE activity_id = {ride}") == [(0,)]
    assert home.needing("zones") == 0


@pytest.mark.sqlite_only  # the state store is incidental: what proves an unstarring
def test_an_empty_starred_list_unstars_nothing_the_service_still_shows_starred(sb: Harness, connect: Connect) -> None:
    """`[]` for an athlete with starred segments deleted every starred row in a run called ok. The segments a list
    lacks are asked about (their detail's `starred`): still starred, the list is refused and said; a real unstarring
    goes through."""
    aid = add_athlete(sb, premium=True)
    record(sb, aid, days_ago=3, sport_type="Ride", moving_time=600)
    home = connect(aid)
    home.sync()
    starred = "SELECT segment_id FROM starred_segments ORDER BY ALL"
    before = [r[0] for r in home.query(starred)]
    assert before
    with sb.settings(fault_answers={"GET /segments/starred": {"body": []}}):
        outcome = home.sync(full=True, check=False)
    assert not outcome.success and "which the service still shows starred" in (outcome.error or ""), outcome.error
    assert [r[0] for r in home.query(starred)] == before

    route = {"GET /segments/starred": {"body": []}, "GET /segments/{id}": {"status": 404, "body": ROUTE_404}}
    with sb.settings(fault_answers=route):  # the check answered by no one who knows: no proof either way
        outcome = home.sync(full=True, check=False)
    assert not outcome.success and "the starred list stays as it was" in (outcome.error or ""), outcome.error
    assert [r[0] for r in home.query(starred)] == before

    grant = sb.connect(athlete_id=aid)
    unstarred = sb.api(grant, "PUT", f"/segments/{before[0]}/starred", data={"starred": "false"})
    assert unstarred.status_code == 200, unstarred.text
    assert home.sync(full=True).success
    assert [r[0] for r in home.query(starred)] == before[1:]


@pytest.mark.sqlite_only  # the state store is incidental: the details queue
def test_a_detail_too_large_is_said_and_the_details_behind_it_load(sb: Harness, connect: Connect) -> None:
    """A detail larger than max_response_bytes failed the step at every run, losing the chunk's fetched details and
    blocking every activity behind it. It is said and left queued; the others load."""
    aid = add_athlete(sb)
    small = [record(sb, aid, days_ago=days, sport_type="Run", moving_time=900) for days in (5, 4)]
    huge = record(sb, aid, days_ago=3, sport_type="Ride", moving_time=5 * 3600)
    grant = sb.connect(athlete_id=aid)
    sizes = {
        i: len(sb.get(grant, f"/activities/{i}", params={"include_all_efforts": "true"}).content)
        for i in (*small, huge)
    }
    limit = (max(sizes[i] for i in small) + sizes[huge]) // 2
    assert max(sizes[i] for i in small) < limit < sizes[huge], sizes
    home = connect(aid, max_response_bytes=limit)
    outcome = home.sync(check=False)
    assert not outcome.success and "max_response_bytes" in (outcome.error or ""), outcome.error
    loaded = {r[0] for r in home.query("SELECT activity_id FROM activities WHERE detail_loaded")}
    assert loaded == set(small) and home.needing("detail") == 1


@pytest.mark.sqlite_only  # the state store is incidental: the effort history's cursor
def test_an_effort_dated_next_century_or_of_another_athlete_moves_no_cursor(sb: Harness, connect: Connect) -> None:
    """A starred segment's history answered with an effort dated 2099 (stored: it is the athlete's) and one of athlete
    1: the foreign one is left out, kept raw and said, and the history's cursor stays before now (at 2099 it would
    ask for nothing new until then)."""
    aid = add_athlete(sb, premium=True)
    for days in (20, 15, 10):
        record(sb, aid, days_ago=days, sport_type="Ride", moving_time=3600)
    home = connect(aid)
    grant = sb.connect(athlete_id=aid)
    starred = sb.get(grant, "/segments/starred").json()[0]
    segment = sb.get(grant, f"/segments/{starred['id']}").json()
    ride = sb.get(grant, "/athlete/activities").json()[0]["id"]
    base = {
        "resource_state": 2,
        "name": segment["name"],
        "elapsed_time": 600,
        "moving_time": 600,
        "distance": segment["distance"],
        "segment": {"id": segment["id"], "resource_state": 2, "name": segment["name"], "distance": segment["distance"]},
    }
    future = {
        **base,
        "id": 31999999999,
        "activity": {"id": ride},
        "athlete": {"id": aid},
        "start_date": "2099-06-01T08:00:00Z",
        "start_date_local": "2099-06-01T10:00:00Z",
    }
    foreign = {
        **base,
        "id": 31999999998,
        "activity": {"id": 1},
        "athlete": {"id": 1},
        "start_date": "2026-01-01T08:00:00Z",
        "start_date_local": "2026-01-01T09:00:00Z",
    }
    with sb.settings(fault_answers={"GET /segment_efforts": {"body": [future, foreign]}}):
        outcome = home.sync(check=False)
    assert "an effort of athlete 1, not of athlete" in " ".join(outcome.left_out()), outcome.left_out()
    cursors = {r[0] for r in home.state("SELECT efforts_after FROM known_segments WHERE starred = 1")}
    assert cursors and all(c is None or c < "2099" for c in cursors), cursors
    assert home.query("SELECT effort_id FROM segment_efforts WHERE effort_id > 31999999990") == [(31999999999,)]


@pytest.mark.sqlite_only  # the state store is incidental: what a 404 says
def test_a_404_for_the_path_is_no_private_segment(sb: Harness, connect: Connect) -> None:
    """A segment's 404 naming the request's path (a wrong address) is not the service saying the segment is
    private: the run fails, every segment stays queued for its detail, and the details come next time."""
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    with sb.settings(fault_answers={"GET /segments/{id}": {"status": 404, "body": ROUTE_404}}):
        outcome = home.sync(check=False)
    assert not outcome.success and "Request.path" in (outcome.error or ""), outcome.error
    waiting = "SELECT count(*) FROM known_segments WHERE athlete_id = ? AND needs_detail = 1"
    (queued,) = home.state(waiting, aid)[0]
    assert queued > 0 and home.query("SELECT count(*) FROM segments WHERE resource_state = 3") == [(0,)]
    assert home.sync().success and home.state(waiting, aid) == [(0,)]
    assert home.query("SELECT count(*) FROM segments WHERE resource_state = 3")[0][0] > 0


@pytest.mark.sqlite_only  # the state store is incidental: what counts as an answer
def test_a_redirect_is_no_listing_and_rate_headers_out_of_range_are_ignored(sb: Harness, connect: Connect) -> None:
    """A 302 to another host with `[]` for a body is not an empty listing (nothing deleted, the run failed and says
    where it led); usage headers no service sends (beyond a billion) leave the budget's own count as it was."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    away = {"status": 302, "headers": {"Location": "https://elsewhere.example/login?next=x"}, "body": []}
    with sb.settings(fault_answers={"GET /athlete/activities": away}):
        outcome = home.sync(full=True, check=False)
    assert not outcome.success and "a redirect to elsewhere.example" in (outcome.error or ""), outcome.error
    assert home.query("SELECT count(*) FROM activities") == [(0,)] and home.needing("detail") == 0
    huge = {"headers": {"X-ReadRateLimit-Usage": "99999999999999999999999,1", "X-RateLimit-Usage": "-5,-5"}}
    with sb.settings(fault_answers={"GET /athlete": huge}):
        assert home.sync().success
    assert {r[0] for r in home.query("SELECT activity_id FROM activities")} == set(ids)


@pytest.mark.sqlite_only  # the state store is incidental: an answer's bytes
def test_a_byte_that_is_not_utf8_is_replaced_and_the_listing_loads(sb: Harness, connect: Connect) -> None:
    """One invalid byte in an activity's name (a proxy mangling it) no longer fails the athlete's listing: it is
    replaced (U+FFFD), reported, and every activity loads."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=10)
    home = connect(aid)
    with sb.settings(fault_answers={"GET /athlete/activities": {"invalid_utf8": True}}):
        outcome = home.sync()
    assert outcome.success
    assert {r[0] for r in home.query("SELECT activity_id FROM activities")} == set(ids)
    reported = home.state("SELECT endpoint, problem FROM shape_reports")
    assert any(e == "GET /athlete/activities" and "not UTF-8" in p for e, p in reported), reported


@pytest.mark.sqlite_only  # the state store is incidental: an answer's shape
def test_an_answer_nested_deeper_than_the_parser_goes_is_kept_raw_and_told(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=5)
    home = connect(aid)
    with sb.settings(fault_answers={"GET /athletes/{id}/stats": {"depth": 100_000}}):
        outcome = home.sync(check=False)
    assert not outcome.success and "Traceback" not in (outcome.error or "")
    assert "athlete_stats: GET /athletes/{id}/stats answered an answer nested deeper than the JSON parser goes" in (
        outcome.error or ""
    ), outcome.error
    assert home.query("SELECT count(*) FROM activities") == [(2,)], "the other steps went on"
    [(kept,)] = home.query("SELECT length(raw::VARCHAR) FROM unrecognized_payloads")
    assert kept > 60_000


def test_a_listed_element_without_an_id_is_kept_raw_and_the_rest_loads(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid)
    with sb.settings(fault_answers={"GET /athlete/activities": {"merge": {"id": "not-a-number"}}}):
        outcome = home.sync(check=False)
    assert outcome.success and home.query("SELECT count(*) FROM activities") == [(0,)]
    assert outcome.left_out() == [
        f"athlete {aid}: 4 listed element(s) left out: an activity without a numeric id "
        "(kept raw in unrecognized_payloads)"
    ]
    assert home.query("SELECT count(*) FROM unrecognized_payloads WHERE endpoint = 'GET /athlete/activities'") == [(1,)]
    assert home.sync().left_out() == [] and home.query("SELECT count(*) FROM activities") == [(len(ids),)]


def test_an_activity_of_another_athlete_is_kept_raw_and_not_stored_as_theirs(sb: Harness, connect: Connect) -> None:
    """The owner an answer names is checked: another athlete's activity, listed or detailed under this athlete's
    token, is never stored as this athlete's."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    foreign = {"merge": {"athlete": {"id": aid + 1000, "resource_state": 1}}}
    with sb.settings(fault_answers={"GET /athlete/activities": foreign}):
        listed = home.sync(check=False)
    assert home.query("SELECT count(*) FROM activities") == [(0,)]
    assert listed.left_out() == [
        f"athlete {aid}: 3 listed element(s) left out: an activity of athlete {aid + 1000}, not of athlete {aid} "
        "(kept raw in unrecognized_payloads)"
    ]
    with sb.settings(fault_answers={"GET /activities/{id}": foreign}):
        detailed = home.sync(check=False)
    assert not detailed.success and f"an activity of athlete {aid + 1000}" in (detailed.error or ""), detailed.error
    assert home.query("SELECT count(*) FROM activities WHERE detail_loaded") == [(0,)] and home.needing("detail") == 3
    assert home.sync().success and home.query("SELECT count(*) FROM activities WHERE detail_loaded") == [(len(ids),)]


@pytest.mark.sqlite_only  # the state store is incidental: the client's timeouts
def test_a_service_that_accepts_and_never_answers_fails_the_athlete_in_one_requests_retries(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """Every answer held back longer than the client waits: the athlete's sync fails after one request's retries
    (not each endpoint's in turn), saying what went unanswered; nothing is stored or lost."""
    import time

    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=5)
    home = connect(aid, timeout=0.5, max_retries=2)
    started = time.monotonic()
    with sb.settings(fault_latency_ms=4000):
        outcome = home.sync(check=False)
    assert time.monotonic() - started < 30
    error = outcome.error or ""
    assert not outcome.success and "did not answer" in error and "(ReadTimeout)" in error, error
    # the later steps failed at once (not sent), and their cause is the first one's, said once for all
    assert "athlete, athlete_stats, athlete_zones" in error and error.count("did not answer") == 1, error
    assert home.sync().success and home.query("SELECT count(*) FROM activities") == [(2,)]
