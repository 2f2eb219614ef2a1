"""One rate budget shared by every fitsync process: reserve a slot before each request, learn from headers.

The service limits each application per 15-minute and daily window (natural boundaries), with a separate
read budget. Every process reserves its request in the state store inside an IMMEDIATE transaction, so N
processes together never send more than the budget allows, and nobody sends a request it knows will be
refused. Responses' `X-RateLimit-*` / `X-ReadRateLimit-*` headers correct the ledger (another machine may
share the app).

One app serves many athletes (a coach, a club): requests that wait for a turn go by priority class
(interactive > webhook refresh > incremental sync > backfill), athletes of one class take turns, and a class
still under its floor (a share of the 15-minute window) goes before any class over it, so nothing starves. Streams
come after them all, with no floor: they only use what no other class is waiting for.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from fitsync.state import rate_ledger
from fitsync.state.store import Connection, StateStore

from . import stop_request

log = logging.getLogger(__name__)

WINDOWS = ("short", "long")
BUDGETS = ("overall", "read")
DEFAULT_LIMITS = {("short", "overall"): 200, ("long", "overall"): 2000, ("short", "read"): 100, ("long", "read"): 1000}
HEADERS = {
    "overall": ("X-RateLimit-Limit", "X-RateLimit-Usage"),
    "read": ("X-ReadRateLimit-Limit", "X-ReadRateLimit-Usage"),
}


@dataclass(frozen=True)
class PriorityClass:
    rank: int  # lower goes first
    floor: float  # share of each 15-minute read window the class gets while it waits, whoever else waits


CLASSES: dict[str, PriorityClass] = {
    "interactive": PriorityClass(0, 0.10),  # a person waiting at the terminal (connect, sync --athlete)
    "webhook": PriorityClass(1, 0.10),  # the athlete just changed something
    "incremental": PriorityClass(2, 0.10),  # the nightly sync of an athlete who is caught up
    "backfill": PriorityClass(3, 0.10),  # days of history
    "streams": PriorityClass(4, 0.0),  # per-second streams: only what no other class is waiting for
}


@dataclass(frozen=True)
class Lane:
    """Whose request this is: its priority class, and its athlete (athletes of one class take turns)."""

    klass: str = "interactive"
    athlete_id: int | None = None


TURN_PAUSE = 0.05  # a request whose turn it is not polls again this soon
TURN_ALIVE = 2.0  # a waiter that stops polling (crashed) no longer counts after this long
# A caller just served is back within its request's time: it keeps its place that long (at most TURN_ALIVE, a
# twentieth of the window), so a sync with one worker is not outrun by one with several.
HOLD_SHARE = 1 / 20
_HOST_PID = f"{socket.gethostname()}:{os.getpid()}"


class RateBudgetExhausted(Exception):
    """The budget is spent for longer than the caller is willing to wait; work can resume at `resets_at`."""

    def __init__(self, resets_at: float, window: str, budget: str, kept: int = 0) -> None:
        self.resets_at, self.window, self.budget = resets_at, window, budget
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(resets_at))
        held = (
            f", for this work: {kept} of its calls are kept for webhook re-pulls by the bulk_reserve setting"
            if kept
            else ""
        )
        super().__init__(f"the {window} window's {budget} rate budget spent until {when}{held}")


@dataclass(frozen=True)
class BudgetLine:
    window: str
    budget: str
    used: int
    limit: int
    resets_at: float
    heard: bool = True  # False: no call counted yet, the limit is the service's documented default (DEFAULT_LIMITS)


@dataclass(frozen=True)
class Wait:
    """A wait in progress: a progress display says why the sync is quiet, and until when."""

    until: float
    window: str
    budget: str
    used: int
    limit: int
    window_seconds: int
    kept: int = 0  # of `limit`, the calls bulk work leaves to webhook re-pulls (bulk_reserve): why it waits before it


_waits: dict[int, Wait] = {}
_waits_lock = threading.Lock()


# Work to do before the budget makes this thread wait at least LONG_WAIT: a fetch step loads what it landed so far
# (sync/load_landed.py), so that what was fetched is queryable during the wait, not only when the run ends. Windows
# shortened from the real 15 minutes (tests, time-scaled benchmarks) shorten it in proportion (`time_scale`).
LONG_WAIT = 5.0
REAL_SHORT_WINDOW = 900
_before_long_wait: ContextVar[Callable[[float], None] | None] = ContextVar("before_long_wait", default=None)


@contextmanager
def before_long_waits(work: Callable[[float], None]) -> Iterator[None]:
    """Run `work(seconds)` once before each wait for a spent budget of at least LONG_WAIT in this thread (the wait is
    then measured again: the work took some of it). `work` must not raise."""
    token = _before_long_wait.set(work)
    try:
        yield
    finally:
        _before_long_wait.reset(token)


def current_waits() -> list[Wait]:
    """The waits of this process's threads now (a CLI sync runs its Dagster steps in-process)."""
    with _waits_lock:
        return list(_waits.values())


