"""Expected failures of `fitsync`, as a process: one short message that names the fix, the documented exit code,
no traceback (unless --debug asks for it)."""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import instance_for_test

from fitsync.sandbox.server import SeedOptions, ServerOptions, ServerThread

from ..conftest import ROOMY_LIMITS
from ..processes import run_fitsync
from ..sandbox_harness import Harness, wait_until
from .conftest import REPO, Connect, add_athlete, connect_home, record_many, subprocess_env

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


def fitsync(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(list(args), env={**subprocess_env(Path(env.pop("FITSYNC_HOME"))), **env})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "args, env, code, says",
    [
        (["connect"], {}, 1, "no application credentials: run `fitsync init` to write them to"),
        (["sync"], {}, 1, "no application credentials: run `fitsync init` to write them to"),
        (
            ["webhooks", "status"],
            {
                "FITSYNC_CLIENT_ID": "1",
                "FITSYNC_CLIENT_SECRET": "s",
                "FITSYNC_MAX_RETRIES": "1",
                "FITSYNC_BASE_URL": "http://127.0.0.1:{port}/api/v3",
            },
            1,
            "the service does not answer at http://127.0.0.1:{port}",
        ),
        (
            ["sync"],
            {"FITSYNC_HOME": "/proc/no-such-home", "FITSYNC_CLIENT_ID": "1", "FITSYNC_CLIENT_SECRET": "s"},
            1,
            "FITSYNC_HOME must be a folder fitsync can create",
        ),
        (["sync", "--max-wait", "soon"], {}, 2, "Invalid value for '--max-wait'"),
        (["query"], {}, 2, "give the SQL as an argument"),
        (["webhooks", "serve", "--port", "99999"], {}, 2, "'--port': 99999 is not in the range 0<=x<=65535"),
        (["connect", "--port", "-1"], {}, 2, "'--port': -1 is not in the range 0<=x<=65535"),
        (["webhooks", "subscribe", "--callback-url", "notaurl"], {}, 2, "'notaurl' is not a web address"),
        (["no-such-command"], {}, 2, "No such command"),
        (
            ["athletes"],
            {"FITSYNC_STATE_URL": "postgresql://bob:hunter2@127.0.0.1:{port}/state"},
            1,
            "the state database cannot be used",
        ),
        (
            ["athletes"],
            {"FITSYNC_STATE_URL": "mysql://bob:hunter2@db/state"},
            1,
            "state_url (FITSYNC_STATE_URL) must be a postgresql://",
        ),
        (
            ["athletes"],
            {"FITSYNC_TIMEOUT": "-5", "FITSYNC_CLIENT_SECRET": "hunter2"},
            1,
            "FITSYNC_TIMEOUT: timeout has an invalid value '-5': it should be greater than 0",
        ),
        (["sync"], {"FITSYNC_CLIENT_ID": "twelve"}, 1, "FITSYNC_CLIENT_ID: client_id has an invalid value 'twelve'"),
        (
            ["sync", "--athlete", "999"],
            {"FITSYNC_CLIENT_ID": "1", "FITSYNC_CLIENT_SECRET": "s"},
            2,
            "athlete 999 is not connected: run `fitsync connect` as that athlete; `fitsync athletes` lists who is",
        ),
    ],
    ids=[
        "no-credentials",
        "no-athletes",
        "service-unreachable",
        "home-unwritable",
        "bad-option",
        "no-sql",
        "port-out-of-range",
        "port-negative",
        "callback-not-a-url",
        "unknown-command",
        "state-server-unreachable",
        "state-url-not-postgresql",
        "setting-out-of-range",
        "setting-not-a-number",
        "sync-of-an-athlete-not-connected",
    ],
)
def test_an_expected_failure_is_one_message_and_its_exit_code(
    tmp_path: Path, args: list[str], env: dict[str, str], code: int, says: str
) -> None:
    port = str(closed_port())
    env = {"FITSYNC_HOME": str(tmp_path / "home"), **{k: v.format(port=port) for k, v in env.items()}}
    done = fitsync(*args, **env)
    assert done.returncode == code, done.stderr
    assert says.format(port=port) in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len([line for line in done.stderr.splitlines() if line.startswith("Error")]) == 1
    assert "hunter2" not in done.stdout + done.stderr  # a state URL's password is never shown


