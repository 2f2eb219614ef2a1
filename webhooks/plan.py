"""From inbox events to work: per athlete, which activities to re-pull and which to delete.

Events of one activity are folded in event-time order (deliveries arrive out of order and are retried),
judged against the last create or delete already acted on: several updates are one re-pull; create then
delete is a delete only; an update older than a delete acted on does nothing, a later one is re-pulled (the
service updates only what it has); a create after a delete (Only You and back, for a read-only grant) revives it;
a delete older than a create already acted on does nothing.

The webhook sensor's tick is read → decide → apply, and the deciding is here, without I/O: `decide` (admission and
plan, from what the sensor read under the write lock), `judge_grant` (a deauthorization the stored grant settles) and
`settle` (the verdicts of the service and who is still connected). pipelines/webhook_sensor.py reads and writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from fitsync.state.inbox import Lifecycle
from fitsync.webhooks.admission import admit
from fitsync.webhooks.inbox import Event


@dataclass
class AthleteWork:
    athlete_id: int
    refresh: set[int] = field(default_factory=set)
    delete: set[int] = field(default_factory=set)
    inbox_ids: list[int] = field(default_factory=list)

    @property
    def run_key(self) -> str:
        """Derived from the events themselves: the same events never launch twice, new ones always do."""
        digest = hashlib.sha256(",".join(map(str, sorted(self.inbox_ids))).encode()).hexdigest()[:20]
        return f"webhook-{digest}"


@dataclass
class Plan:
    work: dict[int, AthleteWork] = field(default_factory=dict)
    deauthorized: dict[int, Event] = field(default_factory=dict)  # athlete → the deauthorization event
    ignored: list[int] = field(default_factory=list)


def _superseded(event: Event, last: tuple[str, int] | None) -> bool:
    """True when what was already acted on makes this event moot."""
    if last is None:
        return False
    aspect, when = last
    if event.aspect_type == "delete":
        return aspect == "create" and event.time < when
    if event.aspect_type == "create":
        return aspect == "delete" and event.time <= when
    # an update from before the delete; one after it is the service's word that the activity is there (a delete
    # confirmed on a 404 in error, an activity restored): re-pulled, the service's answer decides
    return aspect == "delete" and event.time <= when


def plan(events: list[Event], lifecycle: Lifecycle) -> Plan:
    """Fold events into work; `lifecycle` (the last create/delete acted on) is updated in place with the creates. A
    delete is only a hint until the service confirms it (webhooks/inbox.set_delete_verdict writes it then): a forged
    one recorded here would have made every later real update of the activity moot."""
    out = Plan()
    judged = dict(lifecycle)  # what each event is judged by: the lifecycle and this plan's own deletes
    for event in sorted(events, key=lambda e: (e.time, e.inbox_id)):
        if event.deauthorization:
            out.deauthorized.setdefault(event.owner_id, event)
            continue
        work = out.work.setdefault(event.owner_id, AthleteWork(event.owner_id))
        work.inbox_ids.append(event.inbox_id)
        key = (event.owner_id, event.object_id)
        # an update beside this plan's own delete of the activity: the delete's check re-pulls it if the service has it
        if _superseded(event, judged.get(key)) or (event.aspect_type == "update" and event.object_id in work.delete):
            out.ignored.append(event.inbox_id)
        elif event.aspect_type == "delete":
            judged[key] = ("delete", event.time)
            work.refresh.discard(event.object_id)
            work.delete.add(event.object_id)
        else:
            if event.aspect_type == "create":
                judged[key] = lifecycle[key] = ("create", event.time)
                work.delete.discard(event.object_id)
            work.refresh.add(event.object_id)
    return out


@dataclass(frozen=True)
class Bookkeeping:
    """What deciding writes to the store: the allowance spent, the verdicts on events that wait (by reason) or waited
    too long, the admitted events (undecided again if they waited), the lifecycle after the plan."""

    spent: int
    deferred: dict[str, list[int]]
    expired: list[int]
    admitted: list[int]
    lifecycle: Lifecycle


def decide(
    candidates: list[Event],
    *,
    busy: set[int],
    known: Mapping[int, set[int]],
    remaining: int,
    cap: int,
    lifecycle: Lifecycle,
    now: float | None = None,
) -> tuple[Plan, Bookkeeping]:
    """Which events may spend calls now (webhooks/admission.py) and the work they fold into. `lifecycle` is not
    changed: the one after the plan is in the bookkeeping."""
    admission = admit(candidates, busy=busy, known=known.__getitem__, remaining=remaining, cap=cap, now=now)
    deferred: dict[str, list[int]] = {}
    for inbox_id, reason in admission.held.items():
        deferred.setdefault(reason, []).append(inbox_id)
    after = dict(lifecycle)
    work = plan(admission.admitted, after)
    admitted = [e.inbox_id for e in admission.admitted]
    return work, Bookkeeping(admission.spent, deferred, admission.expired, admitted, after)


def judge_grant(event: Event, grant: tuple[float, str] | None) -> tuple[str, str] | None:
    """(verdict, reason) on a deauthorization when the stored grant (granted_at, status) settles it; None when only the
    service can tell (it refuses the athlete's token, or not)."""
    # event_time is in whole seconds: a grant counts as newer only from the next second on (a revocation in the
    # same second as the grant is checked with the service).
    if grant is not None and int(grant[0]) > event.event_time:
        return "rejected", "the athlete connected again after this event"
    if grant is None or grant[1] == "disconnected":
        return "confirmed", "the athlete is not connected"
    return None


def settle(work: Plan, verdicts: Mapping[int, tuple[str, str]], connected: set[int]) -> tuple[Plan, list[int]]:
    """The plan once the deauthorizations are judged: an unconfirmed one purges nothing, and an athlete no longer
    connected (`connected`: before this, every athlete not disconnected) gets no run — an event stored while they were
    leaving launches nothing. Also returns the athletes to disconnect now (the confirmed)."""
    confirmed = [athlete_id for athlete_id, (verdict, _) in verdicts.items() if verdict == "confirmed"]
    deauthorized = {a: e for a, e in work.deauthorized.items() if verdicts[a][0] == "confirmed"}
    ignored = [*work.ignored, *(e.inbox_id for a, e in work.deauthorized.items() if a not in deauthorized)]
    staying = connected - set(confirmed)
    for athlete_id in sorted(set(work.work) - staying):
        ignored.extend(work.work[athlete_id].inbox_ids)
    kept = {a: w for a, w in work.work.items() if a in staying}
    return replace(work, work=kept, deauthorized=deauthorized, ignored=ignored), confirmed