def seconds_for(
    calls: int,
    lines: list[BudgetLine],
    now: float,
    lengths: dict[str, int],
    seconds_per_call: float,
    reserve: float = 0.0,
) -> float:
    """How long `calls` read requests take against what is left of both windows: the windows refill at their
    boundaries, each at most its limit (less the reserve bulk work leaves), and the daily one caps them all."""
    ledger = {(x.window, x.budget): x for x in lines}
    usable = {
        key: max(0, line.limit - (math.floor(line.limit * reserve) if key[0] == "short" else 0))
        for key, line in ledger.items()
    }
    left = {key: max(0, usable[key] - line.used) for key, line in ledger.items()}
    boundary = {w: next((x.resets_at for x in lines if x.window == w), now + lengths[w]) for w in WINDOWS}
    clock, todo = now, calls
    for _ in range(100_000):  # a bound, not a limit anyone meets: a year of 15-minute windows
        take = min([todo, *left.values()])
        clock += take * seconds_per_call
        todo -= take
        for key in left:
            left[key] -= take
        if todo <= 0:
            return clock - now
        clock = max(clock, min(boundary.values()))  # wait for the next window to refill
        for key in left:
            if boundary[key[0]] <= clock:
                left[key] = usable[key]
        for w in WINDOWS:
            while boundary[w] <= clock:
                boundary[w] += lengths[w]
    return math.inf


