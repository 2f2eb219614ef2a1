"""Errors told as the one line a user can act on: what happened and what to do.

Expected failures (fitsync's own errors, an unreachable service, an unwritable home, a full disk) get a message naming
the fix; anything else gets its type and message. The command line (cli/errors.py) and the headless runner's step
failures (pipelines/step_failures.py) both tell errors this way.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from pathlib import Path

import httpx

from .config_basics import ConfigError
from .errors import FitsyncError


def debugging() -> bool:
    return os.environ.get("FITSYNC_DEBUG", "") not in ("", "0")


def unreachable(origin: str, detail: str) -> str:
    return f"the service does not answer at {origin} ({detail}): check your network, or base_url / FITSYNC_BASE_URL"


def too_slow(what: str) -> str:
    return f"the service did not answer {what} in time: try again later, or raise timeout / FITSYNC_TIMEOUT"


# What SQLite (fitsync's state, Dagster's storage) and DuckDB say when a write finds no room or the disk fails.
DISK_TROUBLE = ("database or disk is full", "disk i/o error", "no space left on device", "disk is full")
DAMAGED = ("database disk image is malformed", "file is not a database")


# What DuckDB says opening a file that is not one of its databases (damaged, cut short, or another kind of file).
NOT_A_WAREHOUSE = re.compile(r'file "(?P<path>[^"]+)" exists, but it is not a valid duckdb database file', re.I)


# What DuckDB says reading a block of its file whose checksum does not match (the file damaged on disk).
CORRUPT_BLOCK = re.compile(r"Corrupt database file: computed checksum", re.I)


# How a damaged warehouse file is replaced (the state keeps what was fetched, and knows to fetch it all again).
REBUILD = "move it aside (mv {path} {path}.damaged) and run `fitsync sync`, which fetches its content again"


def damaged_warehouse(message: str, path: str | Path | None = None) -> str | None:
    """The one line for a warehouse file DuckDB cannot read as a database, or one whose blocks fail their checksum
    (DuckDB's message names no file then: `path`, the warehouse file, when known): which file, and how it is rebuilt
    (the state keeps what was fetched; a sync fetches the warehouse's content again). None for any other message."""
    if (found := NOT_A_WAREHOUSE.search(message)) is not None:
        return not_a_warehouse(found["path"])
    if path is not None and CORRUPT_BLOCK.search(message):
        return f"the warehouse {path} is damaged (a block fails DuckDB's checksum): " + REBUILD.format(path=path)
    return None


def not_a_warehouse(path: str | Path) -> str:
    return f"the warehouse {path} is not a DuckDB database (damaged, or cut short): " + REBUILD.format(path=path)


def home_folder() -> Path:
    return Path(os.environ.get("FITSYNC_HOME") or Path.home() / ".fitsync").expanduser().absolute()


def disk_full(where: Path | None = None) -> str:
    """The one line for a full (or failing) disk: where, how much is free, what to do."""
    folder = where or home_folder()
    probe = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
    try:
        free = f"{shutil.disk_usage(probe).free / 2**20:,.0f} MiB free"
    except OSError:
        free = "free space unknown"
    return (
        f"the disk holding {folder} is full or failing ({free}): free some space there (or set FITSYNC_HOME "
        "to a roomier disk), then run the command again; nothing half-written was kept"
    )


def _messages(error: BaseException) -> str:
    """The error's text and its causes', lower-cased: wrappers (SQLAlchemy, Dagster) keep the cause's words."""
    seen: set[int] = set()
    texts: list[str] = []
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(str(current))
        current = current.__cause__ or current.__context__
    return " | ".join(texts).lower()


def explain(error: BaseException) -> str:
    """The one-line story of an error a user can act on."""
    if isinstance(error, (FitsyncError, ConfigError)) or (isinstance(error, TimeoutError) and error.errno is None):
        return str(error)  # its own one line (a TimeoutError of fitsync's own names what waited and what to do)
    text = _messages(error)
    if (warehouse := damaged_warehouse(str(error))) is not None:
        return warehouse
    if (isinstance(error, OSError) and error.errno == errno.ENOSPC) or any(t in text for t in DISK_TROUBLE):
        return disk_full()
    if any(t in text for t in DAMAGED):
        return (
            f"a database under {home_folder()} is damaged ({text.split(' | ')[0][:120]}): run `fitsync doctor` "
            "to see which, then move it aside and restore it from a backup (a lost state.db means connecting "
            "the athletes again with `fitsync connect`; a lost warehouse.duckdb is rebuilt by `fitsync sync "
            "--full`)"
        )
    if isinstance(error, httpx.ConnectError):
        url = error.request.url
        return unreachable(f"{url.scheme}://{url.host}{':' + str(url.port) if url.port else ''}", str(error))
    if isinstance(error, httpx.TimeoutException):
        return too_slow(f"{error.request.method} {error.request.url.path}")
    if isinstance(error, OSError) and error.filename:
        return (
            f"cannot use {error.filename} ({error.strerror}): FITSYNC_HOME must be a folder fitsync can create "
            "and write (set FITSYNC_HOME, or fix the folder's owner and mode)"
        )
    if isinstance(error, sqlite3.OperationalError) and "unable to open" in str(error):
        return (
            "the state database cannot be opened: FITSYNC_HOME must be a writable folder "
            f"({os.environ.get('FITSYNC_HOME') or '~/.fitsync'})"
        )
    if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
        return "the state database stayed locked by another fitsync process: run it again when that one is done"
    if is_state_server_error(error):
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return (
            f"the state database cannot be used ({first}): check FITSYNC_STATE_URL (or state_url in "
            "config.toml) and that the PostgreSQL server is up"
        )
    return f"{type(error).__name__}: {error}"


def is_state_server_error(error: BaseException) -> bool:
    """An error of the PostgreSQL state store's driver (without importing it where it is not used)."""
    return type(error).__module__.split(".")[0] == "psycopg"
