"""fitsync's settings, declared once: defaults < `FITSYNC_HOME/config.toml` < `FITSYNC_*` environment variables <
keyword arguments. Each field's description is its documentation: docs/configuration.md and the commented
config.toml that `fitsync init` writes are generated from it (`config_file.py`)."""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .config_basics import CONFIG_FILE, REAL_AUTH_URL, REAL_BASE_URL, ConfigError, demo_home_error
from .secret import Secret

__all__ = ["CONFIG_FILE", "REAL_AUTH_URL", "REAL_BASE_URL", "Config", "ConfigError"]

log = logging.getLogger(__name__)
PREFIX = "FITSYNC_"


def _time_zone(name: str) -> str:
    try:
        return ZoneInfo(name).key
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("it should be an IANA time zone name such as Europe/Berlin") from None


NIGHTLY = "30 3 * * *"  # nightly_schedule's default


def _cron(expression: str) -> str:
    """Five fields as Dagster's schedule takes them, checked when the file is read: a wrong one was said only by
    `fitsync doctor`, or by the code location failing to load."""
    expression = " ".join(expression.split())
    if expression == NIGHTLY:  # every command reads the settings: no parser to load for the default
        return expression
    from croniter import croniter

    fields = expression.split()
    if (len(fields) == 5 or expression.startswith("@")) and croniter.is_valid(expression):
        return expression
    for index, (name, allowed) in enumerate(CRON_FIELDS if len(fields) == 5 else ()):
        alone = " ".join(fields[index] if i == index else "*" for i in range(5))  # the field among stars
        if not croniter.is_valid(alone):
            raise ValueError(f"it should be a cron expression: its {name} field {fields[index]!r} is not {allowed}")
    raise ValueError('it should be a cron expression: five fields, minute hour day month weekday, e.g. "30 3 * * *"')


# The five fields of a cron expression, with what each allows (a list, range or step of these, or *).
CRON_FIELDS = (
    ("minute", "0–59"),
    ("hour", "0–23"),
    ("day", "1–31"),
    ("month", "1–12 or jan–dec"),
    ("weekday", "0–7 or sun–sat"),
)


def _folder(path: Path) -> Path:
    """A home that is there must be a folder: fitsync cannot make one where a file is."""
    if path.exists() and not path.is_dir():
        raise ValueError("it is a file, not a folder: it should name a folder (a new one, or fitsync's home)")
    return path


