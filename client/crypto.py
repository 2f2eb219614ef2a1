"""Tokens at rest are encrypted (Fernet): a copied state file alone does not give access to anyone's data."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.fernet import Fernet, InvalidToken

from .errors import FitsyncError
from .secret import Secret

if TYPE_CHECKING:
    from .state_store import StateStore

KEY_FILE = "secret.key"


class TokenCipher:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def for_home(cls, home: Path, secret_key: Secret) -> "TokenCipher":
        """Key from FITSYNC_SECRET_KEY (any passphrase) or a generated key file with mode 0600."""
        if secret_key:
            return cls(base64.urlsafe_b64encode(hashlib.sha256(secret_key.reveal().encode()).digest()))
        path = home / KEY_FILE
        home.mkdir(parents=True, exist_ok=True)
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
        return cls(path.read_bytes().strip())

    def encrypt(self, value: str) -> bytes:
        return self._fernet.encrypt(value.encode())

    def decrypt(self, blob: bytes) -> Secret:
        try:
            return Secret(self._fernet.decrypt(blob).decode())
        except InvalidToken:
            raise CipherError("stored tokens cannot be decrypted: FITSYNC_SECRET_KEY or the key file changed") from None

    def __repr__(self) -> str:
        return "TokenCipher(***)"


class CipherError(FitsyncError):
    pass


KEY_CHECK = "token_key_check"


def check_key(store: "StateStore", cipher: TokenCipher) -> None:
    """Refuse a key other than the one the store's tokens are encrypted with, before anything is written with it.

    The first process on a store records a value only its key decrypts; every later one must decrypt it. Without
    this, a host with a key file of its own beside a shared PostgreSQL store (or a state.db copied without its key)
    would encrypt the next rotated refresh token with a key no other host has: the token would be lost to them."""
    with store.reading() as conn:
        row = conn.execute("SELECT value FROM app_state WHERE key = ?", (KEY_CHECK,)).fetchone()
        # A store written before this check: a token it holds proves the key.
        proof = row if row is not None else conn.execute(
            "SELECT refresh_token FROM athletes WHERE refresh_token IS NOT NULL LIMIT 1").fetchone()
    try:
        if proof is not None:
            cipher.decrypt(bytes(proof[0]))
    except CipherError:
        raise CipherError(f"the tokens in {store.describe()} were encrypted with another key: FITSYNC_SECRET_KEY or "
                          f"the key file changed. Every host sharing a state database needs the same "
                          f"FITSYNC_SECRET_KEY (or a copy of the first host's {KEY_FILE})") from None
    if row is None:
        with store.transaction() as conn:
            conn.execute("INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (key) DO NOTHING", (KEY_CHECK, cipher.encrypt(KEY_CHECK), time.time()))
        check_key(store, cipher)  # another process may have recorded its key first
