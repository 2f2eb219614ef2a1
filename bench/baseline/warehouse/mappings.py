"""How each warehouse table is filled from the service's JSON: column → SQL expression, as data.

A load registers a Polars frame as `batch` (one row per fetched object: its raw JSON plus context columns
such as athlete_id and the fetch time) and runs the mapping's INSERT … SELECT over it. Children (laps,
efforts, splits, zone buckets) are read from arrays inside the parent's JSON with UNNEST.
"""

from __future__ import annotations

from dataclasses import dataclass

from .expressions import coord, columns, instant, json_of, local, text, val, without, zone_name


@dataclass(frozen=True)
class Mapping:
    table: str
    key: tuple[str, ...]
    columns: dict[str, str]
    source: str = "batch"
    # Columns an upsert leaves alone (e.g. detail fields when only the summary is loaded).
    keep_on_update: tuple[str, ...] = ()
    # Extra condition for updating an existing row (e.g. do not downgrade a detailed segment).
    update_when: str = ""


def _unnest_select(path: str, src: str = "raw") -> str:
    """Rows of (batch columns…, item, idx) for each element of a JSON array, with its 1-based position."""
    # The parent's id is read once per parent here, not once per child from the whole parent document.
    return (f"SELECT *, unnest(arr) AS item, generate_subscripts(arr, 1) AS idx FROM "
            f"(SELECT *, CAST(json_extract({src}, '$.{path}') AS JSON[]) AS arr, "
            f"TRY_CAST({src}->>'$.id' AS BIGINT) AS parent_id FROM batch) WHERE arr IS NOT NULL")


def _unnest(path: str, src: str = "raw") -> str:
    return f"({_unnest_select(path, src)})"


ACTIVITY_FIELDS = {
    "name": "VARCHAR", "sport_type": "VARCHAR", "type": "VARCHAR", "workout_type": "INTEGER", "utc_offset": "INTEGER",
    "distance": "DOUBLE", "moving_time": "INTEGER", "elapsed_time": "INTEGER", "total_elevation_gain": "DOUBLE",
    "elev_high": "DOUBLE", "elev_low": "DOUBLE", "average_speed": "DOUBLE", "max_speed": "DOUBLE",
    "average_cadence": "DOUBLE", "average_temp": "DOUBLE", "has_heartrate": "BOOLEAN", "average_heartrate": "DOUBLE",
    "max_heartrate": "DOUBLE", "device_watts": "BOOLEAN", "average_watts": "DOUBLE",
    "weighted_average_watts": "DOUBLE", "max_watts": "DOUBLE", "kilojoules": "DOUBLE", "suffer_score": "DOUBLE",
    "achievement_count": "INTEGER", "pr_count": "INTEGER", "kudos_count": "INTEGER", "trainer": "BOOLEAN",
    "commute": "BOOLEAN", "manual": "BOOLEAN", "private": "BOOLEAN", "visibility": "VARCHAR", "flagged": "BOOLEAN",
    "gear_id": "VARCHAR", "device_name": "VARCHAR", "external_id": "VARCHAR",
}
ACTIVITY_COLUMNS = {
    "activity_id": val("id", "BIGINT"),
    "athlete_id": "batch_athlete_id",
    **columns("raw", ACTIVITY_FIELDS),
    "start_date": instant("start_date"),
    "start_date_local": local("start_date_local"),
    "timezone": zone_name("timezone"),
    "start_lat": coord("start_latlng", 0),
    "start_lng": coord("start_latlng", 1),
    "end_lat": coord("end_latlng", 0),
    "end_lng": coord("end_latlng", 1),
    "summary_polyline": text("map.summary_polyline"),
    "issues": "issues",
}
DETAIL_ONLY = {"description": text("description"), "calories": val("calories", "DOUBLE")}

# Listing pages: summary fields; detail fields and the detail JSON are kept.
ACTIVITY_SUMMARIES = Mapping(
    "activities", ("activity_id",),
    {**ACTIVITY_COLUMNS, "listed_at": "fetched_at", "summary_raw": "raw"},
    update_when="activities.summary_raw IS DISTINCT FROM excluded.summary_raw",
)

