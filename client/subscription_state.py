"""What fitsync remembers of the app's push subscription: its id, callback, verify token and callback path secret.

The callback path secret is the last segment of the callback address (`…/webhooks/<secret>`). Anyone can POST to a
public address, but only the service (and fitsync) know this one, so the receiver answers 404 everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from fitsync.state import app_state
from fitsync.state.store import Connection, StateStore

from .crypto import TokenCipher
from .secret import Secret

# The app_state keys of the subscription; the values the cipher encrypts are in crypto.ENCRYPTED_STATE.
KEYS = ("subscription_id", "callback_url", "verify_token", "callback_token")


@dataclass(frozen=True)
class Subscription:
    id: int
    callback_url: str


class SubscriptionState:
    # The values it encrypts are in crypto.ENCRYPTED_STATE: a change of key re-encrypts them (crypto.rotate).
    def __init__(self, store: StateStore, cipher: TokenCipher) -> None:
        self.store = store
        self.cipher = cipher

    def set_verify_token(self, token: str) -> None:
        self._put("verify_token", self.cipher.encrypt(token))

    def verify_token(self) -> Secret | None:
        blob = self._get("verify_token")
        return None if blob is None else self.cipher.decrypt(blob)

    def set_callback_token(self, token: str) -> None:
        self._put("callback_token", self.cipher.encrypt(token))

    def callback_token(self, conn: Connection | None = None) -> Secret | None:
        """The path secret events must arrive under. A subscription made before fitsync added one is served at
        its own address's last segment (the receiver warns that it is guessable)."""
        blob = self._get("callback_token", conn)
        if blob is not None:
            return self.cipher.decrypt(blob)
        current = self.current(conn)
        return None if current is None else Secret(current.callback_url.rstrip("/").rsplit("/", 1)[-1])

    def save(self, subscription_id: int, callback_url: str) -> None:
        """The address ends in the path secret: it is kept encrypted, like the secret itself."""
        self._put("subscription_id", str(subscription_id).encode())
        self._put("callback_url", self.cipher.encrypt(callback_url))

    def current(self, conn: Connection | None = None) -> Subscription | None:
        """The stored subscription; `conn` lets a hot caller (the receiver, per event) read it over its own open
        connection instead of opening new ones."""
        if conn is None:
            with self.store.reading() as conn:
                return self.current(conn)
        values = app_state.get_many(conn, ("subscription_id", "callback_url"))
        sub_id, url = values.get("subscription_id"), values.get("callback_url")
        return None if sub_id is None or url is None else Subscription(int(sub_id), self._address(url))

    def _address(self, stored: bytes) -> str:
        """The callback address as stored: encrypted, or in plain text by fitsync before issue 28 (until the next
        `fitsync webhooks subscribe` or `fitsync doctor` encrypts it)."""
        if stored.startswith((b"http://", b"https://")):
            return stored.decode()
        return self.cipher.decrypt(stored).reveal()

    def encrypt_stored_address(self) -> bool:
        """Encrypt a callback address stored in plain text by an older fitsync; True when there was one."""
        blob = self._get("callback_url")
        if blob is None or not blob.startswith((b"http://", b"https://")):
            return False
        self._put("callback_url", self.cipher.encrypt(blob.decode()))
        return True

    def forget(self) -> None:
        with self.store.transaction() as conn:
            app_state.delete(conn, KEYS)

    def _put(self, key: str, value: bytes) -> None:
        with self.store.transaction() as conn:
            self.cipher.require_current(conn)
            app_state.put(conn, key, value)

    def _get(self, key: str, conn: Connection | None = None) -> bytes | None:
        if conn is None:
            with self.store.reading() as conn:
                return self._get(key, conn)
        return app_state.get(conn, key)
