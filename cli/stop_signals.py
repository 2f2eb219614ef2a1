"""SIGINT and SIGTERM end `fitsync sync` at the next safe point, with the conventional exit code (130 / 143).

The first signal only asks to stop: runs execute off the main thread (sync_runner.off_the_main_thread), so
Dagster does not raise its interrupt at a random point, and the client stops at its next request or wait
(client/stop_request.py); between athletes the caller stops at `checkpoint()`. A second signal stops at once
(every write fitsync makes is one transaction, so nothing half-written stays). Which signal arrived is read
from the wakeup fd, where the interpreter writes every signal's number whatever handler runs.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Iterator
from types import FrameType, TracebackType

from fitsync.client import stop_request

SIGNALS = (signal.SIGINT, signal.SIGTERM)
NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}


class StopSignals:
    def __init__(self) -> None:
        self._seen: list[int] = []
        self._closed = False
        self._at_once = False

    def __enter__(self) -> StopSignals:
        stop_request.clear()
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._old = {s: signal.getsignal(s) for s in SIGNALS}
        for s in SIGNALS:
            signal.signal(s, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(self._old_fd)
        self._drain()  # `received` stays readable after the block
        self._closed = True
        stop_request.clear()
        self._reader.close()
        self._writer.close()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._drain()
        stop_request.request()  # the client stops at its next request or wait
        if len(self._seen) > 1 or self._at_once:  # asked twice, or where nothing is being written: stop now
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def at_once(self) -> Iterator[None]:
        """A stretch that writes nothing (loading Dagster: seconds of imports) ends at the first signal, not after."""
        self._at_once = True
        try:
            self.checkpoint()
            yield
        finally:
            self._at_once = False

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
