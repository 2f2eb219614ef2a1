"""The receiver (`fitsync webhooks serve`) on its own: the §6.4 validation GET, strict validation of §6.2 event
POSTs (forged, malformed or oversized input → 4xx and nothing stored), answering in milliseconds, and the
subscription lifecycle of the CLI (§3.3) with the receiver running as its own process.

| § | row | what the row says (short) | test |
|---|---|---|---|
| 6.2 | 1 | object_type: string `activity` or `athlete` | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored` |
| 6.2 | 2 | object_id: long integer | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored` |
| 6.2 | 3 | aspect_type: `create`, `update` or `delete` | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored` |
| 6.2 | 4 | updates: object (string values, keys per §6.1) | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored` |
| 6.2 | 5 | owner_id: long integer, a connected athlete | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored`, `test_s6_2_r5_unknown_or_disconnected_owner_is_403` |
| 6.2 | 6 | subscription_id: integer, ours | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored`, `test_s6_2_r6_forged_subscription_id_is_403` |
| 6.2 | 7 | event_time: long integer (epoch seconds) | `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored` |
| 6.3 | 1 | the callback answers 200 within two seconds (processing later) | `test_s6_3_r1_receiver_answers_well_within_two_seconds` |
| 6.4 | 1 | validation GET: hub.mode `subscribe`, hub.challenge, hub.verify_token | `test_s6_4_r1_wrong_mode_or_token_is_refused` |
| 6.4 | 2 | answer 200 with JSON (application/json) `{"hub.challenge": …}` | `test_s6_4_r2_validation_get_echoes_the_challenge_as_json` |
| 3.3 | 1, 2 | `webhooks subscribe`: the service's validation GET reaches `webhooks serve`, which echoes it → id | `test_s3_3_cli_subscription_lifecycle` |
| 3.3 | 3 | callback not answering → creation fails, nothing saved | `test_s3_3_cli_subscription_lifecycle` |
| 7 | 5 | creation when one exists fails: `subscribe` to another callback reports the existing one | `test_s3_3_cli_subscription_lifecycle` |
| 3.3 | — | created but its answer lost: found and adopted, its events accepted; `subscribe` to the same callback adopts | `test_subscribe_adopts_a_subscription_whose_creation_answer_was_lost` |
| 3.3 | 4 | `webhooks unsubscribe` deletes it; its events are refused afterwards | `test_s3_3_cli_subscription_lifecycle` |
| 3.3 | — | a new subscription gets a new id | `test_s3_3_subscription_ids_are_not_reused` |
| issue 5 | — | body size limit (413), content type (415), malformed JSON (400) | `test_oversized_body_is_413`, `test_wrong_content_type_is_415`, `test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored` |
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fitsync.webhooks.receiver import MAX_BODY_BYTES
from fitsync.webhooks.subscriptions import masked

from ..sandbox_harness import Harness
from .conftest import MakeHome, WebhookHome, add_athlete, fitsync, free_port, record, serve_process

# the PostgreSQL variants run with -m slow (tests/conftest.py): the default run's 10 minutes
pytestmark = pytest.mark.postgres_slow


@pytest.fixture
def receiving(sb: Harness, make_home: MakeHome) -> tuple[WebhookHome, int]:
    """A home with the receiver running, fitsync's side of a subscription, and one connected athlete."""
    home = make_home()
    home.serve()
    home.local_subscription()
    aid = add_athlete(sb)
    home.connect(aid, partition=False)
    return home, aid


def valid(home: WebhookHome, aid: int, **changes: Any) -> dict[str, Any]:
    return {**home.event(aid, 9_100_000_001, "update", updates={"title": "Lunch ride"}), **changes}


def assert_refused(response: httpx.Response, status: int, home: WebhookHome) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    assert isinstance(response.json().get("error"), str)
    assert home.inbox() == [], "a refused event was stored"


# --- §6.4 validation GET ------------------------------------------------------------------------------------------


def test_s6_4_r2_validation_get_echoes_the_challenge_as_json(receiving: tuple[WebhookHome, int]) -> None:
    home, _ = receiving
    token = home.client.subscription_state.verify_token().reveal()  # type: ignore[union-attr]
    for challenge in ("15f7d1a91c1f40f8a748fd134752feb3", "a b&c=d/é"):
        response = home.http.get(
            home.callback_url, params={"hub.mode": "subscribe", "hub.challenge": challenge, "hub.verify_token": token}
        )
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] == "application/json"
        assert response.json() == {"hub.challenge": challenge}


