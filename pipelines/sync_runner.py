"""Running fitsync's jobs headless (the CLI, the demo, tests) against one Config, on a persistent instance."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    DagsterRunStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    RunsFilter,
    SensorResult,
    build_sensor_context,
)
from dagster._core.storage.tags import SENSOR_NAME_TAG

from fitsync.client.config import Config
from fitsync.client.open_state import open_store
from fitsync.pipelines import step_failures
from fitsync.pipelines.daemon_runs import HOST_TAG, PARTITION_TAG, PID_TAG
from fitsync.pipelines.definitions import build_definitions
from fitsync.pipelines.status import FAILED_TAG, PARTIAL_TAG
from fitsync.pipelines.webhook_sensor import webhook_events
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import ATHLETES
from fitsync.resources.run import LEFT_OUT, PRIORITY_TAG, WRONG_ANSWER
from fitsync.state import athletes as athlete_rows
from fitsync.state.store import AthleteBusy, held_elsewhere
from fitsync.sync.cadence import REFRESH_TAG

RUN_KEY_TAG = "dagster/run_key"
T = TypeVar("T")


@dataclass(frozen=True)
class SyncOutcome:
    athlete_id: int | None
    success: bool
    metadata: dict[str, dict[str, Any]]
    error: str | None = None
    busy: str | None = None  # not run: another process (or host) is syncing this athlete; says which
    failures: tuple[tuple[str, str], ...] = ()  # (step, its error as one line) of each step that failed
    ran: bool = True  # False: refused before any run started (the athlete is not connected)
    calls: int | None = None  # every request the run sent, failed steps' too (counted by its in-process caller)

    def api_calls(self) -> int:
        return sum(int(m.get("api_calls", 0)) for m in self.metadata.values())

    def left_out(self) -> list[str]:
        """What the service sent that the warehouse left out (implausible values, rows without an id), one line each:
        the run is done, but not "ok"."""
        return [
            line.removeprefix("- ")
            for meta in self.metadata.values()
            for line in str(meta.get(LEFT_OUT) or "").splitlines()
            if line.strip()
        ]

    def stopped_early(self) -> list[str]:
        """Why steps left work for the next run (the rate budget ran out), one line per step."""
        return [
            f"{asset}: {meta['stopped_early']}"
            for asset, meta in sorted(self.metadata.items())
            if meta.get("stopped_early")
        ]


def resources_for(config: Config, max_wait_seconds: float = 900.0) -> dict[str, Any]:
    """Resources that run with exactly this Config (not whatever FITSYNC_* says in the run's process)."""
    return {"fitsync_api": FitsyncApi.for_config(config, max_wait_seconds)}


def release_dead_runs(instance: DagsterInstance) -> list[str]:
    """Runs of this machine whose process died (killed mid-run) still hold pool slots; no daemon frees slots of
    in-process runs, so the next run would wait for them forever. Fail those runs and free their slots."""
    released = []
    for run in instance.get_runs(
        RunsFilter(
            statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING], tags={HOST_TAG: socket.gethostname()}
        )
    ):
        pid = int(run.tags.get(PID_TAG, "0"))
        if pid and not _alive(pid):
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            instance.report_run_failed(run, f"the process running it ({pid}) is gone")
            end_log_tails(run.run_id)
            released.append(run.run_id)
    return released


def end_log_tails(run_id: str) -> list[int]:
    """End the `tail -F` processes still mirroring a dead run's step logs; returns their pids.

    Dagster mirrors a step's output with `tail -F` and starts a watcher that ends it with SIGTERM when the step's
    process dies. A tail started where SIGTERM is ignored (seen in CI: the tails' SigIgn held SIGTERM) outlives
    that, so it gets SIGKILL here: it has nothing to clean up."""
    ended = []
    for pid in log_tails(run_id):
        try:
            os.kill(pid, signal.SIGKILL)
            ended.append(pid)
        except OSError:
            pass  # gone meanwhile
    return ended


