"""A sync with nothing new: two calls, no Dagster; anything new, waiting or different from the last answers runs."""

from __future__ import annotations

import re
import subprocess

import pytest

from fitsync.client.runtime import FitsyncClient
from fitsync.pipelines import nothing_new
from fitsync.sync import progress
from fitsync.warehouse import db

from ..processes import run_fitsync
from ..sandbox_harness import ACTIVITY_NOT_FOUND, Harness, add_athlete, change, record
from .conftest import Connect, Home, record_many, subprocess_env

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


def fitsync_sync(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(["sync", *args], env=subprocess_env(home.config.home), timeout=300)


def caught_up(sb: Harness, connect: Connect) -> Home:
    """An athlete synced twice: a full listing, then an incremental one whose answer the state store keeps. Stats,
    zones and starred segments on the default cadence, as config.toml (which the CLI reads) leaves it."""
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=5)
    home = connect(aid, slow_refresh_hours=20)
    home.sync()
    home.sync()
    return home


def test_nothing_new_costs_two_calls_and_no_dagster_and_a_change_runs_the_sync(sb: Harness, connect: Connect) -> None:
    home = caught_up(sb, connect)
    before = sb.counters()["requests"]
    done = fitsync_sync(home)
    assert done.returncode == 0, done.stderr
    assert f"athlete {home.athlete_id}: nothing new (2 calls" in done.stderr, done.stderr
    assert sb.counters()["requests"] - before == 2
    assert not (home.config.home / "dagster").exists()  # the CLI's Dagster instance was never opened
    assert home.state(
        "SELECT count(*) FROM sync_cursors WHERE athlete_id = ? AND name = ?", home.athlete_id, progress.NOTHING_NEW_AT
    ) == [(1,)]

    renamed = home.query("SELECT activity_id FROM activities ORDER BY activity_id LIMIT 1")[0][0]
    change(sb, renamed, name="Renamed after the last sync")
    done = fitsync_sync(home)
    assert done.returncode == 0, done.stderr
    assert "nothing new" not in done.stderr and "the listing changed" in done.stderr, done.stderr
    assert home.query("SELECT name FROM activities WHERE activity_id = ?", renamed) == [
        ("Renamed after the last sync",)
    ]
    assert "nothing new (2 calls" in fitsync_sync(home).stderr  # and the next one is cheap again


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse file
def test_a_warehouse_made_anew_is_not_nothing_new_and_gets_the_athletes_activities_back(
    sb: Harness, connect: Connect
) -> None:
    """The damaged-warehouse fix (`mv` it aside, `fitsync sync`) with several athletes: the first one's run makes a
    new file, and the next athlete's listing and profile are as its last run saw them. "Nothing new" then left it out
    of the warehouse for good (until a --full); its activities come back as the first one's do."""
    home = caught_up(sb, connect)
    home.warehouse.rename(f"{home.warehouse}.damaged")
    db.migrate(home.warehouse)  # what another athlete's run leaves: the tables, none of this athlete's rows
    done = fitsync_sync(home)
    assert done.returncode == 0, done.stderr
    assert "holds none of the 3 activities earlier runs loaded" in done.stderr and "nothing new" not in done.stderr
    assert home.query("SELECT count(*) FILTER (detail_loaded) FROM activities") == [(3,)]
    # and what the cadence keeps (refreshed 20 h apart here): it came back as nothing, "not due"
    for table in ("athlete_stats", "athlete_zones", "starred_segments", "segments"):
        assert home.query(f"SELECT count(*) > 0 FROM {table}") == [(True,)], table
    assert "nothing new (2 calls" in fitsync_sync(home).stderr  # and cheap again once it holds them


def test_waiting_work_or_a_new_upload_is_never_taken_for_nothing_new(sb: Harness, connect: Connect) -> None:
    home = caught_up(sb, connect)
    with FitsyncClient(home.config) as client:
        assert nothing_new.waiting(client, home.athlete_id) is None
        some = sorted(progress.known_ids(client.store, home.athlete_id))[:1]
        with client.store.transaction() as conn:
            progress.mark(conn, home.athlete_id, some, "detail", 1)
        check = nothing_new.check(client, home.athlete_id, priority="incremental", max_wait=5)
        assert not check.nothing_new and check.calls == 0 and "wait for their details" in check.why
        with client.store.transaction() as conn:
            progress.mark(conn, home.athlete_id, some, "detail", 0)
            conn.execute(
                "DELETE FROM sync_cursors WHERE athlete_id = ? AND name = 'refreshed_at:athlete_zones'",
                (home.athlete_id,),
            )
        assert "athlete_zones is due" in (nothing_new.waiting(client, home.athlete_id) or "")
    home.sync()
    with FitsyncClient(home.config) as client:
        assert nothing_new.check(client, home.athlete_id, priority="incremental", max_wait=5).nothing_new
        record(sb, home.athlete_id, days_ago=0.1)
        check = nothing_new.check(client, home.athlete_id, priority="incremental", max_wait=5)
    # the upload shows in the listing, and in the profile already: its bike's distance grew
    assert not check.nothing_new and check.why in ("the profile changed", "the listing changed")


