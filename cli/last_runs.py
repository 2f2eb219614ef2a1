"""The newest Dagster run of each athlete's partition, for `fitsync status`, read without creating anything.

Fitsync's own instance (runs in SQLite under DAGSTER_HOME or FITSYNC_HOME/dagster) is read straight from its run
storage, read-only: loading Dagster to ask it takes seconds and would create the instance's folder on a new home.
An instance configured with other storage (PostgreSQL: docs/deployment.md) is asked through Dagster.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import yaml

from fitsync.pipelines.status import FAILED_TAG, PARTIAL_TAG, iso
from fitsync.state.store import read_only_connection

PARTITION_TAG = "dagster/partition"
# Set by `fitsync sync` and `demo` on a run a stop signal (Ctrl-C, SIGTERM) ended (mark_stopped): it resumes next time.
STOPPED_TAG = "fitsync/stopped"
NEWEST_RUN = (
    "SELECT r.run_id, r.pipeline_name, r.status, r.start_time, r.end_time, s.value, f.value, p.value FROM runs r "
    "JOIN run_tags t ON t.run_id = r.run_id LEFT JOIN run_tags s ON s.run_id = r.run_id AND s.key = ? "
    "LEFT JOIN run_tags f ON f.run_id = r.run_id AND f.key = ? "
    "LEFT JOIN run_tags p ON p.run_id = r.run_id AND p.key = ? "
    "WHERE t.key = ? AND t.value = ? ORDER BY r.id DESC LIMIT 1"
)


def mark_stopped(instance: Any, run_id: str) -> None:
    """A run a stop signal ended: tagged (`fitsync status` says "stopped") and, when it failed for it, canceled in
    Dagster's own record, so that its UI shows a stop a person asked for, not a failure."""
    from dagster import DagsterRunStatus

    with contextlib.suppress(Exception):  # a run stopped before Dagster recorded it has nothing to mark
        instance.add_run_tags(run_id, {STOPPED_TAG: "true"})
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status == DagsterRunStatus.FAILURE:
            instance.report_run_canceled(run, "stopped by Ctrl-C or SIGTERM: the next sync continues where it stopped")


def dagster_home(fitsync_home: Path) -> Path:
    """The instance fitsync's commands use (pipelines/instance.py), without creating it."""
    return Path(os.environ.get("DAGSTER_HOME") or fitsync_home / "dagster")


def last_runs(fitsync_home: Path, athlete_ids: list[int]) -> dict[int, dict[str, Any]]:
    home = dagster_home(fitsync_home)
    if not (home / "dagster.yaml").is_file() or not athlete_ids:
        return {}  # no instance yet: no runs
    settings = yaml.safe_load((home / "dagster.yaml").read_text()) or {}
    if any(key in settings for key in ("storage", "run_storage")):
        return _asked_of_dagster(home, athlete_ids)
    runs = home / "history" / "runs.db"
    if not runs.is_file():
        return {}
    conn = read_only_connection(runs, wait=5.0)
    try:
        rows = {
            a: conn.execute(NEWEST_RUN, (STOPPED_TAG, FAILED_TAG, PARTIAL_TAG, PARTITION_TAG, str(a))).fetchone()
            for a in athlete_ids
        }
    finally:
        conn.close()
    return {
        athlete_id: _run(run_id, job, status, start, end, bool(stopped), bool(failed), bool(partial))
        for athlete_id, row in rows.items()
        if row is not None
        for run_id, job, status, start, end, stopped, failed, partial in [row]
    }


def _asked_of_dagster(home: Path, athlete_ids: list[int]) -> dict[int, dict[str, Any]]:
    from dagster import DagsterInstance, RunsFilter

    instance = DagsterInstance.from_config(str(home))
    out = {}
    for athlete_id in athlete_ids:
        records = instance.get_run_records(RunsFilter(tags={PARTITION_TAG: str(athlete_id)}), limit=1)
        if records:
            run = records[0]
            out[athlete_id] = _run(
                run.dagster_run.run_id,
                run.dagster_run.job_name,
                run.dagster_run.status.value,
                run.start_time,
                run.end_time,
                STOPPED_TAG in run.dagster_run.tags,
                FAILED_TAG in run.dagster_run.tags,
                PARTIAL_TAG in run.dagster_run.tags,
            )
    return out


def _run(
    run_id: str,
    job: str,
    status: str,
    start: float | None,
    end: float | None,
    stopped: bool = False,
    failed: bool = False,
    partial: bool = False,
) -> dict[str, Any]:
    shown = (
        "STOPPED"
        if stopped and status != "SUCCESS"
        else "FAILURE"
        if failed
        else "PARTIAL"
        if partial and status == "SUCCESS"
        else status
    )
    return {"job": job, "status": shown, "started_at": iso(start), "ended_at": iso(end), "run_id": run_id}
