"""`fitsync sync` leaves an athlete to the Dagster daemon's run already syncing it, and says so; a run of a fitsync
command (which carries its process id and holds the athlete lock instead) does not count as the daemon's."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterRunStatus, job, op

from fitsync.pipelines import daemon_runs, instance
from fitsync.pipelines.definitions import build_definitions
from fitsync.pipelines.sync_runner import PARTITION_TAG, PID_TAG, resources_for

from ..sandbox_harness import Harness
from .conftest import Connect, add_athlete, record_many
from .test_nothing_new import fitsync_sync

pytestmark = pytest.mark.postgres_slow


def test_sync_leaves_an_athlete_to_the_daemons_run_in_flight(
    sb: Harness, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=5)
    home = connect(aid)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the home's own instance, as the command opens it
    runs = instance.instance(home.config.home)
    job = build_definitions(resources_for(home.config)).resolve_job_def("sync_athlete")
    daemons = runs.create_run_for_job(job, status=DagsterRunStatus.STARTED, tags={PARTITION_TAG: str(aid)})
    before = sb.counters()["requests"]

    left = fitsync_sync(home, "--full")  # --full: no "nothing new" check, a run would start at once

    assert left.returncode == 0, left.stderr
    assert f"athlete {aid} is being synced by Dagster run {daemons.run_id[:8]} (sync_athlete" in left.stderr
    assert sb.counters()["requests"] == before  # not one call: the daemon's run is doing it
    # nothing loaded: at most the new warehouse's schema, made while Dagster loaded (cli/sync._schema_meanwhile)
    assert not home.warehouse.exists() or home.query("SELECT count(*) FROM activities") == [(0,)]

    runs.report_run_failed(daemons, "ended for the test")
    dead_cli_run = runs.create_run_for_job(
        job, status=DagsterRunStatus.STARTED, tags={PARTITION_TAG: str(aid), PID_TAG: "4711"}
    )  # a command's run on another host: its lock answers for it, and here nobody holds it
    done = fitsync_sync(home, "--full")
    assert done.returncode == 0, done.stderr
    assert "being synced" not in done.stderr and home.query("SELECT count(*) FROM activities") == [(3,)]
    assert runs.get_run_by_id(dead_cli_run.run_id) is not None


@op
def nothing() -> None:
    pass


@job
def trivial() -> None:
    nothing()


def test_a_daemon_run_in_flight_is_read_without_dagster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `fitsync sync` reads before its first steps (pipelines/daemon_runs.py): Dagster's own run storage."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert daemon_runs.in_flight(tmp_path, 7) is False  # no instance yet: no run
    runs = instance.instance(tmp_path)
    assert daemon_runs.in_flight(tmp_path, 7) is False
    runs.create_run_for_job(trivial, status=DagsterRunStatus.STARTED, tags={PARTITION_TAG: "7", PID_TAG: "4711"})
    assert daemon_runs.in_flight(tmp_path, 7) is False  # a command's run: its athlete lock answers for it
    daemons = runs.create_run_for_job(trivial, status=DagsterRunStatus.STARTED, tags={PARTITION_TAG: "7"})
    assert daemon_runs.in_flight(tmp_path, 7) is True
    assert daemon_runs.in_flight(tmp_path, 8) is False  # another athlete's partition
    runs.report_run_failed(daemons, "ended for the test")
    assert daemon_runs.in_flight(tmp_path, 7) is False
    settings = tmp_path / "dagster" / "dagster.yaml"
    settings.write_text(settings.read_text() + "storage:\n  postgres:\n    postgres_url: postgresql://elsewhere/db\n")
    assert daemon_runs.in_flight(tmp_path, 7) is None  # runs kept elsewhere: Dagster is asked, as a run always does
