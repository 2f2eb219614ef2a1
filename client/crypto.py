"""Tokens at rest are encrypted (Fernet): a copied state file alone does not give access to anyone's data."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from .secret import Secret

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


class CipherError(Exception):
    pass
