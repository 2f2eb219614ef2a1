"""The one transport: bounded retries of connection errors, timeouts and 5xx (every call eventually correct under
injected faults), never a blind retry of a create, never a retry of another 4xx, a timeout on every call.

| issue 3 | what | test |
|---|---|---|
| §6 Transport | 20 % 5xx + 10 % dropped connections → every call eventually correct | test_fault_injection_every_call_eventually_correct |
| §6 Transport | never blindly retry a non-idempotent create | test_create_is_not_retried_after_a_dropped_connection, test_create_is_not_retried_after_a_5xx |
| §6 Transport | errors before sending are always retried | test_connection_refused_is_retried_even_for_a_create |
| §6 Transport | never retry other 4xx | test_a_4xx_is_not_retried |
| §6 Transport | timeouts on every call | test_every_call_has_a_timeout |
"""

from __future__ import annotations

import datetime as dt
import socket
import time
from typing import Any

import httpx
import pytest

from fitsync.client.api import AthleteApi
from fitsync.client.errors import ApiError, NotFound
from fitsync.client.runtime import FitsyncClient
from fitsync.client.transport import UncertainOutcome

from ..sandbox_harness import App, Harness, query
from .conftest import Connected, MakeConfig, connect_athlete
from .support import RequestLog

# the PostgreSQL variants run with -m slow (tests/conftest.py): the default run's 10 minutes
pytestmark = pytest.mark.postgres_slow


def read_everything(api: AthleteApi) -> dict[str, Any]:
    """A small sync: the athlete, stats, zones, the activity list, and detail, laps and zones of a few."""
    activities = list(api.activities())
    result: dict[str, Any] = {
        "athlete": api.athlete().raw,
        "stats": api.stats().raw,
        "zones": api.zones().raw,
        "activities": [a.raw for a in activities],
    }
    for activity in activities[:3]:
        result[f"activity {activity.id}"] = api.activity(activity.id).raw
        result[f"laps {activity.id}"] = [lap.raw for lap in api.laps(activity.id)]
        result[f"zones {activity.id}"] = [z.raw for z in api.activity_zones(activity.id)]
    return result


def test_fault_injection_every_call_eventually_correct(sb: Harness, make_config: MakeConfig, app: App) -> None:
    with sb.settings(read_limit_short=10_000, overall_limit_short=10_000):
        # enough attempts that 30 % faults per attempt practically never exhaust them (0.3^12 per call)
        with FitsyncClient(make_config(max_retries=12)) as client:
            client.transport.sleep = lambda seconds: time.sleep(min(seconds, 0.1))  # the policy, with short backoffs
            c = connect_athlete(sb, client, app, sb.athlete_id())
            api = client.athlete(c.athlete_id)
            log = RequestLog(client.transport.http)
            expected = read_everything(api)
            calls = len(log.sent)
            # A read of ≈ 15 calls meets no fault at all once in ≈ 200 (0.7^15): read again until faults were met
            # (five reads: 0.7^75), each read whole and correct.
            for rounds in range(1, 6):
                log.clear()
                before = sb.counters()
                with sb.settings(fault_error_rate=0.2, fault_drop_rate=0.1):
                    got = read_everything(api)
                after = sb.counters()
                assert got == expected, rounds
                injected = {k: after.get(k, 0) - before.get(k, 0) for k in ("injected_errors", "injected_drops")}
                if sum(injected.values()):
                    break

    assert injected["injected_errors"] > 0 or injected["injected_drops"] > 0, injected
    answered = [s for s in log.sent if s.status == 200]
    assert len(answered) == calls  # each call succeeded once; every other attempt met an injected fault
    assert len(log.sent) == calls + sum(injected.values())


@pytest.fixture
def writer(sb: Harness, client: FitsyncClient, app: App, own_athlete: int) -> Connected:
    """A fresh athlete who granted activity:write (creates do not touch the seeded world)."""
    return connect_athlete(sb, client, app, own_athlete)


def create(c: Connected) -> Any:
    return c.client.athlete(c.athlete_id).create_activity(
        name="Lunch run",
        sport_type="Run",
        start_date_local=dt.datetime(2024, 5, 1, 12, 0),
        elapsed_time=1800,
        distance=5000.0,
    )


