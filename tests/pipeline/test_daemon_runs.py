"""`fitsync sync` leaves an athlete to the Dagster daemon's run already syncing it, and says so; a run of a fitsync
command (which carries its process id and holds the athlete lock instead) does not count as the daemon's."""

from __future__ import annotations

import pytest
from dagster import DagsterRunStatus

from fitsync.pipelines import instance
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
