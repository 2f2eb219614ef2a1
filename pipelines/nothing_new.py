"""A sync with nothing new: the profile and one listing page, compared with what the last run saw, and no Dagster.

Most nightly syncs of a caught-up athlete find nothing: starting Dagster for them costs seconds (its import and a
run of a dozen steps) for the same two calls. Before any run, `fitsync sync` checks, from the state store (and the
warehouse for streams), that nothing is waiting (no detail, zones — unless the athlete has no subscription, so none
will be asked for —, streams or segment to fetch, no landed batch to load, nothing on its cadence, no full listing due); then it asks the service
for the profile and the incremental listing and compares each answer, whole, with the digest the last run stored
(progress.LISTING_DIGEST, PROFILE_DIGEST): every complete listing, full or incremental, stores the digest of its
incremental window (progress.window_digest), so the second sync of all, and the one after a `--full`, compare. Identical answers mean
the run would fetch and load nothing. Anything else — a difference, an error, a shape fitsync does not know, a
budget that says wait — goes to the run, which handles it as always (at the price of those two calls again).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from fitsync.client import stop_request
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import shape_problem
from fitsync.client.runtime import FitsyncClient
from fitsync.sync import cadence, landing, progress
from fitsync.sync.known_answers import Known

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    nothing_new: bool
    calls: int
    why: str  # what was found (a run follows), or what was compared
    budget_until: float | None = None  # the budget is spent past --max-wait until then: a run would do nothing
    error: Exception | None = None  # what stopped the check (a run would meet it again, e.g. a service not answering)
    known: Known | None = None  # the answers that differed, for the run's first steps (sync/known_answers.py)


def waiting(client: FitsyncClient, aid: int) -> str | None:
    """What a run would do without asking the service anything new, or None: nothing. No API call."""
    store = client.store
    cursor = progress.get_cursor(store, aid, progress.LISTED_AFTER)
    if cursor is None and (why := progress.full_listing_due(store, aid, cursor)):  # first sync, whatever else
        return f"a full listing is due ({why})"
    if why := _warehouse_unfit(client):
        return why
    if why := _warehouse_lacks(client, aid):
        return why
    if why := progress.full_listing_due(store, aid, cursor):
        return f"a full listing is due ({why})"
    non_subscriber = progress.known_non_subscriber(store, aid)
    for what in ("detail", "zones"):
        if what == "zones" and non_subscriber:
            continue  # asked for once the profile says premium: a changed profile runs the sync
        if n := progress.count_needing(store, aid, what):
            return f"{n} activities wait for their {'details' if what == 'detail' else what}"
    if segments := progress.segments_to_detail(store, aid):
        return f"{len(segments)} segments wait for their details"
    if landed := landing.count(store, aid):
        return f"{landed} fetched batches wait for the warehouse"
    from . import stream_queue  # DuckDB and Polars: not on every command's start (cli/sync imports this module)

    if streams := stream_queue.count_waiting(client.config, aid):
        return stream_queue.waiting_text(streams)
    for name in cadence.SLOW:
        if name == "segment_effort_history" and non_subscriber:
            continue
        if cadence.not_due(client, aid, name) is None:  # the warehouse's holding was asked by _warehouse_lacks
            return f"{name} is due (slow_refresh_hours)"
    if not progress.get_cursor(store, aid, progress.LISTING_DIGEST) or not progress.get_cursor(
        store, aid, progress.PROFILE_DIGEST
    ):
        return "no complete listing on record yet to compare with"
    return None


# Bytes 8–11 of every DuckDB database file.
DUCKDB_MAGIC = b"DUCK"


def _warehouse_unfit(client: FitsyncClient) -> str | None:
    """Why the warehouse file cannot be the one the last run wrote: gone (moved aside: the run rebuilds it), not
    readable, or damaged. None for a lake, whose catalog only a connection can check."""
    return _warehouse_head(client, unfit=True)


def _warehouse_lacks(client: FitsyncClient, aid: int) -> str | None:
    """Why the warehouse cannot hold what earlier runs loaded for the athlete: it has none of their activities (a file
    moved aside, then made anew by another athlete's run: the listing and the service's answers are unchanged, and
    only a run fetches them again), or it could not be read now. None when it holds some, or none are known."""
    from fitsync.resources.warehouse import warehouse_of
    from fitsync.warehouse import db

    if not (known := len(progress.known_ids(client.store, aid))):
        return None
    try:
        if db.holds_athlete(warehouse_of(client.config), aid, timeout=2.0):
            return None
    except Exception as error:  # noqa: BLE001 (busy or unreadable: the run waits for it, or says what it is)
        return f"the warehouse could not be read now ({str(error).splitlines()[0]})"
    return f"the warehouse holds none of the {known} activities earlier runs loaded"


def damaged_warehouse(client: FitsyncClient) -> str | None:
    """The line naming the fix when the warehouse file is not a DuckDB database (damaged: every run would fail on it
    after spending its calls, so none is started). Its first bytes only: no DuckDB to load. A file shorter than a
    header is one DuckDB is still creating, left to the run; None for a lake, or a file not there or not readable."""
    return _warehouse_head(client, unfit=False)


def _warehouse_head(client: FitsyncClient, *, unfit: bool) -> str | None:
    """What the warehouse file's first bytes say; a file not there or unreadable is said only when `unfit`."""
    from fitsync.client.explain import not_a_warehouse
    from fitsync.resources.warehouse import warehouse_of

    path = warehouse_of(client.config).file
    if path is None:
        return None
    try:
        with path.open("rb") as file:
            head = file.read(12)
    except FileNotFoundError:
        return f"the warehouse {path} is not there" if unfit else None
    except OSError as error:
        return f"the warehouse {path} cannot be read ({error.strerror})" if unfit else None
    return not_a_warehouse(path) if len(head) == 12 and head[8:12] != DUCKDB_MAGIC else None


def check(client: FitsyncClient, aid: int, *, priority: str, max_wait: float) -> Check:
    """Whether a run for this athlete would find nothing new; calls the service only when nothing is waiting."""
    if why := waiting(client, aid):
        return Check(False, 0, why)
    store = client.store
    cursor = progress.get_cursor(store, aid, progress.LISTED_AFTER)
    assert cursor is not None  # waiting() found nothing: without this cursor a full listing would be due
    after = progress.incremental_after(cursor)
    before = client.transport.calls
    session = client.athlete(aid, max_wait=max_wait, priority=priority)
    try:
        profile = session.athlete()
        if progress.digest([profile.raw]) != progress.get_cursor(store, aid, progress.PROFILE_DIGEST):
            return Check(
                False, client.transport.calls - before, "the profile changed", known=Known(profile, after, None)
            )
        records = list(session.activities(after=after))
        listed = (s.raw for s in records if not shape_problem("activity", s.raw))
        if progress.window_digest(listed, after) != progress.get_cursor(store, aid, progress.LISTING_DIGEST):
            known = Known(profile, after, records)
            return Check(False, client.transport.calls - before, "the listing changed", known=known)
    except stop_request.StopRequested:
        raise
    except RateBudgetExhausted as spent:
        return Check(False, client.transport.calls - before, str(spent), budget_until=spent.resets_at)
    except Exception as error:  # the run meets it again and reports it properly
        log.debug("nothing-new check of athlete %s: %s", aid, error)
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return Check(False, client.transport.calls - before, f"the check could not finish ({first})", error=error)
    with store.transaction() as conn:
        progress.set_cursor(conn, aid, progress.NOTHING_NEW_AT, repr(time.time()))
    return Check(True, client.transport.calls - before, "the profile and the listing are as the last run saw them")
