"""Conformance: push subscriptions and webhook events (§3.1, §3.3, §4.5, §6.1–§6.4, §7, §8), end to end.

Every test runs against the session's real sandbox server and a real webhook receiver (uvicorn on 127.0.0.1),
drives changes through the athlete console (`/sandbox/...`) and the public API, and reads the sandbox's event
queue (`/sandbox/events`) and delivery log (`/sandbox/deliveries`). Each test gets a fresh athlete (in a region
the seeded athletes do not use) and fresh apps, so no other test's changes reach its subscriptions.

| § | row | what the row says (short) | test |
|---|---|---|---|
| 3.1 | 1 | Followers/Everyone → Only You: `activity:read` app gets `delete` | `test_s3_1_r1_to_only_you_is_delete_for_read_apps` |
| 3.1 | 2 | Only You → Followers/Everyone: `activity:read` app gets `create` | `test_s3_1_r2_from_only_you_is_create_for_read_apps` |
| 3.1 | 3 | any visibility change: `activity:read_all` app gets `update` with `updates.private` | `test_s3_1_r3_any_visibility_change_is_private_update_for_read_all_apps` |
| 3.3 | 1 | POST push_subscriptions → awaiting validation, validation GET sent | `test_s3_3_r1_create_sends_validation_get_and_awaits_it` |
| 3.3 | 2 | 200 within 2 s echoing the challenge → active, response has `id` | `test_s3_3_r2_echo_within_two_seconds_activates_and_returns_id` |
| 3.3 | 3 | late answer or no echo → creation fails with error information | `test_s3_3_r3_late_answer_fails_creation`, `test_s3_3_r3_no_echo_fails_creation` |
| 3.3 | 4 | DELETE with valid client credentials → 204, deleted | `test_s3_3_r4_delete_with_client_credentials_is_204` |
| 4.5 | 1 | POST: form fields required, callback_url ≤ 255 → `id` or error | `test_s4_5_r1_create_fields_are_required`, `test_s4_5_r1_create_is_form_data_and_returns_id`, `test_s4_5_r1_callback_url_at_most_255` |
| 4.5 | 2 | GET with client credentials → the subscription details | `test_s4_5_r2_view_lists_subscription_details` |
| 4.5 | 3 | DELETE /{id} with credentials in query → 204, else error with reason | `test_s4_5_r3_delete_204_and_errors_with_reason` |
| 6.1 | 1 | activity create (and Only You → visible for read apps) → `create` | `test_s6_1_r1_console_recording_is_create`, `test_s6_1_r1_api_created_activity_is_create`, `test_s6_1_r1_only_you_recording_is_create_for_read_all_only` |
| 6.1 | 2 | title/type/privacy change → `update` with `title`/`type`/`private` (strings); privacy only to read_all | `test_s6_1_r2_rename_is_title_update`, `test_s6_1_r2_retype_is_type_update`, `test_s6_1_r2_api_update_is_title_update`, `test_s6_1_r2_privacy_update_only_to_read_all_apps` |
| 6.1 | 2 | (cont.) changes to an Only You activity reach read_all apps only | `test_s6_1_r2_changes_to_only_you_activity_reach_read_all_only` |
| 5.2 | note | `activity:read` is required for activity webhooks | `test_activity_events_need_activity_read` |
| 6.1 | note | one save → one event with several `updates` keys | `test_s6_1_r2_one_save_one_event_with_title_and_type` |
| 6.1 | 3 | activity delete (and → Only You for read apps) → `delete` | `test_s6_1_r3_deleted_activity_is_delete`, `test_s6_1_r3_deleting_only_you_activity_reaches_read_all_only` |
| 6.1 | 4 | athlete revokes access → athlete `update`, `authorized: "false"` | `test_s6_1_r4_console_revoke_is_authorized_false`, `test_s6_1_r4_api_deauthorize_is_authorized_false` |
| 6.2 | 1–7 | payload fields and types: object_type, object_id, aspect_type, updates, owner_id, subscription_id, event_time | `test_s6_2_payload_fields_and_types` |
| 6.3 | 1 | callback must answer 200 within 2 s | `test_s6_3_r1_answer_within_two_seconds_is_delivered`, `test_s6_3_r1_answer_after_two_seconds_is_a_failed_attempt` |
| 6.3 | 2 | without a 200: retried, 3 attempts in total | `test_s6_3_r2_callback_fails_twice_then_answers`, `test_s6_3_r2_only_200_counts_as_answered`, `test_s6_3_r2_callback_never_answers_three_attempts_then_failed` |
| 6.3 | 3 | processing is asynchronous (the change does not wait for the callback) | `test_s6_3_r3_changes_do_not_wait_for_delivery` |
| 6.3 | 4 | one subscription per app, covering all athletes who authorized it | `test_s6_3_r4_one_subscription_covers_every_authorizing_athlete` |
| 6.4 | 1 | validation GET query: hub.mode=subscribe, random hub.challenge, hub.verify_token | `test_s6_4_r1_validation_query` |
| 6.4 | 2 | answer 200 within 2 s, JSON (application/json), member `hub.challenge` | `test_s6_4_r2_json_echo_is_required` |
| 6.4 | 3 | otherwise creation fails | `test_s6_4_r3_bad_answers_fail_creation`, `test_s6_4_r3_unreachable_callback_fails_creation` |
| 7 | 1 | unexpected failure → Fault payload | `test_conformance_limits.py::test_s7_r1_unexpected_failure_carries_fault` |
| 7 | 2 | invalidated token (after deauthorization) → 401 | `test_s7_r2_deauthorized_token_is_401` |
| 7 | 3 | user denies → redirect with `error=access_denied` | `test_conformance_oauth.py::test_s5_3_r7_deny_redirects_access_denied` |
| 7 | 4 | creation: late or no echo → error information | `test_s7_r4_failed_validation_error_information` |
| 7 | 5 | creation when one exists → fails (remove it first) | `test_s7_r5_second_subscription_fails_naming_existing` |
| 7 | 6 | DELETE success → 204 No Content | `test_s7_r6_delete_success_is_204_no_content` |
| 7 | 7 | DELETE failure → error with the reason | `test_s7_r7_delete_failure_has_reason` |
| 8 | 4 | subscriptions per application: 1 | `test_s8_r4_one_subscription_per_application` |
| 8 | 5 | callback_url at most 255 characters | `test_s8_r5_callback_url_length_limit` |
| 8 | 6 | callback response time (validation and events): 2 s | `test_s8_r6_validation_answer_time_two_seconds` (events: `test_s6_3_r1_*`) |
| 8 | 7 | event delivery attempts: 3 in total | `test_s8_r7_default_three_delivery_attempts` |
"""

