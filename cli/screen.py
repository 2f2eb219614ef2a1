"""The consoles fitsync's commands print through. Off a terminal (cron, CI, a pipe into a log) rich would lay text
out for 80 columns: sentences broken mid-line, commands split across lines, table cells cut with "…". A log has no
width, so there the width is LOG_WIDTH (or COLUMNS when set): lines stay whole and tables uncut."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from fitsync.client.explain import debugging

LOG_WIDTH = 240
log = logging.getLogger(__name__)

# Lines a library writes straight to stderr about a failure fitsync says itself, in its own words (Dagster's event log
# unwritable on a full disk, three times with SQLAlchemy's help link, before the one line naming the home and the fix):
# logged at debug level instead, and shown with --debug.
LIBRARY_NOISE = ("Exception while writing logger call to event log:",)


class _NoiseLogged:
    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        if not debugging() and any(noise in text[:120] for noise in LIBRARY_NOISE):  # after rich's clearing codes
            log.debug("%s", text.rstrip())
            return len(text)
        return self._inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextlib.contextmanager
def library_noise_logged() -> Iterator[None]:
    """stderr without LIBRARY_NOISE while the block runs."""
    original = sys.stderr
    sys.stderr = _NoiseLogged(original)
    try:
        yield
    finally:
        sys.stderr = original


def console(*, stderr: bool = False, quiet: bool = False) -> Console:
    out = Console(stderr=stderr, quiet=quiet)
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out = Console(stderr=stderr, quiet=quiet, width=LOG_WIDTH)
    return out


@contextlib.contextmanager
def doing(out: Console, what: str) -> Iterator[Callable[[str], None]]:
    """Say what a command does while it would otherwise be silent for seconds (loading Dagster, drawing charts): a
    spinner with `what` on a terminal, one plain line off it (a log reads it once), nothing on a quiet console. It
    yields how to say the next step of the same wait (the spinner's text changes; a log gets a line)."""
    if out.quiet:
        yield lambda _: None
    elif out.is_terminal:
        with out.status(Text(what)) as status:
            yield lambda then: status.update(Text(then))
    else:
        out.print(Text(what), soft_wrap=True)
        yield lambda then: out.print(Text(then), soft_wrap=True)
