"""`fitsync doctor`: each thing a sync depends on, checked, with the fix when it fails.

No check spends the app's rate budget or changes data: the service is asked without a token (it
answers 401, which proves it is there), the authorization page is fetched as a browser would, tokens are
refreshed (as every sync does; a refresh costs no rate budget).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import yaml

from fitsync.client import tls
from fitsync.client.config_basics import CONFIG_FILE, ConfigError, demo_home_error, load_config
from fitsync.client.crypto import CipherError, MissingKey
from fitsync.client.errors import FitsyncError, OAuthError, ReauthorizationRequired
from fitsync.client.explain import REBUILD, explain
from fitsync.client.oauth import APP_CREDENTIALS_FIX, AUTH_ROOT_FIX, AUTH_URL_FIX, authorize_page
from fitsync.client.runtime import FitsyncClient
from fitsync.client.transport import DeadlineExceeded, ServiceUnresponsive
from fitsync.resources.warehouse import warehouse_of
from fitsync.state import health
from fitsync.state.migrations import MIGRATIONS
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse

if TYPE_CHECKING:
    from fitsync.client.config import Config


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def run(load: Callable[[], Config] = load_config) -> list[Check]:
    try:
        config = load()
    except ConfigError as error:
        return [Check("configuration", False, str(error), "correct the setting it names")]
    return list(_checks(config))


def _checks(config: Config) -> Iterator[Check]:
    home = config.home
    if not config.client_id and demo_home_error(home):  # nothing here to check against the real service
        yield Check(
            "configuration",
            False,
            f"{home} is the folder `fitsync demo` made: its sandbox ran only while the demo ran",
            "run `fitsync demo` again, or `fitsync init` with FITSYNC_HOME set to a folder of your own",
        )
        return
    yield Check(
        "configuration",
        bool(config.client_id and config.client_secret),
        f"home {home}, service {config.base_url}, app {config.client_id or 'not set'}",
        f"run `fitsync init` to write them to {home / CONFIG_FILE}, or set FITSYNC_CLIENT_ID and FITSYNC_CLIENT_SECRET",
    )
    yield from _modes(home)
    yield _reachable(config)
    yield (page := _authorize_page(config))
    state = home / "state.db"
    if state.exists() or config.state_url.reveal():
        # the token endpoint is the authorization server's: where it does not answer, each athlete's refresh would
        # only retry it (seconds of "retrying POST /oauth/token" apiece) to say the same
        yield from _guarded("state database", lambda: _state(config, state, refresh=page.ok))
        yield from _guarded("webhook callback", lambda: _callback(config))
    yield from _guarded("warehouse", lambda: _warehouse_checks(config))
    yield nightly(config)
    yield from dagster_instance(home, shared=bool(config.state_url.reveal()))


# The fix for an error a check met, by the error's kind (the first that matches): what to change, never a pointer to
# other checks, which may not have failed (the service checks ask without the app's credentials or tokens).
TOKEN_KEY_FIX = (
    "set FITSYNC_SECRET_KEY back to the passphrase the tokens were stored with (without one: restore the home's "
    "secret.key of then); to change keys, give the old one as FITSYNC_SECRET_KEY_PREVIOUS once; if it is lost, "
    "`fitsync connect` each athlete again"
)
TOKEN_ENDPOINT = "auth_url / FITSYNC_AUTH_URL (fitsync posts to its /oauth/token)"
FIXES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (MissingKey, "put secret.key back from a backup of FITSYNC_HOME (or the first host's copy), as said"),
    (CipherError, TOKEN_KEY_FIX),
    (OAuthError, f"{APP_CREDENTIALS_FIX}, and {TOKEN_ENDPOINT}"),
    ((httpx.HTTPError, ServiceUnresponsive, DeadlineExceeded), f"check the network and {TOKEN_ENDPOINT}"),
)
OTHERWISE = "correct what it names, then run `fitsync doctor` again"


def fix_for(error: BaseException) -> str:
    return next((fix for kinds, fix in FIXES if isinstance(error, kinds)), OTHERWISE)


def _guarded(name: str, checks: Callable[[], Iterator[Check]]) -> Iterator[Check]:
    """The checks, or one failed check saying why they could not be made: a damaged file is diagnosed, never the end
    of the diagnosis."""
    try:
        yield from checks()
    except Exception as error:  # noqa: BLE001 (whatever stopped it is the finding)
        yield Check(name, False, f"could not be checked: {explain(error)}", fix_for(error))


def _modes(home: Path) -> Iterator[Check]:
    if home.is_dir() and not os.access(home, os.W_OK | os.X_OK):  # a backup, a copy mounted read-only
        yield Check(
            "home writable",
            False,
            f"{home} is read-only here: reading commands work, `fitsync sync` cannot (it writes its state, locks and "
            "warehouse there)",
            "make it writable, or set FITSYNC_HOME to a copy you can write",
        )
    for path, wanted in (
        (home, 0o700),
        (home / CONFIG_FILE, 0o600),
        (home / "state.db", 0o600),
        (home / "warehouse.duckdb", 0o600),
    ):
        if path.exists():
            mode = stat.S_IMODE(path.stat().st_mode)
            yield Check(f"mode of {path.name or path}", not mode & 0o077, f"{mode:o}", f"chmod {wanted:o} {path}")


def _reachable(config: Config) -> Check:
    url = f"{config.base_url}/athlete"
    try:
        answer = httpx.get(url, timeout=10, verify=tls.context())
    except httpx.HTTPError as error:
        return Check(
            "service",
            False,
            f"{url}: {type(error).__name__} {error}",
            "check the network, or base_url / FITSYNC_BASE_URL (the API root, e.g. https://host/api/v3)",
        )
    ok = answer.status_code == 401  # no token sent: the API's own refusal proves the address
    return Check(
        "service",
        ok,
        f"{url} answers {answer.status_code} without a token",
        "" if ok else "base_url must be the API root (…/api/v3): this address is not the service's API",
    )


def _authorize_page(config: Config) -> Check:
    answer = authorize_page(config)
    if answer.status is None:
        return Check("authorization page", False, f"{answer.url}: {answer.error}", AUTH_URL_FIX)
    problem = answer.problem
    return Check(
        "authorization page",
        problem is None,
        f"{answer.url} answers {answer.status}",
        "" if problem is None else AUTH_ROOT_FIX,
    )


DAMAGED_STATE = (
    "move it aside (mv {path} {path}.damaged) and restore state.db from a backup; without one, "
    "`fitsync connect` each athlete again (the warehouse keeps their data)"
)


def _state(config: Config, path: Path, refresh: bool = True) -> Iterator[Check]:
    if config.state_url.reveal():
        yield from _state_server(config, refresh)
        return
    try:
        integrity, version, athletes = astuple(health.of_file(path))
    except sqlite3.Error as error:
        yield Check("state database", False, f"{path}: {error}", DAMAGED_STATE.format(path=path))
        return
    yield Check(
        "state database",
        integrity == "ok" and version <= len(MIGRATIONS),
        f"{path}: integrity {integrity}, schema {version} of {len(MIGRATIONS)}",
        DAMAGED_STATE.format(path=path) if integrity != "ok" else "upgrade fitsync: the state is newer",
    )
    yield from _athletes(config, athletes, refresh)


def _state_server(config: Config, refresh: bool = True) -> Iterator[Check]:
    """The state store on PostgreSQL: reachable, its schema known, its athletes' tokens refreshable."""
    from fitsync.state.postgres import PostgresStateStore

    store = PostgresStateStore(config.state_url.reveal(), migrate=False)
    try:
        _, version, athletes = astuple(health.of_server(store))
    except store.errors as error:
        yield Check(
            "state database",
            False,
            f"{store.describe()}: {type(error).__name__}",
            "check FITSYNC_STATE_URL and that the server is up; run `fitsync sync` once to create the tables",
        )
        return
    yield Check(
        "state database",
        version <= len(MIGRATIONS),
        f"{store.describe()}, schema {version} of {len(MIGRATIONS)}",
        "upgrade fitsync: the state is newer",
    )
    yield from _athletes(config, athletes, refresh)