# The arrays of a detailed activity that its child tables keep, each element whole in its row's `raw`. The
# activity's own document (detail_raw) is the rest: not stored twice, and it keeps DuckDB's checkpoints of the
# activities table small (with them, a backfill's peak memory grew with the history).
CHILD_ARRAYS = ("splits_metric", "laps", "segment_efforts")
DETAIL_OWN = without(CHILD_ARRAYS)

# Detailed activity: everything, plus its children below.
ACTIVITY_DETAILS = Mapping(
    "activities", ("activity_id",),
    {**ACTIVITY_COLUMNS, **DETAIL_ONLY, "listed_at": "fetched_at", "summary_raw": DETAIL_OWN,
     "detail_raw": DETAIL_OWN, "detail_fetched_at": "fetched_at"},
    keep_on_update=("listed_at", "summary_raw"),
    update_when="activities.detail_raw IS DISTINCT FROM excluded.detail_raw",
)

SPLITS = Mapping(
    "splits_metric", ("activity_id", "split"),
    {"activity_id": "parent_id", **columns("item", {
        "split": "INTEGER", "distance": "DOUBLE", "elapsed_time": "INTEGER", "moving_time": "INTEGER",
        "elevation_difference": "DOUBLE", "average_speed": "DOUBLE", "pace_zone": "INTEGER"}), "raw": "item"},
    source=_unnest("splits_metric"), update_when="splits_metric.raw IS DISTINCT FROM excluded.raw",
)

LAPS = Mapping(
    "laps", ("lap_id",),
    {"lap_id": val("id", "BIGINT", "item"), "activity_id": "parent_id", **columns("item", {
        "lap_index": "INTEGER", "name": "VARCHAR", "elapsed_time": "INTEGER", "moving_time": "INTEGER",
        "distance": "DOUBLE", "total_elevation_gain": "DOUBLE", "average_speed": "DOUBLE", "max_speed": "DOUBLE",
        "average_cadence": "DOUBLE", "device_watts": "BOOLEAN", "average_watts": "DOUBLE", "start_index": "INTEGER",
        "end_index": "INTEGER", "split": "INTEGER"}),
     "start_date": instant("start_date", "item"), "start_date_local": local("start_date_local", "item"), "raw": "item"},
    source=_unnest("laps"), update_when="laps.raw IS DISTINCT FROM excluded.raw",
)

EFFORT_COLUMNS = {
    "effort_id": val("id", "BIGINT", "item"),
    "activity_id": val("activity.id", "BIGINT", "item"),
    "athlete_id": "batch_athlete_id",
    "segment_id": val("segment.id", "BIGINT", "item"),
    **columns("item", {
        "name": "VARCHAR", "elapsed_time": "INTEGER", "moving_time": "INTEGER", "distance": "DOUBLE",
        "start_index": "INTEGER", "end_index": "INTEGER", "average_cadence": "DOUBLE", "device_watts": "BOOLEAN",
        "average_watts": "DOUBLE", "average_heartrate": "DOUBLE", "max_heartrate": "DOUBLE", "pr_rank": "INTEGER",
        "kom_rank": "INTEGER", "hidden": "BOOLEAN"}),
    "start_date": instant("start_date", "item"),
    "start_date_local": local("start_date_local", "item"),
    "achievements": json_of("achievements", "item"),
    "raw": "item",
}
EFFORTS = Mapping("segment_efforts", ("effort_id",), EFFORT_COLUMNS, source=_unnest("segment_efforts"),
                  update_when="segment_efforts.raw IS DISTINCT FROM excluded.raw")

def segment_columns(src: str) -> dict[str, str]:
    return {
        "segment_id": val("id", "BIGINT", src),
        **columns(src, {
            "name": "VARCHAR", "activity_type": "VARCHAR", "distance": "DOUBLE", "average_grade": "DOUBLE",
            "maximum_grade": "DOUBLE", "elevation_high": "DOUBLE", "elevation_low": "DOUBLE",
            "total_elevation_gain": "DOUBLE", "climb_category": "INTEGER", "city": "VARCHAR", "state": "VARCHAR",
            "country": "VARCHAR", "private": "BOOLEAN", "hazardous": "BOOLEAN", "effort_count": "INTEGER",
            "athlete_count": "INTEGER", "star_count": "INTEGER", "resource_state": "INTEGER"}),
        "start_lat": coord("start_latlng", 0, src),
        "start_lng": coord("start_latlng", 1, src),
        "end_lat": coord("end_latlng", 0, src),
        "end_lng": coord("end_latlng", 1, src),
        "polyline": text("map.polyline", src),
        "synced_at": "fetched_at",
        "raw": src,
    }


