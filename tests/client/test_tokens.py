"""Tokens: refreshed before expiry and after a 401, under a cross-process lock that never loses a rotated refresh
token (8 processes racing), and an invalid refresh token reported as "run `fitsync connect`".

| issue 3 | what | test |
|---|---|---|
| §4 Tokens | refreshed before it expires (safety margin) | test_refresh_before_expiry_within_the_margin |
| §4 Tokens | refreshed after a 401 | test_refresh_after_a_401_then_retry_once |
| §4 Tokens | …that another process did not already fix | test_a_401_another_process_already_fixed_is_not_refreshed_again |
| §4 Tokens | re-read under the lock, commit the new refresh token first; rotation race | test_rotation_race_8_processes_by_100_calls, test_rotation_race_soak (slow, `--soak-calls`) |
| §4 Tokens | invalid refresh token → needs re-authorization, message says what to run | test_invalid_refresh_token_flags_the_athlete, test_cli_athletes_shows_needs_reauth |
| §4 Tokens | a refresh whose answer was lost (the service rotated): told apart, needs re-authorization, says why | test_a_refresh_whose_answer_is_lost_is_told_apart_and_asks_for_a_new_consent |
"""

from __future__ import annotations

import json
import re
import time

import pytest
from click.testing import CliRunner

from fitsync.cli.main import main
from fitsync.client.errors import OAuthError, ReauthorizationRequired
from fitsync.client.runtime import FitsyncClient

from ..sandbox_harness import App, Harness, query, wait_until
from .conftest import Connected, MakeConfig, connect_athlete
from .support import (
    RequestLog,
    TokenProxy,
    cli_env,
    release_and_collect,
    start_workers,
    stored_access_token,
    stored_refresh_token,
)

UNLIMITED = dict(
    read_limit_short=1_000_000, read_limit_long=1_000_000, overall_limit_short=1_000_000, overall_limit_long=1_000_000
)


def trace(log: RequestLog) -> list[tuple[str, str, int | None]]:
    return [(s.method, s.path.removeprefix("/api/v3"), s.status) for s in log.sent]


def test_a_token_is_read_after_the_wait_for_the_rate_budget(sb: Harness, make_config: MakeConfig, app: App) -> None:
    """Under real limits a call can wait 15 minutes for the next window (hours for the daily one); a token read
    before that wait could expire on the way and cost a 401 and a second call. Tokens live 3 s here, the window
    is 4 s long and holds 2 calls: every third call waits past the first token's expiry."""
    with (
        sb.settings(
            access_token_lifetime=3,
            refresh_reuse_threshold=1,
            short_window=4,
            read_limit_short=2,
            overall_limit_short=4,
        ),
        FitsyncClient(make_config(refresh_margin=1, short_window=4)) as client,
    ):
        c = connect_athlete(sb, client, app, sb.athlete_id())
        log = RequestLog(client.transport.http)
        api = client.athlete(c.athlete_id)
        for _ in range(6):
            api.athlete()
    calls = trace(log)
    assert ("GET", "/athlete", 401) not in calls, calls
    assert calls.count(("GET", "/athlete", 200)) == 6 and ("POST", "/oauth/token", 200) in calls


def test_refresh_before_expiry_within_the_margin(sb: Harness, make_config: MakeConfig, app: App) -> None:
    # tokens live 5 s; the client refreshes when 2 s or less are left (the service then issues a new one)
    with (
        sb.settings(access_token_lifetime=5, refresh_reuse_threshold=2),
        FitsyncClient(make_config(refresh_margin=2)) as client,
    ):
        c = connect_athlete(sb, client, app, sb.athlete_id())
        log = RequestLog(client.transport.http)
        api = client.athlete(c.athlete_id)

        api.athlete()  # more than the margin left: used as is
        assert trace(log) == [("GET", "/athlete", 200)]
        assert log.sent[0].bearer == c.grant["access_token"]

        wait_until(lambda: c.grant["expires_at"] - time.time() <= 2, 6, "the token to enter the refresh margin")
        log.clear()
        api.athlete()
        # refreshed first, then the call with the new token: no 401 on the way
        assert trace(log) == [("POST", "/oauth/token", 200), ("GET", "/athlete", 200)]
        new_access = stored_access_token(client.config, c.athlete_id)
        assert log.sent[1].bearer == new_access != c.grant["access_token"]
        # the rotated refresh token was committed: the stored one is the live one, the first one is dead
        assert stored_refresh_token(client.config, c.athlete_id) != c.grant["refresh_token"]
        assert sb.refresh(app, c.grant["refresh_token"]).status_code == 400
        stored = client.tokens.athlete(c.athlete_id)
        assert stored is not None and stored.access_expires_at - time.time() > 2


