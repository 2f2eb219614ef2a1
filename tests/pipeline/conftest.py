"""Fixtures for the pipeline tests: athletes of their own in the session sandbox, a fitsync home connected to
one of them (its own application, so its own rate budget), a throw-away Dagster instance, warehouse dumps.

Each test creates its athletes through the console (`POST /sandbox/athletes`, then recorded activities), so the
seeded world other test modules rely on is never changed. Rate limits are raised for the test's duration
(one full sync spends more than the default 100 reads / 15 min) and restored afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from dagster import DagsterInstance

from fitsync.client.config import Config
from fitsync.client.open_state import open_store
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.pipelines.sync_runner import SyncOutcome, sync_athlete
from fitsync.sandbox.server import ServerThread
from fitsync.state.store import StateStore
from fitsync.warehouse import db

# add_athlete and record are re-exported for this folder's tests.
from ..processes import subprocess_env  # noqa: F401 (the test modules import it from here)
from ..sandbox_harness import ALL_SCOPES, App, Grant, Harness, add_athlete, change, delete, record, save_grant  # noqa: F401 (the test modules import them from here)

REPO = Path(__file__).resolve().parents[2]
# Columns that record when fitsync fetched or loaded something: they differ between two equal syncs.
WHEN_COLUMNS = {"synced_at", "listed_at", "detail_fetched_at", "deleted_at", "applied_at"}
TABLES = (
    "athletes",
    "gear",
    "athlete_stats",
    "athlete_stats_totals",
    "athlete_zones",
    "activities",
    "splits_metric",
    "laps",
    "segment_efforts",
    "segments",
    "starred_segments",
    "activity_zones",
    "activity_zone_buckets",
    "deleted_activities",
)
KEYS = {
    "activities": ("activity_id",),
    "laps": ("lap_id",),
    "segment_efforts": ("effort_id",),
    "segments": ("segment_id",),
    "gear": ("gear_id",),
    "athletes": ("athlete_id",),
    "splits_metric": ("activity_id", "split"),
    "activity_zones": ("activity_id", "zone_type"),
    "activity_zone_buckets": ("activity_id", "zone_type", "bucket_index"),
    "starred_segments": ("athlete_id", "segment_id"),
    "athlete_stats": ("athlete_id", "snapshot_date"),
    "athlete_zones": ("athlete_id", "snapshot_date", "zone_type", "bucket_index"),
}


# --- the world ------------------------------------------------------------------------------------------------


# The service's 404 for the request's path (a wrong address), and a proxy's page: neither says anything about an object.
ROUTE_404 = {"message": "Resource Not Found", "errors": [{"resource": "Request", "field": "path", "code": "invalid"}]}
PROXY_404 = "<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center></body></html>"


def record_many(
    sb: Harness, athlete_id: int, n: int, *, oldest_days: float = 60.0, only_me_every: int = 0
) -> list[int]:
    """n activities spread over the last `oldest_days` days, oldest first, alternating sports."""
    sports = ("Ride", "Run", "Ride", "Hike", "Walk")
    ids = []
    for i in range(n):
        visibility = "only_me" if only_me_every and i % only_me_every == only_me_every - 1 else "everyone"
        ids.append(
            record(
                sb,
                athlete_id,
                days_ago=oldest_days * (n - i) / n + 0.1,
                sport_type=sports[i % len(sports)],
                visibility=visibility,
            )
        )
    return ids


# --- a fitsync home connected to an athlete -------------------------------------------------------------------


def write_config(config: Config) -> None:
    """The home's config.toml says everything the Config says, so every process using the home (and the Dagster
    resource, which loads its Config from the home) sees the same settings."""
    lines = [
        f'base_url = "{config.base_url}"',
        f'auth_url = "{config.auth_url}"',
        f"client_id = {config.client_id}",
        f'client_secret = "{config.client_secret.reveal()}"',
        f"short_window = {config.short_window}",
        f"long_window = {config.long_window}",
        f"boundary_guard = {config.boundary_guard}",
        f"bulk_reserve = {config.bulk_reserve}",
        f"timeout = {config.timeout}",
        f"max_retries = {config.max_retries}",
        f'streams = "{config.streams}"',
        f"streams_days = {config.streams_days}",
    ]
    if config.state_url:
        lines.append(f'state_url = "{config.state_url.reveal()}"')
    config.home.mkdir(parents=True, exist_ok=True)
    (config.home / "config.toml").write_text("\n".join(lines) + "\n")


@dataclass
class Home:
    """A fitsync home connected to one athlete, with a Dagster instance to run the assets on."""

    sb: Harness
    config: Config
    athlete_id: int
    app: App
    scopes: tuple[str, ...]
    instance: DagsterInstance
    outcomes: list[SyncOutcome] = field(default_factory=list)
    _held: Any = field(default=None, repr=False)  # the connection `query` uses inside `reading()`

    @property
    def warehouse(self) -> Path:
        return self.config.home / "warehouse.duckdb"

    @functools.cached_property
    def store(self) -> StateStore:
        return open_store(self.config)

    def sync(self, *, full: bool = False, max_wait_seconds: float = 900.0, check: bool = True) -> SyncOutcome:
        outcome = sync_athlete(
            self.config, self.athlete_id, self.instance, full=full, max_wait_seconds=max_wait_seconds
        )
        self.outcomes.append(outcome)
        if check:
            assert outcome.success, json.dumps(outcome.metadata, default=str, indent=1)
        return outcome

    def materialize(self, selection: list[str]) -> dict[str, dict[str, Any]]:
        """Run just these assets for the athlete (as a webhook re-pull or a partial job would); their metadata."""
        from dagster import materialize

        from fitsync.pipelines.definitions import build_definitions
        from fitsync.pipelines.sync_runner import resources_for

        resources = resources_for(self.config)
        self.instance.add_dynamic_partitions("athletes", [str(self.athlete_id)])
        result = materialize(
            list(build_definitions(resources).assets or []),
            selection=selection,
            partition_key=str(self.athlete_id),
            instance=self.instance,
            resources=resources,
        )
        assert result.success
        return {
            e.step_materialization_data.materialization.asset_key.to_user_string(): {
                k: getattr(v, "value", v) for k, v in e.step_materialization_data.materialization.metadata.items()
            }
            for e in result.get_asset_materialization_events()
        }

    def grant(self) -> Grant:
        """A separate grant with the same scopes (its own app), to read what the API shows this athlete."""
        return self.sb.connect(scopes=self.scopes, athlete_id=self.athlete_id)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        if self._held is not None:
            return self._held.execute(sql, list(args)).fetchall()
        with db.reading(self.warehouse) as conn:
            return conn.execute(sql, list(args)).fetchall()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """`query` on one read connection for the block: each open reads the warehouse's catalog (≈ 40 ms of CPU), and
        no sync can write while the block lasts."""
        with db.reading(self.warehouse) as conn:
            self._held = conn
            try:
                yield
            finally:
                self._held = None

    def state(self, sql: str, *args: Any) -> list[Any]:
        with self.store.reading() as conn:
            return [tuple(r) for r in conn.execute(sql, args).fetchall()]

    def with_zones(self, ids: Any = None) -> set[int]:
        """Activities (of `ids`, or all) a zones call is spent on: heart rate or a power meter, or not said, or a run
        with distance over GPS (pace zones)."""
        rows = self.query(
            "SELECT activity_id FROM activities WHERE has_heartrate IS DISTINCT FROM false "
            "OR device_watts OR (sport_type IN ('Run', 'TrailRun') AND start_lat IS NOT NULL "
            "AND distance > 0)"
        )
        return {r[0] for r in rows if ids is None or r[0] in set(ids)}

    def needing(self, what: str) -> int:
        column = {"detail": "needs_detail", "zones": "needs_zones"}[what]
        return self.state(
            f"SELECT count(*) FROM known_activities WHERE athlete_id = ? AND {column} = 1", self.athlete_id
        )[0][0]


def make_config(server: ServerThread, home: Path, app: App, **overrides: Any) -> Config:
    values: dict[str, Any] = dict(
        home=home,
        base_url=server.api_url,
        auth_url=server.base_url,
        client_id=app.client_id,
        client_secret=Secret(app.client_secret),
        boundary_guard=0.05,
        timeout=15.0,
        slow_refresh_hours=0,
        # streams only where a test asks (tests/pipeline/test_streams.py, the backfill-cost tests): a call per recent
        # recording would add ≈ 1 s to most syncs of the suite
        streams="off",
    )  # every sync fetches everything, unless a test asks
    values.update(overrides)
    return Config.load({}, **values)


def connect_home(
    sb: Harness,
    home: Path,
    athlete_id: int,
    instance: DagsterInstance,
    *,
    scopes: tuple[str, ...] = ALL_SCOPES,
    app: App | None = None,
    **config: Any,
) -> Home:
    """Consent as the athlete through the sandbox's pages, exchange the code and store the grant in the home."""
    app = app or sb.new_app()
    cfg = make_config(sb.server, home, app, **config)
    write_config(cfg)
    with FitsyncClient(cfg) as client:
        save_grant(sb, client, app, athlete_id, scopes)
    return Home(sb, cfg, athlete_id, app, scopes, instance)


