"""The key of the tokens at rest: a passphrase stretched with scrypt and a salt the state store keeps, stores written
with fitsync's unsalted key before, and changing the passphrase (FITSYNC_SECRET_KEY_PREVIOUS, `crypto.rotate`).

Every test runs on a real SQLite file and on a real PostgreSQL database (the `new_state_url` fixture).

| what | test |
|---|---|
| a store of fitsync before the salt opens with the same passphrase; everything is re-encrypted with the new key | test_a_store_written_with_the_unsalted_key_opens_and_is_re_encrypted |
| a wrong passphrase is refused with a clear error, nothing written (not even the salt) | test_a_wrong_passphrase_is_refused_before_anything_is_written |
| passphrase A → B with A given as previous: every value re-encrypted, then B alone works and A is refused | test_changing_the_passphrase_re_encrypts_everything_then_the_new_one_alone_works |
| a process still on the old key after a rotation writes nothing | test_a_process_started_before_the_rotation_writes_no_token |
| key file → passphrase and passphrase → key file | test_moving_between_a_key_file_and_a_passphrase |
| first processes at once agree on one salt; a store migrated by several at once loses nothing | test_first_processes_at_once_agree_on_one_salt, test_processes_migrating_an_old_store_at_once_lose_nothing |
| `rotate` re-encrypts what an old process wrote, leaves an unreadable value as it was | test_rotate_re_encrypts_what_an_older_fitsync_wrote_and_leaves_the_unreadable |
| passphrases and tokens never in errors, reprs or logs | test_passphrases_and_tokens_never_appear_in_errors_reprs_or_logs |
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet, InvalidToken

from fitsync.client import crypto
from fitsync.client.config import Config
from fitsync.client.crypto import KEY_CHECK, SALT, CipherError, TokenCipher, check_key, derive_key, legacy_key, rotate
from fitsync.client.open_state import open_store
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.state.store import StateStore

from ..conftest import StateUrl

OLD = "old passphrase, with a comma and spaces"
NEW = "new-passphrase-9f2c1e"
WRONG = "not the passphrase"
TOKENS = {101: ("access-101-d1e5", "refresh-101-77aa"), 102: ("access-102-0b3c", "refresh-102-f00d")}
SUBSCRIPTION = {
    "verify_token": "verify-5e1d",
    "callback_token": "path-secret-8c2b",
    "callback_url": "https://fitsync.example/webhooks/path-secret-8c2b",
}


def config_for(home: Path, state_url: str, key: str = "", previous: str = "") -> Config:
    # the token endpoint is a closed port: a test that reached it would fail with another error than the one it expects
    return Config.load(
        {},
        home=home,
        state_url=Secret(state_url),
        secret_key=Secret(key),
        secret_key_previous=Secret(previous),
        client_id=1,
        client_secret=Secret("app-secret"),
        auth_url="http://127.0.0.1:9",
        base_url="http://127.0.0.1:9/api/v3",
    )


def host_home(tmp_path: Path, state_url: str, name: str) -> Path:
    """The home of a host sharing the state store: its own on PostgreSQL; on SQLite the store is the home's file, so
    processes sharing it share the home."""
    return tmp_path / name if state_url else tmp_path / "home"


def write_as_before(
    store: StateStore, cipher: TokenCipher, tokens: dict[int, tuple[str, str]] = TOKENS, check: bool = True
) -> None:
    """What fitsync wrote before the salt: tokens, the subscription's secrets and the key check value, all with
    `cipher`."""
    with store.transaction() as conn:
        for athlete_id, (access, refresh) in tokens.items():
            conn.execute(
                """INSERT INTO athletes (athlete_id, scopes, status, access_token, access_expires_at,
                                                  refresh_token, connected_at, granted_at, updated_at)
                            VALUES (?, 'read', 'connected', ?, ?, ?, 0, 0, 0)""",
                (athlete_id, cipher.encrypt(access), int(time.time()) + 86400, cipher.encrypt(refresh)),
            )
        values = {name: cipher.encrypt(value) for name, value in SUBSCRIPTION.items()}
        values["subscription_id"] = b"77"
        if check:
            values[KEY_CHECK] = cipher.encrypt(KEY_CHECK)
        for name, value in values.items():
            conn.execute("INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, 0)", (name, value))


def encrypted_values(store: StateStore) -> dict[str, bytes]:
    """Every value stored encrypted, by name."""
    with store.reading() as conn:
        found = {}
        for athlete_id, access, refresh in conn.execute(
            "SELECT athlete_id, access_token, refresh_token FROM athletes ORDER BY athlete_id"
        ):
            found[f"{athlete_id}.access"], found[f"{athlete_id}.refresh"] = bytes(access), bytes(refresh)
        for name, value in conn.execute(
            "SELECT key, value FROM app_state WHERE key IN (?, ?, ?, ?)", crypto.ENCRYPTED_STATE
        ):
            found[name] = bytes(value)
    return found


def snapshot(store: StateStore) -> list[tuple[Any, ...]]:
    with store.reading() as conn:
        rows = [("athletes", *r) for r in conn.execute("SELECT * FROM athletes ORDER BY athlete_id")]
        rows += [("app_state", *r) for r in conn.execute("SELECT * FROM app_state ORDER BY key")]
    return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]


def salt_of(store: StateStore) -> bytes | None:
    with store.reading() as conn:
        row = conn.execute("SELECT value FROM app_state WHERE key = ?", (SALT,)).fetchone()
    return None if row is None else bytes(row[0])


def opens(key: bytes, blob: bytes) -> bool:
    try:
        Fernet(key).decrypt(blob)
    except InvalidToken:
        return False
    return True


def assert_reads_everything(client: FitsyncClient) -> None:
    """The client reads every token and subscription secret as they were written."""
    for athlete_id, (access, refresh) in TOKENS.items():
        assert client.tokens.access_token(athlete_id).reveal() == access
        with client.store.reading() as conn:
            row = conn.execute("SELECT refresh_token FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
        assert client.cipher.decrypt(bytes(row[0])).reveal() == refresh
    state = client.subscription_state
    assert (state.verify_token(), state.callback_token()) == (
        Secret(SUBSCRIPTION["verify_token"]),
        Secret(SUBSCRIPTION["callback_token"]),
    )
    current = state.current()
    assert current is not None and (current.id, current.callback_url) == (77, SUBSCRIPTION["callback_url"])


def test_a_store_written_with_the_unsalted_key_opens_and_is_re_encrypted(
    tmp_path: Path, new_state_url: StateUrl
) -> None:
    config = config_for(tmp_path / "home", new_state_url(), key=OLD)
    store = open_store(config)
    write_as_before(store, TokenCipher(legacy_key(Secret(OLD))))
    before = encrypted_values(store)
    assert salt_of(store) is None and len(before) == 2 * len(TOKENS) + 4

    derive_key.cache_clear()
    with FitsyncClient(config) as client:
        assert_reads_everything(client)
    salt = salt_of(store)
    assert salt is not None and len(salt) == crypto.SALT_BYTES
    after = encrypted_values(store)
    assert after.keys() == before.keys()
    new_key, old_key = derive_key(Secret(OLD), salt), legacy_key(Secret(OLD))
    for name, blob in after.items():  # every value is under the scrypt key now, none under the unsalted one
        assert blob != before[name] and opens(new_key, blob) and not opens(old_key, blob), name

    with FitsyncClient(config) as client:  # the next process reads it all with no further change
        assert_reads_everything(client)
        assert check_key(client.store, client.cipher) == 0
    assert encrypted_values(store) == after and salt_of(store) == salt
    assert derive_key.cache_info().misses == 1  # derived once in this process, not per client or per token


@pytest.mark.parametrize("salted", [False, True], ids=["store-before-the-salt", "salted-store"])
def test_a_wrong_passphrase_is_refused_before_anything_is_written(
    tmp_path: Path, new_state_url: StateUrl, salted: bool
) -> None:
    config = config_for(tmp_path / "home", new_state_url(), key=OLD)
    store = open_store(config)
    write_as_before(store, TokenCipher(legacy_key(Secret(OLD))))
    if salted:
        FitsyncClient(config).close()
        assert salt_of(store) is not None
    before = snapshot(store)
    for wrong, said in (
        (config.replace(secret_key=Secret(WRONG)), "FITSYNC_SECRET_KEY_PREVIOUS"),
        (config.replace(secret_key=Secret(WRONG), secret_key_previous=Secret("also not it")), "_PREVIOUS"),
        (config.replace(secret_key=Secret("")), "set FITSYNC_SECRET_KEY if they were stored under a passphrase"),
    ):  # the last: no passphrase, and no key file (none is made for tokens it would not open)
        with pytest.raises(CipherError) as refused:
            FitsyncClient(wrong)
        message = str(refused.value)
        assert ("encrypted with another key" in message or "is missing" in message) and said in message, message
        assert snapshot(store) == before  # not a token, not a check value, not the salt
    assert (salt_of(store) is None) is not salted
    with FitsyncClient(config) as client:  # the right one still opens it
        assert_reads_everything(client)


def test_changing_the_passphrase_re_encrypts_everything_then_the_new_one_alone_works(
    tmp_path: Path, new_state_url: StateUrl, caplog: pytest.LogCaptureFixture
) -> None:
    state_url = new_state_url()
    home = tmp_path / "home"
    with FitsyncClient(config_for(home, state_url, key=OLD)) as client:
        write_as_before(client.store, client.cipher, check=False)
    store = open_store(config_for(home, state_url))
    under_old = encrypted_values(store)
    salt = salt_of(store)
    assert salt is not None and all(opens(derive_key(Secret(OLD), salt), b) for b in under_old.values())

    # The user's rotation, as the settings say it: the new passphrase, and the one before as previous.
    env = {
        "FITSYNC_HOME": str(home),
        "FITSYNC_STATE_URL": state_url,
        "FITSYNC_SECRET_KEY": NEW,
        "FITSYNC_SECRET_KEY_PREVIOUS": OLD,
    }
    rotating = Config.load(env)
    assert (rotating.secret_key, rotating.secret_key_previous) == (Secret(NEW), Secret(OLD))
    caplog.set_level(logging.INFO, logger="fitsync")
    with FitsyncClient(rotating) as client:
        assert_reads_everything(client)
    assert any(
        f"re-encrypted {2 * len(TOKENS) + 3} stored tokens and secrets" in r.getMessage() for r in caplog.records
    )
    under_new = encrypted_values(store)
    assert under_new.keys() == under_old.keys() and salt_of(store) == salt
    for name, blob in under_new.items():
        assert opens(derive_key(Secret(NEW), salt), blob) and not opens(derive_key(Secret(OLD), salt), blob), name

    new_alone = config_for(home, state_url, key=NEW)
    with FitsyncClient(new_alone) as client:
        assert_reads_everything(client)
        assert rotate(client.store, client.cipher) == 0  # nothing left under another key
    with pytest.raises(CipherError, match="another key"):
        FitsyncClient(config_for(home, state_url, key=OLD))
    assert encrypted_values(store) == under_new


def test_a_process_started_before_the_rotation_writes_no_token(tmp_path: Path, new_state_url: StateUrl) -> None:
    """A process still on the old passphrase after another one rotated the key: what it would write, processes with
    the new key alone could not read. It refuses before writing, and before spending a refresh token."""
    state_url = new_state_url()
    stale = FitsyncClient(config_for(host_home(tmp_path, state_url, "a"), state_url, key=OLD))
    try:
        write_as_before(stale.store, stale.cipher, check=False)
        with FitsyncClient(config_for(host_home(tmp_path, state_url, "b"), state_url, key=NEW, previous=OLD)):
            pass  # the rotation
        before = snapshot(stale.store)
        grant = {
            "athlete": {"id": 103},
            "access_token": "access-103",
            "refresh_token": "refresh-103",
            "expires_at": int(time.time()) + 3600,
        }
        for write in (
            lambda: stale.tokens.save_grant(grant, "read"),
            lambda: stale.tokens.refresh(101, rejected=Secret(TOKENS[101][0])),  # calls the service
            lambda: stale.subscription_state.set_verify_token("verify-new"),
        ):
            with pytest.raises(CipherError, match="re-encrypted with another key since this process started"):
                write()
        assert snapshot(stale.store) == before
    finally:
        stale.close()
    with FitsyncClient(config_for(host_home(tmp_path, state_url, "c"), state_url, key=NEW)) as client:
        assert_reads_everything(client)


def test_moving_between_a_key_file_and_a_passphrase(tmp_path: Path, new_state_url: StateUrl) -> None:
    state_url = new_state_url()
    home = tmp_path / "home"
    with FitsyncClient(config_for(home, state_url)) as client:  # a key file
        write_as_before(client.store, client.cipher, check=False)
    key_file = (home / crypto.KEY_FILE).read_text()
    with pytest.raises(CipherError):  # a passphrase alone does not open what the key file encrypted
        FitsyncClient(config_for(home, state_url, key=NEW))
    with FitsyncClient(config_for(home, state_url, key=NEW, previous=key_file)) as client:
        assert_reads_everything(client)
    (home / crypto.KEY_FILE).unlink()
    with FitsyncClient(config_for(home, state_url, key=NEW)) as client:
        assert_reads_everything(client)

    # and back: no passphrase (a new key file), the passphrase as the previous key
    with FitsyncClient(config_for(home, state_url, previous=NEW)) as client:
        assert_reads_everything(client)
    assert (home / crypto.KEY_FILE).read_text() != key_file
    with FitsyncClient(config_for(home, state_url)) as client:
        assert_reads_everything(client)
    with pytest.raises(CipherError):
        FitsyncClient(config_for(home, state_url, key=NEW))


def test_a_key_file_gone_is_said_so_and_not_replaced(tmp_path: Path, new_state_url: StateUrl) -> None:
    """A new key file would open none of the stored tokens: the first command said only "encrypted with another
    key", and the old key, put back from a backup, then met the new one in its place."""
    state_url = new_state_url()
    home = tmp_path / "home"
    with FitsyncClient(config_for(home, state_url)) as client:
        write_as_before(client.store, client.cipher, check=False)
    key_file = home / crypto.KEY_FILE
    key = key_file.read_bytes()
    key_file.unlink()
    with pytest.raises(
        CipherError, match=rf"the token key file {key_file} is missing, and the tokens in .* need their key"
    ):
        FitsyncClient(config_for(home, state_url))
    assert not key_file.exists()
    key_file.write_bytes(key)  # back from the backup: everything opens
    with FitsyncClient(config_for(home, state_url)) as client:
        assert_reads_everything(client)


