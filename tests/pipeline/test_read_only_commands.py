"""`status`, `athletes`, `query`, `report` and `doctor` only look (issue 32): on a new home they create nothing and say
which command sets it up; on a synced home they leave every file as it was; `status` answers without loading
Dagster, in local relative times; every command that prints a table prints JSON with `--json`."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fitsync.state import idle_connections

from ..processes import Terminal, run_fitsync
from ..sandbox_harness import Harness, wait_until
from .conftest import REPO, Connect, add_athlete, subprocess_env
from .test_cli import env_for, synced_by_cli
from .test_cli import fitsync as fitsync_in
from .test_cli_errors import closed_port

READS = (
    ["status"], ["status", "--json"], ["athletes"], ["athletes", "--json"], ["query", "SELECT 1"], ["report"], ["thresholds"]
)  # fmt: skip


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder` with its size and modification time (folders: their size only, since a
    SQLite reader's side files come and go within them)."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, 0 if p.is_dir() else p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(list(args), env=subprocess_env(home, **env))


@pytest.mark.parametrize(
    "credentials, writable", [(False, True), (True, False)], ids=["no-credentials", "credentials-read-only-home"]
)
def test_reading_commands_leave_a_new_home_empty_and_name_the_first_step(
    tmp_path: Path, credentials: bool, writable: bool
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    port = closed_port()  # doctor asks the service: here nothing answers, at once
    env = {"FITSYNC_BASE_URL": f"http://127.0.0.1:{port}/api/v3", "FITSYNC_AUTH_URL": f"http://127.0.0.1:{port}"}
    if credentials:
        env |= {"FITSYNC_CLIENT_ID": "12345", "FITSYNC_CLIENT_SECRET": "hunter2"}
    first_step = "fitsync connect" if credentials else "fitsync init"
    if not writable:
        home.chmod(0o500)
    try:
        for args in [*READS, ["doctor"]]:
            done = run(home, *args, **env)
            assert list(home.iterdir()) == [], (args, sorted(p.name for p in home.rglob("*")))
            assert "Traceback" not in done.stderr and "hunter2" not in done.stdout + done.stderr, (args, done.stderr)
            if args[0] in ("status", "athletes"):
                assert done.returncode == 0, (args, done.stderr)
                assert first_step in done.stdout or args == ["athletes", "--json"], (args, done.stdout)
            if args[0] in (
                "query",
                "report",
                "thresholds",
            ):  # the steps from where the home is: init only without credentials
                assert done.returncode == 1 and f"To start, run `{first_step}`" in done.stderr, (args, done.stderr)
                assert ("fitsync init" in done.stderr) == (not credentials), (args, done.stderr)
    finally:
        home.chmod(0o700)
    assert json.loads(run(home, "athletes", "--json", **env).stdout) == []
    status = json.loads(run(home, "status", "--json", **env).stdout)
    assert status["set_up"] is False and status["athletes"] == [] and first_step in status["next"]


def test_status_of_a_home_that_does_not_exist_does_not_make_it(tmp_path: Path) -> None:
    done = run(tmp_path / "nowhere", "status")
    assert done.returncode == 0 and "fitsync init" in done.stdout, done.stderr
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.postgres_slow  # its PostgreSQL variant with -m slow: the default run's 10 minutes
def test_reading_commands_leave_a_synced_home_as_it_was(sb: Harness, connect: Connect) -> None:
    """On one synced home (a sync is the costly part: the reading commands share it).

    `status` and `athletes` leave not even a folder's mtime changed for a moment: SQLite's own read connections to a
    WAL database create its -wal and -shm and remove them on closing, which changes the folder's modification time (a
    backup or a sync tool sees a change). With no writer about, state.db and Dagster's runs.db are read from a copy in
    memory (state/store.py). `query` and `report` leave every file as it was (the report writes its report, and only
    that). `status` answers without loading Dagster, in local relative times."""
    aid, home, env = synced_by_cli(sb, connect, 2)
    folder = home.config.home
    idle_connections.close_idle()  # this test's own, kept for its next use: no writer is about, as after a process

    def everything() -> dict[str, tuple[int, int]]:
        return {
            str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in [folder, *sorted(folder.rglob("*"))]
        }

    exact = everything()
    assert "dagster/history/runs.db" in exact and not [p for p in exact if p.endswith(("-wal", "-shm"))]
    assert ("state.db" in exact) != bool(home.config.state_url)  # the state: here, or on the server
    for args in (["status"], ["status", "--json"], ["athletes"], ["athletes", "--json"]):
        done = fitsync_in(env, *args)
        assert done.returncode == 0 and str(aid) in done.stdout, (args, done.stderr)
        assert everything() == exact, args
    before = listing(folder)
    done = fitsync_in(env, "query", "SELECT 1")
    assert done.returncode == 0, done.stderr
    assert listing(folder) == before
    report = fitsync_in(env, "report", "--out", str(folder / "reports"))
    assert report.returncode == 0, report.stderr
    assert {k: v for k, v in listing(folder).items() if not k.startswith("reports")} == before
    [athlete] = json.loads(fitsync_in(env, "athletes", "--json").stdout)
    assert (athlete["athlete_id"], athlete["status"], athlete["scopes"]) == (aid, "connected", list(home.scopes))
    assert athlete["name"] == f"{athlete['firstname']} {athlete['lastname']}"
    assert dt.datetime.fromisoformat(athlete["access_expires_at"]).utcoffset() == dt.timedelta(0)  # ISO, as status

    probe = (
        "import sys\n"
        "from fitsync.cli.main import main\n"
        "try:\n    main(['status'])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('loaded:', sorted(m for m in ('dagster', 'polars') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("loaded: []"), done.stdout  # loading them took seconds (Polars: 0.15 s)
    table = fitsync_in({**env, "COLUMNS": "200"}, "status").stdout
    row = next(line for line in table.splitlines() if str(aid) in line)
    # the last listing and the last run, each relative ("just now" within its first minute)
    assert "success" in row and len(re.findall(r"\bago\b|just now", row)) == 2, row
    assert not re.search(r"\d{4}-\d\d-\d\dT", table), table  # no ISO time stamp, cut or whole
    assert "resets" in table and "in " in table and "+00:00" not in table, table
    report = json.loads(fitsync_in(env, "status", "--json").stdout)  # scripts keep ISO 8601 times
    assert report["athletes"][0]["last_run"]["ended_at"].endswith("+00:00")


def test_tokens_no_key_reads_are_said_by_athletes_and_status(sb: Harness, connect: Connect) -> None:
    """The key file gone: the athletes showed as "connected" (and a sync then made a new key); the reading commands
    say the tokens cannot be read, and the fix, and still write nothing."""
    aid = add_athlete(sb)
    home = connect(aid)
    key = home.config.home / "secret.key"
    key.rename(f"{key}.gone")
    before = listing(home.config.home)
    athletes = run(home.config.home, "athletes")
    assert athletes.returncode == 0 and f"the token key file {key} is missing" in athletes.stderr, athletes.stderr
    [athlete] = json.loads(run(home.config.home, "athletes", "--json").stdout)
    assert "is missing" in (athlete["tokens_unreadable"] or ""), athlete
    status = json.loads(run(home.config.home, "status", "--json").stdout)
    assert "is missing" in (status["tokens_unreadable"] or ""), status
    assert listing(home.config.home) == before and not key.exists()
    Path(f"{key}.gone").rename(key)
    [athlete] = json.loads(run(home.config.home, "athletes", "--json").stdout)
    assert athlete["tokens_unreadable"] is None


def test_athletes_at_a_terminal_is_a_table(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    home = connect(aid)
    (home.config.home / "config.toml").chmod(0o600)  # no warning about it on the terminal
    term = Terminal(home.config.home, "athletes")
    try:
        shown = term.wait_for("└")  # the table's last line
        assert term.close() == 0, shown
    finally:
        term.process.kill()
    row = next(line for line in shown.splitlines() if str(aid) in line)
    assert "\t" not in shown and "│" in row and "connected" in row and "expires in" in row, shown


def test_webhooks_status_on_a_home_never_connected_creates_nothing(sb: Harness, tmp_path: Path) -> None:
    """Asking the service for the app's subscription needs only the app's credentials: a home with nothing connected
    yet gets no state.db, key file or lock folder from it (its one call is counted on a scratch state, removed)."""
    app = sb.new_app()
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = {
        "FITSYNC_BASE_URL": sb.server.api_url,
        "FITSYNC_AUTH_URL": sb.server.base_url,
        "FITSYNC_CLIENT_ID": str(app.client_id),
        "FITSYNC_CLIENT_SECRET": app.client_secret,
    }
    text = run(home, "webhooks", "status", **env)
    assert text.returncode == 0 and "No subscription." in text.stdout, text.stderr
    as_json = run(home, "webhooks", "status", "--json", **env)
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == [], as_json.stderr
    assert list(home.iterdir()) == []


def test_webhooks_status_prints_json(sb: Harness, connect: Connect) -> None:
    home = connect(add_athlete(sb))
    env = subprocess_env(home.config.home)  # its config.toml names the sandbox and the app
    text, shown = fitsync_in(env, "webhooks", "status"), fitsync_in(env, "webhooks", "status", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout) == [], shown.stderr
    assert text.returncode == 0 and text.stdout.strip() == "No subscription.", text.stderr


@pytest.mark.postgres_slow  # seconds of waiting for a window: the PostgreSQL variant with -m slow
def test_webhooks_status_says_a_wait_for_the_rate_budget(sb: Harness, connect: Connect) -> None:
    """With the app's read window spent, `webhooks status` (and subscribe, unsubscribe) waited for the next one in
    silence: 6 minutes of nothing under the real limits. The wait is said, with its reason and length."""
    from fitsync.client.runtime import FitsyncClient

    window = 12
    with sb.settings(short_window=window, read_limit_short=2):
        home = connect(add_athlete(sb), short_window=window, boundary_guard=0.05)
        env = {**subprocess_env(home.config.home), "FITSYNC_RATE_SHORT_WINDOW": str(window)}
        # the window's two reads spent at its start (here, in a moment), then the command: seconds of wait ahead
        wait_until(lambda: time.time() % window < 1, window + 2, "the start of a window", interval=0.02)
        with FitsyncClient(home.config) as client:
            client.subscriptions().view()
            client.subscriptions().view()
        run = fitsync_in(env, "webhooks", "status")
    assert run.returncode == 0 and run.stdout.strip() == "No subscription.", run.stderr
    said = [line for line in run.stderr.splitlines() if "waiting" in line]
    assert said and all(line.startswith("webhooks: asking the service · waiting ") for line in said), run.stderr
    assert f"{window}-second read window (used 2/2)" in said[0], said


def test_webhooks_status_is_a_table_like_athletes(sb: Harness, connect: Connect) -> None:
    """A subscription shows as a rich table (as `fitsync athletes`), its secret path masked, its age relative; --json
    keeps the whole address (secrets replaced) and the service's time stamp for scripts."""
    from ..client.support import CallbackReceiver

    home = connect(add_athlete(sb))
    env = {**subprocess_env(home.config.home), "COLUMNS": "200"}
    with CallbackReceiver() as receiver:
        created = fitsync_in(env, "webhooks", "subscribe", "--callback-url", receiver.url)
        assert created.returncode == 0, created.stderr
        text, shown = fitsync_in(env, "webhooks", "status"), fitsync_in(env, "webhooks", "status", "--json")
    assert shown.returncode == 0 and text.returncode == 0, text.stderr + shown.stderr
    [sub] = json.loads(shown.stdout)
    assert set(sub) == {"id", "callback_url", "created_at"}
    lines = text.stdout.splitlines()
    assert "Webhook subscriptions" in lines[0] and "┏" in text.stdout and "└" in lines[-1], text.stdout
    header = next(line for line in lines if "subscription" in line and "┃" in line)
    assert "callback address" in header and "created" in header, header
    row = next(line for line in lines if f"│ {sub['id']} " in line)
    assert "\t" not in text.stdout and re.search(r"just now|ago", row), row
    assert f"{receiver.url}/" in row and "…" in row and sub["callback_url"] == f"{receiver.url}/<secret>", row


