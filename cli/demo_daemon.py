"""The Dagster daemon's part in `fitsync demo`, done in the demo's process and recorded where the daemon looks.

The demo evaluates the `webhook_events` sensor itself and runs what it asks for. The daemon keeps a sensor's
cursor in the sensor's state in the instance, and knows a run key as launched only on a run tagged with the
sensor's name: without both, Dagster opened on the demo's home later read every event from the start again and
launched their run a second time, against a sandbox that ended with the demo.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import DagsterInstance, RunRequest
from dagster._core.remote_origin import (  # the public API sets a cursor only through a loaded code location
    RegisteredCodeLocationOrigin,
    RemoteInstigatorOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.scheduler.instigation import (
    InstigatorState,
    InstigatorStatus,
    InstigatorType,
    SensorInstigatorData,
)

from fitsync.pipelines.sync_runner import SyncOutcome, execute_run_request, tick_webhook_sensor
from fitsync.pipelines.webhook_sensor import webhook_events

if TYPE_CHECKING:
    from fitsync.client.config import Config

# The code location as `dagster dev -m fitsync.pipelines.definitions`, workspace.yaml and pyproject's [tool.dagster]
# all name it, and the one repository of a Definitions: the daemon finds a sensor's state by these names.
LOCATION, REPOSITORY = "fitsync.pipelines.definitions", "__repository__"
# The run prints nothing on the terminal: its failure is said by the demo, and a step stopped by Ctrl-C is no error
# (Dagster's ERROR events would print it with a stack trace). The run's full log stays in the instance.
LOG_LEVEL = "CRITICAL"


def evaluate(config: Config, instance: DagsterInstance, home: Path) -> list[RunRequest]:
    """One evaluation of the sensor from the first event, as the daemon's first tick on the demo's new instance; its
    cursor is kept in the sensor's state when the instance is the demo's own (under `home`), never in another."""
    requests, cursor = tick_webhook_sensor(config, instance, None)
    if cursor is not None and _is_under(instance, home):
        store_cursor(instance, cursor)
    return requests


def launch(config: Config, instance: DagsterInstance, request: RunRequest, run_id: str) -> SyncOutcome | None:
    """The run the sensor asked for, as the daemon launches it (sync_runner.execute_run_request: none when its run
    key was launched already; tagged with the sensor's name and the run key)."""
    return execute_run_request(config, instance, request, log_level=LOG_LEVEL, run_id=run_id)


def sensor_state(instance: DagsterInstance) -> InstigatorState | None:
    """The sensor's state in the instance, found as the daemon finds it (by location, repository and name)."""
    origin = _origin()
    return instance.get_instigator_state(origin.get_id(), origin.get_selector().get_id())


def store_cursor(instance: DagsterInstance, cursor: str) -> None:
    """The cursor in the sensor's state, which says "running as declared in code", as the daemon's own first tick
    leaves it."""
    data = SensorInstigatorData(
        min_interval=webhook_events.minimum_interval_seconds,
        cursor=cursor,
        last_tick_timestamp=time.time(),
        last_sensor_start_timestamp=time.time(),
        sensor_type=webhook_events.sensor_type,
    )
    stored = sensor_state(instance)
    if stored is None:
        instance.add_instigator_state(
            InstigatorState(_origin(), InstigatorType.SENSOR, InstigatorStatus.DECLARED_IN_CODE, data)
        )
    else:
        instance.update_instigator_state(stored.with_data(data))


def _origin() -> RemoteInstigatorOrigin:
    repository = RemoteRepositoryOrigin(RegisteredCodeLocationOrigin(LOCATION), REPOSITORY)
    return RemoteInstigatorOrigin(repository, webhook_events.name)


def _is_under(instance: DagsterInstance, home: Path) -> bool:
    """True for an instance kept under the demo's folder; a DAGSTER_HOME set elsewhere may be a real deployment's."""
    return Path(instance.root_directory).resolve().is_relative_to(home.resolve())
