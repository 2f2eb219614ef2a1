"""The Dagster instance fitsync's commands open (pipelines/instance.py): Dagster's SQLite files, written as Dagster
writes them, with their connections kept open (pipelines/dagster_storage.py)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from dagster import AssetKey, DagsterInstance, DagsterRunStatus, asset, materialize
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from sqlalchemy import event
from sqlalchemy.engine import Engine

from fitsync.pipelines import dagster_storage
from fitsync.pipelines.instance import instance
from fitsync.pipelines.sync_runner import off_the_main_thread

from .. import processes
from ..processes import REPO


@asset
def first() -> int:
    return 1


@asset
def second(first: int) -> int:
    return first + 1


def _stock(home: Path) -> DagsterInstance:
    """The instance `dagster dev` and the daemon open on the same folder: Dagster's own storage."""
    stock = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    assert type(stock.event_log_storage) is SqliteEventLogStorage
    return stock


def test_a_commands_runs_are_dagsters_files_and_open_each_database_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    opened: list[str] = []

    def connected(dbapi_connection: object, record: object) -> None:
        opened.append(Path(dbapi_connection.execute("PRAGMA database_list").fetchall()[0][2]).name)  # type: ignore[attr-defined]

    ours = instance(tmp_path)
    assert isinstance(ours.event_log_storage, dagster_storage.KeptEventLogStorage)
    event.listen(Engine, "connect", connected)
    try:
        runs = [off_the_main_thread(lambda: materialize([first, second], instance=ours)) for _ in range(2)]
    finally:
        event.remove(Engine, "connect", connected)
    stored = sum(len(ours.all_logs(run.run_id)) for run in runs)
    # Dagster's own storage opens a connection for every event (and more for the index): here each database once,
    # and once more while Dagster creates its tables
    assert stored > 40 and max(Counter(opened).values()) <= 2 and len(opened) <= 8, (stored, opened)
    stock = _stock(tmp_path / "dagster")
    for run in runs:
        assert stock.get_run_by_id(run.run_id).status == DagsterRunStatus.SUCCESS
        assert len(stock.all_logs(run.run_id)) == len(ours.all_logs(run.run_id))
    assert len(stock.fetch_materializations(AssetKey("second"), limit=10).records) == 2


def test_a_command_that_ends_leaves_each_database_whole_without_its_wal(tmp_path: Path) -> None:
    """Kept connections close when the process exits: SQLite moves each WAL into its database and removes it."""
    script = (
        "import sys; from pathlib import Path; from dagster import materialize\n"
        "from fitsync.pipelines.instance import instance\n"
        "from tests.pipeline.test_dagster_storage import first, second\n"
        "print(materialize([first, second], instance=instance(Path(sys.argv[1]))).run_id)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "DAGSTER_HOME": str(tmp_path / "dagster"), "PYTHONPATH": str(REPO)}
    done = processes.run(
        [sys.executable, "-c", script, str(tmp_path)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    assert sorted(p.name for p in (tmp_path / "dagster").rglob("*.db")) == sorted(
        ["runs.db", "index.db", f"{run_id}.db", "schedules.db"]
    )
    assert not list((tmp_path / "dagster").rglob("*-wal")) and not list((tmp_path / "dagster").rglob("*-shm"))
    assert _stock(tmp_path / "dagster").get_run_by_id(run_id).status == DagsterRunStatus.SUCCESS


def test_a_forked_child_opens_its_own_connections_and_leaves_its_parents_open(tmp_path: Path) -> None:
    engines = dagster_storage._Engines(keep=2)
    url = f"sqlite:///{tmp_path / 'x.db'}"
    parents = engines.get(url)
    with parents.connect() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    assert engines.get(url) is parents
    engines.pid = -1  # as a forked child finds it: made by another process
    childs = engines.get(url)
    assert childs is not parents and parents in dagster_storage._INHERITED
    assert parents.pool.checkedin() == 1  # not closed: the parent's connection is the parent's
    dagster_storage._INHERITED.remove(parents)
    for other in (tmp_path / "y.db", tmp_path / "z.db"):  # beyond `keep`: the oldest is closed
        engines.get(f"sqlite:///{other}")
    assert url not in engines.engines
    engines.close()
    parents.dispose()


def test_a_wiped_event_log_starts_anew_on_new_connections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    ours = instance(tmp_path)
    before = off_the_main_thread(lambda: materialize([first, second], instance=ours))
    ours.event_log_storage.wipe()  # Dagster deletes each run's database file
    assert not (tmp_path / "dagster" / "history" / "runs" / f"{before.run_id}.db").exists()
    ours.report_engine_event("after the wipe", ours.get_run_by_id(before.run_id))  # a database made anew
    after = off_the_main_thread(lambda: materialize([first, second], instance=ours))
    stock = _stock(tmp_path / "dagster")
    assert [e.message for e in stock.all_logs(before.run_id)] == ["after the wipe"]
    assert len(stock.fetch_materializations(AssetKey("second"), limit=10).records) == 1
    assert stock.all_logs(after.run_id)


def test_dagsters_migration_scripts_are_read_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each instance opened asks alembic for the head revision three times (runs, event index, schedules): the
    scripts are read at most once in this process, and every database is at that head."""
    reads = Counter[str]()
    load = ScriptDirectory._load_revisions

    def counted(self: ScriptDirectory) -> object:
        reads[self.dir] += 1
        return load(self)

    monkeypatch.setattr(ScriptDirectory, "_load_revisions", counted)
    opened = [instance(tmp_path / name) for name in ("a", "b")]
    assert sum(reads.values()) <= 1  # read anew each time: 10 for these two new instances
    for each in opened:
        for version in (each.run_storage.alembic_version(), each.event_log_storage.alembic_version()):
            assert version[0] is not None and version[0] == version[1]