def _athletes(config: Config, athletes: list[Any], refresh: bool = True) -> Iterator[Check]:
    # a refresh replaces the refresh token: where the state cannot be written, the new one would be lost with access
    saved = bool(config.state_url.reveal()) or all(
        os.access(path, os.W_OK) for path in (config.state_path, config.state_path.parent)
    )
    for athlete_id, status, _ in athletes:
        if status != "connected":
            yield Check(f"athlete {athlete_id}", False, status, f"run `fitsync connect` as athlete {athlete_id}")
        elif not refresh:
            yield Check(
                f"athlete {athlete_id}",
                False,
                "connected; token refresh not tried: auth_url failed the authorization page's check (above)",
                "correct auth_url / FITSYNC_AUTH_URL (or wait for it to answer), then run `fitsync doctor` again",
            )
        elif not saved:
            yield Check(
                f"athlete {athlete_id}",
                True,
                f"connected; token refresh not tried: {config.state_path} cannot be written here, and a refresh "
                "replaces the refresh token, which could then not be saved",
            )
        else:
            yield _refresh(config, athlete_id)


def _refresh(config: Config, athlete_id: int) -> Check:
    """The refresh every sync depends on, done now: a refused token shows here instead of in tonight's run.
    It costs no rate budget, and the rotated token is saved like any refresh."""
    name = f"athlete {athlete_id}"
    try:
        with FitsyncClient(config) as client:
            current = client.tokens.access_token(athlete_id)
            client.tokens.refresh(athlete_id, rejected=current)
            record = client.tokens.athlete(athlete_id)
    except ReauthorizationRequired:
        return Check(
            name,
            False,
            "the service refused the refresh token: access was revoked or replaced",
            f"run `fitsync connect` as athlete {athlete_id}",
        )
    except (FitsyncError, httpx.HTTPError) as error:
        return Check(name, False, f"token refresh failed: {error}", fix_for(error))
    expires_at = record.access_expires_at if record else None  # the refresh just stored it
    left = (expires_at - time.time()) / 60 if expires_at is not None else 0
    return Check(
        name,
        True,
        f"token refresh accepted, access token valid {left:.0f} more min, scopes {record.scopes if record else '?'}",
    )


