"""Connected athletes (`athletes`): who they are, their grant's status and tokens (encrypted by the caller: this
module stores bytes), and whether they have the subscription some calls need.

Token writes run inside the caller's write transaction: a refresh re-reads the stored token (`tokens`) and writes
the rotated one under the same lock (client/tokens.py).
"""

from __future__ import annotations

import json
import time
from typing import Any

from .store import Connection, StateStore

# What a record of an athlete shows (no tokens).
RECORD = "athlete_id, firstname, lastname, scopes, status, status_reason, access_expires_at"


def save_grant(
    conn: Connection,
    athlete_id: int,
    firstname: str | None,
    lastname: str | None,
    scopes: str,
    access_token: bytes,
    access_expires_at: int,
    refresh_token: bytes,
) -> None:
    """Store a code exchange's grant: a reconnect replaces the old grant (and its status) but keeps connected_at."""
    now = time.time()
    conn.execute(
        """INSERT INTO athletes (athlete_id, firstname, lastname, scopes, status, status_reason, access_token,
                                 access_expires_at, refresh_token, connected_at, granted_at, updated_at)
           VALUES (?, ?, ?, ?, 'connected', NULL, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (athlete_id) DO UPDATE SET firstname = excluded.firstname,
             lastname = excluded.lastname, scopes = excluded.scopes, status = 'connected',
             status_reason = NULL, access_token = excluded.access_token,
             access_expires_at = excluded.access_expires_at, refresh_token = excluded.refresh_token,
             granted_at = excluded.granted_at, updated_at = excluded.updated_at""",
        (athlete_id, firstname, lastname, scopes, access_token, access_expires_at, refresh_token, now, now, now),
    )


