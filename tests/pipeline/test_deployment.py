"""Dagster on PostgreSQL as a production deployment runs it (docs/deployment.md): the code location, the webserver
and the daemon as three processes on the shipped `dagster_postgres.yaml` and `workspace_grpc.yaml`, fitsync's state
store on PostgreSQL too, the webhook receiver as a fourth process. The daemon's scheduler launches the nightly sync
and its sensor turns a webhook event into a refresh; the webserver shows both runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from fitsync.cli import checks
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.pipelines.instance import set_pool_limits
from fitsync.resources.partitions import athletes_partitions
from fitsync.warehouse import db

from ..postgres_server import PostgresServer
from ..processes import free_port
from ..sandbox_harness import Harness, add_athlete, change, record, save_grant, wait_until
from .conftest import REPO, make_config, subprocess_env, write_config

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


PIPELINES = REPO / "pipelines"
BIN = Path(sys.executable).parent
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


def test_the_shipped_postgres_instance_differs_from_the_default_only_in_its_storage() -> None:
    default = yaml.safe_load((PIPELINES / "dagster.yaml").read_text())
    deployed = yaml.safe_load((PIPELINES / "dagster_postgres.yaml").read_text())
    assert deployed.pop("storage") == {"postgres": {"postgres_url": {"env": "DAGSTER_POSTGRES_URL"}}}
    assert deployed == default


def test_doctor_checks_the_dagster_database_url(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain postgresql:// URL loads, then fails as the first run is created (SQLAlchemy 2 picks psycopg 3, whose
    parameters break dagster-postgres's NOTIFY): `fitsync doctor` says so before a night is lost."""
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.delenv("DAGSTER_POSTGRES_URL", raising=False)
    assert list(checks.dagster_instance(tmp_path)) == []  # no dagster.yaml yet: nothing to check
    (dagster_home / "dagster.yaml").write_text((PIPELINES / "dagster.yaml").read_text())
    assert list(checks.dagster_instance(tmp_path)) == []  # the default instance: SQLite files
    # With the state store shared by hosts, a SQLite instance is said to be this machine's only (the trap: an
    # athlete connected without DAGSTER_HOME is a partition no other host's daemon sees).
    [here] = checks.dagster_instance(tmp_path, shared=True)
    assert here.ok and str(dagster_home) in here.detail and "this machine only" in here.detail
    shutil.copy(PIPELINES / "dagster_postgres.yaml", dagster_home / "dagster.yaml")

    [unset] = checks.dagster_instance(tmp_path)
    assert not unset.ok and "DAGSTER_POSTGRES_URL" in unset.detail and "postgresql+psycopg2://" in unset.fix
    url = postgres_server.new_database().replace("postgres@", "postgres:hunter2@")
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", url)
    [plain] = checks.dagster_instance(tmp_path)
    assert not plain.ok and "psycopg2" in plain.detail and "postgresql+psycopg2://" in plain.fix
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", url.replace("postgresql://", "postgresql+psycopg2://"))
    [good] = checks.dagster_instance(tmp_path)
    assert good.ok, good
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", f"postgresql+psycopg2://postgres:hunter2@127.0.0.1:{free_port()}/x")
    [down] = checks.dagster_instance(tmp_path)
    assert not down.ok and "DAGSTER_POSTGRES_URL" in down.fix
    for check in (unset, plain, good, down):
        assert "hunter2" not in check.detail + check.fix


