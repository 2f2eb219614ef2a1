"""`fitsync sync` and `fitsync query` as a user runs them: a process with FITSYNC_* variables for the sandbox."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..processes import free_port, run_fitsync
from ..sandbox_harness import Harness
from .conftest import Connect, Home, add_athlete, record_many, subprocess_env

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


FITSYNC = [sys.executable, "-m", "fitsync.cli.main"]


def env_for(home: Home, fitsync_home: Path | None = None) -> dict[str, str]:
    """Everything from FITSYNC_* variables (no config.toml), as the README shows."""
    config = home.config
    return subprocess_env(
        fitsync_home or config.home,
        FITSYNC_BASE_URL=config.base_url,
        FITSYNC_AUTH_URL=config.auth_url,
        FITSYNC_CLIENT_ID=str(config.client_id),
        FITSYNC_CLIENT_SECRET=config.client_secret.reveal(),
        COLUMNS="200",
        # another home is another installation: its own state
        **({"FITSYNC_STATE_URL": config.state_url.reveal()} if config.state_url and fitsync_home is None else {}),
    )


def fitsync(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(list(args), env=env)


def synced_by_cli(sb: Harness, connect: Connect, activities: int) -> tuple[int, Home, dict[str, str]]:
    """A new athlete with `activities` recent activities, connected and synced by `fitsync sync` as a process."""
    aid = add_athlete(sb)
    record_many(sb, aid, activities, oldest_days=10)
    home = connect(aid)
    env = env_for(home)
    synced = fitsync(env, "sync")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    return aid, home, env


@pytest.mark.sqlite_only  # the state store is incidental: the command line
def test_sync_and_query_from_the_command_line(sb: Harness, connect: Connect, tmp_path: Path) -> None:
    """As a user runs it against the real service (test_sync covers each shape in both flavours)."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=10)
    home = connect(aid)
    (home.config.home / "config.toml").unlink()
    env = env_for(home)

    with sb.settings(flavor="real"):
        synced = fitsync(env, "sync")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    output = synced.stdout + synced.stderr
    assert f"athlete {aid}: ok" in output and "activity_details" in output
    assert str(home.warehouse) in synced.stdout
    assert (home.config.home / "dagster" / "dagster.yaml").exists()  # FITSYNC_HOME/dagster, DAGSTER_HOME unset

    queried = fitsync(env, "query", "SELECT count(*) AS synced_activities, min(activity_id) AS first FROM activities")
    assert queried.returncode == 0, queried.stderr
    row = next(line for line in queried.stdout.splitlines() if str(min(ids)) in line)
    assert "synced_activities" in queried.stdout and row.split("│")[1].strip() == "5", queried.stdout

    bad = fitsync(env, "query", "SELEKT * FROM activities")
    assert bad.returncode != 0
    assert "Parser Error" in bad.stderr and "SELEKT" in bad.stderr and "Traceback" not in bad.stderr

    missing = fitsync(env, "query", "SELECT * FROM no_such_table")
    assert missing.returncode != 0 and "no_such_table" in missing.stderr and "Traceback" not in missing.stderr

    again = fitsync(env, "sync", "--athlete", str(aid), "--full")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "full reconciliation" in again.stdout + again.stderr


@pytest.mark.sqlite_only  # the state store is incidental: the command line
def test_sync_without_connected_athletes_or_warehouse_fails_clearly(
    sb: Harness, connect: Connect, tmp_path: Path
) -> None:
    home = connect(add_athlete(sb))
    env = env_for(home, fitsync_home=tmp_path / "empty-home")
    synced = fitsync(env, "sync")
    assert synced.returncode != 0
    assert "no connected athletes" in synced.stderr and "fitsync connect" in synced.stderr
    assert "Traceback" not in synced.stderr

    queried = fitsync(env, "query", "SELECT 1")
    assert queried.returncode != 0 and "no warehouse" in queried.stderr and "fitsync sync" in queried.stderr


