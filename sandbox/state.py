"""What one running sandbox server holds: its db connection, settings, secrets and background worker."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from . import store
from .settings import Settings

SETTINGS_REFRESH_S = 0.25


@dataclass
class SandboxState:
    conn: sqlite3.Connection
    db_path: str
    server_secret: str
    console_key: str
    api_prefix: str = "/api/v3"
    auth_prefix: str = "/oauth"
    worker: Any = None
    http: Any = None
    _settings: Settings = field(default_factory=Settings)
    _settings_read_at: float = 0.0

    @property
    def settings(self) -> Settings:
        """Settings live in the db so `fitsync sandbox` commands can change them while the server runs."""
        now = time.monotonic()
        if now - self._settings_read_at > SETTINGS_REFRESH_S:
            self._settings = store.load_settings(self.conn)
            self._settings_read_at = now
        return self._settings

    def update_settings(self, changes: dict[str, Any]) -> Settings:
        with store.transaction(self.conn):
            updated = store.load_settings(self.conn).updated(changes)
            store.save_settings(self.conn, updated)
        self._settings, self._settings_read_at = updated, time.monotonic()
        return updated

    def wake_worker(self) -> None:
        if self.worker is not None:
            self.worker.wake()