class Processes:
    """Long-running processes of the deployment, each in its own process group (Dagster's processes start
    children of their own), logged to files whose tails a failure shows."""

    def __init__(self, logs: Path) -> None:
        self.logs, self.running = logs, {}  # type: ignore[var-annotated]
        logs.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        out = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.logs
        )
        self.running[name] = process
        return process

    def alive(self) -> None:
        for name, process in self.running.items():
            assert process.poll() is None, f"{name} exited ({process.returncode}):\n{self.tail(name)}"

    def tail(self, name: str, chars: int = 3000) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-chars:]

    def report(self) -> str:
        return "\n".join(f"--- {name}\n{self.tail(name, 1500)}" for name in self.running)

    def terminate(self, name: str, timeout: float) -> float | None:
        """SIGTERM to the process alone, as a service manager stops it; seconds until it exited, None if it did not
        within `timeout` (then it gets SIGKILL)."""
        process = self.running[name]
        started = time.monotonic()
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None
        return time.monotonic() - started

    def left_behind(self) -> list[str]:
        """Processes still in the groups of the stopped ones (children they started: gRPC servers, run workers,
        log tails), by command line."""
        groups = {process.pid for process in self.running.values()}
        found = []
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) in groups and fields[0] != "Z":  # pgrp; zombies are gone already
                    found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except (OSError, IndexError, ValueError):
                pass  # gone meanwhile
        return found

    def stop(self) -> None:
        for process in self.running.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path / "logs")
    yield running
    running.stop()


def _wait_for_run(
    instance: DagsterInstance, processes: Processes, what: str, timeout: float, **filters: Any
) -> DagsterRun:
    def finished() -> DagsterRun | None:
        processes.alive()
        runs = [r for r in instance.get_runs(RunsFilter(**filters)) if r.status in FINISHED]
        return runs[0] if runs else None

    try:
        run = wait_until(finished, timeout, what, interval=0.5)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{processes.report()}") from None
    assert run.status == DagsterRunStatus.SUCCESS, f"{what}: {run.status}\n{processes.report()}"
    return run


def _graphql_runs(webserver: str, partition: str) -> dict[str, str]:
    query = """query($tags: [ExecutionTag!]) { runsOrError(filter: {tags: $tags}) {
                 ... on Runs { results { jobName status } } } }"""
    answer = httpx.post(
        f"{webserver}/graphql",
        json={"query": query, "variables": {"tags": [{"key": "dagster/partition", "value": partition}]}},
        timeout=30,
    ).json()
    return {r["jobName"]: r["status"] for r in answer["data"]["runsOrError"]["results"]}


