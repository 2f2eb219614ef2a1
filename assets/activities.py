"""The activity listing: incremental with an overlap window, or a full reconciliation that finds deletions.

Listing with only `after` returns activities oldest first, and `after` compares start times: an activity
uploaded late with an older start time would be missed by `after=<last sync>`, so each incremental
listing starts OVERLAP before the newest start seen.
"""


import time

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import UnexpectedShape
from fitsync.pipelines.resources import FitsyncApi

from fitsync.pipelines import webhook_inbox

from . import landing, sync_state
from .deletion_proof import Proof, prove_deletions
from .common import API_POOL, SyncConfig, athlete_id, athletes_partitions, metered

OVERLAP_SECONDS = 14 * 86400
# The cursor never moves past now plus this: a clock error or a hand-typed date next year must not hide every later
# upload from incremental listings (such activities are loaded all the same).
CLOCK_SKEW_SECONDS = 3600
# A full listing that would delete more than this share of the known activities (and more than SHRINK_MIN of
# them), or that is empty while activities are known, is not believed: nothing is deleted without --allow-shrink.
SHRINK_SHARE, SHRINK_MIN = 0.2, 50


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def activities(context: AssetExecutionContext, config: SyncConfig, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Activity summaries; new or changed activities are queued for their detail (and zones)."""
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    store = client.store
    if config.activity_ids or config.deleted_ids:
        return _webhook_work(context, client, aid, config, fitsync_api.max_wait_seconds)
    cursor = sync_state.get_cursor(store, aid, sync_state.LISTED_AFTER)
    full = config.full or cursor is None
    after = None if full else max(0, int(cursor) - OVERLAP_SECONDS)  # type: ignore[arg-type]
    session = client.athlete(aid, bulk=True, max_wait=fitsync_api.max_wait_seconds)
    seen: set[int] = set()
    totals = sync_state.ListingOutcome(0, 0, 0)
    newest = int(cursor) if cursor else 0
    complete = True
    with metered(client) as meter:
        try:
            page: list = []
            for summary in session.activities(after=after):
                page.append(summary)
                if len(page) == 200:
                    totals = _record_page(store, aid, page, totals)
                    page = []
                seen.add(summary.id)
                started = sync_state.start_ts(summary.raw)
                if started is not None and started <= time.time() + CLOCK_SKEW_SECONDS:
                    newest = max(newest, started)
            if page:
                totals = _record_page(store, aid, page, totals)
        except RateBudgetExhausted as stop:
            complete = False
            meter.budget_spent(f"rate budget spent: listing continues next run ({stop})")
        except UnexpectedShape as odd:  # an incomplete listing: no cursor move, no deletion
            complete = False
            with store.transaction() as conn:
                landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body)
            meter.notes.append(f"{odd}: kept raw, the listing continues next run")
        missing: list[int] = []
        refusal = None
        if full and complete:
            # Known but no longer listed: deleted, or made Only You for a grant without read_all.
            known = sync_state.known_ids(store, aid)
            missing = sorted(known - seen)
            refusal = None if config.allow_shrink else shrink_refusal(len(known), len(seen), len(missing))
        deleted = [] if refusal else missing
        with store.transaction() as conn:
            if complete:
                sync_state.set_cursor(conn, aid, sync_state.LISTED_AFTER, str(newest))
            if deleted:
                landing.land(conn, aid, "delete_activities", [{"ids": deleted, "reason": "missing in reconciliation"}])
                sync_state.forget(conn, aid, deleted)
        if deleted:
            context.log.warning(f"athlete {aid}: {len(deleted)} activities no longer listed are deleted (kept with "
                                f"their last JSON in deleted_activities): {', '.join(map(str, deleted[:20]))}"
                                + (" …" if len(deleted) > 20 else ""))
        if refusal:
            raise Failure(description=f"athlete {aid}: {refusal}. Nothing was deleted. If the athlete really removed "
                                      f"them, run `fitsync sync --full --allow-shrink --athlete {aid}`.",
                          metadata={"listed": len(seen), "would_delete": len(missing)})
        return MaterializeResult(metadata=meter.metadata(
            mode="full reconciliation" if full else "incremental",
            listed=totals.seen, new=totals.new, changed=totals.changed, reconciled_deletions=len(deleted),
            listing_after=MetadataValue.text(str(after)), complete=complete))


def _record_page(store, aid: int, page: list, totals: sync_state.ListingOutcome) -> sync_state.ListingOutcome:  # type: ignore[no-untyped-def]
    with store.transaction() as conn:
        landing.land(conn, aid, "activity_summaries", [s.raw for s in page])
        outcome = sync_state.record_listing(conn, aid, page)
    return sync_state.ListingOutcome(totals.seen + outcome.seen, totals.new + outcome.new,
                                     totals.changed + outcome.changed)


def _webhook_work(context: AssetExecutionContext, client, aid: int, config: SyncConfig,  # type: ignore[no-untyped-def]
                  max_wait: float) -> MaterializeResult:
    """Queue the re-pulls; delete only what the service confirms is gone (deletion_proof.py)."""
    with metered(client) as meter:
        proof = prove_deletions(client.athlete(aid, max_wait=min(max_wait, 60.0)), list(config.deleted_ids)) \
            if config.deleted_ids else Proof()
        with client.store.transaction() as conn:
            sync_state.request_refresh(conn, aid, sorted(set(config.activity_ids) | set(proof.still_there)))
            for reason in sorted(set(proof.deleted.values())):
                ids = sorted(a for a, r in proof.deleted.items() if r == reason)
                landing.land(conn, aid, "delete_activities", [{"ids": ids, "reason": reason}])
                sync_state.forget(conn, aid, ids)
            for activity_id, verdict, reason in proof.verdicts():
                webhook_inbox.set_delete_verdict(conn, aid, activity_id, verdict, reason)
        for activity_id, reason in {**proof.still_there, **proof.unproven}.items():
            context.log.warning(f"athlete {aid}: a delete event for activity {activity_id} was not acted on: {reason}")
            meter.notes.append(f"delete event for {activity_id} not acted on: {reason}")
        return MaterializeResult(metadata=meter.metadata(
            mode="webhook", queued=len(set(config.activity_ids) | set(proof.still_there)), deleted=len(proof.deleted),
            delete_events_rejected=len(proof.still_there) + len(proof.unproven)))


def shrink_refusal(known: int, listed: int, missing: int) -> str | None:
    """Why a complete full listing is not believed, or None: empty while activities are known, or missing more than
    SHRINK_SHARE of them (and more than SHRINK_MIN)."""
    if known and not listed:
        return f"the service listed no activities while fitsync knows {known}"
    if missing > SHRINK_MIN and missing > SHRINK_SHARE * known:
        return (f"the listing lacks {missing} of the {known} activities fitsync knows (more than "
                f"{SHRINK_SHARE:.0%} and more than {SHRINK_MIN})")
    return None
