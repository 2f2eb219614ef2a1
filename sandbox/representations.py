"""JSON representations (spec §2): which fields each form shows, and what a token's scopes hide."""

from __future__ import annotations

import json
import math
import sqlite3
import uuid
from typing import Any

import polyline as polyline_codec

ATHLETE_SUMMARY_KEYS = (
    "username",
    "firstname",
    "lastname",
    "bio",
    "city",
    "state",
    "country",
    "sex",
    "premium",
    "summit",
    "created_at",
    "updated_at",
    "badge_type_id",
    "profile_medium",
    "profile",
    "friend",
    "follower",
)
ATHLETE_DETAILED_KEYS = ATHLETE_SUMMARY_KEYS + (
    "follower_count",
    "friend_count",
    "mutual_friend_count",
    "athlete_type",
    "date_preference",
    "measurement_preference",
    "clubs",
    "ftp",
    "weight",
    "bikes",
    "shoes",
)

ACTIVITY_SUMMARY_KEYS = (
    "name",
    "distance",
    "moving_time",
    "elapsed_time",
    "total_elevation_gain",
    "type",
    "sport_type",
    "workout_type",
    "external_id",
    "upload_id",
    "start_date",
    "start_date_local",
    "timezone",
    "utc_offset",
    "start_latlng",
    "end_latlng",
    "location_city",
    "location_state",
    "location_country",
    "achievement_count",
    "kudos_count",
    "comment_count",
    "athlete_count",
    "photo_count",
    "map",
    "device_name",
    "trainer",
    "commute",
    "manual",
    "private",
    "visibility",
    "flagged",
    "gear_id",
    "from_accepted_tag",
    "average_speed",
    "max_speed",
    "average_cadence",
    "average_temp",
    "average_watts",
    "weighted_average_watts",
    "kilojoules",
    "device_watts",
    "has_heartrate",
    "average_heartrate",
    "max_heartrate",
    "max_watts",
    "elev_high",
    "elev_low",
    "pr_count",
    "total_photo_count",
    "has_kudoed",
    "suffer_score",
)
ACTIVITY_DETAILED_KEYS = ACTIVITY_SUMMARY_KEYS + (
    "description",
    "calories",
    "segment_efforts",
    "splits_metric",
    "laps",
    "gear",
    "partner_brand_tag",
    "photos",
    "highlighted_kudosers",
    "hide_from_home",
    "embed_token",
    "segment_leaderboard_opt_out",
    "leaderboard_opt_out",
)

SEGMENT_SUMMARY_KEYS = (
    "name",
    "activity_type",
    "distance",
    "average_grade",
    "maximum_grade",
    "elevation_high",
    "elevation_low",
    "start_latlng",
    "end_latlng",
    "climb_category",
    "city",
    "state",
    "country",
    "private",
    "hazardous",
    "starred",
)
SEGMENT_DETAILED_KEYS = SEGMENT_SUMMARY_KEYS + (
    "created_at",
    "updated_at",
    "total_elevation_gain",
    "map",
    "effort_count",
    "athlete_count",
    "star_count",
    "athlete_segment_stats",
)

EFFORT_KEYS = (
    "name",
    "elapsed_time",
    "moving_time",
    "start_date",
    "start_date_local",
    "distance",
    "start_index",
    "end_index",
    "average_cadence",
    "device_watts",
    "average_watts",
    "average_heartrate",
    "max_heartrate",
    "segment",
    "kom_rank",
    "pr_rank",
    "achievements",
    "hidden",
)

PRIVACY_RADIUS_M = 400.0
NO_PHOTOS = {"primary": None, "use_primary_photo": False, "count": 0}


def photos(activity_id: int, count: int) -> dict[str, Any]:
    """The photos block agrees with total_photo_count; ids are stable per activity."""
    if not count:
        return NO_PHOTOS
    unique_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"sandbox-activity-photo:{activity_id}")).upper()
    urls = {size: f"https://sandbox.invalid/photos/{unique_id}-{size}.jpg" for size in ("100", "600")}
    return {
        "primary": {"id": None, "unique_id": unique_id, "urls": urls, "source": 1},
        "use_primary_photo": True,
        "count": count,
    }


def ref(object_id: int, resource_state: int = 1) -> dict[str, int]:
    return {"id": object_id, "resource_state": resource_state}


def pick(facts: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: facts.get(k) for k in keys}


# Athletes -----------------------------------------------------------------------------------------


