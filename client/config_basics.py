"""What the commands need about configuration before any setting is read: the error, the file's name, the real
service's addresses. Kept apart from the settings model (`config.py`) because pydantic costs `fitsync --help` about
0.3 s to import; the model loads when a command first reads its settings."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Config

REAL_BASE_URL = "https://www.strava.com/api/v3"
REAL_AUTH_URL = "https://www.strava.com"
CONFIG_FILE = "config.toml"
DEMO_MARKER = ".fitsync-demo"  # the file `fitsync demo` leaves in the folder it made (cli/demo.py)


class ConfigError(Exception):
    """A setting that cannot be used: one line naming the setting, where its value came from and what is allowed."""


def demo_home_error(home: Path) -> ConfigError | None:
    """The error for a command that needs the service, run in the folder `fitsync demo` made (None elsewhere): that
    folder's service, the sandbox, ran only while the demo did, and its settings were never written down; the real
    service's defaults would apply there otherwise, and each fix they suggest would lead away from the demo."""
    if not (home / DEMO_MARKER).exists():
        return None
    return ConfigError(
        f"{home} is the folder `fitsync demo` made: its service, the sandbox, ran only while the demo ran. Run "
        "`fitsync demo` again to see a sync, `fitsync status`, `fitsync query` or `fitsync report` to look at its "
        "warehouse, or `fitsync init` with FITSYNC_HOME set to a folder of your own for the real service"
    )


def load_config(env: Mapping[str, str] | None = None, **overrides: Any) -> Config:
    """`Config.load(env, **overrides)`, importing the settings model (and pydantic) when a command first needs it."""
    from .config import Config

    return Config.load(env, **overrides)
