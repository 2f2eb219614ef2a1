"""Details (with all efforts → splits, laps, efforts) and zone distributions of new or changed activities.

One detail call per activity and one zones call per activity that can have zones (heart rate or a power
meter), nothing else: the queue in the state store says which activities still need which, newest first. The
details asset fetches each activity's zones right after its detail; the zones asset takes what is left (a
webhook's re-pull, a subscription that started later). Each chunk is landed and ticked off in one transaction:
a killed or budget-stopped run is continued by the next one without repeating a call.

What they land is loaded into the warehouse while they run (sync/load_landed.WhileFetching): before each wait for
the rate budget of 5 s or more and at least every 100 activities or 60 s. Each step's metadata counts those loads
(`loads_while_fetching`, `batches_loaded_while_fetching`); the warehouse asset, materialized once at the end of the
run, loads the rest. Under the real limits this month's activities are queryable minutes after they were fetched.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from dagster import AssetExecutionContext, MaterializeResult, asset

from fitsync.client import rate_governor, stop_request
from fitsync.client.errors import MissingScope, PaymentRequired
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, DETAIL_CHUNK, Meter, is_webhook_run, load_notice, metered, priority
from fitsync.sync import details, live, progress
from fitsync.sync.load_landed import WhileFetching


@dataclass
class _Tally:
    fetched: int = 0
    gone: int = 0
    zones: int = 0
    answered_wrong: set[int] = field(default_factory=set)  # stays queued for the next run, not asked again in this one


def _drain(
    context: AssetExecutionContext,
    api: FitsyncApi,
    what: str,
    bundle: str,
    fetch: details.Fetch,
    subscribers_only: bool = False,
) -> MaterializeResult:
    """Work through the athlete's `what` queue chunk by chunk until it is empty or the run must stop."""
    client = api.client()
    aid = athlete_id(context.partition_key)
    with metered(client) as meter:
        if subscribers_only and progress.known_non_subscriber(client.store, aid):
            meter.notes.append(progress.NOT_SUBSCRIBED)  # the queue stays: it is fetched once the profile says premium
            return MaterializeResult(
                metadata=meter.metadata(
                    fetched=0, not_found=0, remaining=progress.count_needing(client.store, aid, what)
                )
            )
        tally = _Tally()
        early = WhileFetching(
            client.store,
            aid,
            api.warehouse(),
            load_notice(context),
            _reported(context, meter),
            time_scale=client.governor.time_scale,
        )
        try:
            _fetch(context, api, aid, what, bundle, fetch, meter, tally, early)
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: the rest continues next run ({stop})")
        except (PaymentRequired, MissingScope) as error:
            meter.notes.append(_skip_note(error))
            if isinstance(error, PaymentRequired):
                with client.store.transaction() as conn:
                    progress.note_subscriber(conn, aid, False)
        extra = {"zones_fetched": tally.zones} if what == "detail" else {}
        return MaterializeResult(
            metadata=meter.metadata(
                fetched=tally.fetched,
                not_found=tally.gone,
                remaining=progress.count_needing(client.store, aid, what),
                **extra,
                **early.metadata(),
            )
        )


def _fetch(
    context: AssetExecutionContext,
    api: FitsyncApi,
    aid: int,
    what: str,
    bundle: str,
    fetch: details.Fetch,
    meter: Meter,
    tally: _Tally,
    early: WhileFetching,
) -> None:
    """Fetch and land the queue chunk by chunk, loading what was landed as `early` says."""
    client = api.client()
    session = client.athlete(
        aid,
        bulk=not is_webhook_run(context),
        max_wait=api.max_wait_seconds,
        priority=priority(context, client.store, aid),
    )
    # Details bring their zones along, activity by activity: under the real limits a backfill takes days, and
    # the newest activities are then complete (detail and zones) on the first day, not after every detail.
    zones_too = what == "detail" and not progress.known_non_subscriber(client.store, aid)
    chunk = details.Chunk()

    def record(load: bool = True) -> None:
        """Land and tick off what the chunk holds, count it, and load if `early` says it is time (`load`)."""
        if chunk.empty() and not chunk.no_subscription:  # a 402 learnt after a record before a wait is noted too
            return
        with live.recording():
            details.record_chunk(client.store, aid, what, bundle, chunk)
            for activity_id, error in chunk.odd:
                tally.answered_wrong.add(activity_id)
                meter.wrong_answer(error.endpoint, error.problem, f"activity {activity_id}")
            tally.fetched += len(chunk.done)
            tally.gone += len(chunk.missing) + len(chunk.hidden)
            tally.zones += len(chunk.zones_done)
            done = len(chunk.done)
            chunk.recorded()
        if load:
            early.fetched(done)

    def before_wait(seconds: float) -> None:  # what the chunk fetched so far is landed and loaded, then it waits
        record()
        early.before_wait(seconds)

    with rate_governor.before_long_waits(before_wait), live.fetching(aid, what, chunk):
        try:
            while ids := progress.needing(client.store, aid, what, DETAIL_CHUNK, skip=tally.answered_wrong):
                want_zones = progress.needing_among(client.store, aid, ids, "zones") if zones_too else set()
                details.fetch_chunk(session, ids, fetch, want_zones, chunk)
                zones_too = zones_too and not chunk.no_subscription
                record()
                context.log.info(
                    f"{what}: {tally.fetched} fetched, {progress.count_needing(client.store, aid, what)} to go"
                )
                if chunk.stopped is not None:
                    raise chunk.stopped
        except stop_request.StopRequested:  # a stop asked for: what the chunk fetched is kept, not asked again
            record(load=False)  # landed: the next run loads it; a stop does not wait for a load
            raise


def _reported(context: AssetExecutionContext, meter: Meter) -> Callable[[str], None]:
    """What a load made while fetching left out: in the run's log and the step's metadata (the run is not "ok")."""

    def report(line: str) -> None:
        context.log.warning(line)
        meter.left_out(line)

    return report


def _skip_note(error: Exception) -> str:
    if isinstance(error, PaymentRequired):
        return "skipped: this needs a subscription the athlete does not have (402)"
    assert isinstance(error, MissingScope)
    return f"skipped: the athlete did not grant {error.scope}"


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"}, deps=["activities"])
def activity_details(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Detailed activities with all segment efforts, splits and laps."""
    return _drain(context, fitsync_api, "detail", "activity_details", details.fetch_detail)


@asset(
    partitions_def=athletes_partitions,
    pool=API_POOL,
    group_name="fetch",
    kinds={"api"},
    deps=["activities", "athlete", activity_details],
)  # after the details: they say which activities can have zones
def activity_zones(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Time in heart-rate and power zones per activity: a subscriber feature, so a 402 is a skip, not a failure,
    and no call is spent while the profile (fetched first) says the athlete has no subscription."""
    return _drain(context, fitsync_api, "zones", "activity_zones", details.fetch_zones, subscribers_only=True)