def gear_summaries(conn: sqlite3.Connection, athlete_id: int) -> dict[str, list[dict[str, Any]]]:
    """Gear with distance summed from the athlete's activities, so the two always agree."""
    out: dict[str, list[dict[str, Any]]] = {"bike": [], "shoe": []}
    for row in conn.execute(
        """SELECT g.id, g.kind, g.name, g.is_primary,
                  COALESCE((SELECT SUM(json_extract(a.data, '$.distance')) FROM activities a WHERE a.gear_id = g.id), 0) AS distance
           FROM gear g WHERE g.athlete_id = ? ORDER BY g.id""",
        (athlete_id,),
    ):
        out[row["kind"]].append(gear_summary(row))
    return out


def gear_summary(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "primary": bool(row["is_primary"]),
        "name": row["name"],
        "resource_state": 2,
        "distance": round(row["distance"], 1),
    }


def athlete(conn: sqlite3.Connection, athlete_id: int, detailed: bool) -> dict[str, Any]:
    row = conn.execute("SELECT id, premium, data FROM athletes WHERE id = ?", (athlete_id,)).fetchone()
    facts = json.loads(row["data"])
    facts.update(premium=bool(row["premium"]), summit=bool(row["premium"]), bio=facts.get("bio"))
    if detailed:
        gear = gear_summaries(conn, athlete_id)
        facts.update(bikes=gear["bike"], shoes=gear["shoe"])
    body = {"id": row["id"], "resource_state": 3 if detailed else 2}
    body.update(pick(facts, ATHLETE_DETAILED_KEYS if detailed else ATHLETE_SUMMARY_KEYS))
    return body


# Segments -----------------------------------------------------------------------------------------


def segment(
    conn: sqlite3.Connection,
    row: sqlite3.Row,
    viewer_id: int,
    detailed: bool,
    athlete_data: bool,
    only_me: bool = False,
) -> dict[str, Any]:
    """A segment as `viewer_id` sees it; athlete-specific parts need read_all (`athlete_data`), and efforts of
    Only You activities count in them only with activity:read_all (`only_me`)."""
    facts = json.loads(row["data"])
    starred = (
        athlete_data
        and conn.execute(
            "SELECT 1 FROM stars WHERE athlete_id = ? AND segment_id = ?", (viewer_id, row["id"])
        ).fetchone()
        is not None
    )
    facts["starred"] = starred
    if detailed:
        counts = conn.execute(
            """SELECT COUNT(*) AS efforts, COUNT(DISTINCT athlete_id) AS athletes FROM efforts
               WHERE segment_id = ? AND hidden = 0""",
            (row["id"],),
        ).fetchone()
        facts["effort_count"] = counts["efforts"]
        facts["athlete_count"] = counts["athletes"]
        facts["star_count"] = conn.execute("SELECT COUNT(*) FROM stars WHERE segment_id = ?", (row["id"],)).fetchone()[
            0
        ]
        facts["athlete_segment_stats"] = (
            athlete_segment_stats(conn, row["id"], viewer_id, only_me) if athlete_data else None
        )
    body = {"id": row["id"], "resource_state": 3 if detailed else 2}
    body.update(pick(facts, SEGMENT_DETAILED_KEYS if detailed else SEGMENT_SUMMARY_KEYS))
    return body


def athlete_segment_stats(
    conn: sqlite3.Connection, segment_id: int, athlete_id: int, only_me: bool = False
) -> dict[str, Any]:
    visible = "(? OR activity_id NOT IN (SELECT id FROM activities WHERE visibility = 'only_me'))"
    best = conn.execute(
        f"""SELECT elapsed_time, json_extract(data, '$.start_date_local') AS local FROM efforts
           WHERE segment_id = ? AND athlete_id = ? AND hidden = 0 AND {visible} ORDER BY elapsed_time, start_ts LIMIT 1""",
        (segment_id, athlete_id, only_me),
    ).fetchone()
    count = conn.execute(
        f"SELECT COUNT(*) FROM efforts WHERE segment_id = ? AND athlete_id = ? AND hidden = 0 AND {visible}",
        (segment_id, athlete_id, only_me),
    ).fetchone()[0]
    return {
        "pr_elapsed_time": best["elapsed_time"] if best else None,
        "pr_date": best["local"][:10] if best else None,
        "effort_count": count,
    }


def explorer_segment(row: sqlite3.Row, starred: bool, climb_desc: list[str]) -> dict[str, Any]:
    facts = json.loads(row["data"])
    return {
        "id": row["id"],
        "resource_state": 2,
        "name": facts["name"],
        "climb_category": facts["climb_category"],
        "climb_category_desc": climb_desc[facts["climb_category"]],
        "avg_grade": facts["average_grade"],
        "start_latlng": facts["start_latlng"],
        "end_latlng": facts["end_latlng"],
        "elev_difference": round(facts["elevation_high"] - facts["elevation_low"], 1),
        "distance": facts["distance"],
        "points": facts["map"]["polyline"],
        "starred": starred,
    }


