"""Authorization codes, access and refresh tokens: issue, rotate, look up and revoke (spec §3.2, §5)."""

from __future__ import annotations

import secrets
import sqlite3
import time
from dataclasses import dataclass

from . import store
from .apps import App
from .faults import bad_request, invalid_token
from .secrets_util import derive, digest, new_secret
from .settings import Settings


@dataclass(frozen=True)
class TokenGrant:
    """What an access token stands for: an athlete's consent to one app, with its scopes."""

    app_id: int
    athlete_id: int
    scope: str
    family_id: int
    expires_at: float


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    access_expires_at: float
    refresh_token: str
    athlete_id: int
    scope: str


def issue_code(
    conn: sqlite3.Connection, app: App, athlete_id: int, redirect_uri: str, scope: str, settings: Settings
) -> str:
    code = new_secret()
    conn.execute(
        "INSERT INTO codes (hash, app_id, athlete_id, redirect_uri, scope, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        (digest(code), app.id, athlete_id, redirect_uri, scope, time.time() + settings.code_lifetime),
    )
    return code


def exchange_code(
    conn: sqlite3.Connection, app: App, code: str, redirect_uri: str | None, server_secret: str, settings: Settings
) -> IssuedTokens:
    """Spend a code once. A replayed code also revokes what it issued (RFC 6749 §4.1.2)."""
    now = time.time()
    with store.transaction(conn):
        row = conn.execute("SELECT * FROM codes WHERE hash = ?", (digest(code),)).fetchone()
        if row is None or row["app_id"] != app.id:
            raise bad_request("AuthorizationCode", "code")
        replayed = row["used_at"] is not None
        if replayed and row["family_id"] is not None:
            _revoke_family(conn, row["family_id"], now)  # committed: raising here would roll the revocation back
    if replayed:
        raise bad_request("AuthorizationCode", "code")
    with store.transaction(conn):
        row = conn.execute("SELECT * FROM codes WHERE hash = ?", (digest(code),)).fetchone()
        if row["used_at"] is not None:  # spent by a concurrent exchange between the two transactions
            raise bad_request("AuthorizationCode", "code")
        if row["expires_at"] < now or (redirect_uri is not None and redirect_uri != row["redirect_uri"]):
            raise bad_request("AuthorizationCode", "code" if row["expires_at"] < now else "redirect_uri")
        family_id = conn.execute(
            "INSERT INTO token_families (app_id, athlete_id, scope, created_at) VALUES (?, ?, ?, ?)",
            (app.id, row["athlete_id"], row["scope"], now),
        ).lastrowid
        assert family_id is not None  # the INSERT's row id
        conn.execute("UPDATE codes SET used_at = ?, family_id = ? WHERE hash = ?", (now, family_id, row["hash"]))
        _upsert_grant(conn, app.id, row["athlete_id"], row["scope"], now)
        access, expires_at = _new_access(conn, family_id, server_secret, now, settings)
        refresh = _new_refresh(conn, family_id, server_secret, now)
    return IssuedTokens(access, expires_at, refresh, row["athlete_id"], row["scope"])


def refresh(
    conn: sqlite3.Connection, app: App, refresh_token: str, server_secret: str, settings: Settings
) -> IssuedTokens:
    """Rotate N → N+1 atomically; the access token is reused while it has more than the threshold left."""
    now = time.time()
    with store.transaction(conn):
        row = conn.execute(
            """SELECT r.hash, r.token_key, r.family_id, f.athlete_id, f.scope FROM refresh_tokens r
               JOIN token_families f ON f.id = r.family_id
               WHERE r.hash = ? AND r.current = 1 AND f.revoked_at IS NULL AND f.app_id = ?""",
            (digest(refresh_token), app.id),
        ).fetchone()
        if row is None:
            raise bad_request("RefreshToken", "refresh_token")
        family_id = row["family_id"]
        latest = conn.execute(
            "SELECT token_key, expires_at FROM access_tokens WHERE family_id = ? ORDER BY expires_at DESC LIMIT 1",
            (family_id,),
        ).fetchone()
        if latest is not None and latest["expires_at"] - now > settings.refresh_reuse_threshold:
            access, expires_at = derive(server_secret, latest["token_key"]), latest["expires_at"]
        else:
            access, expires_at = _new_access(conn, family_id, server_secret, now, settings)
        if settings.rotate_refresh_tokens:
            conn.execute("UPDATE refresh_tokens SET current = 0 WHERE hash = ?", (row["hash"],))
            new_refresh = _new_refresh(conn, family_id, server_secret, now)
        else:
            new_refresh = derive(server_secret, row["token_key"])
    return IssuedTokens(access, expires_at, new_refresh, row["athlete_id"], row["scope"])