@pytest.mark.slow
def test_doctor_and_report_on_a_read_only_home(sb: Harness, connect: Connect) -> None:
    """On a home mounted read-only (a backup, a shared copy) a refresh would replace the refresh token where the new
    one cannot be saved: doctor says the athlete is connected and that it did not try, and fails no check for it; it
    fails the home's own check (a sync cannot run there).
    The report says at once that its default folder cannot be written, and names --out."""
    aid, home, _ = synced_by_cli(sb, connect, 2)
    if home.config.state_url:
        pytest.skip("the state is on the server: a read-only home does not keep it from being written")
    folder = home.config.home
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"no bind mount here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True, capture_output=True)
        before = listing(folder)
        done = fitsync_in(env_for(home), "doctor", "--json")
        report = fitsync_in(env_for(home), "report")
        assert listing(folder) == before
    finally:
        subprocess.run(["umount", str(folder)], check=True)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    athlete = checks[f"athlete {aid}"]
    assert athlete["status"] == "ok" and "token refresh not tried" in athlete["message"], athlete
    assert checks["state database"]["status"] == "ok", checks["state database"]
    assert not [c for c in checks.values() if "could not be checked" in c["message"]], done.stdout
    # the one check that fails: a sync could not run from here (doctor passed, then `fitsync sync` failed on its locks)
    failing = {n for n, c in checks.items() if c["status"] == "fail"}
    assert "home writable" in failing and failing <= {"home writable", "mode of config.toml"}, done.stdout
    assert "`fitsync sync` cannot" in checks["home writable"]["message"] and done.returncode == 1, done.stdout
    said = report.stderr
    assert report.returncode == 1 and f"cannot write the report to {folder / 'reports'}" in said, said
    assert "--out DIR" in said and "building" not in said and "Traceback" not in said, said