def dagster_runs(home: Home) -> int:
    """Runs in the CLI's own Dagster instance (FITSYNC_HOME/dagster), 0 before it exists."""
    if not (home.config.home / "dagster" / "dagster.yaml").exists():
        return 0
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home.config.home / "dagster")) as instance:
        return instance.get_runs_count()


def nothing_new_costs_at_most_two_calls(sb: Harness, home: Home) -> None:
    runs, before = dagster_runs(home), sb.counters()["requests"]
    done = fitsync_sync(home)
    assert done.returncode == 0, done.stderr
    # its seconds are bench peer's figure (under 1 s on a quiet machine; a test under load takes longer)
    assert re.search(rf"athlete {home.athlete_id}: nothing new \(2 calls in \d+\.\d s", done.stderr), done.stderr
    assert sb.counters()["requests"] - before <= 2
    assert dagster_runs(home) == runs  # no Dagster run


@pytest.mark.parametrize(  # the non-subscriber's run with -m slow: the default run's 10 minutes
    "premium", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["subscriber", "non-subscriber"]
)
@pytest.mark.sqlite_only  # the state store is incidental: the calls a sync makes
def test_nothing_new_from_the_second_sync_on_and_after_a_full_one(sb: Harness, connect: Connect, premium: bool) -> None:
    """The first sync lists everything; the second already compares with it (whatever kind of listing the last run
    made), and so does the one after `--full`. A non-subscriber's activities keep their zones queued (never asked
    for while the profile says premium false): that is nothing waiting."""
    aid = add_athlete(sb, premium=premium)
    record_many(sb, aid, 3, oldest_days=5)
    home = connect(aid, slow_refresh_hours=20)
    first = fitsync_sync(home)
    assert first.returncode == 0 and "nothing new" not in first.stderr, first.stderr
    assert dagster_runs(home) == 1
    rows = home.query("SELECT has_heartrate, device_watts, sport_type, start_lat, start_lng, distance FROM activities")
    zoned = sum(  # those that can have zones (the sandbox records heart rate 96 % of the time)
        progress.may_have_zones(
            {"has_heartrate": hr, "device_watts": watts, "sport_type": sport, "distance": distance}
            | {"start_latlng": [lat, lng] if lat is not None else None}
        )
        for hr, watts, sport, lat, lng, distance in rows
    )
    assert home.needing("zones") == (0 if premium else zoned)  # the non-subscriber's zones wait for a subscription
    nothing_new_costs_at_most_two_calls(sb, home)

    full = fitsync_sync(home, "--full")
    assert full.returncode == 0 and "nothing new" not in full.stderr, full.stderr
    assert dagster_runs(home) == 2
    nothing_new_costs_at_most_two_calls(sb, home)

    if not premium:  # subscribing changes the profile: the next sync runs and fetches the zones it kept queued
        sb.console.put(f"/athletes/{aid}/premium", json={"premium": True}).raise_for_status()
        subscribed = fitsync_sync(home)
        assert subscribed.returncode == 0 and "the profile changed" in subscribed.stderr, subscribed.stderr
        assert home.needing("zones") == 0


def test_a_budget_spent_past_max_wait_is_said_and_no_run_starts(sb: Harness, connect: Connect) -> None:
    """The check meets a spent budget (429): one line saying until when and what to do, exit 3 (work is left), no
    Dagster run doing nothing, no class name."""
    home = caught_up(sb, connect)
    with sb.settings(read_limit_short=1):  # the window's reads are already past it
        done = fitsync_sync(home, "--max-wait", "5")
    assert done.returncode == 3, done.stderr
    assert f"athlete {home.athlete_id}: the rate budget is spent until" in done.stderr, done.stderr
    assert "longer than --max-wait: nothing done" in done.stderr and "Exhausted" not in done.stderr
    assert not (home.config.home / "dagster").exists()  # no run was started
    # a sync with no check (--full, or work waiting) on a budget the ledger knows is spent: no call, no Dagster
    before = sb.counters()["requests"]
    full = fitsync_sync(home, "--full", "--max-wait", "0")
    assert full.returncode == 3 and "the rate budget is spent until" in full.stderr, full.stderr
    assert sb.counters()["requests"] == before and not (home.config.home / "dagster").exists()


