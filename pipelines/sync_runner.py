"""Running fitsync's jobs headless (the CLI, the demo, tests) against one Config, on a persistent instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dagster import (AddDynamicPartitionsRequest, DagsterInstance, DeleteDynamicPartitionsRequest, RunRequest,
                     RunsFilter, build_sensor_context)
from dagster_duckdb import DuckDBResource

from fitsync.assets.common import athletes_partitions
from fitsync.client.config import Config
from fitsync.client.state_store import StateStore

from .definitions import build_definitions
from .resources import FitsyncApi
from .webhook_sensor import webhook_events


RUN_KEY_TAG = "dagster/run_key"


@dataclass(frozen=True)
class SyncOutcome:
    athlete_id: int | None
    success: bool
    metadata: dict[str, dict[str, Any]]
    error: str | None = None

    def api_calls(self) -> int:
        return sum(int(m.get("api_calls", 0)) for m in self.metadata.values())


def resources_for(config: Config, max_wait_seconds: float = 900.0) -> dict[str, Any]:
    return {
        "fitsync_api": FitsyncApi(base_url=config.base_url, auth_url=config.auth_url,
                                  client_id=str(config.client_id or ""),
                                  client_secret=config.client_secret.reveal(), home=str(config.home),
                                  max_wait_seconds=max_wait_seconds),
        "duckdb_warehouse": DuckDBResource(database=str(config.home / "warehouse.duckdb")),
    }


def run_job(config: Config, instance: DagsterInstance, job_name: str, *, partition_key: str | None = None,
            run_config: dict[str, Any] | None = None, tags: dict[str, str] | None = None,
            max_wait_seconds: float = 900.0, log_level: str = "WARNING") -> SyncOutcome:
    job = build_definitions(resources_for(config, max_wait_seconds)).resolve_job_def(job_name)
    result = job.execute_in_process(
        run_config={**(run_config or {}), "loggers": {"console": {"config": {"log_level": log_level}}}},
        instance=instance, partition_key=partition_key, tags=tags, raise_on_error=False,
    )
    metadata = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        metadata[mat.asset_key.to_user_string()] = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return SyncOutcome(int(partition_key) if partition_key else None, result.success, metadata)


def sync_athlete(config: Config, athlete_id: int, instance: DagsterInstance, *, full: bool = False,
                 max_wait_seconds: float = 900.0, log_level: str = "WARNING") -> SyncOutcome:
    """One run of the sync job; an athlete who is not connected gets no run (and no partition)."""
    with StateStore(config.state_path).reading() as conn:
        row = conn.execute("SELECT status FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    if row is None or row["status"] != "connected":
        status = row["status"] if row else "not connected"
        return SyncOutcome(athlete_id, False, {}, f"athlete {athlete_id} is {status}: run `fitsync connect`")
    instance.add_dynamic_partitions(athletes_partitions.name, [str(athlete_id)])
    return run_job(config, instance, "sync_athlete", partition_key=str(athlete_id),
                   run_config={"ops": {"activities": {"config": {"full": full}}}},
                   tags={"fitsync/trigger": "cli"}, max_wait_seconds=max_wait_seconds, log_level=log_level)


def tick_webhook_sensor(config: Config, instance: DagsterInstance, cursor: str | None) -> tuple[list[RunRequest], str | None]:
    """One evaluation of the shipped `webhook_events` sensor, as the daemon would do it."""
    with build_sensor_context(instance=instance, cursor=cursor, resources=resources_for(config)) as context:
        result = webhook_events(context)
    if not hasattr(result, "run_requests"):
        return [], cursor
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        elif isinstance(request, DeleteDynamicPartitionsRequest):
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return list(result.run_requests or []), result.cursor


def execute_run_request(config: Config, instance: DagsterInstance, request: RunRequest) -> SyncOutcome | None:
    """Launch like the daemon does: a run key Dagster has already seen launches nothing."""
    if request.run_key and instance.get_runs(RunsFilter(tags={RUN_KEY_TAG: request.run_key}), limit=1):
        return None
    return run_job(config, instance, request.job_name or "webhook_refresh", partition_key=request.partition_key,
                   run_config=dict(request.run_config),
                   tags={**request.tags, **({RUN_KEY_TAG: request.run_key} if request.run_key else {})})