class RateGovernor:
    def __init__(
        self,
        store: StateStore,
        *,
        short_window: int = 900,
        long_window: int = 86400,
        bulk_reserve: float = 0.1,
        boundary_guard: float = 1.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = stop_request.sleep,
    ) -> None:
        self.store = store
        self.lengths = {"short": short_window, "long": long_window}
        self.bulk_reserve = bulk_reserve
        self.boundary_guard = boundary_guard
        self.clock = clock
        self.sleep = sleep
        # The waiters (threads) of this governor that have reserved: `leave` removes their rows.
        self._waiters: set[str] = set()

    @property
    def time_scale(self) -> float:
        """1 under the real windows; below 1 where they were shortened, for waits measured against them."""
        return min(1.0, self.lengths["short"] / REAL_SHORT_WINDOW)

    # reservations -------------------------------------------------------------------------------

    def reserve(
        self,
        counts_as_read: bool = True,
        *,
        bulk: bool = False,
        max_wait: float | None = None,
        lane: Lane | None = None,
    ) -> None:
        """Block until a request may be sent and it is its turn, and count it. Raises RateBudgetExhausted past
        `max_wait`."""
        lane = lane or Lane("incremental" if bulk else "interactive")
        me = f"{_HOST_PID}:{threading.get_ident()}"
        self._waiters.add(me)
        worked = False
        while True:
            wait = self._try_reserve(counts_as_read, bulk, lane, me)
            if wait is None:
                return
            seconds, window, budget, used, limit = wait  # the figures the decision read (the window may roll over)
            if budget in ("boundary", "turn"):  # not a spent budget: a short pause
                self.sleep(seconds)
                continue
            kept = self._held_back(window, limit, bulk) if used < limit else 0  # the reserve is why it waits
            if max_wait is not None and seconds > max_wait:
                raise RateBudgetExhausted(self.clock() + seconds, window, budget, kept)
            work = _before_long_wait.get()
            if work is not None and not worked and seconds >= LONG_WAIT * self.time_scale:
                worked = True
                work(seconds)
                continue
            log.info("rate budget: %s %s window spent, waiting %.1f s for the next window", budget, window, seconds)
            key = threading.get_ident()
            with _waits_lock:
                _waits[key] = Wait(self.clock() + seconds, window, budget, used, limit, self.lengths[window], kept)
            try:
                self.sleep(seconds)
            finally:
                with _waits_lock:
                    _waits.pop(key, None)

    def _try_reserve(
        self, counts_as_read: bool, bulk: bool, lane: Lane, me: str
    ) -> tuple[float, str, str, int, int] | None:
        """None once counted; else how long to wait, for which window and budget, and that budget's used and limit."""
        now = self.clock()
        budgets = BUDGETS if counts_as_read else ("overall",)
        with self.store.transaction() as conn:
            ledger = self._ledger(conn, now)
            waits = []
            for (window, budget), (used, limit) in ledger.items():
                if budget not in budgets:
                    continue
                reserve = self._held_back(window, limit, bulk)
                if used >= limit - reserve:
                    waits.append(
                        (self._next_boundary(window, now) - now + self._guard(window), window, budget, used, limit)
                    )
            # A request sent this close to a boundary may be counted by the service in the next window, which
            # this ledger would start at zero: wait for the boundary instead.
            waits = waits or [
                (self._next_boundary(w, now) - now + self._guard(w), w, "boundary", 0, 0)
                for w in WINDOWS
                if self._next_boundary(w, now) - now < self._guard(w)
            ]
            if waits:  # asleep until then: no rival of requests that can go now
                self._waiting(
                    conn, me, lane, alive_until=now + max(waits)[0] + TURN_ALIVE, blocked_until=now + max(waits)[0]
                )
                return max(waits)
            self._waiting(conn, me, lane, alive_until=now + TURN_ALIVE, blocked_until=0.0)
            if self._someone_before(conn, me, lane, now, ledger[("short", "read")][1]):
                return TURN_PAUSE, "short", "turn", 0, 0
            for window in WINDOWS:
                for budget in budgets:
                    used, limit = ledger[(window, budget)]
                    self._write(conn, window, budget, self._window_start(window, now), used + 1, limit)
            self._served(conn, me, lane, now)
        return None

    def leave(self) -> None:
        """Give up the places this governor's callers hold. A caller just served keeps its place for a moment
        (HOLD_SHARE) because it is about to ask again; one whose run or command has ended will not, and a rival of
        a lower class would otherwise pause for it (up to TURN_ALIVE: a webhook refresh right after a sync)."""
        if not self._waiters:
            return
        waiters = sorted(self._waiters)
        with self.store.transaction() as conn:
            for waiter in waiters:
                rate_ledger.leave(conn, waiter)
        self._waiters.difference_update(waiters)

    # turns ----------------------------------------------------------------------------------------

    @staticmethod
    def _waiting(conn: Connection, me: str, lane: Lane, *, alive_until: float, blocked_until: float) -> None:
        rate_ledger.waiting(conn, me, lane.klass, lane.athlete_id, alive_until=alive_until, blocked_until=blocked_until)

    def _someone_before(self, conn: Connection, me: str, lane: Lane, now: float, short_limit: int) -> bool:
        """Whether a rival that could go now goes first: classes under their floor before those over it, then by
        rank, then the athlete of the class with the fewest calls this window, then the one served least recently.
        A rival just served counts for a moment (HOLD_SHARE): it is about to ask again."""
        rivals = rate_ledger.rivals(conn, me, now)
        if not rivals:
            return False
        start = self._window_start("short", now)
        used = rate_ledger.class_usage(conn, start)
        served = {
            (r["class"], r["athlete_id"]): (r["used"] if r["window_start"] == start else 0, r["last_granted"])
            for r in rate_ledger.turns(conn)
        }

        def key(klass: str, athlete_id: int | None) -> tuple[bool, int, int, float]:
            kind = CLASSES.get(klass, CLASSES["backfill"])
            return (
                used.get(klass, 0) >= math.floor(kind.floor * short_limit),
                kind.rank,
                *served.get((klass, athlete_id), (0, 0.0)),
            )

        mine = key(lane.klass, lane.athlete_id)
        return any(key(klass, athlete_id) < mine for klass, athlete_id in rivals)

    def _served(self, conn: Connection, me: str, lane: Lane, now: float) -> None:
        start = self._window_start("short", now)
        rate_ledger.drop_dead_waiters(conn, now)
        hold = min(TURN_ALIVE, self.lengths["short"] * HOLD_SHARE)
        self._waiting(conn, me, lane, alive_until=now + hold, blocked_until=0.0)
        rate_ledger.count_class(conn, lane.klass, start)
        if lane.athlete_id is not None:
            rate_ledger.count_turn(conn, lane.klass, lane.athlete_id, start, now)

    # learning from the service ------------------------------------------------------------------

    def observe(
        self, headers: Mapping[str, str], *, sent_at: float | None = None, refused_budget: str | None = None
    ) -> None:
        """Take the service's view of usage and limits; after a 429, treat the refused budget as spent.

        Usage reported for a request sent in an earlier window says nothing about the current one.
        """
        parsed = {}
        for budget, (limit_name, usage_name) in HEADERS.items():
            limits, usage = _pair(headers.get(limit_name)), _pair(headers.get(usage_name))
            if limits and usage:
                parsed[budget] = (limits, usage)
        if not parsed and refused_budget is None:
            return
        # The windows the refusal was for: those the headers show at or over their limit (the short one if the
        # headers do not say); a 15-minute refusal must not stop work until midnight.
        shown = parsed.get(refused_budget or "")
        refused_windows = [w for i, w in enumerate(WINDOWS) if shown and shown[1][i] >= shown[0][i]] or ["short"]
        now = self.clock()
        with self.store.transaction() as conn:
            ledger = self._ledger(conn, now)
            for (window, budget), (used, limit) in ledger.items():
                index = WINDOWS.index(window)
                same_window = sent_at is None or self._window_start(window, sent_at) == self._window_start(window, now)
                if budget in parsed:
                    limit = parsed[budget][0][index]
                    if same_window:
                        used = max(used, parsed[budget][1][index])
                if budget == refused_budget and same_window and window in refused_windows:
                    used = max(used, limit)
                self._write(conn, window, budget, self._window_start(window, now), used, limit)

    # reading --------------------------------------------------------------------------------------

    def snapshot(self) -> list[BudgetLine]:
        """used / limit / resets_at per window and budget, for progress displays and run metadata."""
        now = self.clock()
        with self.store.reading() as conn:
            ledger = self._ledger(conn, now)
            heard = {(row["window_kind"], row["budget"]) for row in rate_ledger.lines(conn)}
        return [
            BudgetLine(w, b, used, limit, self._next_boundary(w, now), (w, b) in heard)
            for (w, b), (used, limit) in ledger.items()
        ]

    def _held_back(self, window: str, limit: int, bulk: bool) -> int:
        """The calls of a window's `limit` that bulk work leaves to webhook re-pulls (bulk_reserve, the short window)."""
        return math.floor(limit * self.bulk_reserve) if bulk and window == "short" else 0

    def remaining(self, window: str = "short", budget: str = "read") -> int:
        line = next(x for x in self.snapshot() if x.window == window and x.budget == budget)
        return max(0, line.limit - line.used)

    # helpers --------------------------------------------------------------------------------------

    def _guard(self, window: str) -> float:
        """At most a tenth of the window: after waking at boundary + guard, the next boundary is never within
        the guard (with a 1 s guard and a 2 s window that would wait forever)."""
        return min(self.boundary_guard, self.lengths[window] / 10)

    def _window_start(self, window: str, now: float) -> int:
        length = self.lengths[window]
        return int(now // length * length)

    def _next_boundary(self, window: str, now: float) -> float:
        return self._window_start(window, now) + self.lengths[window]

    def _ledger(self, conn: Connection, now: float) -> dict[tuple[str, str], tuple[int, int]]:
        ledger = {key: (0, limit) for key, limit in DEFAULT_LIMITS.items()}
        for row in rate_ledger.lines(conn):
            current = row["window_start"] == self._window_start(row["window_kind"], now)
            ledger[(row["window_kind"], row["budget"])] = (row["used"] if current else 0, row["limit_value"])
        return ledger

    @staticmethod
    def _write(conn: Connection, window: str, budget: str, start: int, used: int, limit: int) -> None:
        rate_ledger.write_line(conn, window, budget, start, used, limit)


# No window's limit or usage is larger: a header beyond it (or below 0) is not the service's count, and is ignored.
HEADER_MAX = 10**9


def _pair(value: str | None) -> tuple[int, int] | None:
    try:
        short, long = (int(x) for x in (value or "").split(","))
    except ValueError:
        return None
    return (short, long) if 0 <= short <= HEADER_MAX and 0 <= long <= HEADER_MAX else None