def test_a_command_for_the_service_in_the_demo_s_folder_leads_back_to_the_demo(tmp_path: Path) -> None:
    """The folder `fitsync demo` made has no settings (its sandbox ran only while the demo did): sync, connect and
    doctor say so and what to run, not the real service's fixes (`fitsync init` in that folder, its addresses)."""
    from fitsync.client.config_basics import DEMO_MARKER

    home = tmp_path / "fitsync-demo"
    home.mkdir()
    (home / DEMO_MARKER).write_text("created by `fitsync demo`\n")
    for args in (["sync"], ["connect"], ["doctor"]):
        done = fitsync(*args, FITSYNC_HOME=str(home))
        out = done.stdout + done.stderr
        assert done.returncode == 1 and "is the folder `fitsync demo` made" in out, (args, out)
        assert "run `fitsync demo` again" in out.lower() and "Traceback" not in out and "strava.com" not in out, out
    assert sorted(p.name for p in home.iterdir()) == [DEMO_MARKER]  # nothing written into it


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    # `sync` writes to its home (the read-only commands do not: they say there is nothing yet)
    app = {"FITSYNC_CLIENT_ID": "1", "FITSYNC_CLIENT_SECRET": "s"}
    quiet = fitsync("sync", FITSYNC_HOME="/proc/no-such-home", **app)
    loud = fitsync("--debug", "sync", FITSYNC_HOME="/proc/no-such-home", **app)
    assert "Traceback" not in quiet.stderr and "Traceback" in loud.stderr and loud.returncode == 1
    assert "Traceback" in fitsync("sync", FITSYNC_HOME="/proc/no-such-home", FITSYNC_DEBUG="1", **app).stderr


def test_h_is_help_everywhere(tmp_path: Path) -> None:
    for args in (["-h"], ["sync", "-h"], ["webhooks", "serve", "-h"], ["query", "-h"], ["sandbox", "-h"]):
        done = fitsync(*args, FITSYNC_HOME=str(tmp_path))
        assert done.returncode == 0 and done.stdout.startswith("Usage: "), (args, done.stderr)


@pytest.mark.sqlite_only  # the state store is incidental: the command line
def test_a_sync_that_cannot_reach_the_service_names_the_athlete_the_address_and_the_fix(
    sb: Harness, connect: Connect
) -> None:
    """--quiet means only what needs attention, so the answer to a silent wait is to make the error come fast, not to
    add a progress line: the nothing-new check's GET /athlete already met a service that does not answer (every try
    refused), so no Dagster run is started (loading Dagster, then each step retrying the same address, took ~15 s).
    A first sync, or --full, has no such check: its run meets the silence and says it the same way, steps named.
    The error names the athlete, the address and the fix; each retry before it says how long it waits. Checked by
    what the home records (no run in its Dagster instance), not by a stopwatch."""
    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=5)
    home = connect(aid)
    home.sync()  # synced once: the next sync checks for anything new first (a first sync goes straight to its run)
    port = closed_port()
    env = {"FITSYNC_HOME": str(home.config.home), "FITSYNC_BASE_URL": f"http://127.0.0.1:{port}/api/v3"}
    done = fitsync("sync", "--quiet", FITSYNC_MAX_RETRIES="2", **env)
    assert done.returncode == 1, done.stderr
    retry = next(line for line in done.stderr.splitlines() if "retrying" in line)
    assert retry.startswith(f"athlete {aid}: retrying GET "), retry  # a log of many athletes says whose call it was
    assert re.search(r"after ConnectError \(attempt 1\) in \d+\.\d s$", retry), retry
    line = next(line for line in done.stderr.splitlines() if "does not answer" in line)
    assert line.startswith(f"athlete {aid}: the service does not answer at http://127.0.0.1:{port}"), line
    assert "base_url / FITSYNC_BASE_URL" in line and line.endswith("(no run was started)"), line
    assert line.count(f"athlete {aid}") == 1, line
    assert "dagster._core" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
    status = json.loads(fitsync("status", "--json", **env).stdout)
    assert status["athletes"][0]["last_run"] is None  # no Dagster run was made for it

    full = fitsync("sync", "--full", "--json", FITSYNC_MAX_RETRIES="1", **env)  # no check: the run meets it
    assert full.returncode == 1 and json.loads(full.stdout)["athletes"][0]["verdict"] == "failed", full.stderr
    line = next(line for line in full.stderr.splitlines() if "does not answer" in line)
    steps, says = line.removeprefix(f"athlete {aid}: ").split(": ", 1)  # one message for every step that failed
    assert "athlete" in steps.split(", ") and says.startswith("the service does not answer"), line