@pytest.mark.slow  # four long-running processes on PostgreSQL, a scheduler tick to wait for: ≈ 1 min
@pytest.mark.timeout(420)
def test_a_nightly_sync_and_a_webhook_refresh_run_through_webserver_daemon_and_code_server_on_postgresql(
    sb: Harness,
    tmp_path: Path,
    roomy_limits: None,
    postgres_server: PostgresServer,
    processes: Processes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aid = add_athlete(sb)
    ids = [record(sb, aid, days_ago=d) for d in (9.5, 6.5, 3.5, 1.5)]
    app = sb.new_app()
    config = make_config(sb.server, tmp_path / "home", app, state_url=Secret(postgres_server.new_database()))
    write_config(config)

    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    shutil.copy(PIPELINES / "dagster_postgres.yaml", dagster_home / "dagster.yaml")
    code_port, web_port, receiver_port = free_port(), free_port(), free_port()
    workspace = yaml.safe_load((PIPELINES / "workspace_grpc.yaml").read_text())
    workspace["load_from"][0]["grpc_server"].update(host="127.0.0.1", port=code_port)
    (tmp_path / "workspace.yaml").write_text(yaml.safe_dump(workspace))
    dagster_url = postgres_server.new_database().replace("postgresql://", "postgresql+psycopg2://")
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", dagster_url)
    # Every minute, so the daemon's scheduler launches it during the test (the setting a deployment would change).
    env = subprocess_env(
        config.home,
        DAGSTER_HOME=str(dagster_home),
        DAGSTER_POSTGRES_URL=dagster_url,
        FITSYNC_NIGHTLY_SCHEDULE="* * * * *",
    )

    # `fitsync connect`'s part: the grant in the state store, the athlete's partition in Dagster's storage.
    with ExitStack() as stack:
        client = stack.enter_context(FitsyncClient(config))
        save_grant(sb, client, app, aid)
        instance = stack.enter_context(DagsterInstance.from_config(str(dagster_home)))
        set_pool_limits(instance)
        instance.add_dynamic_partitions(athletes_partitions.name, [str(aid)])
        client.subscription_state.set_verify_token("verify-deployment")
        client.subscription_state.set_callback_token("path-secret-deployment-0123456789")
        callback = f"http://127.0.0.1:{receiver_port}/webhooks/path-secret-deployment-0123456789"
        client.subscription_state.save(990_017, callback)

        processes.start(
            "code-server",
            [
                str(BIN / "dagster"),
                "code-server",
                "start",
                "-m",
                "fitsync.pipelines.definitions",
                "--host",
                "127.0.0.1",
                "--port",
                str(code_port),
            ],
            env,
        )
        # As a deployment's service manager would: the others start once the code location answers, so the
        # daemon sees the schedule from its first iteration on.
        wait_until(lambda: processes.alive() or _serving(code_port), 90, "the code server", interval=0.2)
        workspace_args = ["-w", str(tmp_path / "workspace.yaml")]
        processes.start(
            "webserver",
            [str(BIN / "dagster-webserver"), *workspace_args, "--host", "127.0.0.1", "--port", str(web_port)],
            env,
        )
        processes.start("daemon", [str(BIN / "dagster-daemon"), "run", *workspace_args], env)
        processes.start(
            "receiver",
            [sys.executable, "-m", "fitsync.cli.main", "webhooks", "serve", "--port", str(receiver_port)],
            env,
        )

        # The scheduler ticks at the next minute; the run is launched through the code server.
        nightly = _wait_for_run(
            instance,
            processes,
            "the nightly sync",
            150,
            job_name="sync_athlete",
            tags={"dagster/schedule_name": "nightly_sync"},
        )
        assert nightly.tags["dagster/partition"] == str(aid)
        with db.reading(config.home / "warehouse.duckdb") as conn:
            assert {
                r[0] for r in conn.execute("SELECT activity_id FROM activities WHERE athlete_id = ?", [aid]).fetchall()
            } == set(ids)

        # The athlete renames a ride; the service's event reaches the receiver process; the daemon's sensor reads
        # the inbox (PostgreSQL) and launches the refresh, which asks the service for the new name.
        change(sb, ids[-1], name="Renamed through the deployment")
        event = {
            "object_type": "activity",
            "object_id": ids[-1],
            "aspect_type": "update",
            "updates": {"title": "Renamed through the deployment"},
            "owner_id": aid,
            "subscription_id": 990_017,
            "event_time": int(time.time()),
        }
        assert httpx.post(callback, json=event, timeout=15).status_code == 200
        _wait_for_run(instance, processes, "the webhook refresh", 180, job_name="webhook_refresh")
        with db.reading(config.home / "warehouse.duckdb") as conn:
            assert conn.execute("SELECT name FROM activities WHERE activity_id = ?", [ids[-1]]).fetchall() == [
                ("Renamed through the deployment",)
            ]

        # The webserver reads the same storage: both runs, as the UI lists them.
        webserver = f"http://127.0.0.1:{web_port}"
        wait_until(lambda: _server_up(webserver), 60, "the webserver", interval=0.5)
        shown = _graphql_runs(webserver, str(aid))
        assert shown.get("sync_athlete") == "SUCCESS" and shown.get("webhook_refresh") == "SUCCESS", shown

    # docs/deployment.md's stop procedure: SIGTERM to each in turn, the daemon first (no new runs), the receiver
    # last; each ends within its grace period and leaves none of its children (gRPC server, run workers) behind.
    for name in ("daemon", "webserver", "code-server", "receiver"):
        took = processes.terminate(name, 30)
        assert took is not None, f"{name} ignored SIGTERM for 30 s:\n{processes.tail(name)}"
    assert processes.left_behind() == []


def _server_up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/server_info", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _serving(port: int) -> bool:
    """The gRPC health check Dagster's own `dagster api grpc-health-check` makes."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        except grpc.RpcError:
            return False
    return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)
