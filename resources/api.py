"""The Dagster resource the assets and the code location share: the service client (with the state store it
shares); and where the warehouse file is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import ConfigurableResource
from pydantic import Field, PrivateAttr

from fitsync.client.config import Config, parse_field
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret


class FitsyncApi(ConfigurableResource):
    """The Fitness Activity Service as fitsync talks to it; empty fields fall back to FITSYNC_* / config.toml."""

    base_url: str = ""
    auth_url: str = ""
    client_id: str = ""
    client_secret: str = Field(default="", repr=False)
    home: str = ""
    # How long an asset may wait for the rate budget before it stops and leaves the rest to the next run.
    max_wait_seconds: float = 900.0
    # Any other Config field by name (rate windows, bulk reserve, retries…), as text: beats FITSYNC_* and config.toml.
    settings: dict[str, str] = {}

    _client: FitsyncClient | None = PrivateAttr(default=None)

    def config(self) -> Config:
        overrides: dict[str, Any] = {}  # Config.load's keyword overrides, one type per field
        for name in ("base_url", "auth_url", "home"):
            if getattr(self, name):
                overrides[name] = Path(getattr(self, name)) if name == "home" else getattr(self, name).rstrip("/")
        if self.client_id:
            overrides["client_id"] = int(self.client_id)
        if self.client_secret:
            overrides["client_secret"] = Secret(self.client_secret)
        for name, raw in self.settings.items():
            overrides[name] = parse_field(name, raw, "the fitsync_api resource's settings")
        return Config.load(**overrides)

    def client(self) -> FitsyncClient:
        if self._client is None:
            self._client = FitsyncClient(self.config())
        return self._client

    def teardown_after_execution(self, context: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def warehouse_path(home: str = "") -> str:
    return str((Path(home) if home else Config.load().home) / "warehouse.duckdb")
