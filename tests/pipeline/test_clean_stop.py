"""`fitsync sync` as a process: SIGTERM / Ctrl-C stop it at the next safe point with 143 / 130 and one line of what
was done; the next sync continues where it stopped. One sync per athlete at a time; a sync the rate budget cut
short exits 3 (partial) and says why."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from fitsync.assets import sync_state
from fitsync.pipelines.athlete_lock import athlete_lock

from ..sandbox_harness import Harness, wait_until
from .conftest import REPO, Connect, add_athlete, record_many, subprocess_env
from .test_cli import FITSYNC, env_for, fitsync
from .test_resume import TINY, WINDOW


@pytest.mark.parametrize("signum, code, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")])
def test_a_signal_stops_the_sync_cleanly_and_the_next_one_continues(sb: Harness, connect: Connect, tmp_path: Path,
                                                                     signum: int, code: int, name: str) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 30, oldest_days=30)
    home = connect(aid)
    env = env_for(home)
    # Slow enough (a few seconds of details left when the signal goes) to be caught mid-way even on a busy machine.
    with sb.settings(fault_latency_ms=150):
        process = subprocess.Popen([*FITSYNC, "sync"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            def detailing() -> bool:
                assert process.poll() is None, process.communicate()
                known = sync_state.known_ids(home.store, aid)
                return len(known) == len(ids) and sync_state.count_needing(home.store, aid, "detail") < len(ids) - 3
            wait_until(detailing, 60, "the sync to be detailing activities", interval=0.05)
            process.send_signal(signum)
            out, err = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode == code, out + err
    assert "Traceback" not in err and "Stopped by" in err and name in err, err
    left = sync_state.count_needing(home.store, aid, "detail")
    assert 0 < left < len(ids) and f"with {len(ids) - left} of {len(ids)} activities detailed" in err
    assert "`fitsync sync` to continue" in err
    if signum == signal.SIGINT:
        return  # the same safe point as SIGTERM: continuing from it is shown once

    again = fitsync(env, "sync")  # continues: only what was left is fetched
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"fetched={left}" in again.stderr, again.stderr
    assert home.query("SELECT count(*) FROM activities") == [(len(ids),)]


def test_a_second_sync_of_an_athlete_being_synced_is_skipped_and_says_so(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=5)
    home = connect(aid)
    with athlete_lock(home.config.home, aid):  # this test process is "the other sync"
        second = fitsync(env_for(home), "sync", "--athlete", str(aid))
    assert second.returncode == 3, second.stdout + second.stderr
    assert f"athlete {aid} is being synced by process" in second.stderr and "skipped" in second.stderr
    assert "Traceback" not in second.stderr
    assert not home.warehouse.exists() or home.query("SELECT count(*) FROM activities") == [(0,)]
    assert fitsync(env_for(home), "sync", "--athlete", str(aid)).returncode == 0  # the lock went with its holder


def test_a_sync_the_rate_budget_cuts_short_exits_partial_and_says_why(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 10, oldest_days=30)
    with sb.settings(**TINY):
        home = connect(aid, short_window=WINDOW, boundary_guard=0.05)
        env = {**env_for(home), "FITSYNC_RATE_SHORT_WINDOW": str(WINDOW)}
        cut = fitsync(env, "sync", "--max-wait", "0.2")
    assert cut.returncode == 3, cut.stdout + cut.stderr
    assert f"athlete {aid}: stopped early" in cut.stderr and "rate budget" in cut.stderr, cut.stderr
    assert "continues where this stopped" in cut.stderr and "Traceback" not in cut.stderr

    # Allowed to wait, the next sync finishes; off a terminal it says each phase and each wait in one plain line.
    with sb.settings(**TINY):
        waited = fitsync(env, "sync")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    lines = waited.stderr.splitlines()
    phases = [m[1] for line in lines if (m := re.match(rf"athlete {aid}: ([a-z -]+?)( \d+/10)?( ·|$)", line))]
    assert phases[:1] == ["profile"] and phases[-2:] == ["loading the warehouse", "checking the warehouse"], lines  # each phase, in order
    assert {"listing", "details", "activity zones"} <= set(phases), lines
    waits = [line for line in lines if "waiting" in line]  # how long, for which window, and why
    assert waits and all(re.search(rf"waiting \d+ s for the {WINDOW}-second read window \(used 1[45]/15\)", line)
                         for line in waits), lines


def test_the_demo_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    env = subprocess_env(tmp_path / "unused-home")
    process = subprocess.Popen([*FITSYNC, "demo", "--home", str(tmp_path / "demo"), "--activities-per-athlete", "60"],
                               cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # wait for the OAuth step: the syncs start next
            if line.startswith("2."):
                break
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert err.startswith("Stopped by SIGTERM") and "Traceback" not in err and "fitsync demo" in err, err
