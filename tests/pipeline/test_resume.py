"""Resumable syncs: a run killed with SIGKILL at random points and restarted ends with the same warehouse as an
uninterrupted one, with few repeated calls; a tiny rate budget spreads a backfill over several windows without a
single 429; a run out of patience for the budget stops early and the next one continues where it stopped."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef

from fitsync.client.runtime import FitsyncClient
from fitsync.resources.run import DETAIL_CHUNK, DUCKDB_POOL

from ..processes import popen
from ..sandbox_harness import Harness, wait_until
from .conftest import REPO, Connect, Home, Recorder, add_athlete, dump, duplicate_keys, record_many, subprocess_env
from .sync_worker import REQUEST_LOG

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


# A sync worker takes 20-40 s alone; with the suite on both cores of a busy machine, 2-3 times that. The limit only
# catches a hang.
WORKER_TIMEOUT = 240.0


# --- 4. killed and restarted ------------------------------------------------------------------------------------


@dataclass
class Worker:
    """`python -m tests.pipeline.sync_worker` on a home; what it sent is in the home's requests.log.

    Its output goes to a file, not a pipe: a process it started can outlive a SIGKILL (Dagster mirrors a step's
    output with `tail -F` and a watcher process; a kill between starting the two leaves the tail running until the
    next sync ends it, sync_runner.end_log_tails) and would hold a pipe open: reading to its end would wait."""

    home: Home
    proc: subprocess.Popen[bytes] | None = None
    log_start: int = 0  # lines of requests.log before this process started
    output: Path | None = None

    def start(self) -> Worker:
        self.log_start = len(self.requests())
        self.output = self.home.config.home / f"worker-{time.monotonic_ns()}.out"
        with self.output.open("wb") as out:
            self.proc = popen(
                [
                    sys.executable,
                    "-m",
                    "tests.pipeline.sync_worker",
                    str(self.home.config.home),
                    str(self.home.athlete_id),
                ],
                cwd=REPO,
                env=subprocess_env(self.home.config.home),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def requests(self) -> list[str]:
        path = self.home.config.home / REQUEST_LOG
        return path.read_text().splitlines() if path.exists() else []

    def sent(self) -> list[str]:
        """Requests this process sent."""
        return self.requests()[self.log_start :]

    def alive(self) -> bool:
        assert self.proc is not None
        return self.proc.poll() is None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL: no cleanup of any kind
        self.proc.wait(timeout=WORKER_TIMEOUT)

    def finish(self, timeout: float = WORKER_TIMEOUT) -> tuple[int, str]:
        assert self.proc is not None and self.output is not None
        code = self.proc.wait(timeout=timeout)
        return code, self.output.read_text(errors="replace")


class Pools:
    """The Dagster pools of the home's instance (the one `fitsync sync` uses: FITSYNC_HOME/dagster)."""

    def __init__(self, home: Home) -> None:
        self.dir = home.config.home / "dagster"
        self.log = home.config.home / REQUEST_LOG
        self._instance: DagsterInstance | None = None

    @property
    def instance(self) -> DagsterInstance | None:
        """Opened once a worker has sent a request: its run is under way, so the instance's storage is set up (opening
        it while the first worker creates it would race with that worker's schema migrations)."""
        if self._instance is None and self.log.exists() and self.log.stat().st_size > 0:
            self._instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(self.dir)))
        return self._instance

    def claimed(self, pool: str) -> set[str]:
        """Run ids holding a slot of the pool."""
        if self.instance is None:
            return set()
        return {c.run_id for c in self.instance.event_log_storage.get_concurrency_info(pool).claimed_slots}

    def waiting(self, pool: str) -> set[str]:
        if self.instance is None:
            return set()
        return {p.run_id for p in self.instance.event_log_storage.get_concurrency_info(pool).pending_steps}


def detail_calls(lines: list[str]) -> list[str]:
    return [line for line in lines if re.fullmatch(r"GET /api/v3/activities/\d+", line)]


def zones_calls(lines: list[str]) -> list[str]:
    return [line for line in lines if re.fullmatch(r"GET /api/v3/activities/\d+/zones", line)]


def landing_rows(home: Home) -> int:
    return home.state("SELECT count(*) FROM landing WHERE athlete_id = ?", home.athlete_id)[0][0]


@dataclass
class KillPoint:
    """When to kill: a predicate on the running worker (polled every few ms) and a name for messages."""

    name: str
    reached: Callable[[Worker, Pools], bool]