SEGMENT_UPDATE_WHEN = ("segments.resource_state <= excluded.resource_state "
                       "AND segments.raw IS DISTINCT FROM excluded.raw")
# Detailed segments; a summary (seen inside an effort) never overwrites a detailed row.
SEGMENTS = Mapping("segments", ("segment_id",), segment_columns("raw"), update_when=SEGMENT_UPDATE_WHEN)
# Segment summaries embedded in efforts; one row per distinct segment of the batch's efforts.
EFFORT_SEGMENTS = Mapping(
    "segments", ("segment_id",), segment_columns("seg"),
    source=("(SELECT DISTINCT ON (seg->>'$.id') * FROM (SELECT *, json_extract(item, '$.segment') AS seg FROM ("
            + _unnest_select("segment_efforts") + ")))"),
    update_when=SEGMENT_UPDATE_WHEN,
)

STARRED = Mapping("starred_segments", ("athlete_id", "segment_id"),
                  {"athlete_id": "batch_athlete_id", "segment_id": val("id", "BIGINT"), "synced_at": "fetched_at",
                   "raw": "raw"},
                  update_when="starred_segments.raw IS DISTINCT FROM excluded.raw")

ACTIVITY_ZONES = Mapping(
    "activity_zones", ("activity_id", "zone_type"),
    {"activity_id": "batch_activity_id", "zone_type": text("type", "item"), "score": val("score", "DOUBLE", "item"),
     "sensor_based": val("sensor_based", "BOOLEAN", "item"), "points": val("points", "INTEGER", "item"),
     "custom_zones": val("custom_zones", "BOOLEAN", "item"), "raw": "item"},
    source=_unnest("zones"), update_when="activity_zones.raw IS DISTINCT FROM excluded.raw",
)

ZONE_BUCKETS_SOURCE = (
    "(SELECT batch_activity_id, zone->>'$.type' AS zone_type, unnest(buckets) AS bucket, "
    "generate_subscripts(buckets, 1) AS bucket_index FROM (SELECT batch_activity_id, item AS zone, "
    "CAST(json_extract(item, '$.distribution_buckets') AS JSON[]) AS buckets FROM " + _unnest("zones") + "))"
)
ACTIVITY_ZONE_BUCKETS = Mapping(
    "activity_zone_buckets", ("activity_id", "zone_type", "bucket_index"),
    {"activity_id": "batch_activity_id", "zone_type": "zone_type", "bucket_index": "bucket_index",
     "min": val("min", "DOUBLE", "bucket"), "max": val("max", "DOUBLE", "bucket"),
     "seconds": val("time", "INTEGER", "bucket")},
    source=ZONE_BUCKETS_SOURCE,
    update_when="(activity_zone_buckets.min, activity_zone_buckets.max, activity_zone_buckets.seconds) "
                "IS DISTINCT FROM (excluded.min, excluded.max, excluded.seconds)",
)

ATHLETES = Mapping(
    "athletes", ("athlete_id",),
    {"athlete_id": val("id", "BIGINT"), **columns("raw", {
        "username": "VARCHAR", "firstname": "VARCHAR", "lastname": "VARCHAR", "city": "VARCHAR", "state": "VARCHAR",
        "country": "VARCHAR", "sex": "VARCHAR", "premium": "BOOLEAN", "measurement_preference": "VARCHAR",
        "ftp": "DOUBLE", "weight": "DOUBLE"}),
     "created_at": instant("created_at"), "updated_at": instant("updated_at"), "synced_at": "fetched_at", "raw": "raw"},
    update_when="athletes.raw IS DISTINCT FROM excluded.raw",
)

GEAR_SOURCE = ("(SELECT *, 'bike' AS kind, unnest(CAST(json_extract(raw, '$.bikes') AS JSON[])) AS item FROM batch "
               "UNION ALL SELECT *, 'shoe' AS kind, unnest(CAST(json_extract(raw, '$.shoes') AS JSON[])) AS item "
               "FROM batch)")