def _callback(config: Config) -> Iterator[Check]:
    """The subscription's callback, asked as the service would (without a challenge: the receiver says 400)."""
    from fitsync.client.state_reader import StateReader
    from fitsync.webhooks.subscriptions import masked

    reader = StateReader.open(config)  # read-only: the check creates and migrates nothing
    subscription = reader.subscription() if reader else None
    if subscription is None or not subscription.callback_url:
        return
    shown = masked(subscription.callback_url)
    try:
        answer = httpx.get(subscription.callback_url, timeout=10, verify=tls.context())
    except httpx.HTTPError as error:
        yield Check(
            "webhook callback",
            False,
            f"{shown}: {type(error).__name__}",
            "start `fitsync webhooks serve` and make the address reachable from the service",
        )
        return
    ok = answer.status_code == 400  # the receiver at the secret path, refusing a GET without hub.* parameters
    yield Check(
        "webhook callback",
        ok,
        f"{shown}: the receiver answers (400 to a GET without the service's challenge, as it should)"
        if ok
        else f"{shown} answers {answer.status_code}",
        "" if ok else "the address does not reach `fitsync webhooks serve` (wrong proxy route or prefix?)",
    )


# DuckDB's words for a file that ends before a block it needs (a copy interrupted, a full disk).
SHORT_READ = "Could not read enough bytes"


def _warehouse(path: Path) -> Check:
    try:
        with db.reading(path, timeout=5) as conn:
            version = conn.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0]
            duckdb_version = conn.execute("SELECT version()").fetchall()[0][0]
            needed = _bytes_in_use(conn)
    except Exception as error:  # noqa: BLE001 (busy or damaged: either way the line says which)
        first = str(error).splitlines()[0]
        if SHORT_READ in first:  # its blocks end before the file does: cut short, not busy
            return Check("warehouse", False, f"{path}: truncated ({first})", REBUILD.format(path=path))
        return Check(
            "warehouse",
            False,
            f"{path}: {first}",
            f"if another session holds it, close that; else it is damaged: {REBUILD.format(path=path)}",
        )
    size = path.stat().st_size
    if size < needed:  # cut short (a copy interrupted, a full disk): queries of the missing blocks would fail
        return Check(
            "warehouse",
            False,
            f"{path}: {size:,} bytes, but the blocks in use end at byte {needed:,}: truncated",
            REBUILD.format(path=path),
        )
    latest = max(v for v, _, _ in db.migration_scripts())
    return Check(
        "warehouse",
        version is not None and version <= latest,
        f"schema {version} of {latest}, DuckDB {duckdb_version}",
        "upgrade fitsync: the warehouse is newer",
    )


