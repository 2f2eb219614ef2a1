"""Jobs and the nightly schedule: one run per connected athlete (partition)."""


from dagster import (AssetSelection, DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, SkipReason,
                     define_asset_job, schedule)

from fitsync.assets.cadence import REFRESH_TAG
from fitsync.assets.common import athletes_partitions

FULL_RECONCILIATION_WEEKDAY = 6  # Sunday

sync_job = define_asset_job(
    "sync_athlete",
    selection=AssetSelection.groups("fetch", "warehouse"),
    description="Fetch an athlete's new and changed data and load it into the warehouse.",
)


# Running as soon as `dagster dev` (with its daemon) starts: a nightly sync nobody switched on is no sync at all.
@schedule(job=sync_job, cron_schedule="30 3 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING)
def nightly_sync(context: ScheduleEvaluationContext):  # type: ignore[no-untyped-def]
    """Fan out over the athlete partitions: a plain ScheduleDefinition would launch without a partition key."""
    athletes = context.instance.get_dynamic_partitions(athletes_partitions.name)
    if not athletes:
        return SkipReason("no connected athletes: run `fitsync connect`")
    when = context.scheduled_execution_time
    day = when.strftime("%Y-%m-%d")
    # Once a week the listing is complete, to find deletions and privacy changes no webhook announced. Every night
    # refreshes what changes slowly (stats, zones, starred segments), whenever a manual sync last did.
    full = when.weekday() == FULL_RECONCILIATION_WEEKDAY
    return [RunRequest(run_key=f"nightly-{day}-{a}", partition_key=a, tags={REFRESH_TAG: "all"},
                       run_config={"ops": {"activities": {"config": {"full": full}}}}) for a in athletes]
