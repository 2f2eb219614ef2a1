"""The athlete console: what athletes do in the service's own apps, outside the public API.

Plain functions on a db connection, shared by the `/sandbox/...` endpoints and the `fitsync sandbox` commands.
Events they cause go into the durable queue; the running server's worker delivers them.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from typing import Any

from . import push, resources, store, tokens, world
from .apps import create_app, get_app
from .faults import ApiError, bad_request, not_found

VISIBILITIES = ("everyone", "followers_only", "only_me")


def list_athletes(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [
        {
            "id": r["id"],
            "premium": bool(r["premium"]),
            "firstname": r["firstname"],
            "lastname": r["lastname"],
            "activities": r["activities"],
        }
        for r in conn.execute(
            """SELECT a.id, a.premium, json_extract(a.data, '$.firstname') AS firstname,
                      json_extract(a.data, '$.lastname') AS lastname,
                      (SELECT COUNT(*) FROM activities x WHERE x.athlete_id = a.id) AS activities
               FROM athletes a ORDER BY a.id"""
        )
    ]


def add_athlete(conn: sqlite3.Connection, **options: Any) -> int:
    options.setdefault("seed", random.SystemRandom().randrange(2**31))
    with store.transaction(conn):
        return world.add_athlete(conn, **options)


def set_premium(conn: sqlite3.Connection, athlete_id: int, premium: bool) -> None:
    with store.transaction(conn):
        if conn.execute("UPDATE athletes SET premium = ? WHERE id = ?", (int(premium), athlete_id)).rowcount == 0:
            raise not_found("Athlete")


def record_activity(conn: sqlite3.Connection, athlete_id: int, **options: Any) -> int:
    """A device upload with full detail; subscribers hear `create` (per their scopes)."""
    visibility = options.get("visibility", "everyone")
    if visibility not in VISIBILITIES:
        raise bad_request("Activity", "visibility")
    options.setdefault("seed", random.SystemRandom().randrange(2**31))
    with store.transaction(conn):
        if conn.execute("SELECT 1 FROM athletes WHERE id = ?", (athlete_id,)).fetchone() is None:
            raise not_found("Athlete")
        activity_id = world.record_activity(conn, athlete_id, **options)
        row = conn.execute("SELECT * FROM activities WHERE id = ?", (activity_id,)).fetchone()
        push.emit_activity_change(
            conn, athlete_id=athlete_id, activity_id=activity_id, before=None, after=resources.activity_view(row)
        )
    return activity_id


def update_activity(
    conn: sqlite3.Connection,
    activity_id: int,
    *,
    name: str | None = None,
    sport_type: str | None = None,
    visibility: str | None = None,
) -> dict[str, Any]:
    """Rename, retype or change visibility, as the athlete does in the service's app."""
    changes: dict[str, Any] = {}
    if name is not None:
        if not name.strip() or len(name) > 255:
            raise bad_request("Activity", "name")
        changes["name"] = name
    if sport_type is not None:
        changes["sport_type"] = sport_type
    if visibility is not None:
        if visibility not in VISIBILITIES:
            raise bad_request("Activity", "visibility")
        changes["visibility"] = visibility
    with store.transaction(conn):
        row = conn.execute("SELECT * FROM activities WHERE id = ?", (activity_id,)).fetchone()
        if row is None:
            raise not_found("Activity")
        row = resources.apply_activity_changes(conn, row, changes)
    return {
        "id": row["id"],
        "name": json.loads(row["data"])["name"],
        "sport_type": row["sport_type"],
        "type": row["type"],
        "visibility": row["visibility"],
    }


def delete_activity(conn: sqlite3.Connection, activity_id: int) -> None:
    if not resources.delete_activity(conn, activity_id):
        raise not_found("Activity")


def revoke_app(conn: sqlite3.Connection, app_id: int, athlete_id: int) -> int:
    """Deauthorization, from the API or the athlete's settings: tokens die and the app hears of it. An athlete or an
    app the world does not have is a 404, not "0 revoked"."""
    if conn.execute("SELECT 1 FROM athletes WHERE id = ?", (athlete_id,)).fetchone() is None:
        raise not_found("Athlete")
    if get_app(conn, app_id) is None:
        raise not_found("Application", "client_id")
    with store.transaction(conn):
        active = tokens.active_grant_scope(conn, app_id, athlete_id) is not None
        revoked = tokens.deauthorize(conn, app_id, athlete_id)
        if active or revoked:
            push.emit_deauthorization(conn, app_id=app_id, athlete_id=athlete_id)
    return revoked


def register_app(conn: sqlite3.Connection, name: str, callback_domain: str) -> dict[str, Any]:
    try:
        app, secret = create_app(conn, name, callback_domain)
    except ValueError as error:
        raise ApiError(
            400,
            "Application",
            "callback_domain" if str(error).startswith("callback domain") else "name",  # "host name" says name too
            "invalid",
            message=str(error),
        ) from None
    return {"client_id": app.id, "client_secret": secret, "name": app.name, "callback_domain": app.callback_domain}


def parse_when(value: Any) -> dt.datetime | None:
    """An ISO time for a recorded activity; naive means UTC."""
    if value in (None, ""):
        return None
    try:
        when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise bad_request("Activity", "start_date") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
