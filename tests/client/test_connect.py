"""`fitsync connect` end to end, as a person runs it: the real CLI in its own process, the sandbox's consent pages
driven over HTTP, the redirect delivered to the CLI's one-shot loopback listener (or pasted, headless).
Also `fitsync disconnect` and `fitsync athletes`.

| issue 3 | what | test |
|---|---|---|
| §3 OAuth | consent accepted: tokens stored, granted scopes reported | test_connect_accepted_stores_athlete_and_reports_scopes |
| §3 OAuth | error=access_denied → clear message, nothing stored | test_connect_denied_is_a_clear_error_and_stores_nothing |
| §3 OAuth | unticked scopes → exactly which data will be missing | test_connect_unticked_scopes_names_missing_data (2 variants) |
| §3 OAuth | random state checked on return | test_connect_rejects_a_redirect_with_another_state (2 variants) |
| §3 OAuth | headless: paste the redirected URL | test_connect_headless_paste_the_redirected_url |
| §3 OAuth | disconnect deauthorizes and deletes the stored tokens | test_disconnect_deauthorizes_and_forgets, test_disconnect_after_the_service_revoked |
"""

from __future__ import annotations

import queue
import re
import subprocess
import threading
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from click.testing import CliRunner

from fitsync.cli.main import main
from fitsync.client.config import Config
from fitsync.client.errors import ReauthorizationRequired
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.sandbox import browser

from ..processes import Terminal, popen
from ..sandbox_harness import Harness
from .conftest import Connected
from .support import FITSYNC, cli_env, env_for

# the PostgreSQL variants run with -m slow (tests/conftest.py): the default run's 10 minutes
pytestmark = pytest.mark.postgres_slow


