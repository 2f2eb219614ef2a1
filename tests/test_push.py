"""Push subscriptions, event rules and delivery, against a real HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from fitsync.sandbox import store
from fitsync.sandbox.apps import App
from fitsync.sandbox.faults import ApiError
from fitsync.sandbox.push import (
    ActivityView,
    DeliveryWorker,
    create_subscription,
    delete_subscription,
    delivery_log,
    emit_activity_change,
    emit_deauthorization,
    list_events,
    list_subscriptions,
)
from fitsync.sandbox.settings import Settings

ATHLETE = 134815
OTHER_ATHLETE = 999
DEADLINE = 5.0


# --- a webhook receiver under uvicorn ------------------------------------------------------------------


class Receiver:
    """Callback endpoints: GET /cb/<mode> answers the handshake in one way per mode; POST /hook/<name>
    records events and answers with the next status of `plans[name]` (its last status repeats; 200 if unset)."""

    def __init__(self) -> None:
        self.base = ""
        self.gets: list[dict[str, str]] = []
        self.posts: dict[str, list[tuple[dict[str, Any], str]]] = defaultdict(list)
        self.plans: dict[str, list[int]] = {}
        self.app = Starlette(
            routes=[Route("/cb/{mode}", self.handshake), Route("/hook/{name}", self.hook, methods=["POST"])]
        )

    async def handshake(self, request: Request) -> Response:
        query = dict(request.query_params)
        self.gets.append(query)
        echo = {"hub.challenge": query.get("hub.challenge", "")}
        mode = request.path_params["mode"]
        if mode == "slow":
            await asyncio.sleep(0.8)
        responses: dict[str, Callable[[], Response]] = {
            "echo": lambda: JSONResponse(echo),
            "slow": lambda: JSONResponse(echo),
            "wrong": lambda: JSONResponse({"hub.challenge": "not-it"}),
            "text": lambda: PlainTextResponse(json.dumps(echo)),
            "array": lambda: JSONResponse([echo]),
            "status500": lambda: JSONResponse(echo, status_code=500),
        }
        return responses[mode]()

    async def hook(self, request: Request) -> Response:
        name = request.path_params["name"]
        self.posts[name].append((json.loads(await request.body()), request.headers.get("content-type", "")))
        plan = self.plans.setdefault(name, [200])
        return Response(status_code=plan.pop(0) if len(plan) > 1 else plan[0])

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    config = uvicorn.Config(
        rec.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + DEADLINE
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "receiver did not start"
        time.sleep(0.01)
    rec.base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    yield rec
    server.should_exit = True
    thread.join(DEADLINE)


def closed_port_url() -> str:
    """An address nobody listens on: connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook/nobody"


# --- db fixtures ---------------------------------------------------------------------------------------


@pytest.fixture
def conn() -> Iterator[Any]:
    c = store.connect(":memory:")
    yield c
    c.close()


def add_app(
    conn: Any,
    app_id: int,
    *,
    scope: str | None = None,
    callback_url: str | None = None,
    athlete_id: int = ATHLETE,
    revoked: bool = False,
) -> App:
    """An app, optionally with a grant from the athlete and a subscription."""
    now = int(time.time())
    with store.transaction(conn):
        conn.execute(
            "INSERT INTO apps (id, name, callback_domain, secret_hash, created_at) VALUES (?, ?, 'localhost', 'x', ?)",
            (app_id, f"app {app_id}", now),
        )
        if scope is not None:
            conn.execute(
                "INSERT INTO grants (app_id, athlete_id, scope, created_at, updated_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
                (app_id, athlete_id, scope, now, now, now if revoked else None),
            )
        if callback_url is not None:
            conn.execute(
                "INSERT INTO subscriptions (app_id, callback_url, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (app_id, callback_url, now, now),
            )
    return App(app_id, f"app {app_id}", "localhost")


def subscription_of(conn: Any, app: App) -> int:
    return conn.execute("SELECT id FROM subscriptions WHERE app_id = ?", (app.id,)).fetchone()["id"]


def event_status(conn: Any, event_id: int) -> tuple[str, int]:
    row = conn.execute("SELECT status, attempts FROM events WHERE id = ?", (event_id,)).fetchone()
    return row["status"], row["attempts"]


# --- subscriptions -------------------------------------------------------------------------------------


