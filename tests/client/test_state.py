"""Configuration, the state store (encryption at rest, file modes, migrations) and the operations' paging and
record checks.

| issue 3 | what | test |
|---|---|---|
| §1 Config | defaults < config.toml < FITSYNC_* environment | test_config_precedence, test_config_file_errors_are_clear |
| §2 State store | SQLite WAL, versioned migrations | test_migrations_are_idempotent, test_concurrent_first_open_migrates_once, test_newer_schema_is_refused |
| §4 Tokens | encrypted at rest; key from FITSYNC_SECRET_KEY or a 0600 key file; state file 0600 | test_tokens_encrypted_at_rest_and_files_private, test_secret_key_from_the_environment, test_concurrent_processes_generate_one_key |
| §7 Operations | paging at 200 per page, stops at a short page | test_paging_stops_at_a_short_page |
| §7 Operations | an odd record is kept with its raw JSON and flagged, never failing its page | test_odd_sport_type_is_flagged_not_failing_the_page, test_record_checks |
"""

from __future__ import annotations

import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from fitsync.client.config import REAL_AUTH_URL, REAL_BASE_URL, Config, ConfigError
from fitsync.client.crypto import CipherError, TokenCipher
from fitsync.client.open_state import open_store
from fitsync.client.records import record, records
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.state.migrations import MIGRATIONS
from fitsync.state.store import AthleteBusy, StateStore

from ..postgres_server import PostgresServer
from ..sandbox_harness import App, Harness
from .conftest import Connected, MakeConfig, connect_athlete
from .support import RequestLog


def test_config_precedence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    defaults = Config.load({"FITSYNC_HOME": str(home)})
    assert (defaults.base_url, defaults.auth_url, defaults.timeout, defaults.client_id) == (
        REAL_BASE_URL,
        REAL_AUTH_URL,
        30.0,
        None,
    )
    assert defaults.state_path == home / "state.db"

    (home / "config.toml").write_text(
        'base_url = "http://file.example/api/v3/"\nclient_id = 11\ntimeout = 5\n'
        'client_secret = "from-file"\nrefresh_margin = 120\n'
    )
    from_file = Config.load({"FITSYNC_HOME": str(home)})
    assert (from_file.base_url, from_file.client_id, from_file.timeout, from_file.refresh_margin) == (
        "http://file.example/api/v3",
        11,
        5.0,
        120,
    )
    assert from_file.client_secret == Secret("from-file") and from_file.auth_url == REAL_AUTH_URL

    env = {
        "FITSYNC_HOME": str(home),
        "FITSYNC_CLIENT_ID": "22",
        "FITSYNC_TIMEOUT": "7.5",
        "FITSYNC_CLIENT_SECRET": "from-env",
        "FITSYNC_RATE_SHORT_WINDOW": "2",
        "FITSYNC_BASE_URL": "",
    }
    from_env = Config.load(env)
    assert (from_env.client_id, from_env.timeout, from_env.short_window) == (22, 7.5, 2)
    assert from_env.client_secret == Secret("from-env")
    assert from_env.base_url == "http://file.example/api/v3"  # an empty variable does not erase the file's value
    assert from_env.refresh_margin == 120

    # explicit overrides (the CLI's and tests') win over everything, including where the home is
    other = tmp_path / "other"
    overridden = Config.load(env, home=other, timeout=1.0)
    assert overridden.home == other and overridden.timeout == 1.0
    assert overridden.client_id == 22 and overridden.base_url == REAL_BASE_URL  # no config.toml in `other`


def test_a_relative_home_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FITSYNC_HOME=fitsync-home works from where it is typed: Dagster's instance under it needs an absolute path (a
    relative one failed once the sync had started), and a run's process may start elsewhere."""
    monkeypatch.chdir(tmp_path)
    config = Config.load({"FITSYNC_HOME": "fitsync-home"})
    assert config.home == tmp_path / "fitsync-home" and config.home.is_absolute()
    assert Config.load(config.environment()).home == config.home