def after_details(k: int) -> KillPoint:
    return KillPoint(f"after {k} detail calls", lambda w, p: len(detail_calls(w.sent())) >= k)


def after_calls(k: int) -> KillPoint:
    return KillPoint(f"after {k} calls", lambda w, p: len(w.sent()) >= k)


def while_loading(applied: int = 1) -> KillPoint:
    """The loader holds the DuckDB pool's slot and has applied (and removed) `applied` landed batches."""
    most: list[int] = []

    def reached(w: Worker, p: Pools) -> bool:
        if not p.claimed(DUCKDB_POOL):
            return False
        rows = landing_rows(w.home)
        most.append(max(most[-1] if most else 0, rows))
        return rows <= most[-1] - applied

    return KillPoint(f"while loading, after {applied} batches", reached)


def loader_started() -> KillPoint:
    return KillPoint("as the loader starts", lambda w, p: bool(p.claimed(DUCKDB_POOL)))


def sync_with_kills(home: Home, next_point: Callable[[int], KillPoint | None]) -> tuple[int, list[str]]:
    """Run the worker and SIGKILL it at `next_point(kills so far)` until that says None, then let a last run
    finish; returns (kills, kill points the run finished before reaching)."""
    kills, missed = 0, []
    pools = Pools(home)
    while (point := next_point(kills)) is not None:
        worker = Worker(home).start()
        try:
            wait_until(
                lambda: point.reached(worker, pools) or not worker.alive(), WORKER_TIMEOUT, point.name, interval=0.002
            )
        finally:
            if worker.alive():
                worker.kill()
                kills += 1
            else:
                missed.append(point.name)
                worker.finish()
    code, output = Worker(home).start().finish()
    assert code == 0, output
    return kills, missed


def _killed_sync_equals_uninterrupted(
    sb: Harness, connect: Connect, n: int, next_point: Callable[[Home, int], KillPoint | None], min_kills: int
) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, n, oldest_days=120, only_me_every=7)
    reference = connect(aid, name="reference")
    reference.sync()
    home = connect(aid, name="killed")

    kills, missed = sync_with_kills(home, lambda k: next_point(home, k))
    assert kills >= min_kills, f"too few kills landed: missed {missed}"

    assert dump(home.warehouse) == dump(reference.warehouse)
    assert not any(duplicate_keys(home.warehouse).values())
    assert landing_rows(home) == 0 and home.needing("detail") == home.needing("zones") == 0
    lines = Worker(home).requests()
    details, zones = detail_calls(lines), zones_calls(lines)
    assert len(set(details)) == n and set(zones) == {f"GET /api/v3/activities/{i}/zones" for i in home.with_zones()}
    assert len(details) <= n + kills * DETAIL_CHUNK, Counter(details).most_common(3)
    assert len(zones) <= n + kills * DETAIL_CHUNK, Counter(zones).most_common(3)


# Three sync processes (two killed, the last) beside a reference sync: about a minute beside the suite. A kill among
# the details and one while loading; kills after any call (zones included) are test_many_random_kills, -m slow.
# Its PostgreSQL variant runs with -m slow, as the other pipeline tests' do (the default run's 10-minute budget).
@pytest.mark.timeout(420)
def test_killed_syncs_restart_to_the_same_warehouse_with_few_repeated_calls(sb: Harness, connect: Connect) -> None:
    rng = random.Random()
    points = [after_details(rng.randint(3, 21)), while_loading(rng.randint(1, 3))]
    _killed_sync_equals_uninterrupted(sb, connect, 24, lambda home, k: points.pop(0) if points else None, min_kills=2)


@pytest.mark.slow
@pytest.mark.timeout(360)  # ≈ 50 s alone; past 120 s beside the rest of `-m slow` on 2 cores (PostgreSQL variant)
def test_many_random_kills(sb: Harness, connect: Connect) -> None:
    rng = random.Random()
    attempts = []

    def next_point(home: Home, kills: int) -> KillPoint | None:
        attempts.append(kills)
        if kills >= 12 or len(attempts) > 30:
            return None
        if rng.random() < 0.25:
            return rng.choice([loader_started(), while_loading(rng.randint(1, 4))])
        known = home.state("SELECT count(*) FROM known_activities")[0][0]
        ahead = 5 + (2 * 60 if not known else home.needing("detail") + home.needing("zones"))  # calls left, roughly
        return after_calls(rng.randint(1, ahead))

    _killed_sync_equals_uninterrupted(sb, connect, 60, next_point, min_kills=10)


