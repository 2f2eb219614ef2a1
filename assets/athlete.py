"""The athlete's profile (+gear), stats and zones: one call each, snapshots kept per sync date (sync/athlete_bundles.py)."""

import functools

from dagster import AssetExecutionContext, MaterializeResult, asset

from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athletes_partitions
from fitsync.resources.run import API_POOL, adopted, dagster_metadata, step_of
from fitsync.sync import athlete_bundles
from fitsync.warehouse import db


def _fetch_one(context: AssetExecutionContext, api: FitsyncApi, bundle: str) -> MaterializeResult:
    if (done := adopted(context, bundle)) is not None:  # `fitsync sync` did it before the run
        return MaterializeResult(metadata=dagster_metadata(done.metadata))
    step = step_of(context, api)
    holds = functools.partial(db.holds_athlete, api.warehouse(), step.aid)
    return MaterializeResult(metadata=dagster_metadata(athlete_bundles.fetch(step, api.client(), bundle, holds)))


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def athlete(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """The athlete's profile and gear (detailed with profile:read_all)."""
    return _fetch_one(context, fitsync_api, "athlete")


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def athlete_stats(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Recent, year-to-date and all-time totals, as a snapshot per sync date."""
    return _fetch_one(context, fitsync_api, "athlete_stats")


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def athlete_zones(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Heart-rate and power zone definitions with recent time in zone, as a snapshot per sync date."""
    return _fetch_one(context, fitsync_api, "athlete_zones")
