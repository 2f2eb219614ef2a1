"""Conformance: rate limits, the error table, fault injection and counters, over the real sandbox server.

The spec leaves rate limits "not shown"; they follow the issue (item 6) and the real-service notes. Windows are
shortened with settings (`short_window=2`) and the tests wait on the clock crossing a window boundary, never on
a fixed sleep. Every test uses fresh apps, so each has its own rate budget.

| § | row | what the row says (short) | test |
|---|---|---|---|
| 7 | 1 | any operation fails unexpectedly → the default response carries a Fault | `test_s7_r1_unexpected_failure_carries_fault` |
| — | issue 5 | situations → status → Fault payload (400, 401, 402, 403, 404, 405, 413, 429) | `test_error_table`; docs/sandbox-errors.md kept true by `test_error_doc_lists_every_situation` |
| — | issue 6 | rate-limit headers on every API response, defaults, per app, windows, 429 payloads | `test_rate_limit_*` |
| — | issue 8 | fault injection (latency, 5xx share, dropped connections, answers lost after taking effect), never on /sandbox; counters | `test_fault_*`, `test_counters_*` |
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .sandbox_harness import ALL_SCOPES, Grant, Harness, Receiver, assert_fault, wait_until

HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Usage", "X-ReadRateLimit-Limit", "X-ReadRateLimit-Usage")
PAIR = re.compile(r"^\d+,\d+$")
MANUAL = {"name": "Rate test", "sport_type": "Run", "start_date_local": "2026-02-01T07:00:00Z", "elapsed_time": 600}


def read_limit_body(field: str) -> dict[str, Any]:
    return {
        "message": "Rate Limit Exceeded",
        "errors": [{"resource": "Application", "field": field, "code": "exceeded"}],
    }


def usage(response: httpx.Response) -> dict[str, tuple[int, int]]:
    """The four rate headers as (15-minute, daily) pairs; asserts they are all there and well formed."""
    out = {}
    for name in HEADERS:
        value = response.headers.get(name)
        assert value is not None and PAIR.match(value), f"{name}: {value!r} on {response.status_code}"
        short, daily = value.split(",")
        out[name] = (int(short), int(daily))
    return out


def fresh_window(window: float) -> float:
    """Wait until the clock is in the first half of a rate window (so what follows fits in it); return now."""
    wait_until(lambda: time.time() % window < window / 2, window, "the start of a rate window", interval=0.005)
    return time.time()


def next_boundary(t: float, window: float) -> float:
    return (t // window + 1) * window


_OWN_ATHLETE: dict[str, int] = {}


def own_athlete(sb: Harness) -> int:
    """An athlete of this module's own (far from the seeded ones), so creating activities disturbs no other test."""
    if sb.server.base_url not in _OWN_ATHLETE:
        response = sb.console.post("/athletes", json={"firstname": "Limit", "lastname": "Tester", "region": "Girona"})
        assert response.status_code == 200, response.text
        _OWN_ATHLETE[sb.server.base_url] = response.json()["id"]
    return _OWN_ATHLETE[sb.server.base_url]


def mine(sb: Harness, **kwargs: Any) -> Grant:
    """A fresh app connected by this module's athlete."""
    return sb.connect(athlete_id=own_athlete(sb), **kwargs)


@pytest.fixture
def grant(sb: Harness) -> Grant:
    return mine(sb)


# --- rate limits ----------------------------------------------------------------------------------------------


def test_rate_limit_defaults_and_header_format(sb: Harness, grant: Grant) -> None:
    settings = sb.console.get("/settings").json()
    defaults = {
        k: settings[k]
        for k in (
            "overall_limit_short",
            "overall_limit_long",
            "read_limit_short",
            "read_limit_long",
            "short_window",
            "long_window",
        )
    }
    assert defaults == {
        "overall_limit_short": 200,
        "overall_limit_long": 2000,
        "read_limit_short": 100,
        "read_limit_long": 1000,
        "short_window": 900,
        "long_window": 86400,
    }
    response = sb.get(grant, "/athlete")
    assert response.status_code == 200
    assert {k: response.headers[k] for k in HEADERS} == {
        "X-RateLimit-Limit": "200,2000",
        "X-RateLimit-Usage": "1,1",
        "X-ReadRateLimit-Limit": "100,1000",
        "X-ReadRateLimit-Usage": "1,1",
    }
    assert "Retry-After" not in response.headers