@pytest.mark.slow
@pytest.mark.sqlite_only  # the state store is incidental: the warehouse file
def test_a_damaged_warehouse_is_named_with_its_fix_and_rebuilt_once_moved_aside(sb: Harness, connect: Connect) -> None:
    """Not "nothing new" over a file DuckDB cannot read, and no stack of DuckDB's words: the fix, whichever command
    meets it; then the fix works."""
    aid, home, env = synced_by_cli(sb, connect, 3)
    warehouse = home.warehouse
    warehouse.write_bytes(b"\0" * 4096 + warehouse.read_bytes()[4096:8192])  # its header gone
    fix = f"mv {warehouse} {warehouse}.damaged"
    calls = sb.counters().get("requests", 0)
    for args in (["sync"], ["sync", "--full"], ["query", "SELECT 1"]):
        done = fitsync(env, *args)
        said = done.stdout + done.stderr
        assert done.returncode == 1 and "is not a DuckDB database" in said and fix in said, (args, said)
        assert said.count("is not a DuckDB database") == 1, said
        assert "--debug" not in said and "IOException" not in said and "nothing new" not in said, said
    assert sb.counters().get("requests", 0) == calls  # no run was started to fail on it after spending calls
    status = fitsync(env, "status")
    assert status.returncode == 0 and fix in status.stdout and "IO Error" not in status.stdout, status.stdout
    warehouse.rename(f"{warehouse}.damaged")
    rebuilt = fitsync(env, "sync")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert home.query("SELECT count(*) FILTER (detail_loaded) FROM activities") == [(3,)]


@pytest.mark.slow
def test_a_token_revoked_since_the_last_sync_shows_as_that_syncs_failure(sb: Harness, connect: Connect) -> None:
    """The athlete is connected when the sync starts; its check meets the refused token, and no run starts: `status`
    says that sync failed, not the run before it went well."""
    aid, home, env = synced_by_cli(sb, connect, 1)
    [before] = json.loads(fitsync(env, "status", "--json").stdout)["athletes"]
    sb.console.post(f"/athletes/{aid}/revoke", json={"client_id": home.app.client_id})
    synced = fitsync(env, "sync")
    said = synced.stdout + synced.stderr
    assert synced.returncode == 1 and said.count("needs re-authorization") == 1, said  # said once, with its fix
    assert f"`fitsync connect` as athlete {aid}" in said and f"athlete {aid}: FAILED (2 calls in " in said, said
    [athlete] = json.loads(fitsync(env, "status", "--json").stdout)["athletes"]
    assert "needs re-authorization" in (athlete["last_failed_before_run"] or {}).get("why", ""), athlete
    assert athlete["last_run"]["run_id"] == before["last_run"]["run_id"]  # no Dagster run was started to fail


@pytest.mark.sqlite_only  # the state store is incidental: the command line
def test_sync_of_an_athlete_that_is_not_connected_is_a_usage_error(sb: Harness, connect: Connect) -> None:
    home = connect(add_athlete(sb))
    stranger = add_athlete(sb)
    synced = fitsync(env_for(home), "sync", "--athlete", str(stranger))
    assert synced.returncode == 2, synced.stderr
    assert f"athlete {stranger} is not connected: run `fitsync connect`" in synced.stderr
    assert "`fitsync athletes` lists who is connected" in synced.stderr and "Traceback" not in synced.stderr
    # disconnecting them is the same usage error, in one Error line, and the connected athlete stays
    gone = fitsync(env_for(home), "disconnect", str(stranger), "--yes")
    assert gone.returncode == 2 and "Traceback" not in gone.stderr, gone.stderr
    [line] = [line for line in gone.stderr.splitlines() if line.startswith("Error")]
    assert f"athlete {stranger} is not connected: `fitsync athletes` lists who is connected" in line, line
    assert [a["athlete_id"] for a in json.loads(fitsync(env_for(home), "athletes", "--json").stdout)] == [
        home.athlete_id
    ]


