"""The consoles fitsync's commands print through. Off a terminal (cron, CI, a pipe into a log) rich would lay text
out for 80 columns: sentences broken mid-line, commands split across lines, table cells cut with "…". A log has no
width, so there the width is LOG_WIDTH (or COLUMNS when set): lines stay whole and tables uncut."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.text import Text

LOG_WIDTH = 240


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
