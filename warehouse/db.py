"""The warehouse, a DuckDB file or a DuckLake (location.py): numbered migrations for tables, the analysis views
re-applied when they change, short write connections, readers that wait out writers.

DuckDB allows one writing process per file, and while it writes, other processes cannot even open the file
read-only. So writers keep their connection short (a load holds one for at most a second of batches:
load_pipeline.py), and readers retry briefly on the lock. A lake has no such lock: every host writes it in its own
transactions, and a commit that conflicts with another host's is tried again (loads.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import TypeVar

import duckdb

from . import documents, extensions, lake_schema
from .location import LAKE_ALIAS, Warehouse, WarehouseError, scrub

# A warehouse as callers name it: a Warehouse, or the path of a file.
Where = Warehouse | Path | str
T = TypeVar("T")

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "migrations"
VIEWS_SCRIPT = "analysis_views.sql"
# "different configuration": a connection of this process not opened here (another library) holds the file.
# DuckDB's words for a file another process holds. Not a bare "lock": a damaged file's "in block at location" has it,
# and made every open of one wait for the whole timeout.
LOCK_MARKERS = ("Could not set lock", "Conflicting", "being used", "different configuration")
# A writer waits this long for another process (an analyst's open session, the Dagster UI) to let go of the
# file, saying so after NOTICE_AFTER seconds and every NOTICE_EVERY seconds after that.
WRITE_WAIT = 1800.0
NOTICE_AFTER, NOTICE_EVERY = 2.0, 60.0
# DuckDB 2.0's compressed-materialization optimizer raises a false "Conversion Error" on some LEFT JOIN + filter
# + GROUP BY + ORDER BY queries: every connection fitsync opens runs without it until a fixed release.
WORKAROUNDS = ("SET disabled_optimizers = 'compressed_materialization'",)
# DuckDB scans the Arrow tables fitsync registers (Polars frames, staged batches) through Arrow's Acero, which warns
# on stderr for every buffer not aligned to its liking ("An input buffer was poorly aligned…": dozens of lines in a
# sync's progress display). Polars' buffers are aligned for the element type, which is what x86-64 and ARM64 need;
# Arrow reads this once, before its first scan.
os.environ.setdefault("ACERO_ALIGNMENT_HANDLING", "ignore")
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


def migrate(where: Where, timeout: float | None = None) -> int:
    """Create or upgrade the schema; returns the version now in force. `timeout`: how long to wait for another
    process's hold on a file (default WRITE_WAIT).

    Tables change only through numbered migrations, applied once each (a new lake starts from the result of the
    first ones: lake_schema.py). The views hold no data, so their one script is re-applied whenever its checksum
    differs from the recorded one: every warehouse gets the views of the fitsync that opens it, without a migration
    per changed view.
    """
    warehouse = Warehouse.of(where)
    with writing(warehouse, WRITE_WAIT if timeout is None else timeout) as conn:
        return _migrate(conn, warehouse)


def _migrate(conn: duckdb.DuckDBPyConnection, warehouse: Warehouse) -> int:
    """migrate, on a write connection just opened; the version now in force."""
    if warehouse.is_lake:  # a lake's checks cost catalog round trips: all in one snapshot, nothing more if current
        current = lake_schema.in_force(conn, {v for v, _, _ in migration_scripts()}, VIEWS_SCRIPT, views_script()[1])
        if current is not None:
            return current
        if not lake_schema.has_migrations(conn):
            lake_schema.create_baseline(conn, LAKE_ALIAS, migration_scripts())
    else:
        for file in (warehouse.path, Path(f"{warehouse.path}.wal")):  # training data, GPS tracks: the owner's only
            with contextlib.suppress(OSError):
                file.chmod(0o600)
        for statement in BOOKKEEPING:
            conn.execute(statement)
    done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    for version, name, sql in migration_scripts():
        if version not in done:
            _apply_once(conn, version, name, sql)
    sql, checksum = views_script()
    if conn.execute("SELECT checksum FROM schema_views WHERE name = ?", [VIEWS_SCRIPT]).fetchall() != [(checksum,)]:
        _in_transaction(
            conn,
            lake_schema.views_for_lake(sql) if warehouse.is_lake else sql,
            ("DELETE FROM schema_views WHERE name = ?", [VIEWS_SCRIPT]),
            ("INSERT INTO schema_views (name, checksum) VALUES (?, ?)", [VIEWS_SCRIPT, checksum]),
        )
    if not documents.views_current(conn):  # a lake commits each change: only when they are missing or moved
        transaction(conn, lambda: documents.create_view(conn))  # two hosts of a lake may do this at once
    from . import streams  # with Polars: only where the schema is made, not for every read (`fitsync query`)

    if not streams.views_current(conn):
        transaction(conn, lambda: streams.create_view(conn))
    return conn.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0]


def exists(where: Where) -> bool:
    """Whether the warehouse was ever created: its file, or the lake's tables in its catalog."""
    warehouse = Warehouse.of(where)
    if not warehouse.is_lake:
        return warehouse.path.exists()
    try:
        with reading(warehouse) as conn:
            return lake_schema.has_migrations(conn)
    except LakeMissing:
        return False


