"""The activity listing: incremental with an overlap window, or a full reconciliation that finds deletions.

Listing with only `after` returns activities oldest first, and `after` compares start times: an activity
uploaded late with an older start time would be missed by `after=<last sync>`, so each incremental
listing starts OVERLAP before the newest start seen. Uploads backdated further (an import of old files) are
caught by the athlete's stats: when the service counts more activities than fitsync knows — more than it did
right after the last full listing — the listing goes all the way back. A full listing also runs when the last
one is older than progress.FULL_EVERY, so deletions no webhook announced are found whoever schedules the syncs.
"""

import time
from dataclasses import dataclass
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import UnexpectedShape, shape_problem
from fitsync.resources.api import FitsyncApi, warehouse_path
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, FIRST, Meter, SyncConfig, metered, priority
from fitsync.sync import landing, progress
from fitsync.sync.deletion_proof import Proof, land_deletions, prove_deletions
from fitsync.webhooks import inbox as webhook_inbox

from .athlete import athlete_stats, athlete_zones

# The cursor never moves past now plus this: a clock error or a hand-typed date next year must not hide every later
# upload from incremental listings (such activities are loaded all the same).
CLOCK_SKEW_SECONDS = 3600
# Why an activity a full listing lacks is deleted, once the service confirms it (deletion_proof.py).
MISSING = "missing in reconciliation"
# A full listing that would delete more than this share of the known activities (and more than SHRINK_MIN of
# them), or that is empty while activities are known, is not believed: nothing is deleted without --allow-shrink.
SHRINK_SHARE, SHRINK_MIN = 0.2, 50


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
    cursor = progress.get_cursor(store, aid, progress.LISTED_AFTER)
    why_full = _why_full(store, aid, config.full, cursor)
    if not Path(warehouse_path(str(client.config.home))).exists() and len(
        known := progress.known_ids(store, aid)
    ) > progress.count_needing(store, aid, "detail"):
        # moved aside (damaged, or to start over): the details the state says were fetched are in no warehouse
        with store.transaction() as conn:
            progress.request_refresh(conn, aid, sorted(known), zones=True)
        why_full = "the warehouse is new while fitsync knew activities: every one is fetched again"
        context.log.warning(f"athlete {aid}: {why_full}")
    full = why_full is not None
    if why_full and not config.full and cursor is not None:
        context.log.info(f"athlete {aid}: full listing because {why_full}")
    after = None if full or cursor is None else progress.incremental_after(cursor)
    session = client.athlete(
        aid, bulk=True, max_wait=fitsync_api.max_wait_seconds, priority=priority(context, store, aid)
    )
    with metered(client) as meter:
        listing = _list(store, session, aid, after, int(cursor) if cursor else 0, meter)
        if listing.complete and not full and (why_full := _stats_gap(store, aid)):
            # The stats count activities no listing showed: list all the way back, in this run.
            context.log.info(f"athlete {aid}: full listing because {why_full}")
            full, after = True, None
            deep = _list(store, session, aid, None, listing.newest, meter)
            listing = Listing(listing.seen | deep.seen, deep.totals + listing.totals, deep.newest, deep.complete)
        seen, totals, newest, complete = listing.seen, listing.totals, listing.newest, listing.complete
        missing: list[int] = []
        refusal = None
        if full and complete:
            # Known but no longer listed: deleted, or made Only You for a grant without read_all.
            known = progress.known_ids(store, aid)
            missing = sorted(known - seen)
            refusal = (
                None
                if config.allow_shrink
                else (shrink_refusal(len(known), len(seen), len(missing)) or stats_refusal(store, aid, missing))
            )
        # Absent from a listing is no proof: each is asked for by id, as a webhook delete is (deletion_proof.py).
        proof = prove_deletions(session, missing, hint=MISSING) if missing and not refusal else Proof()
        deleted = sorted(proof.deleted)
        with store.transaction() as conn:
            if complete:
                progress.set_cursor(conn, aid, progress.LISTED_AFTER, str(newest))
                # a later sync listing from the same point with this same answer has nothing new to fetch
                progress.set_cursor(conn, aid, progress.LISTING_DIGEST, "" if full else f"{after}:{listing.digest}")
            if complete and full and not refusal:  # a listing not believed is tried again next run
                progress.set_cursor(conn, aid, progress.FULL_LISTED_AT, str(int(time.time())))
            land_deletions(conn, aid, proof)
        if kept := {**proof.still_there, **proof.unproven}:
            context.log.warning(
                f"athlete {aid}: the listing lacks {len(kept)} activities the service did not confirm "
                f"gone; nothing of them is deleted: " + ", ".join(f"{a} ({r})" for a, r in sorted(kept.items())[:10])
            )
            meter.notes.append(
                f"{len(kept)} activities missing from the listing are kept: the service did not confirm them gone"
            )
        if deleted:
            context.log.warning(
                f"athlete {aid}: {len(deleted)} activities no longer listed are deleted (kept with "
                f"their last JSON in deleted_activities): {', '.join(map(str, deleted[:20]))}"
                + (" …" if len(deleted) > 20 else "")
            )
        if refusal:
            raise Failure(
                description=f"athlete {aid}: {refusal}. Nothing was deleted. If the athlete really removed "
                f"them, run `fitsync sync --full --allow-shrink --athlete {aid}`.",
                metadata={"listed": len(seen), "would_delete": len(missing)},
            )
        if complete and full:
            gap = progress.stats_gap(store, aid)  # what the stats count and no listing shows: not ours to find
            with store.transaction() as conn:
                progress.set_cursor(conn, aid, progress.STATS_GAP, str(max(gap or 0, 0)))
        return MaterializeResult(
            metadata=meter.metadata(
                mode="full reconciliation" if full else "incremental",
                full_because=MetadataValue.text(why_full or ""),
                listed=totals.seen,
                new=totals.new,
                changed=totals.changed,
                reconciled_deletions=len(deleted),
                missing_not_deleted=len(proof.still_there) + len(proof.unproven),
                listing_after=MetadataValue.text(str(after)),
                complete=complete,
            )
        )