def activities_of(sb: Harness, athlete_id: int) -> int:
    return query(sb, "SELECT count(*) AS n FROM activities WHERE athlete_id = ?", athlete_id)[0]["n"]


@pytest.mark.sqlite_only  # the state store is incidental: the transport's retries
def test_create_is_not_retried_after_a_dropped_connection(sb: Harness, writer: Connected) -> None:
    writer.client.transport.max_retries, writer.client.transport.backoff_initial = 3, 0.01
    writer.client.transport.quiet_seconds = 0  # the service answers again at once (below)
    log = RequestLog(writer.client.transport.http)
    before = sb.counters()
    with sb.settings(fault_drop_rate=1.0):
        with pytest.raises(UncertainOutcome, match="may have reached the service") as uncertain:
            create(writer)
        assert isinstance(uncertain.value.__cause__, httpx.TransportError)
        # a read in the same conditions is retried, to the bound
        with pytest.raises(httpx.TransportError):
            writer.client.athlete(writer.athlete_id).athlete()
    after = sb.counters()
    sent = [(s.method, s.path.removeprefix("/api/v3")) for s in log.sent]
    assert sent == [("POST", "/activities")] + [("GET", "/athlete")] * 3
    assert {s.status for s in log.sent} == {None}
    assert after.get("injected_drops", 0) - before.get("injected_drops", 0) == 1 + 3
    # and with the faults gone the create works once
    assert create(writer).get("name") == "Lunch run"
    assert activities_of(sb, writer.athlete_id) == 1


@pytest.mark.sqlite_only  # the state store is incidental: the transport's retries
def test_create_is_not_retried_after_a_5xx(sb: Harness, writer: Connected) -> None:
    log = RequestLog(writer.client.transport.http)
    with sb.settings(fault_error_rate=1.0):
        with pytest.raises(ApiError) as error:
            create(writer)
    assert error.value.status in (500, 502, 503)
    assert [(s.method, s.status) for s in log.sent] == [("POST", error.value.status)]
    assert activities_of(sb, writer.athlete_id) == 0


@pytest.mark.sqlite_only  # the state store is incidental: the transport's retries
def test_connection_refused_is_retried_even_for_a_create(sb: Harness, writer: Connected) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = writer.config.replace(base_url=f"http://127.0.0.1:{port}/api/v3", max_retries=3)
    with FitsyncClient(config) as client:
        client.transport.backoff_initial = 0.01
        log = RequestLog(client.transport.http)
        with pytest.raises(httpx.ConnectError):
            create(Connected(client, writer.athlete_id, writer.app, writer.grant))
    assert [s.method for s in log.sent] == ["POST"] * 3 and {s.status for s in log.sent} == {None}
    # none reached the service: not calls a run reports ("FAILED (3 calls …)" said of a port that refused them all)
    assert client.transport.calls == 0


@pytest.mark.sqlite_only  # the state store is incidental: the transport's retries
def test_a_4xx_is_not_retried(connected: Connected) -> None:
    log = RequestLog(connected.client.transport.http)
    with pytest.raises(NotFound) as error:
        connected.client.athlete(connected.athlete_id).activity(1)
    assert error.value.status == 404 and error.value.resource == "Activity"
    assert [(s.path, s.status) for s in log.sent] == [("/api/v3/activities/1", 404)]


@pytest.mark.sqlite_only  # the state store is incidental: the transport's retries
def test_every_call_has_a_timeout(sb: Harness, connected: Connected) -> None:
    config = connected.config.replace(timeout=0.3, max_retries=2)
    with FitsyncClient(config) as client:
        client.transport.backoff_initial = 0.01
        log = RequestLog(client.transport.http)
        started = time.monotonic()
        with sb.settings(fault_latency_ms=2000):
            with pytest.raises(httpx.ReadTimeout):
                client.athlete(connected.athlete_id).athlete()
        elapsed = time.monotonic() - started
    assert len(log.sent) == 2 and elapsed < 2 * 0.3 + 1.5  # two bounded attempts, not a 2 s wait each