# A DuckDB file starts with its headers: the main one and the two database headers, 4 KiB each; block n follows at
# HEADERS + n × block_size.
DUCKDB_HEADERS = 3 * 4096


def _bytes_in_use(conn: Any) -> int:
    """Where the blocks the warehouse uses end in its file: a healthy file is at least this long. Not total_blocks ×
    block_size: total_blocks counts free blocks too, and a checkpoint cuts free blocks off the file's end while the
    count read at the next open keeps them. The blocks in use: every persistent segment's (pragma_storage_info, with
    its additional blocks), the metadata blocks (pragma_metadata_info), and at least used_blocks of them
    (pragma_database_size, which counts the index blocks the other two do not name)."""
    block_size, used = conn.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchall()[0]
    tables = [
        (schema, name)
        for schema, name in conn.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND NOT temporary"
        ).fetchall()
    ]
    highest = -1
    for schema, name in tables:
        quoted = '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
        row = conn.execute(
            "SELECT max(greatest(block_id, list_max(additional_block_ids))) FROM pragma_storage_info(?) "
            "WHERE persistent",
            [quoted],
        ).fetchall()[0][0]
        highest = max(highest, row if row is not None else -1)
    meta = conn.execute("SELECT max(block_id) FROM pragma_metadata_info()").fetchall()[0][0]
    highest = max(highest, meta if meta is not None else -1)
    return DUCKDB_HEADERS + max(highest + 1, used) * block_size


def _warehouse_checks(config: Config) -> Iterator[Check]:
    """The file's checks where it exists, or the lake's."""
    warehouse = warehouse_of(config)
    if warehouse.is_lake:
        yield from _lake(warehouse)
    elif warehouse.path.exists():
        yield _warehouse(warehouse.path)


def _lake(warehouse: Warehouse) -> list[Check]:
    """The lake's catalog answers with a schema this fitsync knows, and its data folder is there to write to."""
    try:
        with db.reading(warehouse, timeout=5) as conn:
            has_schema = conn.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                "AND table_name = 'schema_migrations'"
            ).fetchall()[0][0]
            version = conn.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0] if has_schema else 0
            data_path = conn.execute(
                "SELECT options['data_path'] FROM duckdb_databases() WHERE database_name = current_database()"
            ).fetchall()[0][0]
    except db.LakeUnavailable as error:
        return [
            Check(
                "warehouse lake",
                False,
                str(error),
                "check warehouse_url (FITSYNC_WAREHOUSE_URL) and that its PostgreSQL database answers",
            )
        ]
    latest = max(v for v, _, _ in db.migration_scripts())
    checks = [
        Check(
            "warehouse lake",
            version is not None and version <= latest,
            f"{warehouse}: schema {version or 'not created yet'} of {latest}",
            "upgrade fitsync: the lake is newer",
        )
    ]
    folder = Path(data_path or warehouse.data_path)
    if data_path or warehouse.data_path:
        usable = folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
        checks.append(
            Check(
                "warehouse data path",
                usable or not folder.exists() and os.access(folder.parent, os.W_OK),
                f"{folder}{'' if folder.exists() else ' (created by the first load)'}",
                f"mount the shared folder at {folder} on this host, writable by this user",
            )
        )
    else:
        checks.append(
            Check("warehouse data path", False, "not set", "set warehouse_data_path (FITSYNC_WAREHOUSE_DATA_PATH)")
        )
    return checks


