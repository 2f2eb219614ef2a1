"""The lake's daily housekeeping (warehouse/lake_maintenance.py) as a Dagster job: merged files, forgotten snapshots
and deleted files counted in the run's log. A warehouse file needs none: the job says so and does nothing."""

from dagster import DefaultScheduleStatus, OpExecutionContext, ScheduleDefinition, job, op

from fitsync.resources.api import FitsyncApi
from fitsync.warehouse import lake_maintenance

# After the nightly sync's default 03:30 UTC, when no load is likely to be running (one that is gets retried).
CRON = "0 5 * * *"


@op
def maintain_lake(context: OpExecutionContext, fitsync_api: FitsyncApi) -> None:
    warehouse = fitsync_api.warehouse()
    if not warehouse.is_lake:
        context.log.info("the warehouse is a DuckDB file: no lake to maintain")
        return
    keep_days = fitsync_api.config().lake_keep_days
    done = lake_maintenance.maintain(warehouse, keep_days)
    context.log.info(
        f"lake {warehouse}: {done.inlined_tables_flushed} tables' inlined rows written to Parquet, data files "
        f"{done.data_files_before} → {done.data_files_after}, delete files "
        f"{done.delete_files_before} → {done.delete_files_after}; {done.snapshots_expired} snapshots older than "
        f"{keep_days:g} days forgotten, {done.files_deleted} files only they read deleted"
    )


@job(
    description="Write a lake's inlined rows to Parquet, merge its small files, forget its snapshots older than lake_keep_days, delete unread files."
)
def lake_maintenance_job() -> None:
    maintain_lake()


lake_maintenance_schedule = ScheduleDefinition(
    name="lake_maintenance",
    job=lake_maintenance_job,
    cron_schedule=CRON,
    default_status=DefaultScheduleStatus.RUNNING,
)
