"""Ctrl-C at a terminal: the terminal sends SIGINT to the whole foreground process group, not just to fitsync. The
sync's runs start no helper process in that group (Dagster's compute-log `tail -F` and `watch_orphans` once did: each
printed a KeyboardInterrupt traceback before fitsync's line, and some outlived the command), so the stop prints no
traceback and leaves no process behind."""

from __future__ import annotations

import signal

import pytest
from dagster import DagsterInstance, DagsterRunStatus

from fitsync.sync import progress

from ..processes import foreground
from ..sandbox_harness import Harness, wait_until
from .conftest import Connect, add_athlete, record_many
from .test_cli import FITSYNC, env_for

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


def test_ctrl_c_to_the_whole_process_group_prints_no_traceback_and_leaves_nothing(
    sb: Harness, connect: Connect
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 30, oldest_days=30)
    home = connect(aid)
    with (
        sb.settings(fault_latency_ms=150),
        foreground(  # a few seconds of details left when Ctrl-C comes
            home.config.home, command=[*FITSYNC, "sync"], env={**env_for(home), "COLUMNS": "120"}
        ) as job,
    ):
        process = job.process

        def detailing() -> bool:
            assert process.poll() is None
            return 0 < progress.count_needing(home.store, aid, "detail") < len(ids) - 3

        wait_until(detailing, 60, "the sync to be detailing activities", interval=0.05)
        during = job.members()
        job.send(signal.SIGINT)  # what the terminal does on Ctrl-C
        shown = job.wait_for_exit(30)
        code = job.close()
    assert during == {process.pid}, f"helper processes in the run's group: {during - {process.pid}}"
    assert code == 130, shown
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown, shown
    assert "Stopped by Ctrl-C (SIGINT)" in shown, shown
    assert job.members() == set()  # nothing of the run is left behind
    # Dagster's record of the run says a person stopped it, not that it failed (its UI would show a failure)
    with DagsterInstance.from_config(str(home.config.home / "dagster")) as instance:  # the command's own
        runs = instance.get_runs()
    assert [run.status for run in runs] == [DagsterRunStatus.CANCELED], runs
    assert runs[0].tags.get("fitsync/stopped") == "true"
