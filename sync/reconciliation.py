"""What a full listing implies for deletions, without Dagster: the known activities it lacks, whether that is believed
(a listing much shorter than what fitsync knows, or than the athlete's stats count, is not), which of them the
service confirms gone, and the end of the listing recorded in one transaction with those deletions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fitsync.state.store import StateStore

from . import progress
from .deletion_proof import Proof, land_deletions, prove_deletions
from .listing import Listing, Plan

# Why an activity a full listing lacks is deleted, once the service confirms it (deletion_proof.py).
MISSING = "missing in reconciliation"
# A full listing that would delete more than this share of the known activities (and more than SHRINK_MIN of
# them), or that is empty while activities are known, is not believed: nothing is deleted without --allow-shrink.
SHRINK_SHARE, SHRINK_MIN = 0.2, 50
STATS_TOLERANCE_SHARE, STATS_TOLERANCE_MIN = 0.05, 10


@dataclass(frozen=True)
class Reconciliation:
    """The known activities a listing lacks, why deleting them is refused (None: believed), and the service's proof."""

    missing: list[int]
    refusal: str | None
    proof: Proof

    @property
    def deleted(self) -> list[int]:
        return sorted(self.proof.deleted)

    @property
    def kept(self) -> dict[int, str]:
        """Missing from the listing, yet not confirmed gone by the service: nothing of them is deleted."""
        return {**self.proof.still_there, **self.proof.unproven}


def reconcile(
    store: StateStore, session: Any, aid: int, listing: Listing, full: bool, allow_shrink: bool
) -> Reconciliation:
    """After a complete full listing: what it lacks, whether that is believed, and which the service confirms gone."""
    missing: list[int] = []
    refusal = None
    if full and listing.complete:
        # Known but no longer listed: deleted, or made Only You for a grant without read_all.
        known = progress.known_ids(store, aid)
        missing = sorted(known - listing.seen)
        refusal = (
            None
            if allow_shrink
            else (shrink_refusal(len(known), len(listing.seen), len(missing)) or stats_refusal(store, aid, missing))
        )
    # Absent from a listing is no proof: each is asked for by id, as a webhook delete is (deletion_proof.py).
    proof = prove_deletions(session, missing, hint=MISSING) if missing and not refusal else Proof()
    return Reconciliation(missing, refusal, proof)


def record(store: StateStore, aid: int, plan: Plan, listing: Listing, reconciliation: Reconciliation) -> None:
    """In one transaction: the listing's cursors (only when it completed; the full listing's time only when it was
    believed, so one not believed is tried again next run) and the deletions the service confirmed."""
    with store.transaction() as conn:
        if listing.complete:
            progress.set_cursor(conn, aid, progress.LISTED_AFTER, str(listing.newest))
            # a later sync whose incremental listing answers the same has nothing new to fetch, full listing or not
            progress.set_cursor(conn, aid, progress.LISTING_DIGEST, listing.digest)
        if listing.complete and plan.full and not reconciliation.refusal:
            progress.set_cursor(conn, aid, progress.FULL_LISTED_AT, str(int(time.time())))
        land_deletions(conn, aid, reconciliation.proof)


def stats_refusal(store: StateStore, aid: int, missing: list[int]) -> str | None:
    """Why deleting `missing` contradicts the athlete's stats, or None: the stats (fetched this run) still count
    clearly more activities than fitsync would keep. A few deletions pass even if the stats lag behind."""
    if not missing:
        return None
    total = progress.get_cursor(store, aid, progress.STATS_TOTAL)
    gap_before = int(progress.get_cursor(store, aid, progress.STATS_GAP) or 0)
    if total is None:
        return None
    counted = progress.count_stats_counted(store, aid, missing)
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
