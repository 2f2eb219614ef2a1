"""Webhooks end to end (issue 5): each event of §6.1 (and the visibility rules of §3.1) from the athlete's action
in the sandbox to the warehouse: sandbox delivery → receiver → inbox → `webhook_events` sensor → run → DuckDB.

| § | row | what the row says (short) | test |
|---|---|---|---|
| 6.1 | 1 | activity created → `create`: the activity is pulled (detail, zones) into the warehouse | `test_s6_1_r1_recorded_activity_reaches_the_warehouse` |
| 6.1 | 2 | title/type/privacy change → `update`: several updates → one re-pull, warehouse follows | `test_s6_1_r2_title_update_repulls_once`, `test_s6_1_r2_type_update_changes_sport_type` |
| 6.1 | 3 | activity deleted → `delete`: removed with its children, recorded in deleted_activities | `test_s6_1_r3_deleted_activity_leaves_the_warehouse` |
| 6.1 | 4 | athlete revokes access → `authorized: "false"`: tokens and partition gone at once, purge run (logged with counts), nothing scheduled later | `test_s6_1_r4_deauthorization_purges_the_athlete`, `test_s6_1_r4_explicit_sync_after_purge_does_not_reschedule_the_athlete`, `test_s6_1_r4_fitsync_disconnect_also_purges` |
| 3.1 | 1 | → Only You, `activity:read` grant: `delete` → removed, recorded | `test_s3_1_r1_r2_only_you_and_back_for_a_read_grant` |
| 3.1 | 2 | Only You → visible, `activity:read` grant: `create` → re-pulled | `test_s3_1_r1_r2_only_you_and_back_for_a_read_grant` |
| 3.1 | 3 | any visibility change, `activity:read_all` grant: `updates.private` → flag and visibility updated | `test_s3_1_r3_private_update_for_a_read_all_grant` |
| 6.3 | 2 | without a 200 the push is retried: stored once, acted on once | `test_s6_3_r2_retried_delivery_is_stored_and_acted_on_once` |
| 6.3 | 3 | processing is asynchronous: the receiver only stores, the sensor's run does the work | `test_s6_1_r1_recorded_activity_reaches_the_warehouse` |
| 6.3 | 4 | one subscription carries every authorizing athlete's events | `test_s6_1_r4_deauthorization_purges_the_athlete` |
| issue 5 | — | the same event POSTed again: stored once, one run; re-evaluated, its run key launches nothing | `test_duplicate_post_is_stored_once_and_runs_once` |
| issue 5 | — | out of order: deleted stays deleted, late update/create ignored (no API call) | `test_out_of_order_delete_stays_deleted` |
| issue 5 | — | out of order: create after delete revives (one batch, and across batches) | `test_out_of_order_create_after_delete_revives`, `test_late_delete_older_than_an_acted_on_create_is_ignored` |
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import pytest
from dagster import RunsFilter, build_schedule_context

from fitsync.pipelines.jobs import nightly_sync
from fitsync.pipelines.sync_runner import SyncOutcome, execute_run_request
from fitsync.sync import progress
from fitsync.webhooks import inbox as webhook_inbox

from ..sandbox_harness import Harness, wait_until
from .conftest import (
    READ_ONLY_SCOPES,
    RUN_KEY_TAG,
    FailFirst,
    Gate,
    WebhookHome,
    add_athlete,
    change,
    delete,
    fitsync,
    purge_log,
    record,
    revoke,
)

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


FETCH = ("activities", "activity_details", "activity_zones")


def calls(outcome: SyncOutcome | None) -> dict[str, int]:
    """API calls per fetch asset of a run (segments left out: a new effort's segment is fetched once)."""
    assert outcome is not None
    return {k: int(v["api_calls"]) for k, v in outcome.metadata.items() if k in FETCH}


def zones_call(row: dict[str, Any]) -> int:
    """A zones call is spent only on an activity that can have zones (heart rate, a power meter, or a run's pace over
    GPS: progress.may_have_zones) (1), else none (0); the details asset makes it right after the detail."""
    latlng = [row["start_lat"], row["start_lng"]] if row["start_lat"] is not None else None
    return int(progress.may_have_zones({**row, "start_latlng": latlng}))


def synced_athlete(home: WebhookHome, sb: Harness, n: int = 2, **connect: object) -> tuple[int, list[int]]:
    """A new athlete with n activities, connected to the home and fully synced; the receiver runs and the
    home is subscribed (the service validated the callback)."""
    aid = add_athlete(sb)
    ids = [record(sb, aid, days_ago=10 - i) for i in range(n)]
    home.connect(aid, **connect)  # type: ignore[arg-type]
    home.sync(aid)
    assert home.activity_ids(aid) == set(ids)
    home.serve()
    home.subscribe()
    return aid, ids


def test_s6_1_r1_recorded_activity_reaches_the_warehouse(sb: Harness, home: WebhookHome, e2e_flavor: str) -> None:
    aid, ids = synced_athlete(home, sb)
    new = record(sb, aid, sport_type="Run", name="Fresh run")
    [event] = home.settle(1)
    assert event["payload"]["aspect_type"] == "create" and event["payload"]["object_id"] == new
    assert [e["payload"]["object_id"] for e in home.inbox()] == [new]  # committed before the 200
    assert home.activity(new) is None  # the receiver only stores: the work is the sensor's run (§6.3)

    requests, outcomes = home.process()
    assert len(requests) == 1 and requests[0].partition_key == str(aid)
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [new], "deleted_ids": []}
    row = home.activity(new)
    assert row is not None and row["name"] == "Fresh run" and row["sport_type"] == "Run"
    assert row["detail_fetched_at"] is not None
    assert home.children(new)["laps"] > 0 and home.children(new)["splits_metric"] > 0
    assert home.activity_ids(aid) == {*ids, new}
    assert outcomes[0] is not None
    # no listing; the zones call (if the activity can have zones) right after the detail
    assert calls(outcomes[0]) == {"activities": 0, "activity_details": 1 + zones_call(row), "activity_zones": 0}


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_s6_1_r2_title_update_repulls_once(sb: Harness, home: WebhookHome) -> None:
    aid, (first, second) = synced_athlete(home, sb)
    before = home.activity(second)
    change(sb, first, name="Morning spin")
    change(sb, first, name="Evening spin")  # two saves → two events → one re-pull
    events = home.settle(2)
    assert [e["payload"]["updates"] for e in events] == [{"title": "Morning spin"}, {"title": "Evening spin"}]

    requests, outcomes = home.process()
    assert len(requests) == 1
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [first], "deleted_ids": []}
    assert calls(outcomes[0]) == {"activities": 0, "activity_details": 1, "activity_zones": 0}
    assert home.activity(first)["name"] == "Evening spin"  # type: ignore[index]
    assert home.activity(second) == before  # untouched
    assert home.tick() == []  # the cursor moved past both events


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_s6_1_r2_type_update_changes_sport_type(sb: Harness, home: WebhookHome) -> None:
    aid, (first, _) = synced_athlete(home, sb)
    assert home.activity(first)["sport_type"] == "Ride"  # type: ignore[index]
    change(sb, first, sport_type="Run")
    [event] = home.settle(1)
    assert event["payload"]["aspect_type"] == "update" and event["payload"]["updates"] == {"type": "Run"}
    home.process()
    row = home.activity(first)
    assert row is not None and (row["sport_type"], row["type"]) == ("Run", "Run")


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_s6_1_r3_deleted_activity_leaves_the_warehouse(sb: Harness, home: WebhookHome, e2e_flavor: str) -> None:
    aid, (first, second) = synced_athlete(home, sb)
    assert home.children(first)["laps"] > 0
    delete(sb, first)
    [event] = home.settle(1)
    assert event["payload"]["aspect_type"] == "delete"

    requests, outcomes = home.process()
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [], "deleted_ids": [first]}
    # one call proves the deletion (the service answers 404: events are hints)
    assert calls(outcomes[0]) == {"activities": 1, "activity_details": 0, "activity_zones": 0}
    assert home.activity(first) is None
    assert set(home.children(first).values()) == {0}
    assert home.deleted(first) == [(aid, "webhook delete, confirmed: the service answers 404")]
    assert home.activity_ids(aid) == {second}


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_s3_1_r3_private_update_for_a_read_all_grant(sb: Harness, home: WebhookHome) -> None:
    aid, (first, _) = synced_athlete(home, sb)
    row = home.activity(first)
    assert row is not None and (row["private"], row["visibility"]) == (False, "everyone")

    change(sb, first, visibility="only_me")
    [event] = home.settle(1)
    assert event["payload"]["updates"] == {"private": "true"}
    home.process()
    row = home.activity(first)
    assert row is not None and (row["private"], row["visibility"]) == (True, "only_me")

    change(sb, first, visibility="followers_only")
    assert home.settle(2)[1]["payload"]["updates"] == {"private": "false"}
    home.process()
    row = home.activity(first)
    assert row is not None and (row["private"], row["visibility"]) == (False, "followers_only")
    assert home.deleted(first) == []


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_s3_1_r1_r2_only_you_and_back_for_a_read_grant(sb: Harness, home: WebhookHome) -> None:
    aid, (first, second) = synced_athlete(home, sb, scopes=READ_ONLY_SCOPES)
    laps = home.children(first)["laps"]

    change(sb, first, visibility="only_me")
    [gone] = home.settle(1)
    assert (gone["payload"]["aspect_type"], gone["payload"]["updates"]) == ("delete", {})
    home.process()
    assert home.activity(first) is None and home.deleted(first) == [
        (aid, "webhook delete, confirmed: made Only You (this grant may not see it)")
    ]
    assert set(home.children(first).values()) == {0}

    # event_time has a resolution of one second: the way back must be a later second than the delete, or the
    # two events are indistinguishable in time (the plan then keeps the delete, the privacy-safe choice).
    wait_until(lambda: int(time.time()) > gone["payload"]["event_time"], 2.0, "the next second")
    change(sb, first, visibility="everyone")
    back = home.settle(2)[1]
    assert (back["payload"]["aspect_type"], back["payload"]["updates"]) == ("create", {})
    requests, outcomes = home.process()
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [first], "deleted_ids": []}
    row = home.activity(first)
    assert row is not None and row["visibility"] == "everyone" and row["detail_fetched_at"] is not None
    assert home.children(first)["laps"] == laps  # children re-pulled too
    assert calls(outcomes[0]) == {"activities": 0, "activity_details": 1 + zones_call(row), "activity_zones": 0}
    assert home.activity_ids(aid) == {first, second}