from __future__ import annotations

import calendar
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from .sandbox_harness import App, Grant, Harness, Hook, Receiver, assert_fault, change, delete, wait_until

SUBS = "/api/v3/push_subscriptions"
READ = ("read", "activity:read", "activity:write")
READ_ALL = ("read", "activity:read_all", "activity:write")
PAYLOAD_KEYS = {"object_type", "object_id", "aspect_type", "updates", "owner_id", "subscription_id", "event_time"}
FAST_RETRIES = {"retry_delays": [0.1, 0.1]}


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as rec:
        yield rec


@dataclass
class Sub:
    grant: Grant
    hook: Hook
    id: int

    @property
    def app(self) -> App:
        return self.grant.app


# --- helpers --------------------------------------------------------------------------------------------


def new_athlete(sb: Harness) -> int:
    """A fresh athlete far from the seeded ones: only this test changes its activities."""
    response = sb.console.post("/athletes", json={"firstname": "Hook", "lastname": "Tester", "region": "Girona"})
    assert response.status_code == 200, response.text
    return response.json()["id"]


def create(sb: Harness, app: App, hook: Hook, **overrides: Any) -> httpx.Response:
    data = {**app.creds(), "callback_url": hook.url, "verify_token": hook.verify_token, **overrides}
    return sb.http.post(SUBS, data=data)


def subscribe(sb: Harness, receiver: Receiver, grant: Grant, **behaviour: Any) -> Sub:
    hook = receiver.hook(**behaviour)
    response = create(sb, grant.app, hook)
    assert response.status_code == 201, response.text
    return Sub(grant, hook, response.json()["id"])


def listed(sb: Harness, app: App) -> list[dict[str, Any]]:
    response = sb.http.get(SUBS, params=app.creds())
    assert response.status_code == 200, response.text
    return response.json()


def queued(sb: Harness, sub: Sub) -> list[dict[str, Any]]:
    """The subscription's events in the sandbox's durable queue, oldest first (status, attempts, payload)."""
    response = sb.console.get("/events")
    assert response.status_code == 200, response.text
    return [e for e in reversed(response.json()) if e["subscription_id"] == sub.id]


def payloads(sb: Harness, sub: Sub) -> list[dict[str, Any]]:
    return [e["payload"] for e in queued(sb, sub)]


def deliveries(sb: Harness, event_id: int) -> list[dict[str, Any]]:
    """The delivery log of one event, oldest attempt first."""
    response = sb.console.get("/deliveries")
    assert response.status_code == 200, response.text
    return [d for d in reversed(response.json()) if d["event_id"] == event_id]


def short(payload: dict[str, Any]) -> tuple[str, int, str, dict[str, Any]]:
    return payload["object_type"], payload["object_id"], payload["aspect_type"], payload.get("updates") or {}


def record(sb: Harness, athlete_id: int, visibility: str = "everyone", sport_type: str = "Ride") -> int:
    response = sb.console.post(
        f"/athletes/{athlete_id}/activities", json={"visibility": visibility, "sport_type": sport_type}
    )
    assert response.status_code == 200, response.text
    return response.json()["id"]


def settled(sb: Harness, sub: Sub, count: int) -> list[dict[str, Any]]:
    """Wait until the subscription has `count` events, none pending; return them. The bound is generous: a receiver
    answering slowly on purpose (post_delay) takes seconds per event, more on a machine busy with other tests."""

    def done() -> list[dict[str, Any]] | None:
        events = queued(sb, sub)
        return events if len(events) == count and all(e["status"] != "pending" for e in events) else None

    return wait_until(done, 30, f"{count} settled events for subscription {sub.id}")


def received(sub: Sub, count: int) -> list[dict[str, Any]]:
    """Wait until the receiver accepted (answered 200) `count` events for this subscription."""

    def accepted() -> list[dict[str, Any]] | None:
        ok = [p["body"] for p in list(sub.hook.posts) if p["status"] == 200]
        return ok if len(ok) >= count else None

    return wait_until(accepted, 10, f"{count} accepted deliveries at {sub.hook.url}")