# The test above kills a sync while it loads and its last sync must finish (a slot only a dead run holds would keep
# it waiting); this one fails fast on that wait, with 2 sync processes that take a minute beside the suite: -m slow.
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_sync_killed_while_loading_does_not_block_later_syncs(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    pools = Pools(home)
    first = Worker(home).start()
    wait_until(
        lambda: pools.claimed(DUCKDB_POOL) or not first.alive(), WORKER_TIMEOUT, "the loader to start", interval=0.002
    )
    assert first.alive(), first.finish()
    first.kill()
    dead = pools.claimed(DUCKDB_POOL)
    assert dead

    second = Worker(home).start()
    stuck_since: list[float] = []

    def finished_or_stuck() -> bool:
        if not second.alive():
            return True
        if pools.waiting(DUCKDB_POOL) - dead and pools.claimed(DUCKDB_POOL) == dead:
            stuck_since.append(stuck_since[0] if stuck_since else time.monotonic())
            return time.monotonic() - stuck_since[0] > 3.0  # waiting for a slot only a dead run holds
        stuck_since.clear()
        return False

    try:
        wait_until(finished_or_stuck, WORKER_TIMEOUT, "the restarted sync to finish", interval=0.05)
        assert not second.alive(), f"the restarted sync waits for the DuckDB slot of dead run(s) {sorted(dead)}"
        code, output = second.finish()
        assert code == 0, output
    finally:
        if second.alive():
            second.kill()
    assert home.query("SELECT count(*) FROM activities") == [(3,)]


# --- 5. a tiny rate budget -------------------------------------------------------------------------------------

WINDOW = 2
TINY = {"short_window": WINDOW, "read_limit_short": 15}


def _usage(recorder: Recorder) -> list[tuple[int, int]]:
    """(short-window read usage, limit) the service reported on each answer, in order."""
    out = []
    for sent in recorder.sent:
        usage = sent.headers.get("x-readratelimit-usage")
        limit = sent.headers.get("x-readratelimit-limit")
        if usage and limit:
            out.append((int(usage.split(",")[0]), int(limit.split(",")[0])))
    return out


def _tiny_budget_backfill(sb: Harness, connect: Connect, recorder: Recorder, n: int) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, n, oldest_days=30)
    with sb.settings(**TINY):
        home = connect(aid, short_window=WINDOW, boundary_guard=0.05)
        before = sb.counters()
        started = time.monotonic()
        outcome = home.sync()
        took = time.monotonic() - started
        after = sb.counters()
    assert after.get("status_429", 0) == before.get("status_429", 0)
    assert after.get("rate_limited", 0) == before.get("rate_limited", 0)
    usage = _usage(recorder)
    assert usage and all(used <= limit == 15 for used, limit in usage), usage
    windows = 1 + sum(1 for (a, _), (b, _) in zip(usage, usage[1:]) if b <= a)  # usage restarts in a new window
    assert windows >= 3 and took >= (windows - 1) * WINDOW * 0.5
    assert outcome.metadata["activity_details"]["remaining"] == outcome.metadata["activity_zones"]["remaining"] == 0
    assert {r[0] for r in home.query("SELECT activity_id FROM activities WHERE detail_fetched_at IS NOT NULL")} == set(
        ids
    )
    assert sorted(recorder.zones()) == sorted(f"/activities/{i}/zones" for i in home.with_zones(ids))  # each once
    assert home.needing("zones") == 0


