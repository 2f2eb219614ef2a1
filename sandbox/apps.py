"""Registered applications: creation (CLI and console) and client-credential checks."""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass

from . import store
from .faults import ApiError, bad_request
from .secrets_util import digest, matches, new_secret

FIRST_APP_ID = 70001
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


@dataclass(frozen=True)
class App:
    id: int
    name: str
    callback_domain: str


def create_app(conn: sqlite3.Connection, name: str, callback_domain: str) -> tuple[App, str]:
    """Register an app; the secret is returned once and only its digest is kept."""
    name = name.strip()
    domain = callback_domain.strip().lower()
    if not name or len(name) > 100:
        raise ValueError("app name must be 1 to 100 characters")
    if not _DOMAIN.match(domain):
        raise ValueError(f"callback domain {callback_domain!r} is not a host name (no scheme, port or path)")
    secret = new_secret()
    with store.transaction(conn):
        row = conn.execute("SELECT COALESCE(MAX(id), ?) + 1 AS id FROM apps", (FIRST_APP_ID - 1,)).fetchone()
        conn.execute(
            "INSERT INTO apps (id, name, callback_domain, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
            (row["id"], name, domain, digest(secret), int(time.time())),
        )
    return App(row["id"], name, domain), secret


def get_app(conn: sqlite3.Connection, app_id: int) -> App | None:
    row = conn.execute("SELECT id, name, callback_domain FROM apps WHERE id = ?", (app_id,)).fetchone()
    return App(row["id"], row["name"], row["callback_domain"]) if row else None


def parse_client_id(value: object) -> int:
    try:
        client_id = int(str(value))
    except (TypeError, ValueError):
        raise bad_request("Application", "client_id", "missing" if value in (None, "") else "invalid") from None
    if not 0 < client_id < 2**63:
        raise bad_request("Application", "client_id")
    return client_id


def authenticate_client(conn: sqlite3.Connection, client_id: object, client_secret: object) -> App:
    """Check client credentials: 400 when malformed or missing, 401 when unknown or wrong."""
    app_id = parse_client_id(client_id)
    if not isinstance(client_secret, str) or not client_secret:
        raise bad_request("Application", "client_secret", "missing")
    row = conn.execute("SELECT id, name, callback_domain, secret_hash FROM apps WHERE id = ?", (app_id,)).fetchone()
    # Compare against a dummy digest for unknown ids so timing does not reveal which ids exist.
    ok = matches(client_secret, row["secret_hash"] if row else digest("\0unknown"))
    if row is None or not ok:
        raise ApiError(401, "Application", "client_secret" if row else "client_id", "invalid")
    return App(row["id"], row["name"], row["callback_domain"])