def create(conn: Any, app: App, url: object, token: object = "tok", **settings: Any) -> dict[str, int]:
    async def go() -> dict[str, int]:
        async with httpx.AsyncClient() as http:
            return await create_subscription(
                conn, app, callback_url=url, verify_token=token, settings=Settings(**settings), http=http
            )

    return asyncio.run(go())


def error_of(call: Callable[[], object]) -> ApiError:
    with pytest.raises(ApiError) as info:
        call()
    return info.value


def test_handshake_success_keeps_the_callback_query(conn: Any, receiver: Receiver) -> None:
    app = add_app(conn, 1)
    before = len(receiver.gets)
    result = create(conn, app, receiver.url("/cb/echo?tenant=7"), "secret token")
    query = receiver.gets[before]
    assert query["tenant"] == "7"
    assert query["hub.mode"] == "subscribe" and query["hub.verify_token"] == "secret token"
    assert len(query["hub.challenge"]) >= 16
    [sub] = list_subscriptions(conn, app)
    assert sub["id"] == result["id"] and sub["resource_state"] == 2 and sub["application_id"] == 1
    assert sub["callback_url"] == receiver.url("/cb/echo?tenant=7")
    assert sub["created_at"].endswith("Z") and sub["updated_at"] == sub["created_at"]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/cb/wrong", "callback url did not echo hub.challenge"),
        ("/cb/text", "callback url did not echo hub.challenge"),
        ("/cb/array", "callback url did not echo hub.challenge"),
        ("/cb/status500", "GET to callback URL does not return 200"),
        ("/no-such-route", "GET to callback URL does not return 200"),
    ],
)
def test_handshake_failures(conn: Any, receiver: Receiver, path: str, code: str) -> None:
    app = add_app(conn, 1)
    err = error_of(lambda: create(conn, app, receiver.url(path)))
    assert err.status == 400
    assert err.payload() == {
        "message": "Bad Request",
        "errors": [{"resource": "PushSubscription", "field": "callback url", "code": code}],
    }
    assert list_subscriptions(conn, app) == []


def test_handshake_timeout_and_refused_connection(conn: Any, receiver: Receiver) -> None:
    app = add_app(conn, 1)
    # /cb/slow answers correctly after 0.8 s: only the 0.2 s timeout makes the handshake fail
    err = error_of(lambda: create(conn, app, receiver.url("/cb/slow"), callback_timeout=0.2))
    assert err.status == 400 and err.code == "GET to callback URL does not return 200"
    err = error_of(lambda: create(conn, app, closed_port_url()))
    assert err.code == "GET to callback URL does not return 200"
    assert list_subscriptions(conn, app) == []


def test_already_exists_is_refused_before_any_handshake(conn: Any, receiver: Receiver) -> None:
    app = add_app(conn, 1)
    sub_id = create(conn, app, receiver.url("/cb/echo"))["id"]
    gets = len(receiver.gets)
    err = error_of(lambda: create(conn, app, receiver.url("/cb/echo")))
    assert err.payload()["errors"] == [{"resource": "PushSubscription", "field": "", "code": "already exists"}]
    assert str(sub_id) in err.payload()["message"] and "delete" in err.payload()["message"]
    assert len(receiver.gets) == gets


def test_concurrent_creates_exactly_one_wins(conn: Any, receiver: Receiver) -> None:
    app = add_app(conn, 1)

    async def both() -> list[object]:
        async with httpx.AsyncClient() as http:
            calls = [
                create_subscription(
                    conn, app, callback_url=receiver.url("/cb/echo"), verify_token="t", settings=Settings(), http=http
                )
                for _ in range(2)
            ]
            return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(both())
    wins = [r for r in results if isinstance(r, dict)]
    losses = [r for r in results if isinstance(r, ApiError)]
    assert len(wins) == 1 and len(losses) == 1 and losses[0].code == "already exists"
    assert [s["id"] for s in list_subscriptions(conn, app)] == [wins[0]["id"]]


