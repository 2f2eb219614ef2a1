"""Starred segments, segment details (starred and seen in efforts) and effort histories on starred segments."""

import datetime as dt
from typing import Any

from dagster import AssetExecutionContext, MaterializeResult, asset

from fitsync.client.errors import ApiError, MissingScope, NotFound, PaymentRequired
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import UnexpectedShape, owner_problem, shape_problem
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, LAST, is_webhook_run, metered, priority, refreshes_all
from fitsync.state import progress as queue
from fitsync.sync import cadence, landing, progress


@asset(partitions_def=athletes_partitions, pool=API_POOL, group_name="fetch", kinds={"api"})
def starred_segments(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """The athlete's starred segments (the whole list each time: unstarring shows up as a removal)."""
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    session = client.athlete(aid, max_wait=fitsync_api.max_wait_seconds, priority=priority(context, client.store, aid))
    with metered(client) as meter:
        if why := cadence.skip_reason(refreshes_all(context), client, aid, "starred_segments"):
            meter.notes.append(why)
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        try:
            starred = [s.raw for s in session.starred_segments()]
        except RateBudgetExhausted as stop:  # the whole list or nothing: an unstarring must not look like a removal
            meter.budget_spent(f"rate budget spent: fetched next run ({stop})")
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        except UnexpectedShape as odd:
            with client.store.transaction() as conn:
                landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body)
            meter.wrong_answer(odd.endpoint, odd.problem)  # the starred list stays as it was
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        listed = {s.get("id") for s in starred}
        gone = [s for s, _ in queue.starred_segments(client.store, aid) if s not in listed]
        try:
            still = next((s for s in gone[:UNSTAR_CHECKS] if _still_starred(session, s)), None)
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: the unstarred segments are checked next run ({stop})")
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        except (UnexpectedShape, ApiError) as odd:  # no proof either way: the stored list stays, said
            meter.wrong_answer("GET /segments/{id}", f"{odd}: the starred list stays as it was")
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        if still is not None:  # a list short by mistake: it would unstar (and delete) what the athlete still stars
            problem = f"a list without segment {still}, which the service still shows starred"
            with client.store.transaction() as conn:
                landing.keep_unrecognized(conn, aid, "GET /segments/starred", problem, starred)
            meter.wrong_answer("GET /segments/starred", f"{problem}: the starred list stays as it was")
            return MaterializeResult(metadata=meter.metadata(skipped=True))
        with client.store.transaction() as conn:
            landing.land(conn, aid, "starred_segments", starred, {"replace_parents": [aid]})
            queue.unstar_all(conn, aid)
            progress.note_segments(conn, aid, [s["id"] for s in starred], starred=True)
            cadence.refreshed(conn, aid, "starred_segments")
        return MaterializeResult(metadata=meter.metadata(starred=len(starred)))


