"""fitsync as its own process in tests: free loopback ports, the environment of a process on a home, fitsync on a
pseudo-terminal, a `fitsync webhooks serve` receiver, and bursts of events POSTed to one."""

from __future__ import annotations

import contextlib
import os
import pty
import queue
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from .sandbox_harness import wait_until

REPO = Path(__file__).resolve().parents[1]
FITSYNC = [sys.executable, "-m", "fitsync.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def subprocess_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a fitsync process on `home`: its config.toml says the rest; no FITSYNC_* or DAGSTER_HOME
    inherited from this process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FITSYNC_", "DAGSTER_"))}
    env.update({"FITSYNC_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    pythonpath = [str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env.update(extra)
    return env


class Terminal:
    """fitsync on a pseudo-terminal, as a person at a shell runs it: what it printed so far, and input typed in."""

    def __init__(self, home: Path, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [*FITSYNC, *args], stdin=slave, stdout=slave, stderr=slave, env=subprocess_env(home, COLUMNS="100")
        )
        os.close(slave)
        self.seen = b""

    def wait_for(self, text: str, times: int = 1, timeout: float = 60) -> str:
        """Once `text` has been printed `times` times in all."""
        deadline = time.monotonic() + timeout
        while self.seen.count(text.encode()) < times:
            assert time.monotonic() < deadline, f"no {text!r} within {timeout} s: {self.seen.decode(errors='replace')}"
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                with contextlib.suppress(OSError):  # the process ended: its last output was read before
                    self.seen += os.read(self.master, 65536)
        return self.seen.decode(errors="replace")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        code = self.process.wait(timeout=30)
        os.close(self.master)
        return code


def serve_receiver(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    """`fitsync webhooks serve` as its own process with this environment; returns once it answers."""
    process = subprocess.Popen(
        [*FITSYNC, "webhooks", "serve", "--port", str(port)], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}/webhooks/readiness-probe"

    def answering() -> bool:
        assert process.poll() is None, log.read_text()
        try:
            return httpx.get(url, timeout=1).status_code == 404  # not the secret path: refused, so it is up
        except httpx.TransportError:
            return False

    wait_until(answering, 30, "the receiver process to answer", interval=0.05)
    return process


class Burst:
    """Threads POSTing events from a queue as fast as they can; the answer (status, or None) of each is kept."""

    def __init__(self, url: str, events: list[dict[str, Any]], threads: int = 4) -> None:
        self.url = url
        self.events = events
        self.status: dict[int, int | None] = {}
        self.stored: dict[int, bool] = {}
        self._todo: queue.Queue[int] = queue.Queue()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(threads)]

    def send(self, indexes: list[int]) -> Burst:
        for i in indexes:
            self._todo.put(i)
        for _ in self._threads:
            self._todo.put(-1)
        for thread in self._threads:
            thread.start()
        return self

    def join(self) -> None:
        for thread in self._threads:
            thread.join(60)
            assert not thread.is_alive()

    def acknowledged(self) -> set[int]:
        with self._lock:
            return {i for i, s in self.status.items() if s == 200}

    def _work(self) -> None:
        with httpx.Client(timeout=5) as http:
            while (i := self._todo.get()) >= 0:
                try:
                    response = http.post(self.url, json=self.events[i])
                    status, stored = response.status_code, response.status_code == 200 and response.json()["stored"]
                except httpx.TransportError:
                    status, stored = None, False
                with self._lock:
                    self.status[i] = status
                    self.stored[i] = stored
