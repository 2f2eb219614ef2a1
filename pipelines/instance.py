"""The Dagster instance fitsync's commands use: DAGSTER_HOME, or FITSYNC_HOME/dagster when it is unset.

Without a persistent DAGSTER_HOME Dagster forgets runs, cursors and partitions on exit, so the CLI never
runs on an ephemeral instance.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef  # public API has no way to override one setting
from dagster._serdes import ConfigurableClassData

from fitsync.resources.partitions import ATHLETES
from fitsync.resources.run import API_POOL, DUCKDB_POOL

DAGSTER_YAML = resources.files(__package__).joinpath("dagster.yaml").read_text()


def ensure_home(fitsync_home: Path) -> Path:
    home = Path(os.environ.get("DAGSTER_HOME") or fitsync_home / "dagster")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


# The runs fitsync's commands execute in their own process keep no step stdout/stderr: Dagster's compute-log capture
# mirrors each captured stream back through a `tail -F` process and a `watch_orphans` Python process per stream
# (dagster/_core/execution/compute_logs.py). Those helpers share the command's process group, so Ctrl-C at a terminal
# reached them too (a KeyboardInterrupt traceback from each watcher before fitsync's own line), and a process that
# ran many runs was left with some of them. The runs' events (every log line, every materialization) stay in the
# instance's event log; the daemon and the webserver read dagster.yaml as it is, with its compute-log manager.
NO_CAPTURE = {
    "module": "dagster._core.storage.noop_compute_log_manager",
    "class": "NoOpComputeLogManager",
    "config": {},
}


# Dagster's default storage (SQLite files under DAGSTER_HOME), and the same with its connections kept open
# (dagster_storage.py): a PostgreSQL storage, or any other a dagster.yaml names, is used as it is.
STOCK_SQLITE = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")
KEPT_SQLITE = ("fitsync.pipelines.dagster_storage", "KeptSqliteStorage")


def instance(fitsync_home: Path, lake: bool = False) -> DagsterInstance:
    """The instance, its pools limited for a warehouse file or for a lake (`lake`)."""
    home = ensure_home(fitsync_home)
    ref = InstanceRef.from_dir(str(home), overrides={"compute_logs": NO_CAPTURE})
    if ref.storage_data is not None and ref.storage_data[:2] == STOCK_SQLITE:
        ref = ref._replace(storage_data=ConfigurableClassData(*KEPT_SQLITE, ref.storage_data.config_yaml))
    dagster_instance = DagsterInstance.from_ref(ref)
    set_pool_limits(dagster_instance, lake)
    return dagster_instance


# Steps calling the service at once, and loads at once: a DuckDB file takes one writing process; a lake takes every
# host's loads in their own transactions (the limit only bounds the catalog's load).
POOL_LIMITS = {API_POOL: 4, DUCKDB_POOL: 1}
LAKE_POOL_LIMITS = {API_POOL: 4, DUCKDB_POOL: 8}


def set_pool_limits(dagster_instance: DagsterInstance, lake: bool = False) -> None:
    """Each pool's limit where none is set, or where it is the other kind of warehouse's default (fitsync set it):
    a limit an operator chose (`dagster instance concurrency set`) stands, whichever host's command runs next."""
    wanted, other = (LAKE_POOL_LIMITS, POOL_LIMITS) if lake else (POOL_LIMITS, LAKE_POOL_LIMITS)
    storage = dagster_instance.event_log_storage
    try:
        for pool, limit in wanted.items():
            now = storage.get_concurrency_info(pool).slot_count if pool in storage.get_concurrency_keys() else None
            if now is None or (now == other[pool] and now != limit):
                storage.set_concurrency_slots(pool, limit)
    except Exception:  # noqa: BLE001 (storage without pool support: the dagster.yaml default applies)
        pass


def add_athlete_partition(fitsync_home: Path, athlete_id: int) -> None:
    instance(fitsync_home).add_dynamic_partitions(ATHLETES, [str(athlete_id)])