def test_callback_url_length_and_form(conn: Any, receiver: Receiver) -> None:
    app = add_app(conn, 1)
    prefix = receiver.url("/cb/echo?pad=")
    too_long = prefix + "x" * (256 - len(prefix))
    err = error_of(lambda: create(conn, app, too_long))
    assert (err.status, err.resource, err.field, err.code) == (400, "PushSubscription", "callback_url", "invalid")
    for bad in ["ftp://example.com/cb", "/relative/cb", "http://", "http://host:notaport/", "http://a b/"]:
        assert error_of(lambda bad=bad: create(conn, app, bad)).code == "invalid", bad
    for field, kwargs in [
        ("callback_url", {"url": None}),
        ("callback_url", {"url": "  "}),
        ("verify_token", {"token": ""}),
    ]:
        args = {"url": receiver.url("/cb/echo"), "token": "t", **kwargs}
        err = error_of(lambda args=args: create(conn, app, args["url"], args["token"]))
        assert (err.field, err.code) == (field, "missing")
    exactly_255 = prefix + "x" * (255 - len(prefix))
    assert create(conn, app, exactly_255)["id"] > 0


def test_delete_subscription(conn: Any, receiver: Receiver) -> None:
    mine = add_app(conn, 1, scope="activity:read", callback_url=receiver.url("/hook/x"))
    theirs = add_app(conn, 2, callback_url=receiver.url("/hook/y"))
    sub_id = subscription_of(conn, mine)
    [event_id] = emit_activity_change(conn, athlete_id=ATHLETE, activity_id=5, before=None, after=V("everyone"))
    for wrong_id in (subscription_of(conn, theirs), 424242):
        err = error_of(lambda wrong_id=wrong_id: delete_subscription(conn, mine, wrong_id))
        assert (err.status, err.resource, err.field, err.code) == (404, "PushSubscription", "id", "invalid")
    delete_subscription(conn, mine, sub_id)
    assert list_subscriptions(conn, mine) == []
    assert event_status(conn, event_id) == ("failed", 0)
    assert len(list_subscriptions(conn, theirs)) == 1


# --- event rules (§3.1, §6.1) --------------------------------------------------------------------------


def V(visibility: str, name: str = "Morning Run", type: str = "Run") -> ActivityView:
    return ActivityView(visibility=visibility, name=name, type=type)


Events = list[tuple[str, dict[str, str]]]  # (aspect_type, updates) per event, in order
NOTHING: Events = []
CREATE: Events = [("create", {})]
DELETE: Events = [("delete", {})]


def UPDATE(**updates: str) -> Events:
    return [("update", updates)]


# (case, before, after, events for an activity:read app, events for an activity:read_all app)
RULES = [
    ("created, everyone", None, V("everyone"), CREATE, CREATE),
    ("created, followers", None, V("followers_only"), CREATE, CREATE),
    ("created, only me", None, V("only_me"), NOTHING, CREATE),
    ("deleted, followers", V("followers_only"), None, DELETE, DELETE),
    ("deleted, only me", V("only_me"), None, NOTHING, DELETE),
    ("everyone to only me", V("everyone"), V("only_me"), DELETE, UPDATE(private="true")),
    ("followers to only me", V("followers_only"), V("only_me"), DELETE, UPDATE(private="true")),
    ("only me to everyone", V("only_me"), V("everyone"), CREATE, UPDATE(private="false")),
    ("only me to followers", V("only_me"), V("followers_only"), CREATE, UPDATE(private="false")),
    ("everyone to followers", V("everyone"), V("followers_only"), NOTHING, UPDATE(private="false")),
    ("followers to everyone", V("followers_only"), V("everyone"), NOTHING, UPDATE(private="false")),
    ("title", V("everyone"), V("everyone", name="Lunch Run"), UPDATE(title="Lunch Run"), UPDATE(title="Lunch Run")),
    ("type", V("followers_only"), V("followers_only", type="Walk"), UPDATE(type="Walk"), UPDATE(type="Walk")),
    (
        "title and type at once",
        V("everyone"),
        V("everyone", name="Hike", type="Hike"),
        UPDATE(title="Hike", type="Hike"),
        UPDATE(title="Hike", type="Hike"),
    ),
    (
        "title, type and privacy at once",
        V("everyone"),
        V("only_me", name="Hike", type="Hike"),
        DELETE,
        UPDATE(title="Hike", type="Hike", private="true"),
    ),
    ("title and visibility public", V("only_me"), V("everyone", name="X"), CREATE, UPDATE(title="X", private="false")),
    ("title of an only-me activity", V("only_me"), V("only_me", name="X"), NOTHING, UPDATE(title="X")),
    ("no change", V("everyone"), V("everyone"), NOTHING, NOTHING),
    ("nothing to nothing", None, None, NOTHING, NOTHING),
]


