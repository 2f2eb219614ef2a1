"""Many hosts, one budget — proved (issue 17 §4): three `fitsync sync` workers, two `fitsync webhooks serve`
receivers (one killed -9 mid-burst) and the daemon's sensor, each in a home of its own, on one PostgreSQL state
store, under strict refresh-token rotation and a tight rate window (the scenario: tests/many_hosts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..many_hosts import UNKNOWN_IDS, Scenario, run
from ..postgres_server import PostgresServer
from ..sandbox_harness import Harness


@pytest.mark.slow  # a deployment in miniature: six processes on one PostgreSQL, ≈ 1 min
@pytest.mark.timeout(300)
def test_three_workers_two_receivers_and_a_daemon_share_one_budget_token_and_inbox(
    sb: Harness, tmp_path: Path, postgres_server: PostgresServer
) -> None:
    scenario = Scenario(events=200)  # bench many-hosts runs 400 and more
    out = run(sb, tmp_path, postgres_server.new_database(), scenario)

    # A worker that met an athlete another host was syncing skipped it and says so (exit 0: it continues there;
    # 3 only when the budget left work for later).
    assert set(out.worker_exit.values()) <= {0, 3}, out.worker_output
    assert not any("FAILED" in text for text in out.worker_output.values()), out.worker_output
    assert any("is being synced by process" in text for text in out.worker_output.values())
    # One budget: the sandbox refused nothing over several windows' worth of calls. How much of each
    # window they use is `python -m bench many-hosts`'s figure (≥ 95 %): beside the rest of the suite on 2 cores the
    # processes are short of CPU, not of budget (CI: windows 63 % used on average, the fullest at 39 of 50).
    assert out.status_429 == 0
    assert len(out.per_window) >= 3 and sum(out.per_window) >= 3 * out.read_limit, (out.per_window, out.read_limit)
    # Tokens: refreshed over and over by whichever host needed one, none presented after another host rotated
    # it away, and every athlete's stored refresh token is the live one.
    assert out.token_refreshes >= scenario.athletes * 2, out.token_refreshes
    assert out.token_refusals == 0
    assert out.live_refresh_tokens == scenario.athletes
    # No athlete synced by two hosts at once; every athlete synced by one of them, all its activities loaded.
    assert out.overlaps == []
    assert len(out.synced_by) == scenario.athletes and all(out.synced_by.values())
    assert out.activities_found == out.activities
    # Every event acknowledged, in the inbox once although a receiver died mid-burst and its share was resent,
    # and acted on once: each delete in one run, each rename fetched and loaded.
    assert 0 < out.acknowledged_before_kill and out.resent > 0
    assert out.stored_once and out.inbox_size == scenario.events and out.unprocessed == 0
    assert out.deletes_acted == [UNKNOWN_IDS + i for i in range(scenario.athletes, scenario.events)]
    assert out.refresh_run_failures == []
    assert out.updates_applied == out.updates