def _store_access_token(c: Connected, token: str, expires_at: int) -> None:
    with c.client.store.transaction() as conn:
        conn.execute(
            "UPDATE athletes SET access_token = ?, access_expires_at = ? WHERE athlete_id = ?",
            (c.client.cipher.encrypt(token), expires_at, c.athlete_id),
        )


def test_refresh_after_a_401_then_retry_once(connected: Connected) -> None:
    # the stored access token looks valid for an hour but the service does not know it (expired or revoked there)
    _store_access_token(connected, "not-a-token-the-service-knows", int(time.time()) + 3600)
    log = RequestLog(connected.client.transport.http)
    api = connected.client.athlete(connected.athlete_id)

    assert api.athlete().id == connected.athlete_id
    assert trace(log) == [("GET", "/athlete", 401), ("POST", "/oauth/token", 200), ("GET", "/athlete", 200)]
    assert log.sent[0].bearer == "not-a-token-the-service-knows" and log.sent[2].bearer != log.sent[0].bearer

    log.clear()
    api.athlete()  # the refreshed token was stored
    assert trace(log) == [("GET", "/athlete", 200)]


def test_a_401_another_process_already_fixed_is_not_refreshed_again(
    sb: Harness, make_config: MakeConfig, app: App
) -> None:
    # the service issues a new access token on every refresh here
    with (
        sb.settings(refresh_reuse_threshold=10**9),
        FitsyncClient(make_config()) as one,
        FitsyncClient(make_config()) as other,
    ):
        c = connect_athlete(sb, one, app, sb.athlete_id())
        stale = one.tokens.access_token(c.athlete_id)
        fixed = other.tokens.refresh(c.athlete_id, rejected=stale)  # the other process met the 401 first
        assert fixed != stale

        log = RequestLog(one.transport.http)
        again = one.tokens.refresh(c.athlete_id, rejected=stale)
        assert again == fixed and log.sent == []  # re-read under the lock: nothing to do
        # and a 401 for the token that is stored now does refresh
        newer = one.tokens.refresh(c.athlete_id, rejected=fixed)
        assert newer not in (fixed, stale) and [s.path for s in log.sent] == ["/oauth/token"]


def test_invalid_refresh_token_flags_the_athlete(sb: Harness, connected: Connected) -> None:
    # the athlete revoked fitsync in the service's settings: access and refresh tokens die
    revoked = sb.console.post(f"/athletes/{connected.athlete_id}/revoke", json={"client_id": connected.app.client_id})
    assert revoked.status_code == 200
    log = RequestLog(connected.client.transport.http)
    api = connected.client.athlete(connected.athlete_id)

    with pytest.raises(ReauthorizationRequired) as caught:
        api.athlete()
    assert trace(log) == [("GET", "/athlete", 401), ("POST", "/oauth/token", 400)]
    assert "run `fitsync connect`" in str(caught.value) and str(connected.athlete_id) in str(caught.value)
    record = connected.client.tokens.athlete(connected.athlete_id)
    assert record is not None and record.status == "needs_reauth" and "RefreshToken" in (record.status_reason or "")

    # from now on every process knows without asking the service
    log.clear()
    with FitsyncClient(connected.config) as other:
        other_log = RequestLog(other.transport.http)
        with pytest.raises(ReauthorizationRequired, match="fitsync connect"):
            other.athlete(connected.athlete_id).activities().__next__()
        with pytest.raises(ReauthorizationRequired):
            api.athlete()
    assert log.sent == [] and other_log.sent == []

    # a new consent (`fitsync connect`) replaces the grant and clears the flag
    connect_athlete(sb, connected.client, connected.app, connected.athlete_id)
    record = connected.client.tokens.athlete(connected.athlete_id)
    assert record is not None and (record.status, record.status_reason) == ("connected", None)
    assert api.athlete().id == connected.athlete_id


