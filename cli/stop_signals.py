"""SIGINT and SIGTERM end `fitsync sync` at the next safe point, with the conventional exit code (130 / 143).

The first signal only asks to stop: runs execute off the main thread (sync_runner.off_the_main_thread), so
Dagster does not raise its interrupt at a random point, and the client stops at its next request or wait
(client/stop_request.py); between athletes the caller stops at `checkpoint()`. A second signal stops at once
(every write fitsync makes is one transaction, so nothing half-written stays). Which signal arrived is read
from the wakeup fd, where the interpreter writes every signal's number whatever handler runs.

A KeyboardInterrupt raised where Python cannot pass it on (a weakref callback such as the import system's
module-lock cleanup, a `__del__`) is printed as "Exception ignored" with a traceback, and lost. While the signals
are held, such a stop is not printed: the signal is recorded, and the next safe point stops.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

from fitsync.client import stop_request

SIGNALS = (signal.SIGINT, signal.SIGTERM)
NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}
POLL = 0.05  # how often the main thread looks for a stop while work runs on a thread (seconds)

T = TypeVar("T")


class StopSignals:
    def __init__(self) -> None:
        self._seen: list[int] = []
        self._closed = False

    def __enter__(self) -> StopSignals:
        stop_request.clear()
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._old = {s: signal.getsignal(s) for s in SIGNALS}
        for s in SIGNALS:
            signal.signal(s, self._handle)
        self._old_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(self._old_fd)
        sys.unraisablehook = self._old_hook
        self._drain()  # `received` stays readable after the block
        self._closed = True
        stop_request.clear()
        self._reader.close()
        self._writer.close()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._drain()
        stop_request.request()  # the client stops at its next request or wait
        if len(self._seen) > 1:  # asked twice: stop now
            raise KeyboardInterrupt

    def _unraisable(self, unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            return  # the signal is in `_seen`: the next checkpoint stops
        self._old_hook(unraisable)

    def wait_for(self, work: Callable[[], T]) -> T:
        """Run `work`, which writes nothing (loading Dagster: seconds of imports), on a thread and return its result;
        the first signal ends the wait at once. The stop is raised here, in the main thread's wait: raised inside
        an import it could leave that module's lock held (for any thread importing it next) or be lost in a
        weakref callback. An abandoned thread only imports, and ends with the process."""
        self.checkpoint()
        done = threading.Event()
        result: list[T] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                result.append(work())
            except BaseException as error:  # handed to the main thread
                failure.append(error)
            finally:
                done.set()

        threading.Thread(target=run, name="fitsync-loading", daemon=True).start()
        while not done.wait(POLL):
            self.checkpoint()
        if failure:
            raise failure[0]
        return result[0]

    def _drain(self) -> None:
        if self._closed:
            return
        try:
            while chunk := self._reader.recv(64):
                self._seen.extend(b for b in chunk if b in SIGNALS)
        except BlockingIOError:
            pass

    @property
    def received(self) -> int | None:
        """The first stop signal received so far, if any."""
        self._drain()
        return self._seen[0] if self._seen else None

    def checkpoint(self) -> None:
        """A safe point: stop here if a signal came."""
        if self.received:
            raise KeyboardInterrupt

    @staticmethod
    def exit_code(signum: int) -> int:
        return 128 + signum

    @staticmethod
    def name(signum: int) -> str:
        return NAMES.get(signal.Signals(signum), signal.Signals(signum).name)
