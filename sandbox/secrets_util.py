"""Random secrets, their digests and constant-time comparison: nothing secret is stored in clear."""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_secret(nbytes: int = 20) -> str:
    return secrets.token_hex(nbytes)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def matches(value: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(value), stored_digest)


def derive(server_secret: str, key: str) -> str:
    """Token value from its stored key: lets the server hand out the same token again without storing it."""
    return hmac.new(server_secret.encode(), key.encode(), hashlib.sha256).hexdigest()[:40]
