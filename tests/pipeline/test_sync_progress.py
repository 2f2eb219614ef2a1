"""What a running `fitsync sync` shows counts this run's work: the activities earlier runs fetched are not in
"details n/m", and a non-subscriber's zones (never asked for) are said so instead of a count that never moves."""

from __future__ import annotations

import io
import signal
import threading
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from fitsync.cli.sync_progress import NOT_A_SUBSCRIBER, PaceSample, Reading, SyncProgress, recent_pace
from fitsync.client import stop_request
from fitsync.client.runtime import FitsyncClient
from fitsync.pipelines.sync_runner import SyncOutcome, sync_athlete
from fitsync.sync import live

from ..processes import Terminal, foreground
from ..sandbox_harness import Harness, wait_until
from .conftest import Connect, add_athlete, record, record_many
from .test_nothing_new import fitsync_sync

pytestmark = pytest.mark.postgres_slow


def _shown(display: SyncProgress, phase: str) -> str:
    """The line the display would show now, with the run in `phase`."""
    display._phase_now = phase
    return display.line(display.read())


def test_details_count_this_runs_work_not_what_earlier_runs_stored(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid)
    home.sync()
    record(sb, aid, days_ago=0.01)  # one new activity: this run's only detail
    with FitsyncClient(home.config) as client:
        display = SyncProgress(client, home.instance, aid, str(uuid.uuid4()), Console(file=io.StringIO()), plain=True)
        home.sync()
        line = _shown(display, "details")
    assert f"athlete {aid}: details 1/1" in line, line  # not 5/5: four were stored by the run before
    with FitsyncClient(home.config) as client:  # nothing queued: said so, not "details 0/0"
        display = SyncProgress(client, home.instance, aid, str(uuid.uuid4()), Console(file=io.StringIO()), plain=True)
        assert _shown(display, "details") == f"athlete {aid}: details (none to fetch)"
        # a phase's first line in a log: what it has to fetch, not "details 0/3", read the next morning as nothing done
        assert display.line(Reading("details", 0, 3)) == f"athlete {aid}: details (3 to fetch)"


def test_details_count_each_activity_as_it_is_fetched_not_each_chunk(sb: Harness, connect: Connect) -> None:
    """A chunk of 25 details is recorded in one transaction; the count moved 0, 25, 30. The display runs in the
    run's process and counts the chunk being fetched too, never past what the run has done."""
    aid = add_athlete(sb)
    record_many(sb, aid, 30, oldest_days=30)
    home = connect(aid)
    seen: set[tuple[int, int]] = set()
    with FitsyncClient(home.config) as client, sb.settings(fault_latency_ms=40):
        display = SyncProgress(client, home.instance, aid, str(uuid.uuid4()), Console(file=io.StringIO()), plain=True)
        run = threading.Thread(target=home.sync)
        run.start()

        def counted_within_the_first_chunk() -> bool:
            assert run.is_alive(), "the sync ended before a detail was counted"
            reading = Reading("details")
            display._count(reading, "detail")
            if reading.done is not None and reading.total is not None:
                seen.add((reading.done, reading.total))
            return any(0 < done < 25 for done, _ in seen)

        try:
            wait_until(counted_within_the_first_chunk, 60, "a count inside the first chunk", interval=0.01)
        finally:
            run.join()
    assert all(done <= total in (0, 30) for done, total in seen), seen  # 0 of 0 until the listing has queued them


