"""What the commands need about configuration before any setting is read: the error, the file's name, the real
service's addresses. Kept apart from the settings model (`config.py`) because pydantic costs `fitsync --help` about
0.3 s to import; the model loads when a command first reads its settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Config

REAL_BASE_URL = "https://www.strava.com/api/v3"
REAL_AUTH_URL = "https://www.strava.com"
CONFIG_FILE = "config.toml"


class ConfigError(Exception):
    """A setting that cannot be used: one line naming the setting, where its value came from and what is allowed."""


def load_config(env: Mapping[str, str] | None = None, **overrides: Any) -> Config:
    """`Config.load(env, **overrides)`, importing the settings model (and pydantic) when a command first needs it."""
    from .config import Config

    return Config.load(env, **overrides)
