"""Values of the app as a whole (`app_state`): the token key's salt and check value, the push subscription's id,
address and secrets, the webhook allowance. Values are bytes; what each key holds is its owner's."""

from __future__ import annotations

import time
from collections.abc import Iterable

from .store import Connection


def get(conn: Connection, key: str) -> bytes | None:
    row = conn.execute("SELECT value FROM app_state WHERE key = ?", (key,)).fetchone()
    return None if row is None else bytes(row[0])


def get_many(conn: Connection, keys: Iterable[str]) -> dict[str, bytes]:
    """The stored ones of `keys`."""
    wanted = list(keys)
    marks = ",".join("?" * len(wanted))
    return {
        str(r[0]): bytes(r[1])
        for r in conn.execute(f"SELECT key, value FROM app_state WHERE key IN ({marks})", wanted).fetchall()
    }


def put(conn: Connection, key: str, value: bytes) -> None:
    conn.execute(
        """INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at""",
        (key, value, time.time()),
    )


def put_if_absent(conn: Connection, key: str, value: bytes) -> bytes:
    """Store `value` unless the key has one; the value stored either way (under the write lock: two first writers
    agree)."""
    conn.execute(
        "INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
        (key, value, time.time()),
    )
    stored = get(conn, key)
    assert stored is not None  # inserted, or there already
    return stored


def delete(conn: Connection, keys: Iterable[str]) -> None:
    wanted = list(keys)
    conn.execute(f"DELETE FROM app_state WHERE key IN ({','.join('?' * len(wanted))})", wanted)