def holds_athlete(where: Where, athlete_id: int, timeout: float = 30.0) -> bool:
    """Whether the warehouse has any of the athlete's activities (a missing one, or one without the table, has none):
    one moved aside and rebuilt by another athlete's run has the tables, and none of this athlete's rows."""
    if not exists(where):
        return False
    with reading(where, timeout=timeout) as conn:
        if not conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'activities'").fetchall()[0][0]:
            return False
        return bool(
            conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM activities WHERE athlete_id = ? LIMIT 1)", [athlete_id]
            ).fetchall()[0][0]
        )


def athletes_held(where: Where) -> list[int]:
    """The athletes with activities in the warehouse, in id order (its schema current: ensure_schema first)."""
    with reading(where) as conn:
        return [r[0] for r in conn.execute("SELECT DISTINCT athlete_id FROM activities ORDER BY 1").fetchall()]


def ensure_schema(where: Where) -> None:
    """Migrate a warehouse older than this fitsync: its tables, or its views (read first: a current one takes no
    write lock). Checking the tables only, a report after an upgrade that changed a view read the view the last sync
    had left: an analysis fixed in the new version, shown as the old one computed it."""
    if not exists(where) or not schema_current(where):
        migrate(where)


def schema_current(where: Where) -> bool:
    """Whether the warehouse has every migration of this fitsync and its views (a read)."""
    with reading(where) as conn:
        return is_current(conn)


def is_current(conn: duckdb.DuckDBPyConnection) -> bool:
    """`schema_current` on a connection already open (`fitsync query` checks on the one its statement uses)."""
    if not lake_schema.has_migrations(conn):
        return False
    try:  # no `?` parameter: DuckDB 1.5.5 loses a Ctrl-C that lands while it binds one (1 time in 3 here; 2.0.1
        # does not), and a stop lost in `fitsync query`'s check let the statement after it run as if none was pressed
        views = conn.execute(f"SELECT checksum FROM schema_views WHERE name = '{VIEWS_SCRIPT}'").fetchall()
    except duckdb.CatalogException:  # a warehouse of the first release, from before the views were recorded
        return False
    version = conn.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0]
    return (version or 0) >= max(v for v, _, _ in migration_scripts()) and views == [(views_script()[1],)]


def _apply_once(conn: duckdb.DuckDBPyConnection, version: int, name: str, sql: str) -> None:
    """A migration and the row recording it, all or nothing; skipped if another host (of a lake) applied it first."""

    def work() -> None:
        if conn.execute("SELECT count(*) FROM schema_migrations WHERE version = ?", [version]).fetchall()[0][0]:
            return
        conn.execute(sql)
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])

    transaction(conn, work)


def _in_transaction(conn: duckdb.DuckDBPyConnection, script: str, *records: tuple[str, list[object]]) -> None:
    """The script and the rows recording it, all or nothing."""

    def work() -> None:
        conn.execute(script)
        for record, values in records:
            conn.execute(record, values)

    transaction(conn, work)


# Two hosts writing one lake commit optimistically: the second commit touching what the first changed fails, and is
# tried again from the start (its work re-reads the table), up to COMMIT_ATTEMPTS times with a random pause.
CONFLICT_MARKER = "Failed to commit DuckLake transaction"
COMMIT_ATTEMPTS = 10
CONFLICT_PAUSE = (0.05, 0.5)


