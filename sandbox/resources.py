"""Handlers of the resource operations of spec §4.2 and §4.3, plus laps, zones and the activity listing."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from typing import Any
from zoneinfo import ZoneInfo

from . import flavors, push, store, world, world_streams
from . import representations as rep
from .api import Call
from .faults import ApiError, bad_request, forbidden, not_found
from .world_activity import pace_zones
from .world_common import raise_id_floor

RECENT_DAYS = 28
STATS_GROUPS = {"ride": ("Ride", "VirtualRide", "EBikeRide"), "run": ("Run", "VirtualRun"), "swim": ("Swim",)}
UPDATABLE_ACTIVITY_FIELDS = (
    "name",
    "type",
    "sport_type",
    "description",
    "trainer",
    "commute",
    "gear_id",
    "hide_from_home",
)


# Athlete ------------------------------------------------------------------------------------------


def get_athlete(call: Call) -> dict[str, Any]:
    return rep.athlete(call.conn, call.athlete_id, detailed=call.has("profile:read_all"))


def update_athlete(call: Call) -> dict[str, Any]:
    with store.transaction(call.conn):
        facts = _athlete_facts(call.conn, call.athlete_id)
        facts["weight"] = round(call.params["weight"], 2)
        facts["updated_at"] = _iso(time.time())
        call.conn.execute("UPDATE athletes SET data = ? WHERE id = ?", (json.dumps(facts), call.athlete_id))
    return rep.athlete(call.conn, call.athlete_id, detailed=True)


def get_zones(call: Call) -> Any:
    """The athlete's current zones; each bucket's time is the last four weeks' time in that zone."""
    facts = _athlete_facts(call.conn, call.athlete_id)
    since = time.time() - RECENT_DAYS * 86400
    totals: dict[str, list[int]] = {}
    for row in call.conn.execute(
        "SELECT json_extract(data, '$.zones') AS zones FROM activities WHERE athlete_id = ? AND start_ts >= ?",
        (call.athlete_id, since),
    ):
        for zone in json.loads(row["zones"] or "[]"):
            times = totals.setdefault(zone["type"], [])
            for i, bucket in enumerate(zone["distribution_buckets"]):
                times.extend([0] * (i + 1 - len(times)))
                times[i] += bucket["time"]
    out = []
    for zone_type, bounds in (("heartrate", facts.get("hr_zones")), ("power", world.power_zones(facts.get("ftp")))):
        if not bounds:
            continue
        times = totals.get(zone_type, [])
        buckets = [
            {"min": b["min"], "max": b["max"], "time": times[i] if i < len(times) else 0} for i, b in enumerate(bounds)
        ]
        out.append(
            {
                "type": zone_type,
                "resource_state": 3,
                "sensor_based": True,
                "custom_zones": False,
                "distribution_buckets": buckets,
            }
        )
    return flavors.athlete_zones(out, call.state.settings.flavor)


def get_stats(call: Call) -> dict[str, Any]:
    """Totals of the athlete's Everyone activities: recent (4 weeks), year to date (local) and all time."""
    if call.params["id"] != call.athlete_id:
        raise flavors.stats_of_another_athlete(call.state.settings.flavor)
    facts = _athlete_facts(call.conn, call.athlete_id)
    tz = ZoneInfo(facts["home"]["timezone"])
    year = str(dt.datetime.now(tz).year)
    recent_from = time.time() - RECENT_DAYS * 86400
    rows = call.conn.execute(
        """SELECT type, start_ts, json_extract(data, '$.start_date_local') AS local,
                  json_extract(data, '$.distance') AS distance, json_extract(data, '$.moving_time') AS moving_time,
                  json_extract(data, '$.elapsed_time') AS elapsed_time,
                  json_extract(data, '$.total_elevation_gain') AS elevation_gain,
                  json_extract(data, '$.achievement_count') AS achievement_count
           FROM activities WHERE athlete_id = ? AND visibility = 'everyone'""",
        (call.athlete_id,),
    ).fetchall()
    periods = {
        "recent": lambda r: r["start_ts"] >= recent_from,
        "ytd": lambda r: (r["local"] or "")[:4] == year,
        "all": lambda r: True,
    }
    body: dict[str, Any] = {
        "biggest_ride_distance": max(
            (r["distance"] or 0 for r in rows if r["type"] in STATS_GROUPS["ride"]), default=0
        ),
        "biggest_climb_elevation_gain": max(
            (r["elevation_gain"] or 0 for r in rows if r["type"] in STATS_GROUPS["ride"]), default=0
        ),
    }
    for period, included in periods.items():
        for group, types in STATS_GROUPS.items():
            chosen = [r for r in rows if r["type"] in types and included(r)]
            body[f"{period}_{group}_totals"] = {
                "count": len(chosen),
                "distance": round(sum(r["distance"] or 0 for r in chosen), 1),
                "moving_time": sum(r["moving_time"] or 0 for r in chosen),
                "elapsed_time": sum(r["elapsed_time"] or 0 for r in chosen),
                "elevation_gain": round(sum(r["elevation_gain"] or 0 for r in chosen), 1),
                "achievement_count": sum(r["achievement_count"] or 0 for r in chosen),
            }
    return body