def test_a_service_gone_mid_sync_is_one_cause_said_once(tmp_path: Path) -> None:
    """The service stops answering while details are fetched: the step that met it fails, and the steps after it are
    not sent for a while (client/transport.py). Their failure is the same cause, said once with the steps it stopped,
    not a second time as "not sent: the service left … unanswered". A sandbox of its own: this test stops it."""
    seed = SeedOptions(1, 0, 0, dt.datetime.now(dt.UTC).replace(microsecond=0))
    server = ServerThread(ServerOptions(db=str(tmp_path / "world.db"), port=0, seed=seed)).__enter__()
    gone = False
    try:
        sb = Harness(server)
        sb.console.put("/settings", json={**ROOMY_LIMITS, "fault_latency_ms": 100})
        aid = add_athlete(sb)
        record_many(sb, aid, 30, oldest_days=30)
        with instance_for_test() as instance:
            home = connect_home(sb, tmp_path / "home", aid, instance)
        log = tmp_path / "sync.log"
        with log.open("w") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "fitsync.cli.main", "sync"],
                cwd=REPO,
                env={**subprocess_env(home.config.home), "FITSYNC_MAX_RETRIES": "2"},
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
            )
            try:
                wait_until(lambda: f"athlete {aid}: details" in log.read_text(), 120, "the details to start")
                server.__exit__(None, None, None)
                gone = True
                assert process.wait(timeout=120) == 1, log.read_text()
            finally:
                process.kill()
    finally:
        if not gone:
            server.__exit__(None, None, None)
    line = next(line for line in log.read_text().splitlines() if "does not answer" in line)
    assert line.count("does not answer") == 1 and "not sent" not in line and "unanswered" not in line, line
    assert line.startswith(f"athlete {aid}: activity_details") and "run `fitsync sync` again" in line, line


@pytest.mark.sqlite_only  # the state store is incidental: the command line
def test_a_base_url_that_is_not_the_api_root_is_named_before_any_run(sb: Harness, connect: Connect) -> None:
    """The service's own address without /v3: GET /athlete answers 404, which it never does at the API root for a
    connected athlete; the sync says which setting is wrong instead of starting a run whose every step meets it."""
    aid = add_athlete(sb)
    home = connect(aid)
    home.sync()
    wrong = home.config.base_url.removesuffix("/v3")
    done = fitsync("sync", FITSYNC_HOME=str(home.config.home), FITSYNC_BASE_URL=wrong)
    assert done.returncode == 1, done.stderr
    line = next(line for line in done.stderr.splitlines() if "404" in line)
    assert line.startswith(f"athlete {aid}: ") and f"at {wrong}: that is not the service's API root" in line, line
    assert "base_url / FITSYNC_BASE_URL" in line and "fitsync doctor" in line and "(no run was started)" in line
    assert "Traceback" not in done.stderr


