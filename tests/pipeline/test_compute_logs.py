"""The dagster.yaml fitsync writes (what `dagster dev` and the daemon read): a step's output is captured in files, as
the UI shows it, and no helper process is started beside the step (Dagster's mirror started a `tail -F` and a
`watch_orphans` watcher per stream in the terminal's process group: each printed a traceback on Ctrl-C)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef

from fitsync.pipelines.compute_logs import CapturedComputeLogManager
from fitsync.pipelines.instance import DAGSTER_YAML


def children() -> list[str]:
    """The command lines of this process's live children (Linux /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.append((entry / "cmdline").read_text().replace("\0", " ").strip())
        except (OSError, IndexError, ValueError):
            continue
    return found


def test_a_step_is_captured_without_helper_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a run worker does around each step (`capture_logs`), on the instance dagster.yaml makes."""
    (tmp_path / "dagster.yaml").write_text(DAGSTER_YAML)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as instance:
        manager = instance.compute_log_manager
        assert isinstance(manager, CapturedComputeLogManager)
        key = ["run-1", "compute_logs", "step"]
        before = children()  # the test's own (the command server of tests/processes.py, once started)
        with manager.capture_logs(key):
            print("step output to the file", flush=True)
            os.write(sys.stderr.fileno(), b"and its stderr\n")  # the file descriptors, as a child process writes
            during = [child for child in children() if child not in before]
        assert during == [], during  # no `tail -F`, no watcher beside the step
        captured = manager.get_log_data(key)
        assert b"step output to the file" in (captured.stdout or b""), captured
        assert b"and its stderr" in (captured.stderr or b""), captured
        assert manager.is_capture_complete(key)
    assert (tmp_path / "storage").is_dir()  # where Dagster's default manager keeps them
