"""The activity listing: incremental with an overlap window, or a full reconciliation that finds deletions.

Listing with only `after` returns activities oldest first, and `after` compares start times: an activity
uploaded late with an older start time would be missed by `after=<last sync>`, so each incremental
listing starts OVERLAP before the newest start seen.
"""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import UnexpectedShape
from fitsync.pipelines.resources import FitsyncApi

from . import landing, sync_state
from .common import API_POOL, SyncConfig, athlete_id, athletes_partitions, metered

OVERLAP_SECONDS = 14 * 86400


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def activities(context: AssetExecutionContext, config: SyncConfig, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Activity summaries; new or changed activities are queued for their detail (and zones)."""
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    store = client.store
    if config.activity_ids or config.deleted_ids:
        with client.store.transaction() as conn:
            sync_state.request_refresh(conn, aid, list(config.activity_ids))
            if config.deleted_ids:
                landing.land(conn, aid, "delete_activities", [{"ids": list(config.deleted_ids), "reason": "webhook delete"}])
                sync_state.forget(conn, aid, list(config.deleted_ids))
        return MaterializeResult(metadata={"mode": "webhook", "queued": len(config.activity_ids),
                                           "deleted": len(config.deleted_ids), "api_calls": 0})
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
                newest = max(newest, sync_state.start_ts(summary.raw)) if "start_date" in summary.raw else newest
            if page:
                totals = _record_page(store, aid, page, totals)
        except RateBudgetExhausted as stop:
            complete = False
            meter.notes.append(f"rate budget spent: listing continues next run ({stop})")
        except UnexpectedShape as odd:  # an incomplete listing: no cursor move, no deletion
            complete = False
            with store.transaction() as conn:
                landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body)
            meter.notes.append(f"{odd}: kept raw, the listing continues next run")
        deleted: list[int] = []
        with store.transaction() as conn:
            if complete:
                sync_state.set_cursor(conn, aid, sync_state.LISTED_AFTER, str(newest))
            if full and complete:
                # Known but no longer listed: deleted, or made Only You for a grant without read_all.
                deleted = sorted(sync_state.known_ids(store, aid) - seen)
                if deleted:
                    landing.land(conn, aid, "delete_activities", [{"ids": deleted, "reason": "missing in reconciliation"}])
                    sync_state.forget(conn, aid, deleted)
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
