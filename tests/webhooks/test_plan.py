"""The webhook sensor's decisions as plain data (webhooks/plan.py, and the run requests a settled plan asks for): no
store, no service, no Dagster instance — what the sensor reads goes in, what it writes and launches comes out."""

from __future__ import annotations

from dagster import AddDynamicPartitionsRequest, DeleteDynamicPartitionsRequest

from fitsync.pipelines.webhook_sensor import run_requests
from fitsync.webhooks.admission import DEFER_SECONDS
from fitsync.webhooks.inbox import Event
from fitsync.webhooks.plan import decide, judge_grant, settle

NOW = 1_800_000_000.0


def event(inbox_id: int, owner: int, activity: int, aspect: str, at: int, received: float = NOW) -> Event:
    return Event(inbox_id, "activity", activity, aspect, {}, owner, 1, at, received)


def deauthorization(inbox_id: int, owner: int, at: int) -> Event:
    return Event(inbox_id, "athlete", owner, "update", {"authorized": "false"}, owner, 1, at, NOW)


def test_decide_admits_within_the_allowance_holds_the_rest_and_plans_the_admitted() -> None:
    events = [
        event(1, 5, 100, "update", 10),  # known activity: first
        event(2, 5, 900, "create", 11),  # never seen: after the known ones, over the allowance here
        event(3, 5, 100, "update", 12),  # same activity as 1: one re-pull
        event(4, 6, 200, "update", 13),  # athlete 6's refresh is running: coalesced
        event(5, 5, 300, "update", 14, received=NOW - DEFER_SECONDS - 1),  # waited a day
        event(6, 5, 800, "delete", 15),  # deleting what fitsync never had costs nothing
        deauthorization(7, 8, 16),
    ]
    lifecycle = {(5, 800): ("create", 1)}
    work, books = decide(events, busy={6}, known={5: {100}, 6: {200}}, remaining=1, cap=3, lifecycle=lifecycle, now=NOW)
    assert books.spent == 1 and books.expired == [5] and books.admitted == [1, 3, 6, 7]
    assert {tuple(ids) for ids in books.deferred.values()} == {(2,), (4,)}
    assert any("coalesced" in reason for reason in books.deferred)
    assert work.work[5].refresh == {100} and work.work[5].delete == {800} and set(work.work) == {5}
    assert work.deauthorized == {8: events[6]}
    assert lifecycle == {(5, 800): ("create", 1)}  # not changed
    assert books.lifecycle == lifecycle  # a delete is a hint until the service confirms it (inbox.set_delete_verdict)


def test_an_event_dated_ahead_of_its_receipt_outranks_nothing() -> None:
    """A forged create dated years ahead would make every real delete of its activity "older than a create acted on":
    its time counts as no later than minutes after it was received."""
    forged = event(1, 5, 100, "create", int(NOW) + 10**8)
    work, books = decide([forged], busy=set(), known={5: {100}}, remaining=5, cap=5, lifecycle={}, now=NOW)
    assert books.lifecycle == {(5, 100): ("create", int(NOW) + 300)}
    real_delete = event(2, 5, 100, "delete", int(NOW) + 3600, received=NOW + 3600)
    work, _ = decide(
        [real_delete], busy=set(), known={5: {100}}, remaining=5, cap=5, lifecycle=books.lifecycle, now=NOW
    )
    assert work.work[5].delete == {100}


def test_a_stored_grant_settles_a_deauthorization_only_when_it_can() -> None:
    revoke = deauthorization(1, 5, 1000)
    assert judge_grant(revoke, None) == ("confirmed", "the athlete is not connected")
    assert judge_grant(revoke, (900.0, "disconnected")) == ("confirmed", "the athlete is not connected")
    assert judge_grant(revoke, (1001.0, "connected")) == ("rejected", "the athlete connected again after this event")
    assert judge_grant(revoke, (1000.9, "connected")) is None  # the same second: the service decides
    assert judge_grant(revoke, (900.0, "connected")) is None


def test_settle_acts_only_on_confirmed_deauthorizations_and_connected_athletes() -> None:
    events = [event(1, 5, 100, "update", 10), event(2, 6, 200, "update", 11), event(3, 7, 300, "update", 12)]
    events += [deauthorization(4, 6, 13), deauthorization(5, 7, 14)]
    work, _ = decide(events, busy=set(), known={5: {100}, 6: {200}, 7: {300}}, remaining=10, cap=10, lifecycle={})
    settled, confirmed = settle(
        work,
        {6: ("confirmed", "the service refuses the athlete's token"), 7: ("rejected", "still accepted")},
        connected={5, 6, 7},
    )
    assert confirmed == [6]
    assert set(settled.deauthorized) == {6}  # 7's forged revocation purges nothing
    assert set(settled.work) == {5, 7}  # 6 is leaving: the update of its activity launches nothing
    assert sorted(settled.ignored) == [2, 5]
    assert set(work.work) == {5, 6, 7} and set(work.deauthorized) == {6, 7}  # the plan given is not changed
    gone, _ = settle(work, {6: ("confirmed", ""), 7: ("deferred", "")}, connected={5})  # 7 left meanwhile
    assert set(gone.work) == {5}


def test_a_settled_plan_asks_for_one_run_per_athlete_a_purge_per_revocation_and_partitions() -> None:
    events = [event(1, 5, 100, "update", 10), event(2, 5, 101, "delete", 11), deauthorization(3, 6, 12)]
    work, _ = decide(events, busy=set(), known={5: {100, 101}}, remaining=10, cap=10, lifecycle={})
    work, _ = settle(work, {6: ("confirmed", "")}, connected={5, 6})
    runs, partitions = run_requests(work, partitions={"6", "9"})
    refresh, purge = runs
    assert refresh.partition_key == "5" and refresh.run_key == work.work[5].run_key
    assert refresh.run_config["ops"]["activities"]["config"] == {"activity_ids": [100], "deleted_ids": [101]}
    assert purge.run_key == "deauthorized-3"
    assert purge.run_config["ops"]["purge_athlete_data"]["config"] == {"athlete_id": 6}
    assert [type(p) for p in partitions] == [AddDynamicPartitionsRequest, DeleteDynamicPartitionsRequest]
    assert partitions[0].partition_keys == ["5"] and partitions[1].partition_keys == ["6"]


def test_an_update_after_a_delete_acted_on_is_re_pulled_and_an_earlier_one_is_moot() -> None:
    """A delete confirmed on a 404 the service gave in error silenced every later event of the activity for good, even
    once it was restored: renames the service sent were dropped without a call or a word (an adversarial audit). An
    update dated after the delete is re-pulled (one call: the service's answer decides); one from before stays moot."""
    lifecycle = {(5, 100): ("delete", 50)}
    events = [event(1, 5, 100, "update", 40), event(2, 5, 100, "update", 50)]
    work, _ = decide(events, busy=set(), known={5: set()}, remaining=5, cap=5, lifecycle=dict(lifecycle), now=NOW)
    assert set(work.work[5].refresh) == set() and sorted(work.ignored) == [1, 2]
    later = event(3, 5, 100, "update", 60)
    work, _ = decide([later], busy=set(), known={5: set()}, remaining=5, cap=5, lifecycle=dict(lifecycle), now=NOW)
    assert work.work[5].refresh == {100} and work.ignored == []