def test_rate_limit_headers_on_every_api_response(sb: Harness) -> None:
    grant = mine(sb)
    narrow = mine(sb, scopes=("read",))
    non_premium = sb.connect(athlete_id=sb.athlete_id(premium=False))
    subscriber = sb.new_app()
    responses = [
        sb.get(grant, "/athlete"),  # 200
        sb.api(grant, "POST", "/activities", data=MANUAL),  # 201
        sb.get(grant, "/segments/explore", params={"bounds": "1,2,3"}),  # 400
        sb.get(narrow, "/athlete/activities"),  # 401 missing scope
        sb.get(non_premium, "/segment_efforts", params={"segment_id": 1}),  # 402
        sb.get(grant, "/activities/1"),  # 404
        sb.http.get("/api/v3/push_subscriptions", params=subscriber.creds()),  # client-authenticated 200
        sb.http.delete("/api/v3/push_subscriptions/1", params=subscriber.creds()),  # client-authenticated 404
    ]
    assert [r.status_code for r in responses] == [200, 201, 400, 401, 402, 404, 200, 404]
    for response in responses:
        usage(response)
    with sb.settings(read_limit_short=0):
        refused = sb.get(grant, "/athlete")
    assert refused.status_code == 429
    usage(refused)


def test_rate_limit_post_activities_counts_only_toward_overall(sb: Harness, grant: Grant) -> None:
    first = usage(sb.get(grant, "/athlete"))
    created = sb.api(grant, "POST", "/activities", data=MANUAL)
    assert created.status_code == 201, created.text
    after = usage(created)
    assert first["X-RateLimit-Usage"] == (1, 1) and first["X-ReadRateLimit-Usage"] == (1, 1)
    assert after["X-RateLimit-Usage"] == (2, 2)
    assert after["X-ReadRateLimit-Usage"] == (1, 1)  # not a read
    assert usage(sb.get(grant, "/athlete"))["X-ReadRateLimit-Usage"] == (2, 2)


def test_rate_limit_read_budget_spent_is_429_read(sb: Harness, grant: Grant) -> None:
    with sb.settings(short_window=2, read_limit_short=5):
        fresh_window(2)
        reads = [sb.get(grant, "/athlete") for _ in range(5)]
        refused = sb.get(grant, "/athlete")
    assert [r.status_code for r in reads] == [200] * 5
    assert [usage(r)["X-ReadRateLimit-Usage"][0] for r in reads] == [1, 2, 3, 4, 5]
    assert refused.status_code == 429
    assert refused.json() == read_limit_body("read rate limit")
    assert usage(refused)["X-ReadRateLimit-Limit"] == (5, 1000)
    assert usage(refused)["X-ReadRateLimit-Usage"] == (6, 6)  # the refused request counts: usage passes the limit


def test_rate_limit_overall_budget_spent_is_429_overall(sb: Harness, grant: Grant) -> None:
    with sb.settings(short_window=2, overall_limit_short=3):
        fresh_window(2)
        allowed = [
            sb.api(grant, "POST", "/activities", data=MANUAL),
            sb.get(grant, "/athlete"),
            sb.api(grant, "POST", "/activities", data=MANUAL),
        ]
        refused_write = sb.api(grant, "POST", "/activities", data=MANUAL)
        refused_read = sb.get(grant, "/athlete")
    assert [r.status_code for r in allowed] == [201, 200, 201]
    for refused in (refused_write, refused_read):
        assert refused.status_code == 429
        assert refused.json() == read_limit_body("overall rate limit")
    assert usage(refused_read)["X-RateLimit-Usage"] == (5, 5)


def test_rate_limit_writes_go_on_when_only_the_read_budget_is_spent(sb: Harness, grant: Grant) -> None:
    with sb.settings(short_window=2, read_limit_short=2):
        fresh_window(2)
        assert [sb.get(grant, "/athlete").status_code for _ in range(3)] == [200, 200, 429]
        created = sb.api(grant, "POST", "/activities", data=MANUAL)
    assert created.status_code == 201, created.text
    assert usage(created)["X-RateLimit-Usage"] == (4, 4)
    assert usage(created)["X-ReadRateLimit-Usage"] == (3, 3)


