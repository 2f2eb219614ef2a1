"""The state store's interface, and the store on SQLite (WAL): one file shared by every fitsync process of a host.

SQLite, not the DuckDB warehouse: many processes (runs, sensors, the CLI, the webhook receiver) write here at once,
and DuckDB allows a single writing process. `BEGIN IMMEDIATE` is the cross-process lock. postgres.py is the same
store on PostgreSQL, for several hosts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from . import idle_connections
from .migrations import MIGRATIONS, statements


class Cursor(Protocol):
    """What a statement answers (sqlite3's cursor or psycopg's): rows by position and by column name."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection to either store: statements with `?` placeholders, transactions explicit (BEGIN … COMMIT)."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...

    def close(self) -> None: ...


# A file up to this size with no writer about is read whole into memory (read_only_connection).
SNAPSHOT_BYTES = 64 * 2**20


def read_only_connection(path: Path, wait: float) -> sqlite3.Connection:
    """A connection to a SQLite file (WAL or not) that cannot write and creates nothing, not even for a moment. With
    no side file beside it (no writer about), a copy of the file in memory, taken while it did not change: SQLite's
    own connections would create the WAL's -wal and -shm and remove them on closing, changing the folder. Else, in a
    writable folder an ordinary one refusing writes (query_only): the last connection to close removes the side
    files, as after any process; in a read-only folder SQLite's read-only mode. None creates the database file."""
    snapshot = _snapshot(path)
    if snapshot is not None:
        return snapshot
    writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    uri = f"file:{quote(str(path))}?mode={'rw' if writable else 'ro'}"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=wait, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
    conn.execute("PRAGMA query_only = 1")
    return conn


def _snapshot(path: Path) -> sqlite3.Connection | None:
    """The file as an in-memory database, when no side file (-wal, -shm, -journal) is there before or after it is read
    and the file is the same (inode, size, modification time) after as before: nothing wrote it meanwhile. None
    otherwise, or for a large file."""
    sides = [path.with_name(path.name + side) for side in ("-wal", "-shm", "-journal")]
    try:
        before = path.stat()
        if before.st_size > SNAPSHOT_BYTES or any(side.exists() for side in sides):
            return None
        data = bytearray(path.read_bytes())
        after = path.stat()
    except OSError:
        return None
    if any(side.exists() for side in sides) or (before.st_ino, before.st_size, before.st_mtime_ns) != (
        after.st_ino,
        after.st_size,
        after.st_mtime_ns,
    ):
        return None
    if len(data) >= 20 and data[18] == data[19] == 2:  # WAL mode, which a database in memory cannot use
        data[18] = data[19] = 1
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        conn.deserialize(bytes(data))
        conn.execute("PRAGMA query_only = 1")
    except sqlite3.Error:  # not a database, or damaged: SQLite's own connection says so as it would have
        conn.close()
        return None
    return conn


class AthleteBusy(Exception):
    def __init__(self, athlete_id: int, owner: str) -> None:
        self.athlete_id, self.owner = athlete_id, owner
        super().__init__(
            f"athlete {athlete_id} is being synced by {owner or 'another process'}: skipped (it continues there)"
        )


def held_elsewhere(busy: AthleteBusy) -> str:
    """Who holds the athlete: a process here (the SQLite lock file holds its pid) or on another host (PostgreSQL's
    lock holder is named `host:pid`), said so that a worker's log tells the two apart."""
    owner = busy.owner.removeprefix("process ")
    host, _, pid = owner.rpartition(":")
    if host and host != socket.gethostname():
        where = f"on host {host} (process {pid})"
    else:
        where = f"by process {pid or owner or '(unknown)'} on this host"
    return f"athlete {busy.athlete_id} is being synced {where}: skipped here, it continues there"


