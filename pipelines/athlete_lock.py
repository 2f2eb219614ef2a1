"""One sync per athlete at a time across processes: two `fitsync sync` would fetch the same queue twice.

An advisory `flock` on `FITSYNC_HOME/locks/athlete-<id>.lock`: the kernel releases it when the process ends,
however it ends, so a killed sync never leaves a stale lock. The file holds the owner's pid for the message.
Runs the Dagster daemon launches are serialized per athlete by the run queue's tag limit on
`dagster/partition` (pipelines/dagster.yaml).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator


class AthleteBusy(Exception):
    def __init__(self, athlete_id: int, pid: str) -> None:
        self.athlete_id, self.pid = athlete_id, pid
        owner = f"process {pid}" if pid else "another process"
        super().__init__(f"athlete {athlete_id} is being synced by {owner}: skipped (it continues there)")


@contextlib.contextmanager
def athlete_lock(home: Path, athlete_id: int) -> Iterator[None]:
    folder = home / "locks"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(folder / f"athlete-{athlete_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AthleteBusy(athlete_id, os.pread(fd, 32, 0).decode(errors="replace").strip()) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