def test_s6_4_r1_wrong_mode_or_token_is_refused(receiving: tuple[WebhookHome, int], make_home: MakeHome) -> None:
    home, _ = receiving
    token = home.client.subscription_state.verify_token().reveal()  # type: ignore[union-attr]
    cases = [
        ({"hub.mode": "subscribe", "hub.challenge": "c", "hub.verify_token": token + "x"}, 403),
        ({"hub.mode": "subscribe", "hub.challenge": "c", "hub.verify_token": token[:-1]}, 403),
        ({"hub.mode": "subscribe", "hub.challenge": "c", "hub.verify_token": ""}, 403),
        ({"hub.mode": "subscribe", "hub.challenge": "c"}, 403),
        ({"hub.mode": "unsubscribe", "hub.challenge": "c", "hub.verify_token": token}, 400),
        ({"hub.challenge": "c", "hub.verify_token": token}, 400),
        ({"hub.mode": "subscribe", "hub.verify_token": token}, 400),  # no challenge to echo
        ({"hub.mode": "subscribe", "hub.challenge": "", "hub.verify_token": token}, 400),
    ]
    for params, status in cases:
        response = home.http.get(home.callback_url, params=params)
        assert response.status_code == status, (params, response.text)
        assert "c" not in response.json().get("hub.challenge", ""), params

    fresh = make_home("no-subscription")  # no path secret or verify token stored yet: no address answers
    fresh.serve()
    response = fresh.http.get(
        fresh.callback_url, params={"hub.mode": "subscribe", "hub.challenge": "c", "hub.verify_token": ""}
    )
    assert response.status_code == 404


# --- §6.2 strict validation of event POSTs --------------------------------------------------------------------------

BAD_EVENTS: list[tuple[str, Any]] = [
    # (what, change to a valid event: a dict merged in, None values remove the key, or a callable)
    ("object_id as a string", {"object_id": "9100000001"}),
    ("owner_id as a string", lambda e: {**e, "owner_id": str(e["owner_id"])}),
    ("subscription_id as a string", lambda e: {**e, "subscription_id": str(e["subscription_id"])}),
    ("event_time as a string", {"event_time": "1700000000"}),
    ("object_id a boolean", {"object_id": True}),
    ("event_time a boolean", {"event_time": True}),
    ("object_id a float", {"object_id": 9100000001.0}),
    ("event_time a float", {"event_time": 1700000000.5}),
    ("object_id negative", {"object_id": -9100000001}),
    ("object_id zero", {"object_id": 0}),
    ("event_time negative", {"event_time": -1}),
    ("object_id beyond a long", {"object_id": 2**63}),
    ("object_id null", {"object_id": None}),
    ("owner_id missing", lambda e: {k: v for k, v in e.items() if k != "owner_id"}),
    ("event_time missing", lambda e: {k: v for k, v in e.items() if k != "event_time"}),
    ("object_type unknown", {"object_type": "segment"}),
    ("object_type missing", lambda e: {k: v for k, v in e.items() if k != "object_type"}),
    ("object_type not a string", {"object_type": 1}),
    ("aspect_type unknown", {"aspect_type": "rename"}),
    (
        "athlete create",
        lambda e: {
            **e,
            "object_type": "athlete",
            "aspect_type": "create",
            "object_id": e["owner_id"],
            "updates": {"authorized": "false"},
        },
    ),
    (
        "athlete authorized true",
        lambda e: {**e, "object_type": "athlete", "object_id": e["owner_id"], "updates": {"authorized": "true"}},
    ),
    (
        "athlete update of another athlete",
        lambda e: {**e, "object_type": "athlete", "object_id": e["owner_id"] + 1, "updates": {"authorized": "false"}},
    ),
    ("extra field", {"signature": "deadbeef"}),
    ("updates not an object", {"updates": ["title"]}),
    ("updates value an integer", {"updates": {"title": 5}}),
    ("updates private a boolean", {"updates": {"private": True}}),
    ("updates private not true/false", {"updates": {"private": "yes"}}),
    ("updates value an object", {"updates": {"title": {"text": "x"}}}),
    ("updates unknown key", {"updates": {"distance": "5000"}}),
    ("updates of an activity with authorized", {"updates": {"authorized": "false"}}),
]
BAD_BODIES: list[tuple[str, bytes]] = [
    ("truncated JSON", b'{"object_type": "activity", "object_id": '),
    ("empty body", b""),
    ("a JSON array", b"[]"),
    ("a JSON string", b'"event"'),
    ("JSON null", b"null"),
    ("not UTF-8", b'{"object_type": "\xff\xfe"}'),
    ("deeply nested", b"[" * 4000 + b"]" * 4000),
    ("NaN event_time", None),  # filled in below from a valid event
]


