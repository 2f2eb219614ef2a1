"""Malformed-input sweep: nothing a client sends yields a 500 or changes state.

Each row of `CASES` is one bad request — wrong types (strings for integers, "maybe" for booleans, 1e400, NaN),
missing required fields, huge values (ids beyond int64, a 10 MB body), bad JSON, wrong content types,
unknown paths, wrong methods, path ids that are not integers — sent over a fresh connection with a valid token
(so the refusal is about the input). Each must answer the expected 4xx Fault (`assert_fault`), leave the stored
state (`sb.snapshot()`) unchanged and not bump the `server_errors` counter.

The athlete console (`/sandbox/...`) is swept the same way without a key and with wrong keys: 401, no change.

| § | row | what (issue 2, "Tests": the malformed-input sweep; "Errors") | test |
|---|---|---|---|
| 7 | 1 | bad input → 4xx Fault, never 500, no change of state | test_malformed_request_is_a_4xx_fault_and_changes_nothing |
| 7 | 1 | every token operation is in the sweep | test_the_sweep_covers_every_token_operation |
| — | — | console refuses without the key, changes nothing | test_console_refuses_without_the_key_and_changes_nothing, test_console_table_covers_every_guarded_route, test_console_key_is_not_accepted_as_a_query_parameter_or_bearer_token |
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from fitsync.client import tls
from fitsync.sandbox import console_routes

from .sandbox_harness import STATE_TABLES, Grant, Harness, assert_fault, query

TEN_MB = 10 * 1024 * 1024
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Ctx:
    athlete: int
    activity: int  # Everyone activity of the athlete
    segment: int  # public segment
    effort: int
    grant: Grant


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # formatted with the Ctx fields; /api/v3 is prepended unless it starts with "!"
    status: int | tuple[int, ...]  # several: any of them (the field is then not checked)
    field: str | None = None
    build: Callable[[Ctx], dict[str, Any]] = lambda c: {}
    token: bool = True
    xfail: str | None = None


def form(**values: Any) -> Callable[[Ctx], dict[str, Any]]:
    return lambda c: {"data": values}


def params(**values: Any) -> Callable[[Ctx], dict[str, Any]]:
    return lambda c: {"params": values}


def raw(body: bytes, content_type: str) -> Callable[[Ctx], dict[str, Any]]:
    return lambda c: {"content": body, "headers": {"content-type": content_type}}


MANUAL = {"name": "Sweep", "sport_type": "Run", "start_date_local": "2020-02-02T08:00:00Z", "elapsed_time": "600"}


def manual(**changes: Any) -> Callable[[Ctx], dict[str, Any]]:
    return form(**{k: v for k, v in {**MANUAL, **changes}.items() if v is not None})


def chunks(total: int) -> Callable[[Ctx], dict[str, Any]]:
    def build(c: Ctx) -> dict[str, Any]:
        def body() -> Iterator[bytes]:
            for _ in range(total // (1024 * 1024)):
                yield b"a" * (1024 * 1024)

        return {"content": body(), "headers": {"content-type": "application/x-www-form-urlencoded"}}

    return build


CASES: list[Case] = [
    # path ids that are not integers, or beyond int64
    *[
        Case(f"activity id {bad!r}", "GET", f"/activities/{bad}", 400, "id")
        for bad in (
            "abc",
            "1.5",
            "-1",
            "0",
            "1e3",
            "0x10",
            "9223372036854775808",
            "99999999999999999999999",
            "NaN",
            "%D9%A1%D9%A2",
        )
    ],
    Case("activity id int64 max is just unknown", "GET", f"/activities/{INT64_MAX}", 404, "id"),
    Case("segment id text", "GET", "/segments/abc", 400, "id"),
    Case("segment id beyond int64", "GET", "/segments/9223372036854775808", 400, "id"),
    Case("effort id text", "GET", "/segment_efforts/abc", 400, "id"),
    Case("stats id text", "GET", "/athletes/me/stats", 400, "id"),
    Case("laps id float", "GET", "/activities/1.0/laps", 400, "id"),
    Case("zones id negative", "GET", "/activities/-5/zones", 400, "id"),
    Case("streams id text", "GET", "/activities/abc/streams", 400, "id", params(keys="time")),
    Case("streams without keys", "GET", "/activities/{activity}/streams", 400, "keys"),
    Case("streams keys too long", "GET", "/activities/{activity}/streams", 400, "keys", params(keys="time," * 200)),
    Case(
        "streams key_by_type maybe",
        "GET",
        "/activities/{activity}/streams",
        400,
        "key_by_type",
        params(keys="time", key_by_type="maybe"),
    ),
    Case(
        "effort streams id beyond int64",
        "GET",
        "/segment_efforts/9223372036854775808/streams",
        400,
        "id",
        params(keys="time"),
    ),
    Case("effort streams without keys", "GET", "/segment_efforts/{effort}/streams", 400, "keys"),
    Case("star id text", "PUT", "/segments/abc/starred", 400, "id", form(starred="true")),
    Case(
        "update id beyond int64",
        "PUT",
        "/activities/18446744073709551616",
        400,
        "id",
        lambda c: {"json": {"name": "x"}},
    ),
    # wrong query types
    *[
        Case(f"page {bad!r}", "GET", "/athlete/activities", 400, "page", params(page=bad))
        for bad in ("abc", "1.5", "1e400", "NaN", "9223372036854775808")
    ],
    *[
        Case(f"per_page {bad!r}", "GET", "/athlete/activities", 400, "per_page", params(per_page=bad))
        for bad in ("abc", "2.0", "1e3", "NaN", "-0.5")
    ],
    Case("starred page text", "GET", "/segments/starred", 400, "page", params(page="first")),
    Case("starred per_page 1e400", "GET", "/segments/starred", 400, "per_page", params(per_page="1e400")),
    Case("before text", "GET", "/athlete/activities", 400, "before", params(before="yesterday")),
    Case("after 1e400", "GET", "/athlete/activities", 400, "after", params(after="1e400")),
    Case("after negative", "GET", "/athlete/activities", 400, "after", params(after="-1")),
    Case("before beyond int64", "GET", "/athlete/activities", 400, "before", params(before=str(2**64))),
    Case(
        "include_all_efforts maybe",
        "GET",
        "/activities/{activity}",
        400,
        "include_all_efforts",
        params(include_all_efforts="maybe"),
    ),
    Case("segment_id text", "GET", "/segment_efforts", 400, "segment_id", params(segment_id="abc")),
    Case("segment_id missing", "GET", "/segment_efforts", 400, "segment_id"),
    Case("segment_id beyond int64", "GET", "/segment_efforts", 400, "segment_id", params(segment_id=str(2**63))),
    Case(
        "start_date_local not a date",
        "GET",
        "/segment_efforts",
        400,
        "start_date_local",
        lambda c: {"params": {"segment_id": c.segment, "start_date_local": "yesterday"}},
    ),
    Case(
        "end_date_local month 13",
        "GET",
        "/segment_efforts",
        400,
        "end_date_local",
        lambda c: {"params": {"segment_id": c.segment, "end_date_local": "2024-13-45T00:00:00Z"}},
    ),
    Case(
        "start_date_local year 9999",
        "GET",
        "/segment_efforts",
        400,
        "start_date_local",
        lambda c: {"params": {"segment_id": c.segment, "start_date_local": "9999-12-31T23:59:59+14:00"}},
    ),
    Case("bounds missing", "GET", "/segments/explore", 400, "bounds"),
    *[
        Case(f"bounds {bad!r}", "GET", "/segments/explore", 400, "bounds", params(bounds=bad))
        for bad in ("1,2,3", "1,2,3,4,5", "a,b,c,d", "NaN,0,1,1", "1e400,0,1,1", "10,0,-10,1", "0,0,100,1", "")
    ],
    Case("min_cat text", "GET", "/segments/explore", 400, "min_cat", params(bounds="0,0,1,1", min_cat="x")),
    Case("max_cat 6", "GET", "/segments/explore", 400, "max_cat", params(bounds="0,0,1,1", max_cat="6")),
    Case(
        "min_cat above max_cat",
        "GET",
        "/segments/explore",
        400,
        "min_cat",
        params(bounds="0,0,1,1", min_cat="4", max_cat="1"),
    ),
    Case(
        "activity_type swimming",
        "GET",
        "/segments/explore",
        400,
        "activity_type",
        params(bounds="0,0,1,1", activity_type="swimming"),
    ),
    # updateLoggedInAthlete
    Case("weight missing", "PUT", "/athlete", 400, "weight", form()),
    *[
        Case(f"weight {bad!r}", "PUT", "/athlete", 400, "weight", form(weight=bad))
        for bad in ("heavy", "NaN", "1e400", "-5", "0", "inf", "1e9")
    ],
    Case("weight JSON true", "PUT", "/athlete", 400, "weight", lambda c: {"json": {"weight": True}}),
    Case("weight JSON list", "PUT", "/athlete", 400, "weight", lambda c: {"json": {"weight": [70]}}),
    Case("weight as query text", "PUT", "/athlete", 400, "weight", params(weight="heavy")),
    # starSegment
    Case("starred missing", "PUT", "/segments/{segment}/starred", 400, "starred", form()),
    Case("starred maybe", "PUT", "/segments/{segment}/starred", 400, "starred", form(starred="maybe")),
    Case("starred 2", "PUT", "/segments/{segment}/starred", 400, "starred", form(starred="2")),
    Case("star unknown segment", "PUT", "/segments/1999999/starred", 404, "id", form(starred="true")),
    # createActivity: missing fields and wrong types
    *[
        Case(f"create without {name}", "POST", "/activities", 400, name, manual(**{name: None}))
        for name in ("name", "sport_type", "start_date_local", "elapsed_time")
    ],
    *[
        Case(f"create elapsed_time {bad!r}", "POST", "/activities", 400, "elapsed_time", manual(elapsed_time=bad))
        for bad in ("abc", "1e400", "NaN", "12.5", str(2**70), "-60", "0")
    ],
    *[
        Case(f"create distance {bad!r}", "POST", "/activities", 400, "distance", manual(distance=bad))
        for bad in ("far", "NaN", "1e400", "-1", "Infinity")
    ],
    Case("create trainer maybe", "POST", "/activities", 400, "trainer", manual(trainer="maybe")),
    Case("create commute 2", "POST", "/activities", 400, "commute", manual(commute="2")),
    *[
        Case(
            f"create start_date_local {bad!r}",
            "POST",
            "/activities",
            400,
            "start_date_local",
            manual(start_date_local=bad),
        )
        for bad in ("yesterday", "2024-02-30T10:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2024")
    ],
    Case("create sport_type unknown", "POST", "/activities", 400, "sport_type", manual(sport_type="Quidditch")),
    Case("create type unknown", "POST", "/activities", 400, "type", manual(type="Teleport")),
    Case("create name too long", "POST", "/activities", 400, "name", manual(name="n" * 256)),
    Case("create name with NUL", "POST", "/activities", 400, "name", manual(name="a\x00b")),
    Case(
        "create JSON elapsed_time 1e400",
        "POST",
        "/activities",
        400,
        "elapsed_time",
        lambda c: {
            "content": b'{"name":"x","sport_type":"Run","start_date_local":"2020-01-01T00:00:00Z",'
            b'"elapsed_time":1e400}',
            "headers": {"content-type": "application/json"},
        },
    ),
    Case(
        "create JSON elapsed_time NaN",
        "POST",
        "/activities",
        400,
        "elapsed_time",
        lambda c: {
            "content": b'{"name":"x","sport_type":"Run","start_date_local":"2020-01-01T00:00:00Z","elapsed_time":NaN}',
            "headers": {"content-type": "application/json"},
        },
    ),
    # updateActivityById: bad JSON and wrong types
    Case("update bad JSON", "PUT", "/activities/{activity}", 400, "body", raw(b'{"name": "x"', "application/json")),
    Case(
        "update JSON array", "PUT", "/activities/{activity}", 400, "body", raw(b'[{"name": "x"}]', "application/json")
    ),
    Case("update JSON string", "PUT", "/activities/{activity}", 400, "body", raw(b'"name"', "application/json")),
    Case(
        "update invalid UTF-8",
        "PUT",
        "/activities/{activity}",
        400,
        "body",
        raw(b'{"name": "\xff\xfe"}', "application/json"),
    ),
    Case(
        "update huge JSON number",
        "PUT",
        "/activities/{activity}",
        400,
        "body",
        raw(b'{"name": ' + b"9" * 5000 + b"}", "application/json"),
    ),
    Case(
        "update deeply nested JSON",
        "PUT",
        "/activities/{activity}",
        400,
        "body",
        raw(b"[" * 200_000, "application/json"),
    ),
    Case("update name NaN", "PUT", "/activities/{activity}", 400, "name", raw(b'{"name": NaN}', "application/json")),
    Case("update name number", "PUT", "/activities/{activity}", 400, "name", lambda c: {"json": {"name": 5}}),
    Case("update name list", "PUT", "/activities/{activity}", 400, "name", lambda c: {"json": {"name": ["a"]}}),
    Case(
        "update trainer maybe",
        "PUT",
        "/activities/{activity}",
        400,
        "trainer",
        lambda c: {"json": {"trainer": "maybe"}},
    ),
    Case(
        "update commute 1e400",
        "PUT",
        "/activities/{activity}",
        400,
        "commute",
        raw(b'{"commute": 1e400}', "application/json"),
    ),
    Case(
        "update sport_type unknown",
        "PUT",
        "/activities/{activity}",
        400,
        "sport_type",
        lambda c: {"json": {"sport_type": "Quidditch"}},
    ),
    Case(
        "update gear of nobody", "PUT", "/activities/{activity}", 400, "gear_id", lambda c: {"json": {"gear_id": "b1"}}
    ),
    Case("update unknown activity", "PUT", "/activities/8999999999", 404, "id", lambda c: {"json": {"name": "x"}}),
    # wrong content types
    Case(
        "update as text/plain",
        "PUT",
        "/activities/{activity}",
        415,
        None,
        raw(b'{"name": "sent as text"}', "text/plain"),
    ),
    Case(
        "update form body sent as JSON",
        "PUT",
        "/activities/{activity}",
        400,
        "body",
        raw(b"name=form%20as%20json", "application/json"),
    ),
    Case(
        "create as text/plain",
        "POST",
        "/activities",
        (400, 415),
        None,
        raw(b"name=x&sport_type=Run&start_date_local=2020-01-01T00:00:00Z&elapsed_time=60", "text/plain"),
    ),
    Case(
        "create as XML",
        "POST",
        "/activities",
        (400, 415),
        None,
        raw(b"<activity><name>x</name></activity>", "application/xml"),
    ),
    Case(
        "create binary form",
        "POST",
        "/activities",
        400,
        "name",
        raw(bytes(range(256)) * 16, "application/x-www-form-urlencoded"),
    ),
    Case("weight multipart without boundary", "PUT", "/athlete", 400, "body", raw(b"weight=70", "multipart/form-data")),
    Case(
        "weight multipart garbage", "PUT", "/athlete", 400, "body", raw(b"garbage", "multipart/form-data; boundary=xyz")
    ),
    # huge bodies
    Case(
        "create 10 MB", "POST", "/activities", 413, "body", lambda c: {"data": {**MANUAL, "description": "d" * TEN_MB}}
    ),
    Case("create 10 MB chunked", "POST", "/activities", 413, "body", chunks(TEN_MB)),
    Case(
        "update 10 MB JSON",
        "PUT",
        "/activities/{activity}",
        413,
        "body",
        lambda c: {"json": {"description": "d" * TEN_MB}},
    ),
    Case("weight 10 MB", "PUT", "/athlete", 413, "body", form(weight="7" * TEN_MB)),
    Case("description beyond its limit", "POST", "/activities", 400, "description", manual(description="d" * 10_001)),
    # unknown paths and wrong methods
    *[
        Case(f"unknown path {path}", "GET", path, 404, "path")
        for path in (
            "/nope",
            "/athlete/nope",
            "/activities/{activity}/nope",
            "/",
            "/segments/{segment}/starred/x",
            "!/api/v4/athlete",
            "!/api/v3athlete",
        )
    ],
    *[
        Case(f"{method} {path}", method, path, 405, "method")
        for method, path in (
            ("DELETE", "/athlete"),
            ("POST", "/athlete"),
            ("PATCH", "/activities/{activity}"),
            ("DELETE", "/activities/{activity}"),
            ("DELETE", "/segments/{segment}"),
            ("POST", "/segment_efforts"),
            ("PUT", "/athlete/activities"),
            ("GET", "/segments/{segment}/starred"),
            ("POST", "/athletes/{athlete}/stats"),
            ("PATCH", "/push_subscriptions"),
        )
    ],
    # tokens that are not tokens
    Case("no token", "GET", "/athlete", 401, "access_token", token=False),
    Case(
        "20 kB bearer token",
        "GET",
        "/athlete",
        401,
        "access_token",
        lambda c: {"headers": {"Authorization": "Bearer " + "x" * 20_000}},
        token=False,
    ),
    Case(
        "access_token query garbage",
        "GET",
        "/athlete",
        401,
        "access_token",
        params(access_token="\u2603" * 100),
        token=False,
    ),
    Case(
        "zones with a malformed bearer header",
        "GET",
        "/athlete/zones",
        401,
        "access_token",
        lambda c: {"headers": {"Authorization": "Bearer"}},
        token=False,
    ),
    Case(
        "basic auth",
        "GET",
        "/athlete",
        401,
        "access_token",
        lambda c: {"headers": {"Authorization": "Basic dXNlcjpwYXNz"}},
        token=False,
    ),
    # push subscriptions and the token endpoint
    Case(
        "subscription callback_url 300 chars",
        "POST",
        "/push_subscriptions",
        400,
        "callback_url",
        lambda c: {"data": {**_creds(c), "callback_url": "http://localhost/" + "x" * 283, "verify_token": "t"}},
        token=False,
    ),
    Case(
        "subscription client_id text",
        "POST",
        "/push_subscriptions",
        400,
        "client_id",
        lambda c: {
            "data": {
                "client_id": "abc",
                "client_secret": "x",
                "callback_url": "http://localhost/x",
                "verify_token": "t",
            }
        },
        token=False,
    ),
    Case(
        "subscription client_id beyond int64",
        "GET",
        "/push_subscriptions",
        400,
        "client_id",
        lambda c: {"params": {"client_id": str(2**64), "client_secret": "x"}},
        token=False,
    ),
    Case("subscription list without credentials", "GET", "/push_subscriptions", 400, "client_id", token=False),
    Case(
        "subscription delete id text",
        "DELETE",
        "/push_subscriptions/abc",
        400,
        "id",
        lambda c: {"params": _creds(c)},
        token=False,
    ),
    Case(
        "token grant_type unknown",
        "POST",
        "!/oauth/token",
        400,
        "grant_type",
        lambda c: {"data": {**_creds(c), "grant_type": "password"}},
        token=False,
    ),
    Case(
        "token code missing",
        "POST",
        "!/oauth/token",
        400,
        "code",
        lambda c: {"data": {**_creds(c), "grant_type": "authorization_code"}},
        token=False,
    ),
    Case(
        "token client_id text",
        "POST",
        "/oauth/token",
        400,
        "client_id",
        lambda c: {
            "data": {"client_id": "1e3", "client_secret": "x", "grant_type": "refresh_token", "refresh_token": "x"}
        },
        token=False,
    ),
]


def _creds(c: Ctx) -> dict[str, Any]:
    return c.grant.app.creds()


def state(sb: Harness) -> dict[str, Any]:
    """Stored state, except the delivery bookkeeping of events queued earlier (the worker may be retrying them)."""
    snap = sb.snapshot(tuple(t for t in STATE_TABLES if t != "events"))
    snap["event_ids"] = [r["id"] for r in query(sb, "SELECT id FROM events ORDER BY id")]
    snap["settings"] = query(sb, "SELECT value FROM meta WHERE key = 'settings'")
    return snap


def server_errors(sb: Harness) -> int:
    return sb.counters().get("server_errors", 0)


@pytest.fixture(scope="module")
def ids(sb: Harness) -> dict[str, int]:
    athlete = sb.athlete_id(premium=True, index=0)
    row = query(
        sb,
        """SELECT e.id AS effort, e.activity_id AS activity, e.segment_id AS segment
                       FROM efforts e JOIN activities a ON a.id = e.activity_id JOIN segments s ON s.id = e.segment_id
                       WHERE e.athlete_id = ? AND a.visibility = 'everyone' AND s.private = 0 ORDER BY e.id LIMIT 1""",
        athlete,
    )[0]
    return {"athlete": athlete, **row}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.name, marks=[pytest.mark.xfail(reason=c.xfail, strict=True)] if c.xfail else [])
        for c in CASES
    ],
)
def test_malformed_request_is_a_4xx_fault_and_changes_nothing(sb, ids, case):
    ctx = Ctx(grant=sb.connect(athlete_id=ids["athlete"]), **ids)
    path = case.path.format(**{k: getattr(ctx, k) for k in ("athlete", "activity", "segment", "effort")})
    url = path[1:] if path.startswith("!") else "/api/v3" + path
    kwargs = case.build(ctx)
    headers = dict(kwargs.pop("headers", {}))
    if case.token:
        headers.setdefault("Authorization", f"Bearer {ctx.grant.access_token}")
    before, errors = state(sb), server_errors(sb)
    with httpx.Client(
        base_url=sb.server.base_url, timeout=30, verify=tls.context()
    ) as client:  # a 500 may close the connection
        try:
            response = client.request(case.method, url, headers=headers, **kwargs)
        finally:
            after_errors = server_errors(sb)
    assert response.status_code < 500 and after_errors == errors, "a client's input produced a server error"
    if isinstance(case.status, tuple):
        assert response.status_code in case.status, response.text[:300]
        assert_fault(response, response.status_code)
    else:
        assert_fault(response, case.status, field=case.field)
    assert state(sb) == before


def test_the_sweep_covers_every_token_operation():
    from fitsync.sandbox.operations import OPERATIONS

    swept = {(c.method, c.path.split("?")[0]) for c in CASES}
    for op in OPERATIONS:
        if op.auth != "token":
            continue
        assert any(m == op.method and _matches(op.path, p) for m, p in swept), (
            f"no malformed-input case for {op.operation_id}"
        )


def _matches(template: str, path: str) -> bool:
    a, b = template.strip("/").split("/"), path.strip("/").split("/")
    return len(a) == len(b) and all(x == y or x == "{id}" for x, y in zip(a, b))


# the athlete console -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsoleCase:
    method: str
    path: str
    body: dict[str, Any] = field(default_factory=dict)


CONSOLE: list[ConsoleCase] = [
    ConsoleCase("GET", "/athletes"),
    ConsoleCase("POST", "/athletes", {"premium": True}),
    ConsoleCase("PUT", "/athletes/{athlete}/premium", {"premium": False}),
    ConsoleCase("POST", "/athletes/{athlete}/activities", {"visibility": "everyone"}),
    ConsoleCase("POST", "/athletes/{athlete}/revoke", {"client_id": 1}),
    ConsoleCase("PATCH", "/activities/{activity}", {"name": "console without key"}),
    ConsoleCase("DELETE", "/activities/{activity}"),
    ConsoleCase("POST", "/apps", {"name": "intruder", "callback_domain": "evil.example"}),
    ConsoleCase("GET", "/settings"),
    ConsoleCase("PUT", "/settings", {"max_body_bytes": 1, "read_limit_short": 0}),
    ConsoleCase("GET", "/counters"),
    ConsoleCase("DELETE", "/counters"),
    ConsoleCase("GET", "/events"),
    ConsoleCase("GET", "/deliveries"),
]
BAD_KEYS: list[str | bytes | None] = [None, "", "wrong", "KEY-WITH-LATIN-1-\u00e9".encode("latin-1")]


def test_console_table_covers_every_guarded_route(sb):
    routes = {
        (m, r.path.removeprefix("/sandbox"))
        for r in console_routes.routes(sb.server.state)
        for m in (r.methods or ())
        if m != "HEAD" and r.path != "/sandbox/health"
    }
    table = {(c.method, c.path.replace("{athlete}", "{id}").replace("{activity}", "{id}")) for c in CONSOLE}
    assert routes == table


@pytest.mark.parametrize("key", BAD_KEYS, ids=["no key", "empty key", "wrong key", "latin-1 key"])
@pytest.mark.parametrize("case", CONSOLE, ids=lambda c: f"{c.method} {c.path}")
def test_console_refuses_without_the_key_and_changes_nothing(sb, ids, case, key):
    path = case.path.format(athlete=ids["athlete"], activity=ids["activity"])
    headers = {} if key is None else {"X-Sandbox-Console-Key": key}
    before, counters, settings = state(sb), sb.counters(), sb.console.get("/settings").json()
    with httpx.Client(base_url=sb.server.base_url + "/sandbox", timeout=15, verify=tls.context()) as client:
        response = client.request(
            case.method,
            path,
            headers=headers,
            **({"json": case.body} if case.method in ("POST", "PUT", "PATCH") else {}),
        )
    body = assert_fault(response, 401)
    assert body["errors"][0]["resource"] == "Console"
    assert state(sb) == before
    assert sb.console.get("/settings").json() == settings
    after = sb.counters()
    assert after.get("requests", 0) >= counters.get("requests", 0) > 0  # not reset
    assert after.get("server_errors", 0) == counters.get("server_errors", 0)


def test_console_key_is_not_accepted_as_a_query_parameter_or_bearer_token(sb, ids):
    before = state(sb)
    key = sb.server.console_key
    with httpx.Client(base_url=sb.server.base_url + "/sandbox", timeout=15, verify=tls.context()) as client:
        assert_fault(client.post("/athletes", params={"key": key, "console_key": key}, json={}), 401)
        assert_fault(client.post("/athletes", headers={"Authorization": f"Bearer {key}"}, json={}), 401)
        assert_fault(
            client.put("/settings", headers={"X-Sandbox-Console-Key": key[:-1]}, json={"max_body_bytes": 1}), 401
        )
    assert state(sb) == before
