"""The fitsync Dagster code location (`dagster dev -w workspace.yaml`)."""

import warnings
from typing import Any

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    Definitions,
    in_process_executor,
    load_asset_checks_from_modules,
    load_assets_from_modules,
)

from fitsync.assets import activities, activity_details, activity_streams, analysis, athlete, segments, warehouse_load
from fitsync.pipelines.jobs import nightly_sync, sync_job
from fitsync.pipelines.lake_maintenance import lake_maintenance_job, lake_maintenance_schedule
from fitsync.pipelines.purge import purge_athlete_job
from fitsync.pipelines.webhook_sensor import webhook_events, webhook_refresh_job
from fitsync.resources.api import FitsyncApi

# Dagster 1.13 re-creates a sensor with its jobs bound to the resources and passes `owners` along itself, which
# warns that the parameter is beta although fitsync never sets it. Only that warning is silenced.
warnings.filterwarnings("ignore", message=r"Parameter `owners` of initializer `SensorDefinition.__init__`")

ASSET_MODULES = [athlete, activities, activity_details, segments, activity_streams, warehouse_load, analysis]


def default_resources() -> dict[str, Any]:
    """From FITSYNC_* variables; unset ones fall back to FITSYNC_HOME/config.toml and the real service."""
    return {"fitsync_api": FitsyncApi.from_environment()}


# The analysis assets follow each warehouse load (their automation conditions); this sensor evaluates them and is
# on by default, where Dagster's own default automation sensor would start switched off.
analysis_automation = AutomationConditionSensorDefinition(
    "analysis_automation",
    target=AssetSelection.groups(analysis.GROUP),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Materializes the analysis assets after each warehouse load.",
)


def build_definitions(resources: dict[str, Any] | None = None) -> Definitions:
    return Definitions(
        assets=load_assets_from_modules(ASSET_MODULES),
        asset_checks=load_asset_checks_from_modules(ASSET_MODULES),
        jobs=[sync_job, webhook_refresh_job, purge_athlete_job, analysis.analysis_job, lake_maintenance_job],
        schedules=[nightly_sync, lake_maintenance_schedule],
        sensors=[webhook_events, analysis_automation],
        resources=resources or default_resources(),
        # Runs the daemon launches execute as `fitsync sync` does: every step in the run's one process. A process
        # per step cost seconds of start-up each (a webhook refresh's five steps took over a minute on a busy
        # host, all of it added to the event's latency); the steps share one rate budget, so parallel steps
        # fetched no faster. Concurrency pools still apply.
        executor=in_process_executor,
    )


defs = build_definitions()
