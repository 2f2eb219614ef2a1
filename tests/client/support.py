"""Helpers for the client tests: environment for fitsync processes, request recording, a callback receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

import httpx

from fitsync.client import tls
from fitsync.client.config import Config
from fitsync.client.crypto import TokenCipher
from fitsync.client.open_state import open_store

FITSYNC = [sys.executable, "-m", "fitsync.cli.main"]
WORKER = str(Path(__file__).with_name("worker.py"))


def env_for(config: Config, **extra: str) -> dict[str, str]:
    """FITSYNC_* variables that make a fitsync process use `config` (nothing inherited from the caller)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FITSYNC_")}
    env.update(config.environment(), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def cli_env(config: Config) -> dict[str, str | None]:
    """The same, for click's CliRunner (which patches os.environ; None unsets a variable)."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("FITSYNC_")}
    env.update({k: v for k, v in env_for(config).items() if k.startswith("FITSYNC_")})
    return env


def stored_refresh_token(config: Config, athlete_id: int) -> str:
    """The refresh token a fitsync home holds for an athlete, decrypted."""
    store = open_store(config)
    cipher = TokenCipher.for_home(config.home, config.secret_key, store, config.secret_key_previous)
    with store.reading() as conn:
        row = conn.execute("SELECT refresh_token FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return cipher.decrypt(row["refresh_token"]).reveal()


def stored_access_token(config: Config, athlete_id: int) -> str:
    store = open_store(config)
    cipher = TokenCipher.for_home(config.home, config.secret_key, store, config.secret_key_previous)
    with store.reading() as conn:
        row = conn.execute("SELECT access_token FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return cipher.decrypt(row["access_token"]).reveal()


@dataclass
class Sent:
    method: str
    path: str
    status: int | None  # None: no answer (connection dropped or refused)
    bearer: str | None
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.time)  # when it was sent
    params: dict[str, str] = field(default_factory=dict)  # the query


class RequestLog:
    """Every request an httpx.Client sends, and the answer, recorded through its event hooks."""

    def __init__(self, http: httpx.Client, keep_token_bodies: bool = False) -> None:
        self.sent: list[Sent] = []
        self.keep_token_bodies = keep_token_bodies
        self.token_bodies: list[dict[str, Any]] = []
        http.event_hooks["request"].append(self._request)
        http.event_hooks["response"].append(self._response)

    def _request(self, request: httpx.Request) -> None:
        auth = request.headers.get("authorization", "")
        self.sent.append(
            Sent(
                request.method,
                request.url.path,
                None,
                auth.removeprefix("Bearer ") or None,
                params=dict(request.url.params),
            )
        )

    def _response(self, response: httpx.Response) -> None:
        entry = next(s for s in reversed(self.sent) if s.status is None)
        entry.headers = dict(response.headers)
        response.read()  # what the client does next anyway; a connection dropped mid-body leaves status None
        entry.status = response.status_code
        if self.keep_token_bodies and response.request.url.path.endswith("/oauth/token") and response.is_success:
            self.token_bodies.append(response.json())

    def calls(self, path_suffix: str = "", method: str | None = None) -> list[Sent]:
        return [s for s in self.sent if s.path.endswith(path_suffix) and (method is None or s.method == method)]

    def statuses(self) -> Counter[int | None]:
        return Counter(s.status for s in self.sent)

    def clear(self) -> None:
        self.sent.clear()


class LoopbackServer:
    """A threaded HTTP server on a free loopback port, serving while the `with` block runs."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class CallbackReceiver(LoopbackServer):
    """A webhook callback on loopback that answers any validation GET with its challenge and records it."""

    def __init__(self) -> None:
        self.validations: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
                owner.validations.append(query)
                body = json.dumps({"hub.challenge": query.get("hub.challenge", "")}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._serve(Handler)

    @property
    def url(self) -> str:
        return f"{self.origin}/webhook"


def start_workers(config: Config, jobs: list[dict[str, Any]]) -> list[subprocess.Popen[str]]:
    """Start one worker process per job; each waits for a line on stdin before it starts calling."""
    env = env_for(config)
    return [
        subprocess.Popen(
            [sys.executable, WORKER, json.dumps(job)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for job in jobs
    ]


def release_and_collect(procs: list[subprocess.Popen[str]], timeout: float) -> list[dict[str, Any]]:
    """Wait until every worker is ready, start them all at once, and return their reports."""
    for proc in procs:  # each prints "ready" once its client is built
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.strip() == "ready", f"worker failed to start: {line!r} {proc.stderr.read()}"  # type: ignore[union-attr]
    for proc in procs:
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
    reports = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"worker crashed ({proc.returncode}): {err[-3000:]}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return reports


# What a TokenProxy answers instead of the service's token answer: (status, content type, body), given the service's.
Rewrite = Callable[[int, bytes, bytes], "tuple[int, str, bytes]"]


class TokenProxy(LoopbackServer):
    """A token endpoint on loopback in front of the sandbox's, as a proxy or a changed service would be: each POST is
    passed on (the sandbox rotates the refresh token as it would), then `rewrite(status, form, answer)` says what the
    client gets. `upstream=False`: the request is never passed on. `issued` keeps each refresh token the sandbox
    issued."""

    def __init__(self, upstream: str) -> None:
        self.rewrite: Rewrite | None = None
        self.pass_on = True
        self.issued: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                form = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, kind, body = 200, "application/json", b"{}"
                if owner.pass_on:
                    answer = httpx.post(
                        upstream.rstrip("/") + self.path,
                        content=form,
                        headers={"Content-Type": "application/x-www-form-urlencoded"},
                        verify=tls.context(),
                    )
                    status, body = answer.status_code, answer.content
                    if status == 200:
                        owner.issued.append(json.loads(body)["refresh_token"])
                if owner.rewrite is not None:
                    status, kind, body = owner.rewrite(status, form, body)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._serve(Handler)

    @property
    def url(self) -> str:
        return self.origin
