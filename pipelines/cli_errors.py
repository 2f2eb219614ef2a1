"""The `fitsync` command group that turns every failure into one or two lines: what happened and what to do.

Expected failures (fitsync's own errors, an unreachable service, an unwritable home, a full disk, Ctrl-C) get a
message naming the fix; anything else gets its type and message and the hint to rerun with `--debug`
(or FITSYNC_DEBUG=1), which shows the traceback. Exit codes: 1 failed, 2 usage, 130 interrupted.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import traceback
from typing import Any

import click
import httpx

from fitsync.client.config import ConfigError
from fitsync.client.errors import FitsyncError

INTERRUPTED = 130


def debugging() -> bool:
    return os.environ.get("FITSYNC_DEBUG", "") not in ("", "0")


def unreachable(origin: str, detail: str) -> str:
    return f"the service does not answer at {origin} ({detail}): check your network, or base_url / FITSYNC_BASE_URL"


def too_slow(what: str) -> str:
    return f"the service did not answer {what} in time: try again later, or raise timeout / FITSYNC_TIMEOUT"


def explain(error: BaseException) -> str:
    """The one-line story of an error a user can act on."""
    if isinstance(error, (FitsyncError, ConfigError)):
        return str(error)
    if isinstance(error, httpx.ConnectError):
        url = error.request.url
        return unreachable(f"{url.scheme}://{url.host}{':' + str(url.port) if url.port else ''}", str(error))
    if isinstance(error, httpx.TimeoutException):
        return too_slow(f"{error.request.method} {error.request.url.path}")
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return f"the disk is full ({error.filename or 'writing fitsync data'}): free some space and run it again"
    if isinstance(error, OSError) and error.filename:
        return (f"cannot use {error.filename} ({error.strerror}): FITSYNC_HOME must be a folder fitsync can create "
                "and write (set FITSYNC_HOME, or fix the folder's owner and mode)")
    if isinstance(error, sqlite3.OperationalError) and "unable to open" in str(error):
        return ("the state database cannot be opened: FITSYNC_HOME must be a writable folder "
                f"({os.environ.get('FITSYNC_HOME') or '~/.fitsync'})")
    if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
        return "the state database stayed locked by another fitsync process: run it again when that one is done"
    return f"{type(error).__name__}: {error}"


class FitsyncGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("Interrupted: nothing half-written was kept; run the command again to continue.", err=True)
            raise SystemExit(INTERRUPTED) from None
        except Exception as error:  # noqa: BLE001 (the last line of defence: one message, never a traceback)
            if debugging():
                traceback.print_exc()
            known = isinstance(error, (FitsyncError, ConfigError, httpx.HTTPError, OSError, sqlite3.Error))
            hint = "" if known or debugging() else " (run with --debug or FITSYNC_DEBUG=1 for the details)"
            click.echo(f"Error: {explain(error)}{hint}", err=True)
            raise SystemExit(1) from None