# --- deauthorization ------------------------------------------------------------------------------------------------


def test_s6_1_r4_deauthorization_purges_the_athlete(sb: Harness, home: WebhookHome, e2e_flavor: str) -> None:
    leaving, _ = synced_athlete(home, sb, n=3)
    staying = add_athlete(sb)
    theirs = record(sb, staying, days_ago=3)
    home.connect(staying)
    home.sync(staying)
    held = home.athlete_rows(leaving)
    assert held["activities"] == 3 and held["athletes"] == 1 and held["laps"] > 0 and held["splits_metric"] > 0
    kept = home.athlete_rows(staying)
    assert kept["activities"] == 1

    revoke(sb, home.app, leaving)
    change(sb, theirs, name="Still here")  # the one subscription carries both athletes' events (§6.3)
    event, other = home.settle(2)
    assert event["payload"] == {
        **event["payload"],
        "object_type": "athlete",
        "object_id": leaving,
        "aspect_type": "update",
        "updates": {"authorized": "false"},
        "owner_id": leaving,
    }
    assert other["payload"]["owner_id"] == staying

    requests = home.tick()
    # At once, before any run: no tokens, no partition, so nothing can sync the athlete any more.
    assert home.state("SELECT status, access_token, refresh_token FROM athletes WHERE athlete_id = ?", leaving) == [
        ("disconnected", None, None)
    ]
    assert home.partitions() == {str(staying)}
    [refresh] = [r for r in requests if r.job_name == "webhook_refresh"]
    [purge] = [r for r in requests if r.job_name != "webhook_refresh"]
    assert refresh.partition_key == str(staying) and len(requests) == 2
    assert purge.job_name == "purge_athlete_job" and purge.partition_key is None
    assert purge.run_config == {"ops": {"purge_athlete_data": {"config": {"athlete_id": leaving}}}}

    home.execute(requests)
    assert set(home.athlete_rows(leaving).values()) == {0}
    assert home.athlete_rows(staying) == kept  # the other athlete keeps everything, and gets its update
    assert home.activity(theirs)["name"] == "Still here"  # type: ignore[index]
    [run] = home.instance.get_runs(RunsFilter(tags={RUN_KEY_TAG: purge.run_key}))
    logged = purge_log(home.instance, run.run_id)
    assert logged["athlete_id"] == leaving
    files = ("segments", "document_files", "stream_files")
    purged = {t: n for t, n in logged["warehouse"].items() if n and t not in files}
    assert purged == {t: n for t, n in held.items() if n}
    assert logged["warehouse"]["document_files"] >= 1  # the athlete's detail documents (warehouse/documents.py)
    # Segments only the leaving athlete referenced went too (their JSON carries the athlete's own stats).
    assert home.query(
        "SELECT count(*) FROM segments s WHERE NOT EXISTS (SELECT 1 FROM segment_efforts e WHERE "
        "e.segment_id = s.segment_id) AND NOT EXISTS (SELECT 1 FROM starred_segments t WHERE "
        "t.segment_id = s.segment_id)"
    ) == [(0,)]
    assert logged["state"]["athletes"] == 1 and logged["state"]["known_activities"] == 3
    [line] = [json.loads(t) for t in (home.config.home / "purges.jsonl").read_text().splitlines()]  # beside Dagster's
    assert (line["athlete_id"], line["why"], line["warehouse"]["activities"]) == (
        leaving,
        "deauthorized by the athlete",
        3,
    )
    for table in ("athletes", "known_activities", "sync_cursors", "landing", "known_segments"):
        assert home.state(f"SELECT count(*) FROM {table} WHERE athlete_id = ?", leaving) == [(0,)], table

    # Later: no sync for them is scheduled, an explicit one does not bring data back, events are refused.
    with build_schedule_context(instance=home.instance, scheduled_execution_time=dt.datetime.now(dt.UTC)) as context:
        nightly = nightly_sync(context)
    assert [r.partition_key for r in nightly] == [str(staying)]  # type: ignore[union-attr]
    assert home.tick() == []
    late = home.event(leaving, sorted(home.activity_ids(staying))[0], "update", updates={"title": "x"})
    assert home.post(late).status_code == 403
    outcome = home.sync(leaving, check=False)
    assert not outcome.success and outcome.api_calls() == 0
    assert set(home.athlete_rows(leaving).values()) == {0}


