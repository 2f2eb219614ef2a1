"""Fixtures for the webhook tests (issue 5): a fitsync home with its own application, the real receiver
(`Receiver(client).app` under uvicorn on loopback), a subscription created through the service's handshake,
athletes of their own made through the sandbox console, and the shipped `webhook_events` sensor evaluated with
Dagster's own helpers on a throw-away instance.

The flow mirrors `fitsync demo` (and `dagster dev`): athlete action in the sandbox → the sandbox's delivery
worker POSTs the event → receiver → inbox (state store) → `tick()` evaluates the sensor → `execute()` launches
each RunRequest like the daemon (a run key seen before launches nothing) → warehouse (DuckDB).

Every test creates its own athletes and application, so the seeded world and other tests' subscriptions are
untouched; rate limits are raised for a test's duration and restored; a home's sandbox subscription is deleted
at teardown so no event of it stays queued for a receiver that is gone.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from dagster import DagsterInstance, RunRequest, RunsFilter

from fitsync.client import tls
from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.pipelines.sync_runner import SyncOutcome, execute_run_request, sync_athlete, tick_webhook_sensor
from fitsync.resources.partitions import athletes_partitions
from fitsync.sandbox.server import UvicornThread
from fitsync.warehouse import db
from fitsync.webhooks.receiver import DEFAULT_PREFIX, Receiver
from fitsync.webhooks.subscriptions import subscribe

# add_athlete and record are re-exported for this folder's tests.
from ..processes import (
    free_port,  # noqa: F401 (the test modules import it from here)
    run_fitsync,
    serve_receiver,
)
from ..sandbox_harness import ALL_SCOPES, App, Harness, add_athlete, change, delete, record, save_grant, wait_until  # noqa: F401 (the test modules import them from here)

FAST_RETRIES = {"retry_delays": [0.2, 0.2]}
READ_ONLY_SCOPES = ("read", "profile:read_all", "activity:read")
REPO = Path(__file__).resolve().parents[2]
RUN_KEY_TAG = "dagster/run_key"
# Warehouse tables that carry athlete_id, and those whose rows hang off an activity.
ATHLETE_TABLES = (
    "athletes",
    "gear",
    "athlete_stats",
    "athlete_stats_totals",
    "athlete_zones",
    "athlete_snapshots",
    "activities",
    "segment_efforts",
    "starred_segments",
    "deleted_activities",
)
ACTIVITY_TABLES = ("splits_metric", "laps", "activity_zones", "activity_zone_buckets")


# --- the athlete's side, through the sandbox console ---------------------------------------------------------


def revoke(sb: Harness, app: App, athlete_id: int) -> None:
    """The athlete removes the application in the service's settings."""
    response = sb.console.post(f"/athletes/{athlete_id}/revoke", json={"client_id": app.client_id})
    assert response.status_code == 200, response.text


# --- the receiver's side -------------------------------------------------------------------------------------


class FailFirst:
    """ASGI wrapper: the first `n` event POSTs are handled by the receiver (stored) but answered 500, as if the
    200 had been lost or come too late; the service then retries the same event."""

    def __init__(self, app: Any, n: int = 1) -> None:
        self.app, self.remaining, self.failed = app, n, 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.remaining <= 0:
            await self.app(scope, receive, send)
            return
        self.remaining -= 1
        self.failed += 1

        async def failing_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "status": 500}
            await send(message)

        await self.app(scope, receive, failing_send)


class Gate:
    """ASGI wrapper: while closed, event POSTs never reach the receiver (503), as when it is down; the service
    retries them once it is open again."""

    def __init__(self, app: Any) -> None:
        self.app, self.closed, self.refused = app, True, 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and self.closed:
            self.refused += 1
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


def write_config(config: Config) -> None:
    """config.toml in the home: every process on the home (and the Dagster resource) sees the same settings."""
    lines = [
        f'base_url = "{config.base_url}"',
        f'auth_url = "{config.auth_url}"',
        f"client_id = {config.client_id}",
        f'client_secret = "{config.client_secret.reveal()}"',
        f"boundary_guard = {config.boundary_guard}",
        f"timeout = {config.timeout}",
    ]
    if config.state_url:
        lines.append(f'state_url = "{config.state_url.reveal()}"')
    config.home.mkdir(parents=True, exist_ok=True)
    (config.home / "config.toml").write_text("\n".join(lines) + "\n")


