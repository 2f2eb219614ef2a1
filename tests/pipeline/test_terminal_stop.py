"""Ctrl-C at a terminal: the terminal sends SIGINT to the whole foreground process group, not just to fitsync. The
sync's runs start no helper process in that group (Dagster's compute-log `tail -F` and `watch_orphans` once did: each
printed a KeyboardInterrupt traceback before fitsync's line, and some outlived the command), so the stop prints no
traceback and leaves no process behind."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fitsync.sync import progress

from ..sandbox_harness import Harness, wait_until
from .conftest import REPO, Connect, add_athlete, record_many
from .test_cli import FITSYNC, env_for

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


def group_members(pgid: int) -> set[int]:
    """Pids of the live processes in this process group (Linux /proc; zombies are gone already)."""
    members = set()
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, …
                members.add(int(entry.name))
    return members


def read_all(master: int, process: subprocess.Popen[bytes], timeout: float) -> bytes:
    """What the process printed on the terminal until it exited (and the terminal has nothing more)."""
    seen, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # every writer closed the terminal
                break
            seen += chunk
        elif process.poll() is not None:
            break
    return seen


def test_ctrl_c_to_the_whole_process_group_prints_no_traceback_and_leaves_nothing(
    sb: Harness, connect: Connect
) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 30, oldest_days=30)
    home = connect(aid)
    master, slave = pty.openpty()
    with sb.settings(fault_latency_ms=150):  # a few seconds of details left when Ctrl-C comes
        process = subprocess.Popen(
            [*FITSYNC, "sync"],
            cwd=REPO,
            env={**env_for(home), "COLUMNS": "120"},
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,  # its own process group, as a shell's foreground job has
        )
        os.close(slave)
        try:

            def detailing() -> bool:
                assert process.poll() is None
                return 0 < progress.count_needing(home.store, aid, "detail") < len(ids) - 3

            wait_until(detailing, 60, "the sync to be detailing activities", interval=0.05)
            during = group_members(process.pid)
            os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
            shown = read_all(master, process, 30).decode(errors="replace")
            code = process.wait(timeout=30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            os.close(master)
    assert during == {process.pid}, f"helper processes in the run's group: {during - {process.pid}}"
    assert code == 130, shown
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown, shown
    assert "Stopped by Ctrl-C (SIGINT)" in shown, shown
    assert group_members(process.pid) == set()  # nothing of the run is left behind