def test_rate_limit_refused_requests_count_toward_daily_usage(sb: Harness, grant: Grant) -> None:
    with sb.settings(read_limit_long=3):
        responses = [sb.get(grant, "/athlete") for _ in range(6)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429, 429]
    assert [usage(r)["X-ReadRateLimit-Usage"][1] for r in responses] == [1, 2, 3, 4, 5, 6]
    assert all(r.json() == read_limit_body("read rate limit") for r in responses[3:])
    assert usage(responses[-1])["X-ReadRateLimit-Limit"] == (100, 3)
    assert usage(responses[-1])["X-RateLimit-Usage"] == (6, 6)


def test_rate_limit_window_resets_at_natural_boundary(sb: Harness, grant: Grant) -> None:
    window = 2
    with sb.settings(short_window=window, read_limit_short=5):
        # Start in the second half of a window: the boundary then comes sooner than one window length after the
        # first request, so a budget that returns there is on the natural boundary, not a sliding window.
        wait_until(
            lambda: window * 0.5 <= time.time() % window < window * 0.75, 2 * window, "mid-window", interval=0.005
        )
        first = time.time()
        boundary = next_boundary(first, window)
        statuses = [sb.get(grant, "/athlete").status_code for _ in range(6)]
        assert time.time() < boundary, "setup too slow for the window"
        assert statuses == [200] * 5 + [429]
        wait_until(lambda: time.time() >= boundary + 0.01, 2 * window, "the window boundary", interval=0.005)
        again = sb.get(grant, "/athlete")
        assert time.time() - first < window
    assert again.status_code == 200, again.text
    assert usage(again)["X-ReadRateLimit-Usage"] == (1, 7)  # the short window restarted; the day did not
    assert usage(again)["X-RateLimit-Usage"] == (1, 7)


def test_rate_limit_daily_window_resets_at_natural_boundary(sb: Harness, grant: Grant) -> None:
    day = 3  # a "daily" window of three seconds: multiples of 3 s since the epoch
    with sb.settings(short_window=1, long_window=day, read_limit_long=2):
        wait_until(lambda: time.time() % day < day / 2, 2 * day, "the start of a daily window", interval=0.005)
        first = time.time()
        statuses = [sb.get(grant, "/athlete").status_code for _ in range(3)]
        assert time.time() < next_boundary(first, day), "setup too slow for the window"
        wait_until(
            lambda: time.time() >= next_boundary(first, day) + 0.01, 2 * day, "the daily boundary", interval=0.005
        )
        again = sb.get(grant, "/athlete")
    assert statuses == [200, 200, 429]
    assert again.status_code == 200, again.text
    assert usage(again)["X-ReadRateLimit-Usage"] == (1, 1)


def test_rate_limit_is_per_application(sb: Harness) -> None:
    spent, other = mine(sb), mine(sb)
    with sb.settings(short_window=2, read_limit_short=2):
        fresh_window(2)
        assert [sb.get(spent, "/athlete").status_code for _ in range(3)] == [200, 200, 429]
        unaffected = sb.get(other, "/athlete")
        second_token_same_app = sb.connect(athlete_id=sb.athlete_id(premium=False), app=spent.app)
        same_app = sb.get(second_token_same_app, "/athlete")
    assert unaffected.status_code == 200
    assert usage(unaffected)["X-ReadRateLimit-Usage"] == (1, 1)
    assert same_app.status_code == 429  # the budget belongs to the app, not the athlete or the token
    assert usage(same_app)["X-ReadRateLimit-Usage"] == (4, 4)


# --- errors ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCase:
    situation: str
    status: int
    resource: str
    field: str
    code: str
    make: Callable[[Harness], httpx.Response]

    def __str__(self) -> str:
        return self.situation


def _activity_of(sb: Harness, athlete_id: int) -> int:
    listing = sb.get(sb.connect(athlete_id=athlete_id), "/athlete/activities", params={"per_page": 1})
    assert listing.status_code == 200, listing.text
    return listing.json()[0]["id"]


def _own_activity(sb: Harness, visibility: str = "everyone") -> int:
    response = sb.console.post(f"/athletes/{own_athlete(sb)}/activities", json={"visibility": visibility})
    assert response.status_code == 200, response.text
    return response.json()["id"]


