"""uvicorn's server for `fitsync webhooks serve`: the address bound before anything is printed, its graceful stop,
then fitsync's own last line and exit code instead of re-raising the signal. A module of its own so that uvicorn is
imported only when the receiver runs."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

import uvicorn


class ReceiverServer(uvicorn.Server):
    stop_signal: int | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stop_signal = self.stop_signal or sig
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
