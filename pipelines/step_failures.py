"""A failed step's error as the one line a user can act on, from the error Dagster serialised for it.

Dagster wraps what an asset raised in `DagsterExecutionStepExecutionError` and keeps only its class name and
text: the exception itself is gone, so the story is chosen by class name (as client/explain.py does for errors
raised in the command's own process). What fitsync raises on purpose reads as its message; anything else keeps its
class name and points at the run's log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from fitsync.client.config import Config
from fitsync.client.errors import FitsyncError
from fitsync.client.explain import DISK_TROUBLE, damaged_warehouse, debugging, disk_full, too_slow, unreachable
from fitsync.resources.warehouse import warehouse_of
from fitsync.warehouse.location import WarehouseError

WRAPPERS = {"DagsterExecutionStepExecutionError", "DagsterUserCodeExecutionError"}
# Raised before or while an answer came back, after every retry (client/transport.py).
UNREACHABLE = {"ConnectError", "ConnectTimeout", "PoolTimeout"}
TOO_SLOW = {"ReadTimeout", "WriteTimeout", "ReadError", "WriteError", "RemoteProtocolError"}
CLASS_PATH = re.compile(r"^[\w.]+: ")


def _ours() -> set[str]:
    """Class names whose message already says what to do: fitsync's errors (the service's and the warehouse's) and
    Dagster's deliberate `Failure`."""
    names, todo = {"Failure"}, [FitsyncError, WarehouseError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


def innermost(error: Any) -> Any:
    """What the asset raised, under Dagster's wrappers; for a call not sent while the service is unresponsive, the
    error that made it so (one cause, said once for every step that met it)."""
    while error.cls_name in WRAPPERS | {"ServiceUnresponsive"} and error.cause is not None:
        error = error.cause
    return error


def failure_text(error: Any, config: Config) -> str:
    cause = innermost(error)
    first = str(cause.message).strip().splitlines()[0] if str(cause.message).strip() else cause.cls_name
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(config.base_url))
    if any(t in str(cause.message).lower() for t in DISK_TROUBLE):
        return disk_full(config.home)
    if (warehouse := damaged_warehouse(str(cause.message), warehouse_of(config).file)) is not None:
        return warehouse
    if cause.cls_name in UNREACHABLE:
        return unreachable(origin, CLASS_PATH.sub("", first)) + ", then run `fitsync sync` again"
    if cause.cls_name in TOO_SLOW:
        return too_slow(f"at {origin} ({cause.cls_name})")
    if cause.cls_name in _ours():
        return CLASS_PATH.sub("", str(cause.message).strip())
    if debugging():
        return f"{cause.cls_name}: {CLASS_PATH.sub('', first)}\n{cause.to_string()}"
    return f"{cause.cls_name}: {CLASS_PATH.sub('', first)} (unexpected: `fitsync --debug sync` shows the traceback)"


def summary(failures: Iterable[tuple[str, str]]) -> str:
    """One line per distinct message, naming the steps that failed with it."""
    steps: dict[str, list[str]] = {}
    for step, text in failures:
        steps.setdefault(text, []).append(step)
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in steps.items())
