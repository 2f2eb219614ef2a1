"""Recorded shapes of the real service (tests/fixtures/real/) read by fitsync's client over loopback HTTP and
loaded into a warehouse: nothing fails, everything lands, and what fitsync does not know is kept raw and
reported once."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from fitsync.client import athlete_zones, errors
from fitsync.client.api import AthleteApi
from fitsync.client.config import Config
from fitsync.client.records import UnexpectedShape
from fitsync.client.secret import Secret
from fitsync.client.shape_reports import ShapeReports
from fitsync.client.transport import Transport
from fitsync.sandbox.server import UvicornThread
from fitsync.state.store import StateStore
from fitsync.sync import landing
from fitsync.sync.load_landed import apply_batch
from fitsync.warehouse import db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"
ATHLETE = 134815  # the owner in the swagger's activity examples
PROFILE = 1234567890987654321  # the swagger's athlete example (an id beyond int64's half, kept exact)
ACTIVITY = 12345678987654321  # the swagger's detailed activity (beyond 2^53, as real ids are)
LISTED = [154504250376823, 1234567809]  # the swagger's listing example


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())  # a name, or a path of the test's own


# Paths of the recorded service → the fixture it answers (the zones answer is switched per test).
ANSWERS = {
    "/athlete": "swagger_athlete.json",
    f"/athletes/{ATHLETE}/stats": "real_athlete_stats.json",
    "/athlete/zones": "real_athlete_zones.json",
    "/athlete/activities": "swagger_athlete_activities.json",
    f"/activities/{ACTIVITY}": "swagger_activity.json",
    f"/activities/{ACTIVITY}/laps": "swagger_laps.json",
    f"/activities/{ACTIVITY}/zones": "real_activity_zones.json",
    "/segments/229781": "swagger_segment.json",
    "/segments/starred": "swagger_segments_starred.json",
    "/segment_efforts": "swagger_segment_efforts.json",
    "/segment_efforts/123456789": "swagger_segment_effort.json",
}


class Recorded:
    def __init__(self) -> None:
        self.answers = dict(ANSWERS)
        self.app = Starlette(routes=[Route("/api/v3/{path:path}", self.answer)])

    async def answer(self, request: Request) -> JSONResponse:
        name = self.answers.get("/" + request.path_params["path"])
        if name is None:
            return JSONResponse({"message": "Resource Not Found", "errors": []}, status_code=404)
        if request.url.path.endswith("/athlete/activities") and request.query_params.get("page") not in (None, "1"):
            return JSONResponse([])
        return JSONResponse(fixture(name))


class OneToken:
    """The token source AthleteApi asks; the recorded service accepts any."""

    config = Config()  # its refresh_margin: how long a token read before a wait may still be sent

    def access_token(self, athlete_id: int) -> Secret:
        return Secret("recorded")


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[Recorded, str]]:
    service = Recorded()
    with UvicornThread(service.app) as server:
        yield service, server.base_url + "/api/v3"


@pytest.fixture
def reports(tmp_path: Path) -> ShapeReports:
    return ShapeReports(StateStore(tmp_path / "state.db"))


@pytest.fixture
def api(recorded: tuple[Recorded, str], reports: ShapeReports) -> Iterator[AthleteApi]:
    transport = Transport(None, timeout=5, max_retries=1)
    yield AthleteApi(recorded[1], transport, OneToken(), ATHLETE, reporter=reports.report)  # type: ignore[arg-type]
    transport.close()


def test_every_recorded_answer_is_read(api: AthleteApi, reports: ShapeReports) -> None:
    assert api.athlete().id == PROFILE and not api.athlete().issues
    assert api.stats()["all_ride_totals"]["count"] == 1204
    listed = list(api.activities())
    assert [a.id for a in listed] == LISTED and not any(a.issues for a in listed)
    detail = api.activity(ACTIVITY)
    assert detail.id == ACTIVITY and detail["start_date_local"] == "2018-02-16T06:52:54Z" and not detail.issues
    assert [lap["lap_index"] for lap in api.laps(ACTIVITY)] == [1]
    assert [z["type"] for z in api.activity_zones(ACTIVITY)] == ["heartrate", "pace"]
    assert api.segment(229781)["name"] == "Hawk Hill"
    assert {e.id for e in api.segment_efforts(229781)} == {123456789}
    assert api.segment_effort(123456789)["elapsed_time"] > 0

    zones = api.zones()
    assert zones.shape == "object" and not zones.problems
    assert {z["type"]: len(z["distribution_buckets"]) for z in zones.zones} == {"heartrate": 5, "power": 7}

    # the swagger's starred example is one object, not a list: kept raw by the caller, never taken for a list
    with pytest.raises(UnexpectedShape) as odd:
        list(api.starred_segments())
    assert odd.value.endpoint == "GET /segments/starred" and odd.value.body["id"] == 229781
    assert reports.all() == []  # nothing else was unexpected


def test_the_swaggers_zones_array_is_read_too(api: AthleteApi, recorded: tuple[Recorded, str]) -> None:
    recorded[0].answers["/athlete/zones"] = "swagger_athlete_zones.json"
    try:
        zones = api.zones()
    finally:
        recorded[0].answers["/athlete/zones"] = ANSWERS["/athlete/zones"]
    assert zones.shape == "array" and [z["type"] for z in zones.zones] == ["power"]
    assert zones.zones[0]["distribution_buckets"][-1] == {"max": -1, "min": 450, "time": 343}


def test_a_zones_answer_of_another_shape_is_reported_once_and_kept(
    api: AthleteApi, reports: ShapeReports, recorded: tuple[Recorded, str], caplog: pytest.LogCaptureFixture
) -> None:
    recorded[0].answers["/athlete/zones"] = "swagger_athlete.json"  # an object with no zones in it
    try:
        with caplog.at_level(logging.WARNING, logger="fitsync.shapes"):
            first, second = api.zones(), api.zones()
    finally:
        recorded[0].answers["/athlete/zones"] = ANSWERS["/athlete/zones"]
    assert first.shape == second.shape == "unknown" and first.zones == [] and first.raw["id"] == PROFILE
    warned = [r for r in caplog.records if "GET /athlete/zones" in r.getMessage()]
    assert len(warned) == len(set(first.problems)) >= 1, "each problem is a warning once, not per call"
    assert {r.problem: r.seen for r in reports.all()} == {p: 1 for p in first.problems}


def test_an_unknown_sport_type_is_reported_once_per_type_across_processes(
    reports: ShapeReports, caplog: pytest.LogCaptureFixture
) -> None:
    later_run = ShapeReports(reports.store)  # another process on the same home
    with caplog.at_level(logging.WARNING, logger="fitsync.shapes"):
        for activity_id in (1, 2, 3):
            reports.report("GET /athlete/activities", activity_id, ("unexpected sport_type='Padel'",))
        reports.report("GET /athlete/activities", 4, ("unexpected sport_type='Hurling'",))
        later_run.report("GET /athlete/activities", 5, ("unexpected sport_type='Padel'",))
    assert [r.getMessage().split(": ", 1)[1].split(" (")[0] for r in caplog.records] == [
        "unexpected sport_type='Padel'",
        "unexpected sport_type='Hurling'",
    ]
    assert [(r.problem, r.first_object, r.seen) for r in reports.all()] == [
        ("unexpected sport_type='Padel'", "1", 2),
        ("unexpected sport_type='Hurling'", "4", 1),
    ]


def test_a_field_fitsync_does_not_know_is_kept_and_reported_once(
    api: AthleteApi,
    reports: ShapeReports,
    recorded: tuple[Recorded, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (tmp_path / "new.json").write_text(
        json.dumps([{**a, "gravel_score": 7} for a in fixture("swagger_athlete_activities.json")])
    )
    recorded[0].answers["/athlete/activities"] = str(tmp_path / "new.json")
    try:
        with caplog.at_level(logging.WARNING, logger="fitsync.shapes"):
            listed = list(api.activities())
    finally:
        recorded[0].answers["/athlete/activities"] = ANSWERS["/athlete/activities"]
    assert [a["gravel_score"] for a in listed] == [7, 7] and not any(a.issues for a in listed)
    assert [r.getMessage() for r in caplog.records] == [
        f"GET /athlete/activities: unknown field gravel_score (first seen on {LISTED[0]}) — kept raw in the warehouse; "
        "reported once"
    ]


def batch(bundle: str, payloads: list[Any], **context: Any) -> landing.Landed:
    return landing.Landed.of([0], bundle, payloads, context)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    db.migrate(path)
    return path


def load(path: Path, *batches: landing.Landed) -> None:
    with db.writing(path) as conn:
        for one in batches:
            apply_batch(conn, ATHLETE, one)


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with db.reading(path) as conn:
        return conn.execute(sql).fetchall()


def test_recorded_answers_load_into_the_warehouse(warehouse: Path) -> None:
    zones = athlete_zones.read(fixture("real_athlete_zones.json"))
    load(
        warehouse,
        batch("athlete", [fixture("swagger_athlete.json")]),
        batch("athlete_stats", [fixture("real_athlete_stats.json")]),
        batch("athlete_zones", [zones.payload()]),
        batch("activity_summaries", fixture("swagger_athlete_activities.json")),
        batch("activity_details", [fixture("swagger_activity.json")]),
        batch("activity_zones", [{"activity_id": ACTIVITY, "zones": fixture("real_activity_zones.json")}]),
        batch("segments", [fixture("swagger_segment.json")]),
        batch("segment_efforts", [{"segment_efforts": fixture("swagger_segment_efforts.json")}]),
    )
    assert rows(warehouse, "SELECT athlete_id, firstname FROM athletes") == [(PROFILE, "Marianne")]
    assert rows(warehouse, "SELECT count(*), sum(count) FILTER (WHERE period = 'all') FROM athlete_stats_totals") == [
        (9, 1204 + 1530 + 40)
    ]
    # the real object: bounds with no time, the open-ended last zone, custom_zones, the shape recorded
    assert rows(
        warehouse,
        "SELECT zone_type, count(*), max(bucket_index), count(seconds), any_value(shape), "
        "bool_or(custom_zones) FROM athlete_zones GROUP BY ALL ORDER BY ALL",
    ) == [("heartrate", 5, 5, 0, "object", False), ("power", 7, 7, 0, "object", None)]
    assert rows(warehouse, "SELECT min, max FROM athlete_zones WHERE zone_type = 'heartrate' AND bucket_index = 5") == [
        (184.0, -1.0)
    ]
    # the wall clock as written (its Z is not UTC), the zone's name, ids beyond 2^53 exact
    activities = rows(
        warehouse,
        "SELECT activity_id, sport_type, strftime(start_date_local, '%H:%M:%S'), timezone, "
        "utc_offset, detail_fetched_at IS NOT NULL FROM activities ORDER BY activity_id",
    )
    assert activities == [
        (LISTED[1], "MountainBikeRide", "05:35:51", "America/Los_Angeles", -25200, False),
        (LISTED[0], "MountainBikeRide", "05:15:09", "America/Los_Angeles", -25200, False),
        (ACTIVITY, "MountainBikeRide", "06:52:54", "America/Los_Angeles", -28800, True),
    ]
    assert rows(warehouse, "SELECT zone_type, count(*) FROM activity_zone_buckets GROUP BY ALL ORDER BY ALL") == [
        ("heartrate", 5),
        ("pace", 3),
    ]
    assert rows(warehouse, "SELECT count(*) FROM laps WHERE activity_id = 12345678987654321") == [(1,)]
    assert rows(warehouse, "SELECT count(*) > 0 FROM segment_efforts") == [(True,)]


def test_an_unknown_shape_lands_raw(warehouse: Path) -> None:
    body = fixture("swagger_segments_starred.json")
    load(
        warehouse,
        batch(
            "unrecognized",
            [
                {
                    "endpoint": "GET /segments/starred",
                    "object_id": None,
                    "problem": "an object instead of a list of segment records",
                    "body": body,
                }
            ],
        ),
    )
    assert rows(warehouse, "SELECT endpoint, object_id, raw->>'$.name' FROM unrecognized_payloads") == [
        ("GET /segments/starred", "", "Hawk Hill")
    ]


def test_the_issues_flag_survives_the_detail_load(warehouse: Path) -> None:
    summary = {**fixture("swagger_athlete_activities.json")[0], "sport_type": "Padel"}
    detail = {**fixture("swagger_activity.json"), "id": summary["id"], "sport_type": "Padel"}
    load(warehouse, batch("activity_summaries", [summary]))
    flagged = [("unexpected sport_type='Padel'",)]
    assert rows(warehouse, "SELECT unnest(issues) FROM activities") == flagged
    load(warehouse, batch("activity_details", [detail]))
    assert rows(warehouse, "SELECT unnest(issues) FROM activities") == flagged
    assert rows(warehouse, "SELECT sport_type, detail_fetched_at IS NOT NULL FROM activities") == [("Padel", True)]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("missing_scope", errors.MissingScope),
        ("invalid_token", errors.ApiError),
        ("not_found", errors.NotFound),
        ("application_inactive", errors.ApplicationInactive),
        ("rate_limited", errors.ApiError),
    ],
)
def test_recorded_error_bodies_map_to_fitsyncs_errors(name: str, expected: type) -> None:
    recorded = fixture("real_errors.json")[name]
    error = errors.for_status(recorded["status"], recorded["body"])(
        recorded["status"], "GET", "/athlete", recorded["body"]
    )
    assert type(error) is expected
    if name == "application_inactive":
        assert "inactive" in str(error) and "subscription" in str(error)
    if name == "missing_scope":
        assert error.scope == "activity:read"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "status, body",
    [
        (403, None),  # an HTML page: no JSON at all
        (403, {"message": "Forbidden", "errors": []}),
        (401, {"message": "x", "errors": {"field": "access_token"}}),  # errors an object
        (404, {"errors": [{"resource": "Activity"}]}),  # no message: not the service's payload
        (404, ["not", "an", "object"]),
    ],
)
def test_error_bodies_of_odd_shapes_are_said_as_such(status: int, body: Any) -> None:
    """Not the service's error payload: a plain ApiError (never a NotFound that would prove a deletion), whose message
    says so, and no IndexError or KeyError on the way."""
    fault = body if isinstance(body, dict) else None
    error = errors.for_status(status, fault)(status, "GET", "/athlete", fault)
    assert type(error) is (errors.Forbidden if body == {"message": "Forbidden", "errors": []} else errors.ApiError)
    if type(error) is errors.ApiError:
        assert "not the service's error payload" in str(error)


def test_a_servers_text_is_repeated_with_credentials_masked() -> None:
    echoed = {
        "message": "bad form: client_id=7&client_secret=9f8e7d6c&refresh_token=0123456789abcdef0123456789abcdef01",
        "errors": [{"resource": "RefreshToken", "field": "refresh_token", "code": "invalid"}],
    }
    said = str(errors.ApiError(400, "POST", "/oauth/token", echoed))
    assert "9f8e7d6c" not in said and "0123456789abcdef" not in said
    assert "client_secret=***" in said and "(RefreshToken.refresh_token: invalid)" in said


@pytest.mark.parametrize(
    ("text", "kept", "hidden"),
    [
        ("upstream status_code=502 for code=ab12cd", "status_code=502", "ab12cd"),  # `status_code` is no credential
        ("{'client_secret': 'sh4re', 'id': None}", "'client_secret': '***'", "sh4re"),  # a Python repr quoted back
        ('{"verify_token": "v3rify", "code": 12}', '"verify_token": "***"', "v3rify"),
        ("request 123e4567-e89b-12d3-a456-426614174000 failed", "123e4567-e89b-12d3-a456-426614174000", "\x00"),
    ],
    ids=["status_code", "python-repr", "verify_token", "request-id"],
)
def test_masking_hides_credentials_and_keeps_what_helps(text: str, kept: str, hidden: str) -> None:
    said = errors.masked(text)
    assert kept in said and hidden not in said, said


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"laps": [{"id": 7}, {"id": 7.5}]}, "laps[1].id=7.5 where an id belongs"),  # rounded onto lap 8: one lost
        ({"segment_efforts": [{"segment": {"id": True}}]}, "segment_efforts[0].segment.id=True where an id belongs"),
        ({"splits_metric": [{"average_heartrate": True}]}, "splits_metric[0].average_heartrate=True where a number"),
        ({"bikes": [{"id": "b1", "primary": "yes"}]}, "bikes[0].primary='yes' where true or false belongs"),
        ({"created_at": "last week"}, "created_at='last week' where a date belongs"),
    ],
)
def test_a_member_of_the_wrong_type_is_named_where_it_sits(body: dict[str, Any], said: str) -> None:
    from fitsync.client.records import wrong_member

    assert (wrong_member(body) or "").startswith(said)
    assert wrong_member({"id": "b1", "distance": 3.0, "primary": None, "gear": {"id": 12.0}}) is None
    # what the warehouse keeps raw without reading is never judged: a real segment's Local Legend counts as text
    segment = {"id": 229781, "distance": 2684.82, "local_legend": {"effort_count": "24", "athlete_id": 1}}
    assert wrong_member(segment) is None and wrong_member({"best_efforts": [{"distance": "400"}]}) is None


def test_the_members_checked_for_their_type_are_those_the_warehouse_reads_so() -> None:
    """records.NUMBER_MEMBERS, BOOLEAN_MEMBERS and INSTANT_MEMBERS are the members the mappings read as numbers,
    booleans and instants (ids aside: shape checks hold them; coordinates are pairs), and no member is read as text
    anywhere as well: a name of two types would refuse right answers."""
    from fitsync.client import records
    from fitsync.warehouse.columns import Read
    from fitsync.warehouse.loads import BUNDLES
    from fitsync.warehouse.sources import ARRAY_PATHS

    read: dict[str, set[str]] = {"number": set(), "boolean": set(), "instant": set(), "text": set()}
    for mappings in BUNDLES.values():
        for mapping in mappings:
            for column in mapping.columns:
                names = [step for step in column.path if isinstance(step, str)]
                if not names or isinstance(column.path[-1], int):  # a coordinate of a pair
                    continue
                if column.kind is Read.VALUE:
                    kind = "boolean" if column.type == "BOOLEAN" else "number"
                else:
                    kind = "instant" if column.kind in (Read.INSTANT, Read.LOCAL) else "text"
                read[kind].add(names[-1])
    read["number"] -= {"id"}
    assert records.NUMBER_MEMBERS == read["number"]
    assert records.BOOLEAN_MEMBERS == read["boolean"] and records.INSTANT_MEMBERS == read["instant"]
    assert not (read["number"] | read["boolean"] | read["instant"]) & read["text"]
    inside = {step for m in (mm for ms in BUNDLES.values() for mm in ms) for c in m.columns for step in c.path[:-1]}
    inside |= set(ARRAY_PATHS) | {"segment", "distribution_buckets", "bikes", "shoes"}  # unnested by their sources
    assert {s for s in inside if isinstance(s, str) and not s.startswith(("start_latlng", "end_latlng", "map"))} | {
        f"{p}_{s}_totals" for p in ("recent", "ytd", "all") for s in ("ride", "run", "swim")
    } == records.READ_INSIDE | {"zones"}
    for path in sorted(FIXTURES.glob("*.json")):  # every recorded answer of the real service passes
        assert records.wrong_member(json.loads(path.read_text())) is None, path.name


def test_the_real_token_answer_has_no_scope_and_fitsync_does_not_need_it() -> None:
    body = fixture("real_token_exchange.json")
    assert "scope" not in body and body["athlete"]["id"] == ATHLETE
    assert duckdb is not None  # the warehouse tests above use the real engine


def test_a_summary_with_a_date_that_is_not_one_is_flagged_not_fatal(tmp_path: Path) -> None:
    from fitsync.client.records import record
    from fitsync.sync import progress

    store = StateStore(tmp_path / "state.db")
    good, odd = fixture("swagger_athlete_activities.json")
    odd = {**odd, "start_date": "yesterday-ish"}
    summaries = [record("activity", good), record("activity", odd)]
    assert summaries[1].issues == ("unexpected start_date='yesterday-ish'",)
    with store.transaction() as conn:
        outcome = progress.record_listing(conn, ATHLETE, summaries)
    assert outcome.new == 1 and progress.known_ids(store, ATHLETE) == {good["id"]}
