"""The athlete's profile (+gear), stats and zones: one call each, snapshots kept per sync date."""

import functools
from typing import Any

from dagster import AssetExecutionContext, MaterializeResult, asset

from fitsync.client.athlete_zones import AthleteZones
from fitsync.client.errors import MissingScope
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import UnexpectedShape
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, metered, priority
from fitsync.sync import cadence, landing, progress
from fitsync.warehouse import db


def _fetch_one(
    context: AssetExecutionContext, api: FitsyncApi, bundle: str, method: str, slow: bool = False
) -> MaterializeResult:
    """One call; `slow`: only when its cadence says it is due (cadence.py)."""
    client = api.client()
    aid = athlete_id(context.partition_key)
    session = client.athlete(aid, max_wait=api.max_wait_seconds, priority=priority(context, client.store, aid))
    with metered(client) as meter:
        # a full listing checks its deletions against the stats: they are fetched for it whatever the cadence
        due = bundle == "athlete_stats" and progress.full_listing_due(
            client.store, aid, progress.get_cursor(client.store, aid, progress.LISTED_AFTER)
        )
        holds = functools.partial(db.holds_athlete, api.warehouse(), aid)  # asked only when the cadence would skip
        if slow and not due and (why := cadence.skip_reason(context, client, aid, bundle, holds)):
            meter.notes.append(why)
            return MaterializeResult(metadata=meter.metadata(skipped=True))
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
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        except MissingScope as error:
            meter.notes.append(f"skipped: the athlete did not grant {error.scope}")
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: fetched next run ({stop})")
            return MaterializeResult(metadata=meter.metadata(skipped=True))
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
        return MaterializeResult(metadata=meter.metadata(skipped=False, **extra))


def _all_time_count(stats: dict[str, Any]) -> int | None:
    counts = [(stats.get(f"all_{group}_totals") or {}).get("count") for group in ("ride", "run", "swim")]
    known = [c for c in counts if isinstance(c, int)]
    return sum(known) if len(known) == len(counts) else None


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def athlete(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """The athlete's profile and gear (detailed with profile:read_all)."""
    return _fetch_one(context, fitsync_api, "athlete", "athlete")


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def athlete_stats(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Recent, year-to-date and all-time totals, as a snapshot per sync date."""
    return _fetch_one(context, fitsync_api, "athlete_stats", "stats", slow=True)


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def athlete_zones(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Heart-rate and power zone definitions with recent time in zone, as a snapshot per sync date."""
    return _fetch_one(context, fitsync_api, "athlete_zones", "zones", slow=True)