def test_invalid_refresh_token_before_expiry(sb: Harness, connected: Connected) -> None:
    """The margin path (no 401 first): an expired token with a refresh token the service does not know."""
    with connected.client.store.transaction() as conn:
        conn.execute(
            "UPDATE athletes SET access_expires_at = ?, refresh_token = ? WHERE athlete_id = ?",
            (int(time.time()) - 10, connected.client.cipher.encrypt("garbage"), connected.athlete_id),
        )
    with pytest.raises(ReauthorizationRequired, match="run `fitsync connect`"):
        connected.client.athlete(connected.athlete_id).athlete()
    assert connected.client.tokens.athletes()[0].status == "needs_reauth"


def test_a_refresh_whose_answer_is_lost_is_told_apart_and_asks_for_a_new_consent(
    sb: Harness, make_config: MakeConfig, app: App, own_athlete: int
) -> None:
    """Spec §3.2: refresh token N is invalid as soon as N+1 is issued, so a refresh whose answer is lost in transit
    loses the grant; fitsync asks once more with N to tell that apart from a request that never took effect, and
    says so. Another athlete is not affected."""
    with (
        sb.settings(access_token_lifetime=5, refresh_reuse_threshold=2),
        FitsyncClient(make_config(refresh_margin=2)) as client,
    ):
        lost = connect_athlete(sb, client, app, own_athlete)
        other = connect_athlete(sb, client, app, sb.athlete_id())
        wait_until(lambda: lost.grant["expires_at"] - time.time() <= 2, 6, "the token to enter the refresh margin")
        log = RequestLog(client.transport.http)
        with sb.settings(fault_lost_responses=1, fault_lost_response_match="POST /oauth/token"):
            with pytest.raises(ReauthorizationRequired) as caught:
                client.athlete(lost.athlete_id).athlete()
        assert [(s.method, s.path, s.status) for s in log.sent] == [
            ("POST", "/oauth/token", None),
            ("POST", "/oauth/token", 400),
        ]
        message = str(caught.value)
        assert "lost in transit" in message and "run `fitsync connect`" in message
        assert lost.grant["refresh_token"] not in message and app.client_secret not in message
        record = client.tokens.athlete(lost.athlete_id)
        assert (
            record is not None and record.status == "needs_reauth" and "lost in transit" in (record.status_reason or "")
        )
        assert client.athlete(other.athlete_id).athlete().id == other.athlete_id  # the other grant is untouched

    # a new consent recovers the athlete
    with FitsyncClient(make_config()) as client:
        connect_athlete(sb, client, app, own_athlete)
        assert client.athlete(own_athlete).athlete().id == own_athlete


ODD_EXPIRIES = [21600.5, "in six hours", 1e30, None]  # a float, text, far off, none


