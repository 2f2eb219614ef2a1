"""What `fitsync doctor` reads of a state store without changing it: integrity, schema version, athletes' tokens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import athletes
from .store import StateStore

if TYPE_CHECKING:
    from .postgres import PostgresStateStore  # psycopg only where a server is used


@dataclass(frozen=True)
class Health:
    integrity: str  # "ok", or what SQLite's integrity check found (PostgreSQL keeps its own: always "ok")
    version: int  # migrations run
    athletes: list[tuple[int, str, int | None]]  # athletes.token_states


def of_file(path: Path) -> Health:
    """The SQLite file opened read-only (a damaged or newer store is reported, not migrated). Raises sqlite3.Error."""
    conn = StateStore(path, read_only=True).connect(wait=5.0)
    try:
        integrity = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        return Health(integrity, version, athletes.token_states(conn))
    finally:
        conn.close()


def of_server(store: PostgresStateStore) -> Health:
    """The PostgreSQL store as it is (made with migrate=False). Raises what `store.errors` names."""
    with store.reading() as conn:
        version = int(conn.execute("SELECT version FROM fitsync_schema").fetchone()[0])
        return Health("ok", version, athletes.token_states(conn))
