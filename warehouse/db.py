"""The DuckDB warehouse file: numbered migrations for tables, the analysis views re-applied when they change,
short write connections, readers that wait out writers.

DuckDB allows one writing process, and while it writes, other processes cannot even open the file
read-only. So writers keep their connection short (a load holds one for at most a second of batches:
load_pipeline.py), and readers retry briefly on the lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import duckdb

from . import documents

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "migrations"
VIEWS_SCRIPT = "analysis_views.sql"
# "different configuration": a connection of this process not opened here (another library) holds the file.
LOCK_MARKERS = ("lock", "Conflicting", "being used", "different configuration")
# A writer waits this long for another process (an analyst's open session, the Dagster UI) to let go of the
# file, saying so after NOTICE_AFTER seconds and every NOTICE_EVERY seconds after that.
WRITE_WAIT = 1800.0
NOTICE_AFTER, NOTICE_EVERY = 2.0, 60.0
# DuckDB 2.0's compressed-materialization optimizer raises a false "Conversion Error" on some LEFT JOIN + filter
# + GROUP BY + ORDER BY queries: every connection fitsync opens runs without it until a fixed release.
WORKAROUNDS = ("SET disabled_optimizers = 'compressed_materialization'",)
# Rows per row group for what fitsync writes (DuckDB's default: 122,880). Each checkpoint writes a table's new rows as
# row groups of their own, and a later checkpoint merges small ones with their neighbours, rewriting up to three whole
# row groups in memory: with the default, a load's peak memory grew with the widest table until it held ≈ 370k rows
# (bench load, the efforts' JSON already gone: 1.18× from 10k to 100k activities, 1.41× at 250k; now 1.08× and 1.17×).
# Smaller groups bound that rewrite; the analysis views ran as fast (bench query), a full scan of a table is ≈ 2×
# slower. DuckDB does not store the size in the file, so every writer attaches with it.
ROW_GROUP_SIZE = 16_384
# The in-memory instance a writer attaches the file to names its own database "memory" (and has "system", "temp").
RESERVED_ALIASES = ("memory", "system", "temp", "main")


# The tables recording what migrate applied (the migrations comment on them): created before the first migration.
BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, "
    "applied_at TIMESTAMPTZ DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS schema_views (name VARCHAR PRIMARY KEY, checksum VARCHAR NOT NULL, "
    "applied_at TIMESTAMPTZ DEFAULT now())",
)


def migration_scripts() -> list[tuple[int, str, str]]:
    folder = resources.files(__package__).joinpath(MIGRATIONS_PACKAGE)
    scripts = sorted((p for p in folder.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
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
        for file in (Path(path), Path(f"{path}.wal")):  # training data and GPS tracks: the owner's only
            with contextlib.suppress(OSError):
                file.chmod(0o600)
        for statement in BOOKKEEPING:
            conn.execute(statement)
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, sql in migration_scripts():
            if version not in done:
                _in_transaction(
                    conn, sql, "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name]
                )
        sql, checksum = views_script()
        if conn.execute("SELECT checksum FROM schema_views WHERE name = ?", [VIEWS_SCRIPT]).fetchall() != [(checksum,)]:
            _in_transaction(
                conn,
                sql,
                "INSERT OR REPLACE INTO schema_views (name, checksum) VALUES (?, ?)",
                [VIEWS_SCRIPT, checksum],
            )
        documents.create_view(conn, path)
        return conn.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0]


def ensure_schema(warehouse_path: Path | str) -> None:
    """Migrate a warehouse older than this fitsync (read first: a current one takes no write lock)."""
    latest = max(v for v, _, _ in migration_scripts())
    with reading(warehouse_path) as conn:
        has_table = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
        ).fetchall()[0][0]
        current = conn.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0] if has_table else 0
    if (current or 0) < latest:
        migrate(warehouse_path)


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
def writing(
    path: Path | str, timeout: float = WRITE_WAIT, notice: Callable[[str], None] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A write connection for one unit of work; waits while another process holds the file, telling `notice`
    (default: the log) why and for how long."""
    with _turns(path).write(timeout):
        conn = _open(path, read_only=False, timeout=timeout, notice=notice)
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


def _open(
    path: Path | str, read_only: bool, timeout: float, notice: Callable[[str], None] | None = None
) -> duckdb.DuckDBPyConnection:
    started = time.monotonic()
    delay, next_notice = 0.01, NOTICE_AFTER
    while True:
        try:
            conn = duckdb.connect(str(path), read_only=True) if read_only else _attach_for_writing(path)
            break
        except (duckdb.IOException, duckdb.ConnectionException) as error:
            waited = time.monotonic() - started
            if not any(marker in str(error) for marker in LOCK_MARKERS) or waited > timeout:
                raise
            if not read_only and waited >= next_notice:
                next_notice += NOTICE_EVERY
                holder = (
                    str(error).rsplit("Conflicting lock is held in", 1)[-1].strip()
                    if "Conflicting" in str(error)
                    else "another process"
                )
                (notice or log.warning)(
                    f"the warehouse {path} is open in another process ({holder}): waiting for it to close "
                    f"(waited {waited:.0f} s, giving up after {timeout / 60:.0f} min); close that session or its "
                    "`fitsync query` to let the sync load"
                )
        log.debug("warehouse %s is locked by a writer; retrying in %.2f s", path, delay)
        time.sleep(delay)  # the writer's batch is short: back off briefly and try again
        delay = min(delay * 2, 0.25)
    for statement in WORKAROUNDS:
        conn.execute(statement)
    return conn


def _attach_for_writing(path: Path | str) -> duckdb.DuckDBPyConnection:
    """A write connection with ROW_GROUP_SIZE: an in-memory instance that attaches the file under the name a plain
    `duckdb.connect(path)` gives it (its stem), and uses it, so unqualified names and the views resolve as for readers."""
    alias = Path(path).stem
    if alias.lower() in RESERVED_ALIASES:
        alias = f"{alias}_warehouse"
    conn = duckdb.connect(":memory:")
    try:
        quoted = '"' + alias.replace('"', '""') + '"'
        conn.execute(f"ATTACH ? AS {quoted} (ROW_GROUP_SIZE {ROW_GROUP_SIZE})", [str(path)])
        conn.execute(f"USE {quoted}")
    except BaseException:
        conn.close()
        raise
    return conn