@dataclass
class Pair:
    """One athlete, an app with activity:read and an app with activity:read_all, each with its subscription."""

    athlete_id: int
    read: Sub
    read_all: Sub


@pytest.fixture
def pair(sb: Harness, receiver: Receiver) -> Pair:
    athlete = new_athlete(sb)
    read = subscribe(sb, receiver, sb.connect(READ, athlete_id=athlete))
    read_all = subscribe(sb, receiver, sb.connect(READ_ALL, athlete_id=athlete))
    assert "activity:read_all" not in read.grant.scope.split() and "activity:read_all" in read_all.grant.scope.split()
    return Pair(athlete, read, read_all)


# --- §3.1 activity visibility -----------------------------------------------------------------------------


@pytest.mark.parametrize("start", ["everyone", "followers_only"])
def test_s3_1_r1_to_only_you_is_delete_for_read_apps(sb: Harness, pair: Pair, start: str) -> None:
    activity = record(sb, pair.athlete_id, visibility=start)
    change(sb, activity, visibility="only_me")
    assert [short(p) for p in payloads(sb, pair.read)] == [
        ("activity", activity, "create", {}),
        ("activity", activity, "delete", {}),
    ]
    assert [short(p) for p in payloads(sb, pair.read_all)] == [
        ("activity", activity, "create", {}),
        ("activity", activity, "update", {"private": "true"}),
    ]
    assert [short(e) for e in received(pair.read, 2)] == [short(p) for p in payloads(sb, pair.read)]


@pytest.mark.parametrize("target", ["everyone", "followers_only"])
def test_s3_1_r2_from_only_you_is_create_for_read_apps(sb: Harness, pair: Pair, target: str) -> None:
    activity = record(sb, pair.athlete_id, visibility="only_me")
    assert payloads(sb, pair.read) == []  # invisible to activity:read: nothing yet
    change(sb, activity, visibility=target)
    assert [short(p) for p in payloads(sb, pair.read)] == [("activity", activity, "create", {})]
    assert [short(p) for p in payloads(sb, pair.read_all)] == [
        ("activity", activity, "create", {}),
        ("activity", activity, "update", {"private": "false"}),
    ]
    assert [short(e) for e in received(pair.read, 1)] == [("activity", activity, "create", {})]


def test_s3_1_r3_any_visibility_change_is_private_update_for_read_all_apps(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, visibility="everyone")
    steps = [
        ("followers_only", "false"),
        ("only_me", "true"),
        ("everyone", "false"),
        ("only_me", "true"),
        ("followers_only", "false"),
    ]
    for visibility, _private in steps:
        change(sb, activity, visibility=visibility)
    updates = [p["updates"] for p in payloads(sb, pair.read_all)[1:]]
    assert updates == [{"private": private} for _, private in steps]
    assert all(isinstance(u["private"], str) for u in updates)
    # The activity:read app never hears of privacy; it sees the activity vanish and reappear instead.
    assert [p["aspect_type"] for p in payloads(sb, pair.read)] == ["create", "delete", "create", "delete", "create"]
    assert all(not p["updates"] for p in payloads(sb, pair.read))
    assert [e["updates"] for e in received(pair.read_all, 6)[1:]] == updates


# --- §3.3 subscription states -------------------------------------------------------------------------------


def test_s3_3_r1_create_sends_validation_get_and_awaits_it(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    hook = receiver.hook(validation_delay=0.6)
    outcome: dict[str, httpx.Response] = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("r", create(sb, grant.app, hook)))
    worker.start()
    wait_until(lambda: hook.validations, 5, "the validation GET")
    assert listed(sb, grant.app) == []  # awaiting validation: not active yet
    worker.join(10)
    assert outcome["r"].status_code == 201, outcome["r"].text
    assert len(hook.validations) == 1
    assert hook.validations[0]["hub.mode"] == "subscribe"
    assert [s["id"] for s in listed(sb, grant.app)] == [outcome["r"].json()["id"]]


def test_s3_3_r2_echo_within_two_seconds_activates_and_returns_id(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    hook = receiver.hook()
    response = create(sb, grant.app, hook)
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"id"} and isinstance(body["id"], int) and not isinstance(body["id"], bool)
    assert [(s["id"], s["callback_url"]) for s in listed(sb, grant.app)] == [(body["id"], hook.url)]
    # Active: a change of the authorizing athlete is pushed to it.
    activity = record(sb, grant.athlete_id)
    assert any(
        e["object_id"] == activity and e["subscription_id"] == body["id"]
        for e in wait_until(lambda: [e for e in hook.events if e["object_id"] == activity], 10, "event")
    )