@pytest.mark.parametrize(("case", "before", "after", "for_read", "for_read_all"), RULES, ids=[r[0] for r in RULES])
def test_activity_event_rules(
    conn: Any,
    case: str,
    before: ActivityView | None,
    after: ActivityView | None,
    for_read: list[Any],
    for_read_all: list[Any],
) -> None:
    read = add_app(conn, 1, scope="read activity:read", callback_url="http://127.0.0.1:9/a")
    read_all = add_app(conn, 2, scope="read,activity:read_all", callback_url="http://127.0.0.1:9/b")
    silent = [
        add_app(conn, 3, scope="read profile:read_all activity:write", callback_url="http://127.0.0.1:9/c"),  # no read
        add_app(conn, 4, scope="activity:read_all", callback_url="http://127.0.0.1:9/d", revoked=True),
        add_app(conn, 5, scope="activity:read_all", callback_url="http://127.0.0.1:9/e", athlete_id=OTHER_ATHLETE),
        add_app(conn, 6, scope="activity:read_all"),  # authorized, but no subscription
    ]
    ids = emit_activity_change(conn, athlete_id=ATHLETE, activity_id=77, before=before, after=after, event_time=1700)
    events = sorted(list_events(conn), key=lambda e: e["id"])
    assert [e["id"] for e in events] == ids

    def seen_by(app: App) -> list[tuple[str, dict[str, str]]]:
        sub = conn.execute("SELECT id FROM subscriptions WHERE app_id = ?", (app.id,)).fetchone()
        mine = [e["payload"] for e in events if sub and e["subscription_id"] == sub["id"]]
        return [(p["aspect_type"], p["updates"]) for p in mine]

    assert seen_by(read) == for_read
    assert seen_by(read_all) == for_read_all
    assert all(seen_by(app) == [] for app in silent)
    for e in events:
        assert e["status"] == "pending" and e["attempts"] == 0
        assert e["payload"] == {
            "object_type": "activity",
            "object_id": 77,
            "aspect_type": e["payload"]["aspect_type"],
            "updates": e["payload"]["updates"],
            "owner_id": ATHLETE,
            "subscription_id": e["subscription_id"],
            "event_time": 1700,
        }
        assert list(e["payload"]) == [
            "object_type",
            "object_id",
            "aspect_type",
            "updates",
            "owner_id",
            "subscription_id",
            "event_time",
        ]


def test_deauthorization_event(conn: Any) -> None:
    app = add_app(conn, 1, scope="read", callback_url="http://127.0.0.1:9/a", revoked=True)
    add_app(conn, 2, scope="activity:read")  # no subscription: nothing to send
    [event_id] = emit_deauthorization(conn, app_id=1, athlete_id=ATHLETE, event_time=1234)
    assert emit_deauthorization(conn, app_id=2, athlete_id=ATHLETE) == []
    [event] = list_events(conn)
    assert event["id"] == event_id
    assert event["payload"] == {
        "object_type": "athlete",
        "object_id": ATHLETE,
        "aspect_type": "update",
        "updates": {"authorized": "false"},
        "owner_id": ATHLETE,
        "subscription_id": subscription_of(conn, app),
        "event_time": 1234,
    }
    assert isinstance(emit_deauthorization(conn, app_id=1, athlete_id=ATHLETE)[0], int)


# --- delivery ------------------------------------------------------------------------------------------


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def run_worker(conn: Any, settings: Settings, until: Callable[[], bool]) -> None:
    """Run a worker on a fresh loop until `until()` holds, then stop it; it must end cleanly."""

    async def go() -> None:
        worker = DeliveryWorker(conn, lambda: settings)
        task = worker.start()
        try:
            worker.wake()
            await wait_until(until, "delivery")
        finally:
            await worker.stop()
        assert task.done() and task.exception() is None

    asyncio.run(go())


def emit_create(conn: Any, activity_id: int = 77) -> list[int]:
    return emit_activity_change(conn, athlete_id=ATHLETE, activity_id=activity_id, before=None, after=V("everyone"))


def test_worker_delivers_json_post(conn: Any, receiver: Receiver) -> None:
    app = add_app(conn, 1, scope="activity:read", callback_url=receiver.url("/hook/deliver"))
    [event_id] = emit_create(conn)
    run_worker(conn, Settings(), lambda: event_status(conn, event_id)[0] == "delivered")
    [(payload, content_type)] = receiver.posts["deliver"]
    assert content_type == "application/json"
    assert payload == list_events(conn)[0]["payload"] and payload["subscription_id"] == subscription_of(conn, app)
    [entry] = delivery_log(conn, event_id=event_id)
    assert (entry["attempt"], entry["status_code"], entry["error"]) == (1, 200, None)
    assert entry["duration_ms"] >= 0
    assert event_status(conn, event_id) == ("delivered", 1)
    assert store.counters(conn) == {"deliveries": 1, "deliveries_ok": 1}


