"""The `fitsync` console script. Its first lines make a stop signal clean from the first instant: Ctrl-C or SIGTERM
while the command's modules still load (a tenth of a second or more) printed Python's traceback, or nothing."""

from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Callable
from typing import Any


def run(main: Callable[[], Any] | None = None) -> None:
    from fitsync.cli import terminate

    terminate.install()
    try:
        if main is None:
            from fitsync.cli.main import main as command

            main = command
        main()
    except KeyboardInterrupt:  # before the command's own handling (loading it, or click reading the arguments)
        sys.stderr.write(f"{terminate.said()}: nothing was started.\n")
        raise SystemExit(terminate.exit_code()) from None
    finally:
        # The command has ended (and said so): a stop signal while Python shuts down, where its handlers are gone,
        # killed it without a word and with the signal's status. Now it is not delivered.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        # Python's shutdown ran a garbage collection over every object the command's libraries made (Dagster's alone:
        # 0.45 s of each command's end on 2 cores). Frozen, they are left to the exit. The atexit handlers still run
        # (the state store's and Dagster's connections close there), and fitsync closes what it opens itself.
        gc.freeze()