def open_at_once(configs: list[Config]) -> list[TokenCipher]:
    """Open a client for each config in its own thread (its own connections), all released at once."""
    barrier = threading.Barrier(len(configs))
    ciphers: list[TokenCipher] = []
    errors: list[BaseException] = []

    def open_one(config: Config) -> None:
        try:
            barrier.wait()
            with FitsyncClient(config) as client:
                ciphers.append(client.cipher)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=open_one, args=(c,)) for c in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return ciphers


def test_first_processes_at_once_agree_on_one_salt(tmp_path: Path, new_state_url: StateUrl) -> None:
    """Hosts sharing a new store (each a home of its own) open it at the same moment: one salt, so one key."""
    state_url = new_state_url()
    configs = [config_for(host_home(tmp_path, state_url, f"host{n}"), state_url, key=NEW) for n in range(6)]
    open_store(configs[0])  # the tables; the salt is what the hosts race for
    derive_key.cache_clear()
    ciphers = open_at_once(configs)
    salt = salt_of(open_store(configs[0]))
    assert salt is not None and derive_key.cache_info().currsize == 1
    sealed = [c.encrypt(f"token {n}") for n, c in enumerate(ciphers)]
    for cipher in ciphers:  # each reads what every other one wrote
        assert [cipher.decrypt(s).reveal() for s in sealed] == [f"token {n}" for n in range(len(ciphers))]
    assert all(opens(derive_key(Secret(NEW), salt), s) for s in sealed)


