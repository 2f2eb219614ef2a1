"""Starting a sandbox: open (and seed) the db, build the app, serve it with uvicorn — in the foreground or a thread."""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from . import store, world
from .app import build_app
from .state import SandboxState


@dataclass
class SeedOptions:
    seed: int = 42
    athletes: int = 3
    activities_per_athlete: int = 60
    anchor: dt.datetime | None = None


@dataclass
class ServerOptions:
    db: str = ":memory:"
    host: str = "127.0.0.1"
    port: int = 8700
    api_prefix: str = "/api/v3"
    auth_prefix: str = "/oauth"
    seed: SeedOptions = field(default_factory=SeedOptions)
    settings: dict[str, Any] = field(default_factory=dict)
    log_level: str = "warning"


def open_state(options: ServerOptions) -> SandboxState:
    """Open the db, seed an empty world, apply setting overrides and read (or create) the secrets."""
    conn = store.connect(options.db)
    if store.get_meta(conn, "seed") is None:
        anchor = options.seed.anchor or dt.datetime.now(dt.UTC).replace(microsecond=0)
        world.seed_world(
            conn,
            seed=options.seed.seed,
            athletes=options.seed.athletes,
            activities_per_athlete=options.seed.activities_per_athlete,
            anchor=anchor,
        )
    state = SandboxState(
        conn=conn,
        db_path=options.db,
        server_secret=store.read_or_create_secret(options.db, "server-secret"),
        console_key=store.read_or_create_secret(options.db, "console-key"),
        api_prefix=options.api_prefix.rstrip("/"),
        auth_prefix=options.auth_prefix.rstrip("/"),
    )
    if options.settings:
        state.update_settings(options.settings)
    return state


# Longer than any client keeps an idle connection (httpx: 5 s, uvicorn's own default was 5 s too): a client then never
# reuses a connection the server is closing just then, which fails the request with "connection reset by peer" (seen
# once in `fitsync demo` on a busy machine, after the sandbox connection had been idle through the sync).
KEEP_ALIVE_SECONDS = 65


def make_server(options: ServerOptions, state: SandboxState | None = None) -> tuple[uvicorn.Server, SandboxState]:
    state = state or open_state(options)
    config = uvicorn.Config(
        build_app(state),
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=2,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    return uvicorn.Server(config), state


class UvicornThread:
    """Any ASGI app on a loopback port (0: a free one) in a background thread, until stopped."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        self.host = host
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level=log_level,
                lifespan="on",
                access_log=False,
                timeout_graceful_shutdown=2,
                timeout_keep_alive=KEEP_ALIVE_SECONDS,
            )
        )
        self._thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)

    def start(self, timeout: float = 30.0) -> UvicornThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    @property
    def port(self) -> int:
        return self.server.servers[0].sockets[0].getsockname()[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> UvicornThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerThread(UvicornThread):
    """A sandbox on a free loopback port in a background thread: for tests, benchmarks and the demo."""

    def __init__(self, options: ServerOptions) -> None:
        self.state = open_state(options)
        self.options = options
        super().__init__(build_app(self.state), options.host, options.port or 0, options.log_level)

    @property
    def api_url(self) -> str:
        return self.base_url + self.state.api_prefix

    @property
    def console_key(self) -> str:
        return self.state.console_key

    def __enter__(self) -> ServerThread:
        self.start()
        return self
