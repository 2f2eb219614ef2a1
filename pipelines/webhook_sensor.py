"""The `webhook_events` sensor: inbox events → re-pull and delete runs per athlete, purges on revocation."""

import time

from dagster import (AddDynamicPartitionsRequest, DefaultSensorStatus, DeleteDynamicPartitionsRequest, RunRequest,
                     SensorEvaluationContext, SensorResult, SkipReason, define_asset_job, sensor)

from fitsync.assets.common import WEBHOOK_TAG, athletes_partitions

from . import webhook_inbox
from .purge import purge_athlete_job
from .resources import FitsyncApi
from .webhook_plan import load_deleted, plan, save_deleted

webhook_refresh_job = define_asset_job(
    "webhook_refresh",
    selection=["activities", "activity_details", "activity_zones", "segments", "warehouse"],
    partitions_def=athletes_partitions,
    description="Re-pull or delete the activities named by webhook events, and load them.",
)


@sensor(jobs=[webhook_refresh_job, purge_athlete_job], minimum_interval_seconds=5,
        default_status=DefaultSensorStatus.RUNNING)
def webhook_events(context: SensorEvaluationContext, fitsync_api: FitsyncApi):  # type: ignore[no-untyped-def]
    """Reads the inbox after its cursor and launches one run per athlete with work, keyed by the events."""
    client = fitsync_api.client()
    events = webhook_inbox.events_after(client.store, int(context.cursor or 0))
    if not events:
        return SkipReason("no new webhook events")
    with client.store.transaction() as conn:
        before = load_deleted(conn)
        after = dict(before)
        work = plan(events, after)
        save_deleted(conn, before, after)
        for athlete_id in work.deauthorized:
            # Stop every sync at once: no tokens, no partition; the purge run removes the data.
            conn.execute("UPDATE athletes SET status = 'disconnected', access_token = NULL, refresh_token = NULL, "
                         "status_reason = 'deauthorized by the athlete', updated_at = ? WHERE athlete_id = ?",
                         (time.time(), athlete_id))
    partitions = set(context.instance.get_dynamic_partitions(athletes_partitions.name))
    runs = [
        RunRequest(run_key=w.run_key, job_name=webhook_refresh_job.name, partition_key=str(w.athlete_id),
                   tags={WEBHOOK_TAG: "webhook"},
                   run_config={"ops": {"activities": {"config": {"activity_ids": sorted(w.refresh),
                                                                 "deleted_ids": sorted(w.delete)}}}})
        for w in work.work.values() if w.refresh or w.delete
    ]
    runs += [RunRequest(run_key=f"deauthorized-{inbox_id}", job_name=purge_athlete_job.name,
                        run_config={"ops": {"purge_athlete_data": {"config": {"athlete_id": athlete_id}}}})
             for athlete_id, inbox_id in work.deauthorized.items()]
    new = sorted({str(w.athlete_id) for w in work.work.values()} - partitions)
    gone = sorted({str(a) for a in work.deauthorized} & partitions)
    requests = ([AddDynamicPartitionsRequest(athletes_partitions.name, new)] if new else []) + \
               ([DeleteDynamicPartitionsRequest(athletes_partitions.name, gone)] if gone else [])
    webhook_inbox.mark_processed(client.store, [e.inbox_id for e in events])
    context.log.info(f"{len(events)} events → {len(runs)} runs ({len(work.ignored)} about deleted activities ignored)")
    return SensorResult(run_requests=runs, cursor=str(events[-1].inbox_id), dynamic_partitions_requests=requests)