def transaction(conn: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> T:
    """`work` in one transaction, committed; on a lake, a commit that conflicts with another host's is retried."""
    attempt = 1
    while True:
        conn.execute("BEGIN")
        try:
            result = work()
            conn.execute("COMMIT")
            return result
        except duckdb.TransactionException as error:
            _roll_back(conn)
            if CONFLICT_MARKER not in str(error) or attempt >= COMMIT_ATTEMPTS:
                raise
            log.info("a concurrent commit to the lake came first (attempt %d): trying again", attempt)
            time.sleep(random.uniform(*CONFLICT_PAUSE) * attempt)
            attempt += 1
        except BaseException:
            _roll_back(conn)
            raise


def _roll_back(conn: duckdb.DuckDBPyConnection) -> None:
    """Roll back what is still open (a failed COMMIT has already rolled back)."""
    with contextlib.suppress(duckdb.TransactionException):
        conn.execute("ROLLBACK")


@contextlib.contextmanager
def writing(
    where: Where, timeout: float = WRITE_WAIT, notice: Callable[[str], None] | None = None, migrated: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A write connection for one unit of work; waits while another process holds the file, telling `notice`
    (default: the log) why and for how long. `migrated`: the schema made current first (migrate), on this connection:
    a load that opened one connection for that and another for its rows paid two opens and two checkpoints."""
    warehouse = Warehouse.of(where)
    if not warehouse.is_lake:  # a new warehouse's folder
        warehouse.path.parent.mkdir(parents=True, exist_ok=True)
    with _turns(warehouse).write(timeout) if not warehouse.is_lake else contextlib.nullcontext():
        conn = _open(warehouse, read_only=False, timeout=timeout, notice=notice)
        try:
            if migrated:
                _migrate(conn, warehouse)
            yield conn
        finally:
            conn.close()


@contextlib.contextmanager
def reading(
    where: Where, timeout: float = 30.0, notice: Callable[[str], None] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection; a writer holding the lock makes it wait and retry, not fail (said to `notice` once the
    wait passes NOTICE_AFTER: a person at `fitsync query` hears why nothing happens)."""
    warehouse = Warehouse.of(where)
    with _turns(warehouse).read(timeout) if not warehouse.is_lake else contextlib.nullcontext():
        conn = _open(warehouse, read_only=True, timeout=timeout, notice=notice)
        try:
            yield conn
        finally:
            conn.close()


class _Turns:
    """Readers and writers of one file within this process take turns, writers first (a lake's do not need to).

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


def _turns(warehouse: Warehouse) -> _Turns:
    with _TURNS_LOCK:
        return _TURNS.setdefault(str(warehouse.path.resolve()), _Turns())


class LakeUnavailable(WarehouseError):
    """The lake's catalog or its extensions could not be reached (the message carries no password)."""


class LakeMissing(LakeUnavailable):
    """The catalog answers but holds no lake yet (opened read-only: nothing is created)."""


# DuckDB's words when a read-only attach finds no lake in the catalog, and when another host created the lake's
# tables in the catalog at the same moment as this one.
NO_LAKE_YET = "creating a new DuckLake is explicitly disabled"
NEW_LAKE_RACE = "already exists"


def _open(
    warehouse: Warehouse, read_only: bool, timeout: float, notice: Callable[[str], None] | None = None
) -> duckdb.DuckDBPyConnection:
    if warehouse.is_lake:
        conn = _attach_lake(warehouse, read_only)
    else:
        conn = _open_file(warehouse.path, read_only, timeout, notice)
    for statement in WORKAROUNDS:
        conn.execute(statement)
    return conn


# Per process, lake and mode, one DuckDB instance holds the lake attached: loading the extensions and reading the
# catalog cost ≈ 0.7 s, which every unit of work would pay again. Each unit gets a cursor of it: a connection of its
# own (its transactions, temp tables and registered frames), closed when the unit ends. A forked child makes its own.
_LAKES: dict[tuple[int, str, bool], duckdb.DuckDBPyConnection] = {}
_LAKES_LOCK = threading.Lock()


def _attach_lake(warehouse: Warehouse, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection with the lake attached as `lake` and in use: its tables and views unqualified, as a file's."""
    key = (os.getpid(), warehouse.target, read_only)
    for attempt in (1, 2):
        with _LAKES_LOCK:
            instance = _LAKES.get(key)
            if instance is None:
                instance = _LAKES[key] = _lake_instance(warehouse, read_only)
        try:
            cursor = instance.cursor()
            cursor.execute(f"USE {LAKE_ALIAS}")
            return cursor
        except duckdb.Error as error:  # the catalog's server restarted under the kept instance: attach afresh
            with _LAKES_LOCK:
                _LAKES.pop(key, None)
            instance.close()
            if attempt == 2:
                raise LakeUnavailable(
                    f"the warehouse lake {warehouse} cannot be used: {scrub(error, warehouse)}"
                ) from None
    raise AssertionError("unreachable")


def _lake_instance(warehouse: Warehouse, read_only: bool) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the extensions loaded from their packages and the lake attached."""
    conn = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
    try:
        extensions.load(conn, *extensions.LAKE)
        options = [f"DATA_PATH {_literal(warehouse.data_path)}"] if warehouse.data_path else []
        if read_only:
            options.append("READ_ONLY")
        listed = f" ({', '.join(options)})" if options else ""
        for attempt in range(1, 4):
            try:
                conn.execute(f"ATTACH {_literal(warehouse.target)} AS {LAKE_ALIAS}{listed}")
                break
            except duckdb.Error as error:  # two hosts creating one lake: the second finds the first's next time
                if NEW_LAKE_RACE not in str(error) or attempt == 3:
                    raise
                time.sleep(random.uniform(*CONFLICT_PAUSE))
    except (duckdb.Error, extensions.ExtensionMissing) as error:
        conn.close()
        if NO_LAKE_YET in str(error):
            raise LakeMissing(f"no warehouse lake at {warehouse} yet: run `fitsync sync` first") from None
        raise LakeUnavailable(f"the warehouse lake {warehouse} cannot be opened: {scrub(error, warehouse)}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _open_file(
    path: Path, read_only: bool, timeout: float, notice: Callable[[str], None] | None = None
) -> duckdb.DuckDBPyConnection:
    started = time.monotonic()
    delay, next_notice = 0.01, NOTICE_AFTER
    while True:
        try:
            conn = duckdb.connect(str(path), read_only=True) if read_only else _attach_for_writing(path)
            break
        except (duckdb.IOException, duckdb.ConnectionException) as error:
            from . import convert

            if convert.is_newer_file(error):
                raise convert.NewerFile(
                    f"the warehouse {path} was written by a newer DuckDB than this fitsync's ({duckdb.__version__}): "
                    f"convert it once with `{convert.command_line(path)}` (the old file is kept beside it)"
                ) from None
            waited = time.monotonic() - started
            if not any(marker in str(error) for marker in LOCK_MARKERS):
                raise
            holder = _holder(str(error))
            if waited > timeout:
                if read_only:
                    raise WarehouseBusy(
                        f"the warehouse {path} stayed locked by {holder}, which writes it, for {timeout:.0f} s: run "
                        "this again once it has finished (a sync's load takes seconds), or stop that process"
                    ) from None
                raise
            if (notice is not None or not read_only) and waited >= next_notice:
                next_notice += NOTICE_EVERY
                if read_only:
                    said = (
                        f"the warehouse {path} is being written by {holder} (a sync's load takes seconds): waiting "
                        f"for it (giving up after {timeout:.0f} s)"
                    )
                else:
                    said = (
                        f"the warehouse {path} is open in {holder}: waiting for it to close "
                        f"(waited {waited:.0f} s, giving up after {timeout / 60:.0f} min); close that session or "
                        "its `fitsync query` to let this write go on"
                    )
                (notice or log.warning)(said)
        log.debug("warehouse %s is locked by a writer; retrying in %.2f s", path, delay)
        time.sleep(delay)  # the writer's batch is short: back off briefly and try again
        delay = min(delay * 2, 0.25)
    return conn


class WarehouseBusy(TimeoutError):
    """A reader waited its whole timeout for another process writing the warehouse (said as one line)."""


HELD_BY = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def _holder(message: str) -> str:
    """Who holds the file's lock, from DuckDB's words: "process 9851 (python3.11)"."""
    found = HELD_BY.search(message)
    return f"process {found['pid']} ({Path(found['program']).name})" if found else "another process"


def _attach_for_writing(path: Path | str) -> duckdb.DuckDBPyConnection:
    """A write connection with ROW_GROUP_SIZE: an in-memory instance that attaches the file under the name a plain
    `duckdb.connect(path)` gives it (its stem), and uses it, so unqualified names and the views resolve as for readers."""
    alias = Path(path).stem
    if alias.lower() in RESERVED_ALIASES:
        alias = f"{alias}_warehouse"
    conn = duckdb.connect(":memory:")
    try:
        quoted = '"' + alias.replace('"', '""') + '"'
        # a literal: DuckDB 1.5 takes no parameter in ATTACH
        conn.execute(f"ATTACH {_literal(str(path))} AS {quoted} (ROW_GROUP_SIZE {ROW_GROUP_SIZE})")
        conn.execute(f"USE {quoted}")
    except BaseException:
        conn.close()
        raise
    return conn