def _a_segment(sb: Harness, grant: Grant) -> int:
    starred = sb.get(grant, "/segments/starred")
    assert starred.status_code == 200 and starred.json(), starred.text
    return starred.json()[0]["id"]


def _expired(sb: Harness) -> httpx.Response:
    with sb.settings(access_token_lifetime=1):
        grant = mine(sb)
    wait_until(lambda: time.time() > grant.expires_at, 5, "the token to expire")
    return sb.get(grant, "/athlete")


def _revoked(sb: Harness) -> httpx.Response:
    grant = mine(sb)
    assert sb.http.post("/oauth/deauthorize", params={"access_token": grant.access_token}).status_code == 200
    return sb.get(grant, "/athlete")


def _premium_only(sb: Harness) -> httpx.Response:
    grant = sb.connect(athlete_id=sb.athlete_id(premium=False))
    return sb.get(grant, "/segment_efforts", params={"segment_id": _a_segment(sb, grant)})


def _too_large(sb: Harness) -> httpx.Response:
    limit = sb.console.get("/settings").json()["max_body_bytes"]
    return sb.api(
        mine(sb),
        "PUT",
        "/athlete",
        content=b"weight=" + b"7" * limit,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


def _rate_limited(sb: Harness) -> httpx.Response:
    grant = mine(sb)
    with sb.settings(read_limit_short=0):
        return sb.get(grant, "/athlete")


def _overall_limited(sb: Harness) -> httpx.Response:
    grant = mine(sb)
    with sb.settings(overall_limit_short=0):
        return sb.api(grant, "POST", "/activities", data=MANUAL)


ERROR_CASES = (
    ErrorCase(
        "malformed parameter: explore bounds not 4 numbers",
        400,
        "Segment",
        "bounds",
        "invalid",
        lambda sb: sb.get(mine(sb), "/segments/explore", params={"bounds": "37.7,-122.5,37.8"}),
    ),
    ErrorCase(
        "parameter out of range: min_cat 9",
        400,
        "Segment",
        "min_cat",
        "invalid",
        lambda sb: sb.get(mine(sb), "/segments/explore", params={"bounds": "37.7,-122.5,37.8,-122.4", "min_cat": 9}),
    ),
    ErrorCase(
        "required parameter missing: explore without bounds",
        400,
        "Segment",
        "bounds",
        "missing",
        lambda sb: sb.get(mine(sb), "/segments/explore"),
    ),
    ErrorCase(
        "bad date: start_date_local not ISO 8601",
        400,
        "SegmentEffort",
        "start_date_local",
        "invalid",
        lambda sb: sb.get(mine(sb), "/segment_efforts", params={"segment_id": 1, "start_date_local": "last tuesday"}),
    ),
    ErrorCase(
        "bad JSON body",
        400,
        "Request",
        "body",
        "invalid",
        lambda sb: sb.api(
            mine(sb),
            "PUT",
            f"/activities/{_own_activity(sb)}",
            content=b'{"name": ',
            headers={"Content-Type": "application/json"},
        ),
    ),
    ErrorCase(
        "unknown grant_type at POST /oauth/token",
        400,
        "Application",
        "grant_type",
        "invalid",
        lambda sb: sb.http.post("/oauth/token", data={**sb.new_app().creds(), "grant_type": "password"}),
    ),
    ErrorCase("no access token", 401, "Athlete", "access_token", "missing", lambda sb: sb.get(None, "/athlete")),
    ErrorCase(
        "unknown access token",
        401,
        "Athlete",
        "access_token",
        "invalid",
        lambda sb: sb.get("0123456789abcdef", "/athlete"),
    ),
    ErrorCase("expired access token", 401, "Athlete", "access_token", "invalid", _expired),
    ErrorCase("revoked access token (after deauthorization)", 401, "Athlete", "access_token", "invalid", _revoked),
    ErrorCase(
        "missing scope: activities without activity:read",
        401,
        "AccessToken",
        "activity:read_permission",
        "missing",
        lambda sb: sb.get(mine(sb, scopes=("read",)), "/athlete/activities"),
    ),
    ErrorCase(
        "missing scope: Only You activity without activity:read_all",
        401,
        "AccessToken",
        "activity:read_all_permission",
        "missing",
        lambda sb: sb.get(mine(sb, scopes=("read", "activity:read")), f"/activities/{_own_activity(sb, 'only_me')}"),
    ),
    ErrorCase(
        "wrong client secret",
        401,
        "Application",
        "client_secret",
        "invalid",
        lambda sb: sb.http.get(
            "/api/v3/push_subscriptions", params={"client_id": sb.new_app().client_id, "client_secret": "wrong"}
        ),
    ),
    ErrorCase("subscription-only operation, non-subscriber", 402, "Athlete", "subscription", "required", _premium_only),
    ErrorCase(
        "not the owner: another athlete's activity",
        403,
        "Activity",
        "id",
        "forbidden",
        lambda sb: sb.get(
            sb.connect(athlete_id=sb.athlete_id(premium=False)), f"/activities/{_activity_of(sb, sb.athlete_id())}"
        ),
    ),
    ErrorCase(
        "unknown object: activity id", 404, "Activity", "id", "invalid", lambda sb: sb.get(mine(sb), "/activities/1")
    ),
    ErrorCase("unknown path", 404, "Request", "path", "invalid", lambda sb: sb.get(mine(sb), "/no/such/thing")),
    ErrorCase(
        "method not allowed: PATCH /athlete",
        405,
        "Request",
        "method",
        "invalid",
        lambda sb: sb.api(mine(sb), "PATCH", "/athlete"),
    ),
    ErrorCase("body over the size limit", 413, "Request", "body", "too large", _too_large),
    ErrorCase("read rate limit spent", 429, "Application", "read rate limit", "exceeded", _rate_limited),
    ErrorCase("overall rate limit spent", 429, "Application", "overall rate limit", "exceeded", _overall_limited),
)


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c.situation for c in ERROR_CASES])
def test_error_table(sb: Harness, case: ErrorCase) -> None:
    response = case.make(sb)
    body = assert_fault(response, case.status, case.field, case.code)
    assert body["errors"][0]["resource"] == case.resource
    assert response.headers["content-type"].startswith("application/json")


