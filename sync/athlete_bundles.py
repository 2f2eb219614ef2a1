"""The athlete's profile (+gear), stats and zones: one call each, landed as a snapshot per sync date. Dagster-free: the
assets in assets/athlete.py and `fitsync sync`'s first steps (sync/first_steps.py) call it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fitsync.client.athlete_zones import AthleteZones
from fitsync.client.errors import MissingScope
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import UnexpectedShape
from fitsync.client.runtime import FitsyncClient

from . import cadence, landing, progress
from .steps import Meter, Step, metered

# bundle → the session's method that fetches it, and whether it waits for its slow cadence (cadence.py)
BUNDLES: dict[str, tuple[str, bool]] = {
    "athlete": ("athlete", False),
    "athlete_stats": ("stats", True),
    "athlete_zones": ("zones", True),
}


def fetch(step: Step, client: FitsyncClient, bundle: str, holds: Callable[[], bool]) -> dict[str, Any]:
    """One call, landed; its plain metadata. `holds`: whether the warehouse holds the athlete's activities (asked only
    when the cadence would skip the call)."""
    method, slow = BUNDLES[bundle]
    aid = step.aid
    session = step.answering(client.athlete(aid, max_wait=step.max_wait, priority=step.priority()))
    with metered(client, Meter) as meter:
        # a full listing checks its deletions against the stats: they are fetched for it whatever the cadence
        due = bundle == "athlete_stats" and progress.full_listing_due(
            client.store, aid, progress.get_cursor(client.store, aid, progress.LISTED_AFTER)
        )
        if slow and not due and (why := cadence.skip_reason(step.refresh_all, client, aid, bundle, holds)):
            meter.notes.append(why)
            return meter.plain(skipped=True)
        try:
            body = getattr(session, method)()
            if bundle == "athlete" and body.id != aid:
                raise UnexpectedShape("GET /athlete", "athlete", body.raw, f"the profile of athlete {body.id}")
            if isinstance(body, AthleteZones) and body.shape == "unknown":
                raise UnexpectedShape("GET /athlete/zones", "zones", body.raw, "; ".join(body.problems))
        except UnexpectedShape as odd:  # nothing of it is stored, nothing marked refreshed: asked again next run
            with client.store.transaction() as conn:
                landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body)
            meter.wrong_answer(odd.endpoint, odd.problem)
            return meter.plain(skipped=True)
        except MissingScope as error:
            meter.notes.append(f"skipped: the athlete did not grant {error.scope}")
            return meter.plain(skipped=True)
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: fetched next run ({stop})")
            return meter.plain(skipped=True)
        payload = body.payload() if isinstance(body, AthleteZones) else body.raw
        with client.store.transaction() as conn:
            landing.land(conn, aid, bundle, [payload])
            if isinstance(body, AthleteZones) and body.problems:
                landing.keep_unrecognized(conn, aid, "GET /athlete/zones", "; ".join(body.problems), body.raw)
                meter.notes.append(f"zones of a shape fitsync does not know were kept raw: {'; '.join(body.problems)}")
            if bundle == "athlete" and isinstance(payload.get("premium"), bool):
                progress.note_subscriber(conn, aid, payload["premium"])
            if bundle == "athlete":
                progress.set_cursor(conn, aid, progress.PROFILE_DIGEST, progress.digest([payload]))
            if bundle == "athlete_stats" and (total := _all_time_count(payload)) is not None:
                progress.set_cursor(conn, aid, progress.STATS_TOTAL, str(total))
            if slow:
                cadence.refreshed(conn, aid, bundle)
        extra = {"shape": body.shape} if isinstance(body, AthleteZones) else {}
        return meter.plain(skipped=False, **extra)


def _all_time_count(stats: dict[str, Any]) -> int | None:
    counts = [(stats.get(f"all_{group}_totals") or {}).get("count") for group in ("ride", "run", "swim")]
    known = [c for c in counts if isinstance(c, int)]
    return sum(known) if len(known) == len(counts) else None