def test_a_configs_environment_loads_the_same_config(tmp_path: Path) -> None:
    """Config.environment is how a child process is given a Config: the same settings back, secrets revealed only
    there, an unset secret not passed as text."""
    config = Config.load(
        {},
        home=tmp_path / "home",
        client_id=5,
        client_secret=Secret("app secret"),
        timeout=7.5,
        state_url=Secret("postgresql://fitsync:pw@db/state"),
    )
    env = config.environment()
    assert Config.load(env) == config
    assert env["FITSYNC_STATE_URL"] == "postgresql://fitsync:pw@db/state" and "FITSYNC_SECRET_KEY" not in env
    assert not any("Secret(" in v for v in env.values())


def test_config_file_errors_are_clear(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('client_id = "not a number"\n')
    with pytest.raises(ConfigError, match="client_id has an invalid value 'not a number'"):
        Config.load({"FITSYNC_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_text('colour = "blue"\n')
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        Config.load({"FITSYNC_HOME": str(tmp_path)})
    with pytest.raises(ConfigError, match="FITSYNC_CLIENT_ID and FITSYNC_CLIENT_SECRET"):
        Config.load({"FITSYNC_HOME": str(tmp_path / "empty")}).require_app()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_tokens_encrypted_at_rest_and_files_private(sb: Harness, connected: Connected) -> None:
    client, home = connected.client, connected.config.home
    refreshed = client.tokens.refresh(connected.athlete_id, rejected=client.tokens.access_token(connected.athlete_id))
    client.athlete(connected.athlete_id).athlete()
    secrets = {connected.grant["access_token"], connected.grant["refresh_token"], refreshed.reveal()}
    with client.store.reading() as conn:
        row = conn.execute("SELECT refresh_token FROM athletes").fetchone()
    rotated = client.cipher.decrypt(row["refresh_token"]).reveal()
    assert rotated != connected.grant["refresh_token"]
    secrets.add(rotated)

    files = [p for p in home.iterdir() if p.is_file()]
    if client.store.dialect == "sqlite":
        assert {p.name for p in files} >= {"state.db", "secret.key"}
        blob = b"".join(p.read_bytes() for p in files if p.name != "secret.key")  # state.db, its WAL and shm
        assert mode(home / "state.db") == 0o600
    else:  # every value of every table of the database
        with client.store.reading() as conn:
            tables = [
                r[0]
                for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
            ]
            blob = b"".join(
                bytes(v) if isinstance(v, (bytes, memoryview)) else repr(v).encode()
                for t in tables
                for row in conn.execute(f"SELECT * FROM {t}")
                for v in row
            )
        assert len(tables) > 5 and blob
    for secret in secrets:
        assert secret.encode() not in blob
    assert b"Bearer" not in blob
    # only the owner can read the state, the key and the folder
    assert mode(home / "secret.key") == 0o600 and mode(home) == 0o700
    for p in files:
        assert mode(p) & 0o077 == 0, (p.name, oct(mode(p)))


def test_secret_key_from_the_environment(sb: Harness, make_config: MakeConfig, app: App) -> None:
    config = make_config(secret_key=Secret("correct horse battery staple"))
    with FitsyncClient(config) as client:
        c = connect_athlete(sb, client, app, sb.athlete_id())
    assert not (config.home / "secret.key").exists()  # the key comes from the environment, no key file
    with FitsyncClient(config) as client:  # another process with the same key reads the tokens
        assert client.athlete(c.athlete_id).athlete().id == c.athlete_id
    # Another key is refused as the client opens, before it could write a token the others cannot read.
    with pytest.raises(CipherError, match="FITSYNC_SECRET_KEY or the key file changed"):
        FitsyncClient(config.replace(secret_key=Secret("another key")))


def test_a_host_with_another_key_is_refused_before_it_writes_a_token(
    sb: Harness, make_config: MakeConfig, app: App, tmp_path: Path
) -> None:
    """Hosts sharing a PostgreSQL store (or a state.db copied without its key file) must share the key: one with a
    key of its own would encrypt the next rotated refresh token so that no other host could read it."""
    config = make_config()
    with FitsyncClient(config) as client:
        c = connect_athlete(sb, client, app, sb.athlete_id())
    other = make_config(home=tmp_path / "other-host")
    if not config.state_url:  # SQLite: the state file copied to another home, its key file left behind
        other.home.mkdir(mode=0o700)
        with sqlite3.connect(config.state_path) as source, sqlite3.connect(other.state_path) as copy:
            source.backup(copy)

    def tokens() -> list[tuple[object, ...]]:
        with open_store(other).reading() as conn:
            return [tuple(r) for r in conn.execute("SELECT athlete_id, access_token, refresh_token FROM athletes")]

    before = tokens()
    with pytest.raises(CipherError, match="every host sharing a state database needs the same key: there, a copy"):
        FitsyncClient(other)  # its key file is missing: none is made for the tokens it would not open
    with open_store(other).transaction() as conn:  # a store from before the check: its tokens prove the key
        conn.execute("DELETE FROM app_state WHERE key = 'token_key_check'")
    with pytest.raises(CipherError, match="need their key"):
        FitsyncClient(other)
    assert tokens() == before
    (other.home / "secret.key").write_bytes((config.home / "secret.key").read_bytes())  # the first host's key
    with FitsyncClient(other) as client:
        assert client.athlete(c.athlete_id).athlete().id == c.athlete_id


def test_concurrent_processes_generate_one_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    barrier = threading.Barrier(8)
    ciphers: list[TokenCipher] = []

    def open_cipher() -> None:
        barrier.wait()
        ciphers.append(TokenCipher.for_home(home, Secret("")))

    threads = [threading.Thread(target=open_cipher) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ciphers) == 8
    sealed = ciphers[0].encrypt("token")
    assert {c.decrypt(sealed).reveal() for c in ciphers} == {"token"}  # everyone uses the one key file
    assert [p.name for p in home.iterdir()] == ["secret.key"] and mode(home / "secret.key") == 0o600


def test_migrations_are_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = StateStore(path)
    assert store.schema_version == len(MIGRATIONS)
    with store.transaction() as conn:
        conn.execute("INSERT INTO sync_cursors (athlete_id, name, value, updated_at) VALUES (1, 'x', 'y', 0)")
    again = StateStore(path)
    assert again.schema_version == len(MIGRATIONS)
    with again.reading() as conn:
        assert conn.execute("SELECT value FROM sync_cursors").fetchall()[0][0] == "y"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_concurrent_first_open_migrates_once(tmp_path: Path) -> None:
    """Eight openers of a new file at once, 100 times: SQLite refuses a concurrent switch to WAL without waiting, so
    without the openers taking turns about 1 round in 25 failed."""
    for round_ in range(100):
        path = tmp_path / f"round-{round_}" / "state.db"
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def open_store() -> None:
            try:
                barrier.wait()
                StateStore(path)  # noqa: B023 - each round's threads end before the next round
            except BaseException as error:  # noqa: BLE001
                errors.append(error)  # noqa: B023

        threads = [threading.Thread(target=open_store) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], round_
        assert StateStore(path).schema_version == len(MIGRATIONS)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    with store.transaction() as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(RuntimeError, match="newer fitsync"):
        StateStore(tmp_path / "state.db")


def test_paging_stops_at_a_short_page(connected: Connected) -> None:
    api = connected.client.athlete(connected.athlete_id)
    log = RequestLog(connected.client.transport.http)
    everything = [a.id for a in api.activities()]
    assert [(s.path, s.params) for s in log.sent] == [("/api/v3/athlete/activities", {"page": "1", "per_page": "200"})]
    total = len(everything)
    assert 0 < total < 200 and len(set(everything)) == total

    for per_page in (7, total, total - 1):
        log.clear()
        assert [a.id for a in api.activities(per_page=per_page)] == everything
        # full pages, then the first short one ends it (an exact multiple costs one empty page)
        pages = total // per_page + 1
        assert [s.params for s in log.sent] == [
            {"page": str(n), "per_page": str(per_page)} for n in range(1, pages + 1)
        ]


def test_odd_sport_type_is_flagged_not_failing_the_page(
    sb: Harness, client: FitsyncClient, app: App, own_athlete: int
) -> None:
    for sport in ("Run", "Padel", "Ride"):  # Padel: a sport type fitsync does not know yet
        response = sb.console.post(f"/athletes/{own_athlete}/activities", json={"sport_type": sport})
        assert response.status_code == 200, response.text
    c = connect_athlete(sb, client, app, own_athlete)
    api = client.athlete(c.athlete_id)
    page = list(api.activities())
    assert sorted(a["sport_type"] for a in page) == ["Padel", "Ride", "Run"]
    odd = next(a for a in page if a["sport_type"] == "Padel")
    assert odd.flagged and odd.issues == ("unexpected sport_type='Padel'",)
    assert odd.raw["id"] == odd.id and "name" in odd.raw  # kept whole
    assert not any(a.flagged for a in page if a is not odd)
    detail = api.activity(odd.id)
    assert detail.flagged and detail.get("sport_type") == "Padel"


def test_record_checks() -> None:
    good = {
        "id": 1,
        "name": "Ride",
        "start_date": "2024-05-01T10:00:00Z",
        "start_date_local": "2024-05-01T12:00:00Z",
        "distance": 1000.0,
        "moving_time": 100,
        "elapsed_time": 120,
        "sport_type": "Ride",
        "utc_offset": 7200.0,
    }
    assert not record("activity", good).flagged
    missing = {k: v for k, v in good.items() if k != "distance"}
    odd = {**good, "elapsed_time": "120", "start_date": "yesterday", "moving_time": True}
    page = records("activity", [good, missing, odd, "not an object"])
    assert [r.issues for r in page] == [
        (),
        ("missing distance",),
        ("unexpected start_date='yesterday'", "unexpected moving_time=True", "unexpected elapsed_time='120'"),
        ("expected an object, got str",),
    ]
    assert page[2].raw == odd and page[2]["elapsed_time"] == "120"
    with pytest.raises(ValueError):  # a page that is not a list is the service misbehaving, not one odd record
        records("activity", {"message": "oops"})


def test_one_sync_per_athlete_and_the_lock_is_free_again_at_once(client: FitsyncClient) -> None:
    """The per-athlete sync lock of either backend: a second holder is refused, naming the first; another athlete is
    not held up; released, it can be taken again at once, again and again."""
    store = client.store
    with store.athlete_lock(7):
        with pytest.raises(AthleteBusy, match="athlete 7 is being synced by process"):
            with store.athlete_lock(7):
                pass
        with store.athlete_lock(8):  # another athlete is not held up
            pass
    for _ in range(50):
        with store.athlete_lock(7):
            pass


def test_a_postgresql_state_store_rides_out_a_short_outage_and_says_so(
    postgres_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The server restarts (a few seconds down): a read asked meanwhile waits, says why, and succeeds once it is back;
    an outage longer than state_retry_seconds fails with the server's reason, not a hang."""
    from fitsync.state.postgres import PostgresStateStore

    store = PostgresStateStore(postgres_server.new_database(), retry_seconds=30)
    postgres_server.pause()
    back = threading.Thread(target=lambda: (stop_waiting_for(caplog), postgres_server.start()))
    try:
        back.start()
        with store.reading() as conn:
            assert conn.execute("SELECT count(*) FROM athletes").fetchone()[0] == 0
    finally:
        back.join()
    assert any(
        "does not answer" in r.getMessage() and "trying again for up to" in r.getMessage() for r in caplog.records
    ), "the wait is said"
    impatient = PostgresStateStore(store.url, migrate=False, retry_seconds=0.5)
    postgres_server.pause()
    try:
        with pytest.raises(impatient.errors):
            impatient.connect()
    finally:
        postgres_server.start()


def stop_waiting_for(caplog: pytest.LogCaptureFixture) -> None:
    """Until the store has said it waits (the outage is then real, not over before the read began)."""
    from ..sandbox_harness import wait_until

    wait_until(lambda: any("does not answer" in r.getMessage() for r in caplog.records), 20, "the store to wait")