class ConnectRun:
    """`fitsync connect …` in its own process; stdout and stderr merged and read by a thread."""

    def __init__(self, config: Config, *args: str) -> None:
        self.proc = popen(
            [*FITSYNC, "connect", *args],
            env=env_for(config),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._urls: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if "/oauth/authorize?" in line:
                self._urls.put(line.strip())
        self._urls.put(None)

    def authorize_url(self, timeout: float = 20.0) -> str:
        url = self._urls.get(timeout=timeout)
        assert url is not None, f"the CLI printed no authorize URL:\n{''.join(self.lines)}"
        return url

    def paste(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return code, "".join(self.lines)


def consent(sb: Harness, url: str, athlete_id: int, **kwargs: object) -> browser.Redirect:
    with sb.browser() as b:
        return browser.consent(b, url, athlete_id, **kwargs)  # type: ignore[arg-type]


def deliver(redirect_url: str) -> None:
    """What the athlete's browser does next: follow the redirect to the CLI's loopback listener."""
    response = httpx.get(redirect_url, timeout=10)
    assert response.status_code == 200 and "close this tab" in response.text


def stored(config: Config) -> list:  # type: ignore[type-arg]
    with FitsyncClient(config) as client:
        return client.tokens.athletes()


def test_connect_accepted_stores_athlete_and_reports_scopes(sb: Harness, config: Config) -> None:
    athlete_id = sb.athlete_id()
    run = ConnectRun(config, "--no-browser")
    url = run.authorize_url()
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert url.startswith(config.auth_url + "/oauth/authorize?")
    assert query["client_id"] == str(config.client_id) and len(query["state"]) >= 20
    assert urlsplit(query["redirect_uri"]).hostname == "127.0.0.1"
    assert set(query["scope"].split(",")) == {"read", "read_all", "profile:read_all", "activity:read_all"}
    assert config.client_secret.reveal() not in url

    redirect = consent(sb, url, athlete_id)
    assert redirect.url.startswith(query["redirect_uri"]) and redirect.params["state"] == query["state"]
    deliver(redirect.url)
    code, output = run.finish()

    assert code == 0, output
    [athlete] = stored(config)
    assert athlete.athlete_id == athlete_id and athlete.status == "connected"
    assert set(athlete.scopes.split()) == {"read", "read_all", "profile:read_all", "activity:read_all"}
    assert f"(athlete {athlete_id}); granted: {athlete.scopes}" in output
    assert f"Next: `fitsync sync --athlete {athlete_id}`" in output  # what to do now, as init says its next step
    assert "not granted" not in output
    # the stored tokens work: the client calls the API as this athlete without another consent
    with FitsyncClient(config) as client:
        assert client.athlete(athlete_id).athlete().id == athlete_id


def test_connect_denied_is_a_clear_error_and_stores_nothing(sb: Harness, config: Config) -> None:
    run = ConnectRun(config, "--no-browser")
    redirect = consent(sb, run.authorize_url(), sb.athlete_id(), accept=False)
    assert redirect.params["error"] == "access_denied"
    deliver(redirect.url)
    code, output = run.finish()

    assert code != 0
    assert "denied access" in output and "nothing was stored" in output
    assert "Traceback" not in output
    assert stored(config) == []


def test_connect_with_a_wrong_client_secret_names_the_setting(sb: Harness, config: Config) -> None:
    wrong = config.replace(client_secret=Secret("not-the-apps-secret"))
    run = ConnectRun(wrong, "--no-browser")
    deliver(consent(sb, run.authorize_url(), sb.athlete_id()).url)
    code, output = run.finish()

    assert code == 1 and "the code exchange failed with 401" in output, output
    assert "check client_id and client_secret" in output and "`fitsync init`" in output, output
    assert "not-the-apps-secret" not in output and "Traceback" not in output
    assert stored(config) == []


@pytest.mark.parametrize(
    ("requested", "untick", "missing", "not_missing"),
    [
        (
            None,
            ("read_all", "activity:read_all"),
            {"read_all": "private segments", "activity:read_all": "activities (Only You ones too)"},
            ("read ", "profile:read_all"),
        ),
        (
            "read,activity:read,activity:read_all",
            ("activity:read_all",),
            {"activity:read_all": "Only You activities will be missing"},
            ("read ", "activity:read "),
        ),
    ],
    ids=["read_all+activity_read_all", "only_activity_read_all"],
)
def test_connect_unticked_scopes_names_missing_data(
    sb: Harness,
    config: Config,
    requested: str | None,
    untick: tuple[str, ...],
    missing: dict[str, str],
    not_missing: tuple[str, ...],
) -> None:
    athlete_id = sb.athlete_id()
    run = ConnectRun(config, "--no-browser", *(["--scopes", requested] if requested else []))
    redirect = consent(sb, run.authorize_url(), athlete_id, untick=untick)
    deliver(redirect.url)
    code, output = run.finish()

    [athlete] = stored(config)
    reads_activities = {"activity:read", "activity:read_all"} & set(athlete.scopes.split())
    assert code == (0 if reads_activities else 1), output  # none of their activities: a failure, said
    assert not set(untick) & set(athlete.scopes.split())
    warnings = [line.strip().removeprefix("! ") for line in output.splitlines() if line.strip().startswith("!")]
    # one line per unticked scope, naming it and the data that will be missing; none for granted scopes
    assert sorted(w.split()[0] for w in warnings) == sorted(missing), output
    for scope, data in missing.items():
        assert any(w.startswith(f"{scope} not granted") and data in w for w in warnings), output
    for granted in not_missing:
        assert not any(w.startswith(granted) for w in warnings), output


def test_connect_granting_no_activity_scope_says_so_and_exits_1(sb: Harness, config: Config) -> None:
    """Every activity scope unticked: a sync could fetch nothing, so the command fails, saying which box to leave
    ticked (it printed "Connected" and exited 0)."""
    athlete_id = sb.athlete_id()
    run = ConnectRun(config, "--no-browser", "--scopes", "read,activity:read,activity:read_all")
    deliver(consent(sb, run.authorize_url(), athlete_id, untick=("activity:read", "activity:read_all")).url)
    code, output = run.finish()
    assert code == 1, output
    assert f"athlete {athlete_id} allowed fitsync to read none of their activities" in output, output
    assert "`fitsync connect`" in output and "Traceback" not in output, output


@pytest.mark.parametrize("forged", ["another-state", None], ids=["other_state", "no_state"])
def test_connect_rejects_a_redirect_with_another_state(sb: Harness, config: Config, app, forged: str | None) -> None:  # type: ignore[no-untyped-def]
    run = ConnectRun(config, "--no-browser")
    redirect = consent(sb, run.authorize_url(), sb.athlete_id())
    params = {k: v for k, v in redirect.params.items() if k != "state"}
    if forged is not None:
        params["state"] = forged
    deliver(redirect.url.split("?")[0] + "?" + urlencode(params))
    code, output = run.finish()

    assert code != 0
    assert "state does not match" in output
    assert stored(config) == []
    # the CLI never spent the code: it is still exchangeable (codes are single use)
    assert sb.exchange(app, redirect.params["code"]).status_code == 200


def test_connect_headless_paste_the_redirected_url(sb: Harness, config: Config) -> None:
    athlete_id = sb.athlete_id()
    run = ConnectRun(config, "--headless")
    url = run.authorize_url()
    redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    assert urlsplit(redirect_uri).hostname == "localhost"
    redirect = consent(sb, url, athlete_id)
    assert redirect.url.startswith(redirect_uri)
    run.paste(redirect.url)  # nothing listens there: the person copies the address bar
    code, output = run.finish()

    assert code == 0, output
    [athlete] = stored(config)
    assert athlete.athlete_id == athlete_id and f"granted: {athlete.scopes}" in output
    assert redirect.params["code"] not in output  # the pasted URL is not echoed


def test_connect_headless_at_a_terminal_reads_the_pasted_url_unechoed(sb: Harness, config: Config) -> None:
    """At a terminal the pasted address (it holds the code) is read with the echo off, as a password is."""
    athlete_id = sb.athlete_id()
    term = Terminal(config.home, "connect", "--headless", env=env_for(config))
    try:
        shown = term.wait_for("Redirected URL: ")
        url = re.search(r"http\S+/oauth/authorize\?\S+", shown)
        assert url is not None, shown
        redirect = consent(sb, url.group(0), athlete_id)
        term.type(redirect.url + "\n")
        output = term.wait_for_exit()
    finally:
        term.process.kill()
    assert term.close() == 0, output
    assert f"Connected {stored(config)[0].name}" in output, output
    assert redirect.params["code"] not in output and "state=" not in output.split("Redirected URL: ")[1], output


def test_connect_headless_rejects_a_pasted_url_with_another_state(sb: Harness, config: Config) -> None:
    run = ConnectRun(config, "--headless")
    redirect = consent(sb, run.authorize_url(), sb.athlete_id())
    run.paste(redirect.url.replace(f"state={redirect.params['state']}", "state=stale"))
    code, output = run.finish()
    assert code != 0 and "state does not match" in output
    assert stored(config) == []


def test_disconnect_deauthorizes_and_forgets(sb: Harness, connected: Connected) -> None:
    access, refresh = connected.grant["access_token"], connected.grant["refresh_token"]
    assert sb.get(access, "/athlete").status_code == 200

    result = CliRunner().invoke(main, ["disconnect", str(connected.athlete_id), "--yes"], env=cli_env(connected.config))

    assert result.exit_code == 0, result.output
    assert f"Disconnected athlete {connected.athlete_id}" in result.output and "already" not in result.output
    assert sb.get(access, "/athlete").status_code == 401  # revoked at the service
    assert sb.refresh(connected.app, refresh).status_code == 400
    assert connected.client.tokens.athletes() == []  # and gone locally
    with connected.client.store.reading() as conn:
        assert conn.execute("SELECT count(*) FROM athletes").fetchone()[0] == 0


def test_disconnect_of_an_athlete_that_needs_reauthorization(sb: Harness, connected: Connected) -> None:
    """Its refresh token was refused (a sync found it): disconnecting says there is nothing left to revoke, never to
    run `fitsync connect`, and removes it."""
    sb.console.post(f"/athletes/{connected.athlete_id}/revoke", json={"client_id": connected.app.client_id})
    with pytest.raises(ReauthorizationRequired):
        connected.client.athlete(connected.athlete_id).athlete()
    result = CliRunner().invoke(main, ["disconnect", str(connected.athlete_id), "--yes"], env=cli_env(connected.config))
    assert result.exit_code == 0, result.output
    assert "already withdrawn" in result.output and "fitsync connect" not in result.output, result.output
    assert connected.client.tokens.athletes() == []


def test_disconnect_after_the_service_revoked(sb: Harness, connected: Connected) -> None:
    revoked = sb.console.post(f"/athletes/{connected.athlete_id}/revoke", json={"client_id": connected.app.client_id})
    assert revoked.status_code == 200
    result = CliRunner().invoke(main, ["disconnect", str(connected.athlete_id), "--yes"], env=cli_env(connected.config))
    assert result.exit_code == 0, result.output
    assert "already revoked" in result.output
    assert connected.client.tokens.athletes() == []


def test_a_401_page_that_is_not_the_services_word_is_no_revocation(sb: Harness, connected: Connected) -> None:
    """Any 401 from the deauthorization address read as "access already revoked": a proxy's login page then let
    `disconnect` purge, say the service had revoked access and skip the My Apps warning, the grant still live (an
    adversarial audit). Only the service's own error payload says the token is already invalid."""
    from http.server import BaseHTTPRequestHandler

    from .support import LoopbackServer

    class Proxy(LoopbackServer):
        def __init__(self) -> None:
            class Handler(BaseHTTPRequestHandler):
                def do_POST(self) -> None:  # noqa: N802
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    body = b"<html><body>Sign in to the proxy</body></html>"
                    self.send_response(401)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

                def log_message(self, format: str, *args: object) -> None:
                    pass

            self._serve(Handler)

    aid = connected.athlete_id
    with Proxy() as proxy:
        env = {**cli_env(connected.config), "FITSYNC_AUTH_URL": proxy.origin}
        result = CliRunner().invoke(main, ["disconnect", str(aid), "--yes"], env=env)
    assert result.exit_code == 1 and "already" not in result.output, result.output
    assert "could not ask the service to revoke" in result.output and "nothing was deleted" in result.output
    assert [a.athlete_id for a in connected.client.tokens.athletes()] == [aid]


def test_disconnect_finishes_the_purge_of_an_athlete_who_revoked(sb: Harness, connected: Connected) -> None:
    """The sensor marked the athlete disconnected (no tokens) and its purge run failed: `fitsync disconnect` finishes
    it without asking the service (nothing to revoke) and without saying the service still grants access."""
    from fitsync.state import athletes

    with connected.client.store.transaction() as conn:
        athletes.deauthorized(conn, connected.athlete_id, "deauthorized by the athlete")
    result = CliRunner().invoke(main, ["disconnect", str(connected.athlete_id), "--yes"], env=cli_env(connected.config))
    assert result.exit_code == 0, result.output
    assert "already revoked" in result.output and "still grants" not in result.output, result.output
    assert connected.client.tokens.athletes() == []


def test_disconnect_unknown_athlete_is_an_error(config: Config) -> None:
    result = CliRunner().invoke(main, ["disconnect", "12345"], env=cli_env(config))
    assert result.exit_code != 0 and "not connected" in result.output
