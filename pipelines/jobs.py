"""Jobs and the nightly schedule: one run per connected athlete (partition)."""

from dagster import (
    AssetSelection,
    DagsterInvalidDefinitionError,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    define_asset_job,
    schedule,
)

from fitsync.client.config import Config, ConfigError
from fitsync.resources.partitions import ATHLETES
from fitsync.sync.cadence import REFRESH_TAG

FULL_RECONCILIATION_WEEKDAY = 6  # Sunday

sync_job = define_asset_job(
    "sync_athlete",
    selection=AssetSelection.groups("fetch", "warehouse"),
    description="Fetch an athlete's new and changed data and load it into the warehouse.",
)


def build_nightly_sync(
    cron: str = Config.default("nightly_schedule"), timezone: str = Config.default("nightly_timezone")
) -> ScheduleDefinition:
    def nightly_sync(context: ScheduleEvaluationContext) -> SkipReason | list[RunRequest]:
        """Fan out over the athlete partitions: a plain ScheduleDefinition would launch without a partition key."""
        athletes = context.instance.get_dynamic_partitions(ATHLETES)
        if not athletes:
            return SkipReason("no connected athletes: run `fitsync connect`")
        when = context.scheduled_execution_time
        # Once a week the listing is complete, to find deletions and privacy changes no webhook announced. Every
        # run refreshes what changes slowly (stats, zones, starred segments), whenever a manual sync last did.
        full = when.weekday() == FULL_RECONCILIATION_WEEKDAY
        # One key per tick, not per day: a schedule that runs twice a day must not find its second tick's keys used.
        return [
            RunRequest(
                run_key=f"nightly-{when:%Y-%m-%dT%H%M}-{a}",
                partition_key=a,
                tags={REFRESH_TAG: "all"},
                run_config={"ops": {"activities": {"config": {"full": full}}}},
            )
            for a in athletes
        ]

    try:  # Running as soon as the daemon starts: a nightly sync nobody switched on is no sync at all.
        return schedule(
            name="nightly_sync",
            job=sync_job,
            cron_schedule=cron,
            execution_timezone=timezone,
            default_status=DefaultScheduleStatus.RUNNING,
        )(nightly_sync)
    except DagsterInvalidDefinitionError:
        raise ConfigError(
            f"nightly_schedule {cron!r} is not a cron expression: five fields, minute hour day month "
            'weekday, e.g. "30 3 * * *" (set it in config.toml or FITSYNC_NIGHTLY_SCHEDULE)'
        ) from None


def _configured() -> ScheduleDefinition:
    """From config.toml / FITSYNC_NIGHTLY_*, read when the code location loads."""
    config = Config.load()
    return build_nightly_sync(config.nightly_schedule, config.nightly_timezone)


nightly_sync = _configured()