def test_status_says_how_each_athlete_stands(sb: Harness, connect: Connect) -> None:
    import json

    aid = add_athlete(sb)
    record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid)
    env = env_for(home)
    fresh = fitsync(env, "status")  # no call counted yet: the limits shown are the documented ones, and said so
    assert fresh.returncode == 0 and "documented limit" in fresh.stdout and "100*" in fresh.stdout, fresh.stderr
    synced = fitsync(env, "sync")  # the CLI's own Dagster instance records the run
    assert synced.returncode == 0, synced.stdout + synced.stderr
    shown = fitsync(env, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    [athlete] = report["athletes"]
    assert (athlete["athlete_id"], athlete["status"], athlete["known_activities"]) == (aid, "connected", 4)
    assert athlete["pending"] == {
        "details": 0,
        "zones": 0,
        "details_from": None,
        "details_to": None,
        "zones_unavailable": None,
        "time_left_seconds": None,
        "streams": None,  # streams = off in the tests' homes unless a test asks (tests/pipeline/conftest.make_config)
    }
    assert athlete["last_listing_at"]
    assert athlete["last_run"]["status"] == "SUCCESS" and athlete["last_run"]["job"] == "sync_athlete"
    assert "activity:read_all" in athlete["scopes"]
    assert report["warehouse"]["rows"]["activities"] == 4
    assert {(b["window"], b["budget"]) for b in report["rate_budget"]} == {
        ("short", "overall"),
        ("long", "overall"),
        ("short", "read"),
        ("long", "read"),
    }
    assert {b["limit_from"] for b in report["rate_budget"]} == {"service"}  # the sync's answers gave them
    assert home.config.client_secret.reveal() not in shown.stdout
    table = fitsync(env, "status")
    assert table.returncode == 0 and str(aid) in table.stdout and "Rate budget" in table.stdout, table.stderr
    assert "documented limit" not in table.stdout
    assert "Traceback" not in table.stderr


def test_status_says_why_zones_and_events_wait(sb: Harness, connect: Connect) -> None:
    """A non-subscriber's queued zones are never asked for, and inbox events wait for the Dagster sensor: status says
    both, instead of counts that look stuck."""
    import json
    import time

    from fitsync.webhooks import inbox as webhook_inbox

    aid = add_athlete(sb, premium=False)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    home.sync()
    assert home.needing("zones") > 0
    event = {
        "object_type": "activity",
        "object_id": 1,
        "aspect_type": "create",
        "owner_id": aid,
        "subscription_id": 1,
        "event_time": int(time.time()),
        "updates": {},
    }
    with home.store.transaction() as conn:
        assert webhook_inbox.store_event(conn, webhook_inbox.validate(event))
    env = env_for(home)
    shown = fitsync({**env, "COLUMNS": "300"}, "status")
    assert shown.returncode == 0, shown.stderr
    assert f"athlete {aid}: zones not available (the athlete is not a subscriber)" in shown.stdout, shown.stdout
    assert re.search(rf"{aid} .*│ 0 / not available", shown.stdout), shown.stdout
    [hooks] = [line for line in shown.stdout.splitlines() if line.startswith("Webhooks:")]
    assert "1 unprocessed" in hooks and "`webhook_events` sensor" in hooks and "  " not in hooks, hooks
    report = json.loads(fitsync(env, "status", "--json").stdout)
    assert report["athletes"][0]["pending"]["zones_unavailable"] == "the athlete is not a subscriber"


def test_doctor_checks_everything_and_names_each_fix(sb: Harness, connect: Connect, tmp_path: Path) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=10)
    home = connect(aid)
    home.sync()
    env = env_for(home)
    (home.config.home / "config.toml").chmod(0o600)
    healthy = fitsync(env, "doctor")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    lines = healthy.stdout.splitlines()
    assert all(line.startswith("✓ ") for line in lines), lines
    names = {line[2:].split(":")[0] for line in lines}
    assert "token refresh accepted" in healthy.stdout
    assert {
        "configuration",
        "service",
        "authorization page",
        "state database",
        f"athlete {aid}",
        "warehouse",
    } <= names, names

    # A user who typed the auth URL with /oauth, a loose config file, a wrong API root: each ✗ names its fix.
    (home.config.home / "config.toml").chmod(0o644)
    broken = fitsync(
        {
            **env,
            "FITSYNC_AUTH_URL": home.config.auth_url + "/oauth",
            "FITSYNC_BASE_URL": home.config.base_url.removesuffix("/api/v3"),
        },
        "doctor",
    )
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    failed = {line.split(":")[0][2:]: line for line in broken.stdout.splitlines() if line.startswith("✗ ")}
    # (the token refresh goes to the wrong address too)
    assert set(failed) == {"authorization page", "service", "mode of config.toml", f"athlete {aid}"}, broken.stdout
    assert "fitsync adds /oauth/authorize" in failed["authorization page"]
    assert "chmod 600" in failed["mode of config.toml"] and "…/api/v3" in failed["service"]
    assert "4 of" in broken.stderr
    assert "token refresh not tried" in failed[f"athlete {aid}"]
    # an authorization server that does not answer: said once, not again by each athlete's refresh retrying it
    gone = fitsync({**env, "FITSYNC_AUTH_URL": f"http://127.0.0.1:{free_port()}"}, "doctor")
    assert gone.returncode == 1 and "retrying" not in gone.stderr, gone.stderr
    assert f"✗ athlete {aid}: connected; token refresh not tried" in gone.stdout, gone.stdout
    # the same checks for scripts: a JSON list on stdout, the same exit code
    scripted = fitsync(
        {
            **env,
            "FITSYNC_AUTH_URL": home.config.auth_url + "/oauth",
            "FITSYNC_BASE_URL": home.config.base_url.removesuffix("/api/v3"),
        },
        "doctor",
        "--json",
    )
    assert scripted.returncode == 1, scripted.stderr
    checks = {c["name"]: c for c in json.loads(scripted.stdout)}
    assert {n for n, c in checks.items() if c["status"] == "fail"} == set(failed), scripted.stdout
    assert {c["status"] for c in checks.values()} == {"ok", "fail"} and set(checks) >= names
    assert "chmod 600" in checks["mode of config.toml"]["fix"] and checks["configuration"]["fix"] is None
    assert all(isinstance(c["message"], str) and c["message"] for c in checks.values())

    # An athlete who removed the app: the refresh is refused, and the fix is to connect again.
    sb.console.post(f"/athletes/{aid}/revoke", json={"client_id": home.app.client_id})
    revoked = fitsync(env, "doctor")
    assert revoked.returncode == 1 and f"✗ athlete {aid}: the service refused" in revoked.stdout, revoked.stdout
    assert "fitsync connect" in revoked.stdout
    # ...and every sync says so (failed), until someone connects the athlete again: never skipped in silence
    for args in (["sync"], ["sync", "--quiet"], ["sync", "--athlete", str(aid)]):
        synced = fitsync(env, *args)
        said = synced.stdout + synced.stderr
        assert synced.returncode == 1 and f"athlete {aid}: needs re-authorization" in said, (args, said)
        assert f"fitsync connect` as athlete {aid}" in said and "Traceback" not in said, said
    # `fitsync status` says the last sync failed, though the last run, before, went well
    [athlete] = json.loads(fitsync(env, "status", "--json").stdout)["athletes"]
    assert (
        athlete["last_failed_before_run"]["why"] == "needs re-authorization (the service refused its refresh token)"
    ), athlete
    shown = fitsync(env, "status").stdout.split("Athletes", 1)[1].split("└", 1)[0]
    last_run = " ".join(" ".join(r.split("│")[-2].split()) for r in shown.splitlines() if r.startswith("│"))
    # "just now", or "5 s ago" on a busy machine
    assert re.match(
        r"failed (just now|\d+ (s|min) ago), no run: needs re-authorization \(the service refused its refresh token\)",
        last_run,
    ), shown