@dataclass(frozen=True)
class Listing:
    seen: set[int]
    totals: progress.ListingOutcome
    newest: int  # the newest start time seen, never past now + CLOCK_SKEW_SECONDS
    complete: bool
    digest: str = ""  # of the whole answer (progress.digest)


def _list(store, session, aid: int, after: int | None, newest: int, meter: Meter) -> Listing:
    """List (from `after`, or all), recording each page as it comes; an incomplete listing says so."""
    seen: set[int] = set()
    unreadable: dict[str, int] = {}
    totals = progress.ListingOutcome(0, 0, 0)
    complete = True
    raws: list = []
    try:
        page: list = []
        for summary in session.activities(after=after):
            if problem := shape_problem("activity", summary.raw):  # kept raw and said; the rest of the page loads
                with store.transaction() as conn:
                    landing.keep_unrecognized(conn, aid, "GET /athlete/activities", problem, summary.raw)
                unreadable[problem] = unreadable.get(problem, 0) + 1
                continue
            page.append(summary)
            if after is not None:  # only an incremental listing's answer is compared later (nothing_new)
                raws.append(summary.raw)
            if len(page) == 200:
                totals = _record_page(store, aid, page, totals)
                page = []
            seen.add(summary.id)
            started = progress.start_ts(summary.raw)
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
        meter.wrong_answer(odd.endpoint, odd.problem)
    for problem, n in unreadable.items():
        meter.left_out(f"athlete {aid}: {n} listed element(s) left out: {problem} (kept raw in unrecognized_payloads)")
    return Listing(seen, totals, newest, complete, progress.digest(raws))


def _record_page(store, aid: int, page: list, totals: progress.ListingOutcome) -> progress.ListingOutcome:
    with store.transaction() as conn:
        landing.land(conn, aid, "activity_summaries", [s.raw for s in page])
        return totals + progress.record_listing(conn, aid, page)


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


def _why_full(store, aid: int, asked: bool, cursor: str | None) -> str | None:
    """Why this listing goes all the way back, or None for an incremental one."""
    if asked:
        return "asked for (--full or the weekly schedule)"
    return progress.full_listing_due(store, aid, cursor)


def _stats_gap(store, aid: int) -> str | None:
    """After an incremental listing: do the athlete's stats count activities fitsync has not seen (beyond the
    gap left after the last full listing, which no listing explains)?"""
    gap, known_gap = progress.stats_gap(store, aid), progress.get_cursor(store, aid, progress.STATS_GAP)
    if gap is not None and gap > int(known_gap or 0):
        return (
            f"the athlete's stats count {gap - int(known_gap or 0)} more activities than fitsync has "
            "(an upload backdated beyond the overlap window?)"
        )
    return None


STATS_TOLERANCE_SHARE, STATS_TOLERANCE_MIN = 0.05, 10


def stats_refusal(store, aid: int, missing: list[int]) -> str | None:
    """Why deleting `missing` contradicts the athlete's stats, or None: the stats (fetched this run) still count
    clearly more activities than fitsync would keep. A few deletions pass even if the stats lag behind."""
    if not missing:
        return None
    total = progress.get_cursor(store, aid, progress.STATS_TOTAL)
    gap_before = int(progress.get_cursor(store, aid, progress.STATS_GAP) or 0)
    if total is None:
        return None
    with store.reading() as conn:
        marks = ",".join("?" * len(missing))
        counted = conn.execute(
            f"SELECT count(*) FILTER (WHERE activity_id NOT IN ({marks})) FROM known_activities "
            "WHERE athlete_id = ? AND stats_group IS NOT NULL",
            (*missing, aid),
        ).fetchone()[0]
    excess = int(total) - counted - gap_before
    if excess > max(STATS_TOLERANCE_MIN, STATS_TOLERANCE_SHARE * int(total)):
        return (
            f"the athlete's stats still count {excess} more activities than would be left after deleting the "
            f"{len(missing)} the listing lacks"
        )
    return None


def shrink_refusal(known: int, listed: int, missing: int) -> str | None:
    """Why a complete full listing is not believed, or None: empty while activities are known, or missing more than
    SHRINK_SHARE of them (and more than SHRINK_MIN)."""
    if known and not listed:
        return f"the service listed no activities while fitsync knows {known}"
    if missing > SHRINK_MIN and missing > SHRINK_SHARE * known:
        return (
            f"the listing lacks {missing} of the {known} activities fitsync knows (more than "
            f"{SHRINK_SHARE:.0%} and more than {SHRINK_MIN})"
        )
    return None
