"""One rate budget shared by every fitsync process: 429 recovery, processes sharing a small budget without a 429,
the bulk reserve, the readable budget, and window boundaries.

| issue 3 | what | test |
|---|---|---|
| §5 Rate | a 429 is not an error: record, wait for the window, retry | test_429_recovery_with_a_2s_window |
| §5 Rate | N processes reserve atomically, never exceed the budget | test_4_processes_share_a_small_budget_without_a_429 |
| §5 Rate | bulk work leaves a reserve for interactive requests; never send what will be refused | test_bulk_reserve_leaves_room_for_interactive_requests |
| §5 Rate | the current budget (used / limit / resets at) is readable | test_snapshot_follows_the_service_headers |
| §5 Rate | waits for the natural window boundary | test_waits_until_the_boundary_plus_guard, test_no_request_straddles_a_boundary |
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fitsync.client import rate_governor
from fitsync.client.rate_governor import RateBudgetExhausted, RateGovernor
from fitsync.client.runtime import FitsyncClient
from fitsync.state.store import StateStore

from ..sandbox_harness import App, Harness, wait_until
from .conftest import MakeConfig, connect_athlete
from .support import RequestLog, release_and_collect, start_workers


def read_usage(headers: dict[str, str]) -> int:
    return int(headers["x-readratelimit-usage"].split(",")[0])


def test_429_recovery_with_a_2s_window(sb: Harness, make_config: MakeConfig, app: App) -> None:
    with sb.settings(short_window=2, read_limit_short=4):
        with FitsyncClient(make_config(short_window=2)) as client:
            c = connect_athlete(sb, client, app, sb.athlete_id())
            log = RequestLog(client.transport.http)
            api = client.athlete(c.athlete_id)
            # someone else (another machine with the same app) spends the window; the client's ledger knows nothing
            wait_until(lambda: 2 - time.time() % 2 > 0.6, 3, "a window with time left")
            spent = [sb.get(c.grant["access_token"], "/athlete").status_code for _ in range(5)]
            assert spent == [200, 200, 200, 200, 429]

            results = [api.athlete().id for _ in range(6)]

    assert results == [c.athlete_id] * 6  # every call succeeded
    statuses = [s.status for s in log.sent]
    assert statuses == [429] + [200] * 6, statuses  # one 429, then never a request the client knew would fail
    boundary = (log.sent[0].at // 2 + 1) * 2
    assert all(s.at >= boundary for s in log.sent[1:]), "retried before the next window"
    assert all(read_usage(s.headers) <= 4 for s in log.sent[1:])


def test_4_processes_share_a_small_budget_without_a_429(sb: Harness, make_config: MakeConfig, app: App) -> None:
    with sb.settings(short_window=2, read_limit_short=10):
        config = make_config(short_window=2)
        with FitsyncClient(config) as client:
            c = connect_athlete(sb, client, app, sb.athlete_id())
        before = sb.counters()
        reports = release_and_collect(start_workers(config, [{"athlete_id": c.athlete_id, "calls": 7}] * 4), timeout=60)
        after = sb.counters()

    assert [r["failures"] for r in reports] == [[]] * 4
    assert sum(r["ok"] for r in reports) == 28
    assert after.get("status_429", 0) == before.get("status_429", 0), (before, after)
    assert after.get("rate_limited", 0) == before.get("rate_limited", 0)
    # the service's own count of the app's reads in a window never passed the limit
    assert max(r["max_read_usage"] for r in reports) <= 10


def test_bulk_reserve_leaves_room_for_interactive_requests(sb: Harness, make_config: MakeConfig, app: App) -> None:
    with sb.settings(read_limit_short=10):  # 15-minute windows: nothing resets during the test
        with FitsyncClient(make_config(bulk_reserve=0.3)) as client:
            c = connect_athlete(sb, client, app, sb.athlete_id())
            log = RequestLog(client.transport.http)
            bulk = client.athlete(c.athlete_id, bulk=True, max_wait=0)
            interactive = client.athlete(c.athlete_id, max_wait=0)
            before = sb.counters()

            done = 0
            with pytest.raises(RateBudgetExhausted) as stopped:
                while done < 20:
                    bulk.athlete()
                    done += 1
            assert done == 7  # 30 % of the window is left for interactive and webhook work
            for _ in range(3):
                interactive.athlete()
            with pytest.raises(RateBudgetExhausted) as spent:
                interactive.athlete()
            after = sb.counters()

    assert len(log.sent) == 10 and {s.status for s in log.sent} == {200}  # the refused ones were never sent
    assert after.get("status_429", 0) == before.get("status_429", 0)
    boundary = (time.time() // 900 + 1) * 900
    assert stopped.value.resets_at == pytest.approx(boundary, abs=2) and spent.value.budget == "read"
    # why bulk work stopped with 3 of 10 left: said (it read as "spent" while the service counted 7 of 10)
    assert "3 of its calls are kept for webhook re-pulls by the bulk_reserve setting" in str(stopped.value), (
        stopped.value
    )
    assert "kept" not in str(spent.value)  # the whole window spent: nothing is held back any more
    # said inside a summary's brackets ("the rest continues next run (…)"): no brackets of its own to nest
    assert "(" not in str(stopped.value) and "(" not in str(spent.value), (stopped.value, spent.value)


def test_snapshot_follows_the_service_headers(sb: Harness, make_config: MakeConfig, app: App) -> None:
    with sb.settings(read_limit_short=50, overall_limit_short=80):
        with FitsyncClient(make_config()) as client:
            c = connect_athlete(sb, client, app, sb.athlete_id())
            before = client.governor.snapshot()  # no call counted yet: the documented limits, said to be so
            assert {(x.limit, x.heard) for x in before if x.budget == "read"} == {(100, False), (1000, False)}
            log = RequestLog(client.transport.http)
            for _ in range(3):
                client.athlete(c.athlete_id).athlete()
            lines = {(x.window, x.budget): x for x in client.governor.snapshot()}
    headers = log.sent[-1].headers
    assert (lines["short", "read"].used, lines["short", "read"].limit) == (3, 50) == (read_usage(headers), 50)
    assert (lines["short", "overall"].used, lines["short", "overall"].limit) == (3, 80)
    assert lines["long", "read"].limit == 1000 and lines["long", "overall"].limit == 2000
    assert all(line.heard for line in lines.values())
    now = time.time()
    assert lines["short", "read"].resets_at == (now // 900 + 1) * 900
    assert lines["long", "read"].resets_at == (now // 86400 + 1) * 86400  # UTC midnight


class FakeTime:
    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_waits_until_the_boundary_plus_guard(tmp_path: Path) -> None:
    t = FakeTime(1_000_000 * 900 + 100.0)  # 100 s into a 15-minute window
    governor = RateGovernor(StateStore(tmp_path / "state.db"), boundary_guard=1.0, clock=t.clock, sleep=t.sleep)
    governor.observe(
        {
            "X-ReadRateLimit-Limit": "5,1000",
            "X-ReadRateLimit-Usage": "5,5",
            "X-RateLimit-Limit": "200,2000",
            "X-RateLimit-Usage": "5,5",
        }
    )
    governor.reserve(counts_as_read=False)  # the overall budget is not spent: a write goes at once
    assert t.slept == []
    governor.reserve()  # a read waits for the next window (+ guard), not for a fixed delay
    assert t.slept == [pytest.approx(800 + 1.0)]
    assert governor.remaining("short", "read") == 4


def test_work_before_a_long_wait_runs_once_and_the_wait_is_measured_after_it(tmp_path: Path) -> None:
    """A fetch step loads what it landed before the budget makes it wait (sync/load_landed.py): the work runs once per
    wait of LONG_WAIT or more, the wait that follows counts the work's time, and a pause at a boundary runs none."""
    t = FakeTime(1_000_000 * 900 + 100.0)
    governor = RateGovernor(StateStore(tmp_path / "state.db"), boundary_guard=1.0, clock=t.clock, sleep=t.sleep)
    spent = {"X-ReadRateLimit-Limit": "5,1000", "X-ReadRateLimit-Usage": "5,5"}
    governor.observe(spent)
    worked: list[float] = []

    def work(seconds: float) -> None:
        worked.append(seconds)
        t.now += 30  # a load of 30 s

    with rate_governor.before_long_waits(work):
        governor.reserve()
    assert worked == [pytest.approx(801)] and t.slept == [pytest.approx(771)]
    governor.reserve()  # outside the block: nothing runs before a wait
    assert len(worked) == 1

    t.now, t.slept = 1_000_000 * 900 + 2699.7, []  # 0.3 s before a boundary: a pause, not a spent budget
    with rate_governor.before_long_waits(work):
        governor.reserve()
    assert len(worked) == 1 and sum(t.slept) == pytest.approx(1.3)


