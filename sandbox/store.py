"""The sandbox's SQLite file: schema, connections and the small shared helpers around them."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from .settings import Settings

SCHEMA_VERSION = 1


def connect(path: str) -> sqlite3.Connection:
    """Open the sandbox db (creating the schema); WAL so the CLI can write while the server runs."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA foreign_keys = ON")
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)
    conn.executescript(resources.files(__package__).joinpath("schema.sql").read_text())
    with transaction(conn):
        if get_meta(conn, "schema_version") is None:
            set_meta(conn, "schema_version", str(SCHEMA_VERSION))
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT: the write lock is taken up front, so check-then-act is atomic."""
    if conn.in_transaction:  # nested use joins the outer transaction
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row["value"] if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def load_settings(conn: sqlite3.Connection) -> Settings:
    return Settings.from_json(get_meta(conn, "settings"))


def save_settings(conn: sqlite3.Connection, settings: Settings) -> None:
    set_meta(conn, "settings", json.dumps(settings.to_json()))


def bump(conn: sqlite3.Connection, name: str, by: int = 1) -> None:
    conn.execute(
        "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + ?",
        (name, by, by),
    )


def counters(conn: sqlite3.Connection) -> dict[str, int]:
    return {r["name"]: r["value"] for r in conn.execute("SELECT name, value FROM counters ORDER BY name")}


def loads(row: sqlite3.Row | None) -> dict[str, Any] | None:
    return None if row is None else json.loads(row["data"])


def side_file(db_path: str, suffix: str) -> Path | None:
    """Path of a file kept beside the db (console key, server secret); None for an in-memory db."""
    return None if db_path == ":memory:" else Path(f"{db_path}.{suffix}")


def read_or_create_secret(db_path: str, suffix: str) -> str:
    """A random secret persisted beside the db with mode 0600, so restarts keep tokens and keys valid."""
    path = side_file(db_path, suffix)
    if path is None:
        return secrets.token_urlsafe(32)
    if path.exists():
        return path.read_text().strip()
    value = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return value
