"""The DuckDB warehouse file: numbered migrations for tables, the analysis views re-applied when they change,
short write connections, readers that wait out writers.

DuckDB allows one writing process, and while it writes, other processes cannot even open the file
read-only. So writers keep their connection for one batch only, and readers retry briefly on the lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Iterator

import duckdb

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "migrations"
VIEWS_SCRIPT = "analysis_views.sql"
# "different configuration": a connection of this process not opened here (another library) holds the file.
LOCK_MARKERS = ("lock", "Conflicting", "being used", "different configuration")


def migration_scripts() -> list[tuple[int, str, str]]:
    folder = resources.files(__package__).joinpath(MIGRATIONS_PACKAGE)
    scripts = sorted(p for p in folder.iterdir() if p.name.endswith(".sql"))
    return [(int(p.name.split("_", 1)[0]), p.name, p.read_text()) for p in scripts]


def views_script() -> tuple[str, str]:
    """The analysis views' SQL and its checksum."""
    sql = resources.files(__package__).joinpath(VIEWS_SCRIPT).read_text()
    return sql, hashlib.sha256(sql.encode()).hexdigest()


def migrate(path: Path | str) -> int:
    """Create or upgrade the schema; returns the version now in force.

    Tables change only through numbered migrations, applied once each. The views hold no data, so their one
    script is re-applied whenever its checksum differs from the recorded one: every warehouse gets the views
    of the fitsync that opens it, without a migration per changed view.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with writing(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, "
                     "applied_at TIMESTAMPTZ DEFAULT now())")
        conn.execute("CREATE TABLE IF NOT EXISTS schema_views (name VARCHAR PRIMARY KEY, checksum VARCHAR NOT NULL, "
                     "applied_at TIMESTAMPTZ DEFAULT now())")
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, sql in migration_scripts():
            if version not in done:
                _in_transaction(conn, sql, "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                                [version, name])
        sql, checksum = views_script()
        if conn.execute("SELECT checksum FROM schema_views WHERE name = ?", [VIEWS_SCRIPT]).fetchall() != [(checksum,)]:
            _in_transaction(conn, sql, "INSERT OR REPLACE INTO schema_views (name, checksum) VALUES (?, ?)",
                            [VIEWS_SCRIPT, checksum])
        return conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]


def _in_transaction(conn: duckdb.DuckDBPyConnection, script: str, record: str, values: list[object]) -> None:
    """The script and the row recording it, all or nothing."""
    conn.execute("BEGIN")
    try:
        conn.execute(script)
        conn.execute(record, values)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def writing(path: Path | str, timeout: float = 60.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A write connection for one unit of work; waits while another process holds the file."""
    with _turns(path).write(timeout):
        conn = _open(path, read_only=False, timeout=timeout)
        try:
            yield conn
        finally:
            conn.close()


@contextlib.contextmanager
def reading(path: Path | str, timeout: float = 30.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection; a writer holding the lock makes it wait and retry, not fail."""
    with _turns(path).read(timeout):
        conn = _open(path, read_only=True, timeout=timeout)
        try:
            yield conn
        finally:
            conn.close()


class _Turns:
    """Readers and writers of one file within this process take turns, writers first.

    Inside one process DuckDB refuses a read-only and a read-write connection to the same file at the same time
    (a ConnectionException at once, not the lock another process waits on), so a thread reading while the
    loader writes would fail, and a busy reader could starve the loader. Do not open a writer while holding a
    reader of the same file in the same thread.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.readers = self.writers_waiting = 0
        self.writer = False

    @contextlib.contextmanager
    def read(self, timeout: float) -> Iterator[None]:
        with self.cond:
            if not self.cond.wait_for(lambda: not self.writer and not self.writers_waiting, timeout):
                raise TimeoutError("the warehouse stayed locked by a writer of this process")
            self.readers += 1
        try:
            yield
        finally:
            with self.cond:
                self.readers -= 1
                self.cond.notify_all()

    @contextlib.contextmanager
    def write(self, timeout: float) -> Iterator[None]:
        with self.cond:
            self.writers_waiting += 1
            try:
                if not self.cond.wait_for(lambda: not self.writer and not self.readers, timeout):
                    raise TimeoutError("the warehouse stayed open by readers of this process")
            finally:
                self.writers_waiting -= 1
            self.writer = True
        try:
            yield
        finally:
            with self.cond:
                self.writer = False
                self.cond.notify_all()


_TURNS: dict[str, _Turns] = {}
_TURNS_LOCK = threading.Lock()


def _turns(path: Path | str) -> _Turns:
    key = str(Path(path).resolve())
    with _TURNS_LOCK:
        return _TURNS.setdefault(key, _Turns())


def _open(path: Path | str, read_only: bool, timeout: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except (duckdb.IOException, duckdb.ConnectionException) as error:
            if not any(marker in str(error) for marker in LOCK_MARKERS) or time.monotonic() > deadline:
                raise
        log.debug("warehouse %s is locked by a writer; retrying in %.2f s", path, delay)
        time.sleep(delay)  # the writer's batch is short: back off briefly and try again
        delay = min(delay * 2, 0.25)
