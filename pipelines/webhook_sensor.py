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
from fitsync.pipelines.purge import purge_athlete_job
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import ATHLETES
from fitsync.resources.run import WEBHOOK_TAG
from fitsync.sync.progress import known_ids
from fitsync.webhooks import admission as webhook_admission
from fitsync.webhooks import inbox as webhook_inbox
from fitsync.webhooks.plan import load_lifecycle, plan, save_lifecycle

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
    deauthorization purges only once the service refuses the athlete's token (events are not signed)."""
    client = fitsync_api.client()
    events = webhook_inbox.events_after(client.store, int(context.cursor or 0))
    new_ids = {e.inbox_id for e in events}
    candidates = events + [e for e in webhook_inbox.deferred(client.store) if e.inbox_id not in new_ids]
    if not candidates:
        return SkipReason("no new webhook events")
    short_read = next(line for line in client.governor.snapshot() if (line.window, line.budget) == ("short", "read"))
    cap = webhook_admission.allowance_cap(client.config.webhook_share, short_read.limit)
    window_start = int(short_read.resets_at) - client.config.short_window
    owners = {e.owner_id for e in candidates}
    busy, known = _refreshing(context.instance, owners), {a: known_ids(client.store, a) for a in owners}
    with client.store.transaction() as conn:  # read before it: the write lock is held only for the bookkeeping
        admission = webhook_admission.admit(
            candidates,
            busy=busy,
            known=known.__getitem__,
            remaining=webhook_admission.remaining(conn, cap, window_start),
            cap=cap,
        )
        webhook_admission.spend(conn, cap, window_start, admission.spent)
        for reason in set(admission.held.values()):
            webhook_inbox.set_verdict(conn, [i for i, r in admission.held.items() if r == reason], "deferred", reason)
        webhook_inbox.set_verdict(
            conn, admission.expired, "rejected", "not acted on: waited a day; left to the nightly sync"
        )
        # Admitted events that waited before are undecided again (a run records a delete's verdict).
        conn.executemany(
            "UPDATE webhook_inbox SET verdict = NULL, verdict_reason = NULL WHERE id = ? AND verdict = 'deferred'",
            [(e.inbox_id,) for e in admission.admitted],
        )
        before = load_lifecycle(conn)
        after = dict(before)
        work = plan(admission.admitted, after)
        save_lifecycle(conn, before, after)
    if admission.held:
        context.log.info(f"{len(admission.held)} webhook events wait: {sorted(set(admission.held.values()))}")
    verdicts = {athlete_id: _check_deauthorization(client, event) for athlete_id, event in work.deauthorized.items()}
    with client.store.transaction() as conn:
        for athlete_id, (verdict, reason) in verdicts.items():
            event = work.deauthorized[athlete_id]
            webhook_inbox.set_verdict(conn, [event.inbox_id], verdict, reason)
            if verdict != "confirmed":
                context.log.warning(f"deauthorization event for athlete {athlete_id} not acted on: {reason}")
                del work.deauthorized[athlete_id]
                work.ignored.append(event.inbox_id)
                continue
            # Stop every sync at once: no tokens, no partition; the purge run removes the data.
            conn.execute(
                "UPDATE athletes SET status = 'disconnected', access_token = NULL, refresh_token = NULL, "
                "status_reason = 'deauthorized by the athlete', updated_at = ? WHERE athlete_id = ?",
                (time.time(), athlete_id),
            )
        # An event stored while the athlete was leaving (or after a batch boundary) launches nothing for them.
        connected = {r[0] for r in conn.execute("SELECT athlete_id FROM athletes WHERE status <> 'disconnected'")}
        for athlete_id in set(work.work) - connected:
            work.ignored.extend(work.work.pop(athlete_id).inbox_ids)
    partitions = set(context.instance.get_dynamic_partitions(ATHLETES))
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
        RunRequest(
            run_key=f"deauthorized-{event.inbox_id}",
            job_name=purge_athlete_job.name,
            run_config={"ops": {"purge_athlete_data": {"config": {"athlete_id": athlete_id}}}},
        )
        for athlete_id, event in work.deauthorized.items()
    ]
    new = sorted({str(w.athlete_id) for w in work.work.values()} - partitions)
    gone = sorted({str(a) for a in work.deauthorized} & partitions)
    requests: list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest] = []
    if new:
        requests.append(AddDynamicPartitionsRequest(ATHLETES, new))
    if gone:
        requests.append(DeleteDynamicPartitionsRequest(ATHLETES, gone))
    webhook_inbox.mark_processed(client.store, [e.inbox_id for e in events])
    context.log.info(
        f"{len(events)} events → {len(runs)} runs ({len(work.ignored)} superseded, unproven or for departed athletes)"
    )
    return SensorResult(
        run_requests=runs,
        cursor=str(events[-1].inbox_id) if events else context.cursor,
        dynamic_partitions_requests=requests,
    )


IN_FLIGHT = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]


def _refreshing(instance: DagsterInstance, athletes: set[int]) -> set[int]:
    """Athletes with a webhook refresh run queued or running: their new events wait for it (coalescing)."""
    runs = instance.get_runs(RunsFilter(job_name=webhook_refresh_job.name, statuses=IN_FLIGHT))
    return {int(r.tags["dagster/partition"]) for r in runs if r.tags.get("dagster/partition", "").isdigit()} & athletes


def _check_deauthorization(client: FitsyncClient, event: webhook_inbox.Event) -> tuple[str, str]:
    """(verdict, reason): confirmed only when the service refuses the athlete's token; a newer grant stands."""
    with client.store.reading() as conn:
        row = conn.execute("SELECT granted_at, status FROM athletes WHERE athlete_id = ?", (event.owner_id,)).fetchone()
    # event_time is in whole seconds: a grant counts as newer only from the next second on (a revocation in the
    # same second as the grant is checked with the service).
    if row is not None and int(row["granted_at"]) > event.event_time:
        return "rejected", "the athlete connected again after this event"
    if row is None or row["status"] == "disconnected":
        return "confirmed", "the athlete is not connected"
    try:
        client.athlete(event.owner_id, max_wait=5.0).athlete()
    except (ReauthorizationRequired, NotConnected) as refused:
        return "confirmed", f"the service refuses the athlete's token ({refused})"
    except RateBudgetExhausted as error:
        return "deferred", f"unanswered: {error}; checked again at the next evaluation"
    except (FitsyncError, httpx.HTTPError) as error:
        return "deferred", f"the check failed ({type(error).__name__}: {error}); checked again at the next evaluation"
    return "rejected", "the service still accepts the athlete's token: not a revocation"
