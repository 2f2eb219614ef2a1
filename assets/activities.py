"""The activity listing: incremental with an overlap window, or a full reconciliation that finds deletions.

Listing with only `after` returns activities oldest first, and `after` compares start times: an activity
uploaded late with an older start time would be missed by `after=<last sync>`, so each incremental
listing starts OVERLAP before the newest start seen. Uploads backdated further (an import of old files) are
caught by the athlete's stats: when the service counts more activities than fitsync knows — more than it did
right after the last full listing — the listing goes all the way back. A full listing also runs when the last
one is older than progress.FULL_EVERY, so deletions no webhook announced are found whoever schedules the syncs.
The step is sync/listing_step.py, the listing sync/listing.py; what a full one implies for deletions,
sync/reconciliation.py.
"""

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, FIRST, SyncConfig, adopted, dagster_metadata, metered, step_of
from fitsync.sync import progress
from fitsync.sync.deletion_proof import Proof, land_deletions, prove_deletions
from fitsync.sync.listing_step import list_and_reconcile
from fitsync.webhooks import inbox as webhook_inbox

from .athlete import athlete_stats, athlete_zones


@asset(
    partitions_def=athletes_partitions,
    pool=API_POOL,
    group_name="fetch",
    kinds={"api"},
    deps=[athlete_stats, athlete_zones],
    op_tags=FIRST,
)
def activities(context: AssetExecutionContext, config: SyncConfig, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Activity summaries; new or changed activities are queued for their detail (and zones).

    After the athlete's stats and zones: the summaries are loaded with the zones, so the heart-rate loads (LTHR from
    the zones) are right as soon as the listing is in."""
    if config.activity_ids or config.deleted_ids:
        return _webhook_work(
            context, fitsync_api.client(), athlete_id(context.partition_key), config, fitsync_api.max_wait_seconds
        )
    done = adopted(context, "activities")  # `fitsync sync` listed before the run
    listed = (
        done.listed
        if done is not None and done.listed is not None
        else list_and_reconcile(
            step_of(context, fitsync_api),
            fitsync_api.client(),
            fitsync_api.warehouse(),
            full=config.full,
            allow_shrink=config.allow_shrink,
        )
    )
    if listed.refusal:
        raise Failure(description=listed.refusal, metadata=listed.refusal_metadata)
    return MaterializeResult(metadata=dagster_metadata(listed.metadata))


def _webhook_work(
    context: AssetExecutionContext, client, aid: int, config: SyncConfig, max_wait: float
) -> MaterializeResult:
    """Queue the re-pulls; delete only what the service confirms is gone (deletion_proof.py)."""
    with metered(client) as meter:
        session = client.athlete(aid, max_wait=min(max_wait, 60.0), priority="webhook")
        proof = prove_deletions(session, list(config.deleted_ids)) if config.deleted_ids else Proof()
        with client.store.transaction() as conn:
            progress.request_refresh(conn, aid, sorted(set(config.activity_ids) | set(proof.still_there)))
            land_deletions(conn, aid, proof)
            for activity_id, verdict, reason in proof.verdicts():
                webhook_inbox.set_delete_verdict(conn, aid, activity_id, verdict, reason)
        for activity_id, reason in {**proof.still_there, **proof.unproven}.items():
            context.log.warning(f"athlete {aid}: a delete event for activity {activity_id} was not acted on: {reason}")
            meter.notes.append(f"delete event for {activity_id} not acted on: {reason}")
        return MaterializeResult(
            metadata=meter.metadata(
                mode="webhook",
                queued=len(set(config.activity_ids) | set(proof.still_there)),
                deleted=len(proof.deleted),
                delete_events_rejected=len(proof.still_there) + len(proof.unproven),
            )
        )