def test_a_wait_before_any_run_is_said_with_its_reason_and_length() -> None:
    """A wait for the budget during the nothing-new check (before any run exists) gets its line, as a run's does."""
    import io
    import threading
    import time

    from rich.console import Console

    from fitsync.cli.sync_waits import WaitsShown
    from fitsync.client import rate_governor

    said = io.StringIO()
    out = Console(file=said, force_terminal=False, width=200)
    wait = rate_governor.Wait(time.time() + 125, "short", "read", 100, 100, 900)
    with rate_governor._waits_lock:
        rate_governor._waits[threading.get_ident()] = wait  # as reserve() records a wait in progress
    try:
        with WaitsShown("athlete 7", out, "checking for anything new"):
            deadline = time.monotonic() + 10
            while "waiting" not in said.getvalue() and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        with rate_governor._waits_lock:
            rate_governor._waits.pop(threading.get_ident(), None)
    assert re.search(
        r"athlete 7: checking for anything new · waiting 2 m 0[0-9] s for the 15-minute read window \(used 100/100\)",
        said.getvalue(),
    ), said.getvalue()
    assert said.getvalue().count("waiting") == 1  # one line per wait, off a terminal


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "log"])
def test_a_quiet_sync_says_a_wait_at_a_terminal_only(terminal: bool) -> None:
    """--quiet says only what needs attention; minutes of silence at a terminal read as a hang (a person waited 10
    minutes not knowing why): there the wait is a status line, erased when it ends. In a log, quiet stays quiet."""
    import io
    import threading
    import time

    from rich.console import Console

    from fitsync.cli.sync_waits import WaitsShown
    from fitsync.client import rate_governor

    said = io.StringIO()
    out = Console(file=said, force_terminal=terminal, width=200, quiet=True)
    wait = rate_governor.Wait(time.time() + 600, "short", "read", 100, 100, 900)
    with rate_governor._waits_lock:
        rate_governor._waits[threading.get_ident()] = wait
    try:
        with WaitsShown("athlete 7", out, "syncing"):
            deadline = time.monotonic() + (10 if terminal else 1.5)  # off a terminal: three polls, and nothing
            while "waiting" not in said.getvalue() and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        with rate_governor._waits_lock:
            rate_governor._waits.pop(threading.get_ident(), None)
    if terminal:
        assert re.search(r"athlete 7: syncing · waiting (10 m 00|9 m 5[0-9]) s for the 15-minute", said.getvalue())
    else:
        assert said.getvalue() == ""


def test_an_activity_deleted_on_a_404_its_listing_contradicts_comes_back_at_the_next_sync(
    sb: Harness, connect: Connect
) -> None:
    """A detail answered 404 (the service's word on the activity) deletes it, tombstoned. When that 404 was the
    service's mistake, the listing still shows it, yet every later sync found the listing as the last run saw it:
    "nothing new", the activity gone until the weekly full listing (an adversarial audit). The deletion now drops the
    listing's digest: the next sync lists it as new and restores it."""
    home = caught_up(sb, connect)
    renamed = home.query("SELECT activity_id FROM activities ORDER BY activity_id LIMIT 1")[0][0]
    change(sb, renamed, name="Renamed: its detail is fetched again")
    with sb.settings(fault_answers={"GET /activities/{id}": ACTIVITY_NOT_FOUND}):
        home.sync()
    assert home.query("SELECT count(*) FROM activities WHERE activity_id = ?", renamed) == [(0,)]
    assert home.query("SELECT reason FROM deleted_activities WHERE activity_id = ?", renamed) == [("not found",)]
    done = fitsync_sync(home)
    assert done.returncode == 0 and "nothing new" not in done.stderr, done.stderr
    assert home.query("SELECT name FROM activities WHERE activity_id = ?", renamed) == [
        ("Renamed: its detail is fetched again",)
    ]
    assert home.query("SELECT restored_at IS NOT NULL FROM deleted_activities WHERE activity_id = ?", renamed) == [
        (True,)
    ]
