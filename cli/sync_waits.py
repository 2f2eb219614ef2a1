"""The rate budget's waits as a person reads them, and shown while no run exists yet (the nothing-new check): on a
terminal a status line, elsewhere one line when a wait begins. Dagster-free: the check must stay quick to start."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from fitsync.client.rate_governor import BudgetLine, Wait, current_waits, seconds_for

if TYPE_CHECKING:
    from fitsync.state.store import StateStore

WINDOW_NAMES = {900: "15-minute", 86400: "daily"}
POLL_SECONDS = 0.5
SECONDS_PER_CALL = 0.25  # a call's own time, until a run has made enough calls to measure its pace


def calls_queued(store: StateStore, athlete_id: int) -> int:
    """The read calls the athlete's queues still hold: a detail per activity needing one, and zones per activity
    needing them unless the athlete is known to have no subscription (those are not asked for while that lasts)."""
    from fitsync.state import progress
    from fitsync.state.athletes import known_non_subscriber

    calls = progress.count_needing(store, athlete_id, "detail")
    if not known_non_subscriber(store, athlete_id):
        calls += progress.count_needing(store, athlete_id, "zones")
    return calls


def time_left(
    calls: int,
    lines: list[BudgetLine],
    now: float,
    lengths: dict[str, int],
    reserve: float,
    seconds_per_call: float = SECONDS_PER_CALL,
) -> float | None:
    """How long `calls` take, fitted into what is left of the 15-minute and daily windows (the rate governor's own
    seconds_for, the same reserve for bulk work): the estimate `fitsync sync` shows while it runs and `fitsync status`
    between runs. None when nothing is queued."""
    if not calls:
        return None
    return seconds_for(calls, lines, now, lengths, seconds_per_call, reserve)


def duration(seconds: float) -> str:
    """7 m 12 s, 2 h 05 m, 40 s: the way a person reads a wait."""
    seconds = max(0, round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} m"
    if seconds >= 60:
        return f"{seconds // 60} m {seconds % 60:02d} s"
    return f"{seconds} s"


def describe_wait(wait: Wait, now: float) -> str:
    window = WINDOW_NAMES.get(wait.window_seconds, f"{wait.window_seconds}-second")
    kept = f", the last {wait.kept} kept for webhook re-pulls by the bulk_reserve setting" if wait.kept else ""
    return (
        f"waiting {duration(wait.until - now)} for the {window} {wait.budget} window (used {wait.used}/{wait.limit}"
        f"{kept})"
    )


@dataclass
class WaitsShown:
    """While `doing` runs in this process: each budget wait said (nothing at all when there is none); `who` begins the
    line ("athlete 123", "webhooks"). A quiet console (--quiet, --json) at a terminal still shows the wait, as a
    status line that leaves nothing behind: a person watching is never left in minutes of silence; in a log, quiet
    stays quiet."""

    who: str
    out: Console
    doing: str
    # where the lines go instead when a status line already shows what is done (screen.doing's `say`): a wait's
    # line while it lasts, then "who: doing" again
    say: Callable[[str], None] | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _said: float | None = None

    def __enter__(self) -> WaitsShown:
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _line(self, wait: Wait) -> str:
        return f"{self.who}: {self.doing} · {describe_wait(wait, time.time())}"

    def _watch(self) -> None:
        if self.say is not None:
            while not self._stop.wait(POLL_SECONDS):
                wait = max(current_waits(), key=lambda w: w.until, default=None)
                if wait is not None and wait.until != self._said:
                    self._said = wait.until
                    self.say(self._line(wait))
                elif wait is None and self._said is not None:
                    self._said = None
                    self.say(f"{self.who}: {self.doing}")
            return
        if self.out.is_terminal:
            shown_on = (
                Console(file=self.out.file, stderr=self.out.stderr, force_terminal=True) if self.out.quiet else self.out
            )
            status = None
            while not self._stop.wait(POLL_SECONDS):
                wait = max(current_waits(), key=lambda w: w.until, default=None)
                if wait is not None:
                    status = status or shown_on.status("")
                    status.start()
                    status.update(Text(self._line(wait)))
                elif status is not None:
                    status.stop()
            if status is not None:
                status.stop()
            return
        while not self._stop.wait(POLL_SECONDS):
            wait = max(current_waits(), key=lambda w: w.until, default=None)
            if wait is not None and wait.until != self._said:
                self._said = wait.until
                self.out.print(self._line(wait), soft_wrap=True, highlight=False, markup=False)
