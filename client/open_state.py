"""The state store the settings name: PostgreSQL when `state_url` names one, else the SQLite file in the home."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from fitsync.state.migrations import MIGRATIONS
from fitsync.state.store import StateStore

from . import stop_request
from .config_basics import ConfigError

if TYPE_CHECKING:
    from .config import Config

UNDEFINED_TABLE = "42P01"  # PostgreSQL's code for a table that does not exist


def _state_url(config: Config) -> str:
    url = config.state_url.reveal()
    if url and not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            "state_url (FITSYNC_STATE_URL) must be a postgresql://user:password@host/database address, "
            "or empty for the SQLite file in the home"
        )
    return url


def open_store(config: Config) -> StateStore:
    """The configured state store, its tables migrated; the home made private first."""
    url = _state_url(config)
    config.home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(config.home, 0o700)  # tokens' key, landed JSON, the warehouse: the owner's only
    if url:
        from fitsync.state.postgres import PostgresStateStore  # psycopg only where a server is used

        # a stop asked for (Ctrl-C) ends a wait for the server
        return PostgresStateStore(url, retry_seconds=config.state_retry_seconds, sleep=stop_request.sleep)
    return StateStore(config.state_path)


def open_store_for_reading(config: Config) -> StateStore | None:
    """The configured state store opened to look, creating nothing (no home, no file, no tables); None when there is
    no state yet (nothing was ever connected). A store an older fitsync wrote is upgraded first, as by any command."""
    url = _state_url(config)
    if url:
        from fitsync.state.postgres import PostgresStateStore

        server = PostgresStateStore(url, migrate=False, retry_seconds=config.state_retry_seconds)
        try:
            version = server.schema_version
        except server.errors as error:
            if getattr(error, "sqlstate", None) == UNDEFINED_TABLE:
                return None  # the server is there, fitsync's tables not yet
            raise
        return server if version == len(MIGRATIONS) else open_store(config)
    if not config.state_path.is_file():
        return None
    store = StateStore(config.state_path, read_only=True)
    return store if store.schema_version == len(MIGRATIONS) else open_store(config)
