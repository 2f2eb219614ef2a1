"""The `webhook_events` sensor: inbox events → re-pull and delete runs per athlete, purges on revocation."""

import time

import httpx
from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    sensor,
)

from fitsync.client.errors import FitsyncError, NotConnected, ReauthorizationRequired
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.runtime import FitsyncClient
from fitsync.client.tokens import LOST_ROTATION
from fitsync.pipelines.purge import purge_athlete_job
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import ATHLETES
from fitsync.resources.run import WEBHOOK_TAG
from fitsync.state import athletes as athlete_rows
from fitsync.state import inbox as inbox_rows
from fitsync.state.inbox import Lifecycle
from fitsync.state.progress import known_ids
from fitsync.state.store import Connection
from fitsync.webhooks import admission as webhook_admission
from fitsync.webhooks import inbox as webhook_inbox
from fitsync.webhooks.plan import Bookkeeping, Plan, decide, judge_grant, settle

webhook_refresh_job = define_asset_job(
    "webhook_refresh",
    selection=["activities", "activity_details", "activity_zones", "segments", "warehouse"],
    description="Re-pull or delete the activities named by webhook events, and load them.",
)


@sensor(
    jobs=[webhook_refresh_job, purge_athlete_job],
    minimum_interval_seconds=5,
    default_status=DefaultSensorStatus.RUNNING,
)
def webhook_events(context: SensorEvaluationContext, fitsync_api: FitsyncApi) -> SensorResult | SkipReason:
    """Reads the inbox after its cursor and launches one run per athlete with work, keyed by the events. A
    deauthorization purges only once the service refuses the athlete's token (events are not signed).

    Read, decide (webhooks/plan.py, no I/O), apply: twice, since a deauthorization is judged by the service between."""
    client = fitsync_api.client()
    unfinished = _unfinished_purges(client, context.instance)
    events = webhook_inbox.events_after(client.store, int(context.cursor or 0))
    new_ids = {e.inbox_id for e in events}
    candidates = events + [e for e in webhook_inbox.deferred(client.store) if e.inbox_id not in new_ids]
    if not candidates:
        if unfinished:
            return SensorResult(run_requests=unfinished, cursor=context.cursor)
        return SkipReason("no new webhook events")
    cap, window_start = _allowance(client)
    owners = {e.owner_id for e in candidates}
    busy, known = _refreshing(context.instance, owners), {a: known_ids(client.store, a) for a in owners}
    with client.store.transaction() as conn:  # read before it: the write lock is held only for the bookkeeping
        before = inbox_rows.load_lifecycle(conn)
        remaining = webhook_admission.remaining(conn, cap, window_start)
        work, books = decide(candidates, busy=busy, known=known, remaining=remaining, cap=cap, lifecycle=before)
        _record(conn, books, before, cap, window_start)
    if books.deferred:
        held = sum(map(len, books.deferred.values()))
        context.log.info(f"{held} webhook events wait: {sorted(books.deferred)}")
    verdicts = {athlete_id: _check_deauthorization(client, event) for athlete_id, event in work.deauthorized.items()}
    with client.store.transaction() as conn:
        events_of = work.deauthorized
        work, confirmed = settle(work, verdicts, athlete_rows.not_disconnected(conn))
        for athlete_id, (verdict, reason) in verdicts.items():
            webhook_inbox.set_verdict(conn, [events_of[athlete_id].inbox_id], verdict, reason)
            if verdict != "confirmed":
                context.log.warning(f"deauthorization event for athlete {athlete_id} not acted on: {reason}")
        for athlete_id in confirmed:  # stop every sync at once: no tokens, no partition; the purge run removes the data
            athlete_rows.deauthorized(conn, athlete_id, "deauthorized by the athlete")
    runs, partition_requests = run_requests(work, set(context.instance.get_dynamic_partitions(ATHLETES)))
    webhook_inbox.mark_processed(client.store, [e.inbox_id for e in events])
    context.log.info(
        f"{len(events)} events → {len(runs)} runs ({len(work.ignored)} superseded, unproven or for departed athletes)"
    )
    return SensorResult(
        run_requests=runs + unfinished,
        cursor=str(events[-1].inbox_id) if events else context.cursor,
        dynamic_partitions_requests=partition_requests,
    )


def _allowance(client: FitsyncClient) -> tuple[int, int]:
    """(activities per 15-minute window webhook re-pulls may take, the start of the current window)."""
    short_read = next(line for line in client.governor.snapshot() if (line.window, line.budget) == ("short", "read"))
    cap = webhook_admission.allowance_cap(client.config.webhook_share, short_read.limit)
    return cap, int(short_read.resets_at) - client.config.short_window


def _record(conn: Connection, books: Bookkeeping, before: Lifecycle, cap: int, window_start: int) -> None:
    """Write what deciding found, inside the transaction that read what it decided on."""
    webhook_admission.spend(conn, cap, window_start, books.spent)
    for reason, inbox_ids in books.deferred.items():
        webhook_inbox.set_verdict(conn, inbox_ids, "deferred", reason)
    webhook_inbox.set_verdict(conn, books.expired, "rejected", "not acted on: waited a day; left to the nightly sync")
    inbox_rows.reopen(conn, books.admitted)  # admitted events that waited are undecided again (a run decides a delete)
    inbox_rows.save_lifecycle(conn, before, books.lifecycle)