def test_worker_retries_until_200(conn: Any, receiver: Receiver) -> None:
    add_app(conn, 1, scope="activity:read", callback_url=receiver.url("/hook/flaky"))
    receiver.plans["flaky"] = [500, 503, 200]
    [event_id] = emit_create(conn)
    settings = Settings(retry_delays=[0.05, 0.05])
    run_worker(conn, settings, lambda: event_status(conn, event_id)[0] == "delivered")
    log = sorted(delivery_log(conn, event_id=event_id), key=lambda d: d["attempt"])
    assert [(d["attempt"], d["status_code"]) for d in log] == [(1, 500), (2, 503), (3, 200)]
    assert log[0]["error"] == "HTTP 500" and log[1]["started_at"] - log[0]["started_at"] >= 0.05
    assert len(receiver.posts["flaky"]) == 3
    assert event_status(conn, event_id) == ("delivered", 3)
    assert store.counters(conn) == {"deliveries": 3, "deliveries_ok": 1, "deliveries_failed_attempts": 2}


def test_worker_gives_up_after_three_attempts(conn: Any, receiver: Receiver) -> None:
    add_app(conn, 1, scope="activity:read", callback_url=receiver.url("/hook/down"))
    add_app(conn, 2, scope="activity:read", callback_url=closed_port_url())
    receiver.plans["down"] = [500]
    failing, refused = emit_create(conn)
    settings = Settings(retry_delays=[0.05])  # the last delay repeats
    run_worker(conn, settings, lambda: all(event_status(conn, e)[0] == "failed" for e in (failing, refused)))
    assert event_status(conn, failing) == ("failed", 3) and event_status(conn, refused) == ("failed", 3)
    assert len(receiver.posts["down"]) == 3
    refusals = delivery_log(conn, event_id=refused)
    assert len(refusals) == 3 and all(d["status_code"] is None and d["error"] for d in refusals)
    assert store.counters(conn)["deliveries_failed_attempts"] == 6


def test_deleted_subscription_gets_nothing(conn: Any, receiver: Receiver) -> None:
    gone = add_app(conn, 1, scope="activity:read", callback_url=receiver.url("/hook/gone"))
    add_app(conn, 2, scope="activity:read", callback_url=receiver.url("/hook/stays"))
    first, second = emit_create(conn)
    delete_subscription(conn, gone, subscription_of(conn, gone))
    # Events go out in id order, so once the later one is delivered the earlier one was passed over.
    run_worker(conn, Settings(), lambda: event_status(conn, second)[0] == "delivered")
    assert receiver.posts["gone"] == [] and event_status(conn, first) == ("failed", 0)


def test_worker_polls_events_written_by_another_process(tmp_path: Any, receiver: Receiver) -> None:
    path = str(tmp_path / "sandbox.db")
    server_conn, cli_conn = store.connect(path), store.connect(path)
    add_app(cli_conn, 1, scope="activity:read", callback_url=receiver.url("/hook/cli"))
    [first] = emit_create(cli_conn, activity_id=1)
    failures = iter([RuntimeError("settings briefly unreadable")])

    def flaky_settings() -> Settings:  # the first round fails: the loop must log it and carry on
        failure = next(failures, None)
        if failure:
            raise failure
        return Settings()

    def delivered(event_id: int) -> Callable[[], bool]:
        return lambda: event_status(server_conn, event_id)[0] == "delivered"

    async def go() -> None:
        worker = DeliveryWorker(server_conn, flaky_settings)
        task = worker.start()
        try:
            await wait_until(delivered(first), "delivery after a failed round")
            [second] = emit_create(cli_conn, activity_id=2)  # the worker is idle now and nobody wakes it
            await wait_until(delivered(second), "polled delivery")
        finally:
            await worker.stop()
        assert task.done() and task.exception() is None

    asyncio.run(go())
    assert [p["object_id"] for p, _ in receiver.posts["cli"]] == [1, 2]
    server_conn.close()
    cli_conn.close()