def test_processes_migrating_an_old_store_at_once_lose_nothing(tmp_path: Path, new_state_url: StateUrl) -> None:
    state_url = new_state_url()
    configs = [config_for(host_home(tmp_path, state_url, f"host{n}"), state_url, key=OLD) for n in range(6)]
    store = open_store(configs[0])
    tokens = {athlete_id: (f"access-{athlete_id}", f"refresh-{athlete_id}") for athlete_id in range(1, 41)}
    write_as_before(store, TokenCipher(legacy_key(Secret(OLD))), tokens)
    open_at_once(configs)
    salt = salt_of(store)
    assert salt is not None
    key = Fernet(derive_key(Secret(OLD), salt))
    with store.reading() as conn:
        stored = {
            r[0]: (key.decrypt(bytes(r[1])).decode(), key.decrypt(bytes(r[2])).decode())
            for r in conn.execute("SELECT athlete_id, access_token, refresh_token FROM athletes")
        }
    assert stored == tokens


def test_rotate_re_encrypts_what_an_older_fitsync_wrote_and_leaves_the_unreadable(
    tmp_path: Path, new_state_url: StateUrl, caplog: pytest.LogCaptureFixture
) -> None:
    """After the migration, a process of the fitsync before the salt (unsalted key) still writes a refresh token:
    it is read, and `rotate` brings it under the current key. A value no known key opens stays as it was."""
    config = config_for(tmp_path / "home", new_state_url(), key=OLD)
    with FitsyncClient(config) as client:
        write_as_before(client.store, client.cipher, check=False)
        older = TokenCipher(legacy_key(Secret(OLD)))
        unreadable = Fernet(Fernet.generate_key()).encrypt(b"refresh-lost-4b1d")
        with client.store.transaction() as conn:
            conn.execute("UPDATE athletes SET refresh_token = ? WHERE athlete_id = 101", (older.encrypt("refresh-3"),))
            conn.execute(
                """INSERT INTO athletes (athlete_id, scopes, status, access_token, access_expires_at,
                                                  refresh_token, connected_at, granted_at, updated_at)
                            VALUES (104, 'read', 'connected', ?, 0, ?, 0, 0, 0)""",
                (client.cipher.encrypt("access-104"), unreadable),
            )
        with client.store.reading() as conn:
            row = conn.execute("SELECT refresh_token FROM athletes WHERE athlete_id = 101").fetchone()
        assert client.cipher.decrypt(bytes(row[0])).reveal() == "refresh-3"
        assert not client.cipher.is_current(bytes(row[0]))
        caplog.set_level(logging.INFO, logger="fitsync")
        assert rotate(client.store, client.cipher) == 1
        with client.store.reading() as conn:
            rows = dict(conn.execute("SELECT athlete_id, refresh_token FROM athletes").fetchall())
        assert (
            client.cipher.is_current(bytes(rows[101]))
            and client.cipher.decrypt(bytes(rows[101])).reveal() == "refresh-3"
        )
        assert bytes(rows[104]) == unreadable
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "athlete 104's refresh token" in warning and "left as they were" in warning
    assert "refresh-lost" not in warning