GEAR = Mapping(
    "gear", ("gear_id",),
    {"gear_id": text("id", "item"), "athlete_id": val("id", "BIGINT"), "kind": "kind", "name": text("name", "item"),
     "is_primary": val("primary", "BOOLEAN", "item"), "distance": val("distance", "DOUBLE", "item"),
     "synced_at": "fetched_at", "raw": "item"},
    source=GEAR_SOURCE, update_when="gear.raw IS DISTINCT FROM excluded.raw",
)

ATHLETE_STATS = Mapping(
    "athlete_stats", ("athlete_id", "snapshot_date"),
    {"athlete_id": "batch_athlete_id", "snapshot_date": "snapshot_date",
     "biggest_ride_distance": val("biggest_ride_distance", "DOUBLE"),
     "biggest_climb_elevation_gain": val("biggest_climb_elevation_gain", "DOUBLE"), "synced_at": "fetched_at",
     "raw": "raw"},
    update_when="athlete_stats.raw IS DISTINCT FROM excluded.raw",
)

STATS_TOTALS_SOURCE = (
    "(SELECT batch_athlete_id, snapshot_date, p.period, s.sport, "
    "json_extract(raw, '$.' || p.period || '_' || s.sport || '_totals') AS totals FROM batch, "
    "(VALUES ('recent'), ('ytd'), ('all')) AS p(period), (VALUES ('ride'), ('run'), ('swim')) AS s(sport))"
)
ATHLETE_STATS_TOTALS = Mapping(
    "athlete_stats_totals", ("athlete_id", "snapshot_date", "period", "sport"),
    {"athlete_id": "batch_athlete_id", "snapshot_date": "snapshot_date", "period": "period", "sport": "sport",
     **columns("totals", {"count": "INTEGER", "distance": "DOUBLE", "moving_time": "INTEGER",
                          "elapsed_time": "INTEGER", "elevation_gain": "DOUBLE", "achievement_count": "INTEGER"})},
    source=STATS_TOTALS_SOURCE,
    update_when="(athlete_stats_totals.count, athlete_stats_totals.distance, athlete_stats_totals.moving_time, "
                "athlete_stats_totals.elapsed_time, athlete_stats_totals.elevation_gain, "
                "athlete_stats_totals.achievement_count) IS DISTINCT FROM (excluded.count, excluded.distance, "
                "excluded.moving_time, excluded.elapsed_time, excluded.elevation_gain, excluded.achievement_count)",
)

# Zones in one form (client/athlete_zones.py): each item has type, custom_zones, distribution_buckets and the zone
# as received; batches landed before schema 4 hold the spec's zone objects themselves.
ATHLETE_ZONES_SOURCE = (
    "(SELECT batch_athlete_id, snapshot_date, fetched_at, coalesce(raw->>'$.shape', 'array') AS shape, item AS zone, "
    "coalesce(json_extract(item, '$.received'), item) AS received, unnest(buckets) AS bucket, "
    "generate_subscripts(buckets, 1) AS bucket_index FROM (SELECT *, "
    "CAST(json_extract(item, '$.distribution_buckets') AS JSON[]) AS buckets FROM " + _unnest("zones") + "))"
)
ATHLETE_ZONES = Mapping(
    "athlete_zones", ("athlete_id", "snapshot_date", "zone_type", "bucket_index"),
    {"athlete_id": "batch_athlete_id", "snapshot_date": "snapshot_date", "zone_type": text("type", "zone"),
     "bucket_index": "bucket_index", "min": val("min", "DOUBLE", "bucket"), "max": val("max", "DOUBLE", "bucket"),
     "seconds": val("time", "INTEGER", "bucket"), "shape": "shape",
     "custom_zones": val("custom_zones", "BOOLEAN", "zone"), "synced_at": "fetched_at", "raw": "received"},
    source=ATHLETE_ZONES_SOURCE, update_when="athlete_zones.raw IS DISTINCT FROM excluded.raw",
)

UNRECOGNIZED = Mapping(
    "unrecognized_payloads", ("athlete_id", "endpoint", "object_id", "problem"),
    {"athlete_id": "batch_athlete_id", "endpoint": text("endpoint"), "object_id": f"coalesce({text('object_id')}, '')",
     "problem": text("problem"), "received_at": "fetched_at", "raw": json_of("body")},
    update_when="unrecognized_payloads.raw IS DISTINCT FROM excluded.raw",
)