def _url(value: str) -> str:
    """An http(s) address with a host (`127.0.0.1:8700/api/v3`, without its scheme, would fail on every call)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in value):
        raise ValueError(
            "it should be an http(s) address with a host, such as https://www.strava.com/api/v3 or a sandbox's "
            "http://127.0.0.1:8700/api/v3"
        )
    _ = parts.port  # a port out of range raises ValueError: "Port out of range 0-65535"
    return value.rstrip("/")


Url = Annotated[str, AfterValidator(_url)]
Cron = Annotated[str, AfterValidator(_cron)]
TimeZone = Annotated[str, AfterValidator(_time_zone)]
# absolute: the Dagster instance under it needs an absolute path, and a run's process may start elsewhere
Home = Annotated[Path, AfterValidator(lambda p: _folder(p.expanduser().absolute()))]


class Config(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="forbid")
    # A setting's variable is FITSYNC_ + its name in capitals, or its json_schema_extra "variable" (older names).
    # Not a setting of the file: FITSYNC_HOME says where the file is.
    ENVIRONMENT_ONLY: ClassVar[frozenset[str]] = frozenset({"home"})

    base_url: Url = Field(
        REAL_BASE_URL,
        description="The API root. The real service's is the default (moving to https://api-v3.strava.com during "
        "2027); the sandbox's is http://127.0.0.1:PORT/api/v3.",
    )
    auth_url: Url = Field(
        REAL_AUTH_URL,
        description="The site that serves the authorization pages, without /oauth: fitsync adds /oauth/authorize, "
        "/oauth/token and deauthorize_path.",
    )
    client_id: int | None = Field(
        None, gt=0, description="Your application's id at the service (its API settings page)."
    )
    client_secret: Secret = Field(
        default_factory=Secret.empty,
        description="Your application's secret. Keep this file mode 600, or set FITSYNC_CLIENT_SECRET instead.",
    )
    home: Home = Field(
        default_factory=lambda: Path.home() / ".fitsync",
        description="Where fitsync keeps its state, the token key file, the warehouse and config.toml.",
    )
    secret_key: Secret = Field(
        default_factory=Secret.empty,
        description="Passphrase that encrypts the stored tokens (the key is derived with scrypt and a random salt "
        "kept in the state store). Every host sharing a state store needs the same one. Empty: a key file is "
        "created in the home (mode 600).",
    )
    secret_key_previous: Secret = Field(
        default_factory=Secret.empty,
        description="Only to change secret_key: the passphrase before (or the contents of the key file before), "
        "whole, as one value. The first fitsync process that opens the state store re-encrypts every stored token "
        "with secret_key; then remove this setting.",
    )
    deauthorize_path: str = Field(
        "/oauth/deauthorize",
        description="Where a token is revoked: set /oauth/revoke once the service retires the old address.",
    )
    timeout: float = Field(30.0, gt=0, description="Seconds to wait for each read from the service before retrying.")
    short_window: int = Field(
        900,
        gt=0,
        description="Length in seconds of the service's short rate window. Change only for a sandbox started "
        "with a shorter one.",
        json_schema_extra={"variable": "FITSYNC_RATE_SHORT_WINDOW"},
    )
    long_window: int = Field(
        86400,
        gt=0,
        description="Length in seconds of the service's daily rate window (sandbox testing only).",
        json_schema_extra={"variable": "FITSYNC_RATE_LONG_WINDOW"},
    )
    boundary_guard: float = Field(
        1.0,
        ge=0,
        description="Seconds around a window boundary when no request is sent: the service may count it in "
        "either window.",
        json_schema_extra={"variable": "FITSYNC_RATE_BOUNDARY_GUARD"},
    )
    bulk_reserve: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Share of each 15-minute window that backfills leave for webhook refreshes and interactive "
        "commands.",
    )
    webhook_share: float = Field(
        0.25,
        ge=0,
        le=1,
        description="Share of each 15-minute read window that webhook-triggered re-pulls may take (events are "
        "unsigned hints); the rest waits for the nightly sync.",
    )
    refresh_margin: int = Field(600, ge=0, description="Seconds before an access token expires when it is refreshed.")
    max_retries: int = Field(
        5,
        ge=1,
        description="Attempts for an answer that failed for a passing reason (5xx, network, 429 with a short wait).",
    )
    # The largest real detail is a few MB; a server dripping a byte at a time never trips the per-read timeout.
    max_response_bytes: int = Field(
        64 * 1024 * 1024, gt=0, description="Largest answer accepted, once decoded; a larger one fails that request."
    )
    response_deadline: float = Field(
        120.0, gt=0, description="Seconds within which a whole answer must arrive, however slowly it drips."
    )
    slow_refresh_hours: float = Field(
        20.0,
        ge=0,
        description="Hours between re-fetches of stats, heart-rate and power zones, starred segments and their "
        "effort histories; a sync in between reads the profile and the activity listing only. The nightly sync "
        "(24 h apart) and `fitsync sync --full` always refresh them; 0: every sync.",
    )
    state_url: Secret = Field(
        default_factory=Secret.empty,
        description="Where fitsync keeps tokens, the rate ledger, cursors and the webhook inbox. Empty: state.db in "
        "the home (SQLite, one machine). postgresql://user:password@host/db: one database that every host running "
        "fitsync shares (its password is a secret: prefer FITSYNC_STATE_URL).",
    )
    warehouse_url: Secret = Field(
        default_factory=Secret.empty,
        description="Where the warehouse is. Empty: warehouse.duckdb in the home (a DuckDB file: one host loads "
        "it). ducklake:postgres:<conninfo> (such as ducklake:postgres:host=db.example dbname=fitsync_lake "
        "user=fitsync): a DuckLake that every host loads and every analyst queries, its catalog in that PostgreSQL "
        "database and its data files in warehouse_data_path. A password is a secret: prefer FITSYNC_WAREHOUSE_URL, "
        "PGPASSWORD or ~/.pgpass.",
    )
    warehouse_data_path: str = Field(
        "",
        description="A lake's data files (Parquet): a folder every host reaches at this same path (a shared mount). "
        "Needed by the host that creates the lake; DuckLake records it in the catalog for the others.",
    )
    lake_keep_days: float = Field(
        30.0,
        ge=1,
        description="Days a lake (warehouse_url) keeps its old snapshots: `SELECT … AT (TIMESTAMP => …)` reads the "
        "warehouse as it was then, a purge or a deletion included. The daily lake_maintenance job merges small "
        "files, then forgets older snapshots and deletes the files only they read.",
    )
    state_retry_seconds: float = Field(
        30.0,
        ge=0,
        description="Seconds fitsync keeps trying a PostgreSQL state store that does not answer (a restart, a "
        "failover) before a command or step fails, saying so once it has waited a moment.",
    )
    nightly_schedule: Cron = Field(
        NIGHTLY,
        description="When Dagster's nightly sync of every athlete starts, as a cron expression (minute hour day "
        "month weekday) in nightly_timezone. The service's daily limit resets at 00:00 UTC: a start soon after it "
        "has the whole day's budget. Read when the code location loads.",
    )
    nightly_timezone: TimeZone = Field(
        "UTC",
        description="Time zone of nightly_schedule (an IANA name such as Europe/Berlin); Sunday's run, in this "
        "zone, is the weekly full reconciliation.",
    )
    streams: Literal["off", "recent", "all"] = Field(
        "recent",
        description="Which activities' per-second streams a sync fetches (one call each, after everything else and "
        "at the lowest priority; never for manual activities or those without GPS or a sensor): recent, those "
        "started in the last streams_days days; all, the whole history (≈ a day more per 1,000 activities under "
        "the real limits); off, none.",
    )
    streams_days: float = Field(
        90.0, gt=0, description="How far back streams = recent goes, in days (by the activity's start)."
    )

    def __init__(self, **values: Any) -> None:
        """The settings from every source, or ConfigError naming each bad value's setting and where it came from."""
        reading = _READING.get() or _Reading(os.environ)
        token = _READING.set(reading)
        reading.origins.update(dict.fromkeys(values, reading.arguments))
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise ConfigError("; ".join(reading.explain(e) for e in error.errors())) from None
        finally:
            _READING.reset(token)

    @classmethod
    def load(
        cls, env: Mapping[str, str] | None = None, *, origin: str = "keyword arguments", **overrides: Any
    ) -> Config:
        """The settings as a process with environment `env` (default: this one's) sees them; `overrides` win over
        everything, including where the home (and so config.toml) is. `origin` names them in an error."""
        token = _READING.set(_Reading(os.environ if env is None else env, arguments=origin))
        try:
            return cls(**overrides)
        finally:
            _READING.reset(token)

    def replace(self, **changes: Any) -> Config:
        """This Config with `changes`, validated; no source is read again."""
        token = _READING.set(_Reading({}, sources=False))
        try:
            return type(self)(**{**dict(self), **changes})
        finally:
            _READING.reset(token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then FITSYNC_* variables, then the home's config.toml (no .env, no secrets dir)."""
        reading = _READING.get() or _Reading(os.environ)
        if not reading.sources:
            return (init_settings,)
        given = getattr(init_settings, "init_kwargs", {}).get("home") or reading.environment.get(cls.variable("home"))
        home = Path(given or Path.home() / ".fitsync").expanduser().absolute()
        return init_settings, _Environment(settings_cls, reading), _File(settings_cls, reading, home / CONFIG_FILE)

    @classmethod
    def settings(cls) -> dict[str, FieldInfo]:
        """The settings config.toml may hold, in order, each with its description."""
        return {name: info for name, info in cls.model_fields.items() if name not in cls.ENVIRONMENT_ONLY}

    @classmethod
    def variable(cls, name: str) -> str:
        """The environment variable of setting `name`."""
        extra = cls.model_fields[name].json_schema_extra
        named = extra.get("variable") if isinstance(extra, dict) else None
        return str(named or PREFIX + name.upper())

    @classmethod
    def default(cls, name: str) -> Any:
        return cls.model_fields[name].get_default(call_default_factory=True)

    def environment(self) -> dict[str, str]:
        """FITSYNC_* variables under which another fitsync process loads this same Config. Secrets go only when set,
        revealed (never as "Secret('***')"): the variables are how a child process is given them."""
        env = {self.variable("home"): str(self.home)}
        for name, text in self.as_text().items():
            env[self.variable(name)] = text
        return env

    def as_text(self, secrets: bool = True) -> dict[str, str]:
        """Each set setting as its variable would spell it (secrets revealed, unless `secrets` is False)."""
        out = {}
        for name in self.settings():
            value = getattr(self, name)
            if isinstance(value, Secret):
                if value and secrets:
                    out[name] = value.reveal()
            elif value is not None:
                out[name] = str(value)
        return out

    @property
    def state_path(self) -> Path:
        return self.home / "state.db"

    @property
    def token_url(self) -> str:
        return self.auth_url.rstrip("/") + "/oauth/token"

    def require_app(self) -> tuple[int, str]:
        if self.client_id is None or not self.client_secret:
            if demo := demo_home_error(self.home):
                raise demo
            raise ConfigError(
                f"no application credentials: run `fitsync init` to write them to {self.home / CONFIG_FILE}, "
                "or set FITSYNC_CLIENT_ID and FITSYNC_CLIENT_SECRET"
            )
        return self.client_id, self.client_secret.reveal()


@dataclass
class _Reading:
    """One construction of a Config: the environment it reads, and where each value came from (for errors)."""

    environment: Mapping[str, str]
    arguments: str = "keyword arguments"
    sources: bool = True  # False: keyword arguments only (Config.replace)
    origins: dict[str, str] = field(default_factory=dict)

    def found(self, values: dict[str, Any], origin: str | None = None) -> dict[str, Any]:
        """`values` of one source (`origin`: a file; None: each value's variable), noted as where they came from."""
        for name in values:
            # sources are read highest first: the first to give a value is the one that counts
            self.origins.setdefault(name, origin or Config.variable(name))
        return values

    def explain(self, error: Mapping[str, Any]) -> str:
        name = str(error["loc"][0]) if error["loc"] else "?"
        origin = self.origins.get(name, "default")
        if error["type"] == "extra_forbidden":
            return f"{origin}: unknown setting {name!r}"
        from .config_file import allowed, line_of

        spec = Config.model_fields.get(name)
        secret = getattr(spec, "annotation", None) is Secret
        shown = "***" if secret else repr(error["input"])  # a secret's value is never shown
        said = str(error["msg"]).removeprefix("Value error, ").replace("Input should", "it should", 1)
        if spec is not None and error["type"] in BOUND_ERRORS:  # the whole range, not only a bound it broke
            said += f" (allowed: {allowed(spec.annotation, spec.metadata)})"
        if origin.endswith(CONFIG_FILE) and (line := line_of(Path(origin), name)):
            origin = f"{origin}, line {line}"
        return f"{origin}: {name} has an invalid value {shown}: {said}"


# pydantic's error types for a value outside a field's bounds, or not a number at all: said with what is allowed.
BOUND_ERRORS = (
    *("greater_than", "greater_than_equal", "less_than", "less_than_equal"),
    *("int_parsing", "float_parsing", "int_type", "float_type", "int_from_float", "finite_number"),
)


_READING: ContextVar[_Reading | None] = ContextVar("fitsync_config_reading", default=None)


class _Environment(PydanticBaseSettingsSource):
    """FITSYNC_* variables of the environment being read; an empty one counts as unset."""

    def __init__(self, settings_cls: type[BaseSettings], reading: _Reading) -> None:
        super().__init__(settings_cls)
        self.reading = reading

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ reads every variable at once

    def __call__(self) -> dict[str, Any]:
        env = self.reading.environment
        return self.reading.found({name: env[v] for name in Config.model_fields if env.get(v := Config.variable(name))})


class _File(PydanticBaseSettingsSource):
    """The home's config.toml, when there is one; a key that is no setting is an error naming the file."""

    def __init__(self, settings_cls: type[BaseSettings], reading: _Reading, path: Path) -> None:
        super().__init__(settings_cls)
        self.reading = reading
        self.path = path

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ reads the whole file

    def __call__(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        _warn_if_readable(self.path)
        try:
            with self.path.open("rb") as fh:
                values = tomllib.load(fh)
        except tomllib.TOMLDecodeError as error:
            said = str(error)
            if said.endswith("(at end of document)"):  # an unfinished last line: name it, as for any other line
                lines = self.path.read_text(errors="replace").rstrip("\n").count("\n") + 1
                said = said.replace("(at end of document)", f"(at the end of line {lines}, the last)")
            raise ConfigError(f"{self.path}: not valid TOML ({said})") from None
        for name in values:
            if name not in Config.settings():
                from .config_file import unknown_setting

                raise ConfigError(unknown_setting(self.path, name, list(Config.settings())))
        return self.reading.found(values, str(self.path))


# FITSYNC_* variables that are no setting and yet mean something: the token key (client/crypto.py), tracebacks.
OTHER_VARIABLES = frozenset({"FITSYNC_SECRET_KEY", "FITSYNC_SECRET_KEY_PREVIOUS", "FITSYNC_DEBUG"})
OTHER_PREFIXES = ("FITSYNC_TEST_", "FITSYNC_BENCH_")  # the test suite's and the benchmarks' own


def stray_variables(env: Mapping[str, str]) -> list[str]:
    """A line for each FITSYNC_* variable of `env` that fitsync does not read (a typo, `FITSYNC_TIMOUT`, would
    otherwise be ignored without a word), with the closest one it reads."""
    known = sorted({Config.variable(name) for name in Config.model_fields} | OTHER_VARIABLES)
    lines = []
    for name in sorted(env):
        if name.startswith(PREFIX) and name not in known and not name.startswith(OTHER_PREFIXES):
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]}?" if close else "docs/configuration.md lists the variables"
            lines.append(f"{name} is set, but fitsync reads no such variable (ignored): {hint}")
    return lines


def documented() -> Iterator[tuple[str, str, Any, str]]:
    """(setting, variable, default, description) of every setting, in order: what the docs and `fitsync init` show."""
    for name, info in Config.settings().items():
        yield name, Config.variable(name), Config.default(name), info.description or ""


_WARNED: set[Path] = set()


def _warn_if_readable(file: Path) -> None:
    """The file may hold the client secret: say so (once per process) when other users can read it."""
    if file in _WARNED or not file.stat().st_mode & 0o077:
        return
    _WARNED.add(file)
    log.warning(
        "%s can be read by other users of this machine and may hold the client secret: run `chmod 600 %s`", file, file
    )