# Efforts ------------------------------------------------------------------------------------------


def effort(
    conn: sqlite3.Connection,
    row: sqlite3.Row,
    viewer_id: int,
    detailed: bool,
    athlete_data: bool,
    only_me: bool = False,
) -> dict[str, Any]:
    facts = json.loads(row["data"])
    seg = conn.execute("SELECT * FROM segments WHERE id = ?", (row["segment_id"],)).fetchone()
    facts["segment"] = segment(conn, seg, viewer_id, detailed=False, athlete_data=athlete_data)
    facts["hidden"] = bool(row["hidden"])
    body: dict[str, Any] = {
        "id": row["id"],
        "resource_state": 3 if detailed else 2,
        "activity": ref(row["activity_id"]),
        "athlete": ref(row["athlete_id"]),
    }
    body.update(pick(facts, EFFORT_KEYS))
    if detailed and athlete_data:
        body["athlete_segment_stats"] = athlete_segment_stats(conn, row["segment_id"], viewer_id, only_me)
    return body


# Activities ---------------------------------------------------------------------------------------


def activity(
    conn: sqlite3.Connection,
    row: sqlite3.Row,
    *,
    detailed: bool,
    read_all: bool,
    all_efforts: bool = False,
    home: tuple[float, float] | None = None,
    private_segments: bool = False,
) -> dict[str, Any]:
    """An activity for its owner; without activity:read_all the privacy zone around home is cut out, and
    without read_all (`private_segments`) efforts on private segments are left out."""
    facts = json.loads(row["data"])
    facts["private"] = row["visibility"] == "only_me"
    facts["visibility"] = row["visibility"]
    facts["type"], facts["sport_type"], facts["gear_id"] = row["type"], row["sport_type"], row["gear_id"]
    mapping = dict(facts.get("map") or {"id": f"a{row['id']}", "polyline": None, "summary_polyline": None})
    if not read_all and home is not None:
        _hide_privacy_zone(facts, mapping, home)
    if detailed:
        mapping["resource_state"] = 3
        facts["photos"] = facts.get("photos") or photos(row["id"], facts.get("total_photo_count") or 0)
        facts.setdefault("highlighted_kudosers", [])
        facts["gear"] = _activity_gear(conn, row["gear_id"])
        facts["segment_efforts"] = [
            effort(conn, e, row["athlete_id"], detailed=False, athlete_data=private_segments)
            for e in conn.execute(
                """SELECT * FROM efforts WHERE activity_id = ? AND (? OR hidden = 0)
                   AND (? OR segment_id NOT IN (SELECT id FROM segments WHERE private = 1)) ORDER BY start_ts, id""",
                (row["id"], all_efforts, private_segments),
            )
        ]
        facts.setdefault("splits_metric", [])
        facts.setdefault("laps", [])
    else:
        mapping = {"id": mapping["id"], "summary_polyline": mapping.get("summary_polyline"), "resource_state": 2}
    facts["map"] = mapping
    body = {"id": row["id"], "resource_state": 3 if detailed else 2, "athlete": ref(row["athlete_id"])}
    body.update(pick(facts, ACTIVITY_DETAILED_KEYS if detailed else ACTIVITY_SUMMARY_KEYS))
    return body


def _activity_gear(conn: sqlite3.Connection, gear_id: str | None) -> dict[str, Any] | None:
    if not gear_id:
        return None
    row = conn.execute(
        """SELECT g.id, g.name, g.is_primary,
                  COALESCE((SELECT SUM(json_extract(a.data, '$.distance')) FROM activities a WHERE a.gear_id = g.id), 0) AS distance
           FROM gear g WHERE g.id = ?""",
        (gear_id,),
    ).fetchone()
    return gear_summary(row) if row else None


def _hide_privacy_zone(facts: dict[str, Any], mapping: dict[str, Any], home: tuple[float, float]) -> None:
    for key in ("polyline", "summary_polyline"):
        if mapping.get(key):
            points = [p for p in polyline_codec.decode(mapping[key]) if _distance_m(p, home) > PRIVACY_RADIUS_M]
            mapping[key] = polyline_codec.encode(points) if points else ""
    for key in ("start_latlng", "end_latlng"):
        point = facts.get(key)
        if point and _distance_m(tuple(point), home) <= PRIVACY_RADIUS_M:
            facts[key] = []


def _distance_m(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat1, lng1, lat2, lng2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * 6_371_000 * math.asin(math.sqrt(h))