# Segments -----------------------------------------------------------------------------------------


def _visible_segment(call: Call, segment_id: int) -> sqlite3.Row:
    """Private segments exist only for their owner, and only with read_all."""
    row = call.conn.execute("SELECT * FROM segments WHERE id = ?", (segment_id,)).fetchone()
    if row is None or (row["private"] and row["owner_id"] != call.athlete_id):
        raise not_found("Segment")
    if row["private"]:
        call.require("read_all")
    return row


def get_segment(call: Call) -> dict[str, Any]:
    row = _visible_segment(call, call.params["id"])
    return rep.segment(
        call.conn,
        row,
        call.athlete_id,
        detailed=True,
        athlete_data=call.has("read_all"),
        only_me=call.has("activity:read_all"),
    )


def starred_segments(call: Call) -> list[dict[str, Any]]:
    page, per_page = call.params["page"], call.params["per_page"]
    rows = call.conn.execute(
        """SELECT s.* FROM stars t JOIN segments s ON s.id = t.segment_id
           WHERE t.athlete_id = ? AND (s.private = 0 OR (? AND s.owner_id = t.athlete_id))
           ORDER BY t.starred_at DESC, s.id LIMIT ? OFFSET ?""",
        (call.athlete_id, call.has("read_all"), per_page, (page - 1) * per_page),
    ).fetchall()
    out = []
    for row in rows:
        body = rep.segment(call.conn, row, call.athlete_id, detailed=False, athlete_data=call.has("read_all"))
        body["starred"] = True
        out.append(body)
    return out


def star_segment(call: Call) -> dict[str, Any]:
    row = _visible_segment(call, call.params["id"])
    with store.transaction(call.conn):
        if call.params["starred"]:
            call.conn.execute(
                "INSERT OR IGNORE INTO stars (athlete_id, segment_id, starred_at) VALUES (?, ?, ?)",
                (call.athlete_id, row["id"], int(time.time())),
            )
        else:
            call.conn.execute("DELETE FROM stars WHERE athlete_id = ? AND segment_id = ?", (call.athlete_id, row["id"]))
    body = rep.segment(
        call.conn,
        row,
        call.athlete_id,
        detailed=True,
        athlete_data=call.has("read_all"),
        only_me=call.has("activity:read_all"),
    )
    body["starred"] = bool(call.params["starred"])
    return body


def explore_segments(call: Call) -> dict[str, Any]:
    sw_lat, sw_lng, ne_lat, ne_lng = call.params["bounds"]
    min_cat, max_cat = call.params["min_cat"], call.params["max_cat"]
    if min_cat > max_cat:
        raise bad_request("Segment", "min_cat")
    kind = {"running": "Run", "riding": "Ride"}[call.params["activity_type"]]
    rows = call.conn.execute(
        """SELECT s.*, (SELECT COUNT(*) FROM efforts e WHERE e.segment_id = s.id AND e.hidden = 0) AS popularity
           FROM segments s
           WHERE s.start_lat BETWEEN ? AND ? AND s.start_lng BETWEEN ? AND ? AND s.activity_type = ?
             AND s.climb_category BETWEEN ? AND ? AND (s.private = 0 OR (? AND s.owner_id = ?))
           ORDER BY popularity DESC, s.id LIMIT 10""",
        (sw_lat, ne_lat, sw_lng, ne_lng, kind, min_cat, max_cat, call.has("read_all"), call.athlete_id),
    ).fetchall()
    starred = {
        r["segment_id"]
        for r in call.conn.execute("SELECT segment_id FROM stars WHERE athlete_id = ?", (call.athlete_id,))
    }
    return {"segments": [rep.explorer_segment(r, r["id"] in starred, world.CLIMB_CATEGORY_DESC) for r in rows]}