def nightly(config: Config) -> Check:
    """The schedule is read when Dagster loads the code location: a wrong one would stop the load, not a sync."""
    try:
        from fitsync.pipelines.jobs import build_nightly_sync  # builds the configured schedule as it loads

        build_nightly_sync(config.nightly_schedule, config.nightly_timezone)
    except ConfigError as error:
        return Check("nightly sync", False, str(error), "correct nightly_schedule")
    return Check("nightly sync", True, f'"{config.nightly_schedule}" in {config.nightly_timezone}')


# SQLAlchemy 2.1 reads a plain postgresql:// URL as psycopg 3, whose server-side parameters break dagster-postgres
# (`NOTIFY run_events, $1` fails as the first run is created): its URL must name the psycopg2 driver.
DAGSTER_URL_SCHEME = "postgresql+psycopg2"


def dagster_instance(home: Path, shared: bool = False) -> Iterator[Check]:
    """Dagster's storage on PostgreSQL (docs/deployment.md): its URL set, naming the driver dagster-postgres needs,
    and the server answering. Nothing to check for the default instance (SQLite files under its home); with the
    state store `shared` by hosts, a line says where that instance is, since no other host sees it."""
    path = Path(os.environ.get("DAGSTER_HOME") or home / "dagster") / "dagster.yaml"
    try:
        postgres = _dagster_postgres_storage(path)
    except yaml.YAMLError as error:
        yield Check("dagster instance", False, f"{path}: not valid YAML ({error})", "correct the file")
        return
    if postgres is None:
        if shared:
            yield Check(
                "dagster instance",
                True,
                f"runs and athletes' partitions in SQLite under {path.parent}, on this machine only; for several "
                "hosts set DAGSTER_HOME to an instance on PostgreSQL (docs/deployment.md)",
            )
        return
    if "postgres_url" not in postgres:
        return  # postgres_db fields: Dagster builds and checks that URL itself
    source = postgres["postgres_url"]
    variable = source.get("env") if isinstance(source, dict) else None
    yield _dagster_database(path, variable, os.environ.get(variable, "") if variable else str(source))


def _dagster_postgres_storage(path: Path) -> dict[str, Any] | None:
    """The `storage: postgres:` section of the instance's dagster.yaml; None without the file or that section (the
    default instance). A file that is not YAML raises yaml.YAMLError."""
    try:
        settings = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        return None
    postgres = (settings.get("storage") or {}).get("postgres") if isinstance(settings, dict) else None
    return postgres if isinstance(postgres, dict) else None


def _dagster_database(path: Path, variable: str | None, url: str) -> Check:
    """The instance's database URL (read from `variable`, or written in `path`): set, naming the psycopg2 driver, and
    its server answering."""
    if not url:
        return Check(
            "dagster instance",
            False,
            f"{path} reads its database URL from {variable}, which is not set",
            f"set {variable}={DAGSTER_URL_SCHEME}://user:password@host:5432/dagster for every Dagster "
            "process (webserver, daemon, code server) and for fitsync",
        )
    from fitsync.state.postgres import describe_url

    shown = describe_url(url)
    scheme = url.split("://", 1)[0]
    if scheme != DAGSTER_URL_SCHEME:
        return Check(
            "dagster instance",
            False,
            f"{shown}: dagster-postgres needs the psycopg2 driver; under "
            f'SQLAlchemy 2.1 "{scheme}://" selects another, and creating a run fails',
            f"write the URL as {DAGSTER_URL_SCHEME}://… (in {variable or path})",
        )
    return _dagster_server(url, shown, variable or path)


def _dagster_server(url: str, shown: str, source: str | Path) -> Check:
    """Whether the instance's PostgreSQL server answers (asked with psycopg, fitsync's driver, over the same address)."""
    try:
        import psycopg

        with psycopg.connect("postgresql://" + url.split("://", 1)[1], connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except ImportError:
        return Check("dagster instance", False, f"{shown}: psycopg is not installed", "pip install 'fitsync[postgres]'")
    except psycopg.Error as error:
        return Check(
            "dagster instance",
            False,
            f"{shown}: {type(error).__name__}",
            f"check {source} and that the server is up",
        )
    return Check("dagster instance", True, f"{shown} answers (Dagster's runs, schedules and sensors)")