def run_requests(
    work: Plan, partitions: set[str]
) -> tuple[list[RunRequest], list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest]]:
    """The runs a settled plan asks for (a re-pull per athlete with work, a purge per confirmed deauthorization) and
    the partitions to add (an athlete new to Dagster) or remove (a departed one)."""
    runs = [
        RunRequest(
            run_key=w.run_key,
            job_name=webhook_refresh_job.name,
            partition_key=str(w.athlete_id),
            tags={WEBHOOK_TAG: "webhook"},
            run_config={
                "ops": {"activities": {"config": {"activity_ids": sorted(w.refresh), "deleted_ids": sorted(w.delete)}}}
            },
        )
        for w in work.work.values()
        if w.refresh or w.delete
    ]
    runs += [
        purge_request(athlete_id, f"deauthorized-{event.inbox_id}") for athlete_id, event in work.deauthorized.items()
    ]
    new = sorted({str(w.athlete_id) for w in work.work.values()} - partitions)
    gone = sorted({str(a) for a in work.deauthorized} & partitions)
    requests: list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest] = []
    if new:
        requests.append(AddDynamicPartitionsRequest(ATHLETES, new))
    if gone:
        requests.append(DeleteDynamicPartitionsRequest(ATHLETES, gone))
    return runs, requests


IN_FLIGHT = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
PURGE_RETRY_SECONDS = 3600  # a purge that failed (the warehouse held for long) is asked for again once an hour,
PURGE_GRACE_SECONDS = 600  # from this long after the revocation (the first purge run is launched by then)
PURGED_TAG = "fitsync/purged_athlete"


def purge_request(athlete_id: int, run_key: str) -> RunRequest:
    return RunRequest(
        run_key=run_key,
        job_name=purge_athlete_job.name,
        run_config={"ops": {"purge_athlete_data": {"config": {"athlete_id": athlete_id}}}},
        tags={PURGED_TAG: str(athlete_id)},
    )


def _unfinished_purges(client: FitsyncClient, instance: DagsterInstance) -> list[RunRequest]:
    """A purge for each athlete who revoked access and is still here with no purge run under way: the first one
    failed or was stopped (its state goes last: pipelines/purge.py). Keyed by the hour, so tried again hourly."""
    departed = athlete_rows.disconnected(client.store, before=time.time() - PURGE_GRACE_SECONDS)
    if not departed:
        return []
    runs = instance.get_runs(RunsFilter(job_name=purge_athlete_job.name, statuses=IN_FLIGHT))
    under_way = {int(r.tags[PURGED_TAG]) for r in runs if r.tags.get(PURGED_TAG, "").isdigit()}
    hour = int(time.time() // PURGE_RETRY_SECONDS)
    return [purge_request(a, f"purge-again-{a}-{hour}") for a in sorted(departed - under_way)]


def _refreshing(instance: DagsterInstance, athletes: set[int]) -> set[int]:
    """Athletes with a webhook refresh run queued or running: their new events wait for it (coalescing)."""
    runs = instance.get_runs(RunsFilter(job_name=webhook_refresh_job.name, statuses=IN_FLIGHT))
    return {int(r.tags["dagster/partition"]) for r in runs if r.tags.get("dagster/partition", "").isdigit()} & athletes


def _check_deauthorization(client: FitsyncClient, event: webhook_inbox.Event) -> tuple[str, str]:
    """(verdict, reason): confirmed only when the service refuses the athlete's token; a newer grant stands."""
    with client.store.reading() as conn:
        settled = judge_grant(event, athlete_rows.grant(conn, event.owner_id))
    if settled is not None:
        return settled
    asked = time.time()
    try:
        client.athlete(event.owner_id, max_wait=5.0).athlete()
    except NotConnected:  # disconnected meanwhile: that disconnect's own purge removes the data
        return "confirmed", "the athlete is not connected"
    except ReauthorizationRequired as refused:
        return _refused(client, event.owner_id, refused, asked)
    except RateBudgetExhausted as error:
        return "deferred", f"unanswered: {error}; checked again at the next evaluation"
    except (FitsyncError, httpx.HTTPError) as error:
        return "deferred", f"the check failed ({type(error).__name__}: {error}); checked again at the next evaluation"
    return "rejected", "the service still accepts the athlete's token: not a revocation"


def _refused(client: FitsyncClient, athlete_id: int, refused: ReauthorizationRequired, asked: float) -> tuple[str, str]:
    """Proof only when the service refused the athlete's refresh token during this check, and not because this very
    check lost the answer to a rotation. A refusal stored before it (a refresh whose answer was lost in transit, a
    token fitsync lost otherwise) was taken for proof, and a forged event then purged an athlete still connected at
    the service, thresholds typed by hand included."""
    with client.store.reading() as conn:
        since = athlete_rows.refused_at(conn, athlete_id)
    if since is not None and since >= asked and LOST_ROTATION not in refused.reason:
        return "confirmed", f"the service refuses the athlete's token ({refused})"
    return "rejected", (
        f"no proof: fitsync holds no token of athlete {athlete_id} the service could refuse ({refused.reason}), so "
        f"their data is kept; if they did revoke access, `fitsync disconnect {athlete_id}` deletes it, and "
        "`fitsync connect` reconnects them if not"
    )
