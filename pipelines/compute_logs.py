"""The compute-log manager of fitsync's dagster.yaml: Dagster's local one (each step's stdout and stderr in files under
the instance, shown by the UI) without its mirror back to the terminal. The mirror runs a `tail -F` process and a
`watch_orphans` Python process per stream in the run worker's process group; under `dagster dev` that is the
terminal's, so Ctrl-C printed a KeyboardInterrupt traceback from each watcher. fitsync's steps log through Dagster's
event log, which the terminal of `dagster dev` shows anyway."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from dagster import Field, Float, StringSource
from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._serdes import ConfigurableClassData
from dagster._utils import ensure_file, touch_file


class CapturedComputeLogManager(LocalComputeLogManager):
    """LocalComputeLogManager whose capture only redirects each stream to its file. `base_dir` defaults to
    $DAGSTER_HOME/storage, where Dagster's default manager keeps them."""

    def __init__(self, base_dir: str | None = None, **options: Any) -> None:
        super().__init__(base_dir or os.path.join(os.environ["DAGSTER_HOME"], "storage"), **options)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"base_dir": Field(StringSource, is_required=False), "polling_timeout": Field(Float, is_required=False)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> CapturedComputeLogManager:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Generator[CapturedLogContext, None, None]:
        outpath = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        errpath = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        ensure_file(outpath)
        ensure_file(errpath)
        with redirect_to_file(sys.stdout, outpath), redirect_to_file(sys.stderr, errpath):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # as Dagster's: the capture is complete