@pytest.mark.parametrize("expires_at", ODD_EXPIRIES, ids=["float", "text", "far", "none"])
def test_an_odd_expiry_in_a_rotation_keeps_the_new_refresh_token(
    sb: Harness, make_config: MakeConfig, app: App, expires_at: object
) -> None:
    """The service rotated the refresh token, but the answer's expiry is odd: the new refresh token is saved all the
    same (the old one is dead), the new access token used, and the odd expiry only brings the next refresh nearer."""
    with TokenProxy(sb.server.base_url) as proxy:
        config = make_config(auth_url=proxy.url)
        with FitsyncClient(config) as client:
            aid = connect_athlete(sb, client, app, sb.athlete_id()).athlete_id

            def odd(status: int, form: bytes, body: bytes) -> tuple[int, str, bytes]:
                answer = json.loads(body)
                answer["expires_at"] = answer["expires_at"] - time.time() if isinstance(expires_at, float) else None
                if not isinstance(expires_at, float):
                    answer["expires_at"] = expires_at
                answer.pop("expires_in", None)
                return status, "application/json", json.dumps(answer).encode()

            proxy.rewrite = odd
            client.tokens.refresh(aid, rejected=client.tokens.access_token(aid))
            assert stored_refresh_token(config, aid) == proxy.issued[-1]  # the rotated one, on disk
            record = client.tokens.athlete(aid)
            assert record is not None and record.status == "connected"
            assert record.access_expires_at is not None
            assert time.time() + 600 < record.access_expires_at <= time.time() + 6 * 3600 + 5  # never one already past
            assert client.athlete(aid).athlete().id == aid  # the new access token works
            proxy.rewrite = None
            client.tokens.refresh(aid, rejected=client.tokens.access_token(aid))  # and the next rotation too
            assert stored_refresh_token(config, aid) == proxy.issued[-1]


def test_token_answers_of_another_server_say_so_lose_nothing_and_echo_no_secret(
    sb: Harness, make_config: MakeConfig, app: App
) -> None:
    """A page instead of a token answer, and a 400 that quotes the form it refused: a message that says what came
    (no parser's traceback, no client secret or refresh token in it), and the stored grant as it was."""
    with TokenProxy(sb.server.base_url) as proxy:
        config = make_config(auth_url=proxy.url)
        with FitsyncClient(config) as client:
            aid = connect_athlete(sb, client, app, sb.athlete_id()).athlete_id
            refresh, access = stored_refresh_token(config, aid), client.tokens.access_token(aid)
            proxy.pass_on = False
            proxy.rewrite = lambda status, form, body: (200, "text/html", b"<html>Sign in to the portal</html>")
            with pytest.raises(OAuthError, match="not a token answer [(]text/html[)]"):
                client.tokens.refresh(aid, rejected=access)
            proxy.rewrite = lambda status, form, body: (400, "application/json", b'{"message": "bad: ' + form + b'"}')
            with pytest.raises(OAuthError) as echoed:
                client.tokens.refresh(aid, rejected=access)
            said = str(echoed.value)
            assert refresh not in said and app.client_secret not in said and "token refresh failed" in said
            assert stored_refresh_token(config, aid) == refresh
            record = client.tokens.athlete(aid)
            assert record is not None and record.status == "connected"


def test_cli_athletes_shows_needs_reauth(sb: Harness, connected: Connected) -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["athletes"], env=cli_env(connected.config))
    rows = [line for line in listed.output.splitlines() if line.startswith(f"│ {connected.athlete_id} ")]
    assert listed.exit_code == 0 and len(rows) == 1 and "│ connected " in rows[0], listed.output
    headers = r"┃ athlete +┃ name +┃ status +┃ access token +┃ scopes"
    assert re.search(headers, listed.output), listed.output  # the headers name the columns
    assert runner.invoke(main, ["athletes", "-h"]).output.startswith("Usage: ")  # -h everywhere

    sb.console.post(f"/athletes/{connected.athlete_id}/revoke", json={"client_id": connected.app.client_id})
    with pytest.raises(ReauthorizationRequired):
        connected.client.athlete(connected.athlete_id).athlete()
    listed = runner.invoke(main, ["athletes"], env=cli_env(connected.config))
    assert listed.exit_code == 0
    [line] = [line for line in listed.output.splitlines() if line.startswith(f"│ {connected.athlete_id} ")]
    assert "│ needs_reauth" in line, listed.output  # the reason wraps within its cell, as long as the name leaves it
    assert "│ refused" in line and "expires" not in line, listed.output  # its expiry means nothing now
    cells = " ".join(" ".join(row.split("│")[3].split()) for row in listed.output.splitlines() if row.startswith("│"))
    assert f"run `fitsync connect` as athlete {connected.athlete_id}" in cells, listed.output  # and the fix
    [athlete] = json.loads(runner.invoke(main, ["athletes", "--json"], env=cli_env(connected.config)).stdout)
    assert athlete["status"] == "needs_reauth" and "RefreshToken" in athlete["status_reason"], athlete