# Segment efforts ----------------------------------------------------------------------------------


def efforts_by_segment(call: Call) -> list[dict[str, Any]]:
    segment = _visible_segment(call, call.params["segment_id"])
    start, end = call.params["start_date_local"], call.params["end_date_local"]
    page, per_page = call.params["page"], call.params["per_page"]
    rows = call.conn.execute(
        """SELECT e.* FROM efforts e JOIN activities a ON a.id = e.activity_id
           WHERE e.segment_id = ? AND e.athlete_id = ? AND (? OR a.visibility != 'only_me')
             AND (? IS NULL OR json_extract(e.data, '$.start_date_local') >= ?)
             AND (? IS NULL OR json_extract(e.data, '$.start_date_local') <= ?)
           ORDER BY e.start_ts, e.id LIMIT ? OFFSET ?""",
        (
            segment["id"],
            call.athlete_id,
            call.has("activity:read_all"),
            *_local_bound(start),
            *_local_bound(end),
            per_page,
            (page - 1) * per_page,
        ),
    ).fetchall()
    return [rep.effort(call.conn, r, call.athlete_id, detailed=False, athlete_data=call.has("read_all")) for r in rows]


def get_effort_row(call: Call, effort_id: int) -> sqlite3.Row:
    """The athlete's own effort: 404 unknown, 403 another's; Only You activities need activity:read_all and
    private segments read_all."""
    row = call.conn.execute("SELECT * FROM efforts WHERE id = ?", (effort_id,)).fetchone()
    if row is None:
        raise not_found("SegmentEffort")
    if row["athlete_id"] != call.athlete_id:
        raise forbidden("SegmentEffort")
    activity = call.conn.execute("SELECT visibility FROM activities WHERE id = ?", (row["activity_id"],)).fetchone()
    if activity["visibility"] == "only_me":
        call.require("activity:read_all")
    _visible_segment(call, row["segment_id"])  # an effort on a private segment shows it: read_all too
    return row


def get_effort(call: Call) -> dict[str, Any]:
    row = get_effort_row(call, call.params["id"])
    return rep.effort(
        call.conn,
        row,
        call.athlete_id,
        detailed=True,
        athlete_data=call.has("read_all"),
        only_me=call.has("activity:read_all"),
    )


def _local_bound(value: dt.datetime | None) -> tuple[str | None, str | None]:
    """Effort local times are wall-clock strings with a `Z`; compare bounds as wall-clock too."""
    text = None if value is None else value.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%SZ")
    return text, text


# Activities ---------------------------------------------------------------------------------------


def _owned_activity(call: Call, activity_id: int) -> sqlite3.Row:
    row = call.conn.execute("SELECT * FROM activities WHERE id = ?", (activity_id,)).fetchone()
    if row is None:
        raise not_found("Activity")
    if row["athlete_id"] != call.athlete_id:
        raise forbidden("Activity")
    if row["visibility"] == "only_me":
        call.require("activity:read_all")
    return row


def _home(call: Call) -> tuple[float, float]:
    home = _athlete_facts(call.conn, call.athlete_id)["home"]
    return home["lat"], home["lng"]


def _detailed(call: Call, row: sqlite3.Row, all_efforts: bool = False) -> dict[str, Any]:
    body = rep.activity(
        call.conn,
        row,
        detailed=True,
        read_all=call.has("activity:read_all"),
        all_efforts=all_efforts,
        home=_home(call),
        private_segments=call.has("read_all"),
    )
    return flavors.detailed_activity(body, call.state.settings.flavor)


def get_activity(call: Call) -> dict[str, Any]:
    row = _owned_activity(call, call.params["id"])
    return _detailed(call, row, all_efforts=bool(call.params["include_all_efforts"]))


