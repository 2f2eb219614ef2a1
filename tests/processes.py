"""fitsync as its own process in tests: free loopback ports, the environment of a process on a home, fitsync on a
pseudo-terminal, a `fitsync webhooks serve` receiver, and bursts of events POSTed to one."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import queue
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from .sandbox_harness import wait_until

REPO = Path(__file__).resolve().parents[1]
FITSYNC = [sys.executable, "-m", "fitsync.cli.main"]


# FITSYNC_TEST_FORK=0: each command in a fresh interpreter (`python -m fitsync.cli.main`), as a user's shell runs it;
# by default run_fitsync forks it from a process that has loaded fitsync (tests/command_forks.py). The tests of
# signals, terminals and start-up run fresh interpreters either way.
FORK = os.environ.get("FITSYNC_TEST_FORK", "1") != "0"


def run_fitsync(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path = REPO,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`fitsync ARGS` as a process of its own, its output captured (as `subprocess.run(..., capture_output=True,
    text=True)`); stdin is `input`, else nothing (as from cron)."""
    stdin = None if input is not None else subprocess.DEVNULL
    return run(
        [*FITSYNC, *args], cwd=cwd, env=env, input=input, stdin=stdin, capture_output=True, text=True, timeout=timeout
    )


class _Forks:
    """The worker's command server (tests/command_forks.py), started on first use; it ends with this process."""

    def __init__(self) -> None:
        import tempfile

        self.path = os.path.join(tempfile.mkdtemp(prefix="fitsync-forks-"), "socket")
        base = {k: v for k, v in os.environ.items() if not k.startswith(("FITSYNC_", "DAGSTER_"))}
        pythonpath = [str(REPO), *filter(None, base.get("PYTHONPATH", "").split(os.pathsep))]  # as subprocess_env
        base.update({"PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(pythonpath)})
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.command_forks", self.path],
            cwd=REPO,
            env=base,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.server.stdout is not None and self.server.stdout.readline() == "ready\n", "the command server"

    def start(self, args: list[str], env: dict[str, str], cwd: Path | str, fds: list[int]) -> tuple[socket.socket, int]:
        """A child forked to run `args` (fitsync's, or `-m MODULE …`, `-c SCRIPT …`) on these stdin, stdout and
        stderr: the connection its exit status will come on, and its pid."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [json.dumps({"args": args, "env": env, "cwd": str(cwd)}).encode()], fds)
            return conn, json.loads(conn.recv(4096))["pid"]
        except BaseException:
            conn.close()
            raise


class ForkedPopen(subprocess.Popen):  # type: ignore[type-arg]
    """`subprocess.Popen([sys.executable, "-m", MODULE, …])` (or `"-c", SCRIPT`) whose process the worker's command
    server forks instead of Python starting afresh: a sync's 2–3 s of imports are done already. It is a process of
    its own (its pid, signals, exit status); the server is its parent, so its exit status comes from there, not from
    waitpid. Not for the tests of start-up, terminals or process groups: those run fresh interpreters."""

    def _execute_child(  # type: ignore[override]
        self,
        args: list[str],
        executable: Any,
        preexec_fn: Any,
        close_fds: bool,
        pass_fds: Any,
        cwd: Any,
        env: Any,
        startupinfo: Any,
        creationflags: int,
        shell: bool,
        p2cread: int,
        p2cwrite: int,
        c2pread: int,
        c2pwrite: int,
        errread: int,
        errwrite: int,
        *unsupported: Any,
    ) -> None:
        assert args[0] == sys.executable and args[1] in ("-m", "-c") and not (shell or preexec_fn or pass_fds), args
        restore_signals, gid, gids, uid, umask, start_new_session, process_group = unsupported
        assert (gid, gids, uid, start_new_session, process_group) == (None, None, None, False, -1), unsupported
        request = list(args[3:]) if list(args[1:3]) == ["-m", "fitsync.cli.main"] else list(args[1:])
        with open(os.devnull, "rb") as nothing:  # stdin not given: nothing (the worker's is xdist's channel)
            fds = [p2cread if p2cread != -1 else nothing.fileno(), c2pwrite if c2pwrite != -1 else 1]
            fds.append(errwrite if errwrite != -1 else 2)
            self._status, self.pid = _forks().start(request, dict(os.environ if env is None else env), cwd or REPO, fds)
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)  # type: ignore[attr-defined]

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        self._status.setblocking(not wait_flags & os.WNOHANG)
        try:
            message = self._status.recv(4096)
        except BlockingIOError:
            return (0, 0)
        self._status.close()
        # no message: the server ended (its worker is ending) before it could say: taken for a kill
        return (self.pid, json.loads(message)["wait_status"] if message else signal.SIGKILL)

    def _internal_poll(self, _deadstate: int | None = None, *_: Any, **__: Any) -> int | None:
        if self.returncode is None and self._waitpid_lock.acquire(False):  # type: ignore[attr-defined]
            try:
                if self.returncode is None:
                    pid, status = self._try_wait(os.WNOHANG)
                    if pid == self.pid:
                        self._handle_exitstatus(status)  # type: ignore[attr-defined]
            except OSError:
                if _deadstate is not None:
                    self.returncode = _deadstate
            finally:
                self._waitpid_lock.release()  # type: ignore[attr-defined]
        return self.returncode


def popen(args: list[str], **options: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen(args, …)` of `[sys.executable, "-m" or "-c", …]`, forked by the command server unless
    FITSYNC_TEST_FORK=0."""
    return (ForkedPopen if FORK else subprocess.Popen)(args, **options)


def run(
    args: list[str],
    *,
    input: Any = None,
    capture_output: bool = False,
    timeout: float | None = None,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(args, …)` through `popen`."""
    if input is not None:
        options["stdin"] = subprocess.PIPE
    if capture_output:
        options.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with popen(args, **options) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as timed_out:
            process.kill()
            timed_out.stdout, timed_out.stderr = process.communicate()
            raise
    return subprocess.CompletedProcess(args, process.returncode, out, err)


_FORKS: list[_Forks] = []


def _forks() -> _Forks:
    if not _FORKS or _FORKS[0].server.poll() is not None:
        _FORKS[:] = [_Forks()]
    return _FORKS[0]


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
    """fitsync on a pseudo-terminal, as a person at a shell runs it: what it printed so far, and input typed in.
    `command` and `env` replace fitsync's command line and `home`'s environment (a script standing in for it)."""

    own_group = False  # ForegroundJob: a process group of its own, as a shell's foreground job

    def __init__(
        self, home: Path, *args: str, command: list[str] | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.master, slave = pty.openpty()
        # as a shell starts a program at a terminal: Ctrl-C and SIGTERM at their default action
        group: dict[str, Any] = {"preexec_fn": as_a_shell_starts_it, "start_new_session": self.own_group}
        self.process = subprocess.Popen(
            command or [*FITSYNC, *args],
            cwd=REPO,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env or subprocess_env(home, COLUMNS="100"),
            **group,
        )
        os.close(slave)
        self.seen = b""

    def wait_for(self, text: str, times: int = 1, timeout: float = 60) -> str:
        """Once `text` has been printed `times` times in all; fails at once if the process ended first."""
        return self._wait(lambda seen: seen.count(text) >= times, repr(text), timeout)

    def wait_for_match(self, pattern: str, timeout: float = 60) -> str:
        """Once something matching the regular expression `pattern` has been printed: for a line a spinner shows as
        it changes, which can skip any one of its values between two refreshes."""
        return self._wait(lambda seen: re.search(pattern, seen) is not None, repr(pattern), timeout)

    def _wait(self, shown: Callable[[str], bool], what: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while not shown(seen := self.seen.decode(errors="replace")):
            assert time.monotonic() < deadline, f"no {what} within {timeout} s: {seen}"
            if not self._read(0.5):
                assert self.process.poll() is None, f"exited before {what}: {seen}"
        return seen

    def wait_for_next(self, text: str, timeout: float = 60) -> str:
        """Once `text` is printed again (not only in what was shown before)."""
        return self.wait_for(text, self.seen.count(text.encode()) + 1, timeout)

    def wait_for_exit(self, timeout: float = 60) -> str:
        """Everything printed, once the process has ended and the terminal is quiet."""
        deadline = time.monotonic() + timeout
        while self._read(0.2) or self.process.poll() is None:
            assert time.monotonic() < deadline, f"still running after {timeout} s: {self.seen.decode(errors='replace')}"
        return self.seen.decode(errors="replace")

    def _read(self, wait: float) -> bool:
        """Whether something more was read within `wait` seconds (False too once every writer closed the terminal)."""
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # every writer closed the terminal
            return False
        self.seen += chunk
        return bool(chunk)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        code = self.process.wait(timeout=30)
        os.close(self.master)
        return code


class ForegroundJob(Terminal):
    """fitsync on a pseudo-terminal in a process group of its own, as a shell runs a foreground job; `send` signals
    the whole group, as the terminal does on Ctrl-C (the pty is not the process's controlling terminal, so typing
    ^C would not)."""

    own_group = True

    def send(self, signum: int) -> None:
        os.killpg(self.process.pid, signum)

    def members(self) -> set[int]:
        """Pids of the live processes in the job's group (Linux /proc; zombies are gone already)."""
        members = set()
        for entry in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == self.process.pid and fields[0] != "Z":  # fields: state, ppid, pgrp, …
                    members.add(int(entry.name))
        return members

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def as_a_shell_starts_it() -> None:
    """A program a shell runs in the foreground gets the default action of Ctrl-C and SIGTERM, whatever its starter
    ignored: a test worker may ignore SIGINT (pytest-xdist's do), and a Python started with SIGINT ignored never
    installs its KeyboardInterrupt handler."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


@contextlib.contextmanager
def foreground(home: Path, *args: str, **options: Any) -> Iterator[ForegroundJob]:
    """The job (Terminal's arguments), killed with its group if the test failed before it ended."""
    running = ForegroundJob(home, *args, **options)
    try:
        yield running
    finally:
        running.kill()


def serve_receiver(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    """`fitsync webhooks serve` as its own process with this environment; returns once it answers."""
    with log.open("ab") as out:
        process = popen(
            [*FITSYNC, "webhooks", "serve", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
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