def test_windows_shortened_for_a_benchmark_shorten_the_long_wait(tmp_path: Path) -> None:
    """Time-scaled windows (6 s for 15 minutes) scale LONG_WAIT too: otherwise no wait there would ever reach 5 s
    and a time-scaled benchmark would never load while fetching."""
    t = FakeTime(1_000_000 * 6 + 1.0)
    store = StateStore(tmp_path / "state.db")
    governor = RateGovernor(store, short_window=6, boundary_guard=0.0, clock=t.clock, sleep=t.sleep)
    assert governor.time_scale == pytest.approx(6 / 900)
    governor.observe({"X-ReadRateLimit-Limit": "5,1000", "X-ReadRateLimit-Usage": "5,5"})
    worked: list[float] = []
    with rate_governor.before_long_waits(worked.append):
        governor.reserve()  # a 5-s wait: 15 minutes less 12.5 in real-window time
    assert worked == [pytest.approx(5.0)]
    assert RateGovernor(store, short_window=3600).time_scale == 1.0  # never longer than LONG_WAIT


def test_no_request_straddles_a_boundary(tmp_path: Path) -> None:
    """A request reserved just before a boundary may be counted by the service in the next window, where this
    ledger would not count it: so within the guard of a boundary the governor waits for the boundary."""
    t = FakeTime(1_000_000 * 900 + 899.7)  # 0.3 s before the boundary, guard 1 s
    governor = RateGovernor(StateStore(tmp_path / "state.db"), boundary_guard=1.0, clock=t.clock, sleep=t.sleep)
    governor.reserve()
    assert sum(t.slept) == pytest.approx(0.3 + 1.0)
    assert [x.used for x in governor.snapshot() if x.window == "short"] == [1, 1]