def test_passphrases_and_tokens_never_appear_in_errors_reprs_or_logs(
    tmp_path: Path, new_state_url: StateUrl, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    state_url = new_state_url()
    texts: list[str] = []

    def failure(action: Any) -> None:
        with pytest.raises(Exception) as caught:
            action()
        texts.extend([str(caught.value), repr(caught.value), repr(caught.value.args)])

    config = config_for(host_home(tmp_path, state_url, "a"), state_url, key=OLD)
    store = open_store(config)
    write_as_before(store, TokenCipher(legacy_key(Secret(OLD))))
    failure(lambda: FitsyncClient(config.replace(secret_key=Secret(WRONG))))  # refused before the salt
    stale = FitsyncClient(config)
    rotating = config.replace(
        home=host_home(tmp_path, state_url, "b"), secret_key=Secret(NEW), secret_key_previous=Secret(OLD)
    )
    with FitsyncClient(rotating) as client:
        texts += [repr(client.cipher), str(client.cipher), repr(rotating), str(rotating), repr(client)]
    failure(lambda: FitsyncClient(config))  # refused after the salt
    failure(
        lambda: stale.tokens.save_grant(
            {"athlete": {"id": 9}, "access_token": "access-9", "refresh_token": "refresh-9", "expires_at": 0}, "read"
        )
    )
    failure(lambda: stale.tokens.access_token(101))  # a token it cannot decrypt any more
    stale.close()
    texts += [r.getMessage() for r in caplog.records]
    assert len(texts) > 12 and any("another key" in t for t in texts)
    secrets = [OLD, NEW, WRONG, "also not it", *SUBSCRIPTION.values(), *(t for pair in TOKENS.values() for t in pair)]
    for secret in secrets:
        assert [t for t in texts if secret in t] == [], secret