@pytest.mark.sqlite_only  # the state store is incidental: what the progress lines say
def test_the_streams_phase_is_counted_and_its_calls_are_in_the_time_left(sb: Harness, connect: Connect) -> None:
    """The streams are fetched last, a call per activity: "streams n/m" while they are fetched, and the time left
    counts them from the start (they were left out: "about 5 s left" of a sync with a minute of streams ahead)."""
    aid = add_athlete(sb)
    record_many(sb, aid, 12, oldest_days=10)
    home = connect(aid, streams="off")
    home.sync()
    home.config = home.config.model_copy(update={"streams": "recent"})  # twelve activities wait for their streams
    seen: set[tuple[int, int, int]] = set()
    with FitsyncClient(home.config) as client, sb.settings(fault_latency_ms=40):
        run_id = str(uuid.uuid4())
        display = SyncProgress(client, home.instance, aid, run_id, Console(file=io.StringIO()), plain=True)
        assert display._streams_left() == 12
        run = threading.Thread(target=sync_athlete, args=(home.config, aid, home.instance), kwargs={"run_id": run_id})
        run.start()

        def counted_mid_streams() -> bool:
            assert run.is_alive(), "the sync ended before its streams were counted"
            reading = display.read()
            if reading.phase == "streams" and reading.done is not None and reading.total is not None:
                seen.add((reading.done, reading.total, display._streams_left()))
            return any(0 < done < total for done, total, _ in seen)

        try:
            wait_until(counted_mid_streams, 60, "a count inside the streams phase", interval=0.01)
        finally:
            run.join()
    assert all(total == 12 and 0 <= left <= total - done for done, total, left in seen), seen
    assert display._streams_left() == 0  # the phase has run: nothing ahead


@pytest.mark.sqlite_only  # the state store is incidental: what the progress lines say
def test_a_non_subscriber_is_told_why_zones_do_not_move(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb, premium=False)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    home.sync()
    assert home.needing("zones") > 0  # queued, never fetched while the profile says premium: false
    with FitsyncClient(home.config) as client:
        display = SyncProgress(client, home.instance, aid, str(uuid.uuid4()), Console(file=io.StringIO()), plain=True)
        line = _shown(display, "activity zones")
    assert line == f"athlete {aid}: activity zones ({NOT_A_SUBSCRIBER})", line


def test_the_time_left_follows_the_pace_of_the_latest_calls() -> None:
    """Calls that began after seconds of Dagster starting, then came fast: the pace is theirs (0.05 s a call), not
    the whole run's, which said "about 1 min left" of a sync that ended 5 s later. Waits for the budget are not pace."""
    start = PaceSample(0.0, 0, 0.0)
    samples = [PaceSample(t, 0, 0.0) for t in (0.5, 1.0, 1.5, 2.0, 2.5)]  # Dagster starting: no call yet
    samples += [PaceSample(2.5 + i * 0.5, i * 10, 0.0) for i in range(1, 5)]  # 20 calls a second
    assert recent_pace(samples, start) == pytest.approx(0.05)
    assert recent_pace([PaceSample(0.5, 0, 0.0), PaceSample(1.0, 3, 0.0)], start) is None  # too few: no guess
    # 10 s of waiting for the next window between two looks: left out
    waited = [PaceSample(1.0, 0, 0.0), PaceSample(2.0, 20, 0.0), PaceSample(13.0, 40, 10.0)]
    assert recent_pace(waited, start) == pytest.approx(2.0 / 40)  # 12 s, 10 of them waiting
    # a long run: only the last ten seconds count, where it slowed to a call a second
    slow = [PaceSample(t, int(t * 10), 0.0) for t in range(1, 100)] + [
        PaceSample(100 + t, 990 + t, 0.0) for t in range(1, 21)
    ]
    assert recent_pace(slow, start) == pytest.approx(1.0)