def test_s3_3_r3_late_answer_fails_creation(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    hook = receiver.hook(validation_delay=1.0)
    with sb.settings(callback_timeout=0.3):
        started = time.monotonic()
        response = create(sb, grant.app, hook)
        elapsed = time.monotonic() - started
    assert_fault(response, 400, "callback url", "GET to callback URL does not return 200")
    assert elapsed < 1.0, f"the service waited {elapsed:.2f} s for a callback it should give up on after 0.3 s"
    assert len(hook.validations) == 1
    assert listed(sb, grant.app) == []


@pytest.mark.parametrize("echo", ["wrong", "none"])
def test_s3_3_r3_no_echo_fails_creation(sb: Harness, receiver: Receiver, echo: str) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    hook = receiver.hook(echo=echo)
    body = assert_fault(create(sb, grant.app, hook), 400, "callback url")
    assert body["errors"][0]["resource"] == "PushSubscription"
    assert len(hook.validations) == 1
    assert listed(sb, grant.app) == []


def test_s3_3_r4_delete_with_client_credentials_is_204(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant)
    response = sb.http.delete(f"{SUBS}/{sub.id}", params=grant.app.creds())
    assert response.status_code == 204 and response.content == b""
    assert listed(sb, grant.app) == []
    record(sb, grant.athlete_id)
    assert payloads(sb, sub) == []  # deleted: no further events
    # Deleted means gone: a new subscription can be created.
    assert create(sb, grant.app, receiver.hook()).status_code == 201


# --- §4.5 push subscription operations -----------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "callback_url", "verify_token"])
def test_s4_5_r1_create_fields_are_required(sb: Harness, receiver: Receiver, missing: str) -> None:
    app = sb.new_app()
    hook = receiver.hook()
    data = {**app.creds(), "callback_url": hook.url, "verify_token": hook.verify_token}
    del data[missing]
    body = assert_fault(sb.http.post(SUBS, data=data), 400, missing, "missing")
    assert body["message"]
    assert hook.validations == []  # refused before any handshake
    assert listed(sb, app) == []


def test_s4_5_r1_create_is_form_data_and_returns_id(sb: Harness, receiver: Receiver) -> None:
    app = sb.new_app()
    hook = receiver.hook()
    form = str(httpx.QueryParams({**app.creds(), "callback_url": hook.url, "verify_token": hook.verify_token}))
    response = sb.http.post(SUBS, content=form, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 201, response.text
    assert isinstance(response.json()["id"], int)
    assert response.headers["content-type"].startswith("application/json")


def padded_url(hook: Hook, length: int) -> str:
    """The hook's address with a query padding it to exactly `length` characters."""
    base = hook.url + "?pad="
    assert len(base) < length
    return base + "x" * (length - len(base))


def test_s4_5_r1_callback_url_at_most_255(sb: Harness, receiver: Receiver) -> None:
    app = sb.new_app()
    hook = receiver.hook()
    too_long = padded_url(hook, 256)
    assert_fault(create(sb, app, hook, callback_url=too_long), 400, "callback_url")
    assert hook.validations == [] and listed(sb, app) == []
    exact = padded_url(hook, 255)
    response = create(sb, app, hook, callback_url=exact)
    assert response.status_code == 201, response.text
    assert [s["callback_url"] for s in listed(sb, app)] == [exact]
    assert hook.validations[0]["pad"] == exact.split("pad=")[1]  # the callback's own query is kept


def test_s4_5_r2_view_lists_subscription_details(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    before = int(time.time())
    sub = subscribe(sb, receiver, grant)
    details = listed(sb, grant.app)
    assert len(details) == 1
    view = details[0]
    assert view["id"] == sub.id and view["callback_url"] == sub.hook.url
    assert view["application_id"] == grant.app.client_id
    assert isinstance(view["resource_state"], int)
    for key in ("created_at", "updated_at"):
        assert isinstance(view[key], str) and view[key].endswith("Z")
        assert calendar.timegm(time.strptime(view[key], "%Y-%m-%dT%H:%M:%SZ")) >= before - 1
    # Another app sees only its own (none); credentials are required and checked.
    assert listed(sb, sb.new_app()) == []
    assert_fault(sb.http.get(SUBS, params={"client_id": grant.app.client_id}), 400, "client_secret", "missing")
    assert_fault(
        sb.http.get(SUBS, params={"client_id": grant.app.client_id, "client_secret": "wrong"}),
        401,
        "client_secret",
        "invalid",
    )


def test_s4_5_r3_delete_204_and_errors_with_reason(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant)
    other = sb.new_app()
    url = f"{SUBS}/{sub.id}"
    assert_fault(
        sb.http.delete(url, params={"client_id": grant.app.client_id, "client_secret": "wrong"}),
        401,
        "client_secret",
        "invalid",
    )
    assert_fault(sb.http.delete(url, params={"client_id": grant.app.client_id}), 400, "client_secret", "missing")
    assert_fault(sb.http.delete(url, params=other.creds()), 404, "id")  # another app's subscription
    assert_fault(sb.http.delete(f"{SUBS}/{sub.id + 10_000_000}", params=grant.app.creds()), 404, "id")
    assert_fault(sb.http.delete(f"{SUBS}/abc", params=grant.app.creds()), 400, "id")
    assert [s["id"] for s in listed(sb, grant.app)] == [sub.id]  # none of those removed it
    response = sb.http.delete(url, params=grant.app.creds())
    assert response.status_code == 204 and response.content == b""
    assert listed(sb, grant.app) == []
    assert_fault(sb.http.delete(url, params=grant.app.creds()), 404, "id")  # already gone


# --- §6.1 events sent ------------------------------------------------------------------------------------------


def test_s6_1_r1_console_recording_is_create(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, visibility="everyone")
    for sub in (pair.read, pair.read_all):
        assert [short(p) for p in payloads(sb, sub)] == [("activity", activity, "create", {})]
        assert [short(e) for e in received(sub, 1)] == [("activity", activity, "create", {})]


def test_s6_1_r1_api_created_activity_is_create(sb: Harness, pair: Pair) -> None:
    response = sb.api(
        pair.read.grant,
        "POST",
        "/activities",
        data={
            "name": "Lunch spin",
            "sport_type": "Ride",
            "start_date_local": "2026-03-01T12:00:00Z",
            "elapsed_time": 1800,
        },
    )
    assert response.status_code == 201, response.text
    activity = response.json()["id"]
    for sub in (pair.read, pair.read_all):
        assert [short(p) for p in payloads(sb, sub)] == [("activity", activity, "create", {})]
    assert [short(e) for e in received(pair.read_all, 1)] == [("activity", activity, "create", {})]


def test_s6_1_r1_only_you_recording_is_create_for_read_all_only(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, visibility="only_me")
    assert payloads(sb, pair.read) == []
    assert [short(p) for p in payloads(sb, pair.read_all)] == [("activity", activity, "create", {})]


def test_s6_1_r2_rename_is_title_update(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id)
    change(sb, activity, name="Renamed by the athlete")
    for sub in (pair.read, pair.read_all):
        assert [short(p) for p in payloads(sb, sub)][1:] == [
            ("activity", activity, "update", {"title": "Renamed by the athlete"})
        ]
    assert received(pair.read, 2)[1]["updates"] == {"title": "Renamed by the athlete"}


def test_s6_1_r2_changes_to_only_you_activity_reach_read_all_only(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, visibility="only_me")
    change(sb, activity, name="Secret ride", sport_type="Run")
    assert payloads(sb, pair.read) == []
    assert [short(p) for p in payloads(sb, pair.read_all)][1:] == [
        ("activity", activity, "update", {"title": "Secret ride", "type": "Run"})
    ]


def test_activity_events_need_activity_read(sb: Harness, receiver: Receiver) -> None:
    """§5.2: `activity:read` is required for activity webhooks; the revocation event reaches the app regardless."""
    athlete = new_athlete(sb)
    sub = subscribe(sb, receiver, sb.connect(("read", "activity:write"), athlete_id=athlete))
    activity = record(sb, athlete)
    change(sb, activity, name="Unheard")
    created = sb.api(
        sub.grant,
        "POST",
        "/activities",
        data={
            "name": "Write only",
            "sport_type": "Run",
            "start_date_local": "2026-03-02T07:00:00Z",
            "elapsed_time": 900,
        },
    )
    assert created.status_code == 201, created.text
    assert payloads(sb, sub) == []
    assert sb.console.post(f"/athletes/{athlete}/revoke", json={"client_id": sub.app.client_id}).status_code == 200
    assert [short(p) for p in payloads(sb, sub)] == [("athlete", athlete, "update", {"authorized": "false"})]


def test_s6_1_r2_retype_is_type_update(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, sport_type="Ride")
    changed = change(sb, activity, sport_type="Run")
    assert changed["type"] == "Run"
    for sub in (pair.read, pair.read_all):
        assert [short(p) for p in payloads(sb, sub)][1:] == [("activity", activity, "update", {"type": "Run"})]


def test_s6_1_r2_one_save_one_event_with_title_and_type(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, sport_type="Ride")
    change(sb, activity, name="Became a run", sport_type="Run")
    for sub in (pair.read, pair.read_all):
        events = payloads(sb, sub)[1:]
        assert [short(p) for p in events] == [
            ("activity", activity, "update", {"title": "Became a run", "type": "Run"})
        ]
    assert received(pair.read_all, 2)[1]["updates"] == {"title": "Became a run", "type": "Run"}


def test_s6_1_r2_api_update_is_title_update(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id)
    response = sb.api(pair.read.grant, "PUT", f"/activities/{activity}", json={"name": "Named through the API"})
    assert response.status_code == 200, response.text
    for sub in (pair.read, pair.read_all):
        assert [short(p) for p in payloads(sb, sub)][1:] == [
            ("activity", activity, "update", {"title": "Named through the API"})
        ]
    # A save that changes nothing an event carries sends nothing.
    response = sb.api(pair.read.grant, "PUT", f"/activities/{activity}", json={"description": "only a description"})
    assert response.status_code == 200, response.text
    assert len(payloads(sb, pair.read)) == 2 and len(payloads(sb, pair.read_all)) == 2


def test_s6_1_r2_privacy_update_only_to_read_all_apps(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, visibility="everyone")
    change(sb, activity, visibility="followers_only")  # stays visible to both levels
    change(sb, activity, name="Quiet ride", visibility="only_me")  # one save: title and privacy
    assert [short(p) for p in payloads(sb, pair.read_all)][1:] == [
        ("activity", activity, "update", {"private": "false"}),
        ("activity", activity, "update", {"title": "Quiet ride", "private": "true"}),
    ]
    # The activity:read app is never sent `private`: nothing for followers_only, a delete when it vanishes.
    assert [short(p) for p in payloads(sb, pair.read)][1:] == [("activity", activity, "delete", {})]
    assert all("private" not in (p["updates"] or {}) for p in payloads(sb, pair.read))


def test_s6_1_r3_deleted_activity_is_delete(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id)
    delete(sb, activity)
    for sub in (pair.read, pair.read_all):
        assert [short(p) for p in payloads(sb, sub)] == [
            ("activity", activity, "create", {}),
            ("activity", activity, "delete", {}),
        ]
    assert [short(e) for e in received(pair.read, 2)][1] == ("activity", activity, "delete", {})


def test_s6_1_r3_deleting_only_you_activity_reaches_read_all_only(sb: Harness, pair: Pair) -> None:
    activity = record(sb, pair.athlete_id, visibility="only_me")
    delete(sb, activity)
    assert payloads(sb, pair.read) == []
    assert [short(p) for p in payloads(sb, pair.read_all)] == [
        ("activity", activity, "create", {}),
        ("activity", activity, "delete", {}),
    ]


def test_s6_1_r4_console_revoke_is_authorized_false(sb: Harness, pair: Pair) -> None:
    response = sb.console.post(f"/athletes/{pair.athlete_id}/revoke", json={"client_id": pair.read.app.client_id})
    assert response.status_code == 200, response.text
    expected = ("athlete", pair.athlete_id, "update", {"authorized": "false"})
    assert [short(p) for p in payloads(sb, pair.read)] == [expected]
    assert payloads(sb, pair.read)[0]["owner_id"] == pair.athlete_id
    assert payloads(sb, pair.read_all) == []  # the other app keeps its access and hears nothing
    assert [short(e) for e in received(pair.read, 1)] == [expected]
    # Revoked: the app's subscription no longer hears of this athlete's changes, nor of a second revocation.
    record(sb, pair.athlete_id)
    sb.console.post(f"/athletes/{pair.athlete_id}/revoke", json={"client_id": pair.read.app.client_id})
    assert len(payloads(sb, pair.read)) == 1 and len(payloads(sb, pair.read_all)) == 1


def test_s6_1_r4_api_deauthorize_is_authorized_false(sb: Harness, pair: Pair) -> None:
    response = sb.http.post("/oauth/deauthorize", params={"access_token": pair.read_all.grant.access_token})
    assert response.status_code == 200, response.text
    assert [short(p) for p in payloads(sb, pair.read_all)] == [
        ("athlete", pair.athlete_id, "update", {"authorized": "false"})
    ]
    assert payloads(sb, pair.read) == []
    updates = received(pair.read_all, 1)[0]["updates"]
    assert updates == {"authorized": "false"} and isinstance(updates["authorized"], str)


# --- §6.2 payload ----------------------------------------------------------------------------------------------


def test_s6_2_payload_fields_and_types(sb: Harness, pair: Pair) -> None:
    started = int(time.time())
    activity = record(sb, pair.athlete_id)
    change(sb, activity, name="Typed")
    sb.console.post(f"/athletes/{pair.athlete_id}/revoke", json={"client_id": pair.read_all.app.client_id})
    finished = int(time.time()) + 1
    events = received(pair.read_all, 3)
    assert [p["body"] for p in pair.read_all.hook.posts] == events  # nothing but these three, each once
    assert events == payloads(sb, pair.read_all)  # POSTed exactly as queued
    for event in events:
        assert set(event) == PAYLOAD_KEYS
        assert event["object_type"] in ("activity", "athlete")
        assert event["aspect_type"] in ("create", "update", "delete")
        assert isinstance(event["updates"], dict)
        for key in ("object_id", "owner_id", "subscription_id", "event_time"):
            assert isinstance(event[key], int) and not isinstance(event[key], bool), (key, event)
        assert event["owner_id"] == pair.athlete_id
        assert event["subscription_id"] == pair.read_all.id
        assert started <= event["event_time"] <= finished
    assert [e["object_id"] for e in events] == [activity, activity, pair.athlete_id]
    assert activity > 2**32  # long integers survive as JSON integers
    assert all(p["content_type"].split(";")[0] == "application/json" for p in pair.read_all.hook.posts)


# --- §6.3 delivery ---------------------------------------------------------------------------------------------


def one_event(sb: Harness, receiver: Receiver, **behaviour: Any) -> tuple[Sub, dict[str, Any]]:
    """A subscription whose hook behaves as told, and the single event of one recorded activity."""
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant)
    for key, value in behaviour.items():
        setattr(sub.hook, key, value)
    record(sb, grant.athlete_id)
    events = queued(sb, sub)
    assert len(events) == 1
    return sub, events[0]


def test_s6_3_r1_answer_within_two_seconds_is_delivered(sb: Harness, receiver: Receiver) -> None:
    sub, event = one_event(sb, receiver, post_delay=1.5)  # default callback_timeout: 2 s
    (done,) = settled(sb, sub, 1)
    assert done["status"] == "delivered" and done["attempts"] == 1
    (attempt,) = deliveries(sb, event["id"])
    assert attempt["status_code"] == 200 and 1400 <= attempt["duration_ms"] < 2000


def test_s6_3_r1_answer_after_two_seconds_is_a_failed_attempt(sb: Harness, receiver: Receiver) -> None:
    with sb.settings(**FAST_RETRIES):
        sub, event = one_event(sb, receiver, post_delay=3.0)
        wait_until(lambda: sub.hook.posts, 5, "the first attempt")
        sub.hook.post_delay = 0.0  # the retry is answered at once
        (done,) = settled(sb, sub, 1)
    assert done["status"] == "delivered" and done["attempts"] == 2
    first, second = deliveries(sb, event["id"])
    assert first["status_code"] is None and "2" in first["error"]
    assert 1900 <= first["duration_ms"] < 2900  # given up at the two-second limit, not at the answer (3 s)
    assert second["status_code"] == 200


def test_s6_3_r2_callback_fails_twice_then_answers(sb: Harness, receiver: Receiver) -> None:
    with sb.settings(**FAST_RETRIES):
        sub, event = one_event(sb, receiver, fail_next=2)
        (done,) = settled(sb, sub, 1)
    assert done["status"] == "delivered" and done["attempts"] == 3
    log = deliveries(sb, event["id"])
    assert [(d["attempt"], d["status_code"]) for d in log] == [(1, 500), (2, 500), (3, 200)]
    assert [p["status"] for p in sub.hook.posts] == [500, 500, 200]
    assert [p["body"] for p in sub.hook.posts] == [event["payload"]] * 3  # the same event each time
    assert received(sub, 1) == [event["payload"]]  # accepted exactly once
    assert log[0]["started_at"] < log[1]["started_at"] < log[2]["started_at"]


@pytest.mark.parametrize("status", [201, 204, 302, 404])
def test_s6_3_r2_only_200_counts_as_answered(sb: Harness, receiver: Receiver, status: int) -> None:
    with sb.settings(**FAST_RETRIES):
        sub, event = one_event(sb, receiver, fail_next=1, fail_status=status)
        (done,) = settled(sb, sub, 1)
    assert done["status"] == "delivered" and done["attempts"] == 2
    assert [d["status_code"] for d in deliveries(sb, event["id"])] == [status, 200]


def test_s6_3_r2_callback_never_answers_three_attempts_then_failed(sb: Harness, receiver: Receiver) -> None:
    with sb.settings(callback_timeout=0.3, **FAST_RETRIES):
        sub, event = one_event(sb, receiver, post_delay=1.0)
        (done,) = settled(sb, sub, 1)
    assert done["status"] == "failed" and done["attempts"] == 3
    log = deliveries(sb, event["id"])
    assert [d["attempt"] for d in log] == [1, 2, 3]
    assert all(d["status_code"] is None and d["error"] for d in log)
    assert all(d["duration_ms"] < 900 for d in log)  # each given up at the timeout
    assert len(sub.hook.posts) == 3


def test_s6_3_r3_changes_do_not_wait_for_delivery(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant, post_delay=1.5)
    activity = record(sb, grant.athlete_id)
    started = time.monotonic()
    change(sb, activity, name="No waiting")
    response = sb.api(grant, "PUT", f"/activities/{activity}", json={"name": "Still no waiting"})
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert elapsed < 1.0, f"the changes waited {elapsed:.2f} s for the callback"
    assert len(queued(sb, sub)) == 3  # queued durably at once, delivered later
    settled(sb, sub, 3)


def test_s6_3_r4_one_subscription_covers_every_authorizing_athlete(sb: Harness, receiver: Receiver) -> None:
    first, second, stranger = new_athlete(sb), new_athlete(sb), new_athlete(sb)
    grant = sb.connect(READ, athlete_id=first)
    sb.connect(READ, athlete_id=second, app=grant.app)
    sub = subscribe(sb, receiver, grant)
    a1, a2 = record(sb, first), record(sb, second)
    record(sb, stranger)  # never authorized the app
    assert [(p["object_id"], p["owner_id"]) for p in payloads(sb, sub)] == [(a1, first), (a2, second)]
    assert {e["owner_id"] for e in received(sub, 2)} == {first, second}
    assert_fault(create(sb, grant.app, receiver.hook()), 400, code="already exists")


# --- §6.4 validation request -----------------------------------------------------------------------------------


def test_s6_4_r1_validation_query(sb: Harness, receiver: Receiver) -> None:
    hooks = [receiver.hook(verify_token=f"token-{n}") for n in range(2)]
    for hook in hooks:
        assert create(sb, sb.new_app(), hook).status_code == 201
    queries = [hook.validations[0] for hook in hooks]
    for hook, query in zip(hooks, queries):
        assert set(query) == {"hub.mode", "hub.challenge", "hub.verify_token"}
        assert query["hub.mode"] == "subscribe"
        assert query["hub.verify_token"] == hook.verify_token
        assert len(query["hub.challenge"]) >= 8
    assert queries[0]["hub.challenge"] != queries[1]["hub.challenge"]  # random per request


def test_s6_4_r2_json_echo_is_required(sb: Harness, receiver: Receiver) -> None:
    assert create(sb, sb.new_app(), receiver.hook(echo="json")).status_code == 201
    # The right challenge, but not served as application/json: not a valid answer.
    assert_fault(create(sb, sb.new_app(), receiver.hook(echo="text")), 400, "callback url")


@pytest.mark.parametrize("behaviour", [{"echo": "wrong"}, {"echo": "none"}, {"echo": "text"}, {"verify": "mismatch"}])
def test_s6_4_r3_bad_answers_fail_creation(sb: Harness, receiver: Receiver, behaviour: dict[str, str]) -> None:
    app = sb.new_app()
    hook = receiver.hook(**{k: v for k, v in behaviour.items() if k == "echo"})
    token = "not-the-hooks-token" if "verify" in behaviour else hook.verify_token
    before = sb.snapshot(("subscriptions",))
    assert_fault(create(sb, app, hook, verify_token=token), 400, "callback url")
    assert len(hook.validations) == 1
    assert sb.snapshot(("subscriptions",)) == before


def test_s6_4_r3_unreachable_callback_fails_creation(sb: Harness) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = sb.new_app()
    assert_fault(
        sb.http.post(
            SUBS, data={**app.creds(), "callback_url": f"http://127.0.0.1:{port}/nobody", "verify_token": "t"}
        ),
        400,
        "callback url",
    )
    assert listed(sb, app) == []


# --- §7 errors -------------------------------------------------------------------------------------------------


def test_s7_r2_deauthorized_token_is_401(sb: Harness) -> None:
    grant = sb.connect()
    assert sb.get(grant, "/athlete").status_code == 200
    assert sb.http.post("/oauth/deauthorize", params={"access_token": grant.access_token}).status_code == 200
    assert_fault(sb.get(grant, "/athlete"), 401, "access_token", "invalid")
    assert_fault(sb.get(grant, "/athlete/activities"), 401)
    assert_fault(sb.get(None, "/athlete", params={"access_token": grant.access_token}), 401)
    assert sb.refresh(grant.app, grant.refresh_token).status_code in (400, 401)


def test_s7_r4_failed_validation_error_information(sb: Harness, receiver: Receiver) -> None:
    with sb.settings(callback_timeout=0.3):
        late = assert_fault(create(sb, sb.new_app(), receiver.hook(validation_delay=1.0)), 400)
    wrong = assert_fault(create(sb, sb.new_app(), receiver.hook(echo="wrong")), 400)
    for body in (late, wrong):
        (error,) = body["errors"]
        assert error["resource"] == "PushSubscription" and error["field"] == "callback url"
        assert error["code"]  # names what went wrong
    assert late["errors"][0]["code"] == "GET to callback URL does not return 200"
    assert late["errors"][0]["code"] != wrong["errors"][0]["code"]


def test_s7_r5_second_subscription_fails_naming_existing(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant)
    second = receiver.hook()
    body = assert_fault(create(sb, grant.app, second), 400, code="already exists")
    assert str(sub.id) in body["message"]
    assert second.validations == []  # refused without bothering the new callback
    assert [(s["id"], s["callback_url"]) for s in listed(sb, grant.app)] == [(sub.id, sub.hook.url)]
    # Remove the existing one first, then creation works.
    assert sb.http.delete(f"{SUBS}/{sub.id}", params=grant.app.creds()).status_code == 204
    assert create(sb, grant.app, second).status_code == 201


def test_s7_r6_delete_success_is_204_no_content(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant)
    response = sb.http.delete(f"{SUBS}/{sub.id}", params=grant.app.creds())
    assert response.status_code == 204
    assert response.content == b""
    assert listed(sb, grant.app) == []


def test_s7_r7_delete_failure_has_reason(sb: Harness, receiver: Receiver) -> None:
    grant = sb.connect(READ, athlete_id=new_athlete(sb))
    sub = subscribe(sb, receiver, grant)
    cases = [
        (sb.http.delete(f"{SUBS}/{sub.id}", params={**grant.app.creds(), "client_secret": "nope"}), 401),
        (sb.http.delete(f"{SUBS}/{sub.id + 999_999}", params=grant.app.creds()), 404),
        (sb.http.delete(f"{SUBS}/{sub.id}"), 400),
    ]
    for response, status in cases:
        (error,) = assert_fault(response, status)["errors"]
        assert error["field"] and error["code"]  # the reason
    assert [s["id"] for s in listed(sb, grant.app)] == [sub.id]


# --- §8 limits -------------------------------------------------------------------------------------------------


def test_s8_r4_one_subscription_per_application(sb: Harness, receiver: Receiver) -> None:
    app, other = sb.new_app(), sb.new_app()
    assert create(sb, app, receiver.hook()).status_code == 201
    assert_fault(create(sb, app, receiver.hook()), 400, code="already exists")
    assert create(sb, other, receiver.hook()).status_code == 201  # the limit is per application
    assert len(listed(sb, app)) == 1 and len(listed(sb, other)) == 1


def test_s8_r5_callback_url_length_limit(sb: Harness, receiver: Receiver) -> None:
    hook = receiver.hook()
    for length in (256, 300, 2000):
        assert_fault(create(sb, sb.new_app(), hook, callback_url=padded_url(hook, length)), 400, "callback_url")
    assert hook.validations == []
    assert create(sb, sb.new_app(), hook, callback_url=padded_url(hook, 255)).status_code == 201


def test_s8_r6_validation_answer_time_two_seconds(sb: Harness, receiver: Receiver) -> None:
    assert sb.console.get("/settings").json()["callback_timeout"] == 2.0
    assert create(sb, sb.new_app(), receiver.hook(validation_delay=1.5)).status_code == 201
    started = time.monotonic()
    response = create(sb, sb.new_app(), receiver.hook(validation_delay=3.0))
    elapsed = time.monotonic() - started
    assert_fault(response, 400, "callback url")
    assert 1.9 <= elapsed < 2.9  # given up at two seconds, not when the answer came (3 s)


def test_s8_r7_default_three_delivery_attempts(sb: Harness, receiver: Receiver) -> None:
    assert sb.console.get("/settings").json()["delivery_attempts"] == 3
    with sb.settings(**FAST_RETRIES):
        sub, event = one_event(sb, receiver, fail_next=1_000)
        (done,) = settled(sb, sub, 1)
    assert done["status"] == "failed" and done["attempts"] == 3
    assert [(d["attempt"], d["status_code"]) for d in deliveries(sb, event["id"])] == [(1, 500), (2, 500), (3, 500)]
    assert len(sub.hook.posts) == 3