def test_a_429_spends_only_the_window_it_was_for(tmp_path: Path) -> None:
    """A 15-minute refusal waits for the next 15-minute window, not for UTC midnight; a refusal answered after
    the boundary does not spend the new window."""
    t = FakeTime(1_000_000 * 900 + 100.0)
    governor = RateGovernor(StateStore(tmp_path / "state.db"), boundary_guard=1.0, clock=t.clock, sleep=t.sleep)
    refused = {
        "X-ReadRateLimit-Limit": "100,1000",
        "X-ReadRateLimit-Usage": "101,300",
        "X-RateLimit-Limit": "200,2000",
        "X-RateLimit-Usage": "101,300",
    }
    governor.observe(refused, sent_at=t.now, refused_budget="read")
    assert governor.remaining("short", "read") == 0 and governor.remaining("long", "read") == 700
    governor.reserve()
    assert t.slept == [pytest.approx(800 + 1.0)]

    t.slept.clear()
    boundary = 1_000_000 * 900 + 1800  # the end of the window the clock is in now
    sent_at, t.now = boundary - 0.5, boundary + 1.5  # sent just before it, answered after it
    governor.observe({}, sent_at=sent_at, refused_budget="read")  # a 429 without usage headers
    governor.reserve()
    assert t.slept == []


def test_time_for_the_calls_left_counts_both_windows() -> None:
    """Hand figures: 98 of 100 read calls used in this 15-minute window, 98 of 1,000 today, boundaries at
    t=1800 (short) and t=86400 (daily), now t=1000."""
    from fitsync.client.rate_governor import BudgetLine, seconds_for

    lines = [
        BudgetLine("short", "read", 98, 100, 1800.0),
        BudgetLine("short", "overall", 98, 200, 1800.0),
        BudgetLine("long", "read", 98, 1000, 86400.0),
        BudgetLine("long", "overall", 98, 2000, 86400.0),
    ]
    lengths = {"short": 900, "long": 86400}
    assert seconds_for(2, lines, 1000.0, lengths, 0.5) == 1.0  # fits now: only the pace counts
    # 2 now, 100 at 1800, 100 at 2700, the last 48 at 3600
    assert seconds_for(250, lines, 1000.0, lengths, 0.0) == 2600.0
    # 902 left today (2 now + 9 windows of 100, the last from t=9000); the other 598 from midnight, 100 a window:
    # the last 98 at 86400 + 5 × 900
    assert seconds_for(1500, lines, 1000.0, lengths, 0.0) == 86400 + 4500 - 1000
    # bulk work leaves 10 % of each 15-minute window: 90 a window
    assert seconds_for(100, lines, 1000.0, lengths, 0.0, reserve=0.1) == 2700 - 1000


def test_a_stop_asked_for_ends_a_budget_wait_at_once_and_sends_nothing_more(
    sb: Harness, make_config: MakeConfig, app: App
) -> None:
    """Ctrl-C during a wait of the whole window: the client stops within moments, not when the window ends, and
    a stop asked before a request keeps it from being sent (client/stop_request.py)."""
    import threading

    from fitsync.client import stop_request

    with FitsyncClient(make_config(short_window=900)) as client:
        c = connect_athlete(sb, client, app, sb.athlete_id())
        api = client.athlete(c.athlete_id)
        client.governor.observe(
            {
                "X-ReadRateLimit-Limit": "5,1000",
                "X-ReadRateLimit-Usage": "5,5",
                "X-RateLimit-Limit": "200,2000",
                "X-RateLimit-Usage": "5,5",
            }
        )
        sent_before = client.transport.calls
        outcome: dict[str, BaseException] = {}

        def fetch() -> None:
            try:
                api.athlete()
            except BaseException as error:
                outcome["error"] = error

        worker = threading.Thread(target=fetch)
        try:
            worker.start()
            wait_until(lambda: rate_governor.current_waits(), 10, "the request to wait for the window")
            asked = time.monotonic()
            stop_request.request()
            worker.join(10)
            assert not worker.is_alive() and time.monotonic() - asked < 2
            assert isinstance(outcome.get("error"), stop_request.StopRequested)
            with pytest.raises(stop_request.StopRequested):  # asked before sending: nothing goes out
                client.transport.request("GET", f"{client.config.base_url}/athlete", budget=None)
        finally:
            stop_request.clear()
        assert client.transport.calls == sent_before