def _mutate(event: dict[str, Any], change: Any) -> dict[str, Any]:
    if callable(change):
        return change(event)
    return {**event, **change}


def test_s6_2_r1_to_r7_bad_events_are_refused_and_not_stored(receiving: tuple[WebhookHome, int]) -> None:
    home, aid = receiving
    event = valid(home, aid)
    for what, change in BAD_EVENTS:
        response = home.post(_mutate(event, change))
        assert response.status_code == 400, (what, response.status_code, response.text)
        assert home.inbox() == [], what
    for what, body in BAD_BODIES:
        if body is None:
            body = json.dumps(event).replace(str(event["event_time"]), "NaN").encode()
        response = home.post(body, raw=True)
        assert response.status_code == 400, (what, response.status_code, response.text)
        assert home.inbox() == [], what
    # The same receiver takes the valid event (so the refusals above are about the input, not the setup).
    assert home.post(event).status_code == 200
    assert [row["payload"] for row in home.inbox()] == [event]


def test_s6_2_r6_forged_subscription_id_is_403(receiving: tuple[WebhookHome, int]) -> None:
    home, aid = receiving
    for forged in (home.subscription_id + 1, 1):  # type: ignore[operator]
        assert_refused(home.post(valid(home, aid, subscription_id=forged)), 403, home)
    url = home.callback_url
    home.client.subscription_state.forget()  # after `unsubscribe` the old address answers nothing
    assert_refused(home.http.post(url, json=valid(home, aid)), 404, home)


def test_s6_2_r5_unknown_or_disconnected_owner_is_403(sb: Harness, receiving: tuple[WebhookHome, int]) -> None:
    home, aid = receiving
    stranger = add_athlete(sb)  # exists in the service, never connected to this home
    assert_refused(home.post(valid(home, aid, owner_id=stranger)), 403, home)
    assert_refused(
        home.post(home.event(stranger, stranger, object_type="athlete", updates={"authorized": "false"})), 403, home
    )
    with home.client.store.transaction() as conn:
        conn.execute("UPDATE athletes SET status = 'disconnected', access_token = NULL WHERE athlete_id = ?", (aid,))
    assert_refused(home.post(valid(home, aid)), 403, home)


