"""What a running `fitsync sync` shows: the phase of the athlete's run, how far it got, the rate budget's waits
with their reason and length, and an ETA that counts the calls left against what is left of both windows.

On a terminal one rich status line is redrawn twice a second. Elsewhere (cron, CI, a Dagster log) a plain line
is printed when a phase starts and when a wait starts, nothing in between.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from dagster import DagsterEventType, DagsterInstance
from rich.console import Console
from rich.text import Text

from fitsync.client.rate_governor import Wait, current_waits
from fitsync.client.runtime import FitsyncClient
from fitsync.sync import live, progress
from fitsync.warehouse import stream_queue

from .sync import STARTING
from .sync_phases import PHASES
from .sync_waits import calls_queued, describe_wait, duration, time_left

log = logging.getLogger(__name__)

# Phases whose work is a queue of activities in the state store: shown as done/total of this run's work.
QUEUES: dict[str, str] = {"details": "detail", "activity zones": "zones"}
NOT_A_SUBSCRIBER = "not fetched: the athlete is not a subscriber"
STREAMS = PHASES["activity_streams"]  # counted in this process only (sync/live.py)


@dataclass
class Reading:
    phase: str | None
    done: int | None = None
    total: int | None = None
    wait: Wait | None = None
    eta: float | None = None
    started: list[str] = field(default_factory=list)  # phases begun since the last reading, in order
    note: str | None = None  # why the phase shows no count


@dataclass(frozen=True)
class PaceSample:
    at: float  # time.monotonic()
    calls: int  # calls made by then (the ledger's count)
    waited: float  # seconds spent waiting for the budget by then


PACE_SECONDS = 10.0  # the pace is what the last this-many seconds of calls took
PACE_CALLS = 10  # at least this many calls, or the run's whole pace


def recent_pace(samples: list[PaceSample], start: PaceSample) -> float | None:
    """Seconds per call lately: over the last PACE_SECONDS (at least PACE_CALLS calls), waits left out. The pace since
    the start counted Dagster's seconds of starting up against the first calls: "about 1 min left" for a sync that
    ended 5 s later. Samples older than the window are dropped from `samples`."""
    now = samples[-1]
    while len(samples) > 2 and now.at - samples[1].at >= PACE_SECONDS and now.calls - samples[1].calls >= PACE_CALLS:
        del samples[0]
    while len(samples) > 1 and samples[1].calls == samples[0].calls:  # no call yet (Dagster starting): not pace
        del samples[0]
    for since in (samples[0], start):
        made = now.calls - since.calls
        if made >= PACE_CALLS:
            return max(now.at - since.at - (now.waited - since.waited), 0.0) / made
    return None  # not measured yet: no figure rather than a guess ("about 1 min left" of a 15-s sync)


@dataclass
class SyncProgress:
    client: FitsyncClient
    instance: DagsterInstance
    athlete_id: int
    run_id: str
    out: Console
    plain: bool
    adopted: set[str] = field(
        default_factory=set
    )  # done by the command before the run (sync/first_steps.py), which said them
    _stop: threading.Event = field(default_factory=threading.Event)
    _started: float = field(default_factory=time.monotonic)
    _waited: float = 0.0
    _calls_at_start: int | None = None
    _said: float | None = None
    _cursor: str | None = None
    _phase_now: str | None = None
    _done_before: dict[str, int] | None = None  # each queue's done count when the run started
    _samples: list[PaceSample] = field(default_factory=list)  # the calls made so far, at each look
    _streams_stored_waiting: int = 0  # activities in the warehouse waiting for their streams when the run started
    _streams_begun: bool = False

    def __post_init__(self) -> None:
        """The queues' done counts before the run: what this run does is what they grow by; and the streams the
        warehouse waits for (read before the run opens it: a read-only open beside the run's writer would fail)."""
        from fitsync.pipelines.stream_queue import count_waiting

        try:
            self._done_before = {q: progress.count_done(self.client.store, self.athlete_id, q) for q in QUEUES.values()}
        except Exception as error:  # noqa: BLE001 (the store away for a moment: the phases show without counts)
            log.debug("progress of athlete %s not read: %s", self.athlete_id, error)
        self._streams_stored_waiting = count_waiting(self.client.config, self.athlete_id)

    def __enter__(self) -> SyncProgress:
        self._thread = threading.Thread(target=self._paint, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def read(self) -> Reading:
        started = self._phases_started()
        phase = self._phase_now = started[-1] if started else self._phase_now
        reading = Reading(phase, wait=max(current_waits(), key=lambda w: w.until, default=None), started=started)
        self._streams_begun = self._streams_begun or STREAMS in started
        if phase in QUEUES:
            self._count(reading, QUEUES[phase])
        elif phase == STREAMS and (counted := live.tally(self.athlete_id, live.STREAMS)) is not None:
            reading.done, reading.total = counted.done, counted.total
        reading.eta = self._eta()
        return reading

    def line(self, reading: Reading) -> str:
        parts = [f"athlete {self.athlete_id}: {reading.phase or STARTING}"]
        if reading.total == 0:  # "details 0/0" read as a phase that failed to start (a listing cut short, or no work)
            parts[0] += " (none to fetch)"
        elif reading.total is not None and not reading.done:  # "details 0/16" in a log read as nothing fetched
            parts[0] += f" ({reading.total} to fetch)"
        elif reading.total is not None:
            parts[0] += f" {reading.done}/{reading.total}"
        elif reading.note:
            parts[0] += f" ({reading.note})"
        if reading.wait is not None:
            parts.append(describe_wait(reading.wait, time.time()))
        if reading.eta is not None and reading.eta > 1:
            parts.append(f"about {duration(reading.eta)} left")
        return " · ".join(parts)

    # internals ----------------------------------------------------------------------------------

    def _count(self, reading: Reading, queue: str) -> None:
        """This run's work on the queue: done since the run started, of that plus what is still queued (the
        activities earlier runs fetched are not this run's). A non-subscriber's zones are never asked for: said so,
        not a count that would never move."""
        store, aid = self.client.store, self.athlete_id
        if queue == "zones" and progress.known_non_subscriber(store, aid):
            reading.note = NOT_A_SUBSCRIBER
        elif self._done_before is not None:
            (done, needing), pending = live.read(
                aid, queue, lambda: (progress.count_done(store, aid, queue), progress.count_needing(store, aid, queue))
            )
            done -= self._done_before[queue]
            reading.done, reading.total = done + pending, done + needing  # the chunk being fetched counts too

    def _phases_started(self) -> list[str]:
        """The run's steps begun since the last look (Dagster's own STEP_START events), as phase names."""
        page = self.instance.get_records_for_run(self.run_id, cursor=self._cursor, of_type=DagsterEventType.STEP_START)
        if page.records:
            self._cursor = page.cursor
        phases: list[str] = []
        for record in page.records:
            step = record.event_log_entry.step_key or ""
            if step in self.adopted:
                continue
            phase = PHASES.get(step, step.replace("_", " "))
            if phase != (phases[-1] if phases else self._phase_now):  # the three warehouse checks are one phase
                phases.append(phase)
        return phases

    def _eta(self) -> float | None:
        """Calls still queued at the pace measured so far, fitted into what is left of the 15-minute and daily
        windows (sync_waits.time_left, as `fitsync status` estimates it)."""
        store, aid = self.client.store, self.athlete_id
        calls = calls_queued(store, aid) + self._streams_left()
        if not calls:
            return None
        governor = self.client.governor
        lines = governor.snapshot()
        used = sum(x.used for x in lines if (x.window, x.budget) == ("long", "overall"))
        self._calls_at_start = used if self._calls_at_start is None else self._calls_at_start
        now = time.monotonic()
        self._samples.append(PaceSample(now, used, self._waited))
        pace = recent_pace(self._samples, PaceSample(self._started, self._calls_at_start, 0.0))
        if pace is None:
            return None
        return time_left(calls, lines, time.time(), governor.lengths, governor.bulk_reserve, pace)

    def _streams_left(self) -> int:
        """The streams calls still ahead: counted by the streams step while it runs, none once it has run; before it,
        those the warehouse waited for at the start and the queued details inside the streams window (new
        activities: each a streams call too, but for a manual one)."""
        config = self.client.config
        if config.streams == "off":
            return 0
        if self._streams_begun:
            counted = live.tally(self.athlete_id, live.STREAMS)
            return counted.total - counted.done if counted is not None else 0
        window = stream_queue.since(config.streams, config.streams_days)
        start = int(window.timestamp()) if window is not None else None
        return self._streams_stored_waiting + progress.count_needing(
            self.client.store, self.athlete_id, "detail", start
        )

    def _paint(self) -> None:
        if self.plain:
            self._paint_lines()
            return
        with self.out.status(f"athlete {self.athlete_id}: {STARTING}") as status:
            while not self._stop.wait(0.5):
                reading = self._tick()
                status.update(Text(self.line(reading)))

    def _paint_lines(self) -> None:
        """Every phase once, when it starts (those already over by the time of the look too), and every wait."""
        while not self._stop.wait(0.5):
            reading = self._tick()
            for phase in reading.started[:-1]:
                self._say(self._over(phase))
            wait = reading.wait.until if reading.wait else None
            if reading.started or (wait is not None and wait != self._said):
                self._said = wait
                self._say(self.line(reading))
        for phase in self._tick().started:  # begun after the last look, before the run ended
            self._say(self._over(phase))

    def _over(self, phase: str) -> str:
        """The line of a phase begun and over between two looks: its count (or why it has none) as it stands."""
        reading = Reading(phase)
        if phase in QUEUES:
            try:
                self._count(reading, QUEUES[phase])
            except Exception as error:  # noqa: BLE001 (as in _tick: the store away for a moment, the name alone)
                log.debug("progress of athlete %s not read: %s", self.athlete_id, error)
        return self.line(reading)

    def _say(self, text: str) -> None:
        self.out.print(text, soft_wrap=True, highlight=False, markup=False)

    def _tick(self) -> Reading:
        before = time.monotonic()
        try:
            reading = self.read()
        except Exception as error:  # noqa: BLE001 (the store or Dagster's storage away for a moment: the run says
            # what failed, the display only waits; a thread's traceback must never reach the terminal)
            log.debug("progress of athlete %s not read: %s", self.athlete_id, error)
            return Reading(self._phase_now)
        if reading.wait is not None:
            self._waited += 0.5 + time.monotonic() - before  # waiting is not the pace of the calls
        return reading