def cut_through_data(warehouse: Path) -> int:
    """The size that cuts the last 256 KB off the file, and more when needed to reach into the last block holding a
    table's data: a block cut off the end may be a free one, which no query reads (the data is all there, and the next
    write extends the file again), so cutting only that is no damage."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as conn:
        block_size = conn.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0]
        tables = conn.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()
        highest = max(
            conn.execute(f"SELECT coalesce(max(block_id), -1) FROM pragma_storage_info('{t}')").fetchall()[0][0]
            for (t,) in tables
        )
    return min(warehouse.stat().st_size - 256 * 1024, 3 * 4096 + highest * block_size + block_size // 2)


@pytest.mark.sqlite_only  # the state store is incidental: the SQLite state file itself
def test_doctor_names_a_damaged_state_and_a_truncated_warehouse(sb: Harness, connect: Connect) -> None:
    """A state.db with damaged pages and a warehouse.duckdb cut short (a copy interrupted): doctor goes on past the
    first, names both files and the `mv` to run; a sync says the state is damaged in one line."""
    import os
    import sqlite3

    aid = add_athlete(sb)
    record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid)
    if home.config.state_url:
        pytest.skip("the state is on PostgreSQL here: no state.db to damage (the warehouse check is the same)")
    home.sync()
    env = env_for(home)
    state, warehouse = home.config.home / "state.db", home.warehouse
    with sqlite3.connect(state) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the file itself, as a copied one would be
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    with state.open("r+b") as file:  # the pages after the first: the athletes' and the other tables' roots
        file.seek(page)
        file.write(os.urandom(4 * page))
    os.truncate(warehouse, cut_through_data(warehouse))  # it still opens
    doctor = fitsync(env, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stdout + doctor.stderr, doctor.stdout + doctor.stderr
    failed = {line.split(":")[0][2:]: line for line in doctor.stdout.splitlines() if line.startswith("✗ ")}
    assert f"{state}: database disk image is malformed" in failed["state database"]
    assert f"mv {state} {state}.damaged" in failed["state database"]
    assert "truncated" in failed["warehouse"], failed["warehouse"]  # DuckDB meets the cut at open, or doctor counts it
    assert (
        f"mv {warehouse} {warehouse}.damaged" in failed["warehouse"]
        and "fetches its content again" in failed["warehouse"]
    ), failed["warehouse"]
    synced = fitsync(env, "sync")
    assert synced.returncode == 1 and "Traceback" not in synced.stderr, synced.stderr
    assert "is damaged" in synced.stderr and "fitsync doctor" in synced.stderr, synced.stderr


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse file
def test_doctor_does_not_call_a_healthy_warehouse_truncated(sb: Harness, connect: Connect) -> None:
    """After loads, deletions and CHECKPOINTs DuckDB cuts its free blocks off the file's end while the block count
    it reads at the next open still counts them: the file is shorter than total_blocks × block_size, and healthy.
    Doctor judges by the blocks in use (their ids, and how many there are), so it says ✓; the precondition is
    asserted, so this fails with the old comparison."""
    import duckdb

    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    home.sync()
    record_many(sb, aid, 3, oldest_days=5)
    home.sync()  # a second load
    with duckdb.connect(str(home.warehouse)) as conn:  # loads and deletions as big as a long history's
        conn.execute("CREATE TABLE bulk AS SELECT range AS i, random() AS r, repeat('x', 60) AS s FROM range(400000)")
        conn.execute("CHECKPOINT")
        conn.execute("INSERT INTO bulk SELECT range, random(), repeat('y', 60) FROM range(200000)")
        conn.execute("CHECKPOINT")
        conn.execute("DELETE FROM bulk WHERE i > 1000")
        conn.execute("DROP TABLE bulk")
        conn.execute("CHECKPOINT")
        conn.execute("CHECKPOINT")
    with duckdb.connect(str(home.warehouse), read_only=True) as conn:
        blocks, block_size = conn.execute("SELECT total_blocks, block_size FROM pragma_database_size()").fetchall()[0]
        assert home.warehouse.stat().st_size < blocks * block_size  # what the old check took for a cut
        assert conn.execute("SELECT count(*) FROM activities").fetchall()[0][0] == 6
    doctor = fitsync(env_for(home), "doctor")
    [line] = [line for line in doctor.stdout.splitlines() if line[2:].startswith("warehouse:")]
    assert line.startswith("✓ warehouse: schema"), doctor.stdout


def test_status_time_left_is_the_rate_governors_estimate(sb: Harness, connect: Connect) -> None:
    """A known ledger (the 15-minute read window used past what interactive work may take) and a known queue (3
    details and their zones): `status` says the time the governor's seconds_for gives, the wait for the window's
    reset included, as `fitsync sync`'s progress does (both through sync_waits.time_left); not calls × pace alone."""
    import time

    from fitsync.client.rate_governor import RateGovernor, seconds_for
    from fitsync.state import progress

    aid = add_athlete(sb)
    ids = record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    home.sync()
    config = home.config
    with home.store.transaction() as conn:
        progress.request_refresh(conn, aid, ids, zones=True)  # 3 details + 3 zones queued
    governor = RateGovernor(
        home.store,
        short_window=config.short_window,
        long_window=config.long_window,
        bulk_reserve=config.bulk_reserve,
        boundary_guard=config.boundary_guard,
    )
    limits = {"X-RateLimit-Limit": "100,1000", "X-ReadRateLimit-Limit": "100,1000"}
    governor.observe({**limits, "X-RateLimit-Usage": "98,98", "X-ReadRateLimit-Usage": "98,98"})
    env = env_for(home)
    asked_at = time.time()
    shown = fitsync(env, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    [athlete] = json.loads(shown.stdout)["athletes"]
    assert (athlete["pending"]["details"], athlete["pending"]["zones"]) == (3, 3)
    lines = governor.snapshot()
    lengths = {"short": config.short_window, "long": config.long_window}
    expected = seconds_for(6, lines, asked_at, lengths, 0.25, config.bulk_reserve)
    reset = next(x.resets_at for x in lines if (x.window, x.budget) == ("short", "read"))
    assert expected >= reset - asked_at  # the precondition: the queue waits for the window
    left = athlete["pending"]["time_left_seconds"]
    assert abs(left - expected) <= 5, (left, expected)  # the seconds the command took to start
    table = fitsync({**env, "COLUMNS": "220"}, "status").stdout
    row = next(line for line in table.splitlines() if str(aid) in line)
    assert "time left" in table and re.search(r"about \d+ (m|s|h)", row), row
