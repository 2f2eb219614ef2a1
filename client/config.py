"""fitsync's configuration: defaults < `FITSYNC_HOME/config.toml` < `FITSYNC_*` environment variables."""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .secret import Secret

REAL_BASE_URL = "https://www.strava.com/api/v3"
REAL_AUTH_URL = "https://www.strava.com"
CONFIG_FILE = "config.toml"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config:
    base_url: str = REAL_BASE_URL
    auth_url: str = REAL_AUTH_URL
    client_id: int | None = None
    client_secret: Secret = field(default_factory=lambda: Secret(""))
    home: Path = field(default_factory=lambda: Path.home() / ".fitsync")
    secret_key: Secret = field(default_factory=lambda: Secret(""))
    # The key before secret_key, only while the stored tokens are re-encrypted with the new one (a rotation).
    secret_key_previous: Secret = field(default_factory=lambda: Secret(""))
    deauthorize_path: str = "/oauth/deauthorize"
    timeout: float = 30.0
    # Rate windows of the service (natural boundaries); shortened only for tests against the sandbox.
    short_window: int = 900
    long_window: int = 86400
    boundary_guard: float = 1.0
    # Share of each 15-minute window that bulk work (backfills) leaves for interactive and webhook work.
    bulk_reserve: float = 0.1
    # Share of each 15-minute read window that webhook re-pulls may take (events are unsigned hints).
    webhook_share: float = 0.25
    refresh_margin: int = 600
    max_retries: int = 5
    # Bounds on one answer: its size once decoded (the largest real detail is a few MB) and the time to read it
    # whole (a server dripping a byte at a time never trips the per-read timeout).
    max_response_bytes: int = 64 * 1024 * 1024
    response_deadline: float = 120.0
    # Hours between re-fetches of what changes slowly (stats, athlete zones, starred segments, effort histories).
    slow_refresh_hours: float = 20.0
    # The state store: empty for the SQLite file in the home; postgresql://… for one database several hosts share.
    state_url: Secret = field(default_factory=lambda: Secret(""))
    # Seconds a caller keeps trying to reach a PostgreSQL state store that does not answer (a restart, a failover).
    state_retry_seconds: float = 30.0
    # When the nightly sync starts (cron, in nightly_timezone): after the service's daily limit resets at 00:00 UTC.
    nightly_schedule: str = "30 3 * * *"
    nightly_timezone: str = "UTC"

    @property
    def state_path(self) -> Path:
        return self.home / "state.db"

    def environment(self) -> dict[str, str]:
        """FITSYNC_* variables under which another fitsync process loads this same Config. Secrets go only when set,
        revealed (never as "Secret('***')"): the variables are how a child process is given them."""
        env = {"FITSYNC_HOME": str(self.home)}
        for name, (env_name, _) in FIELDS.items():
            value = getattr(self, name)
            if isinstance(value, Secret):
                if value:
                    env[env_name] = value.reveal()
            elif value is not None:
                env[env_name] = str(value)
        return env

    @property
    def token_url(self) -> str:
        return self.auth_url.rstrip("/") + "/oauth/token"

    def require_app(self) -> tuple[int, str]:
        if self.client_id is None or not self.client_secret:
            raise ConfigError(
                "no application credentials: set FITSYNC_CLIENT_ID and FITSYNC_CLIENT_SECRET "
                f"(or client_id / client_secret in {self.home / CONFIG_FILE})"
            )
        return self.client_id, self.client_secret.reveal()

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Config:
        env = os.environ if env is None else env
        # overrides win over the environment here too: the config file is read from the home that is used
        # absolute: the Dagster instance under it needs an absolute path, and a run's process may start elsewhere
        home = (
            Path(overrides.get("home") or env.get("FITSYNC_HOME") or Path.home() / ".fitsync").expanduser().absolute()
        )
        values: dict[str, Any] = {"home": home}
        file = home / CONFIG_FILE
        if file.exists():
            _warn_if_readable(file)
            with file.open("rb") as fh:
                for name, raw in tomllib.load(fh).items():
                    if name not in FIELDS:
                        raise ConfigError(f"{file}: unknown setting {name!r}")
                    values[name] = parse_field(name, raw, str(file))
        for name, (env_name, _) in FIELDS.items():
            if env.get(env_name) not in (None, ""):
                values[name] = parse_field(name, env[env_name], env_name)
        values.update(overrides, home=home)
        return cls(**values)


_WARNED: set[Path] = set()


def _warn_if_readable(file: Path) -> None:
    """The file may hold the client secret: say so (once per process) when other users can read it."""
    if file in _WARNED or not file.stat().st_mode & 0o077:
        return
    _WARNED.add(file)
    log.warning(
        "%s can be read by other users of this machine and may hold the client secret: run `chmod 600 %s`", file, file
    )


class ConfigError(Exception):
    pass


def _secret(raw: Any) -> Secret:
    return raw if isinstance(raw, Secret) else Secret(str(raw))


FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "base_url": ("FITSYNC_BASE_URL", lambda v: str(v).rstrip("/")),
    "auth_url": ("FITSYNC_AUTH_URL", lambda v: str(v).rstrip("/")),
    "client_id": ("FITSYNC_CLIENT_ID", int),
    "client_secret": ("FITSYNC_CLIENT_SECRET", _secret),
    "secret_key": ("FITSYNC_SECRET_KEY", _secret),
    "secret_key_previous": ("FITSYNC_SECRET_KEY_PREVIOUS", _secret),
    "deauthorize_path": ("FITSYNC_DEAUTHORIZE_PATH", str),
    "timeout": ("FITSYNC_TIMEOUT", float),
    "short_window": ("FITSYNC_RATE_SHORT_WINDOW", int),
    "long_window": ("FITSYNC_RATE_LONG_WINDOW", int),
    "boundary_guard": ("FITSYNC_RATE_BOUNDARY_GUARD", float),
    "bulk_reserve": ("FITSYNC_BULK_RESERVE", float),
    "webhook_share": ("FITSYNC_WEBHOOK_SHARE", float),
    "refresh_margin": ("FITSYNC_REFRESH_MARGIN", int),
    "max_retries": ("FITSYNC_MAX_RETRIES", int),
    "max_response_bytes": ("FITSYNC_MAX_RESPONSE_BYTES", int),
    "response_deadline": ("FITSYNC_RESPONSE_DEADLINE", float),
    "slow_refresh_hours": ("FITSYNC_SLOW_REFRESH_HOURS", float),
    "state_url": ("FITSYNC_STATE_URL", _secret),
    "state_retry_seconds": ("FITSYNC_STATE_RETRY_SECONDS", float),
    "nightly_schedule": ("FITSYNC_NIGHTLY_SCHEDULE", lambda v: " ".join(str(v).split())),
    "nightly_timezone": ("FITSYNC_NIGHTLY_TIMEZONE", lambda v: ZoneInfo(str(v)).key),
}


# What each setting is for: rendered into the commented config.toml `fitsync init` writes and into
# docs/configuration.md (a test keeps both in step with this table).
FIELD_DOCS: dict[str, str] = {
    "base_url": "The API root. The real service's is the default (moving to https://api-v3.strava.com during "
    "2027); the sandbox's is http://127.0.0.1:PORT/api/v3.",
    "auth_url": "The site that serves the authorization pages, without /oauth: fitsync adds /oauth/authorize, "
    "/oauth/token and deauthorize_path.",
    "client_id": "Your application's id at the service (its API settings page).",
    "client_secret": "Your application's secret. Keep this file mode 600, or set FITSYNC_CLIENT_SECRET instead.",
    "secret_key": "Passphrase that encrypts the stored tokens (the key is derived with scrypt and a random salt kept "
    "in the state store). Every host sharing a state store needs the same one. Empty: a key file is "
    "created in the home (mode 600).",
    "secret_key_previous": "Only to change secret_key: the passphrase before (or the contents of the key file "
    "before), whole, as one value. The first fitsync process that opens the state store "
    "re-encrypts every stored token with secret_key; then remove this setting.",
    "deauthorize_path": "Where a token is revoked: set /oauth/revoke once the service retires the old address.",
    "timeout": "Seconds to wait for each read from the service before retrying.",
    "short_window": "Length in seconds of the service's short rate window. Change only for a sandbox started "
    "with a shorter one.",
    "long_window": "Length in seconds of the service's daily rate window (sandbox testing only).",
    "boundary_guard": "Seconds around a window boundary when no request is sent: the service may count it in "
    "either window.",
    "bulk_reserve": "Share of each 15-minute window that backfills leave for webhook refreshes and interactive "
    "commands.",
    "webhook_share": "Share of each 15-minute read window that webhook-triggered re-pulls may take (events are "
    "unsigned hints); the rest waits for the nightly sync.",
    "refresh_margin": "Seconds before an access token expires when it is refreshed.",
    "max_retries": "Attempts for an answer that failed for a passing reason (5xx, network, 429 with a short wait).",
    "max_response_bytes": "Largest answer accepted, once decoded; a larger one fails that request.",
    "response_deadline": "Seconds within which a whole answer must arrive, however slowly it drips.",
    "slow_refresh_hours": "Hours between re-fetches of stats, heart-rate and power zones, starred segments and their "
    "effort histories; a sync in between reads the profile and the activity listing only. "
    "The nightly sync (24 h apart) and `fitsync sync --full` always refresh them; 0: every "
    "sync.",
    "state_url": "Where fitsync keeps tokens, the rate ledger, cursors and the webhook inbox. Empty: state.db in the "
    "home (SQLite, one machine). postgresql://user:password@host/db: one database that every host "
    "running fitsync shares (its password is a secret: prefer FITSYNC_STATE_URL).",
    "state_retry_seconds": "Seconds fitsync keeps trying a PostgreSQL state store that does not answer (a restart, a "
    "failover) before a command or step fails, saying so once it has waited a moment.",
    "nightly_schedule": "When Dagster's nightly sync of every athlete starts, as a cron expression (minute hour day "
    "month weekday) in nightly_timezone. The service's daily limit resets at 00:00 UTC: a start "
    "soon after it has the whole day's budget. Read when the code location loads.",
    "nightly_timezone": "Time zone of nightly_schedule (an IANA name such as Europe/Berlin); Sunday's run, in this "
    "zone, is the weekly full reconciliation.",
}


def parse_field(name: str, raw: Any, source: str) -> Any:
    if name not in FIELDS:
        raise ConfigError(f"{source}: unknown setting {name!r}")
    try:
        return FIELDS[name][1](raw)
    except (TypeError, ValueError, ZoneInfoNotFoundError):
        shown = "***" if FIELDS[name][1] is _secret else repr(raw)
        raise ConfigError(f"{source}: {name} has an invalid value {shown}") from None
