"""SQLite connections to the state file kept idle for the next unit of work of this process.

Each unit of work (a rate reservation, a token read, a queue write) opened a connection of its own (opening, reading
the schema, the WAL switch, and for the last one to close a checkpoint of the WAL): a write transaction took ≈ 2.1 ms
that way against ≈ 0.6 ms on a kept one on 2 idle cores, an empty one ≈ 11 against 0.4 ms under load. Kept per file across
the process's stores (each FitsyncClient opens its own store), for this process only (a forked child neither uses
nor closes its parent's), and checked before reuse: never one closed mid-transaction, never one whose file was
removed or replaced meanwhile. At exit they are closed, so the last one checkpoints the WAL into the file as before.

A process must not open the state file by any other means than SQLite: closing such a descriptor drops every POSIX
lock the process holds on the file, its kept connections' too, and another process closing its last connection then
takes itself for the last one and removes the WAL under them (stale reads, then a "malformed" database).
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import threading
import weakref
from typing import Any

IDLE_KEPT = 4  # per file: more threads than this at once open their own, closed after use

_lock = threading.Lock()
_idle: dict[str, list[KeptConnection]] = {}
_pid = os.getpid()
# A forked child's copies of its parent's connections: referenced for good, so that no collection closes them here.
_inherited: list[KeptConnection] = []


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


class KeptConnection(sqlite3.Connection):
    """sqlite3's connection, whose close() hands it back to the idle list when it can serve another caller: not in a
    transaction, and no cursor of it left (one part-read holds a read snapshot the next caller would see)."""

    path = ""
    file_id: tuple[int, int] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()

    def _cursor(self) -> sqlite3.Cursor:
        cursor = self.cursor()
        self.cursors.add(cursor)
        return cursor

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self._cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        return self._cursor().executemany(sql, parameters)

    def close(self) -> None:
        if not _keep(self):
            self.discard()

    def discard(self) -> None:
        sqlite3.Connection.close(self)


def open_kept(path: str, wait: float) -> KeptConnection:
    """A new connection whose close() keeps it idle for the next caller (`take`)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=wait, check_same_thread=False, factory=KeptConnection)
    conn.path, conn.file_id = path, _file_id(path)
    return conn


def take(path: str) -> KeptConnection | None:
    """An idle connection to the file at `path`, if one is kept and the file is still the one it opened."""
    now = _file_id(path)
    with _lock:
        _forget_if_forked()
        idle = _idle.get(path, [])
        while idle:
            conn = idle.pop()
            if conn.file_id == now:
                return conn
            conn.discard()
    return None


def _keep(conn: KeptConnection) -> bool:
    try:
        if not conn.path or conn.in_transaction or len(conn.cursors):
            return False
    except sqlite3.ProgrammingError:  # closed already
        return False
    with _lock:
        _forget_if_forked()
        idle = _idle.setdefault(conn.path, [])
        if len(idle) >= IDLE_KEPT or conn in idle:
            return False
        idle.append(conn)
        return True


def _forget_if_forked() -> None:
    """Under _lock: in a forked child, the parent's connections are set aside, neither used nor closed."""
    global _pid
    if _pid != os.getpid():
        _inherited.extend(conn for idle in _idle.values() for conn in idle)
        _idle.clear()
        _pid = os.getpid()


@atexit.register
def close_idle() -> None:
    """Close this process's idle connections (the last one to a file checkpoints its WAL and removes it)."""
    with _lock:
        _forget_if_forked()
        kept = [conn for idle in _idle.values() for conn in idle]
        _idle.clear()
    for conn in kept:
        conn.discard()