def list_activities(call: Call) -> list[dict[str, Any]]:
    """Newest first; with only `after`, oldest first. `before` is exclusive, `after` inclusive."""
    if call.state.settings.fault_empty_listing:
        return []
    before, after = call.params["before"], call.params["after"]
    page, per_page = call.params["page"], call.params["per_page"]
    ascending = after is not None and before is None
    rows = call.conn.execute(
        f"""SELECT * FROM activities WHERE athlete_id = ? AND (? OR visibility != 'only_me')
              AND (? IS NULL OR start_ts < ?) AND (? IS NULL OR start_ts >= ?)
            ORDER BY start_ts {"ASC" if ascending else "DESC"}, id {"ASC" if ascending else "DESC"}
            LIMIT ? OFFSET ?""",
        (call.athlete_id, call.has("activity:read_all"), before, before, after, after, per_page, (page - 1) * per_page),
    ).fetchall()
    home = _home(call)
    drop = call.state.settings.fault_listing_drop_every
    return [
        rep.activity(call.conn, r, detailed=False, read_all=call.has("activity:read_all"), home=home)
        for r in rows
        if not (drop and r["id"] % drop == 0)
    ]


def get_laps(call: Call) -> list[dict[str, Any]]:
    row = _owned_activity(call, call.params["id"])
    return json.loads(row["data"]).get("laps") or []


def get_activity_zones(call: Call) -> list[dict[str, Any]]:
    row = _owned_activity(call, call.params["id"])
    data = json.loads(row["data"])
    zones = data.get("zones") or []
    if call.state.settings.flavor == "real" and (
        pace := pace_zones(call.conn, row["athlete_id"], row["start_ts"], data)
    ):
        zones = [*zones, pace]  # the real service also answers pace zones for runs (real-service notes)
    return zones


def create_activity(call: Call) -> dict[str, Any]:
    p = call.params
    if p["sport_type"] not in world.SPORT_TYPES:
        raise bad_request("Activity", "sport_type")
    if p["type"] is not None and p["type"] not in world.LEGACY_TYPES:
        raise bad_request("Activity", "type")
    with store.transaction(call.conn):
        activity_id = world.create_manual_activity(
            call.conn,
            call.athlete_id,
            name=p["name"],
            sport_type=p["sport_type"],
            type=p["type"],
            start_date_local=p["start_date_local"].replace(tzinfo=None),
            elapsed_time=p["elapsed_time"],
            description=p["description"],
            distance=p["distance"],
            trainer=bool(p["trainer"]),
            commute=bool(p["commute"]),
        )
        row = call.conn.execute("SELECT * FROM activities WHERE id = ?", (activity_id,)).fetchone()
        push.emit_activity_change(
            call.conn, athlete_id=call.athlete_id, activity_id=activity_id, before=None, after=activity_view(row)
        )
    call.state.wake_worker()
    return _detailed(call, row)


def update_activity(call: Call) -> dict[str, Any]:
    changes = {k: v for k, v in call.params.items() if k in UPDATABLE_ACTIVITY_FIELDS and v is not None}
    if "sport_type" in changes and changes["sport_type"] not in world.SPORT_TYPES:
        raise bad_request("Activity", "sport_type")
    if "type" in changes and changes["type"] not in world.LEGACY_TYPES:
        raise bad_request("Activity", "type")
    with store.transaction(call.conn):
        row = _owned_activity(call, call.params["id"])
        if "gear_id" in changes:
            changes["gear_id"] = _athlete_gear(call, changes["gear_id"])
        row = apply_activity_changes(call.conn, row, changes)
    call.state.wake_worker()
    return _detailed(call, row)


def _athlete_gear(call: Call, gear_id: str) -> str | None:
    if gear_id in ("none", ""):
        return None
    owned = call.conn.execute(
        "SELECT 1 FROM gear WHERE id = ? AND athlete_id = ?", (gear_id, call.athlete_id)
    ).fetchone()
    if owned is None:
        raise bad_request("Activity", "gear_id")
    return gear_id


def activity_view(row: sqlite3.Row) -> push.ActivityView:
    return push.ActivityView(visibility=row["visibility"], name=json.loads(row["data"])["name"], type=row["type"])


def apply_activity_changes(conn: sqlite3.Connection, row: sqlite3.Row, changes: dict[str, Any]) -> sqlite3.Row:
    """Apply field changes (API update or athlete console) and emit the events they cause."""
    facts = json.loads(row["data"])
    if "sport_type" in changes and "type" not in changes:
        changes["type"] = world.sport_family(changes["sport_type"])
    if "type" in changes and "sport_type" not in changes:
        changes["sport_type"] = changes["type"]
    visibility = changes.pop("visibility", row["visibility"])
    for key, value in changes.items():
        facts[key] = bool(value) if key in ("trainer", "commute", "hide_from_home") else value
    conn.execute(
        "UPDATE activities SET data = ?, type = ?, sport_type = ?, gear_id = ?, visibility = ? WHERE id = ?",
        (json.dumps(facts), facts["type"], facts["sport_type"], facts.get("gear_id"), visibility, row["id"]),
    )
    new_row = conn.execute("SELECT * FROM activities WHERE id = ?", (row["id"],)).fetchone()
    push.emit_activity_change(
        conn,
        athlete_id=row["athlete_id"],
        activity_id=row["id"],
        before=activity_view(row),
        after=activity_view(new_row),
    )
    return new_row


