"""The state store the settings name: PostgreSQL when `state_url` names one, else the SQLite file in the home."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from fitsync.state.store import StateStore

from . import stop_request
from .config_basics import ConfigError

if TYPE_CHECKING:
    from .config import Config


def open_store(config: Config) -> StateStore:
    """The configured state store, its tables migrated; the home made private first."""
    url = config.state_url.reveal()
    if url and not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            "state_url (FITSYNC_STATE_URL) must be a postgresql://user:password@host/database address, "
            "or empty for the SQLite file in the home"
        )
    config.home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(config.home, 0o700)  # tokens' key, landed JSON, the warehouse: the owner's only
    if url:
        from fitsync.state.postgres import PostgresStateStore  # psycopg only where a server is used

        # a stop asked for (Ctrl-C) ends a wait for the server
        return PostgresStateStore(url, retry_seconds=config.state_retry_seconds, sleep=stop_request.sleep)
    return StateStore(config.state_path)
