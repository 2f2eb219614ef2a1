"""A process that has loaded fitsync's command once and forks a child per command a test runs
(`tests/processes.py: run_fitsync`). Each child is a process of its own — its pid, files, signals, exit status,
its own interpreter shutdown — that starts with most of `python -m fitsync.cli.main`'s imports done: 0.6 s of
`fitsync status`, over 2 s of `fitsync sync` (Dagster, DuckDB, Polars) on 2 slow cores, paid by hundreds of commands a
run.

    python -m tests.command_forks SOCKET

A request is one SOCK_SEQPACKET message: JSON {args, env, cwd} with the child's stdin, stdout and stderr as file
descriptors; `args` are fitsync's, or Python's `-m MODULE ARGS…` or `-c SCRIPT ARGS…` for a test's own program
(tests/pipeline/sync_worker.py, a script that loads the code location).
The answer: {"pid": n} at once, then {"status": code, "wait_status": raw} (`code` as `subprocess` gives it: -N for
signal N; `raw` as waitpid gives it) when the child ends. The server ends when its stdin closes (the test worker that
started it is gone).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import selectors
import socket
import sys
from pathlib import Path
from typing import Any

# What the commands import before their work, loaded once: Dagster (1.5 s of a sync's start), the command's modules,
# the settings, Dagster's SQLite storage (0.7 s for each command that opens the instance), and the warehouse's and the
# assets' modules with DuckDB, Polars and Arrow (0.6 s of each sync). A fork copies the calling thread alone, so a lock
# another thread held stays held in the child (a forked `sync` hung on one of DuckDB's): the threads these libraries
# start when imported are not started (NO_BACKGROUND_THREADS) or stopped (DuckDB's, in `serve`), and `serve` refuses
# to fork with any other (KNOWN_THREADS). Nor modules that read the environment when
# imported: they would see the server's, not the command's (pipelines.jobs and pipelines.definitions read the
# settings; the commands import them).
PRELOAD = (
    "dagster",
    "dagster._core.storage.sqlite_storage",
    "fitsync.cli.main",
    "fitsync.client.config",
    "fitsync.sandbox.cli",
    "fitsync.assets.activities",
    "fitsync.assets.activity_details",
    "fitsync.assets.activity_streams",
    "fitsync.assets.analysis",
    "fitsync.assets.athlete",
    "fitsync.assets.segments",
    "fitsync.assets.warehouse_load",
    "fitsync.pipelines.webhook_sensor",
    "fitsync.pipelines.lake_maintenance",
    "fitsync.pipelines.purge",
)
# jemalloc's purging threads (Arrow's, Polars'): set before their import, and left out of the commands' environment.
NO_BACKGROUND_THREADS = {
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
    "_RJEM_MALLOC_CONF": "background_thread:false",
}
# Polars' spill cleaner, started when Polars is imported: it waits on a channel and holds no lock (the commands never
# spill to disk, the only work it is sent).
KNOWN_THREADS = {"polars-ooc-clea"}
MAX_REQUEST = 1 << 20
# What the TLS context made before forking read (client/tls.py).
TLS_ENVIRONMENT = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def serve(path: str) -> int | None:
    """The server's loop; in a child, returns to run the command (the child's exit status is its own)."""
    os.environ.update(NO_BACKGROUND_THREADS)
    started_with = dict(os.environ)
    for module in PRELOAD:
        importlib.import_module(module)
    import duckdb

    duckdb.execute("SET threads = 1")  # the default connection's scheduler thread stopped (a child's own are its own)
    # what the imports put in the environment (a setdefault at import time): a fresh process has it too
    set_by_imports = {k: v for k, v in os.environ.items() if started_with.get(k) != v}
    from fitsync.client import tls

    tls.context()  # made once here (≈ 45 ms each): a child whose environment names other certificates makes its own
    threads = [Path(f"/proc/self/task/{t}/comm").read_text().strip() for t in os.listdir("/proc/self/task")]
    if others := [name for name in threads if name not in KNOWN_THREADS][1:]:  # one is this thread
        sys.exit(f"tests.command_forks: threads {others} after loading {PRELOAD}: forking would copy one of them")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    own: list[Any] = [listener]  # what a child must not keep open
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                os.unlink(path)  # and its folder (tests/processes.py made it for the socket alone)
                os.rmdir(os.path.dirname(path))
                return 0
            if key.data == "accept":
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    for item in own:
                        os.close(item) if isinstance(item, int) else item.close()
                    conn.close()
                    try:
                        return _child(request, fds, started_with, set_by_imports)
                    finally:  # a test's own program (-m, -c) too: Python's shutdown skips its collection (cli/entry.py)
                        gc.freeze()
                for fd in fds:
                    os.close(fd)
                conn.send(json.dumps({"pid": pid}).encode())
                pidfd = os.pidfd_open(pid)
                own.extend((conn, pidfd))
                selector.register(pidfd, selectors.EVENT_READ, (pid, pidfd, conn))
            else:
                pid, pidfd, conn = key.data
                selector.unregister(pidfd)
                _, status = os.waitpid(pid, 0)
                with_status = json.dumps({"status": os.waitstatus_to_exitcode(status), "wait_status": status}).encode()
                try:
                    conn.send(with_status)
                except OSError:  # the test stopped waiting (its timeout): nobody to tell
                    pass
                for item in (conn, pidfd):
                    own.remove(item)
                conn.close()
                os.close(pidfd)


def _child(
    request: dict[str, Any], fds: list[int], started_with: dict[str, str], set_by_imports: dict[str, str]
) -> None:
    """Become the command: its standard streams, folder, environment and arguments, then fitsync's own entry point
    (its SystemExit ends this process as it would `python -m fitsync.cli.main`)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**set_by_imports, **request["env"]})
    if any(os.environ.get(name) != started_with.get(name) for name in TLS_ENVIRONMENT):
        from fitsync.client import tls

        tls.context.cache_clear()
    args = request["args"]
    if args[:1] == ["-m"]:  # a test's own program: as `python -m MODULE ARGS…` runs it
        import runpy

        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        return None
    if args[:1] == ["-c"]:  # as `python -c SCRIPT ARGS…` runs it
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return None
    sys.argv = ["fitsync", *args]
    from fitsync.cli.entry import run
    from fitsync.cli.main import main

    run(main)  # what `python -m fitsync.cli.main` runs, its module loaded


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