def env_for(config: Config, **extra: str) -> dict[str, str]:
    """Environment of a `fitsync` subprocess on this home: FITSYNC_* only from here, nothing inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FITSYNC_", "DAGSTER_"))}
    env.update(
        {
            "FITSYNC_HOME": str(config.home),
            "FITSYNC_BASE_URL": config.base_url,
            "FITSYNC_AUTH_URL": config.auth_url,
            "FITSYNC_CLIENT_ID": str(config.client_id),
            "FITSYNC_CLIENT_SECRET": config.client_secret.reveal(),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    env.update(extra)
    return env


@dataclass
class WebhookHome:
    """A fitsync home (own app, own state store, own warehouse) with its receiver and sensor cursor."""

    sb: Harness
    config: Config
    app: App
    instance: DagsterInstance
    client: FitsyncClient
    receiver: UvicornThread | None = None
    subscription_id: int | None = None
    cursor: str | None = None
    # The sandbox reuses a deleted subscription's id (test_s3_3_subscription_ids_are_not_reused): only events
    # newer than this mark are ours.
    events_after: int = 0
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=15, verify=tls.context()))

    # connecting and syncing ----------------------------------------------------------------------------------

    def connect(self, athlete_id: int, scopes: tuple[str, ...] = ALL_SCOPES, *, partition: bool = True) -> None:
        """Consent as the athlete in the sandbox's pages; store the grant (and add the partition, as
        `fitsync connect` does, unless `partition=False`)."""
        save_grant(self.sb, self.client, self.app, athlete_id, scopes)
        if partition:
            self.instance.add_dynamic_partitions(athletes_partitions.name, [str(athlete_id)])

    def sync(self, athlete_id: int, *, full: bool = False, check: bool = True) -> SyncOutcome:
        outcome = sync_athlete(self.config, athlete_id, self.instance, full=full)
        if check:
            assert outcome.success, json.dumps(outcome.metadata, default=str, indent=1)
        return outcome

    # receiver and subscription --------------------------------------------------------------------------------

    def serve(self, wrap: Callable[[Any], Any] | None = None) -> Any:
        """The real receiver of this home on a free loopback port (behind `wrap(app)` when given); returns the
        ASGI app served."""
        app = Receiver(self.client).app
        front = wrap(app) if wrap else app
        self.receiver = UvicornThread(front).start()
        return front

    @property
    def callback_prefix(self) -> str:
        assert self.receiver is not None
        return self.receiver.base_url + DEFAULT_PREFIX

    @property
    def callback_url(self) -> str:
        """The full address events go to, path secret included (the stored subscription's, or a fresh secret's
        when the home has none yet)."""
        current = self.client.subscription_state.current()
        if current is not None:
            return current.callback_url
        secret = self.client.subscription_state.callback_token()
        return f"{self.callback_prefix}/{secret.reveal() if secret else 'no-secret-yet'}"

    def subscribe(self) -> int:
        """Through the service: it sends the validation GET to the receiver, which must answer it."""
        self.mark_events()
        self.subscription_id = subscribe(self.client, self.callback_prefix)
        self.client.governor.leave()  # as `fitsync webhooks subscribe` does when it exits (FitsyncClient.close)
        return self.subscription_id

    def mark_events(self) -> None:
        """Events the sandbox queued so far are not ours (call before subscribing)."""
        self.events_after = max((e["id"] for e in self.sb.console.get("/events").json()), default=0)

    def local_subscription(self, subscription_id: int = 990_001) -> int:
        """Only fitsync's side of a subscription (verify token, id): for tests that POST events themselves
        and want nothing from the sandbox's delivery worker."""
        self.client.subscription_state.set_verify_token("verify-" + str(subscription_id))
        self.client.subscription_state.set_callback_token(f"path-secret-{subscription_id}-0123456789")
        self.client.subscription_state.save(
            subscription_id, f"{self.callback_prefix}/path-secret-{subscription_id}-0123456789"
        )
        self.subscription_id = subscription_id
        return subscription_id

    def event(
        self,
        owner_id: int,
        object_id: int | None = None,
        aspect_type: str = "update",
        *,
        object_type: str = "activity",
        updates: dict[str, str] | None = None,
        event_time: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A valid §6.2 event for this home's subscription."""
        assert self.subscription_id is not None
        body: dict[str, Any] = {
            "object_type": object_type,
            "object_id": object_id or owner_id,
            "aspect_type": aspect_type,
            "updates": updates or {},
            "owner_id": owner_id,
            "subscription_id": self.subscription_id,
            "event_time": event_time or int(time.time()),
        }
        body.update(extra)
        return body

    def post(self, body: Any, *, content_type: str = "application/json", raw: bool = False) -> httpx.Response:
        """POST an event to the receiver, as the service would."""
        content = body if raw else json.dumps(body).encode()
        return self.http.post(self.callback_url, content=content, headers={"Content-Type": content_type})

    # the sandbox's view of our subscription --------------------------------------------------------------------

    def sandbox_events(self) -> list[dict[str, Any]]:
        events = self.sb.console.get("/events").json()
        return sorted(
            (e for e in events if e["subscription_id"] == self.subscription_id and e["id"] > self.events_after),
            key=lambda e: e["id"],
        )

    def deliveries(self) -> list[dict[str, Any]]:
        rows = self.sb.console.get("/deliveries").json()
        return sorted(
            (d for d in rows if d["subscription_id"] == self.subscription_id and d["event_id"] > self.events_after),
            key=lambda d: d["id"],
        )

    def settle(self, expected: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        """Wait until the sandbox has queued `expected` events for our subscription and none is pending any
        more; every one must have been delivered (answered 200 by the receiver)."""
        events = wait_until(
            lambda: (lambda ev: ev if len(ev) >= expected and all(e["status"] != "pending" for e in ev) else None)(
                self.sandbox_events()
            ),
            timeout,
            f"{expected} events delivered",
        )
        assert len(events) == expected, [e["payload"] for e in events]
        assert [e["status"] for e in events] == ["delivered"] * expected, events
        return events

    # inbox, sensor and runs -----------------------------------------------------------------------------------

    def inbox(self) -> list[dict[str, Any]]:
        with self.client.store.reading() as conn:
            return [
                {"id": r["id"], "payload": json.loads(r["payload"]), "processed_at": r["processed_at"]}
                for r in conn.execute("SELECT id, payload, processed_at FROM webhook_inbox ORDER BY id")
            ]

    def tick(self, cursor: str | None | bool = True) -> list[RunRequest]:
        """One evaluation of the shipped sensor from this home's cursor (or the cursor given); the cursor is
        kept only when evaluating from the home's own cursor."""
        start = self.cursor if cursor is True else cursor
        requests, new_cursor = tick_webhook_sensor(self.config, self.instance, start)  # type: ignore[arg-type]
        if cursor is True:
            self.cursor = new_cursor
        return requests

    def execute(self, requests: list[RunRequest]) -> list[SyncOutcome | None]:
        outcomes = [execute_run_request(self.config, self.instance, r) for r in requests]
        for request, outcome in zip(requests, outcomes):
            assert outcome is None or outcome.success, (request.run_key, outcome)
        return outcomes

    def process(self) -> tuple[list[RunRequest], list[SyncOutcome | None]]:
        """What the daemon does: tick the sensor, launch what it asks for."""
        requests = self.tick()
        return requests, self.execute(requests)

    def runs_with_key(self, run_key: str) -> int:
        return len(self.instance.get_runs(RunsFilter(tags={RUN_KEY_TAG: run_key})))

    def run_keys(self) -> list[str]:
        return [r.tags.get(RUN_KEY_TAG, "") for r in self.instance.get_runs() if RUN_KEY_TAG in r.tags]

    def partitions(self) -> set[str]:
        return set(self.instance.get_dynamic_partitions(athletes_partitions.name))

    # warehouse and state -------------------------------------------------------------------------------------

    @property
    def warehouse(self) -> Path:
        return self.config.home / "warehouse.duckdb"

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with db.reading(self.warehouse) as conn:
            return conn.execute(sql, list(args)).fetchall()

    def activity(self, activity_id: int) -> dict[str, Any] | None:
        with db.reading(self.warehouse) as conn:
            cursor = conn.execute("SELECT * FROM activities WHERE activity_id = ?", [activity_id])
            row = cursor.fetchone()
            return None if row is None else dict(zip([d[0] for d in cursor.description], row))

    def activity_ids(self, athlete_id: int) -> set[int]:
        return {r[0] for r in self.query("SELECT activity_id FROM activities WHERE athlete_id = ?", athlete_id)}

    def deleted(self, activity_id: int) -> list[tuple[Any, ...]]:
        return self.query("SELECT athlete_id, reason FROM deleted_activities WHERE activity_id = ?", activity_id)

    def children(self, activity_id: int) -> dict[str, int]:
        with db.reading(self.warehouse) as conn:
            return {
                t: conn.execute(f"SELECT count(*) FROM {t} WHERE activity_id = ?", [activity_id]).fetchone()[0]
                for t in (*ACTIVITY_TABLES, "segment_efforts")
            }

    def athlete_rows(self, athlete_id: int) -> dict[str, int]:
        """Rows the warehouse holds of the athlete, per table."""
        with db.reading(self.warehouse) as conn:
            counts = {
                t: conn.execute(f"SELECT count(*) FROM {t} WHERE athlete_id = ?", [athlete_id]).fetchone()[0]
                for t in ATHLETE_TABLES
            }
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT activity_id FROM activities WHERE athlete_id = ?", [athlete_id]
                ).fetchall()
            ] or [-1]
            for t in ACTIVITY_TABLES:
                counts[t] = conn.execute(
                    f"SELECT count(*) FROM {t} WHERE activity_id IN (SELECT unnest(?::BIGINT[]))", [ids]
                ).fetchone()[0]
        return counts

    def state(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self.client.store.reading() as conn:
            return [tuple(r) for r in conn.execute(sql, args).fetchall()]

    def state_write(self, sql: str, *args: Any) -> None:
        with self.client.store.transaction() as conn:
            conn.execute(sql, args)

    # teardown --------------------------------------------------------------------------------------------------

    def close(self) -> None:
        if self.subscription_id is not None:
            subs = self.sb.http.get("/api/v3/push_subscriptions", params=self.app.creds()).json()
            for sub in subs if isinstance(subs, list) else []:
                self.sb.http.delete(f"/api/v3/push_subscriptions/{sub['id']}", params=self.app.creds())
        if self.receiver is not None:
            self.receiver.stop()
        self.http.close()
        self.client.close()


# --- `fitsync` as its own process ------------------------------------------------------------------------------

FITSYNC = [sys.executable, "-m", "fitsync.cli.main"]


def fitsync(home: WebhookHome, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**env_for(home.config), "DAGSTER_HOME": home.instance.root_directory}  # the test's own instance
    return run_fitsync(list(args), env=env, cwd=Path.cwd(), timeout=timeout)


def serve_process(home: WebhookHome, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`fitsync webhooks serve` on the home, as its own process; returns once it answers."""
    return serve_receiver(env_for(home.config), port, log)


def make_config(sb: Harness, home: Path, app: App, **overrides: Any) -> Config:
    values: dict[str, Any] = dict(
        home=home,
        base_url=sb.server.api_url,
        auth_url=sb.server.base_url,
        client_id=app.client_id,
        client_secret=Secret(app.client_secret),
        boundary_guard=0.05,
        timeout=15.0,
    )
    values.update(overrides)
    return Config.load({}, **values)


@pytest.fixture
def fast_retries(sb: Harness) -> Iterator[None]:
    with sb.settings(**FAST_RETRIES):
        yield


MakeHome = Callable[..., WebhookHome]


@pytest.fixture
def make_home(
    sb: Harness,
    tmp_path: Path,
    persistent_instance: DagsterInstance,
    roomy_limits: None,
    new_state_url: Callable[[], str],
) -> Iterator[MakeHome]:
    """make_home(name="home") → a WebhookHome of its own (fresh app) under tmp_path, its state store on SQLite and on
    PostgreSQL (each test runs on both); closed at teardown."""
    homes: list[WebhookHome] = []

    def make(name: str = "home") -> WebhookHome:
        app = sb.new_app()
        config = make_config(sb, tmp_path / name, app, state_url=Secret(new_state_url()))
        write_config(config)
        home = WebhookHome(sb, config, app, persistent_instance, FitsyncClient(config))  # its CLI shares it
        homes.append(home)
        return home

    yield make
    for home in homes:
        home.close()


@pytest.fixture
def home(make_home: MakeHome) -> WebhookHome:
    return make_home()


def purge_log(instance: DagsterInstance, run_id: str) -> dict[str, Any]:
    """The purge op's log line: `purged athlete N after deauthorization: warehouse rows {...}; state rows {...}`."""
    for entry in instance.all_logs(run_id):
        match = re.search(
            r"purged athlete (\d+) after deauthorization: warehouse rows (\{.*?\}); state rows (\{.*?\})",
            entry.user_message or "",
        )
        if match:
            return {
                "athlete_id": int(match[1]),
                "warehouse": ast.literal_eval(match[2]),
                "state": ast.literal_eval(match[3]),
            }
    raise AssertionError(f"no purge log line in run {run_id}")
