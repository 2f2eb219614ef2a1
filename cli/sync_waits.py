"""The rate budget's waits as a person reads them, and shown while no run exists yet (the nothing-new check): on a
terminal a status line, elsewhere one line when a wait begins. Dagster-free: the check must stay quick to start."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from fitsync.client.rate_governor import Wait, current_waits

WINDOW_NAMES = {900: "15-minute", 86400: "daily"}
POLL_SECONDS = 0.5


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
    return f"waiting {duration(wait.until - now)} for the {window} {wait.budget} window (used {wait.used}/{wait.limit})"


@dataclass
class WaitsShown:
    """While `doing` runs in this process: each budget wait said (nothing at all when there is none)."""

    athlete_id: int
    out: Console
    doing: str
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
        return f"athlete {self.athlete_id}: {self.doing} · {describe_wait(wait, time.time())}"

    def _watch(self) -> None:
        if self.out.is_terminal and not self.out.quiet:
            status = None
            while not self._stop.wait(POLL_SECONDS):
                wait = max(current_waits(), key=lambda w: w.until, default=None)
                if wait is not None:
                    status = status or self.out.status("")
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
