"""The listing step whole, without Dagster: which listing is due, the listing, the stats' check that nothing older was
missed, the reconciliation of a full one, and what it says. The `activities` asset and `fitsync sync`'s first steps
(sync/first_steps.py) call it; why listings overlap and when they go all the way back: assets/activities.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fitsync.client.runtime import FitsyncClient
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse

from . import listing
from .reconciliation import Reconciliation, reconcile, record
from .steps import Meter, Step, metered


@dataclass(frozen=True)
class Listed:
    """What the step reports: its plain metadata, and why it fails (the reconciliation refused to delete) or None."""

    metadata: dict[str, Any]
    refusal: str | None = None
    refusal_metadata: dict[str, Any] | None = None


def list_and_reconcile(
    step: Step, client: FitsyncClient, where: Warehouse, *, full: bool, allow_shrink: bool
) -> Listed:
    aid, store = step.aid, client.store
    plan = listing.plan(store, aid, full, lambda: db.holds_athlete(where, aid))
    if plan.warning:
        step.log("warning", plan.warning)
    if plan.why_full and not full and plan.cursor is not None:
        step.log("info", f"athlete {aid}: full listing because {plan.why_full}")
    session = step.answering(client.athlete(aid, bulk=True, max_wait=step.max_wait, priority=step.priority()))
    with metered(client, Meter) as meter:
        found = listing.list_activities(store, session, aid, plan.after, int(plan.cursor or 0), meter)
        if found.complete and not plan.full and (why := listing.stats_gap_reason(store, aid)):
            # The stats count activities no listing showed: list all the way back, in this run.
            step.log("info", f"athlete {aid}: full listing because {why}")
            plan = plan.all_the_way_back(why)
            found = found.followed_by(listing.list_activities(store, session, aid, None, found.newest, meter))
        verdict = reconcile(store, session, aid, found, plan.full, allow_shrink)
        record(store, aid, plan, found, verdict)
        _say_reconciliation(step, verdict, meter)
        if verdict.refusal:
            return Listed(
                {},
                f"athlete {aid}: {verdict.refusal}. Nothing was deleted. If the athlete really removed them, run "
                f"`fitsync sync --full --allow-shrink --athlete {aid}`.",
                {"listed": len(found.seen), "would_delete": len(verdict.missing)},
            )
        if found.complete and plan.full:
            listing.remember_stats_gap(store, aid)
        return Listed(
            meter.plain(
                mode="full reconciliation" if plan.full else "incremental",
                full_because=plan.why_full or "",
                listed=found.totals.seen,
                new=found.totals.new,
                changed=found.totals.changed,
                reconciled_deletions=len(verdict.deleted),
                missing_not_deleted=len(verdict.proof.still_there) + len(verdict.proof.unproven),
                listing_after=str(plan.after),
                complete=found.complete,
            )
        )


def _say_reconciliation(step: Step, verdict: Reconciliation, meter: Meter) -> None:
    """Warn of the activities the listing lacks: kept (the service did not confirm them gone) or deleted."""
    aid = step.aid
    if kept := verdict.kept:
        step.log(
            "warning",
            f"athlete {aid}: the listing lacks {len(kept)} activities the service did not confirm "
            f"gone; nothing of them is deleted: " + ", ".join(f"{a} ({r})" for a, r in sorted(kept.items())[:10]),
        )
        meter.notes.append(
            f"{len(kept)} activities missing from the listing are kept: the service did not confirm them gone"
        )
    if deleted := verdict.deleted:
        step.log(
            "warning",
            f"athlete {aid}: {len(deleted)} activities no longer listed are deleted (kept with "
            f"their last JSON in deleted_activities): {', '.join(map(str, deleted[:20]))}"
            + (" …" if len(deleted) > 20 else ""),
        )
