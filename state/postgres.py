"""The state store on PostgreSQL (`FITSYNC_STATE_URL=postgresql://…`), for several hosts sharing one budget.

The repositories write each statement once, in the SQL both stores speak (`ON CONFLICT`, `excluded.`, `CASE`) with
SQLite's `?` placeholders; this backend hands psycopg each statement as sql.to_psycopg tokenizes it (placeholders
only outside literals, identifiers and comments), answers rows by name and by position as sqlite3.Row does, creates
the tables with PostgreSQL's column types (migrations.TYPES), and takes one transaction-scoped advisory lock in
every write transaction, which is what SQLite's `BEGIN IMMEDIATE` is: read-check-write atomic across every process
on every host.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from .migrations import MIGRATIONS, statements
from .sql import to_psycopg
from .store import AthleteBusy, Connection, Cursor, StateStore

log = logging.getLogger(__name__)

# The advisory lock every write transaction holds (the same number in every process), and the class of the
# per-athlete sync locks (pg_try_advisory_lock(ATHLETE_LOCKS, athlete id)).
WRITE_LOCK = 0x66_69_74_73  # "fits"
ATHLETE_LOCKS = 0x6174  # "at"


class Row(Sequence[Any]):
    """A row by position and by column name, like sqlite3.Row."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names, self._values = names, tuple(values)

    def __getitem__(self, key: Any) -> Any:
        return self._values[self._names[key]] if isinstance(key, str) else self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._names, self._values))})"


def _row_factory(cursor: psycopg.Cursor[Any]) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(names, values)