def resolve(conn: sqlite3.Connection, access_token: str) -> TokenGrant:
    """The grant behind a bearer token, or 401 if unknown, expired or revoked."""
    row = conn.execute(
        """SELECT a.hash, a.expires_at, f.id AS family_id, f.app_id, f.athlete_id, f.scope, f.revoked_at
           FROM access_tokens a JOIN token_families f ON f.id = a.family_id WHERE a.hash = ?""",
        (digest(access_token),),
    ).fetchone()
    if row is None or row["revoked_at"] is not None or row["expires_at"] <= time.time():
        raise invalid_token()
    return TokenGrant(row["app_id"], row["athlete_id"], row["scope"], row["family_id"], row["expires_at"])


def deauthorize(conn: sqlite3.Connection, app_id: int, athlete_id: int) -> int:
    """Invalidate every token of this athlete for this app and drop the app from the athlete's list."""
    now = time.time()
    with store.transaction(conn):
        families = [
            r["id"]
            for r in conn.execute(
                "SELECT id FROM token_families WHERE app_id = ? AND athlete_id = ? AND revoked_at IS NULL",
                (app_id, athlete_id),
            )
        ]
        for family_id in families:
            _revoke_family(conn, family_id, now)
        conn.execute(
            "UPDATE grants SET revoked_at = ? WHERE app_id = ? AND athlete_id = ? AND revoked_at IS NULL",
            (now, app_id, athlete_id),
        )
    return len(families)


def active_grant_scope(conn: sqlite3.Connection, app_id: int, athlete_id: int) -> str | None:
    row = conn.execute(
        "SELECT scope FROM grants WHERE app_id = ? AND athlete_id = ? AND revoked_at IS NULL", (app_id, athlete_id)
    ).fetchone()
    return row["scope"] if row else None


def _upsert_grant(conn: sqlite3.Connection, app_id: int, athlete_id: int, scope: str, now: float) -> None:
    conn.execute(
        """INSERT INTO grants (app_id, athlete_id, scope, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (app_id, athlete_id) DO UPDATE SET scope = excluded.scope,
             updated_at = excluded.updated_at, revoked_at = NULL""",
        (app_id, athlete_id, scope, int(now), int(now)),
    )


def _revoke_family(conn: sqlite3.Connection, family_id: int, now: float) -> None:
    conn.execute("UPDATE token_families SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, family_id))
    conn.execute("UPDATE refresh_tokens SET current = 0 WHERE family_id = ?", (family_id,))


def _new_access(
    conn: sqlite3.Connection, family_id: int, server_secret: str, now: float, settings: Settings
) -> tuple[str, float]:
    key = secrets.token_hex(16)
    value = derive(server_secret, "access:" + key)
    expires_at = float(int(now + settings.access_token_lifetime))
    conn.execute(
        "INSERT INTO access_tokens (hash, token_key, family_id, expires_at) VALUES (?, ?, ?, ?)",
        (digest(value), "access:" + key, family_id, expires_at),
    )
    return value, expires_at


def _new_refresh(conn: sqlite3.Connection, family_id: int, server_secret: str, now: float) -> str:
    key = "refresh:" + secrets.token_hex(16)
    value = derive(server_secret, key)
    conn.execute(
        "INSERT INTO refresh_tokens (hash, token_key, family_id, current, created_at) VALUES (?, ?, ?, 1, ?)",
        (digest(value), key, family_id, now),
    )
    return value