def test_a_full_disk_is_one_line_naming_the_home_and_the_fix(tmp_path: Path) -> None:
    """Every file the command writes may grow only to 20 KB (RLIMIT_FSIZE: a full disk as the process sees it, on any
    machine): SQLite (fitsync's state, Dagster's storage) fails its write; the user reads where and what to do."""
    import resource
    import signal

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails (EFBIG) instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    home = tmp_path / "home"
    env = {**subprocess_env(home), "FITSYNC_CLIENT_ID": "1", "FITSYNC_CLIENT_SECRET": "s"}
    done = subprocess.run(
        [sys.executable, "-m", "fitsync.cli.main", "sync"],  # it writes its state (`status` only reads)
        cwd=REPO,
        env=env,
        preexec_fn=small_files,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert f"Error: the disk holding {home} is full or failing" in done.stderr and "free some space" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr


def test_dagsters_own_words_about_an_unwritable_event_log_are_logged_not_shown(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills mid-run: Dagster wrote its event-log failure straight to stderr, three times with
    SQLAlchemy's help link, before fitsync's one line naming the home and the fix. Kept in the debug log instead
    (shown with --debug)."""
    import logging

    from fitsync.cli import screen

    caplog.set_level(logging.DEBUG, logger="fitsync.cli.screen")
    noise = (
        "Exception while writing logger call to event log: (sqlite3.OperationalError) database or disk is full\n"
        "(Background on this error at: https://sqlalche.me/e/21/e3q8)\n"
    )
    with screen.library_noise_logged():
        sys.stderr.write(noise)
        sys.stderr.write("athlete 7: said\n")
    assert capsys.readouterr().err == "athlete 7: said\n"
    assert "database or disk is full" in caplog.text
    monkeypatch.setenv("FITSYNC_DEBUG", "1")  # --debug: everything the libraries said
    with screen.library_noise_logged():
        sys.stderr.write(noise)
    assert capsys.readouterr().err == noise


def test_a_bad_config_file_is_one_line_naming_the_file_and_the_setting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    file = home / "config.toml"
    secret = 'client_secret = "hunter2"\n'
    for text, says in (
        # a typo: the file, the line and the closest setting (the secret's line comes first)
        ("\n# the wait for an answer\ntiemout = 5\n", ", line 4: unknown setting 'tiemout': did you mean `timeout`?"),
        ("timout = 5\n", ", line 2: unknown setting 'timout': did you mean `timeout`?"),
        ('"max_retires" = 3\n', ", line 2: unknown setting 'max_retires': did you mean `max_retries`?"),
        ("[zzz]\nq = 1\n", ", line 2: unknown setting 'zzz': docs/configuration.md lists the settings"),
        ("timeout = \n", ": not valid TOML (Invalid value (at line 2, column 11))"),
        ("timeout = [", ": not valid TOML (Invalid value (at the end of line 2, the last))"),
        (
            "timeout = -5\n",
            ", line 2: timeout has an invalid value -5: it should be greater than 0 (allowed: number > 0)",
        ),
        ('nightly_timezone = "Mars/Olympus"\n', ", line 2: nightly_timezone has an invalid value 'Mars/Olympus': it"),
    ):
        file.write_text(secret + text)
        file.chmod(0o600)
        done = fitsync("athletes", FITSYNC_HOME=str(home))
        assert done.returncode == 1 and f"{file}{says}" in done.stderr, (text, done.stderr)
        assert "Traceback" not in done.stderr and "hunter2" not in done.stdout + done.stderr
        assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr


def test_a_busy_port_is_said_first_and_exits_1(tmp_path: Path) -> None:
    """Before anything else (no "Receiving events at …" that is not true), and 1, not uvicorn's 3 ("partial")."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = fitsync("webhooks", "serve", "--port", str(port), FITSYNC_HOME=str(tmp_path / "home"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == "" and done.stderr.startswith(f"Error: port {port} is in use on 127.0.0.1"), done.stderr
    assert "--port" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_doctor_names_the_fix_of_a_wrong_token_key_and_of_wrong_app_credentials(sb: Harness, connect: Connect) -> None:
    """Each fix says what to change: no pointer to "other failed checks", which pass (they use neither)."""
    aid = add_athlete(sb)
    home = connect(aid).config.home
    (home / "config.toml").chmod(0o600)
    assert fitsync("doctor", FITSYNC_HOME=str(home)).returncode == 0
    for env, says in (
        (
            {"FITSYNC_SECRET_KEY": "not-the-key"},
            "set FITSYNC_SECRET_KEY back to the passphrase the tokens were stored with",
        ),
        ({"FITSYNC_CLIENT_SECRET": "not-the-secret"}, "check client_id and client_secret"),
    ):
        done = fitsync("doctor", FITSYNC_HOME=str(home), **env)
        failed = [line for line in done.stdout.splitlines() if line.startswith("✗ ")]
        assert done.returncode == 1 and failed and "Traceback" not in done.stderr, done.stdout + done.stderr
        assert failed[0].startswith(f"✗ athlete {aid}: ") and says in failed[0], failed
        assert all(" — fix: " in line and "failed checks" not in line for line in failed), failed
        assert "not-the-" not in done.stdout + done.stderr


def test_a_mistyped_variable_is_named_with_the_one_meant(tmp_path: Path) -> None:
    """FITSYNC_TIMOUT=5 would be ignored without a word: every command says so, naming FITSYNC_TIMEOUT."""
    done = fitsync("status", FITSYNC_HOME=str(tmp_path), FITSYNC_TIMOUT="5", FITSYNC_STREAMS="off")
    line = "FITSYNC_TIMOUT is set, but fitsync reads no such variable (ignored): did you mean FITSYNC_TIMEOUT?"
    assert line in done.stderr.splitlines(), done.stderr
    assert "FITSYNC_STREAMS" not in done.stderr and "FITSYNC_HOME" not in done.stderr


def test_every_variable_the_docs_name_is_one_fitsync_reads() -> None:
    import re

    from fitsync.client.config import stray_variables

    named = set()
    for doc in (REPO / "README.md", *(REPO / "docs").glob("*.md")):
        named |= set(re.findall(r"\bFITSYNC_[A-Z_]*[A-Z]\b", doc.read_text()))
    assert len(named) > 20
    assert stray_variables(dict.fromkeys(named, "1")) == []


def test_a_report_for_an_athlete_not_in_the_warehouse_is_a_usage_error(tmp_path: Path) -> None:
    from fitsync.warehouse import db

    db.migrate(tmp_path / "warehouse.duckdb")
    done = fitsync("report", "--athlete", "999", FITSYNC_HOME=str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "athlete 999 has no activities in the warehouse" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "reports").exists()  # a report that was not written makes no folder for it


def test_a_coach_reports_on_the_athletes_named_each_once(tmp_path: Path) -> None:
    """--athlete given twice kept only the last (a coach's trial); an athlete named rather than numbered read
    "'Marianne' is not a valid integer"."""
    from ..analysis.builder import Builder

    b = Builder(tmp_path / "warehouse.duckdb")
    for athlete in (7, 8, 9):
        b.athlete(athlete, synced_at="2025-06-30 12:00:00+00")
        b.activity(athlete, "2025-06-01 08:00:00", distance=30000, moving_time=3600)
    b.close()
    out = tmp_path / "reports"
    done = fitsync(
        "report", "--athlete", "7", "--athlete", "9", "--athlete", "7", "--out", str(out), FITSYNC_HOME=str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.parent.name for p in out.glob("*/report.html")) == ["7", "9"]
    named = fitsync("report", "--athlete", "Marianne", FITSYNC_HOME=str(tmp_path))
    assert named.returncode == 2 and "'Marianne' is not an athlete id" in named.stderr, named.stderr
    assert "`fitsync athletes` lists them" in named.stderr


def test_a_report_folder_under_a_missing_one_is_a_usage_error(tmp_path: Path) -> None:
    """As `query -o` refuses a file in a folder that is not there: a typo in --out makes no tree of folders."""
    from fitsync.warehouse import db

    db.migrate(tmp_path / "warehouse.duckdb")
    out = tmp_path / "no-such" / "report"
    done = fitsync("report", "--out", str(out), FITSYNC_HOME=str(tmp_path))
    assert done.returncode == 2 and f"the folder {out.parent} does not exist" in done.stderr, done.stderr
    assert not out.parent.exists()


def test_a_warehouse_with_damaged_blocks_is_named_with_its_fix(tmp_path: Path) -> None:
    """DuckDB's checksum error names no file: the command names the warehouse and how it is rebuilt."""
    from fitsync.warehouse import db

    warehouse = tmp_path / "warehouse.duckdb"
    db.migrate(warehouse)
    with warehouse.open("r+b") as file:  # past DuckDB's three header blocks: the catalog's blocks
        file.seek(3 * 4096)
        file.write(b"\xff" * (warehouse.stat().st_size - 3 * 4096))
    fix = f"mv {warehouse} {warehouse}.damaged"
    for args in (["query", "SELECT 1"], ["query", "--list"], ["report"]):
        done = fitsync(*args, FITSYNC_HOME=str(tmp_path))
        assert done.returncode == 1 and fix in done.stderr and "IOException" not in done.stderr, (args, done.stderr)
        assert "waiting" not in done.stderr  # a damaged block is not a lock another process holds
        assert "charting libraries" not in done.stderr  # said before the second they take to load


def test_output_to_a_full_device_is_said_so_not_as_the_homes_disk(tmp_path: Path) -> None:
    """`> /dev/full`: standard output has no room (not FITSYNC_HOME's disk), and `--help` says so too."""
    for args in (["status"], ["--help"], ["--version"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "fitsync.cli.main", *args],
                cwd=REPO,
                env=subprocess_env(tmp_path),
                stdin=subprocess.DEVNULL,
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
            )
        assert done.returncode == 1 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "the output could not be written (No space left on device)" in done.stderr, (args, done.stderr)
        assert "FITSYNC_HOME" not in done.stderr, done.stderr


def test_a_demo_folder_that_cannot_be_made_names_home_not_fitsync_home(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    done = fitsync("demo", "--home", str(tmp_path / "a-file" / "demo"), FITSYNC_HOME=str(tmp_path / "unused"))
    assert done.returncode == 1 and "cannot make the demo's folder" in done.stderr, done.stderr
    assert "give --home a folder you can write" in done.stderr and "FITSYNC_HOME" not in done.stderr


def test_a_damaged_token_key_file_names_its_fix(tmp_path: Path) -> None:
    (tmp_path / "secret.key").write_text("xxxx")
    done = fitsync("sync", FITSYNC_HOME=str(tmp_path), FITSYNC_CLIENT_ID="5", FITSYNC_CLIENT_SECRET="s")
    assert done.returncode == 1 and f"the token key file {tmp_path / 'secret.key'} is damaged" in done.stderr
    assert "`fitsync connect`" in done.stderr and "ValueError" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        (["sandbox", "serve", "--api-prefix", "api"], "'--api-prefix': 'api': give a path that starts with /"),
        (["sandbox", "serve", "--auth-prefix", "/sandbox"], "other than / and /sandbox"),
        (["webhooks", "serve", "--prefix", "/"], "give a path such as /webhooks"),
        (["init", "--client-id", "5", "--client-secret", ""], "'--client-secret': the client secret is empty"),
    ],
    ids=["api-prefix", "auth-prefix", "webhooks-prefix", "empty-secret"],
)
def test_values_that_could_only_fail_later_are_usage_errors(tmp_path: Path, args: list[str], said: str) -> None:
    done = (
        fitsync(*args, "--port", "0", FITSYNC_HOME=str(tmp_path / "home"))
        if "serve" in args
        else fitsync(*args, FITSYNC_HOME=str(tmp_path / "home"))
    )
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "home").exists()


def test_an_sql_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    from fitsync.warehouse import db

    db.migrate(tmp_path / "warehouse.duckdb")
    (tmp_path / "q.sql").write_text("SELECT 1", encoding="utf-16")
    done = fitsync("query", "-f", str(tmp_path / "q.sql"), FITSYNC_HOME=str(tmp_path))
    assert done.returncode == 2 and f"{tmp_path / 'q.sql'} is not UTF-8 text" in done.stderr, done.stderr


def test_a_home_that_is_a_file_is_said_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    for args in (["status"], ["sync"], ["athletes"]):
        done = fitsync(*args, FITSYNC_HOME=str(home))
        assert done.returncode == 1, (args, done.stderr)
        assert f"FITSYNC_HOME: home has an invalid value '{home}': it is a file, not a folder" in done.stderr, (
            done.stderr
        )
    assert home.read_text() == "not a folder"