def test_error_doc_lists_every_situation() -> None:
    """docs/sandbox-errors.md shows, for each situation of the table above, the status and payload tested."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "sandbox-errors.md").read_text()
    rows = {
        cells[0]: cells
        for cells in (
            [c.strip() for c in line.strip().strip("|").split("|")]
            for line in doc.splitlines()
            if line.startswith("| ")
        )
    }
    for case in ERROR_CASES:
        assert case.situation in rows, case.situation
        _, status, payload = rows[case.situation]
        assert int(status) == case.status
        body = json.loads(payload.strip("`"))
        assert body["errors"][0] == {"resource": case.resource, "field": case.field, "code": case.code}


def test_s7_r1_unexpected_failure_carries_fault(sb: Harness, grant: Grant) -> None:
    with sb.settings(fault_error_rate=1.0):
        responses = [
            sb.get(grant, "/athlete"),
            sb.api(grant, "POST", "/activities", data=MANUAL),
            sb.refresh(grant.app, grant.refresh_token),
        ]
    for response in responses:
        assert response.status_code in (500, 502, 503)
        assert_fault(response, response.status_code)


# --- fault injection and counters -----------------------------------------------------------------------------


def test_fault_error_rate_half(sb: Harness, grant: Grant) -> None:
    before = sb.counters().get("injected_errors", 0)
    with sb.settings(fault_error_rate=0.5):
        responses = [sb.get(grant, "/athlete") for _ in range(40)]
    faulted = [r for r in responses if r.status_code >= 500]
    ok = [r for r in responses if r.status_code == 200]
    assert len(faulted) + len(ok) == 40
    assert faulted and ok, [r.status_code for r in responses]
    for response in faulted:
        assert response.status_code in (500, 502, 503)
        assert_fault(response, response.status_code)
    assert all(r.json()["id"] == grant.athlete_id for r in ok)
    assert sb.counters()["injected_errors"] - before == len(faulted)


def test_fault_drop_rate_drops_the_connection(sb: Harness, grant: Grant) -> None:
    before = sb.counters().get("injected_drops", 0)
    with sb.settings(fault_drop_rate=1.0):
        for _ in range(3):
            with httpx.Client(base_url=sb.server.base_url, timeout=5) as client:
                with pytest.raises(httpx.TransportError) as raised:
                    client.get("/api/v3/athlete", headers={"Authorization": f"Bearer {grant.access_token}"})
            assert isinstance(raised.value, (httpx.RemoteProtocolError, httpx.ReadError)), repr(raised.value)
    assert sb.counters()["injected_drops"] - before == 3
    assert sb.get(grant, "/athlete").status_code == 200  # restored


def test_fault_lost_responses_take_effect_and_lose_only_the_answer(sb: Harness) -> None:
    grant = sb.connect()
    before = sb.counters().get("injected_lost_responses", 0)
    with sb.settings(fault_lost_responses=1, fault_lost_response_match="POST /oauth/token"):
        assert sb.get(grant, "/athlete").status_code == 200  # not matched: answered
        with pytest.raises(httpx.TransportError) as raised:
            sb.refresh(grant.app, grant.refresh_token)
        assert isinstance(raised.value, (httpx.RemoteProtocolError, httpx.ReadError)), repr(raised.value)
        assert sb.console.get("/settings").json()["fault_lost_responses"] == 0  # counted down
        # the refresh took effect: the token it presented is spent, so asking again is refused
        again = sb.refresh(grant.app, grant.refresh_token)
        assert_fault(again, 400, "refresh_token", "invalid")
    assert sb.counters()["injected_lost_responses"] - before == 1


def test_fault_latency_is_added(sb: Harness, grant: Grant) -> None:
    with sb.settings(fault_latency_ms=300):
        started = time.monotonic()
        response = sb.get(grant, "/athlete")
        elapsed = time.monotonic() - started
        console_started = time.monotonic()
        assert sb.console.get("/athletes").status_code == 200
        console_elapsed = time.monotonic() - console_started
    assert response.status_code == 200
    assert elapsed >= 0.3
    assert console_elapsed < 0.3  # the console is never slowed


def test_fault_injection_never_touches_console(sb: Harness, grant: Grant) -> None:
    with sb.settings(fault_error_rate=1.0, fault_latency_ms=50):
        api = sb.get(grant, "/athlete")
        console = [
            sb.console.get("/athletes"),
            sb.console.get("/settings"),
            sb.console.get("/counters"),
            sb.console.get("/events"),
            sb.console.get("/deliveries"),
            sb.http.get("/sandbox/health"),
        ]
    assert api.status_code >= 500
    assert [r.status_code for r in console] == [200] * len(console)
    with sb.settings(fault_drop_rate=1.0):
        assert sb.console.get("/athletes").status_code == 200
        assert sb.console.put("/settings", json={}).status_code == 200


def test_counters_requests_and_429(sb: Harness, grant: Grant) -> None:
    before = sb.counters()
    with sb.settings(read_limit_short=2):
        statuses = [sb.get(grant, "/athlete").status_code for _ in range(5)]
    assert statuses == [200, 200, 429, 429, 429]
    after = sb.counters()
    assert after["requests"] - before.get("requests", 0) == 5
    assert after["status_429"] - before.get("status_429", 0) == 3
    assert after["status_200"] - before.get("status_200", 0) == 2
    sb.console.get("/athletes")  # console requests are not counted as requests
    assert sb.counters()["requests"] == after["requests"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rec:
        yield rec


def test_counters_deliveries(sb: Harness, receiver: Receiver) -> None:
    athlete = sb.console.post("/athletes", json={"region": "Girona"}).json()["id"]
    grant = sb.connect(scopes=ALL_SCOPES, athlete_id=athlete)
    hook = receiver.hook()
    created = sb.http.post(
        "/api/v3/push_subscriptions",
        data={**grant.app.creds(), "callback_url": hook.url, "verify_token": hook.verify_token},
    )
    assert created.status_code == 201, created.text
    before = sb.counters().get("deliveries", 0)
    for _ in range(2):
        assert sb.console.post(f"/athletes/{athlete}/activities", json={}).status_code == 200
    wait_until(lambda: len(hook.posts) == 2, 10, "two deliveries")
    wait_until(lambda: sb.counters()["deliveries"] - before == 2, 5, "the deliveries counter")