def delete_activity(conn: sqlite3.Connection, activity_id: int) -> bool:
    """Athlete console: remove an activity and its efforts; subscribers get the delete event."""
    with store.transaction(conn):
        row = conn.execute("SELECT * FROM activities WHERE id = ?", (activity_id,)).fetchone()
        if row is None:
            return False
        raise_id_floor(conn, "activities", activity_id)
        raise_id_floor(
            conn,
            "efforts",
            conn.execute("SELECT MAX(id) FROM efforts WHERE activity_id = ?", (activity_id,)).fetchone()[0],
        )
        raise_id_floor(
            conn, "laps", max((lap["id"] for lap in json.loads(row["data"]).get("laps") or []), default=None)
        )
        conn.execute("DELETE FROM efforts WHERE activity_id = ?", (activity_id,))
        conn.execute("DELETE FROM activities WHERE id = ?", (activity_id,))
        push.emit_activity_change(
            conn, athlete_id=row["athlete_id"], activity_id=activity_id, before=activity_view(row), after=None
        )
    return True


# Streams ------------------------------------------------------------------------------------------


def get_activity_streams(call: Call) -> Any:
    """The activity's streams (world_streams): 404 for one without (a manual entry), as the real service answers."""
    row = _owned_activity(call, call.params["id"])
    built = _streams_of(call, row)
    return _stream_answer(call, built, 0, built.moving_time)


def get_effort_streams(call: Call) -> Any:
    """The parent activity's streams over the effort's start_index..end_index (sample indices of those streams)."""
    effort = get_effort_row(call, call.params["id"])
    data = json.loads(effort["data"])
    row = call.conn.execute("SELECT * FROM activities WHERE id = ?", (effort["activity_id"],)).fetchone()
    built = _streams_of(call, row)
    start, end = int(data["start_index"]), min(int(data["end_index"]), built.moving_time)
    return _stream_answer(call, built, start, end)


def _streams_of(call: Call, row: sqlite3.Row) -> world_streams.ActivityStreams:
    efforts = [
        json.loads(r["data"]) for r in call.conn.execute("SELECT data FROM efforts WHERE activity_id = ?", (row["id"],))
    ]
    built = world_streams.generate(row["id"], json.loads(row["data"]), efforts)
    if built is None:
        raise ApiError(404, "Activity", "streams", "invalid", message="Resource Not Found")
    return built


def _stream_answer(call: Call, built: world_streams.ActivityStreams, start: int, end: int) -> Any:
    """Requested streams over samples start..end; without activity:read_all the samples inside the privacy zone
    around home leave every stream (so they stay aligned), as the representations cut the map."""
    flavor = call.state.settings.flavor
    order = world_streams.requested(call.params["keys"], flavor, built.available)
    keep: list[int] | None = None
    if not call.has("activity:read_all") and "latlng" in built.available:
        outside = world_streams.outside_zone(built.stream("latlng")[start : end + 1], _home(call), rep.PRIVACY_RADIUS_M)
        keep = [start + i for i, out in enumerate(outside) if out]
    channels: dict[str, list[Any]] = {}
    for kind in order:
        data = built.stream(kind)
        channels[kind] = data[start : end + 1] if keep is None else [data[i] for i in keep]
    keyed = call.params["key_by_type"]
    if keyed is None:  # the swagger's default is true; the real service answers the list without the parameter
        keyed = flavor != "real"
    series = "distance" if "distance" in built.available else "time"
    return world_streams.answer(channels, order, keyed=keyed, series_type=series)


# Helpers ------------------------------------------------------------------------------------------


def _athlete_facts(conn: sqlite3.Connection, athlete_id: int) -> dict[str, Any]:
    row = conn.execute("SELECT data FROM athletes WHERE id = ?", (athlete_id,)).fetchone()
    if row is None:
        raise ApiError(401, "Athlete", "access_token", "invalid")
    return json.loads(row["data"])


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
