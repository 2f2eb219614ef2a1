"""Commands that delete ask first, as processes: off a terminal without `--yes` they stop before anything changed
(exit 2); at a terminal (a pseudo-terminal) "n" keeps everything (exit 1) and "y" goes ahead.

| issue 32 | what | test |
|---|---|---|
| 5 | `disconnect` off a terminal without --yes: usage error, nothing deleted | test_disconnect_off_a_terminal_needs_yes |
| 5 | `disconnect` at a terminal names the athlete and the rows it deletes; "n" keeps, "y" disconnects | test_disconnect_at_a_terminal_asks_first |
| 5 | `webhooks unsubscribe` likewise | test_unsubscribe_asks_first |
| 5 | `sync --full --allow-shrink` likewise, before any call; `--allow-shrink` without `--full` is a usage error | test_allow_shrink_asks_first |
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from fitsync.client.runtime import FitsyncClient
from fitsync.warehouse import db

from ..client.support import CallbackReceiver
from ..processes import Terminal, run_fitsync
from ..sandbox_harness import Harness
from .conftest import Connect, Home, add_athlete, delete, record_many, subprocess_env
from .test_cli_errors import closed_port
from .test_sync import warehouse_ids

# the PostgreSQL variants run with -m slow (tests/conftest.py)
pytestmark = pytest.mark.postgres_slow


def fitsync(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """fitsync as a script runs it: no terminal on any side."""
    return run_fitsync(list(args), env=subprocess_env(home, **env))


def listed(home: Home) -> list[int]:
    with FitsyncClient(home.config) as client:
        return [a.athlete_id for a in client.tokens.athletes()]


def warehouse_rows(home: Home) -> dict[str, int]:
    """Rows per table of the warehouse, and per table with an athlete_id, the athlete's: `athlete_id:<table>`."""
    with db.reading(home.warehouse) as conn:
        tables = conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
        counted = {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0] for (name,) in tables}
        for (name,) in conn.execute(
            "SELECT table_name FROM duckdb_columns() WHERE column_name = 'athlete_id' AND NOT internal "
            "AND database_name = current_database() AND table_name IN (SELECT table_name FROM duckdb_tables())"
        ).fetchall():
            counted[f"athlete_id:{name}"] = conn.execute(
                f'SELECT count(*) FROM "{name}" WHERE athlete_id = ?', [home.athlete_id]
            ).fetchall()[0][0]
    return counted


