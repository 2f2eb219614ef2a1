"""The fitsync Dagster code location (`dagster dev -w workspace.yaml`)."""

from __future__ import annotations

from dagster import Definitions, EnvVar, load_asset_checks_from_modules, load_assets_from_modules
from dagster_duckdb import DuckDBResource

from fitsync.assets import activities, activity_details, athlete, segments, warehouse_load

from .jobs import nightly_sync, sync_job
from .resources import FitsyncApi, warehouse_path

ASSET_MODULES = [athlete, activities, activity_details, segments, warehouse_load]

defs = Definitions(
    assets=load_assets_from_modules(ASSET_MODULES),
    asset_checks=load_asset_checks_from_modules(ASSET_MODULES),
    jobs=[sync_job],
    schedules=[nightly_sync],
    resources={
        # Unset variables fall back to FITSYNC_HOME/config.toml and the real service's addresses.
        "fitsync_api": FitsyncApi(
            base_url=EnvVar("FITSYNC_BASE_URL").get_value("") or "",
            auth_url=EnvVar("FITSYNC_AUTH_URL").get_value("") or "",
            client_id=EnvVar("FITSYNC_CLIENT_ID").get_value("") or "",
            client_secret=EnvVar("FITSYNC_CLIENT_SECRET").get_value("") or "",
            home=EnvVar("FITSYNC_HOME").get_value("") or "",
        ),
        "duckdb_warehouse": DuckDBResource(database=warehouse_path(EnvVar("FITSYNC_HOME").get_value("") or "")),
    },
)
