"""Which webhook events may spend API calls now.

Events are unsigned hints, so a flood of forged ones must not eat the budget that the nightly sync and real
events need. Two rules, applied before an event is planned into a run:

- **Coalescing.** While an athlete's webhook refresh run is queued or running, their new events wait; the next
  evaluation after it ends folds them all into one run (each activity re-pulled once).
- **A bounded share.** Webhook re-pulls may use `webhook_share` of the app's 15-minute read budget, counted in
  activities (`CALLS_PER_ACTIVITY` calls each). Activities fitsync already has go first, then ones it never saw
  (a forger's random ids, or real new uploads); the rest wait for the next window.

Waiting events are `deferred` in the inbox with the reason and reconsidered at each evaluation; after
`DEFER_SECONDS` they are `rejected` ("left to the nightly sync"): its listing finds whatever was real.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fitsync.state import app_state
from fitsync.state.store import Connection
from fitsync.webhooks.inbox import Event

CALLS_PER_ACTIVITY = 2  # the detail and its zones; deletes cost one check, counted the same for simplicity
DEFER_SECONDS = 24 * 3600
ALLOWANCE_KEY = "webhook_allowance"


@dataclass
class Admission:
    admitted: list[Event] = field(default_factory=list)
    held: dict[int, str] = field(default_factory=dict)  # inbox id → why it waits
    expired: list[int] = field(default_factory=list)
    spent: int = 0  # activities admitted against the allowance


def allowance_cap(share: float, short_read_limit: int) -> int:
    """Activities per 15-minute window that webhook re-pulls may take (at least one, so real events move)."""
    return max(1, math.floor(share * short_read_limit / CALLS_PER_ACTIVITY))


def admit(
    events: list[Event],
    *,
    busy: set[int],
    known: Callable[[int], set[int]],
    remaining: int,
    cap: int,
    now: float | None = None,
) -> Admission:
    now = time.time() if now is None else now
    out = Admission()
    pending: dict[tuple[int, int], list[Event]] = {}
    for event in events:
        if event.received_at and now - event.received_at > DEFER_SECONDS:
            out.expired.append(event.inbox_id)
        elif event.object_type != "activity":
            out.admitted.append(event)  # deauthorizations: one check each, per athlete (see the sensor)
        elif event.owner_id in busy:
            out.held[event.inbox_id] = "coalesced: the athlete's webhook refresh is still running"
        else:
            pending.setdefault((event.owner_id, event.object_id), []).append(event)
    known_ids = {athlete: known(athlete) for athlete in {a for a, _ in pending}}
    # Activities fitsync has first (updates and deletes of real data), then ones it never saw; oldest event first.
    order = sorted(pending, key=lambda k: (k[1] not in known_ids[k[0]], min(e.inbox_id for e in pending[k])))
    for key in order:
        if key[1] not in known_ids[key[0]] and any(e.aspect_type == "delete" for e in pending[key]):
            out.admitted.extend(pending[key])  # deleting what fitsync never had costs no call
        elif out.spent < remaining:
            out.spent += 1
            out.admitted.extend(pending[key])
        else:
            for event in pending[key]:
                out.held[event.inbox_id] = (
                    f"over the webhook share of the rate budget ({cap} activities per "
                    "15-minute window): waits for the next window or the nightly sync"
                )
    out.admitted.sort(key=lambda e: e.inbox_id)
    return out


def remaining(conn: Connection, cap: int, window_start: int) -> int:
    stored = app_state.get(conn, ALLOWANCE_KEY)
    state = json.loads(stored) if stored is not None else {}
    used = state.get("used", 0) if state.get("window_start") == window_start else 0
    return max(0, cap - used)


def spend(conn: Connection, cap: int, window_start: int, activities: int) -> None:
    used = cap - remaining(conn, cap, window_start) + activities
    app_state.put(conn, ALLOWANCE_KEY, json.dumps({"window_start": window_start, "used": used}).encode())
