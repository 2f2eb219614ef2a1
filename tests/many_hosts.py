"""Many hosts, one budget (issue 17 §4): the scenario `tests/pipeline/test_many_hosts.py` asserts on and
`bench many-hosts` measures.

Six fitsync homes stand for six machines: three sync workers (`fitsync sync` processes; `Scenario.workers`), two
webhook receivers (`fitsync webhooks serve` processes on ports of their own) and the Dagster daemon's host (the `webhook_events`
sensor and the refresh runs it launches, evaluated here as the daemon would). Each has its own FITSYNC_HOME, key
file replaced by the one FITSYNC_SECRET_KEY, warehouse and Dagster instance; all share one PostgreSQL state store
(tokens, rate ledger, locks, inbox) and one application, so one rate budget. The sandbox rotates the refresh token
at every refresh and access tokens live a few seconds, so tokens are refreshed over and over by whichever host
needs one. While the workers back-fill every athlete, a burst of events arrives split across both receivers and
one receiver is killed (SIGKILL) mid-burst; what it did not acknowledge goes to the other, as a load balancer
and the service's retries would have it.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from fitsync.client import config_file
from fitsync.client.config import Config
from fitsync.client.open_state import open_store
from fitsync.client.runtime import FitsyncClient
from fitsync.pipelines.instance import DAGSTER_YAML
from fitsync.pipelines.sync_runner import execute_run_request, tick_webhook_sensor
from fitsync.warehouse import db

from .client.support import stored_refresh_token
from .processes import FITSYNC, Burst, free_port, popen, serve_receiver, subprocess_env
from .sandbox_harness import Harness, add_athlete, change, query, record, save_grant, wait_until

RECEIVERS = ("receiver-1", "receiver-2")
DAEMON = "daemon"
SUBSCRIPTION_ID = 990_404
PATH_SECRET = "many-hosts-path-secret-0123456789"
UNKNOWN_IDS = 9_700_000_000  # deletes of activities fitsync never saw: acting on them needs no API call


@dataclass(frozen=True)
class Scenario:
    workers: int = 3  # `fitsync sync` processes, each a host of its own
    athletes: int = 6
    activities: int = 4  # per athlete
    events: int = 400
    window: int = 4  # the sandbox's short rate window, seconds (the real 15 minutes, shrunk)
    read_limit: int = 50  # read calls per short window
    token_lifetime: int = 3  # seconds an access token lives
    kill_after: float = 0.3  # share of receiver-1's events acknowledged before it is killed


@dataclass
class Outcome:
    """What happened, for assertions and figures."""

    wall_s: float = 0.0
    worker_exit: dict[str, int] = field(default_factory=dict)
    worker_output: dict[str, str] = field(default_factory=dict)
    synced_by: dict[int, list[str]] = field(default_factory=dict)  # athlete → hosts whose sync run succeeded
    overlaps: list[str] = field(default_factory=list)  # athletes synced by two hosts at once
    activities: int = 0
    activities_found: int = 0  # in some host's warehouse
    status_429: int = 0
    token_refreshes: int = 0
    token_refusals: int = 0  # refresh tokens the service refused (one another host had rotated away)
    live_refresh_tokens: int = 0  # athletes whose stored refresh token the service still accepts
    per_window: list[int] = field(default_factory=list)  # read calls in each whole busy window
    read_limit: int = 0
    events: int = 0
    acknowledged_before_kill: int = 0
    resent: int = 0
    stored_once: bool = False
    inbox_size: int = 0
    unprocessed: int = 0
    deletes_acted: list[int] = field(default_factory=list)
    updates_applied: int = 0
    updates: int = 0
    refresh_run_failures: list[str] = field(default_factory=list)

    @property
    def budget_use(self) -> float:
        return sum(self.per_window) / (len(self.per_window) * self.read_limit) if self.per_window else 0.0


class _UsageSampler:
    """The sandbox's count of the app's read calls in each short window, sampled until the window rolls over."""

    def __init__(self, sb: Harness, app_id: int) -> None:
        self.sb, self.app_id, self.used = sb, app_id, {}  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for row in query(
                self.sb,
                "SELECT window_start, used FROM rate_usage WHERE app_id = ? AND window = 'short' AND budget = 'read'",
                self.app_id,
            ):
                self.used[row["window_start"]] = max(self.used.get(row["window_start"], 0), row["used"])

    def stop(self) -> dict[int, int]:
        self._stop.set()
        self._thread.join()
        return dict(self.used)


def run(sb: Harness, base: Path, state_url: str, scenario: Scenario = Scenario()) -> Outcome:
    out = Outcome(read_limit=scenario.read_limit, events=scenario.events)
    workers_on = tuple(f"sync-{i + 1}" for i in range(scenario.workers))
    app = sb.new_app()
    athletes = [add_athlete(sb) for _ in range(scenario.athletes)]
    activities = {a: [record(sb, a, days_ago=1.5 + 3 * i) for i in range(scenario.activities)] for a in athletes}
    values = {
        "base_url": sb.server.api_url,
        "auth_url": sb.server.base_url,
        "client_id": app.client_id,
        "client_secret": app.client_secret,
        "state_url": state_url,
        "secret_key": secrets.token_urlsafe(24),
        "short_window": scenario.window,
        "long_window": 86400,
        "boundary_guard": 0.2,
        "timeout": 15.0,
        "refresh_margin": 1,
        "streams": "off",  # the scenario's calls are its syncs and events; streams would add one per recent recording
    }
    configs = {}
    for host in (*workers_on, *RECEIVERS, DAEMON):
        config_file.write(base / host, values)
        configs[host] = Config.load({}, home=base / host)
    logs = base / "logs"
    logs.mkdir()
    ports = {r: free_port() for r in RECEIVERS}

    with sb.settings(
        access_token_lifetime=scenario.token_lifetime,
        refresh_reuse_threshold=1,
        rotate_refresh_tokens=True,
        short_window=scenario.window,
        read_limit_short=scenario.read_limit,
        overall_limit_short=2 * scenario.read_limit,
        read_limit_long=1_000_000,
        overall_limit_long=2_000_000,
    ):
        # `fitsync connect` on one host: the grants (short-lived access tokens) and the subscription, in the store
        with FitsyncClient(configs[workers_on[0]]) as client:
            for athlete in athletes:
                save_grant(sb, client, app, athlete)
            client.subscription_state.set_verify_token("many-hosts")
            client.subscription_state.set_callback_token(PATH_SECRET)
            client.subscription_state.save(SUBSCRIPTION_ID, f"https://fitsync.example/webhooks/{PATH_SECRET}")
        receivers = {r: serve_receiver(subprocess_env(configs[r].home), ports[r], logs / f"{r}.log") for r in RECEIVERS}
        daemon_home = base / DAEMON / "dagster"
        daemon_home.mkdir()
        # the runs keep no step output, as fitsync's own commands' runs (pipelines/instance.NO_CAPTURE): Dagster's
        # capture waits for a `tail -F` helper on closing, which held this scenario past its timeout in two CI runs
        (daemon_home / "dagster.yaml").write_text(
            DAGSTER_YAML
            + "compute_logs:\n  module: dagster._core.storage.noop_compute_log_manager\n"
            + "  class: NoOpComputeLogManager\n"
        )
        instance = DagsterInstance.from_config(str(daemon_home))

        # The events: per athlete, one renamed activity; the rest deletes of activities fitsync never saw.
        renamed = {a: activities[a][-1] for a in athletes}
        now = int(time.time())
        events = []
        for i in range(scenario.events):
            owner = athletes[i % len(athletes)]
            if i < len(athletes):
                events.append(
                    {
                        "object_type": "activity",
                        "object_id": renamed[owner],
                        "aspect_type": "update",
                        "updates": {"title": f"Renamed on host {i}"},
                        "owner_id": owner,
                        "subscription_id": SUBSCRIPTION_ID,
                        "event_time": now,
                    }
                )
            else:
                events.append(
                    {
                        "object_type": "activity",
                        "object_id": UNKNOWN_IDS + i,
                        "aspect_type": "delete",
                        "updates": {},
                        "owner_id": owner,
                        "subscription_id": SUBSCRIPTION_ID,
                        "event_time": now,
                    }
                )
        for i, owner in enumerate(athletes):
            change(sb, renamed[owner], name=f"Renamed on host {i}")
        out.updates = len(athletes)

        before = sb.counters()
        sampler = _UsageSampler(sb, app.client_id)
        started = time.monotonic()
        workers = {
            w: popen(
                [*FITSYNC, "sync"],
                env=subprocess_env(configs[w].home),
                stdout=(logs / f"{w}.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
            for w in workers_on
        }
        url = {r: f"http://127.0.0.1:{ports[r]}/webhooks/{PATH_SECRET}" for r in RECEIVERS}
        first = [i for i in range(scenario.events) if i % 2 == 0]
        bursts = [
            Burst(url["receiver-1"], events, threads=3).send(first),
            Burst(url["receiver-2"], events, threads=3).send([i for i in range(scenario.events) if i % 2 == 1]),
        ]
        target = int(len(first) * scenario.kill_after)
        wait_until(lambda: len(bursts[0].acknowledged()) >= target, 60, "receiver-1 to acknowledge its share")
        os.kill(receivers["receiver-1"].pid, signal.SIGKILL)
        receivers["receiver-1"].wait(10)
        for burst in bursts:
            burst.join()
        acknowledged = bursts[0].acknowledged() | bursts[1].acknowledged()
        out.acknowledged_before_kill = len(bursts[0].acknowledged())
        pending = [i for i in range(scenario.events) if i not in acknowledged]
        out.resent = len(pending)
        for _ in range(5):  # the load balancer sends what was not answered 200 to the receiver that is left
            if not pending:
                break
            retry = Burst(url["receiver-2"], events).send(pending)
            retry.join()
            pending = [i for i in pending if retry.status.get(i) != 200]
        assert pending == [], f"{len(pending)} events never acknowledged"

        # The daemon's host: the sensor ticks and launches refresh runs while the workers back-fill.
        cursor, requests = None, []
        while True:
            batch, cursor = tick_webhook_sensor(configs[DAEMON], instance, cursor)
            for request in batch:
                outcome = execute_run_request(configs[DAEMON], instance, request)
                requests.append(request)
                if outcome is not None and not outcome.success:
                    out.refresh_run_failures.append(f"{request.run_key}: {outcome.error}")
            workers_done = all(p.poll() is not None for p in workers.values())
            with open_store(configs[DAEMON]).reading() as conn:
                left = conn.execute(
                    "SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL OR verdict = 'deferred'"
                ).fetchone()[0]
            if workers_done and not batch and not left:
                break
            time.sleep(0.5)  # the daemon's tick interval (5 s in production), shortened
        for w, process in workers.items():
            out.worker_exit[w] = process.wait(600)
            out.worker_output[w] = (logs / f"{w}.log").read_text(errors="replace")
        out.wall_s = time.monotonic() - started
        used = sampler.stop()
        after = sb.counters()
        receivers["receiver-2"].terminate()
        receivers["receiver-2"].wait(10)

    out.status_429 = after.get("status_429", 0) - before.get("status_429", 0)
    # Whole windows from the first one the workers used to the last full one before they finished.
    busy = sorted(used)[1:-1]
    out.per_window = [used[w] for w in busy]

    out.token_refreshes = query(
        sb,
        "SELECT count(*) - count(DISTINCT f.id) AS n FROM refresh_tokens r "
        "JOIN token_families f ON f.id = r.family_id WHERE f.app_id = ?",
        app.client_id,
    )[0]["n"]
    out.token_refusals = after.get("status_400", 0) - before.get("status_400", 0)
    out.live_refresh_tokens = sum(
        sb.refresh(app, stored_refresh_token(configs[DAEMON], a)).status_code == 200 for a in athletes
    )
    with open_store(configs[DAEMON]).reading() as conn:
        inbox = [(r[0], r[1], r[2]) for r in conn.execute("SELECT id, payload, processed_at FROM webhook_inbox")]
    payloads = [json.loads(p) for _, p, _ in inbox]
    keys = [(p["object_id"], p["aspect_type"]) for p in payloads]
    out.inbox_size, out.unprocessed = len(inbox), sum(1 for *_, done in inbox if done is None)
    out.stored_once = len(keys) == len(set(keys)) == scenario.events
    out.deletes_acted = sorted(
        itertools.chain.from_iterable(r.run_config["ops"]["activities"]["config"]["deleted_ids"] for r in requests)
    )
    # The landing area is in the shared store: a run's fetched data is loaded by whichever host loads that athlete
    # next, so a renamed activity may be in any host's warehouse (docs/scaling.md: one warehouse writer).
    names: dict[int, set[str]] = {}
    for host in (*workers_on, DAEMON):
        path = base / host / "warehouse.duckdb"
        if path.exists():
            with db.reading(path) as conn:
                for activity_id, name in conn.execute("SELECT activity_id, name FROM activities").fetchall():
                    names.setdefault(activity_id, set()).add(name)
    out.updates_applied = sum(f"Renamed on host {i}" in names.get(renamed[a], set()) for i, a in enumerate(athletes))
    out.activities_found = sum(a in names for ids in activities.values() for a in ids)
    out.activities = sum(len(ids) for ids in activities.values())

    # Who synced whom, and when: each worker's own Dagster instance holds its runs.
    spans: dict[int, list[tuple[float, float, str]]] = {a: [] for a in athletes}
    for w in workers_on:
        with DagsterInstance.from_config(str(base / w / "dagster")) as worker_instance:
            for record_ in worker_instance.get_run_records(RunsFilter(job_name="sync_athlete")):
                run = record_.dagster_run
                athlete = int(run.tags["dagster/partition"])
                spans[athlete].append((record_.start_time or 0.0, record_.end_time or time.time(), w))
                if run.status == DagsterRunStatus.SUCCESS:
                    out.synced_by.setdefault(athlete, []).append(w)
    for athlete, runs in spans.items():
        for (s1, e1, h1), (s2, e2, h2) in itertools.combinations(sorted(runs), 2):
            if h1 != h2 and s2 < e1:
                out.overlaps.append(f"athlete {athlete}: {h1} {s1:.2f}–{e1:.2f} and {h2} {s2:.2f}–{e2:.2f}")
    return out
