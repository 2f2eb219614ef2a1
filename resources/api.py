"""The Dagster resource the assets and the code location share: the service client (with the state store it
shares) and the warehouse (a file or a lake), both from the one settings model."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import dagster
from dagster import ConfigurableResource, EnvVar
from pydantic import Field, PrivateAttr, create_model

from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.warehouse.location import Warehouse

from .warehouse import warehouse_of

if TYPE_CHECKING:  # a class create_model makes at import is not one mypy can see
    FitsyncSettings = dagster.Config
else:
    # Every setting of the one model (client/config.py), generated from it: its name and description, as text the
    # way its FITSYNC_* variable spells it (Dagster reads variables into text fields: EnvVar), parsed and checked
    # by the model. Unset (None) falls back to FITSYNC_* and config.toml.
    FitsyncSettings = create_model(
        "FitsyncSettings",
        __base__=dagster.Config,
        __doc__="fitsync's settings (docs/configuration.md); unset ones come from FITSYNC_* or config.toml.",
        **{
            name: (str | None, Field(None, description=info.description, repr=info.annotation is not Secret))
            for name, info in Config.model_fields.items()
        },
    )


class FitsyncApi(ConfigurableResource):
    """The Fitness Activity Service as fitsync talks to it, with the settings it runs with."""

    settings: FitsyncSettings = FitsyncSettings()
    # How long an asset may wait for the rate budget before it stops and leaves the rest to the next run.
    max_wait_seconds: float = 900.0

    _client: FitsyncClient | None = PrivateAttr(default=None)

    @classmethod
    def from_environment(cls) -> FitsyncApi:
        """The code location's resource: each setting whose FITSYNC_* variable is set, as that variable (Dagster
        shows its name, never its value); the rest come from config.toml when a run starts."""
        named = {
            name: EnvVar(Config.variable(name)) for name in Config.model_fields if os.environ.get(Config.variable(name))
        }
        return cls(settings=FitsyncSettings(**named))

    @classmethod
    def for_config(cls, config: Config, max_wait_seconds: float = 900.0) -> FitsyncApi:
        """A resource that runs with exactly this Config (not whatever FITSYNC_* says in the run's process).

        The app's secret goes with the app's id; the token key and a state URL's password are not passed: the run's
        process reads them where this one did (FITSYNC_* or the home's config.toml), never from a resource's
        configuration."""
        text = config.as_text(secrets=False) | {"home": str(config.home)}
        if config.client_secret:
            text["client_secret"] = config.client_secret.reveal()
        return cls(settings=FitsyncSettings(**text), max_wait_seconds=max_wait_seconds)

    def config(self) -> Config:
        given: dict[str, Any] = {k: v for k, v in self.settings.model_dump().items() if v not in (None, "")}
        return Config.load(origin="the fitsync_api resource's settings", **given)

    def warehouse(self) -> Warehouse:
        """The warehouse the settings name (warehouse_url: a lake; else the file in the home)."""
        return warehouse_of(self.config())

    def client(self) -> FitsyncClient:
        if self._client is None:
            self._client = FitsyncClient(self.config())
        return self._client

    def teardown_after_execution(self, context: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
