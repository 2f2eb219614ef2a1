"""Running the sync assets headless (the CLI, the demo, tests): one Dagster run per athlete partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dagster import DagsterInstance, materialize
from dagster_duckdb import DuckDBResource

from fitsync.client.config import Config

from .definitions import ASSET_MODULES, defs
from .resources import FitsyncApi


@dataclass(frozen=True)
class SyncOutcome:
    athlete_id: int
    success: bool
    metadata: dict[str, dict[str, Any]]

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


def sync_athlete(config: Config, athlete_id: int, instance: DagsterInstance, *, full: bool = False,
                 activity_ids: list[int] | None = None, max_wait_seconds: float = 900.0,
                 log_level: str = "WARNING") -> SyncOutcome:
    instance.add_dynamic_partitions("athletes", [str(athlete_id)])
    assets = [a for a in defs.assets or [] if not isinstance(a, type)]
    checks = list(defs.asset_checks or [])
    result = materialize(
        [*assets, *checks],
        partition_key=str(athlete_id),
        instance=instance,
        resources=resources_for(config, max_wait_seconds),
        run_config={"ops": {"activities": {"config": {"full": full, "activity_ids": activity_ids or []}}},
                    "loggers": {"console": {"config": {"log_level": log_level}}}},
        raise_on_error=False,
        tags={"fitsync/trigger": "webhook" if activity_ids else "cli"},
    )
    metadata = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        metadata[mat.asset_key.to_user_string()] = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return SyncOutcome(athlete_id, result.success, metadata)


__all__ = ["sync_athlete", "resources_for", "SyncOutcome", "ASSET_MODULES"]
