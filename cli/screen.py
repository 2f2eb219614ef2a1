"""The consoles fitsync's commands print through. Off a terminal (cron, CI, a pipe into a log) rich would lay text
out for 80 columns: sentences broken mid-line, commands split across lines, table cells cut with "…". A log has no
width, so there the width is LOG_WIDTH (or COLUMNS when set): lines stay whole and tables uncut."""

from __future__ import annotations

import os

from rich.console import Console

LOG_WIDTH = 240


def console(*, stderr: bool = False, quiet: bool = False) -> Console:
    out = Console(stderr=stderr, quiet=quiet)
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out = Console(stderr=stderr, quiet=quiet, width=LOG_WIDTH)
    return out
