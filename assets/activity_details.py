"""Details (with all efforts → splits, laps, efforts) and zone distributions of new or changed activities.

One detail call per activity and one zones call per activity that can have zones (heart rate or a power
meter), nothing else: the queue in the state store says which activities still need which, newest first. The
details asset fetches each activity's zones right after its detail; the zones asset takes what is left (a
webhook's re-pull, a subscription that started later). Each chunk is landed and ticked off in one transaction:
a killed or budget-stopped run is continued by the next one without repeating a call.
"""


from typing import Callable

from dagster import AssetExecutionContext, MaterializeResult, asset

from fitsync.client.errors import MissingScope, NotFound, PaymentRequired
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import Record, UnexpectedShape
from fitsync.resources.api import FitsyncApi

from fitsync.sync import landing, progress
from fitsync.resources.run import API_POOL, DETAIL_CHUNK, is_webhook_run, metered, priority
from fitsync.resources.partitions import athlete_id, athletes_partitions


def _drain(context: AssetExecutionContext, api: FitsyncApi, what: str, bundle: str,
           fetch: Callable[[object, int], object], subscribers_only: bool = False) -> MaterializeResult:
    client = api.client()
    aid = athlete_id(context.partition_key)
    session = client.athlete(aid, bulk=not is_webhook_run(context), max_wait=api.max_wait_seconds,
                             priority=priority(context, client.store, aid))
    fetched = gone = zones_fetched = 0
    # Details bring their zones along, activity by activity: under the real limits a backfill takes days, and
    # the newest activities are then complete (detail and zones) on the first day, not after every detail.
    zones_too = what == "detail" and not progress.known_non_subscriber(client.store, aid)
    with metered(client) as meter:
        if subscribers_only and progress.known_non_subscriber(client.store, aid):
            meter.notes.append(progress.NOT_SUBSCRIBED)  # the queue stays: it is fetched once the profile says premium
            return MaterializeResult(metadata=meter.metadata(
                fetched=0, not_found=0, remaining=progress.count_needing(client.store, aid, what)))
        answered_wrong: set[int] = set()  # stays queued for the next run, not asked again in this one
        try:
            while ids := progress.needing(client.store, aid, what, DETAIL_CHUNK, skip=answered_wrong):
                payloads, done, missing, hidden, odd = [], [], [], [], []
                zones, zones_done = [], []
                want_zones = progress.needing_among(client.store, aid, ids, "zones") if zones_too else set()
                stopped: Exception | None = None
                for activity_id in ids:
                    try:
                        payloads.append(fetch(session, activity_id))
                        done.append(activity_id)
                        if zones_too and activity_id in want_zones and progress.may_have_zones(payloads[-1]):
                            try:
                                zones.append(_zones(session, activity_id))
                                zones_done.append(activity_id)
                            except PaymentRequired:  # learnt here: the zones asset says so and spends nothing
                                zones_too = False
                                with client.store.transaction() as conn:
                                    progress.note_subscriber(conn, aid, False)
                            except (NotFound, UnexpectedShape, MissingScope):  # left queued for the zones asset
                                pass
                    except NotFound:
                        missing.append(activity_id)
                    except UnexpectedShape as error:  # kept raw; the activity's rows stay and it stays queued
                        odd.append((activity_id, error))
                        answered_wrong.add(activity_id)
                        meter.wrong_answer(error.endpoint, f"{error.problem} (activity {activity_id})")
                    except MissingScope as error:
                        if error.scope != "activity:read_all":
                            stopped = error
                            break
                        hidden.append(activity_id)  # made Only You since it was listed: this grant may not see it
                    except (RateBudgetExhausted, PaymentRequired) as error:
                        stopped = error  # keep what this chunk already fetched: never fetch it twice
                        break
                with client.store.transaction() as conn:
                    if payloads:
                        landing.land(conn, aid, bundle, payloads)
                    progress.mark(conn, aid, done, what)
                    if zones:
                        landing.land(conn, aid, "activity_zones", zones)
                        progress.mark(conn, aid, zones_done, "zones")
                    for activity_id, error in odd:
                        landing.keep_unrecognized(conn, aid, error.endpoint, error.problem, error.body, activity_id)
                    if what == "detail":
                        progress.note_details(conn, aid, payloads)
                        progress.note_segments(conn, aid, sorted({
                            e["segment"]["id"] for d in payloads for e in d.get("segment_efforts") or []
                            if isinstance(e.get("segment"), dict) and isinstance(e["segment"].get("id"), int)}),
                            starred=False)
                    if missing:  # deleted (or made private) since it was listed
                        landing.land(conn, aid, "delete_activities", [{"ids": missing, "reason": "not found"}])
                        progress.forget(conn, aid, missing)
                    if hidden:
                        landing.land(conn, aid, "delete_activities", [{"ids": hidden, "reason": "made private"}])
                        progress.forget(conn, aid, hidden)
                fetched, gone = fetched + len(done), gone + len(missing) + len(hidden)
                zones_fetched += len(zones_done)
                context.log.info(f"{what}: {fetched} fetched, {progress.count_needing(client.store, aid, what)} to go")
                if stopped is not None:
                    raise stopped
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: the rest continues next run ({stop})")
        except (PaymentRequired, MissingScope) as error:
            meter.notes.append(_skip_note(error))
            if isinstance(error, PaymentRequired):
                with client.store.transaction() as conn:
                    progress.note_subscriber(conn, aid, False)
        extra = {"zones_fetched": zones_fetched} if what == "detail" else {}
        return MaterializeResult(metadata=meter.metadata(
            fetched=fetched, not_found=gone, remaining=progress.count_needing(client.store, aid, what), **extra))


def _skip_note(error: Exception) -> str:
    if isinstance(error, PaymentRequired):
        return "skipped: this needs a subscription the athlete does not have (402)"
    assert isinstance(error, MissingScope)
    return f"skipped: the athlete did not grant {error.scope}"


def _detail(session, activity_id: int) -> dict:  # type: ignore[no-untyped-def]
    record: Record = session.activity(activity_id, include_all_efforts=True)
    if record.id != activity_id:
        raise UnexpectedShape("GET /activities/{id}", "activity", record.raw, f"activity {record.id} for {activity_id}")
    return record.raw


def _zones(session, activity_id: int) -> dict:  # type: ignore[no-untyped-def]
    return {"activity_id": activity_id, "zones": [z.raw for z in session.activity_zones(activity_id)]}


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"}, deps=["activities"])
def activity_details(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Detailed activities with all segment efforts, splits and laps."""
    return _drain(context, fitsync_api, "detail", "activity_details", _detail)


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"},
       deps=["activities", "athlete", activity_details])  # after the details: they say which activities can have zones
def activity_zones(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Time in heart-rate and power zones per activity: a subscriber feature, so a 402 is a skip, not a failure,
    and no call is spent while the profile (fetched first) says the athlete has no subscription."""
    return _drain(context, fitsync_api, "zones", "activity_zones", _zones, subscribers_only=True)

