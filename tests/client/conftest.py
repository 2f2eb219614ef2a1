"""Fixtures for the client tests: a private FITSYNC_HOME per test, a Config for the session sandbox (with its own
application, so its own rate budget), a client built from it, and a connected athlete."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.sandbox.server import ServerThread

from ..sandbox_harness import ALL_SCOPES, App, Harness, save_grant


@pytest.fixture
def fitsync_home(tmp_path: Path) -> Path:
    return tmp_path / "fitsync-home"


@pytest.fixture
def app(sb: Harness) -> App:
    """A fresh application: its own rate budget and its own push subscription."""
    return sb.new_app()


MakeConfig = Callable[..., Config]


@pytest.fixture
def make_config(
    sandbox_server: ServerThread, fitsync_home: Path, app: App, new_state_url: Callable[[], str]
) -> MakeConfig:
    """A Config for the session sandbox; windows as the sandbox's defaults, a short guard and quick retries; the
    state store on SQLite and on PostgreSQL (each test runs on both)."""
    state_url = new_state_url()  # one home per test here

    def make(**overrides: Any) -> Config:
        values: dict[str, Any] = dict(
            home=fitsync_home,
            base_url=sandbox_server.api_url,
            auth_url=sandbox_server.base_url,
            client_id=app.client_id,
            client_secret=Secret(app.client_secret),
            short_window=900,
            long_window=86400,
            boundary_guard=0.2,
            timeout=10.0,
            state_url=Secret(state_url),
        )
        values.update(overrides)
        return Config.load({}, **values)

    return make


@pytest.fixture
def config(make_config: MakeConfig) -> Config:
    return make_config()


@pytest.fixture
def client(config: Config) -> Iterator[FitsyncClient]:
    with FitsyncClient(config) as c:
        yield c


@dataclass
class Connected:
    client: FitsyncClient
    athlete_id: int
    app: App
    grant: dict[str, Any]  # the token endpoint's answer to the code exchange

    @property
    def config(self) -> Config:
        return self.client.config


def connect_athlete(
    sb: Harness, client: FitsyncClient, app: App, athlete_id: int, scopes: tuple[str, ...] = ALL_SCOPES
) -> Connected:
    """Consent as the athlete (sandbox browser), then exchange and store through the client."""
    body = save_grant(sb, client, app, athlete_id, scopes)
    return Connected(client, athlete_id, app, body)


@pytest.fixture
def connected(sb: Harness, client: FitsyncClient, app: App) -> Connected:
    """The session's premium athlete (index 0), connected with every scope; only read here, never written."""
    return connect_athlete(sb, client, app, sb.athlete_id())


@pytest.fixture
def own_athlete(sb: Harness) -> int:
    """A new athlete with no activities, for tests that write (the seeded world stays as other tests expect)."""
    response = sb.console.post("/athletes", json={"firstname": "Client", "lastname": "Test"})
    assert response.status_code == 200, response.text
    return response.json()["id"]
