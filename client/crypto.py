"""Tokens at rest are encrypted (Fernet): a copied state file alone does not give access to anyone's data.

The key: FITSYNC_SECRET_KEY, a passphrase, stretched with scrypt and a random salt the state store keeps (app_state
`token_key_salt`, written once by the first process, so every host sharing the store derives the same key from the
same passphrase); without a passphrase, a random Fernet key in the home's key file (mode 0600).

Rotation (MultiFernet): values are encrypted with the current key and decrypted with any key they may still be
under: that of FITSYNC_SECRET_KEY_PREVIOUS (the passphrase before, or the contents of the key file before) and the
unsalted SHA-256 keys of the passphrases, which fitsync used before the salt. The first process that opens a store
whose values are not all under the current key re-encrypts them in one transaction (`check_key` → `rotate`); from
then on a process still on the old key is refused before it writes a token the others could not read.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from fitsync.state import app_state
from fitsync.state import athletes as athlete_rows

from .errors import FitsyncError
from .secret import Secret

if TYPE_CHECKING:
    from fitsync.state.store import Connection, StateStore

log = logging.getLogger(__name__)

KEY_FILE = "secret.key"
KEY_CHECK = "token_key_check"
SALT = "token_key_salt"
SALT_BYTES = 16
# scrypt's cost: about 0.08 s and 32 MiB per derivation on a 2-core machine; once per passphrase and process.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
# The app_state values encrypted with the token key (callback_url unless an older fitsync stored it in plain text).
ENCRYPTED_STATE = (KEY_CHECK, "verify_token", "callback_token", "callback_url")


class CipherError(FitsyncError):
    pass


class MissingKey(CipherError):
    """The key file is gone while the store holds tokens: none is made in its place."""


@functools.lru_cache(maxsize=8)
def derive_key(passphrase: Secret, salt: bytes) -> bytes:
    """The Fernet key of a passphrase: scrypt with the store's salt. Cached: derived once per process, not per use."""
    kdf = Scrypt(salt=salt, length=32, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return base64.urlsafe_b64encode(kdf.derive(passphrase.reveal().encode()))


def legacy_key(passphrase: Secret) -> bytes:
    """The key fitsync derived before the salt (unsalted SHA-256): opens a store written then, never encrypts."""
    return base64.urlsafe_b64encode(hashlib.sha256(passphrase.reveal().encode()).digest())


def fernet_key(text: Secret) -> bytes | None:
    """`text` as a Fernet key (the contents of a key file given as the previous key), or None."""
    key = text.reveal().strip().encode()
    try:
        Fernet(key)
    except (ValueError, binascii.Error):
        return None
    return key


class TokenCipher:
    """Encrypts with the current key; decrypts with it or with any of the `previous` keys."""

    def __init__(self, key: bytes, previous: Iterable[bytes] = ()) -> None:
        self._current = Fernet(key)
        self._any = MultiFernet([self._current, *(Fernet(k) for k in dict.fromkeys(previous) if k != key)])

    @classmethod
    def for_home(
        cls, home: Path, secret_key: Secret, store: StateStore | None = None, previous: Secret | None = None
    ) -> TokenCipher:
        """The key of FITSYNC_SECRET_KEY (a passphrase, with the salt of `store`) or of the key file (mode 0600, made by
        the first process), and the keys stored values may still be under: those of `previous`
        (FITSYNC_SECRET_KEY_PREVIOUS) and the passphrases' unsalted ones."""
        passphrases = [p for p in (secret_key, previous) if p]
        # with a previous passphrase, the values may be under it: the new key file is the one they move to
        file_key = None if secret_key else _key_file(home, None if previous else store)
        if not passphrases:
            assert file_key is not None
            return cls(file_key)
        if store is None:
            raise ValueError("a passphrase's key needs the state store: its salt is kept there")
        unsalted = [legacy_key(p) for p in passphrases]
        if previous and (raw := fernet_key(previous)) is not None:
            unsalted.append(raw)
        if file_key is not None:
            unsalted.insert(0, file_key)
        salt = _salt(store, cls(unsalted[0], unsalted[1:]))
        salted = [derive_key(p, salt) for p in passphrases]
        if file_key is None:
            return cls(salted[0], [*salted[1:], *unsalted])
        return cls(file_key, [*salted, *unsalted])

    def encrypt(self, value: str) -> bytes:
        return self._current.encrypt(value.encode())

    def decrypt(self, blob: bytes) -> Secret:
        try:
            return Secret(self._any.decrypt(blob).decode())
        except InvalidToken:
            raise CipherError("stored tokens cannot be decrypted: FITSYNC_SECRET_KEY or the key file changed") from None

    def is_current(self, blob: bytes) -> bool:
        """Whether `blob` is encrypted with the current key."""
        try:
            self._current.decrypt(blob)
        except InvalidToken:
            return False
        return True

    def opens(self, blob: bytes) -> bool:
        """Whether any known key decrypts `blob`."""
        try:
            self._any.decrypt(blob)
        except InvalidToken:
            return False
        return True

    def renewed(self, blob: bytes) -> bytes | None:
        """`blob` encrypted with the current key (the same value and time stamp); None when it is already."""
        if self.is_current(blob):
            return None
        try:
            return self._any.rotate(blob)
        except InvalidToken:
            raise CipherError("a stored value opens with none of the token keys") from None

    def require_current(self, conn: Connection) -> None:
        """In a write transaction, before a token is written: refuse when the store's key check value is no longer
        under this cipher's current key. Another process has rotated the key since this one opened the store: what
        this one would write, processes with the new key alone could not read."""
        check = _check_value(conn)
        if check is not None and not self.is_current(check):
            raise CipherError(
                "the stored tokens were re-encrypted with another key since this process started "
                "(FITSYNC_SECRET_KEY was changed): restart it with the current FITSYNC_SECRET_KEY"
            )

    def __repr__(self) -> str:
        return "TokenCipher(***)"


def _key_file(home: Path, store: StateStore | None = None) -> bytes:
    path = home / KEY_FILE
    home.mkdir(parents=True, exist_ok=True)
    if not path.exists() and store is not None and _stored_proof(store) is not None:
        # a new key would read none of them, and the next sync would say only "encrypted with another key"
        raise MissingKey(missing_key(path, store))
    if not path.exists():
        # Write a complete file under a private name, then link it into place: another process sees
        # either no key file or the whole key, and the first link wins.
        tmp = home / f".{KEY_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(Fernet.generate_key())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_bytes().strip()
    if fernet_key(Secret(key.decode(errors="replace"))) is None:  # emptied, cut short, or another file in its place
        raise CipherError(
            f"the token key file {path} is damaged (not a key fitsync wrote): put it back from a backup of "
            f"FITSYNC_HOME; without it the stored tokens cannot be read: move it aside (mv {path} {path}.damaged) "
            "and connect each athlete again with `fitsync connect`"
        )
    return key


def _stored_proof(store: StateStore) -> bytes | None:
    """A value some key encrypted (the key check value, or a token), or None: the store holds none yet."""
    with store.reading() as conn:
        return _proof(conn)


def _check_value(conn: Connection) -> bytes | None:
    return app_state.get(conn, KEY_CHECK)


def _proof(conn: Connection) -> bytes | None:
    """A value only the store's key decrypts: the key check value, or in a store written before the check, a token."""
    check = _check_value(conn)
    return check if check is not None else athlete_rows.any_refresh_token(conn)


def _salt(store: StateStore, unsalted: TokenCipher) -> bytes:
    """The store's salt for passphrases; the first process writes it (insert if absent, under the write lock: two
    first processes agree). A store without one was written with the passphrases' unsalted keys or a key file, which
    `unsalted` holds: a key none of which opens its values is refused before the salt is written."""
    with store.reading() as conn:
        proof = _proof(conn)  # read before the salt: a process that writes the salt re-encrypts only after that
        salt = app_state.get(conn, SALT)
    if salt is not None:
        return salt
    if proof is not None and not unsalted.opens(proof):
        raise wrong_key(store)
    with store.transaction() as conn:
        return app_state.put_if_absent(conn, SALT, os.urandom(SALT_BYTES))


def missing_key(path: Path, store: StateStore) -> str:
    """One diagnosis: the key file is gone while the store's tokens need a key (no new one is made for them)."""
    return (
        f"the token key file {path} is missing, and the tokens in {store.describe()} need their key: put the file "
        "back from a backup of FITSYNC_HOME (every host sharing a state database needs the same key: there, a copy "
        "of the first host's secret.key), or set FITSYNC_SECRET_KEY if they were stored under a passphrase; without "
        "the key, move the state database aside and connect each athlete again with `fitsync connect`"
    )


def unreadable_tokens(store: StateStore, cipher: TokenCipher | None, home: Path) -> str | None:
    """Why the stored tokens cannot be read with the key this home has (`cipher` None: none yet), or None; reads only:
    `fitsync athletes` and `status` say it, where they would show the athletes as connected."""
    if (proof := _stored_proof(store)) is None:
        return None
    if cipher is None:
        return missing_key(home / KEY_FILE, store)
    return None if cipher.opens(proof) else str(wrong_key(store))


def wrong_key(store: StateStore) -> CipherError:
    return CipherError(
        f"the tokens in {store.describe()} were encrypted with another key: FITSYNC_SECRET_KEY or "
        f"the key file changed. Every host sharing a state database needs the same "
        f"FITSYNC_SECRET_KEY (or a copy of the first host's {KEY_FILE}); to change FITSYNC_SECRET_KEY, "
        f"give the one before in FITSYNC_SECRET_KEY_PREVIOUS"
    )


def check_key(store: StateStore, cipher: TokenCipher) -> int:
    """Refuse a key other than the one the store's tokens are encrypted with, before anything is written with it;
    bring a store still under a previous key to the current one. Returns how many values were re-encrypted.

    The first process on a store records a value only its key decrypts; every later one must decrypt it. Without
    this, a host with a key file of its own beside a shared PostgreSQL store (or a state.db copied without its key)
    would encrypt the next rotated refresh token with a key no other host has: the token would be lost to them.
    A check value under one of the cipher's previous keys (FITSYNC_SECRET_KEY_PREVIOUS, or fitsync's key before the
    salt) means a rotation: `rotate` re-encrypts everything at once."""
    with store.reading() as conn:
        check = _check_value(conn)
        proof = check if check is not None else _proof(conn)
    if proof is not None and not cipher.opens(proof):
        raise wrong_key(store)
    if check is not None and cipher.is_current(check):
        return 0
    return rotate(store, cipher)


def rotate(store: StateStore, cipher: TokenCipher) -> int:
    """Re-encrypt every stored token and secret with the cipher's current key (MultiFernet.rotate) in one write
    transaction, and record the key check value under that key; returns how many values changed.

    Refused with nothing written when the store's key check value (or a token, in a store from before the check) opens
    with none of the cipher's keys. A value none of them opens is left as it was (it was unreadable already) and
    named in a warning. A token refresh holds the same write lock: none is lost between the read and the write."""
    changed, unreadable = 0, []
    with store.transaction() as conn:
        proof = _proof(conn)
        if proof is not None and not cipher.opens(proof):
            raise wrong_key(store)
        for athlete_id, *blobs in athlete_rows.encrypted_tokens(conn):
            values: list[bytes | None] = []
            for name, blob in zip(("access token", "refresh token"), blobs):
                new = None
                if blob is not None:
                    try:
                        new = cipher.renewed(blob)
                    except CipherError:
                        unreadable.append(f"athlete {athlete_id}'s {name}")
                values.append(new)
            if values != [None, None]:
                athlete_rows.replace_tokens(conn, athlete_id, *values)
                changed += sum(v is not None for v in values)
        for key in ENCRYPTED_STATE[1:]:
            blob = app_state.get(conn, key)
            if blob is None or blob.startswith((b"http://", b"https://")):
                continue  # absent, or an address an older fitsync stored in plain text
            try:
                new = cipher.renewed(blob)
            except CipherError:
                unreadable.append(key)
                continue
            if new is not None:
                app_state.put(conn, key, new)
                changed += 1
        check = _check_value(conn)
        if check is None or not cipher.is_current(check):
            app_state.put(conn, KEY_CHECK, cipher.encrypt(KEY_CHECK))
    if changed:
        log.info("re-encrypted %d stored tokens and secrets in %s with the current key", changed, store.describe())
    if unreadable:
        log.warning(
            "%s in %s open with none of the token keys and were left as they were: %s",
            len(unreadable),
            store.describe(),
            ", ".join(unreadable),
        )
    return changed