Connect = Callable[..., Home]


@pytest.fixture(scope="session")
def warehouse_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new warehouse, migrated once per worker: each home starts with a copy, as a user's warehouse moved to another
    folder (its documents views follow it on the first open: warehouse/documents.py). Creating one takes about a
    second on 2 slow cores, and most tests connect a home or two."""
    path = tmp_path_factory.mktemp("warehouse-template") / "warehouse.duckdb"
    umask = os.umask(0o077)  # the modes fitsync's commands give every file (`doctor` checks them)
    try:
        db.migrate(path)
    finally:
        os.umask(umask)
    return path


def copy_warehouse(template: Path, to: Path) -> None:
    """The warehouse file and its documents folder (db.documents beside it) where a home keeps them, modes kept."""
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, to)
    shutil.copytree(f"{template}.documents", f"{to}.documents")


@pytest.fixture
def connect(
    sb: Harness,
    tmp_path: Path,
    dagster_instance: DagsterInstance,
    roomy_limits: None,
    new_state_url: Callable[[], str],
    warehouse_template: Path,
) -> Connect:
    """connect(athlete_id, scopes=..., name=...) → a Home of its own under tmp_path, its state store on SQLite and on
    PostgreSQL (each test runs on both), its warehouse a copy of a new one."""

    def make(athlete_id: int, *, name: str = "home", **kwargs: Any) -> Home:
        kwargs.setdefault("state_url", Secret(new_state_url()))
        home = connect_home(sb, tmp_path / name, athlete_id, dagster_instance, **kwargs)
        if not home.warehouse.exists():
            copy_warehouse(warehouse_template, home.warehouse)
        return home

    return make


# --- reading the warehouse ------------------------------------------------------------------------------------


def dump(path: Path, tables: tuple[str, ...] = TABLES) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, without the columns that say when fitsync fetched or loaded it."""
    out = {}
    with db.reading(path) as conn:
        for table in tables:
            cols = [r[0] for r in conn.execute(f"DESCRIBE {table}").fetchall() if r[0] not in WHEN_COLUMNS]
            out[table] = conn.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY ALL").fetchall()
    return out


