"""Dagster's SQLite storage for the runs fitsync's commands execute in their own process: the same files and tables as
Dagster's own (`dagster dev` and the daemon read them with theirs), their connections kept open.

Dagster's SQLite storage opens a new SQLAlchemy engine and SQLite connection for every event it stores, and closes
both after: a sync's ≈ 100 events each paid the engine's set-up, a statement compiled anew (the compiled-statement
cache belongs to the engine) and the checkpoint SQLite runs when the last connection to a WAL database closes. Here
each database keeps one engine whose pool keeps its connections; every commit is as durable as before (a committed
event is in the WAL, fsynced), and other processes read the files as before (WAL: readers do not block the writer).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import ALEMBIC_SCRIPTS_LOCATION
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

# The run databases a process keeps open besides the index (one per run: a command runs one or a few).
KEPT_RUNS = 4
# Engines another process opened: a forked child must neither use nor close them (closing would checkpoint the
# parent's databases from the child); kept referenced so that no garbage collection closes them either.
_INHERITED: list[Engine] = []


class _Engines:
    """One engine per database file, for this process: a forked child opens its own."""

    def __init__(self, keep: int) -> None:
        self.keep, self.pid = keep, os.getpid()
        self.engines: OrderedDict[str, Engine] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, url: str, timeout: float | None = None) -> Engine:
        with self.lock:
            if self.pid != os.getpid():
                _INHERITED.extend(self.engines.values())
                self.engines.clear()
                self.pid = os.getpid()
            engine = self.engines.get(url)
            if engine is not None:
                self.engines.move_to_end(url)
                return engine
            args: dict[str, Any] = {"check_same_thread": False}  # the pool hands a connection to one thread at a time
            if timeout is not None:
                args["timeout"] = timeout
            # one connection kept; more at once (threads) are opened and closed as Dagster's own are
            engine = create_engine(url, poolclass=QueuePool, pool_size=1, max_overflow=-1, connect_args=args)
            self.engines[url] = engine
            while len(self.engines) > self.keep:
                _, oldest = self.engines.popitem(last=False)
                oldest.dispose()
            return engine

    def close(self) -> None:
        """Close this process's connections: SQLite checkpoints each WAL into its database and removes it."""
        with self.lock:
            if self.pid == os.getpid():
                for engine in self.engines.values():
                    engine.dispose()
            self.engines.clear()


def _script_directory_read_once() -> None:
    """Dagster asks alembic for its migrations' head each time it opens or creates a SQLite database's storage (the
    runs table, the event log's index, the schedules: five times for a new instance), and alembic reads and compiles
    every migration script to answer (20–50 ms each on 2 slow cores). Dagster's own scripts do not change while a
    process runs: their directory is read once per process. Any other script location is read as alembic always
    does."""
    read = ScriptDirectory.from_config
    kept: dict[str, ScriptDirectory] = {}
    lock = threading.Lock()

    def from_config(config: AlembicConfig) -> ScriptDirectory:
        if config.get_main_option("script_location") != ALEMBIC_SCRIPTS_LOCATION:
            return read(config)
        with lock:
            if ALEMBIC_SCRIPTS_LOCATION not in kept:
                kept[ALEMBIC_SCRIPTS_LOCATION] = read(config)
                kept[ALEMBIC_SCRIPTS_LOCATION].revision_map.get_current_head()  # its revisions loaded, under the lock
            return kept[ALEMBIC_SCRIPTS_LOCATION]

    ScriptDirectory.from_config = from_config  # type: ignore[method-assign]  # (a classmethod of alembic's, replaced)


_script_directory_read_once()

# Per process: the index and KEPT_RUNS run databases; the runs table (of a few homes, in tests).
_EVENT_ENGINES, _RUN_ENGINES = _Engines(KEPT_RUNS + 1), _Engines(4)
atexit.register(_EVENT_ENGINES.close)
atexit.register(_RUN_ENGINES.close)


class KeptEventLogStorage(SqliteEventLogStorage):
    """The event log of each run (a database per run) and the index, each on a kept engine."""

    _engines = _EVENT_ENGINES

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._tables = set[str]()
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engines.get(self.conn_string_for_shard(shard), SQLITE_BUSY_TIMEOUT_SECONDS)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def wipe(self) -> None:
        """Dagster deletes the databases' files: their connections go first."""
        self._engines.close()
        super().wipe()

    def has_table(self, table_name: str) -> bool:
        """Asked for a few times per run, some while the index is in use: a table found stays found (migrations only
        add tables), so it is asked of SQLite once."""
        if table_name in self._tables:
            return True
        engine = self._engines.get(self.conn_string_for_shard(INDEX_SHARD_NAME), SQLITE_BUSY_TIMEOUT_SECONDS)
        with engine.connect() as conn:
            found = bool(engine.dialect.has_table(conn, table_name))
        if found:
            self._tables.add(table_name)
        return found


class KeptRunStorage(SqliteRunStorage):
    """The runs' table, on a kept engine."""

    _engines = _RUN_ENGINES

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        engine = self._engines.get(self._conn_string)
        with engine.connect() as conn, conn.begin():
            yield conn


class KeptSqliteStorage(DagsterSqliteStorage):
    """DagsterSqliteStorage (the default `storage` of a dagster.yaml) with its run and event databases kept open."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = KeptRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = KeptEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()  # what DagsterSqliteStorage.__init__ ends with

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> KeptSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)