class PostgresConnection:
    """A psycopg connection in autocommit mode (transactions are explicit BEGIN … COMMIT, as on SQLite with
    isolation_level=None) behind the store's Connection interface. Closing it hands it back to its store for the next
    caller (`release`), unless it is broken or mid-transaction."""

    def __init__(
        self, raw: psycopg.Connection[Any], release: Callable[[PostgresConnection], None] | None = None
    ) -> None:
        self.raw = raw
        self.release = release

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return self.raw.execute(to_psycopg(sql), tuple(parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        cursor = self.raw.cursor()
        cursor.executemany(to_psycopg(sql), [tuple(p) for p in parameters])
        return cursor

    def close(self) -> None:
        if self.release is not None:
            self.release(self)
        else:
            self.raw.close()

    def discard(self) -> None:
        """Close it for good (a session that holds a lock of its own must not serve another caller)."""
        self.raw.close()


def _set_lock_timeout(conn: PostgresConnection, wait: float) -> None:
    conn.raw.execute(f"SET lock_timeout = '{int(wait * 1000)}ms'")


def describe_url(url: str) -> str:
    """A database's address without its password or parameters (for messages)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{parts.username + '@' if parts.username else ''}{host}{':' + str(parts.port) if parts.port else ''}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# Idle connections a store keeps for its next callers. Each unit of work (a rate reservation, a read of a queue) took
# a connection of its own: ≈ 10 ms per write transaction against 0.8 ms on a kept one (docs/performance.md), and a
# server process started and ended each time. Not psycopg_pool: its background threads and reconnect loop would replace this store's
# own rules for an outage (retry only a server reached before, say so once, stop when asked).
IDLE_KEPT = 4


class PostgresStateStore(StateStore):
    """fitsync's state in one PostgreSQL database, shared by every host."""

    dialect = "postgresql"
    errors: tuple[type[BaseException], ...] = (psycopg.Error,)

    def __init__(
        self,
        url: str,
        migrate: bool = True,
        retry_seconds: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.retry_seconds = retry_seconds
        self.sleep = sleep  # the client passes one that a stop asked for ends
        self._reached = False  # a server never reached is a setting to fix, not an outage to wait out
        self._idle: list[PostgresConnection] = []
        self._idle_lock = threading.Lock()
        self._pid = os.getpid()  # a forked child opens its own: a connection is never shared by two processes
        if migrate:  # `fitsync doctor` looks without changing anything
            self._migrate()

    def describe(self) -> str:
        return describe_url(self.url)

    def connect(self, wait: float = 60.0) -> PostgresConnection:
        """A kept idle connection that still answers, or a new one; its lock waits are bounded by `wait`."""
        while (kept := self._take_idle()) is not None:
            try:
                _set_lock_timeout(kept, wait)  # a round trip: a connection the server dropped meanwhile fails here
                return kept
            except psycopg.Error:
                kept.discard()
        conn = self._open(wait)
        _set_lock_timeout(conn, wait)
        return conn

    def _take_idle(self) -> PostgresConnection | None:
        with self._idle_lock:
            if self._pid != os.getpid():
                self._idle, self._pid = [], os.getpid()
            return self._idle.pop() if self._idle else None

    def _release(self, conn: PostgresConnection) -> None:
        """Keep a healthy, idle connection for the next caller; close any other."""
        raw = conn.raw
        healthy = not (raw.closed or raw.broken) and raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with self._idle_lock:
            if healthy and self._pid == os.getpid() and len(self._idle) < IDLE_KEPT:
                self._idle.append(conn)
                return
        conn.discard()

    def _open(self, wait: float) -> PostgresConnection:
        """A new connection, tried again for up to `retry_seconds` (no longer than the caller's `wait`) while a server
        this process has reached before does not answer: a restart or a failover of a few seconds fails nothing."""
        gives_up, pause = time.monotonic() + (min(self.retry_seconds, wait) if self._reached else 0), 0.25
        while True:
            try:
                raw = psycopg.connect(
                    self.url,
                    autocommit=True,
                    row_factory=_row_factory,
                    connect_timeout=10,
                    application_name=f"fitsync {socket.gethostname()}:{os.getpid()}",
                )
                break
            except psycopg.OperationalError as error:
                if time.monotonic() + pause > gives_up:
                    raise
                if pause == 0.25:
                    log.warning(
                        "the state database %s does not answer (%s): trying again for up to %.0f s",
                        self.describe(),
                        str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__,
                        gives_up - time.monotonic(),
                    )
                self.sleep(pause)
                pause = min(pause * 2, 2.0)
        self._reached = True
        return PostgresConnection(raw, self._release)

    @contextlib.contextmanager
    def athlete_lock(self, athlete_id: int) -> Iterator[None]:
        """One sync per athlete at a time across every host: a session advisory lock on a connection held for the
        sync. The server releases it when that connection ends, however the process ends (a connection of its own,
        never kept for another caller)."""
        conn = self._open(60.0)
        try:
            key = (ATHLETE_LOCKS, athlete_id % 2**31)
            locked = conn.raw.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()
            assert locked is not None  # a SELECT of one value answers one row
            if not locked[0]:
                holder = conn.raw.execute(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.granted",
                    key,
                ).fetchone()
                raise AthleteBusy(athlete_id, f"process {holder[0].removeprefix('fitsync ')}" if holder else "")
            try:
                yield
            finally:
                # released now, not when the server gets round to ending the closed session: the next sync of this
                # athlete may start at once (a crash still releases it with the session)
                with contextlib.suppress(*self.errors):
                    conn.raw.execute("SELECT pg_advisory_unlock(%s, %s)", key)
        finally:
            conn.discard()

    def usable(self, conn: Connection) -> bool:
        """False once the server dropped the connection (a restart, a failover, an administrator)."""
        assert isinstance(conn, PostgresConnection)  # this store makes no other kind
        return not (conn.raw.closed or conn.raw.broken)

    def begin_write(self, conn: Connection) -> None:
        """BEGIN, then the advisory lock every write transaction of every host takes: SQLite's IMMEDIATE."""
        assert isinstance(conn, PostgresConnection)
        conn.execute("BEGIN")
        try:
            conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        except BaseException:  # a lock not granted in time: leave no aborted transaction on the connection
            conn.execute("ROLLBACK")
            raise

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS fitsync_schema (version BIGINT NOT NULL)")
            row = conn.execute("SELECT version FROM fitsync_schema").fetchone()
            version = int(row[0]) if row else 0
            if row is None:
                conn.execute("INSERT INTO fitsync_schema (version) VALUES (0)")
            if version > len(MIGRATIONS):
                raise RuntimeError(f"{self.describe()} was written by a newer fitsync (schema {version})")
            for number in range(version + 1, len(MIGRATIONS) + 1):
                for statement in statements(number, self.dialect):
                    conn.execute(statement)
                conn.execute("UPDATE fitsync_schema SET version = ?", (number,))

    @property
    def schema_version(self) -> int:
        with self.reading() as conn:
            return int(conn.execute("SELECT version FROM fitsync_schema").fetchone()[0])