@pytest.mark.sqlite_only  # the state store is incidental: what the progress lines say
def test_the_silent_seconds_say_what_they_are_spent_on(sb: Harness, connect: Connect, tmp_path: Path) -> None:
    """Loading Dagster before a run's first step, and building a report, take seconds: a line says so (a spinner at a
    terminal). The first steps, done before Dagster loads (sync/first_steps.py), say their phases as the run does, once."""
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid)
    (home.config.home / "config.toml").chmod(0o600)  # no warning about it on the terminal
    synced = fitsync_sync(home)  # off a terminal: plain lines
    assert synced.returncode == 0, synced.stderr
    lines = synced.stderr.splitlines()
    first = ["profile", "stats", "heart-rate and power zones", "listing", "loading the summaries"]
    said = [
        line.removeprefix(f"athlete {aid}: ").split(" ")[0] for line in lines if line.startswith(f"athlete {aid}: ")
    ]
    start = lines.index(f"athlete {aid}: {first[0]}")
    assert lines[start : start + 6] == [f"athlete {aid}: {p}" for p in [*first, "starting the Dagster run…"]], lines
    assert said.count("listing") == said.count("profile") == 1 and "details" in said[said.index("starting") :], lines

    term = Terminal(home.config.home, "report", "--out", str(tmp_path / "report"))
    try:
        term.wait_for(f"athlete {aid}: building the report")
        shown = term.wait_for("summary.md")
        assert term.close() == 0, shown
    finally:
        term.process.kill()
    assert (tmp_path / "report" / str(aid) / "summary.md").exists()

    # Ctrl-C while it builds: no folder left for the athlete as if it held a report (unless it ended first, whole)
    with foreground(home.config.home, "report", "--out", str(tmp_path / "stopped")) as job:
        job.wait_for(f"athlete {aid}: building the report")
        job.send(signal.SIGINT)
        shown = job.wait_for_exit()
        code = job.close()
    folder = tmp_path / "stopped" / str(aid)
    assert (code, folder.exists()) == (130, False) or (code, (folder / "summary.md").exists()) == (0, True), shown

    # … and over the last report: it stays as it was (its charts were once replaced one by one as they rendered); a
    # SIGTERM too (it killed the report without a word, half its charts replaced)
    for signum, stopped in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "report" / str(aid)).iterdir()}
        with foreground(home.config.home, "report", "--out", str(tmp_path / "report")) as job:
            job.wait_for_match(f"athlete {aid}: drawing chart ([3-9]|1[0-9]) of")  # two charts drawn
            job.send(signum)
            shown = job.wait_for_exit()
            code = job.close()
        after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "report" / str(aid)).iterdir()}
        assert (code, after) == (stopped, before) or (
            code,
            after.keys(),
            after["report.html"] > before["report.html"],
        ) == (0, before.keys(), True), shown


def test_a_wait_the_bulk_reserve_makes_says_so() -> None:
    """ "waiting 7 min … (used 403/415)" read as a budget with room left: the rest is kept for webhook re-pulls."""
    from fitsync.cli.sync_waits import describe_wait
    from fitsync.client.rate_governor import Wait

    held = Wait(until=460.0, window="short", budget="read", used=403, limit=415, window_seconds=900, kept=41)
    assert describe_wait(held, 1.0) == (
        "waiting 7 m 39 s for the 15-minute read window (used 403/415, the last 41 kept for webhook re-pulls by "
        "the bulk_reserve setting)"
    )
    spent = Wait(until=460.0, window="short", budget="read", used=415, limit=415, window_seconds=900)
    assert describe_wait(spent, 1.0).endswith("(used 415/415)")


def test_a_stop_keeps_the_details_its_chunk_fetched(sb: Harness, connect: Connect) -> None:
    """A stop asked for mid-chunk dropped the chunk's fetched details (asked again next run): the live line had said
    "details 2/20", the stop line "after 0 new detail(s)". They are recorded as before a wait, then the run stops."""
    aid = add_athlete(sb)
    record_many(sb, aid, 20, oldest_days=30)
    home = connect(aid)
    outcome: list[SyncOutcome] = []
    with sb.settings(fault_latency_ms=40):
        run = threading.Thread(target=lambda: outcome.append(sync_athlete(home.config, aid, home.instance)))
        run.start()
        try:
            wait_until(lambda: live.read(aid, "detail", lambda: None)[1] >= 2, 60, "two details in the chunk", 0.01)
            stop_request.request()  # what Ctrl-C does in `fitsync sync`
        finally:
            run.join()
            stop_request.clear()
    assert outcome and not outcome[0].success
    assert 2 <= 20 - home.needing("detail") < 20  # kept: the next run asks only for the rest
