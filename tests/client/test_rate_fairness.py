"""One app budget, many athletes, by priority (issue 15): the governor grants calls that wait for a turn by class
(interactive > webhook > incremental > backfill), athletes of one class in turn, each class with a floor.

Real parts: one SQLite ledger shared by threads that each reserve like a fitsync process does (each thread is a
waiter of its own), a real clock and 2-second windows. A granted call "takes" 2 ms, as a request would.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from fitsync.client.rate_governor import Lane, RateGovernor
from fitsync.state.store import StateStore

from ..sandbox_harness import wait_until

WINDOW = 2
LIMIT = 20  # reads per window: the bulk reserve leaves 2 of them to interactive and webhook calls


def governor(path: Path) -> RateGovernor:
    g = RateGovernor(StateStore(path), short_window=WINDOW, boundary_guard=0.05)
    g.observe(
        {
            "X-ReadRateLimit-Limit": f"{LIMIT},1000000",
            "X-ReadRateLimit-Usage": "0,0",
            "X-RateLimit-Limit": f"{2 * LIMIT},2000000",
            "X-RateLimit-Usage": "0,0",
        }
    )
    return g


class Caller(threading.Thread):
    """Reserve-and-send in a loop, like a sync's worker, until told to stop or `calls` are made."""

    def __init__(self, g: RateGovernor, lane: Lane, *, bulk: bool, calls: int | None = None) -> None:
        super().__init__(daemon=True)
        self.g, self.lane, self.bulk, self.calls = g, lane, bulk, calls
        self.granted: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and (self.calls is None or len(self.granted) < self.calls):
            self.g.reserve(bulk=self.bulk, lane=self.lane)
            self.granted.append(time.time())
            time.sleep(0.002)  # the request itself


def next_boundary(now: float) -> float:
    return (now // WINDOW + 1) * WINDOW


def test_athletes_of_one_class_take_turns_whatever_their_number_of_workers(tmp_path: Path) -> None:
    """Athlete 1 syncs with three workers, athlete 2 with one: without turns athlete 2 would get about a quarter
    of each window; it gets about half."""
    g = governor(tmp_path / "state.db")
    callers = [Caller(g, Lane("backfill", 1), bulk=True) for _ in range(3)] + [
        Caller(g, Lane("backfill", 2), bulk=True)
    ]
    wait_until(lambda: next_boundary(time.time()) - time.time() > 1.5, 3, "the start of a window")
    start = next_boundary(time.time())  # whole windows only: the first grants of this one go to whoever is first
    for c in callers:
        c.start()
    end = start + 3 * WINDOW
    wait_until(lambda: time.time() > end, 4 * WINDOW, "three whole windows")
    for c in callers:
        c.stop.set()
    share = Counter()
    for c in callers:
        share[c.lane.athlete_id] += sum(1 for t in c.granted if start <= t < end)
    total = sum(share.values())
    assert total <= 3 * LIMIT * 0.9 + 3  # the bulk reserve stays free
    assert share[2] >= 0.4 * total, share


def test_a_webhook_refresh_goes_before_five_backfills_and_is_done_within_one_window(tmp_path: Path) -> None:
    g = governor(tmp_path / "state.db")
    backfills = [Caller(g, Lane("backfill", athlete), bulk=True) for athlete in range(1, 6)]
    for c in backfills:
        c.start()
    # mid-window, with the backfills holding the budget: the athlete edits rides, the webhook run needs 12 calls
    wait_until(
        lambda: 0.8 < time.time() % WINDOW < 1.2 and g.remaining() <= LIMIT // 10,
        3 * WINDOW,
        "a window the backfills have spent",
    )
    asked = time.time()
    webhook = Caller(g, Lane("webhook", 6), bulk=False, calls=12)
    webhook.start()
    webhook.join(3 * WINDOW)
    done = time.time()
    for c in backfills:
        c.stop.set()
    assert len(webhook.granted) == 12
    # the 2 calls the bulk reserve leaves in this window, then 10 of the next one before the backfills but their
    # floor: racing them instead it would get a sixth of the next window and need a third
    assert done - asked < WINDOW, (asked, webhook.granted)
    boundary = next_boundary(asked)
    backfill_first = sum(1 for c in backfills for t in c.granted if boundary <= t < webhook.granted[-1])
    assert backfill_first <= LIMIT // 10 + 1, backfill_first


def test_a_class_under_its_floor_goes_first_so_backfills_never_starve(tmp_path: Path) -> None:
    """Interactive work goes first, but not all of it: the backfill still gets its floor (10 %) of each window."""
    g = governor(tmp_path / "state.db")
    busy = [Caller(g, Lane("interactive", 1), bulk=False) for _ in range(4)]
    backfill = Caller(g, Lane("backfill", 2), bulk=True)
    wait_until(lambda: next_boundary(time.time()) - time.time() > 1.5, 3, "the start of a window")
    start = next_boundary(time.time())
    for c in [*busy, backfill]:
        c.start()
    end = start + 3 * WINDOW
    wait_until(lambda: time.time() > end, 4 * WINDOW, "three whole windows")
    for c in [*busy, backfill]:
        c.stop.set()
    per_window = Counter(int((t - start) // WINDOW) for t in backfill.granted if start <= t < end)
    assert all(per_window[w] >= LIMIT // 10 for w in range(3)), per_window
    interactive = sum(1 for c in busy for t in c.granted if start <= t < end)
    assert interactive >= 3 * (LIMIT - LIMIT // 10) - 3  # and the rest is the interactive work's


def test_a_caller_that_has_left_holds_no_place_in_the_queue(tmp_path: Path) -> None:
    """A caller just served keeps its place for a moment, since it is about to ask again; a sync that has ended
    (its client closed) gives it up, so a webhook refresh right after an interactive sync does not pause for it."""
    clock = [1_000_000.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        clock[0] += seconds

    def made(path: Path) -> RateGovernor:  # the real 15-minute window: a served caller holds its place 2 s
        g = RateGovernor(StateStore(path), clock=lambda: clock[0], sleep=sleep)
        g.observe(
            {
                "X-ReadRateLimit-Limit": "100,1000",
                "X-ReadRateLimit-Usage": "0,0",
                "X-RateLimit-Limit": "200,2000",
                "X-RateLimit-Usage": "0,0",
            }
        )
        return g

    sync, refresh = made(tmp_path / "state.db"), made(tmp_path / "state.db")  # two processes, one ledger

    def interactive_call() -> None:  # in a thread: a waiter of its own, as the sync's run thread is
        caller = threading.Thread(target=lambda: sync.reserve(lane=Lane("interactive", 1)))
        caller.start()
        caller.join()
        clock[0] += 0.1

    interactive_call()  # the sync goes on: the refresh waits until the sync's place lapses
    refresh.reserve(lane=Lane("webhook", 2))
    assert sum(pauses) >= 1.5 and len(pauses) > 10
    pauses.clear()
    interactive_call()
    sync.leave()  # the sync has ended (FitsyncClient.close)
    refresh.reserve(lane=Lane("webhook", 2))
    assert pauses == []
    refresh.leave()
    refresh.leave()  # nothing held: nothing to do
