"""The activity listing, without Dagster: which listing a run makes (incremental from its cursor, or all the way back
and why), the listing itself page by page into the landing area and the queue, and the athlete's stats as a check
that nothing older was missed. Why listings overlap and when they go all the way back: assets/activities.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import Record, UnexpectedShape, owner_problem, shape_problem
from fitsync.state.store import StateStore

from . import cadence, landing, progress

# The cursor never moves past now plus this: a clock error or a hand-typed date next year must not hide every later
# upload from incremental listings (such activities are loaded all the same).
CLOCK_SKEW_SECONDS = 3600
PAGE = 200  # summaries landed and queued per transaction


class ListingNotes(Protocol):
    """What a listing tells the run's metadata (resources.run.Meter is one)."""

    def budget_spent(self, note: str) -> None: ...

    def wrong_answer(self, endpoint: str, problem: str) -> None: ...

    def left_out(self, line: str) -> None: ...


@dataclass(frozen=True)
class Plan:
    """Which listing this run makes: from `after` (None: all the way back), and why it is full (None: incremental)."""

    cursor: str | None  # progress.LISTED_AFTER before this run: the newest start time listed so far
    why_full: str | None
    after: int | None
    warning: str | None = None  # said as a warning: the warehouse is new, so everything is fetched again

    @property
    def full(self) -> bool:
        return self.why_full is not None

    def all_the_way_back(self, why: str) -> Plan:
        """The same run, now listing everything (the stats count activities the incremental listing did not show)."""
        return replace(self, why_full=why, after=None)


def plan(store: StateStore, aid: int, asked: bool, warehouse_holds_athlete: Callable[[], bool]) -> Plan:
    """The listing due: full when asked, on the first sync, when the last full one is old, or when the warehouse was
    moved aside while fitsync knew activities (their details are then queued again). `warehouse_holds_athlete`: whether
    the warehouse has any activity of the athlete — asked only when the state says details were fetched (a new,
    empty warehouse file is no proof: `fitsync sync` creates the schema before the run starts)."""
    cursor = progress.get_cursor(store, aid, progress.LISTED_AFTER)
    why_full = _why_full(store, aid, asked, cursor)
    warning = None
    known = progress.known_ids(store, aid)
    if len(known) > progress.count_needing(store, aid, "detail") and not warehouse_holds_athlete():
        # moved aside (damaged, or to start over): the details the state says were fetched are in no warehouse
        with store.transaction() as conn:
            progress.request_refresh(conn, aid, sorted(known), zones=True)
            # and what the cadence keeps: stats, zones, starred segments, effort histories, segment details (they came
            # back as nothing: "not due", and the next sync "nothing new")
            progress.delete_cursors(conn, aid, [cadence.cursor(name) for name in cadence.AFTER_LISTING])
            progress.segments_again(conn, aid)
        why_full = "the warehouse is new while fitsync knew activities: every one is fetched again"
        warning = f"athlete {aid}: {why_full}"
    after = None if why_full is not None or cursor is None else progress.incremental_after(cursor)
    return Plan(cursor, why_full, after, warning)


def _why_full(store: StateStore, aid: int, asked: bool, cursor: str | None) -> str | None:
    """Why this listing goes all the way back, or None for an incremental one."""
    if asked:
        return "asked for (--full or the weekly schedule)"
    return progress.full_listing_due(store, aid, cursor)


@dataclass(frozen=True)
class Listing:
    """What one listing (or an incremental one followed by a full one) saw."""

    seen: set[int]
    totals: progress.ListingOutcome
    newest: int  # the newest start time seen, never past now + CLOCK_SKEW_SECONDS
    complete: bool
    digest: str = ""  # of its incremental window's answer (progress.window_digest)

    def followed_by(self, deep: Listing) -> Listing:
        """This incremental listing and the full one that followed it in the same run, as one."""
        return Listing(self.seen | deep.seen, deep.totals + self.totals, deep.newest, deep.complete, deep.digest)


def list_activities(
    store: StateStore, session: Any, aid: int, after: int | None, newest: int, notes: ListingNotes
) -> Listing:
    """List (from `after`, or all), recording each page as it comes; an incomplete listing says so."""
    seen: set[int] = set()
    unreadable: dict[str, int] = {}
    totals = progress.ListingOutcome(0, 0, 0)
    complete = True
    raws: list[Any] = []
    try:
        page: list[Record] = []
        for summary in session.activities(after=after):
            problem = shape_problem("activity", summary.raw) or owner_problem(summary.raw, aid)
            if problem:  # kept raw and said; the rest of the page loads
                with store.transaction() as conn:
                    landing.keep_unrecognized(conn, aid, "GET /athlete/activities", problem, summary.raw)
                unreadable[problem] = unreadable.get(problem, 0) + 1
                continue
            page.append(summary)
            if progress.in_window(summary.raw, newest):  # what a later incremental listing answers: nothing_new
                raws.append(summary.raw)
            if len(page) == PAGE:
                totals = _record_page(store, aid, page, totals)
                page = []
            seen.add(summary.id)
            started = progress.start_ts(summary.raw)
            if started is not None and started <= time.time() + CLOCK_SKEW_SECONDS:
                newest = max(newest, started)
        if page:
            totals = _record_page(store, aid, page, totals)
    except RateBudgetExhausted as stop:
        complete = False
        notes.budget_spent(f"rate budget spent: listing continues next run ({stop})")
    except UnexpectedShape as odd:  # an incomplete listing: no cursor move, no deletion
        complete = False
        with store.transaction() as conn:
            landing.keep_unrecognized(conn, aid, odd.endpoint, odd.problem, odd.body)
        notes.wrong_answer(odd.endpoint, odd.problem)
    for problem, n in unreadable.items():
        notes.left_out(f"athlete {aid}: {n} listed element(s) left out: {problem} (kept raw in unrecognized_payloads)")
    return Listing(seen, totals, newest, complete, progress.window_digest(raws, progress.incremental_after(newest)))


def _record_page(
    store: StateStore, aid: int, page: list[Record], totals: progress.ListingOutcome
) -> progress.ListingOutcome:
    """Land a page of summaries and queue what is new or changed, in one transaction."""
    with store.transaction() as conn:
        landing.land(conn, aid, "activity_summaries", [s.raw for s in page])
        return totals + progress.record_listing(conn, aid, page)


def stats_gap_reason(store: StateStore, aid: int) -> str | None:
    """After an incremental listing: do the athlete's stats count activities fitsync has not seen (beyond the
    gap left after the last full listing, which no listing explains)?"""
    gap, known_gap = progress.stats_gap(store, aid), progress.get_cursor(store, aid, progress.STATS_GAP)
    if gap is not None and gap > int(known_gap or 0):
        return (
            f"the athlete's stats count {gap - int(known_gap or 0)} more activities than fitsync has "
            "(an upload backdated beyond the overlap window?)"
        )
    return None


def remember_stats_gap(store: StateStore, aid: int) -> None:
    """After a complete full listing: what the stats count and no listing shows is not ours to find; later
    incremental listings go all the way back only for more than this (stats_gap_reason)."""
    gap = progress.stats_gap(store, aid)
    with store.transaction() as conn:
        progress.set_cursor(conn, aid, progress.STATS_GAP, str(max(gap or 0, 0)))