def record(store: StateStore, athlete_id: int) -> dict[str, Any] | None:
    """The athlete's RECORD columns by name, or None."""
    with store.reading() as conn:
        row = conn.execute(f"SELECT {RECORD} FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return None if row is None else dict(row)


def records(store: StateStore) -> list[dict[str, Any]]:
    with store.reading() as conn:
        rows = conn.execute(f"SELECT {RECORD} FROM athletes ORDER BY athlete_id").fetchall()
    return [dict(r) for r in rows]


def tokens(conn: Connection, athlete_id: int) -> Any:
    """The athlete's whole row (tokens, expiry, status), or None."""
    return conn.execute("SELECT * FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()


def save_tokens(
    conn: Connection, athlete_id: int, access_token: bytes, access_expires_at: int, refresh_token: bytes
) -> None:
    """A refresh's rotated tokens (inside the transaction that read the old ones)."""
    conn.execute(
        """UPDATE athletes SET access_token = ?, access_expires_at = ?, refresh_token = ?, updated_at = ?
           WHERE athlete_id = ?""",
        (access_token, access_expires_at, refresh_token, time.time(), athlete_id),
    )


def needs_reauth(conn: Connection, athlete_id: int, reason: str) -> None:
    conn.execute(
        "UPDATE athletes SET status = 'needs_reauth', status_reason = ?, updated_at = ? WHERE athlete_id = ?",
        (reason, time.time(), athlete_id),
    )


def deauthorized(conn: Connection, athlete_id: int, reason: str) -> None:
    """The athlete revoked access: no tokens, disconnected (every sync stops at once; the purge removes the data)."""
    conn.execute(
        "UPDATE athletes SET status = 'disconnected', access_token = NULL, refresh_token = NULL, "
        "status_reason = ?, updated_at = ? WHERE athlete_id = ?",
        (reason, time.time(), athlete_id),
    )


def disconnected(store: StateStore, before: float) -> set[int]:
    """Athletes who revoked access before `before` and are still here: their purge failed or was stopped (the
    webhook sensor asks for it again)."""
    with store.reading() as conn:
        rows = conn.execute(
            "SELECT athlete_id FROM athletes WHERE status = 'disconnected' AND updated_at < ?", (before,)
        ).fetchall()
    return {int(r[0]) for r in rows}


def forget(conn: Connection, athlete_id: int) -> None:
    """The athlete and their sync cursors (a disconnect; the purge after a deauthorization removes more)."""
    conn.execute("DELETE FROM athletes WHERE athlete_id = ?", (athlete_id,))
    conn.execute("DELETE FROM sync_cursors WHERE athlete_id = ?", (athlete_id,))


def status(conn: Connection, athlete_id: int) -> str | None:
    """connected, needs_reauth or disconnected; None for an athlete fitsync never had."""
    row = conn.execute("SELECT status FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return None if row is None else str(row[0])


def refused_at(conn: Connection, athlete_id: int) -> float | None:
    """When the athlete's refresh token was found refused (status needs_reauth), None while it is not."""
    row = conn.execute(
        "SELECT updated_at FROM athletes WHERE athlete_id = ? AND status = 'needs_reauth'", (athlete_id,)
    ).fetchone()
    return None if row is None else float(row[0])


def grant(conn: Connection, athlete_id: int) -> tuple[float, str] | None:
    """(when the current grant was given, status), or None."""
    row = conn.execute("SELECT granted_at, status FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return None if row is None else (float(row[0]), str(row[1]))


def not_disconnected(conn: Connection) -> set[int]:
    return {int(r[0]) for r in conn.execute("SELECT athlete_id FROM athletes WHERE status <> 'disconnected'")}


def token_states(conn: Connection) -> list[tuple[int, str, int | None]]:
    """(athlete id, status, access token expiry) of every athlete."""
    return [
        (int(r[0]), str(r[1]), r[2])
        for r in conn.execute("SELECT athlete_id, status, access_expires_at FROM athletes").fetchall()
    ]


def encrypted_tokens(conn: Connection) -> list[tuple[int, bytes | None, bytes | None]]:
    """(athlete id, access token, refresh token) of athletes holding any."""
    return [
        (int(r[0]), None if r[1] is None else bytes(r[1]), None if r[2] is None else bytes(r[2]))
        for r in conn.execute(
            "SELECT athlete_id, access_token, refresh_token FROM athletes "
            "WHERE access_token IS NOT NULL OR refresh_token IS NOT NULL"
        ).fetchall()
    ]


def any_refresh_token(conn: Connection) -> bytes | None:
    row = conn.execute("SELECT refresh_token FROM athletes WHERE refresh_token IS NOT NULL LIMIT 1").fetchone()
    return None if row is None else bytes(row[0])


def replace_tokens(conn: Connection, athlete_id: int, access_token: bytes | None, refresh_token: bytes | None) -> None:
    """Re-encrypted tokens (a key rotation); None keeps the stored one."""
    conn.execute(
        "UPDATE athletes SET access_token = COALESCE(?, access_token), "
        "refresh_token = COALESCE(?, refresh_token) WHERE athlete_id = ?",
        (access_token, refresh_token, athlete_id),
    )


def note_subscriber(conn: Connection, athlete_id: int, subscriber: bool) -> None:
    """What the profile's `premium` (or a 402) says about the athlete's subscription."""
    conn.execute("UPDATE athletes SET subscriber = ? WHERE athlete_id = ?", (int(subscriber), athlete_id))


def known_non_subscriber(store: StateStore, athlete_id: int) -> bool:
    """True only when the last profile (or a 402 since) said so: unknown means try, and learn from the answer."""
    with store.reading() as conn:
        row = conn.execute("SELECT subscriber FROM athletes WHERE athlete_id = ?", (athlete_id,)).fetchone()
    return row is not None and row["subscriber"] == 0


# The tables holding rows of one athlete: a deauthorization's purge empties them all.
ATHLETE_TABLES = ("athletes", "sync_cursors", "known_activities", "known_segments", "landing", "webhook_lifecycle")


def purge(conn: Connection, athlete_id: int) -> dict[str, int]:
    """Every row of the athlete in the store (tokens, cursors, queues, landed data, the webhook events about their
    activities, whose updates carry titles; a deauthorization's event stays, the record of why): table → rows
    removed."""
    removed = {
        table: conn.execute(f"DELETE FROM {table} WHERE athlete_id = ?", (athlete_id,)).rowcount
        for table in ATHLETE_TABLES
    }
    owner = f'"owner_id":{int(athlete_id)}'  # stored compact: a number member ends with , or }
    events = [
        (r[0],)
        for r in conn.execute(
            "SELECT id, payload FROM webhook_inbox WHERE payload LIKE ? OR payload LIKE ?",
            (f"%{owner},%", f"%{owner}}}%"),
        ).fetchall()
        if (event := json.loads(r[1])).get("owner_id") == athlete_id and event.get("object_type") != "athlete"
    ]
    conn.executemany("DELETE FROM webhook_inbox WHERE id = ?", events)
    removed["webhook_inbox"] = len(events)
    return removed
