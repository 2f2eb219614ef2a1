"""Errors told as the one line a user can act on: what happened and what to do.

Expected failures (fitsync's own errors, an unreachable service, an unwritable home, a full disk) get a message naming
the fix; anything else gets its type and message. The command line (cli/errors.py) and the headless runner's step
failures (pipelines/step_failures.py) both tell errors this way.
"""

from __future__ import annotations

import errno
import os
import sqlite3

import httpx

from .config import ConfigError
from .errors import FitsyncError


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
    if is_state_server_error(error):
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return (f"the state database cannot be used ({first}): check FITSYNC_STATE_URL (or state_url in "
                "config.toml) and that the PostgreSQL server is up")
    return f"{type(error).__name__}: {error}"


def is_state_server_error(error: BaseException) -> bool:
    """An error of the PostgreSQL state store's driver (without importing it where it is not used)."""
    return type(error).__module__.split(".")[0] == "psycopg"
