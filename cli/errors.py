"""The `fitsync` command group that turns every failure into one or two lines: what happened and what to do.

Expected failures (fitsync's own errors, an unreachable service, an unwritable home, a full disk, Ctrl-C) get a
message naming the fix; anything else gets its type and message and the hint to rerun with `--debug`
(or FITSYNC_DEBUG=1), which shows the traceback. Exit codes: 1 failed, 2 usage, 130 interrupted.
"""

from __future__ import annotations

import sqlite3
import traceback
from typing import Any

import click
import httpx

from fitsync.client.config_basics import ConfigError
from fitsync.client.errors import FitsyncError
from fitsync.client.explain import debugging, explain, is_state_server_error

INTERRUPTED = 130


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
            story = explain(error)
            known = (
                isinstance(error, (FitsyncError, ConfigError, httpx.HTTPError, OSError, sqlite3.Error))
                or is_state_server_error(error)
                or not story.startswith(f"{type(error).__name__}: ")
            )
            hint = "" if known or debugging() else " (run with --debug or FITSYNC_DEBUG=1 for the details)"
            click.echo(f"Error: {story}{hint}", err=True)
            raise SystemExit(1) from None