def duplicate_keys(path: Path) -> dict[str, int]:
    with db.reading(path) as conn:
        return {
            t: conn.execute(f"SELECT count(*) - count(DISTINCT ({', '.join(k)})) FROM {t}").fetchone()[0]
            for t, k in KEYS.items()
        }


# --- what fitsync sent ----------------------------------------------------------------------------------------


@dataclass
class Sent:
    method: str
    path: str
    params: dict[str, str]
    status: int
    at: float
    headers: dict[str, str]


class Recorder:
    """Every API request this process's httpx clients send with fitsync's User-Agent, with its answer."""

    def __init__(self, api_url: str) -> None:
        self.api_path = httpx.URL(api_url).path
        self.sent: list[Sent] = []
        self._lock = threading.Lock()

    def record(self, request: httpx.Request, response: httpx.Response, at: float) -> None:
        if request.headers.get("user-agent") != "fitsync" or not request.url.path.startswith(self.api_path):
            return
        with self._lock:
            self.sent.append(
                Sent(
                    request.method,
                    request.url.path[len(self.api_path) :],
                    dict(request.url.params),
                    response.status_code,
                    at,
                    dict(response.headers),
                )
            )

    def paths(self) -> list[str]:
        return [s.path for s in self.sent]

    def details(self) -> list[str]:
        return [s.path for s in self.sent if _is_detail(s.path)]

    def zones(self) -> list[str]:
        return [s.path for s in self.sent if s.path.startswith("/activities/") and s.path.endswith("/zones")]

    def listings(self) -> list[Sent]:
        return [s for s in self.sent if s.path == "/athlete/activities"]

    def clear(self) -> None:
        with self._lock:
            self.sent.clear()


def _is_detail(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 3 and parts[1] == "activities" and parts[2].isdigit()


@pytest.fixture
def recorder(sandbox_server: ServerThread, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    import time

    rec = Recorder(sandbox_server.api_url)
    original = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        at = time.time()
        response = original(self, request, **kwargs)
        rec.record(request, response, at)
        return response

    monkeypatch.setattr(httpx.Client, "send", send)
    return rec
