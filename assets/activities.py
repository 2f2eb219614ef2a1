"""The activity listing: incremental with an overlap window, or a full reconciliation that finds deletions.

Listing with only `after` returns activities oldest first, and `after` compares start times: an activity
uploaded late with an older start time would be missed by `after=<last sync>`, so each incremental
listing starts OVERLAP before the newest start seen. Uploads backdated further (an import of old files) are
caught by the athlete's stats: when the service counts more activities than fitsync knows — more than it did
right after the last full listing — the listing goes all the way back. A full listing also runs when the last
one is older than progress.FULL_EVERY, so deletions no webhook announced are found whoever schedules the syncs.
The listing is sync/listing.py; what a full one implies for deletions, sync/reconciliation.py.
"""

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, FIRST, Meter, SyncConfig, metered, priority
from fitsync.sync import listing, progress
from fitsync.sync.deletion_proof import Proof, land_deletions, prove_deletions
from fitsync.sync.reconciliation import Reconciliation, reconcile, record
from fitsync.warehouse import db
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
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    store = client.store
    if config.activity_ids or config.deleted_ids:
        return _webhook_work(context, client, aid, config, fitsync_api.max_wait_seconds)
    plan = listing.plan(store, aid, config.full, lambda: db.holds_athlete(fitsync_api.warehouse(), aid))
    if plan.warning:
        context.log.warning(plan.warning)
    if plan.why_full and not config.full and plan.cursor is not None:
        context.log.info(f"athlete {aid}: full listing because {plan.why_full}")
    session = client.athlete(
        aid, bulk=True, max_wait=fitsync_api.max_wait_seconds, priority=priority(context, store, aid)
    )
    with metered(client) as meter:
        found = listing.list_activities(store, session, aid, plan.after, int(plan.cursor or 0), meter)
        if found.complete and not plan.full and (why := listing.stats_gap_reason(store, aid)):
            # The stats count activities no listing showed: list all the way back, in this run.
            context.log.info(f"athlete {aid}: full listing because {why}")
            plan = plan.all_the_way_back(why)
            found = found.followed_by(listing.list_activities(store, session, aid, None, found.newest, meter))
        verdict = reconcile(store, session, aid, found, plan.full, config.allow_shrink)
        record(store, aid, plan, found, verdict)
        _say_reconciliation(context, aid, verdict, meter)
        if verdict.refusal:
            raise Failure(
                description=f"athlete {aid}: {verdict.refusal}. Nothing was deleted. If the athlete really removed "
                f"them, run `fitsync sync --full --allow-shrink --athlete {aid}`.",
                metadata={"listed": len(found.seen), "would_delete": len(verdict.missing)},
            )
        if found.complete and plan.full:
            listing.remember_stats_gap(store, aid)
        return MaterializeResult(
            metadata=meter.metadata(
                mode="full reconciliation" if plan.full else "incremental",
                full_because=MetadataValue.text(plan.why_full or ""),
                listed=found.totals.seen,
                new=found.totals.new,
                changed=found.totals.changed,
                reconciled_deletions=len(verdict.deleted),
                missing_not_deleted=len(verdict.proof.still_there) + len(verdict.proof.unproven),
                listing_after=MetadataValue.text(str(plan.after)),
                complete=found.complete,
            )
        )


def _say_reconciliation(context: AssetExecutionContext, aid: int, verdict: Reconciliation, meter: Meter) -> None:
    """Warn of the activities the listing lacks: kept (the service did not confirm them gone) or deleted."""
    if kept := verdict.kept:
        context.log.warning(
            f"athlete {aid}: the listing lacks {len(kept)} activities the service did not confirm "
            f"gone; nothing of them is deleted: " + ", ".join(f"{a} ({r})" for a, r in sorted(kept.items())[:10])
        )
        meter.notes.append(
            f"{len(kept)} activities missing from the listing are kept: the service did not confirm them gone"
        )
    if deleted := verdict.deleted:
        context.log.warning(
            f"athlete {aid}: {len(deleted)} activities no longer listed are deleted (kept with "
            f"their last JSON in deleted_activities): {', '.join(map(str, deleted[:20]))}"
            + (" …" if len(deleted) > 20 else "")
        )


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
