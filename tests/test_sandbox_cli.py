"""`fitsync sandbox …` as a user runs it: a separate server process, and commands on the same db while it runs."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fitsync.sandbox import browser
from fitsync.sandbox.server import ServerThread

from .processes import as_a_shell_starts_it, free_port, run_fitsync

FITSYNC = [sys.executable, "-m", "fitsync.cli.main"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(list(args), env=dict(os.environ), cwd=Path.cwd(), timeout=60)


def wait_until(predicate, timeout: float = 20.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("cli") / "world.db"
    port = free_port()
    proc = subprocess.Popen(
        [
            *FITSYNC,
            "sandbox",
            "serve",
            "--db",
            str(db),
            "--port",
            str(port),
            "--athletes",
            "2",
            "--activities-per-athlete",
            "5",
            "--set",
            "retry_delays=[0.1, 0.1]",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            return httpx.get(base + "/sandbox/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(healthy, 60, "the sandbox to answer")
    yield base, db
    proc.terminate()
    proc.wait(timeout=20)


def test_serve_writes_console_key_and_secret_beside_the_db_with_mode_0600(served: tuple[str, Path]) -> None:
    base, db = served
    for suffix in ("console-key", "server-secret"):
        path = Path(f"{db}.{suffix}")
        assert path.exists()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = Path(f"{db}.console-key").read_text().strip()
    assert httpx.get(base + "/sandbox/athletes").status_code == 401
    athletes = httpx.get(base + "/sandbox/athletes", headers={"X-Sandbox-Console-Key": key}).json()
    assert len(athletes) == 2 and all(a["activities"] == 5 for a in athletes)


def test_app_create_while_serving_then_full_oauth_dance(served: tuple[str, Path]) -> None:
    base, db = served
    created = run(
        "sandbox", "app", "create", "--db", str(db), "--name", "CLI app", "--callback-domain", "example.com", "--json"
    )
    assert created.returncode == 0, created.stderr
    app = json.loads(created.stdout.strip().splitlines()[-1])
    assert isinstance(app["client_id"], int) and len(app["client_secret"]) >= 32
    secret_digests = [r[0] for r in sqlite3.connect(db).execute("SELECT secret_hash FROM apps")]
    assert app["client_secret"] not in secret_digests  # stored hashed

    athlete_id = json.loads(run("sandbox", "athlete", "list", "--db", str(db)).stdout)[0]["id"]
    with httpx.Client(base_url=base) as http:
        url = str(
            httpx.URL(
                "/oauth/authorize",
                params={
                    "client_id": app["client_id"],
                    "redirect_uri": "https://www.example.com/cb",
                    "response_type": "code",
                    "scope": "read,activity:read_all",
                    "state": "s1",
                },
            )
        )
        redirect = browser.consent(http, url, athlete_id)
        assert redirect.url.startswith("https://www.example.com/cb?") and redirect.params["state"] == "s1"
        token = http.post(
            "/oauth/token",
            data={
                "client_id": app["client_id"],
                "client_secret": app["client_secret"],
                "code": redirect.params["code"],
                "grant_type": "authorization_code",
            },
        )
        assert token.status_code == 200, token.text
        listing = http.get(
            "/api/v3/athlete/activities", headers={"Authorization": f"Bearer {token.json()['access_token']}"}
        )
        assert listing.status_code == 200 and len(listing.json()) == 5


def test_console_commands_on_the_db_reach_the_running_server(served: tuple[str, Path]) -> None:
    """Changes made by another process on the same db are what the running server serves."""
    base, db = served
    key = Path(f"{db}.console-key").read_text().strip()
    athlete_id = json.loads(run("sandbox", "athlete", "list", "--db", str(db)).stdout)[1]["id"]
    recorded = run(
        "sandbox", "activity", "record", "--db", str(db), str(athlete_id), "--sport-type", "Run", "--name", "CLI run"
    )
    assert recorded.returncode == 0, recorded.stderr
    activity_id = json.loads(recorded.stdout)["id"]
    athletes = httpx.get(base + "/sandbox/athletes", headers={"X-Sandbox-Console-Key": key}).json()
    assert next(a for a in athletes if a["id"] == athlete_id)["activities"] == 6

    renamed = run("sandbox", "activity", "update", "--db", str(db), str(activity_id), "--name", "Renamed")
    assert renamed.returncode == 0 and json.loads(renamed.stdout)["name"] == "Renamed"
    missing = run("sandbox", "activity", "delete", "--db", str(db), "999")
    assert missing.returncode == 1 and json.loads(missing.stderr)["errors"][0]["resource"] == "Activity"

    changed = run("sandbox", "settings", "--db", str(db), "fault_latency_ms=0", "--set", "read_limit_short=99")
    assert changed.returncode == 0, changed.stderr  # with `--set` or without, as `serve --set` takes a change
    wait_until(
        lambda: (
            httpx.get(base + "/sandbox/settings", headers={"X-Sandbox-Console-Key": key}).json()["read_limit_short"]
            == 99
        ),
        what="the server to pick up the new setting",
    )


def test_a_console_command_on_a_file_no_server_keeps_creates_nothing(tmp_path: Path) -> None:
    """Typed in another folder, `--db sandbox.db` names a new file: an app made there is one no server knows."""
    elsewhere = tmp_path / "sandbox.db"
    for args in (
        ("app", "create", "--name", "x", "--callback-domain", "localhost"),
        ("athlete", "list"),
    ):
        refused = run("sandbox", *args, "--db", str(elsewhere))
        assert refused.returncode == 2 and f"no sandbox world at {elsewhere}" in refused.stderr, refused.stderr
    assert list(tmp_path.iterdir()) == []


def test_settings_refuses_unknown_names_and_bad_values(served: tuple[str, Path]) -> None:
    """Usage errors (exit 2), as `serve --set` says them."""
    _, db = served
    for change, said in (
        ("no_such=1", "no_such"),
        ("short_window=-5", "short_window"),
        ("short_window=oops", "JSON"),
        ("fault_error_rate=7", "a share of requests: from 0 to 1"),
        ("read_limit_short", "give NAME=JSON"),
    ):
        refused = run("sandbox", "settings", "--db", str(db), change)
        assert refused.returncode == 2 and said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr


def test_revoking_for_an_athlete_or_app_the_world_lacks_is_not_found(served: tuple[str, Path]) -> None:
    _, db = served
    athlete_id = json.loads(run("sandbox", "athlete", "list", "--db", str(db)).stdout)[0]["id"]
    app = json.loads(
        run(
            "sandbox", "app", "create", "--db", str(db), "--name", "Rev", "--callback-domain", "localhost", "--json"
        ).stdout.splitlines()[-1]
    )
    for athlete, client_id, resource in ((999, app["client_id"], "Athlete"), (athlete_id, 999, "Application")):
        refused = run("sandbox", "athlete", "revoke", "--db", str(db), str(athlete), "--client-id", str(client_id))
        assert refused.returncode == 1 and json.loads(refused.stderr)["errors"][0]["resource"] == resource
    done = run("sandbox", "athlete", "revoke", "--db", str(db), str(athlete_id), "--client-id", str(app["client_id"]))
    assert done.returncode == 0 and json.loads(done.stdout) == {"revoked_token_families": 0}, done.stderr


def test_serve_names_a_world_file_it_cannot_open(tmp_path: Path) -> None:
    """Its own file, not FITSYNC_HOME (which the sandbox does not use)."""
    missing = run("sandbox", "serve", "--db", str(tmp_path / "no" / "w.db"), "--port", str(free_port()))
    assert missing.returncode == 2 and f"the folder {tmp_path / 'no'} does not exist" in missing.stderr
    (tmp_path / "w.db").write_text("not a database")
    damaged = run("sandbox", "serve", "--db", str(tmp_path / "w.db"), "--port", str(free_port()))
    assert damaged.returncode == 1 and f"the sandbox world {tmp_path / 'w.db'} cannot be opened" in damaged.stderr
    assert "FITSYNC_HOME" not in missing.stderr + damaged.stderr and "Traceback" not in damaged.stderr
    folder = run("sandbox", "serve", "--db", str(tmp_path), "--port", str(free_port()))
    assert folder.returncode == 2 and f"{tmp_path} is a folder" in folder.stderr, folder.stderr
    assert "Generating" not in folder.stderr


def test_console_values_typed_wrong_are_usage_errors_named_by_their_option(served: tuple[str, Path]) -> None:
    _, db = served
    for args, option in (
        (("app", "create", "--name", "x", "--callback-domain", "http://bad/"), "'--callback-domain'"),
        (("app", "create", "--name", " ", "--callback-domain", "localhost"), "'--name'"),
        (("activity", "record", "1", "--start-date", "yesterday"), "'--start-date'"),
    ):
        refused = run("sandbox", *args, "--db", str(db))
        assert refused.returncode == 2 and option in refused.stderr and "Traceback" not in refused.stderr, (
            refused.stderr
        )


def test_serve_refuses_a_bad_setting_before_starting(tmp_path: Path) -> None:
    """A wrong value or a typo'd name: a usage error before any world is generated or file made."""
    for setting, said in (('access_token_lifetime="soon"', "access_token_lifetime"), ("nosuch=1", "nosuch")):
        result = run("sandbox", "serve", "--db", str(tmp_path / "x.db"), "--port", str(free_port()), "--set", setting)
        assert result.returncode == 2 and said in result.stderr and "'--set'" in result.stderr, result.stderr
        assert list(tmp_path.iterdir()) == []


