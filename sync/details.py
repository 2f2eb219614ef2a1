"""The details and zones queue, one chunk at a time: fetch each queued activity's detail (and, for the details,
its zones right after), then record the whole chunk in one transaction — landed payloads, ticks in the queue,
deletions the service proved, answers of the wrong shape kept raw — so that a killed or budget-stopped run is
continued by the next one without repeating a call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fitsync.client.errors import FitsyncError, MissingScope, NotFound, PaymentRequired
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.client.records import Record, UnexpectedShape, owner_problem
from fitsync.client.transport import ResponseTooLarge
from fitsync.state.store import StateStore

from . import landing, progress

Fetch = Callable[[Any, int], dict[str, Any]]


@dataclass
class Chunk:
    """What one pass over a chunk of the queue got."""

    payloads: list[dict[str, Any]] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # 404: deleted (or made private) since it was listed
    hidden: list[int] = field(default_factory=list)  # made Only You: this grant may no longer see it
    odd: list[tuple[int, UnexpectedShape]] = field(default_factory=list)  # kept raw, stays queued
    zones: list[dict[str, Any]] = field(default_factory=list)
    zones_done: list[int] = field(default_factory=list)
    no_subscription: bool = False  # a zones call answered 402: the athlete has no subscription
    stopped: Exception | None = None  # why the chunk ended early (budget, 402, a scope not granted)

    def pending(self) -> int:
        """The queue's activities fetched and not recorded yet (as `record_chunk` counts them done)."""
        return len(self.done) + len(self.missing) + len(self.hidden)

    def empty(self) -> bool:
        return not (self.done or self.missing or self.hidden or self.odd or self.zones_done)

    def recorded(self) -> None:
        """Forget what was recorded (a chunk recorded before a wait for the budget goes on filling after it);
        `no_subscription` and `stopped` stay: they decide what the caller does next."""
        for part in (self.payloads, self.done, self.missing, self.hidden, self.odd, self.zones, self.zones_done):
            part.clear()


def fetch_detail(session: Any, activity_id: int) -> dict[str, Any]:
    record: Record = session.activity(activity_id, include_all_efforts=True)
    if record.id != activity_id:
        raise UnexpectedShape("GET /activities/{id}", "activity", record.raw, f"activity {record.id} for {activity_id}")
    if problem := owner_problem(record.raw, session.athlete_id):
        raise UnexpectedShape("GET /activities/{id}", "activity", record.raw, problem)
    return record.raw


def fetch_zones(session: Any, activity_id: int) -> dict[str, Any]:
    return {"activity_id": activity_id, "zones": [z.raw for z in session.activity_zones(activity_id)]}


def fetch_chunk(session: Any, ids: list[int], fetch: Fetch, want_zones: set[int], chunk: Chunk | None = None) -> Chunk:
    """Fetch `ids` in turn into `chunk` (a new one by default), and the zones of those in `want_zones` that can have
    zones; stop at the first answer that ends the run (kept in `stopped`), keeping what was already fetched: it is
    never fetched twice."""
    chunk = chunk if chunk is not None else Chunk()
    for activity_id in ids:
        try:
            chunk.payloads.append(fetch(session, activity_id))
            chunk.done.append(activity_id)
            if not chunk.no_subscription and activity_id in want_zones and progress.may_have_zones(chunk.payloads[-1]):
                try:
                    chunk.zones.append(fetch_zones(session, activity_id))
                    chunk.zones_done.append(activity_id)
                except PaymentRequired:  # learnt here: the zones asset says so and spends nothing
                    chunk.no_subscription = True
                except (NotFound, UnexpectedShape, MissingScope, ResponseTooLarge):  # left queued for the zones asset
                    pass
        except NotFound as error:
            if not error.about("Activity"):  # a 404 for the request's path: a wrong address, nothing gone
                chunk.stopped = error
                break
            chunk.missing.append(activity_id)
        except UnexpectedShape as error:
            chunk.odd.append((activity_id, error))
        except MissingScope as error:
            if error.scope != "activity:read_all":
                chunk.stopped = error
                break
            chunk.hidden.append(activity_id)
        except ResponseTooLarge as error:  # as large at every run: said, and the queue behind it goes on
            chunk.odd.append((activity_id, UnexpectedShape(_endpoint(fetch), "answer", None, f"{error}: not read")))
        except (FitsyncError, RateBudgetExhausted) as error:  # what ends the run: the chunk's fetches are kept
            chunk.stopped = error
            break
    return chunk


def _endpoint(fetch: Fetch) -> str:
    return "GET /activities/{id}/zones" if fetch is fetch_zones else "GET /activities/{id}"


ZONES = "activity_zones"


def _without_empty_zones(bundle: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What is landed: an empty zones answer replaces nothing (an activity's stored zones are deleted on no answer's
    word: activities without zones answer empty, and so may a service in trouble for one that has them)."""
    return [p for p in payloads if bundle != ZONES or p.get("zones")]


def _zones_gone(details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """No zones for the activities whose detail says they can have none (no heart rate, no power meter, no pace
    over GPS): the service's own word, so stored zones of a ride whose heart rate the athlete removed go with it."""
    return [{"activity_id": d["id"], "zones": []} for d in details if not progress.may_have_zones(d)]


def record_chunk(store: StateStore, aid: int, what: str, bundle: str, chunk: Chunk) -> None:
    """Land and tick off the chunk in one transaction."""
    with store.transaction() as conn:
        if payloads := _without_empty_zones(bundle, chunk.payloads):
            landing.land(conn, aid, bundle, payloads)
        progress.mark(conn, aid, chunk.done, what)
        progress.add_done(conn, aid, what, chunk.pending())
        gone = _zones_gone(chunk.payloads) if what == "detail" else []
        if zones := _without_empty_zones(ZONES, chunk.zones) + gone:
            landing.land(conn, aid, ZONES, zones)
        if chunk.zones_done:
            progress.mark(conn, aid, chunk.zones_done, "zones")
            progress.add_done(conn, aid, "zones", len(chunk.zones_done))
        if chunk.no_subscription:
            progress.note_subscriber(conn, aid, False)
        for activity_id, error in chunk.odd:
            landing.keep_unrecognized(conn, aid, error.endpoint, error.problem, error.body, activity_id)
        if what == "detail":
            progress.note_details(conn, aid, chunk.payloads)
            progress.note_segments(
                conn,
                aid,
                sorted(
                    {
                        e["segment"]["id"]
                        for d in chunk.payloads
                        for e in d.get("segment_efforts") or []
                        if isinstance(e.get("segment"), dict) and isinstance(e["segment"].get("id"), int)
                    }
                ),
                starred=False,
            )
        if chunk.missing:
            landing.land(conn, aid, "delete_activities", [{"ids": chunk.missing, "reason": "not found"}])
            progress.forget(conn, aid, chunk.missing)
            # the listing that queued them may list them still: the next sync lists them as new, and not "nothing
            # new" on a digest of that listing (a 404 in error was otherwise undone only by the weekly full listing)
            progress.delete_cursors(conn, aid, [progress.LISTING_DIGEST])
        if chunk.hidden:
            landing.land(conn, aid, "delete_activities", [{"ids": chunk.hidden, "reason": "made private"}])
            progress.forget(conn, aid, chunk.hidden)