def log_tails(part: str) -> list[int]:
    """Pids of `tail` processes with `part` (a run id, a home) in an argument; none without /proc (not Linux)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if argv[0].endswith(b"tail") and any(part.encode() in arg for arg in argv[1:]):
                found.append(int(entry.name))
        except (OSError, IndexError):
            pass  # gone meanwhile, or not ours
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_job(
    config: Config,
    instance: DagsterInstance,
    job_name: str,
    *,
    partition_key: str | None = None,
    run_config: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    max_wait_seconds: float = 900.0,
    log_level: str = "WARNING",
    run_id: str | None = None,
) -> SyncOutcome:
    release_dead_runs(instance)
    job = build_definitions(resources_for(config, max_wait_seconds)).resolve_job_def(job_name)
    result = off_the_main_thread(
        lambda: job.execute_in_process(
            run_config={**(run_config or {}), "loggers": {"console": {"config": {"log_level": log_level}}}},
            instance=instance,
            partition_key=partition_key,
            raise_on_error=False,
            run_id=run_id,
            tags={**(tags or {}), HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())},
        )
    )
    metadata = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        metadata[mat.asset_key.to_user_string()] = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    failures: list[tuple[str, str]] = []
    for e in result.all_events:
        if e.is_step_failure and e.step_failure_data.error:
            assert e.step_key is not None  # a step's failure names its step
            failures.append((e.step_key, step_failures.failure_text(e.step_failure_data.error, config)))
    # an answer of the wrong shape fails the athlete's sync, though its step let the others go on
    failures += [(asset, str(meta[WRONG_ANSWER])) for asset, meta in sorted(metadata.items()) if meta.get(WRONG_ANSWER)]
    if result.success and failures:  # the steps went on, the sync did not: `fitsync status` says so
        instance.add_run_tags(result.run_id, {FAILED_TAG: "true"})
    elif result.success and any(meta.get("stopped_early") for meta in metadata.values()):
        instance.add_run_tags(result.run_id, {PARTIAL_TAG: "true"})  # work left for the next run
    who = f"athlete {partition_key}: " if partition_key else ""
    return SyncOutcome(
        int(partition_key) if partition_key else None,
        result.success and not failures,
        metadata,
        f"{who}{step_failures.summary(failures)}" if failures else None,
        failures=tuple(failures),
    )


def off_the_main_thread(work: Callable[[], T]) -> T:
    """Run `work` in a worker thread and wait for it.

    On the main thread Dagster swaps in a handler that raises its interrupt wherever Python is when a signal
    lands; inside a garbage collector's callback the interpreter swallows that exception (printing a traceback)
    and the run goes on. Off the main thread Dagster leaves signals alone: the command's own handler asks for a
    stop and the client honours it at its next request or wait (client/stop_request.py). Daemonic, so a second
    Ctrl-C, which raises here at once, ends the process without waiting for it.
    """
    if threading.current_thread() is not threading.main_thread():
        return work()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as error:  # handed to the caller's thread, where it means something
            box["error"] = error

    worker = threading.Thread(target=target, name="fitsync-run", daemon=True)
    worker.start()
    while worker.is_alive():
        # Python runs signal handlers on the main thread only when it runs bytecode, and a signal the kernel hands
        # to another thread (any thread an import started) does not wake a plain join(): wake up to let them run.
        worker.join(timeout=0.1)
    if "error" in box:
        raise box["error"]
    return box["result"]


def sync_athlete(
    config: Config,
    athlete_id: int,
    instance: DagsterInstance,
    *,
    full: bool = False,
    allow_shrink: bool = False,
    max_wait_seconds: float = 900.0,
    log_level: str = "WARNING",
    run_id: str | None = None,
    priority: str | None = None,
    locked: bool = False,
) -> SyncOutcome:
    """One run of the sync job; an athlete who is not connected gets no run (and no partition). `priority`: the
    rate governor's class for all its calls (rate_governor.CLASSES), instead of what the run's work implies.
    `locked`: the caller holds the athlete's lock (`fitsync sync`, which did the run's first steps under it)."""
    store = open_store(config)
    with store.reading() as conn:
        status = athlete_rows.status(conn, athlete_id) or "not connected"
    if status != "connected":
        said = "needs re-authorization" if status == "needs_reauth" else f"is {status}"
        return SyncOutcome(
            athlete_id,
            False,
            {},
            f"athlete {athlete_id} {said}: run `fitsync connect` as athlete {athlete_id}",
            ran=False,
        )
    instance.add_dynamic_partitions(ATHLETES, [str(athlete_id)])
    try:
        with contextlib.nullcontext() if locked else store.athlete_lock(athlete_id):
            launched = daemon_run_of(instance, athlete_id)
            if launched:
                return SyncOutcome(athlete_id, False, {}, busy=launched)
            return run_job(
                config,
                instance,
                "sync_athlete",
                partition_key=str(athlete_id),
                run_config={"ops": {"activities": {"config": {"full": full, "allow_shrink": allow_shrink}}}},
                tags={
                    "fitsync/trigger": "cli",
                    **({REFRESH_TAG: "all"} if full else {}),
                    **({PRIORITY_TAG: priority} if priority else {}),
                },
                max_wait_seconds=max_wait_seconds,
                log_level=log_level,
                run_id=run_id,
            )
    except AthleteBusy as busy:
        return SyncOutcome(athlete_id, False, {}, busy=held_elsewhere(busy))


def daemon_run_of(instance: DagsterInstance, athlete_id: int) -> str | None:
    """A run the Dagster daemon launched for this athlete and still running, said as `held_elsewhere` says a lock;
    None if there is none.

    Runs of fitsync's own commands take the athlete lock (and carry PID_TAG); the daemon's runs pass the run queue's
    limit of one per partition instead, which an in-process run never goes through. The queue counts in-process runs
    once they exist, so the two meet only if the daemon dequeues in the moment before this run's record is created."""
    records = instance.get_run_records(
        RunsFilter(
            statuses=[DagsterRunStatus.STARTING, DagsterRunStatus.STARTED], tags={PARTITION_TAG: str(athlete_id)}
        ),
        limit=10,
    )
    for record in records:
        run = record.dagster_run
        if PID_TAG in run.tags:
            continue  # a fitsync command's run: its lock, taken above, already answers for it
        started = record.start_time or record.create_timestamp.timestamp()
        minutes = max(0, round((time.time() - started) / 60))
        return (
            f"athlete {athlete_id} is being synced by Dagster run {run.run_id[:8]} ({run.job_name}, started "
            f"{minutes} min ago): skipped here, it continues there"
        )
    return None