class StateStore:
    """One SQLite file shared by every fitsync process on this machine (the default)."""

    dialect = "sqlite"
    # What a failed read or write of the store raises (a full disk, a lock held too long).
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    read_only = False  # a store opened to look only (`reading` then keeps one connection for all it reads)
    _look: Connection | None = None

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only:  # `fitsync status`, `athletes`, `doctor`: they look, creating and migrating nothing
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.path.parent, 0o700)
        with self._first_open_lock():
            # created here only when missing: closing a descriptor of the file would drop every lock this process
            # holds on it (POSIX record locks), those of a connection kept open too (the webhook receiver's); another
            # process closing its last connection would then take itself for the last one and remove the WAL
            # under it
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
            os.chmod(self.path, 0o600)
            self._migrate()

    @contextlib.contextmanager
    def _first_open_lock(self) -> Iterator[None]:
        """One opener at a time creates, switches to WAL and migrates: SQLite answers a second connection's switch to
        WAL with "database is locked" at once, without waiting its busy timeout. An advisory `flock` beside the
        athletes' locks, so threads and processes alike take turns; the kernel drops it with its process."""
        fd = self._lock_file(f"{self.path.name}.open.lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def describe(self) -> str:
        """Where the state is (for messages)."""
        return str(self.path)

    def connect(self, wait: float = 60.0) -> Connection:
        """A connection whose writes wait up to `wait` seconds for another process's write transaction."""
        if self.read_only:
            return self._connect_read_only(wait)
        path = os.path.abspath(self.path)
        conn = idle_connections.take(path)
        if conn is None:
            conn = idle_connections.open_kept(path, wait)  # its busy timeout `wait` while it switches to WAL
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")  # a rotated refresh token must survive a power cut
        conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")  # this caller's, on a kept connection too
        return conn

    def _connect_read_only(self, wait: float) -> Connection:
        conn = read_only_connection(self.path, wait)
        conn.row_factory = sqlite3.Row
        return conn

    @contextlib.contextmanager
    def transaction(self, conn: Connection | None = None) -> Iterator[Connection]:
        """A write transaction holding the store's write lock, so read-check-write is atomic across processes."""
        own = conn is None
        conn = conn or self.connect()
        try:
            self.begin_write(conn)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if own:
                conn.close()

    @contextlib.contextmanager
    def athlete_lock(self, athlete_id: int) -> Iterator[None]:
        """One sync per athlete at a time across processes (two would fetch the same queue twice). Here an advisory
        `flock` on `<home>/locks/athlete-<id>.lock`: the kernel releases it when the process ends, however it ends,
        so a killed sync never leaves a stale lock. The file holds the owner's pid for the message."""
        fd = self._lock_file(f"athlete-{athlete_id}.lock")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(fd, 32, 0).decode(errors="replace").strip()
                raise AthleteBusy(athlete_id, f"process {owner}" if owner else "") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)

    def _lock_file(self, name: str) -> int:
        """An open descriptor of `<home>/locks/<name>`, to `flock`."""
        folder = self.path.parent / "locks"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(folder / name, os.O_RDWR | os.O_CREAT, 0o600)

    def usable(self, conn: Connection) -> bool:
        """Whether a connection that raised can still be used (a file connection always can)."""
        return True

    def begin_write(self, conn: Connection) -> None:
        """Start a transaction holding the store's write lock: SQLite's IMMEDIATE."""
        conn.execute("BEGIN IMMEDIATE")

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        if self.read_only:  # a command that looks: one view of the file for all it reads (a status read it 26 times)
            if self._look is None:
                self._look = self._connect_read_only(60.0)
            yield self._look
            return
        conn = self.connect()
        try:
            yield conn
        finally:
            conn.close()

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > len(MIGRATIONS):
                raise RuntimeError(f"{self.path} was written by a newer fitsync (schema {version})")
            for number in range(version + 1, len(MIGRATIONS) + 1):
                for statement in statements(number, self.dialect):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

    @property
    def schema_version(self) -> int:
        with self.reading() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