def test_tiny_rate_budget_spreads_a_backfill_over_windows_without_a_429(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    _tiny_budget_backfill(sb, connect, recorder, 20)


@pytest.mark.slow
def test_tiny_rate_budget_backfill_of_forty(sb: Harness, connect: Connect, recorder: Recorder) -> None:
    _tiny_budget_backfill(sb, connect, recorder, 40)


def test_a_run_out_of_patience_stops_early_and_the_next_continues_without_repeats(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 16, oldest_days=30)
    with sb.settings(**TINY):
        home = connect(aid, short_window=WINDOW, boundary_guard=0.05)
        # No patience at all, and a budget a loaded machine spends within a window too (4 reads a second): at 15 a
        # window and 0.5 s of patience, a slow run met each new window before it ran out, and fetched everything
        with sb.settings(read_limit_short=8):
            first = home.sync(max_wait_seconds=0)
        assert first.metadata["activity_details"]["remaining"] + first.metadata["activity_zones"]["remaining"] > 0
        # the details or the zones after them (whichever meets the spent budget) say so
        notes = " ".join(str(first.metadata[a].get("notes", "")) for a in ("activity_details", "activity_zones"))
        assert "rate budget spent" in notes
        # Newest first: what the first run detailed are the most recent activities (record_many: oldest first).
        detailed = [f"/activities/{i}" for i in reversed(ids)][: len(recorder.details())]
        assert detailed and recorder.details() == detailed
        runs = 1
        while home.needing("detail") or home.needing("zones"):
            runs += 1
            assert runs <= 15, "no progress"
            home.sync(max_wait_seconds=0.5)
        home.sync(max_wait_seconds=0.5)  # segments and effort histories may need one more
    assert runs >= 2
    assert sorted(recorder.details()) == sorted(f"/activities/{i}" for i in ids)  # each exactly once
    assert sorted(recorder.zones()) == sorted(f"/activities/{i}/zones" for i in home.with_zones(ids))
    assert home.query("SELECT count(*) FROM activities WHERE detail_fetched_at IS NOT NULL") == [(len(ids),)]
    assert [s for s in recorder.sent if s.status == 429] == []


def test_a_spent_budget_is_a_skip_for_every_asset_not_a_failure(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """Whatever asset meets the spent budget first, the run succeeds and says so in its metadata."""
    aid = add_athlete(sb)
    record_many(sb, aid, 5, oldest_days=10)
    window = 20
    with sb.settings(short_window=window, read_limit_short=6):
        home = connect(aid, short_window=window, boundary_guard=0.05)
        # spend the window's budget through the home's own client (its ledger is the one the run consults),
        # early enough in a window that the run surely starts before the next one
        wait_until(lambda: time.time() % window < window - 8, window, "the start of a rate window", interval=0.05)
        with FitsyncClient(home.config) as client:
            session = client.athlete(aid)
            for _ in range(6):
                session.athlete()
        outcome = home.sync(max_wait_seconds=0.5)
    for asset in (
        "athlete",
        "athlete_stats",
        "athlete_zones",
        "activities",
        "starred_segments",
        "activity_details",
        "activity_zones",
        "segments",
        "segment_effort_history",
    ):
        assert outcome.metadata[asset]["api_calls"] == 0, asset
    for asset in ("athlete", "athlete_stats", "athlete_zones", "activities", "starred_segments"):  # the rest had
        assert "rate budget spent" in str(outcome.metadata[asset].get("notes", "")), asset  # nothing to do yet
    assert [s for s in recorder.sent if s.path != "/athlete"] == []


def test_sync_athlete_runs_with_the_config_it_is_given(sb: Harness, connect: Connect) -> None:
    from fitsync.pipelines.sync_runner import resources_for

    home = connect(add_athlete(sb), short_window=WINDOW, boundary_guard=0.05, bulk_reserve=0.25, max_retries=2)
    (home.config.home / "config.toml").unlink()  # only the Config object says these
    used = resources_for(home.config, max_wait_seconds=1.0)["fitsync_api"].config()
    fields = ("short_window", "long_window", "boundary_guard", "bulk_reserve", "timeout", "max_retries")
    assert {f: getattr(used, f) for f in fields} == {f: getattr(home.config, f) for f in fields}


def test_a_dead_runs_leftover_log_tail_is_ended_and_nothing_else(tmp_path: Path) -> None:
    """What a SIGKILLed sync can leave (a `tail -F` its watcher did not end): the next sync's end_log_tails ends it."""
    from fitsync.pipelines.sync_runner import end_log_tails, log_tails

    logs = {run: tmp_path / "storage" / run / "compute_logs" / "step.out" for run in ("dead-run-id", "live-run-id")}
    tails = {}
    for run, path in logs.items():
        path.parent.mkdir(parents=True)
        path.touch()
        tails[run] = subprocess.Popen(["tail", "-F", "-c", "+0", str(path)], stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: len(log_tails(str(tmp_path))) == 2, 10, "both tails to start")
        assert end_log_tails("dead-run-id") == [tails["dead-run-id"].pid]
        assert tails["dead-run-id"].wait(timeout=10) != 0 and tails["live-run-id"].poll() is None
    finally:
        for proc in tails.values():
            proc.kill()
            proc.wait()