# --- the rotation race -------------------------------------------------------------------------------------


# A hang guard, not a speed target: each call takes the state store's write lock twice, shared by all 8 processes.
# On 2 idle cores a process makes about 7 calls a second on PostgreSQL (18 on SQLite); with the cores 7 times
# oversubscribed, under 2.
CALL_SECONDS_AT_MOST = 1.0


def rotation_race(sb: Harness, make_config: MakeConfig, app: App, processes: int, calls: int) -> None:
    """`processes` fitsync processes share one FITSYNC_HOME and one athlete, `calls` API calls each, while access
    tokens live 2 s (refreshed 1 s before expiry, so a new one every ~1 s) and every refresh rotates the refresh
    token. 30 ms of service latency per request keeps the processes calling across many rotations."""
    with sb.settings(
        access_token_lifetime=2, refresh_reuse_threshold=1, rotate_refresh_tokens=True, fault_latency_ms=30, **UNLIMITED
    ):
        config = make_config(refresh_margin=1)
        with FitsyncClient(config) as client:
            c = connect_athlete(sb, client, app, sb.athlete_id())
        reports = release_and_collect(
            start_workers(config, [{"athlete_id": c.athlete_id, "calls": calls}] * processes),
            timeout=max(120.0, calls * CALL_SECONDS_AT_MOST),
        )
    # while the processes were calling (not while they started: on a loaded machine that takes seconds)
    calling = max(r["finished"] for r in reports) - min(r["started"] for r in reports)

    failures = [f for r in reports for f in r["failures"]]
    assert failures == [], failures
    assert sum(r["ok"] for r in reports) == processes * calls
    statuses: dict[str, int] = {}
    for r in reports:
        for k, v in r["statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
    # no process ever presented a refresh token that another had already rotated away
    assert statuses.get("POST token 400", 0) == 0, statuses
    # the race was real: the refresh token was rotated over and over while the processes were calling
    rotations = query(
        sb,
        """SELECT count(*) - 1 AS n FROM refresh_tokens r JOIN token_families f ON f.id = r.family_id
                             WHERE f.app_id = ?""",
        app.client_id,
    )[0]["n"]
    # a token is due every second of calling, plus the refresh's own round trip under the lock
    assert rotations >= max(2, int(calling * 0.75)), (rotations, calling, statuses)
    assert statuses.get("POST token 200", 0) == rotations, statuses
    # the final stored refresh token is the live one
    final = sb.refresh(app, stored_refresh_token(config, c.athlete_id))
    assert final.status_code == 200, final.text


@pytest.mark.postgres_slow  # its PostgreSQL variant with -m slow: the default run's 10 minutes
def test_rotation_race_8_processes_by_100_calls(sb: Harness, make_config: MakeConfig, app: App) -> None:
    rotation_race(sb, make_config, app, processes=8, calls=100)


@pytest.mark.slow
@pytest.mark.timeout(0)  # bounded by rotation_race's own timeout, which scales with --soak-calls
def test_rotation_race_soak(sb: Harness, make_config: MakeConfig, app: App, request: pytest.FixtureRequest) -> None:
    """Minutes of rotation under 8 processes (issue 7's reliability suite): zero failures. The default size
    (tests/conftest.py SOAK_CALLS) fits CI's slow run; longer on demand: `pytest -m slow -k soak --soak-calls 5000`."""
    rotation_race(sb, make_config, app, processes=8, calls=request.config.getoption("--soak-calls"))
