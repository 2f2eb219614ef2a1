"""StopSignals in-process, beside the commands' stops on a terminal (test_clean_stop.py, test_interrupts.py): work
that only loads runs on a thread and the first signal ends the wait for it at once, raised in the main thread's
wait; a stop Python could not pass on (raised in a weakref callback, as the import system's are) prints no
traceback and is not lost."""

from __future__ import annotations

import os
import signal
import threading
import time
import weakref
from typing import Any

import pytest

from fitsync.cli.stop_signals import StopSignals


def test_the_work_on_a_thread_returns_its_result_and_its_error() -> None:
    with StopSignals() as signals:
        assert signals.wait_for(lambda: 42) == 42
        with pytest.raises(ValueError, match="no such athlete"):
            signals.wait_for(lambda: (_ for _ in ()).throw(ValueError("no such athlete")))
        assert signals.received is None


def test_a_signal_ends_the_wait_at_once_and_never_interrupts_the_work() -> None:
    """The work goes on untouched (an import stopped half-way can leave its module's lock held)."""
    started, finish = threading.Event(), threading.Event()
    interrupted: list[BaseException] = []

    def loading() -> str:
        started.set()
        try:
            while not finish.wait(0.001):
                _ = [object() for _ in range(200)]  # work that the interpreter may interrupt anywhere
        except BaseException as error:
            interrupted.append(error)
            raise
        return "loaded"

    with StopSignals() as signals:
        threading.Thread(target=lambda: started.wait(10) and os.kill(os.getpid(), signal.SIGINT), daemon=True).start()
        began = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            signals.wait_for(loading)
        waited = time.monotonic() - began
        assert signals.received == signal.SIGINT
    finish.set()
    assert started.is_set() and not interrupted
    assert waited < 5, waited  # the work alone would run until `finish`


class _Held:
    pass


def test_a_stop_lost_in_a_weakref_callback_prints_nothing_and_the_next_checkpoint_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KeyboardInterrupt raised in a weakref callback is "ignored" by Python, which prints its traceback: the
    user saw one above "Stopped by Ctrl-C" when the signal landed in the import system's module-lock callback. Other
    unraisable errors still reach the hook that was there before."""
    reached: list[type[BaseException]] = []
    monkeypatch.setattr("sys.unraisablehook", lambda unraisable: reached.append(type(unraisable.exc_value)))

    def dropped(error: BaseException) -> Any:
        held = _Held()
        ref = weakref.ref(held, lambda _: (_ for _ in ()).throw(error))
        del held  # the callback runs here, and its exception is unraisable
        return ref

    with StopSignals() as signals:
        os.kill(os.getpid(), signal.SIGINT)  # a first signal: recorded, nothing raised yet
        assert signals.received == signal.SIGINT
        dropped(KeyboardInterrupt())
        dropped(ValueError("a bug elsewhere"))
        with pytest.raises(KeyboardInterrupt):
            signals.checkpoint()
    assert reached == [ValueError]
    dropped(KeyboardInterrupt())  # the hook is put back after the block
    assert reached == [ValueError, KeyboardInterrupt]
