"""The `fitsync` command group that turns every failure into one or two lines: what happened and what to do.

Expected failures (fitsync's own errors, an unreachable service, an unwritable home, a full disk, Ctrl-C) get a
message naming the fix; anything else gets its type and message and the hint to rerun with `--debug`
(or FITSYNC_DEBUG=1), which shows the traceback. Exit codes: 1 failed, 2 usage, 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import sys
import traceback
from typing import Any, NoReturn

import click
import httpx

from fitsync.client.config_basics import ConfigError
from fitsync.client.errors import FitsyncError
from fitsync.client.explain import debugging, explain, is_state_server_error

INTERRUPTED = 130
# What DuckDB raises (a RuntimeError) in place of the KeyboardInterrupt of a Ctrl-C that came while it worked.
DUCKDB_INTERRUPTED = "Query interrupted"


class FitsyncGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Click's main, with output that cannot be written said in one line even where no command runs yet
        (`--help`, `--version` into a full disk)."""
        try:
            return super().main(*args, **kwargs)
        except OSError as error:
            if (story := unwritable_stdout(error)) is None:
                raise
            click.echo(f"Error: {story}", err=True)
            raise SystemExit(1) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, SystemExit):
            raise
        except (KeyboardInterrupt, click.exceptions.Abort):  # Ctrl-C, or Ctrl-C / Ctrl-D at one of click's prompts
            _interrupted(ctx)
        except Exception as error:  # noqa: BLE001 (the last line of defence: one message, never a traceback)
            if isinstance(error, RuntimeError) and str(error) == DUCKDB_INTERRUPTED:  # Ctrl-C met inside DuckDB
                _interrupted(ctx)
            if debugging():
                traceback.print_exc()
            story = unwritable_stdout(error) or _damaged_warehouse(error) or explain(error)
            known = (
                isinstance(error, (FitsyncError, ConfigError, httpx.HTTPError, OSError, sqlite3.Error))
                or is_state_server_error(error)
                or not story.startswith(f"{type(error).__name__}: ")
            )
            hint = "" if known or debugging() else " (run with --debug or FITSYNC_DEBUG=1 for the details)"
            click.echo(f"Error: {story}{hint}", err=True)
            raise SystemExit(1) from None


# What a stop leaves, by command (its words, a group's command with its group's): those that only look change
# nothing, `connect` is one step to start over, a server just stops; the rest keep what they finished (each write is
# one transaction) and continue where they stopped.
LOOKED = "nothing was changed."
STOPPED: dict[str, str] = {
    "status": LOOKED,
    "athletes": LOOKED,
    "query": LOOKED,
    "sql": LOOKED,
    "doctor": LOOKED,
    "webhooks status": LOOKED,
    "connect": "no athlete was connected; `fitsync connect` starts over.",
    "webhooks serve": "the receiver stopped; the service sends again what it did not acknowledge.",
    "webhooks subscribe": "`fitsync webhooks status` says whether the service made the subscription; if not, "
    "subscribe again.",
    "webhooks unsubscribe": "`fitsync webhooks status` says whether the subscription is gone; if not, unsubscribe "
    "again.",
    "sandbox serve": "the sandbox stopped; a world it had not generated whole is generated at its next start.",
}
KEPT = "nothing half-written was kept; run the command again to continue."


def _interrupted(ctx: click.Context) -> NoReturn:
    """One line for Ctrl-C (130) or SIGTERM (143, cli/terminate.py), whichever stopped the command."""
    from fitsync.cli import terminate

    words = [word for word in sys.argv[1:] if not word.startswith("-")][:2]  # the command, and a group's command
    said = next((STOPPED[key] for key in (" ".join(words), *words[:1]) if key in STOPPED), KEPT)
    click.echo(f"{terminate.said()}: {said}", err=True)
    raise SystemExit(terminate.exit_code()) from None


def unwritable_stdout(error: BaseException) -> str | None:
    """The line for a result that could not be written to standard output because the file or device behind it has no
    room (`> /dev/full`, a full disk): said as that, not as FITSYNC_HOME's disk. Standard output then goes to
    /dev/null, so that the flush at exit does not fail again. None for any other error."""
    if not isinstance(error, OSError) or error.filename or error.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    try:
        out = os.fstat(sys.stdout.fileno())
        if stat.S_ISCHR(out.st_mode):
            full = out.st_rdev == os.makedev(1, 7)  # /dev/full
        else:
            room = os.fstatvfs(sys.stdout.fileno())
            full = stat.S_ISREG(out.st_mode) and room.f_bavail * room.f_frsize < FULL_BELOW
    except (OSError, ValueError):
        return None
    if not full:
        return None
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return (
        f"the output could not be written ({error.strerror}): standard output goes to a file or device with no room "
        "left; send it to a disk with room, or to a pipe"
    )


FULL_BELOW = 1 << 20  # bytes free under which the disk behind a redirected standard output is the full one


def _damaged_warehouse(error: BaseException) -> str | None:
    """The fix for a warehouse file whose blocks DuckDB found damaged (its message names no file: the configured
    one is)."""
    from fitsync.client.config_basics import load_config
    from fitsync.client.explain import CORRUPT_BLOCK, damaged_warehouse
    from fitsync.resources.warehouse import warehouse_of

    if not CORRUPT_BLOCK.search(str(error)):
        return None
    try:
        warehouse = warehouse_of(load_config())
    except ConfigError:
        return None
    return damaged_warehouse(str(error), warehouse.file) if warehouse.file else None