def test_the_sandbox_keeps_an_idle_connection_longer_than_a_client_does(sandbox_server: ServerThread) -> None:
    """Were both 5 s (uvicorn's and httpx's defaults), a client could reuse a connection just as the server closes it:
    the request fails with "connection reset by peer" (it did once in `fitsync demo`, after the sync's idle time)."""
    assert sandbox_server.server.config.timeout_keep_alive > httpx.Limits().keepalive_expiry


def serve_as_a_job(db: Path, athletes: int, activities: int) -> subprocess.Popen[str]:
    """`sandbox serve` in a session of its own, as a terminal's shell starts a foreground job (SIGINT not ignored)."""
    command = ["sandbox", "serve", "--db", str(db), "--port", "0", "--athletes", str(athletes)]
    return subprocess.Popen(
        [*FITSYNC, *command, "--activities-per-athlete", str(activities)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=as_a_shell_starts_it,
    )


@pytest.mark.parametrize("signum", [2, 15], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_server_says_so_with_the_signals_exit_code(tmp_path: Path, signum: int) -> None:
    """Ctrl-C (to the process group, as a terminal sends it) or SIGTERM: uvicorn shuts down, then one line says the
    sandbox stopped and where its world stays; not an interrupted command's "run it again", not a silent kill."""
    import signal

    db = tmp_path / "world.db"
    proc = serve_as_a_job(db, 1, 2)
    assert proc.stdout is not None
    seen = ""
    while "Console key" not in seen:
        line = proc.stdout.readline()
        assert line, seen
        seen += line
    os.killpg(proc.pid, signum)
    rest = proc.stdout.read()
    assert proc.wait(timeout=30) == 128 + signum, rest
    name = signal.Signals(signum).name
    assert rest.strip().splitlines() == [f"Sandbox stopped ({name}): its world stays in {db}."], rest  # one line
    assert "INFO" not in seen, seen  # uvicorn's own lines on starting (and stopping) are not shown


def test_a_world_whose_generation_was_stopped_is_said_so_and_serve_generates_it(tmp_path: Path) -> None:
    """A large world takes seconds, said up front; stopped meanwhile, the file holds the schema only (the generation
    is one transaction): a console command on it said `[]` athletes, as if the world were empty."""
    import signal

    db = tmp_path / "world.db"
    proc = serve_as_a_job(db, 2, 2000)
    assert proc.stdout is not None
    said = proc.stdout.readline()
    assert said.startswith("Generating the sandbox world: 2 athletes, 4,000 activities (about "), said
    wait_until(db.exists, 30, "the world's file")
    os.killpg(proc.pid, signal.SIGINT)
    rest = proc.stdout.read()
    assert proc.wait(timeout=30) == 130 and "Traceback" not in rest, rest
    listed = run("sandbox", "athlete", "list", "--db", str(db))
    assert listed.returncode == 1 and "was never generated" in listed.stderr, listed.stderr
    assert f"fitsync sandbox serve --db {db}" in listed.stderr, listed.stderr