@pytest.mark.sqlite_only  # the state store is incidental: a question at the terminal
def test_disconnect_off_a_terminal_needs_yes(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    home = connect(aid)
    done = fitsync(home.config.home, "disconnect", str(aid))
    assert done.returncode == 2, done.stderr
    assert "pass --yes" in done.stderr and f"(athlete {aid})" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "Disconnected" not in done.stdout
    assert listed(home) == [aid]
    shown = fitsync(home.config.home, "athletes")
    assert shown.returncode == 0 and re.search(rf"│ {aid} +│.*│ connected", shown.stdout), shown.stdout + shown.stderr


@pytest.mark.sqlite_only  # the state store is incidental: a question at the terminal
def test_disconnect_at_a_terminal_asks_first(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    (home.config.home / "config.toml").chmod(0o600)  # no warning about it on the terminal
    home.sync()
    with FitsyncClient(home.config) as client:
        record = client.tokens.athlete(aid)
    assert record is not None
    before = warehouse_rows(home)
    assert before["athlete_id:activities"] == 3 and before["splits_metric"] > 0

    term = Terminal(home.config.home, "disconnect", str(aid))
    try:
        asked = term.wait_for("Disconnect them? [y/N]: ")
        term.type("n\n")
        term.wait_for("Nothing changed.")
        assert term.close() == 1
    finally:
        term.process.kill()
    assert f"for {record.name} (athlete {aid})" in asked and "their tokens and their sync state" in asked, asked
    assert listed(home) == [aid] and warehouse_rows(home) == before

    term = Terminal(home.config.home, "disconnect", str(aid))
    try:
        term.wait_for("Disconnect them? [y/N]: ")
        term.type("y\n")
        said = term.wait_for("state rows")
        assert term.close() == 0, said
    finally:
        term.process.kill()
    assert f"Disconnected athlete {aid}" in said and "Traceback" not in said
    after = warehouse_rows(home)
    assert listed(home) == [] and {k: v for k, v in after.items() if k.startswith("athlete_id:") and v} == {}
    # the number asked about is what went and what it says went (the segments only they rode included)
    gone = sum(before[t] - after[t] for t in before if ":" not in t)
    assert before["segments"] > after["segments"] >= 0
    assert f"deletes their {gone:,} warehouse rows" in asked, (gone, asked)
    assert f"removed {gone:,} warehouse rows" in said, (gone, said)


@pytest.mark.sqlite_only  # the state store is incidental: a question at the terminal
def test_unsubscribe_asks_first(sb: Harness, connect: Connect) -> None:
    home = connect(add_athlete(sb)).config.home
    with CallbackReceiver() as receiver:
        created = fitsync(home, "webhooks", "subscribe", "--callback-url", receiver.url)
        assert created.returncode == 0, created.stderr

        refused = fitsync(home, "webhooks", "unsubscribe")
        assert refused.returncode == 2 and "pass --yes" in refused.stderr, refused.stderr
        assert "push subscription" in refused.stderr and "Traceback" not in refused.stderr

        term = Terminal(home, "webhooks", "unsubscribe")
        try:
            term.wait_for("Unsubscribe? [y/N]: ")
            term.type("\n")  # Enter alone: the default, no
            term.wait_for("Nothing changed.")
            assert term.close() == 1
        finally:
            term.process.kill()
        assert fitsync(home, "webhooks", "status").stdout.strip() != "No subscription."

        term = Terminal(home, "webhooks", "unsubscribe")
        try:
            term.wait_for("Unsubscribe? [y/N]: ")
            term.type("yes\n")
            term.wait_for("Unsubscribed.")
            assert term.close() == 0
        finally:
            term.process.kill()
        assert fitsync(home, "webhooks", "status").stdout.strip() == "No subscription."


@pytest.mark.sqlite_only  # the state store is incidental: a question at the terminal
def test_allow_shrink_asks_first(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    (home.config.home / "config.toml").chmod(0o600)  # no warning about it on the terminal
    home.sync()
    for activity_id in ids:  # all of them: a shrink only --allow-shrink lets through
        delete(sb, activity_id)

    alone = fitsync(home.config.home, "sync", "--allow-shrink")
    assert alone.returncode == 2 and "--allow-shrink goes with --full" in alone.stderr, alone.stderr

    calls = sb.counters()
    refused = fitsync(home.config.home, "sync", "--full", "--allow-shrink")
    assert refused.returncode == 2 and "pass --yes" in refused.stderr, refused.stderr
    assert f"athlete {aid}: 3 known" in refused.stderr and "Traceback" not in refused.stderr
    assert sb.counters() == calls and warehouse_ids(home) == set(ids)  # asked before any call

    term = Terminal(home.config.home, "sync", "--full", "--allow-shrink")
    try:
        asked = term.wait_for("Sync and delete them? [y/N]: ")
        term.type("n\n")
        term.wait_for("Nothing changed.")
        assert term.close() == 1
    finally:
        term.process.kill()
    assert "asked for by id first" in asked and warehouse_ids(home) == set(ids)

    done = fitsync(home.config.home, "sync", "--full", "--allow-shrink", "--yes")
    assert done.returncode == 0, done.stderr
    assert warehouse_ids(home) == set()
    assert home.query("SELECT count(*) FROM deleted_activities") == [(3,)]


def test_disconnect_says_what_it_does_while_it_works(sb: Harness, connect: Connect) -> None:
    """The revocation, loading Dagster and the deletions take seconds: a line says what is going on before them
    (on stderr, off a terminal once), so the command is never silent for seconds; the result follows on stdout."""
    aid = add_athlete(sb)
    home = connect(aid)
    done = fitsync(home.config.home, "disconnect", str(aid), "--yes")
    assert done.returncode == 0, done.stderr
    assert f"athlete {aid}: revoking access and deleting their data…" in done.stderr, done.stderr
    assert f"Disconnected athlete {aid}" in done.stdout and listed(home) == []


def test_disconnect_that_could_not_revoke_deletes_nothing_unless_local_only(sb: Harness, connect: Connect) -> None:
    """The service was not reached: deleting the tokens would leave the revocation to the athlete for good, so nothing
    is deleted and the two ways on are named. `--local-only` deletes the local data, says the service still grants
    access, and exits 0."""
    aid = add_athlete(sb)
    home = connect(aid)
    closed = f"http://127.0.0.1:{closed_port()}"
    done = fitsync(home.config.home, "disconnect", str(aid), "--yes", FITSYNC_AUTH_URL=closed)
    assert done.returncode == 1 and listed(home) == [aid], done.stdout + done.stderr
    assert "nothing was deleted" in done.stderr and f"fitsync disconnect {aid} --local-only" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    local = fitsync(home.config.home, "disconnect", str(aid), "--yes", "--local-only", FITSYNC_AUTH_URL=closed)
    assert local.returncode == 0 and listed(home) == [], local.stdout + local.stderr
    assert f"Disconnected athlete {aid} here only" in local.stdout and "already" not in local.stdout, local.stdout
    assert "the service still grants fitsync access" in local.stderr and "My Apps" in local.stderr, local.stderr
    [logged] = [json.loads(line) for line in (home.config.home / "purges.jsonl").read_text().splitlines()]
    assert logged["athlete_id"] == aid and "--local-only" in logged["why"] and logged["warehouse"]["activities"] == 0


@pytest.mark.sqlite_only  # the lock is the state store's own file lock here; PostgreSQL's is an advisory lock
def test_disconnect_while_a_sync_of_the_athlete_runs_changes_nothing_and_says_so(sb: Harness, connect: Connect) -> None:
    """The purge took no athlete lock: a sync running on recorded what it fetched after the purge (landed details,
    cursors, segments of an athlete no longer there, never loaded or purged; an adversarial audit). While a sync holds
    the athlete, `disconnect` revokes and deletes nothing and names the process."""
    import sys

    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=3)
    home = connect(aid)
    home.sync()
    before = warehouse_rows(home)
    lock = home.config.home / "locks" / f"athlete-{aid}.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); "
         "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); os.pwrite(fd, str(os.getpid()).encode(), 0); "
         "print('held', flush=True); "
         "sys.stdin.read()", str(lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = fitsync(home.config.home, "disconnect", str(aid), "--yes", "--local-only")
    finally:
        holder.communicate("")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"athlete {aid} is being synced by process {holder.pid} on this host: nothing was revoked or deleted" in (
        done.stderr
    )
    assert f"then run `fitsync disconnect {aid}` again" in done.stderr
    assert listed(home) == [aid] and warehouse_rows(home) == before
    assert not (home.config.home / "purges.jsonl").exists()


@pytest.mark.sqlite_only  # the state store's failure is made in process
def test_a_purge_that_fails_in_the_state_store_logs_what_it_removed_and_is_finished_again(
    sb: Harness, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warehouse part went, the state part failed ("database is locked"): purges.jsonl had no line, the counts of
    what was removed were recorded nowhere, and the athlete stayed connected, so the next nightly sync quietly fetched
    everything again (an adversarial audit). The athlete is disconnected before anything is deleted, a line says what
    went and that it is unfinished, and the next `disconnect` finishes it."""
    import sqlite3

    from fitsync.pipelines import purge

    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=3)
    home = connect(aid)
    home.sync()
    assert warehouse_rows(home)["athlete_id:activities"] == 2

    def locked(client: object, athlete_id: int) -> dict[str, int]:
        raise sqlite3.OperationalError("database is locked")

    with FitsyncClient(home.config) as client:
        with monkeypatch.context() as patched:
            patched.setattr(purge, "forget_athlete_state", locked)
            with pytest.raises(sqlite3.OperationalError):
                purge.purge_everything(client, aid, "disconnected here only (--local-only)")
        assert client.tokens.athlete(aid).status == "disconnected"  # type: ignore[union-attr]
    assert warehouse_rows(home)["athlete_id:activities"] == 0
    [logged] = [json.loads(line) for line in (home.config.home / "purges.jsonl").read_text().splitlines()]
    assert logged["warehouse"]["activities"] == 2 and logged["state"] == {}
    assert logged["unfinished"] == (f"OperationalError: database is locked; `fitsync disconnect {aid}` finishes it")
    done = fitsync(home.config.home, "disconnect", str(aid), "--yes")
    assert done.returncode == 0 and listed(home) == [], done.stderr
    assert len((home.config.home / "purges.jsonl").read_text().splitlines()) == 2