def tick_webhook_sensor(
    config: Config, instance: DagsterInstance, cursor: str | None
) -> tuple[list[RunRequest], str | None]:
    """One evaluation of the shipped `webhook_events` sensor, as the daemon would do it.

    Off the main thread, as runs are (off_the_main_thread): Dagster sets the sensor's resources up and tears them
    down under a SIGINT handler of its own there, which raised its interrupt error wherever a Ctrl-C landed."""

    def evaluate() -> object:
        with build_sensor_context(instance=instance, cursor=cursor, resources=resources_for(config)) as context:
            # the sensor's logger is Dagster's own, outside the logging tree: it would print its INFO summary to
            # stderr whatever the process set (the demo's stray line). The daemon keeps those lines in the tick's
            # log for the UI; here only warnings reach the terminal.
            context.log.setLevel(logging.WARNING)
            return webhook_events(context)

    result = off_the_main_thread(evaluate)
    if not isinstance(result, SensorResult):  # a SkipReason: nothing to launch, the cursor stays
        return [], cursor
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        elif isinstance(request, DeleteDynamicPartitionsRequest):
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return list(result.run_requests or []), result.cursor


def execute_run_request(
    config: Config,
    instance: DagsterInstance,
    request: RunRequest,
    *,
    log_level: str = "WARNING",
    run_id: str | None = None,
) -> SyncOutcome | None:
    """Launch like the daemon does: a run key Dagster has already seen launches nothing; the run is tagged with the
    sensor's name and its run key, which is how the daemon knows it as launched."""
    if request.run_key and instance.get_runs(RunsFilter(tags={RUN_KEY_TAG: request.run_key}), limit=1):
        return None
    return run_job(
        config,
        instance,
        request.job_name or "webhook_refresh",
        partition_key=request.partition_key,
        run_config=dict(request.run_config),
        tags={
            **request.tags,
            SENSOR_NAME_TAG: webhook_events.name,
            **({RUN_KEY_TAG: request.run_key} if request.run_key else {}),
        },
        log_level=log_level,
        run_id=run_id,
    )