def test_oversized_body_is_413(receiving: tuple[WebhookHome, int]) -> None:
    home, aid = receiving
    big = valid(home, aid, updates={"title": "x" * 900})
    padded = json.dumps(big).encode() + b" " * (MAX_BODY_BYTES + 1)  # valid JSON, too long
    assert_refused(home.post(padded, raw=True), 413, home)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit must hold while reading
        yield json.dumps(big).encode()
        for _ in range(64):
            yield b" " * 1024

    response = home.http.post(home.callback_url, content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_refused(response, 413, home)
    assert home.post(big).status_code == 200  # the same event, not padded, is taken


def test_wrong_content_type_is_415(receiving: tuple[WebhookHome, int]) -> None:
    home, aid = receiving
    event = valid(home, aid)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/jsonx", ""):
        assert_refused(home.post(event, content_type=content_type), 415, home)
    assert home.post(event, content_type="application/json; charset=utf-8").status_code == 200


# --- answering in milliseconds ------------------------------------------------------------------------------------


def test_s6_3_r1_receiver_answers_well_within_two_seconds(receiving: tuple[WebhookHome, int]) -> None:
    """What the service demands, with a margin: each of 200 sequential valid event POSTs answered 200 within half its
    two seconds. The speed itself is a benchmark (`python -m bench webhook_ack`): a p99 bound of 50 ms here failed
    on a loaded 2-core machine (p99 61.6 ms, median 25.9 ms, PostgreSQL beside 3 test workers)."""
    home, aid = receiving
    base = int(time.time())
    for i in range(5):  # warm up the connection and the receiver
        assert home.post(valid(home, aid, object_id=9_300_000_000 + i, event_time=base)).status_code == 200
    durations = []
    for i in range(200):
        event = valid(home, aid, object_id=9_200_000_000 + i, event_time=base)
        started = time.perf_counter()
        response = home.post(event)
        durations.append(time.perf_counter() - started)
        assert response.status_code == 200 and response.json() == {"stored": True}
    durations.sort()
    assert durations[-1] < 1.0, f"slowest {durations[-1] * 1000:.0f} ms (median {durations[100] * 1000:.1f} ms)"
    assert len(home.inbox()) == 205


# --- the subscription lifecycle from the CLI, with `fitsync webhooks serve` as its own process ---------------------


def service_subscriptions(sb: Harness, home: WebhookHome) -> list[dict[str, Any]]:
    response = sb.http.get("/api/v3/push_subscriptions", params=home.app.creds())
    assert response.status_code == 200, response.text
    return response.json()


def test_s3_3_cli_subscription_lifecycle(sb: Harness, make_home: MakeHome, tmp_path: Path) -> None:
    home = make_home()
    aid = add_athlete(sb)
    home.connect(aid, partition=False)
    port = free_port()
    callback = f"http://127.0.0.1:{port}/webhooks"  # the prefix: fitsync appends the path secret
    dead = fitsync(home, "webhooks", "subscribe", "--callback-url", callback)  # the receiver is not running yet
    assert dead.returncode != 0 and "Traceback" not in dead.stderr and dead.stderr.strip(), dead
    assert service_subscriptions(sb, home) == [] and home.client.subscription_state.current() is None
    receiver = serve_process(home, port, tmp_path / "serve.log")
    try:
        status = fitsync(home, "webhooks", "status")
        assert status.returncode == 0 and status.stdout.strip() == "No subscription.", status

        home.mark_events()
        created = fitsync(home, "webhooks", "subscribe", "--callback-url", callback)
        assert created.returncode == 0, created.stderr
        [sub] = service_subscriptions(sb, home)
        secret = sub["callback_url"].removeprefix(callback + "/")
        assert len(secret) >= 24 and "/" not in secret, sub
        assert created.stdout.strip() == f"Subscribed: id {sub['id']} → {masked(sub['callback_url'])}"
        assert secret not in created.stdout
        home.subscription_id = sub["id"]
        assert home.client.subscription_state.current().id == sub["id"]  # type: ignore[union-attr]
        token = home.client.subscription_state.verify_token().reveal()  # type: ignore[union-attr]

        status = fitsync(home, "webhooks", "status")
        assert status.returncode == 0, status.stderr
        assert f"│ {sub['id']} " in status.stdout and "just now" in status.stdout, status.stdout  # the table's row
        assert secret not in status.stdout

        again = fitsync(home, "webhooks", "subscribe", "--callback-url", callback + "/other")
        assert again.returncode != 0
        assert f"subscription {sub['id']}" in again.stderr and callback in again.stderr, again.stderr
        assert secret not in again.stderr
        assert "unsubscribe" in again.stderr and "Traceback" not in again.stderr
        assert service_subscriptions(sb, home) == [sub]  # still the one, unchanged
        assert home.client.subscription_state.verify_token().reveal() == token  # type: ignore[union-attr]

        # The subscription made by the CLI works: an athlete's change reaches the receiver process's inbox.
        activity = record(sb, aid)
        home.settle(1)
        assert [(e["payload"]["object_id"], e["payload"]["aspect_type"]) for e in home.inbox()] == [
            (activity, "create")
        ]

        gone = fitsync(home, "webhooks", "unsubscribe", "--yes")
        assert gone.returncode == 0 and gone.stdout.strip() == "Unsubscribed.", gone
        assert service_subscriptions(sb, home) == []
        assert home.client.subscription_state.current() is None
        assert fitsync(home, "webhooks", "status").stdout.strip() == "No subscription."
        # Events of the old subscription are refused now.
        old = home.event(aid, activity, "update", updates={"title": "late"})
        response = httpx.post(sub["callback_url"], json=old)
        assert response.status_code == 404 and len(home.inbox()) == 1
        home.subscription_id = None

        again = fitsync(home, "webhooks", "unsubscribe")
        assert again.returncode != 0 and "no subscription" in again.stderr
    finally:
        receiver.terminate()
        receiver.wait(10)


def test_subscribe_adopts_a_subscription_whose_creation_answer_was_lost(sb: Harness, make_home: MakeHome) -> None:
    """The service created (and validated) the subscription, then its answer was lost: fitsync finds it, stores
    its id, and its events are accepted; subscribing again to the same callback adopts it, creates nothing."""
    home = make_home()
    aid = add_athlete(sb)
    home.connect(aid, partition=False)
    home.serve()
    before = sb.counters().get("injected_lost_responses", 0)
    with sb.settings(fault_lost_responses=1, fault_lost_response_match="POST /api/v3/push_subscriptions"):
        sub_id = home.subscribe()
    assert sb.counters()["injected_lost_responses"] - before == 1
    [sub] = service_subscriptions(sb, home)
    assert sub_id == sub["id"] and home.client.subscription_state.current().id == sub_id  # type: ignore[union-attr]

    activity = record(sb, aid)
    home.settle(1)
    assert [(e["payload"]["object_id"], e["payload"]["aspect_type"]) for e in home.inbox()] == [(activity, "create")]

    assert home.subscribe() == sub_id and service_subscriptions(sb, home) == [sub]  # idempotent


def test_s3_3_subscription_ids_are_not_reused(make_home: MakeHome) -> None:
    first = make_home("first")
    first.serve()
    old = first.subscribe()
    first.client.subscriptions().delete(old)
    first.subscription_id = None
    second = make_home("second")
    second.serve()
    assert second.subscribe() != old


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_the_receiver_process_stops_cleanly_on_a_signal(
    receiving: tuple[WebhookHome, int], tmp_path: Path, signum: int, code: int
) -> None:
    home, aid = receiving
    port = free_port()
    log = tmp_path / "serve.log"
    process = serve_process(home, port, log)
    url = home.callback_url.replace(home.callback_prefix, f"http://127.0.0.1:{port}/webhooks")
    assert httpx.post(url, json=valid(home, aid)).status_code == 200
    process.send_signal(signum)
    assert process.wait(20) == code
    text = log.read_text()
    assert "Stopped by" in text and "1 events stored since start" in text and "Traceback" not in text, text
    assert f"activity 9100000001 update of athlete {aid}: stored" in text  # one line per event


def test_an_event_that_cannot_be_stored_is_503_with_the_reason_logged(
    receiving: tuple[WebhookHome, int], caplog: pytest.LogCaptureFixture
) -> None:
    """The state DB locked by another writer (or a full disk): the receiver answers 503 within the service's
    2 seconds so the event is retried, and logs why; once the DB is free the retry is stored."""
    home, aid = receiving
    store = home.client.store
    blocker = store.connect()
    store.begin_write(blocker)  # another process's write transaction
    try:
        with caplog.at_level("ERROR"):
            started = time.monotonic()
            response = home.post(valid(home, aid))
            answered_in = time.monotonic() - started
        assert response.status_code == 503 and "retry" in response.json()["error"]
        assert answered_in < 2.0
        [message] = [r.getMessage() for r in caplog.records if "could not store" in r.getMessage()]
        locked = "database is locked" if store.dialect == "sqlite" else "lock timeout"
        assert f"athlete {aid}" in message and locked in message and "503" in message
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert home.inbox() == []
    assert home.post(valid(home, aid)).status_code == 200 and len(home.inbox()) == 1


def test_a_receiver_whose_database_connection_was_dropped_reconnects_and_stores(
    receiving: tuple[WebhookHome, int], caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL restarted (or failed over): the receiver's own connection is gone. The next event is stored on a
    new connection, not answered 503 until someone restarts the receiver."""
    home, aid = receiving
    store = home.client.store
    if store.dialect != "postgresql":
        pytest.skip("a SQLite file connection cannot be dropped by a server")
    assert home.post(valid(home, aid)).status_code == 200  # the receiver's connection is open and used
    with store.reading() as conn:
        dropped = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    assert dropped >= 1
    with caplog.at_level("WARNING"):
        response = home.post(valid(home, aid, event_time=valid(home, aid)["event_time"] + 1))
    assert response.status_code == 200 and response.json()["stored"] == 1, response.text
    assert any("reconnecting" in r.getMessage() for r in caplog.records)
    assert len(home.inbox()) == 2