@asset(
    partitions_def=athletes_partitions,
    pool=API_POOL,
    group_name="fetch",
    kinds={"api"},
    deps=["starred_segments", "activity_details"],
)
def segments(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Segment details, once per segment: starred ones and every segment seen in an effort."""
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    session = client.athlete(
        aid,
        bulk=not is_webhook_run(context),
        max_wait=fitsync_api.max_wait_seconds,
        priority=priority(context, client.store, aid),
    )
    todo = progress.segments_to_detail(client.store, aid)
    fetched = 0
    with metered(client) as meter:
        try:
            for segment_id in todo:
                try:
                    payload = [session.segment(segment_id).raw]
                except NotFound as error:
                    if not error.about("Segment"):  # a 404 for the request's path: a wrong address, nothing said
                        raise
                    payload = []  # private to someone else: its summary stays
                except MissingScope:
                    payload = []  # needs read_all: its summary stays
                except UnexpectedShape as odd:  # kept raw; the segment stays queued
                    with client.store.transaction() as conn:
                        landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body, segment_id)
                    meter.wrong_answer(odd.endpoint, odd.problem)
                    continue
                with client.store.transaction() as conn:
                    if payload:
                        landing.land(conn, aid, "segments", payload)
                    queue.segment_fetched(conn, aid, segment_id)
                fetched += len(payload)
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: the rest continues next run ({stop})")
        return MaterializeResult(metadata=meter.metadata(fetched=fetched, queued=len(todo)))


@asset(
    partitions_def=athletes_partitions,
    pool=API_POOL,
    group_name="fetch",
    kinds={"api"},
    deps=["starred_segments", "athlete"],
    op_tags=LAST,
)
def segment_effort_history(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """The athlete's efforts on each starred segment, incrementally: a subscriber feature, so a 402 is a skip and
    no call is spent while the profile (fetched first) says the athlete has no subscription."""
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    session = client.athlete(
        aid, bulk=True, max_wait=fitsync_api.max_wait_seconds, priority=priority(context, client.store, aid)
    )
    skip = (
        progress.NOT_SUBSCRIBED
        if progress.known_non_subscriber(client.store, aid)
        else cadence.skip_reason(refreshes_all(context), client, aid, "segment_effort_history")
    )
    if skip:
        with metered(client) as meter:
            meter.notes.append(skip)
            return MaterializeResult(metadata=meter.metadata(skipped=True, efforts=0))
    starred = queue.starred_segments(client.store, aid)
    efforts = 0
    with metered(client) as meter:
        # a date past every clock on Earth would freeze a history there: stored, never the cursor
        latest = (dt.datetime.now(dt.UTC) + MAX_AHEAD).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            for segment_id, efforts_after in starred:
                from_local = None if efforts_after is None else _parse_local(efforts_after)
                batch, odd = _own_efforts(
                    [e.raw for e in session.segment_efforts(segment_id, start_local=from_local)], aid
                )
                dates = [d for e in batch if isinstance(d := e.get("start_date_local"), str) and d <= latest]
                newest = max(dates, default=efforts_after)
                with client.store.transaction() as conn:
                    if batch:
                        landing.land(conn, aid, "segment_efforts", [{"segment_efforts": batch}])
                    for effort, problem in odd:
                        landing.keep_unrecognized(conn, aid, EFFORTS, problem, effort)
                    queue.set_efforts_after(conn, aid, segment_id, newest)
                for _, problem in odd:
                    meter.left_out(f"athlete {aid}: an effort on segment {segment_id} left out: {problem} (kept raw)")
                efforts += len(batch)
            with client.store.transaction() as conn:
                cadence.refreshed(conn, aid, "segment_effort_history")
        except PaymentRequired:
            meter.notes.append("skipped: effort histories need a subscription the athlete does not have (402)")
            with client.store.transaction() as conn:
                progress.note_subscriber(conn, aid, False)
            return MaterializeResult(metadata=meter.metadata(skipped=True, efforts=efforts))
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: the rest continues next run ({stop})")
        except UnexpectedShape as odd:
            with client.store.transaction() as conn:
                landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body)
            meter.wrong_answer(odd.endpoint, odd.problem)  # the histories continue next run
        return MaterializeResult(metadata=meter.metadata(skipped=False, efforts=efforts, segments=len(starred)))


# Segments a new starred list lacks whose detail is asked whether they are still starred (its `starred`): one still
# starred shows the list short by mistake; when the first few are unstarred, the athlete unstarred them.
UNSTAR_CHECKS = 3


def _still_starred(session: Any, segment_id: int) -> bool:
    """Whether the segment's detail says the athlete still stars it (gone: not starred). One this grant may not see
    (a private segment without read_all, which the list leaves out too) tells nothing: not taken for starred."""
    try:
        return session.segment(segment_id).get("starred") is True
    except MissingScope:
        return False
    except NotFound as error:
        if not error.about("Segment"):
            raise
        return False


EFFORTS = "GET /segment_efforts"
MAX_AHEAD = dt.timedelta(hours=15)  # a local wall-clock time is at most UTC+14, and an hour of clock skew


def _own_efforts(efforts: list[Any], aid: int) -> tuple[list[Any], list[tuple[Any, str]]]:
    """The efforts to store, and those left out with why (another athlete's; not an effort at all)."""
    kept, odd = [], []
    for effort in efforts:
        if problem := shape_problem("effort", effort) or owner_problem(effort, aid, "effort"):
            odd.append((effort, problem))
        else:
            kept.append(effort)
    return kept, odd


def _parse_local(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.rstrip("Z"))
