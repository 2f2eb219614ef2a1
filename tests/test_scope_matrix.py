"""Scope matrix: every token-authenticated operation × scope sets, and private data that must never leak.

For each operation of `fitsync.sandbox.operations.OPERATIONS` that takes an access token (a new one without
a row in `ROWS` fails `test_every_operation_has_a_row`):
- the minimal scope set of its row is enough (2xx);
- for each scope the row requires, the broadest grant lacking it (every other scope, minus the ones implying
  it) is refused with 401 `{"resource": "AccessToken", "field": "<scope>_permission", "code": "missing"}`,
  and a refused write changes nothing.

Then what a token without the `*read_all` scopes must never see: Only You activities (listings, reads, laps,
zones, streams, efforts), private segments (read, starred, explore, efforts, activity details), the privacy zone
around the athlete's home (polylines and start/end points within 400 m), and the detailed athlete.

| § | row | what (issue 2, "Tests": the scope matrix; spec §5.2, §4.2) | test |
|---|---|---|---|
| 5.2 | all | every token operation has a row agreeing with the operation table | test_every_operation_has_a_row, test_no_row_without_an_operation |
| 5.2 | all | granted (minimal set) works | test_minimal_scopes_work |
| 5.2 | all | missing scope refused: 401 `<scope>_permission` missing, no change | test_missing_scope_is_refused |
| 5.6 | — | no token / bad token → 401 on every operation | test_no_token_or_a_bad_token_is_401 |
| 5.2 | 6 | Only You activities need activity:read_all (listings, reads, laps, zones, streams) | test_only_me_activities_are_never_listed_or_read_without_activity_read_all |
| 5.2 | 6 | efforts of Only You activities need activity:read_all | test_efforts_of_only_me_activities_are_never_listed_without_activity_read_all, test_segment_stats_leave_out_only_me_efforts_without_activity_read_all |
| 5.2 | 2 | private segments need read_all (read, starred, explore, efforts) | test_private_segments_are_invisible_without_read_all, test_private_segments_do_not_show_through_efforts_without_read_all |
| 5.2 | 5 | privacy-zone data needs activity:read_all | test_privacy_zone_is_cut_without_activity_read_all |
| 5.2 | 3 | all profile information needs profile:read_all | test_detailed_athlete_only_with_profile_read_all |
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import polyline
import pytest

from fitsync.sandbox.operations import OPERATIONS
from fitsync.sandbox.scopes import IMPLIES

from .sandbox_harness import ALL_SCOPES, Grant, Harness, assert_fault, query

PRIVACY_RADIUS_M = 400.0


@dataclass(frozen=True)
class World:
    """Ids the requests need, for the premium cyclist (athlete 0)."""

    athlete: int
    activity: int  # Everyone, with efforts on public segments
    segment: int  # public, with the athlete's efforts, already starred by the athlete
    effort: int  # on `activity`, public segment
    weight: float


Request = Callable[[World], tuple[str, str, dict[str, Any]]]


@dataclass(frozen=True)
class Row:
    minimal: tuple[str, ...]  # the smallest grant that works
    request: Request
    write: bool = False


ROWS: dict[str, Row] = {
    "getStats": Row(("read",), lambda w: ("GET", f"/athletes/{w.athlete}/stats", {})),
    "getLoggedInAthlete": Row(("read",), lambda w: ("GET", "/athlete", {})),
    "updateLoggedInAthlete": Row(
        ("profile:write",), lambda w: ("PUT", "/athlete", {"data": {"weight": str(w.weight)}}), write=True
    ),
    "getLoggedInAthleteZones": Row(("profile:read_all",), lambda w: ("GET", "/athlete/zones", {})),
    "getLoggedInAthleteStarredSegments": Row(("read",), lambda w: ("GET", "/segments/starred", {})),
    "exploreSegments": Row(
        ("read",), lambda w: ("GET", "/segments/explore", {"params": {"bounds": "-90,-180,90,180"}})
    ),
    "getSegmentById": Row(("read",), lambda w: ("GET", f"/segments/{w.segment}", {})),
    "starSegment": Row(
        ("profile:write",),
        lambda w: ("PUT", f"/segments/{w.segment}/starred", {"data": {"starred": "true"}}),
        write=True,
    ),
    "getEffortsBySegmentId": Row(
        ("activity:read",), lambda w: ("GET", "/segment_efforts", {"params": {"segment_id": w.segment}})
    ),
    "getSegmentEffortById": Row(("activity:read",), lambda w: ("GET", f"/segment_efforts/{w.effort}", {})),
    "createActivity": Row(
        ("activity:write",),
        lambda w: (
            "POST",
            "/activities",
            {
                "data": {
                    "name": "Scope matrix",
                    "sport_type": "Walk",
                    "start_date_local": "2016-02-02T08:00:00Z",
                    "elapsed_time": "900",
                }
            },
        ),
        write=True,
    ),
    "getActivityById": Row(("activity:read",), lambda w: ("GET", f"/activities/{w.activity}", {})),
    "updateActivityById": Row(
        ("activity:read", "activity:write"),
        lambda w: ("PUT", f"/activities/{w.activity}", {"json": {"description": None}}),
        write=True,
    ),
    "getLoggedInAthleteActivities": Row(("activity:read",), lambda w: ("GET", "/athlete/activities", {})),
    "getLapsByActivityId": Row(("activity:read",), lambda w: ("GET", f"/activities/{w.activity}/laps", {})),
    "getZonesByActivityId": Row(("activity:read",), lambda w: ("GET", f"/activities/{w.activity}/zones", {})),
    "getActivityStreams": Row(
        ("activity:read",), lambda w: ("GET", f"/activities/{w.activity}/streams", {"params": {"keys": "time"}})
    ),
    "getSegmentEffortStreams": Row(
        ("activity:read", "read_all"),
        lambda w: ("GET", f"/segment_efforts/{w.effort}/streams", {"params": {"keys": "time"}}),
    ),
}

TOKEN_OPERATIONS = [op for op in OPERATIONS if op.auth == "token"]


def without(scope: str) -> tuple[str, ...]:
    """Every scope except `scope` and those implying it: the broadest grant still lacking `scope`."""
    drop = {scope} | {s for s, implied in IMPLIES.items() if scope in implied}
    return tuple(s for s in ALL_SCOPES if s not in drop)


def refused_cases() -> list[tuple[str, str]]:
    return [
        (op.operation_id, scope)
        for op in TOKEN_OPERATIONS
        for scope in (ROWS[op.operation_id].minimal if op.operation_id in ROWS else ())
    ]


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, f"{response.status_code} != {status}: {response.text[:500]}"
    return response.json()


def assert_missing_scope(response: httpx.Response, scope: str) -> None:
    body = assert_fault(response, 401)
    assert body["message"] == "Authorization Error"
    assert body["errors"] == [{"resource": "AccessToken", "field": f"{scope}_permission", "code": "missing"}]


def distance_m(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat1, lng1, lat2, lng2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * 6_371_000 * math.asin(math.sqrt(h))


# fixtures ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(sb: Harness) -> World:
    athlete = sb.athlete_id(premium=True, index=0)
    row = query(
        sb,
        """SELECT e.id AS effort, e.activity_id AS activity, e.segment_id AS segment
                       FROM efforts e JOIN activities a ON a.id = e.activity_id JOIN segments s ON s.id = e.segment_id
                       WHERE e.athlete_id = ? AND a.visibility = 'everyone' AND s.private = 0 AND e.hidden = 0
                       ORDER BY e.id LIMIT 1""",
        athlete,
    )[0]
    weight = query(sb, "SELECT json_extract(data, '$.weight') AS w FROM athletes WHERE id = ?", athlete)[0]["w"]
    grant = sb.connect(athlete_id=athlete)  # star it up front, so starring in the matrix changes nothing
    ok(sb.api(grant, "PUT", f"/segments/{row['segment']}/starred", data={"starred": "true"}))
    return World(athlete, row["activity"], row["segment"], row["effort"], weight)


@pytest.fixture(scope="module")
def grants(sb: Harness, world: World) -> Callable[[tuple[str, ...]], Grant]:
    """One grant per distinct scope set (each on its own app, so its own rate budget)."""
    cache: dict[frozenset[str], Grant] = {}

    def get(scopes: tuple[str, ...]) -> Grant:
        key = frozenset(scopes)
        if key not in cache:
            cache[key] = sb.connect(scopes, athlete_id=world.athlete)
            assert set(cache[key].scope.split()) == key
        return cache[key]

    return get


def call(sb: Harness, grant: Grant, row: Row, world: World) -> httpx.Response:
    method, path, kwargs = row.request(world)
    return sb.api(grant, method, path, **kwargs)


# the matrix ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", TOKEN_OPERATIONS, ids=lambda op: op.operation_id)
def test_every_operation_has_a_row(op):
    assert op.operation_id in ROWS, f"add a scope-matrix row for {op.operation_id}"
    assert set(ROWS[op.operation_id].minimal) == set(op.scopes), "the row and the operation table disagree"


def test_no_row_without_an_operation():
    assert set(ROWS) == {op.operation_id for op in TOKEN_OPERATIONS}


@pytest.mark.parametrize("op", TOKEN_OPERATIONS, ids=lambda op: op.operation_id)
def test_minimal_scopes_work(sb, grants, world, op):
    row = ROWS[op.operation_id]
    response = call(sb, grants(row.minimal), row, world)
    assert 200 <= response.status_code < 300, f"{op.operation_id}: {response.status_code} {response.text[:300]}"
    assert response.status_code == op.status


@pytest.mark.parametrize(("operation_id", "scope"), refused_cases(), ids=lambda v: str(v))
def test_missing_scope_is_refused(sb, grants, world, operation_id, scope):
    row = ROWS[operation_id]
    grant = grants(without(scope))
    before = sb.snapshot() if row.write else None
    assert_missing_scope(call(sb, grant, row, world), scope)
    if row.write:
        assert sb.snapshot() == before


@pytest.mark.parametrize("op", TOKEN_OPERATIONS, ids=lambda op: op.operation_id)
def test_no_token_or_a_bad_token_is_401(sb, world, op):
    method, path, kwargs = ROWS[op.operation_id].request(world)
    assert_fault(sb.api(None, method, path, **kwargs), 401, field="access_token")
    assert_fault(sb.api("not-a-token", method, path, **kwargs), 401, field="access_token", code="invalid")


# private data never leaks --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def only_me(sb: Harness, world: World) -> dict[str, Any]:
    """An Only You ride of athlete 0 with efforts on public segments (recorded via the console if the world has none)."""
    sql = """SELECT a.id FROM activities a WHERE a.athlete_id = ? AND a.visibility = 'only_me' AND EXISTS
             (SELECT 1 FROM efforts e JOIN segments s ON s.id = e.segment_id WHERE e.activity_id = a.id AND s.private = 0)
             ORDER BY a.id LIMIT 1"""
    rows = query(sb, sql, world.athlete)
    for _ in range(20):
        if rows:
            break
        ok(
            sb.console.post(
                f"/athletes/{world.athlete}/activities", json={"visibility": "only_me", "sport_type": "Ride"}
            )
        )
        rows = query(sb, sql, world.athlete)
    activity = rows[0]["id"]
    efforts = query(sb, "SELECT id, segment_id FROM efforts WHERE activity_id = ?", activity)
    return {"activity": activity, "efforts": efforts}


def test_only_me_activities_are_never_listed_or_read_without_activity_read_all(sb, grants, world, only_me):
    grant = grants(without("activity:read_all"))
    hidden = {
        r["id"]
        for r in query(sb, "SELECT id FROM activities WHERE athlete_id = ? AND visibility = 'only_me'", world.athlete)
    }
    assert only_me["activity"] in hidden
    listed: list[dict[str, Any]] = []
    for page in (1, 2, 3):
        listed += ok(sb.get(grant, "/athlete/activities", params={"page": page, "per_page": 200}))
    assert listed and not hidden & {a["id"] for a in listed}
    assert not any(a["private"] or a["visibility"] == "only_me" for a in listed)
    for path in ("", "/laps", "/zones", "/streams"):
        response = sb.get(grant, f"/activities/{only_me['activity']}{path}", params={"keys": "time"} if path else {})
        assert_missing_scope(response, "activity:read_all")
    for after in (0, 10**9):  # oldest-first and newest-first listings alike
        assert not hidden & {
            a["id"] for a in ok(sb.get(grant, "/athlete/activities", params={"after": after, "per_page": 200}))
        }
    reader = grants(("activity:read_all",))
    assert ok(sb.get(reader, f"/activities/{only_me['activity']}"))["private"] is True


def test_efforts_of_only_me_activities_are_never_listed_without_activity_read_all(sb, grants, world, only_me):
    grant = grants(without("activity:read_all"))
    reader = grants(ALL_SCOPES)
    segments = {e["segment_id"] for e in only_me["efforts"]} - {
        r["id"] for r in query(sb, "SELECT id FROM segments WHERE private = 1")
    }
    hidden_efforts = {e["id"] for e in only_me["efforts"]}
    for segment_id in segments:
        shown = ok(sb.get(grant, "/segment_efforts", params={"segment_id": segment_id, "per_page": 200}))
        assert not hidden_efforts & {e["id"] for e in shown}
        assert all(e["activity"]["id"] != only_me["activity"] for e in shown)
        everything = ok(sb.get(reader, "/segment_efforts", params={"segment_id": segment_id, "per_page": 200}))
        assert hidden_efforts & {e["id"] for e in everything}, "with activity:read_all they are listed"
    for effort_id in hidden_efforts:
        assert sb.get(grant, f"/segment_efforts/{effort_id}").status_code in (401, 403, 404)


def test_segment_stats_leave_out_only_me_efforts_without_activity_read_all(sb, grants, world, only_me):
    """athlete_segment_stats (PR time, effort count) agree with the efforts the token may list."""
    private = {r["id"] for r in query(sb, "SELECT id FROM segments WHERE private = 1")}
    segment_id = next(e["segment_id"] for e in only_me["efforts"] if e["segment_id"] not in private)
    for scopes in (without("activity:read_all"), ALL_SCOPES):
        grant = grants(scopes)
        efforts = [
            e
            for e in ok(sb.get(grant, "/segment_efforts", params={"segment_id": segment_id, "per_page": 200}))
            if not e["hidden"]
        ]
        stats = ok(sb.get(grant, f"/segments/{segment_id}"))["athlete_segment_stats"]
        assert stats["effort_count"] == len(efforts), scopes
        assert stats["pr_elapsed_time"] == min((e["elapsed_time"] for e in efforts), default=None), scopes
        if efforts:
            effort = ok(sb.get(grant, f"/segment_efforts/{efforts[0]['id']}"))
            assert effort["athlete_segment_stats"] == stats
    shown = ok(sb.get(grants(without("activity:read_all")), f"/segments/{segment_id}"))["athlete_segment_stats"]
    every = ok(sb.get(grants(ALL_SCOPES), f"/segments/{segment_id}"))["athlete_segment_stats"]
    hidden = [e for e in only_me["efforts"] if e["segment_id"] == segment_id]
    assert every["effort_count"] - shown["effort_count"] == len(
        query(sb, f"SELECT id FROM efforts WHERE id IN ({','.join(str(e['id']) for e in hidden)}) AND hidden = 0")
    )


def test_private_segments_are_invisible_without_read_all(sb, grants, world):
    grant = grants(without("read_all"))
    private = query(
        sb, "SELECT id, start_lat, start_lng FROM segments WHERE private = 1 AND owner_id = ?", world.athlete
    )
    assert private
    segment = private[0]
    assert sb.get(grant, f"/segments/{segment['id']}").status_code in (401, 404)
    starred = ok(sb.get(grant, "/segments/starred", params={"per_page": 200}))
    assert not any(s["private"] or s["id"] == segment["id"] for s in starred)
    bounds = (
        f"{segment['start_lat'] - 0.05},{segment['start_lng'] - 0.05},{segment['start_lat'] + 0.05},"
        f"{segment['start_lng'] + 0.05}"
    )
    for cats in ((0, 5), (0, 0), (1, 5)):
        explored = ok(
            sb.get(grant, "/segments/explore", params={"bounds": bounds, "min_cat": cats[0], "max_cat": cats[1]})
        )["segments"]
        assert segment["id"] not in {s["id"] for s in explored}
    assert sb.get(grant, "/segment_efforts", params={"segment_id": segment["id"]}).status_code in (401, 404)
    reader = grants(("read_all",))
    assert ok(sb.get(reader, f"/segments/{segment['id']}"))["private"] is True


def test_private_segments_do_not_show_through_efforts_without_read_all(sb, grants, world):
    """An effort on a private segment names the segment; without read_all neither shows."""
    private = {r["id"] for r in query(sb, "SELECT id FROM segments WHERE private = 1")}
    efforts = query(
        sb,
        """SELECT e.id, e.activity_id FROM efforts e JOIN activities a ON a.id = e.activity_id
                           WHERE e.athlete_id = ? AND a.visibility = 'everyone' AND e.hidden = 0
                           AND e.segment_id IN (SELECT id FROM segments WHERE private = 1) ORDER BY e.id LIMIT 3""",
        world.athlete,
    )
    assert efforts, "the world has efforts of athlete 0 on its private segment"
    grant = grants(without("read_all"))
    for effort in efforts:
        detail = ok(sb.get(grant, f"/activities/{effort['activity_id']}", params={"include_all_efforts": "true"}))
        assert not any(e["segment"]["id"] in private or e["segment"]["private"] for e in detail["segment_efforts"])
        assert sb.get(grant, f"/segment_efforts/{effort['id']}").status_code in (401, 404)
    reader = grants(ALL_SCOPES)
    detail = ok(sb.get(reader, f"/activities/{efforts[0]['activity_id']}"))
    assert any(e["segment"]["id"] in private for e in detail["segment_efforts"]), "read_all shows them"


def _home(sb: Harness, athlete: int) -> tuple[float, float]:
    row = query(
        sb,
        "SELECT json_extract(data, '$.home.lat') AS lat, json_extract(data, '$.home.lng') AS lng"
        " FROM athletes WHERE id = ?",
        athlete,
    )[0]
    return row["lat"], row["lng"]


def _near(points: list[tuple[float, float]], home: tuple[float, float]) -> list[tuple[float, float]]:
    return [p for p in points if distance_m(p, home) <= PRIVACY_RADIUS_M]


def test_privacy_zone_is_cut_without_activity_read_all(sb, grants, world):
    home = _home(sb, world.athlete)
    grant = grants(without("activity:read_all"))
    reader = grants(ALL_SCOPES)
    cut = {a["id"]: a for a in ok(sb.get(grant, "/athlete/activities", params={"per_page": 200}))}
    full = {a["id"]: a for a in ok(sb.get(reader, "/athlete/activities", params={"per_page": 200}))}
    exercised = 0
    for activity_id, activity in cut.items():
        points = polyline.decode(activity["map"]["summary_polyline"] or "")
        assert not _near(points, home), activity_id
        for key in ("start_latlng", "end_latlng"):
            if activity[key]:
                assert distance_m(tuple(activity[key]), home) > PRIVACY_RADIUS_M, (activity_id, key)
        original = polyline.decode(full[activity_id]["map"]["summary_polyline"] or "")
        if _near(original, home):
            exercised += 1
            assert full[activity_id]["start_latlng"] and not activity["start_latlng"]
            assert len(points) < len(original)
    assert exercised >= 5, "the world's rides start at home, so the zone is exercised"
    detailed_id = next(i for i in cut if _near(polyline.decode(full[i]["map"]["summary_polyline"] or ""), home))
    detailed = ok(sb.get(grant, f"/activities/{detailed_id}"))
    assert detailed["map"]["polyline"] and not _near(polyline.decode(detailed["map"]["polyline"]), home)
    assert not _near(polyline.decode(detailed["map"]["summary_polyline"]), home)
    assert _near(polyline.decode(ok(sb.get(reader, f"/activities/{detailed_id}"))["map"]["polyline"]), home)


def test_detailed_athlete_only_with_profile_read_all(sb, grants, world):
    detailed_keys = {"weight", "ftp", "bikes", "shoes", "measurement_preference", "clubs", "follower_count"}
    summary = ok(sb.get(grants(without("profile:read_all")), "/athlete"))
    assert summary["resource_state"] == 2 and not detailed_keys & set(summary)
    detailed = ok(sb.get(grants(("profile:read_all",)), "/athlete"))
    assert detailed["resource_state"] == 3 and detailed_keys <= set(detailed)
    for body in (summary, detailed):
        assert not {"home", "hr_zones", "ftp_history", "max_hr"} & set(body)
