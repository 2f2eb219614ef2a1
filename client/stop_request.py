"""A stop someone asked for (Ctrl-C, SIGTERM), honoured by the client at its safe points.

Raising an interrupt wherever Python happens to be when a signal lands is not safe: when it lands inside a
garbage collector's callback the interpreter swallows it, prints a traceback and the work goes on. So the
command that owns the signals only *asks* (`request()`), and the client stops where stopping is clean: before
it sends a request, and while it sleeps (rate-budget waits, retry back-off). Nothing else in the process polls.
"""

from __future__ import annotations

import threading

_asked = threading.Event()


class StopRequested(KeyboardInterrupt):
    """Work stopped at a safe point because a stop was asked for; Dagster records the step as interrupted."""


def request() -> None:
    _asked.set()


def requested() -> bool:
    return _asked.is_set()


def clear() -> None:
    _asked.clear()


def checkpoint() -> None:
    if _asked.is_set():
        raise StopRequested()


def sleep(seconds: float) -> None:
    """`time.sleep` that ends as soon as a stop is asked for."""
    if _asked.wait(max(0.0, seconds)):
        raise StopRequested()
