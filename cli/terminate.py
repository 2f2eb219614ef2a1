"""SIGTERM stops any fitsync command as Ctrl-C does: the same clean-up (a half-written file removed, a prompt left),
one line, and SIGTERM's exit code (143), where the default would kill it silently mid-write. Commands that stop at
safe points (`sync`, the servers) put their own handlers in place while they run, and this one back after."""

from __future__ import annotations

import signal
from types import FrameType

RECEIVED: list[int] = []  # the SIGTERMs this process was sent


def install() -> None:
    signal.signal(signal.SIGTERM, _raise)


def _raise(signum: int, frame: FrameType | None) -> None:
    RECEIVED.append(signum)
    raise KeyboardInterrupt


def received() -> bool:
    """Whether the KeyboardInterrupt being handled came from a SIGTERM (not Ctrl-C)."""
    return bool(RECEIVED)


def said() -> str:
    return "Stopped by SIGTERM" if RECEIVED else "Interrupted"


def exit_code() -> int:
    return 128 + signal.SIGTERM if RECEIVED else 128 + signal.SIGINT