@pytest.mark.sqlite_only  # the state store is incidental: the order of a purge
def test_a_purge_that_fails_halfway_is_finished_by_the_next_one(
    sb: Harness, home: WebhookHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warehouse part of a purge fails (a disk, a warehouse held for long): the athlete's state went first, and
    their data stayed for good with nothing left to finish it. Now the state goes last: the athlete stays listed as
    disconnected, `fitsync athletes` names the command, and the sensor asks for the purge again."""
    from fitsync.cli.athletes import status_shown
    from fitsync.pipelines import purge

    leaving, _ = synced_athlete(home, sb, n=2)
    revoke(sb, home.app, leaving)
    home.settle(1)
    requests = home.tick()

    def failing(conn: Any, athlete_id: int) -> dict[str, int]:
        raise OSError("No space left on device")

    monkeypatch.setattr(purge, "purge_athlete", failing)
    [outcome] = [execute_run_request(home.config, home.instance, r) for r in requests]
    assert outcome is not None and not outcome.success
    monkeypatch.undo()
    assert home.athlete_rows(leaving)["activities"] == 2
    [(status, reason)] = home.state("SELECT status, status_reason FROM athletes WHERE athlete_id = ?", leaving)
    assert f"`fitsync disconnect {leaving}`" in status_shown(leaving, status, reason)
    assert home.tick() == [], "not asked again while the first purge may still be on its way"

    home.state_write("UPDATE athletes SET updated_at = updated_at - 3600 WHERE athlete_id = ?", leaving)
    [again] = home.tick()
    assert again.job_name == "purge_athlete_job" and again.run_key.startswith(f"purge-again-{leaving}-")
    home.execute([again])
    assert set(home.athlete_rows(leaving).values()) == {0}
    assert home.state("SELECT count(*) FROM athletes WHERE athlete_id = ?", leaving) == [(0,)]
    assert home.tick() == []


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_s6_1_r4_explicit_sync_after_purge_does_not_reschedule_the_athlete(sb: Harness, home: WebhookHome) -> None:
    leaving = add_athlete(sb)
    home.connect(leaving)
    home.serve()
    home.subscribe()
    revoke(sb, home.app, leaving)
    home.settle(1)
    home.process()
    assert home.partitions() == set()
    assert not home.sync(leaving, check=False).success
    assert home.partitions() == set()
    with build_schedule_context(instance=home.instance, scheduled_execution_time=dt.datetime.now(dt.UTC)) as context:
        assert not isinstance(nightly_sync(context), list)  # SkipReason: nobody to sync


# --- duplicates -----------------------------------------------------------------------------------------------------


def test_s6_3_r2_retried_delivery_is_stored_and_acted_on_once(
    sb: Harness, home: WebhookHome, fast_retries: None
) -> None:
    """The receiver stores the event but its 200 is lost (answered 500): the service retries the same event."""
    aid = add_athlete(sb)
    first = record(sb, aid, days_ago=2)
    home.connect(aid)
    home.sync(aid)
    gate = home.serve(FailFirst)
    home.subscribe()

    change(sb, first, name="Renamed once")
    [event] = home.settle(1)
    assert [d["status_code"] for d in home.deliveries()] == [500, 200] and gate.failed == 1
    assert [row["payload"] for row in home.inbox()] == [event["payload"]]  # stored once

    requests, outcomes = home.process()
    assert len(requests) == 1 and outcomes[0] is not None
    assert home.activity(first)["name"] == "Renamed once"  # type: ignore[index]
    assert home.tick() == []
    assert home.runs_with_key(requests[0].run_key) == 1  # type: ignore[arg-type]


def test_duplicate_post_is_stored_once_and_runs_once(sb: Harness, home: WebhookHome) -> None:
    aid, (first, _) = synced_athlete(home, sb)
    change(sb, first, name="Delivered once, posted thrice")
    [event] = home.settle(1)
    body = event["payload"]
    for _ in range(2):  # the same body again, as a retry would send it
        response = home.post(body)
        assert response.status_code == 200 and response.json() == {"stored": False}
    assert [row["payload"] for row in home.inbox()] == [body]

    [request] = home.tick()
    [outcome] = home.execute([request])
    assert outcome is not None and calls(outcome)["activity_details"] == 1
    assert home.post(body).json() == {"stored": False}  # even after it was processed
    assert home.tick() == []
    # A sensor evaluated again from the old cursor (a daemon that crashed before saving it) asks for the same run
    # key, which launches nothing.
    [again] = home.tick(cursor=None)
    assert again.run_key == request.run_key and again.run_config == request.run_config
    assert home.execute([again]) == [None]
    assert home.runs_with_key(request.run_key) == 1  # type: ignore[arg-type]
    assert len(home.instance.get_runs(RunsFilter(job_name="webhook_refresh"))) == 1


# --- out of order ---------------------------------------------------------------------------------------------------
# Events are POSTed to the receiver directly (fitsync's side of a subscription only, so the sandbox sends nothing),
# with event times that differ from the arrival order; the sandbox's data is what those events describe.


def local_athlete(
    sb: Harness, home: WebhookHome, n: int, *, sync: bool = True, scopes: tuple[str, ...] | None = None
) -> tuple[int, list[int]]:
    aid = add_athlete(sb)
    ids = [record(sb, aid, days_ago=10 - i) for i in range(n)]
    home.connect(aid, **({"scopes": scopes} if scopes else {}))
    if sync:
        home.sync(aid)
    home.serve()
    home.local_subscription()
    return aid, ids


def post_all(home: WebhookHome, events: list[dict[str, object]]) -> None:
    for event in events:
        response = home.post(event)
        assert response.status_code == 200 and response.json() == {"stored": True}, response.text


def test_out_of_order_delete_stays_deleted(sb: Harness, home: WebhookHome) -> None:
    aid, (a, b, c) = local_athlete(sb, home, 3)
    t = int(time.time())
    for activity in (a, b):  # renamed, then deleted, in the service
        change(sb, activity, name="Renamed before the delete")
        delete(sb, activity)
    # a: the delete (t+2) arrives first and is acted on; the older update and create come later.
    post_all(home, [home.event(aid, a, "delete", event_time=t + 2)])
    requests, outcomes = home.process()
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [], "deleted_ids": [a]}
    assert home.activity(a) is None and home.deleted(a) == [(aid, "webhook delete, confirmed: the service answers 404")]
    post_all(
        home,
        [
            home.event(aid, a, "update", updates={"title": "Renamed before the delete"}, event_time=t + 1),
            home.event(aid, a, "create", event_time=t),
        ],
    )
    assert home.tick() == []  # about an activity already deleted: nothing to do, no API call
    # b: in one batch, an update that happened after the delete (as far as event times say) arrives after it.
    post_all(
        home,
        [
            home.event(aid, b, "delete", event_time=t + 1),
            home.event(aid, b, "update", updates={"title": "Renamed before the delete"}, event_time=t + 2),
            home.event(aid, b, "update", updates={"title": "Renamed before the delete"}, event_time=t),
        ],
    )
    requests, outcomes = home.process()
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [], "deleted_ids": [b]}
    assert calls(outcomes[0]) == {"activities": 1, "activity_details": 0, "activity_zones": 0}
    assert home.activity(b) is None and home.deleted(b) == [(aid, "webhook delete, confirmed: the service answers 404")]
    assert home.deleted(a) == [(aid, "webhook delete, confirmed: the service answers 404")]  # recorded once
    assert home.activity_ids(aid) == {c}
    assert home.tick() == []


@pytest.mark.sqlite_only  # the state store is incidental: what a re-pull brings (the inbox: the scenarios kept on both)
def test_out_of_order_create_after_delete_revives(sb: Harness, home: WebhookHome) -> None:
    """Only You and back for a read-only grant: delete (t+1) then create (t+2); the service shows it again."""
    aid, (a, b) = local_athlete(sb, home, 2, scopes=READ_ONLY_SCOPES)
    t = int(time.time())
    for activity in (a, b):
        change(sb, activity, name="Visible again")
    # a: both in one batch, the create arriving first.
    post_all(home, [home.event(aid, a, "create", event_time=t + 2), home.event(aid, a, "delete", event_time=t + 1)])
    requests, _ = home.process()
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [a], "deleted_ids": []}
    assert home.activity(a)["name"] == "Visible again" and home.deleted(a) == []  # type: ignore[index]
    # b: in separate batches, in event-time order; the create revives what the delete removed. The service goes
    # through the same states (the delete is acted on only once the service hides it from this grant).
    change(sb, b, visibility="only_me")
    post_all(home, [home.event(aid, b, "delete", event_time=t + 1)])
    home.process()
    assert home.activity(b) is None
    change(sb, b, visibility="everyone")
    post_all(home, [home.event(aid, b, "create", event_time=t + 2)])
    requests, outcomes = home.process()
    assert requests[0].run_config["ops"]["activities"]["config"] == {"activity_ids": [b], "deleted_ids": []}
    assert home.activity(b)["name"] == "Visible again"  # type: ignore[index]
    assert home.children(b)["laps"] > 0
    assert home.activity_ids(aid) == {a, b}


def test_late_delete_older_than_an_acted_on_create_is_ignored(sb: Harness, home: WebhookHome) -> None:
    aid, (a,) = local_athlete(sb, home, 1, sync=False)
    t = int(time.time())
    post_all(home, [home.event(aid, a, "create", event_time=t + 2)])  # the way back from Only You, acted on
    home.process()
    assert home.activity(a) is not None
    post_all(home, [home.event(aid, a, "delete", event_time=t + 1)])  # the older delete, retried, arrives now
    home.process()
    assert home.activity(a) is not None and home.deleted(a) == []


def test_s6_1_r4_fitsync_disconnect_also_purges(sb: Harness, home: WebhookHome) -> None:
    aid = add_athlete(sb)
    record(sb, aid, days_ago=1)
    home.connect(aid)
    home.sync(aid)
    assert home.athlete_rows(aid)["activities"] == 1
    set_thresholds = fitsync(home, "thresholds", "set", "--athlete", str(aid), "--lthr", "168", "--from", "2026-01-01")
    assert set_thresholds.returncode == 0, set_thresholds.stderr
    gate = home.serve(Gate)  # the event comes after `disconnect` returned (the real service takes seconds)
    home.subscribe()
    with home.client.store.transaction() as conn:  # an event about one of their activities, its title inside
        webhook_inbox.store_event(conn, webhook_inbox.validate(home.event(aid, 1, "update", updates={"title": "x"})))
    with sb.settings(retry_delays=[0.5, 0.5]):
        done = fitsync(home, "disconnect", str(aid), "--yes")
        assert done.returncode == 0, done.stderr
        gate.closed = False
        wait_until(
            lambda: home.sandbox_events() and all(e["status"] != "pending" for e in home.sandbox_events()),
            10,
            "the deauthorization event to be delivered or given up",
        )
    assert gate.refused >= 1
    home.execute(home.tick())
    assert set(home.athlete_rows(aid).values()) == {0}
    assert home.partitions() == set()
    assert home.query("SELECT count(*) FROM analysis_thresholds WHERE athlete_id = ?", aid) == [(0,)]
    assert [r for r in home.state("SELECT payload FROM webhook_inbox") if f'"owner_id":{aid}' in r[0]] == []
