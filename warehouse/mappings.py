"""How each warehouse table is filled from the service's JSON: column → SQL expression, as data.

A load registers a Polars frame as `batch` (one row per fetched object: its raw JSON plus context columns
such as athlete_id and the fetch time) and runs the mapping's INSERT … SELECT over it. Children (laps,
efforts, splits, zone buckets) are read from arrays inside the parent's JSON with UNNEST.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow as pa

from .documents import DETAILS, SUMMARIES, Kind
from .expressions import NUMBER_READ, columns, coord, instant, json_of, local, text, val, zone_name
from .plausible import Range, range_of


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
    # The batch's documents are kept whole in Parquet files of this kind (documents.py), new ones found by its hash.
    documents: Kind | None = None
    # Columns an update leaves as stored where `keep_when` (a condition on the stored row) holds: a listing's summary
    # never overwrites what an activity's detail said.
    kept: tuple[str, ...] = ()
    keep_when: str = ""
    # A table of tombstones (deleted_activities) whose rows for the keys this mapping loads go: back, so not deleted.
    clears: str = ""

    @functools.cached_property
    def checks(self) -> dict[str, Range]:
        """The number columns with a plausible range (plausible.py): a value out of it is not stored. An INTEGER
        column's range stops where the type does."""
        return {
            c: r if self.check_types[c] != pa.int32() else Range(r.low, min(r.high, 2**31 - 1), r.why)
            for c, r in self._ranges.items()
        }

    @functools.cached_property
    def _ranges(self) -> dict[str, Range]:
        return {
            c: r
            for c, e in self.columns.items()
            if c not in self.key and NUMBER_READ.fullmatch(e) and (r := range_of(self.table, c)) is not None
        }

    @functools.cached_property
    def check_types(self) -> dict[str, pa.DataType]:
        """The Arrow type each checked column is cast to once checked (it is staged as a double)."""
        types = {}
        for c in self._ranges:
            read = NUMBER_READ.fullmatch(self.columns[c])
            assert read is not None  # _ranges holds only the columns NUMBER_READ reads
            types[c] = pa.int32() if read.group(3) == "INTEGER" else pa.float64()
        return types

    @property
    def required(self) -> tuple[str, ...]:
        """The columns besides the key the table holds no NULL in: a row missing one (an effort without a segment
        id, a shape fitsync does not know) is left out, its JSON kept in the document, rather than failing the
        batch."""
        return tuple(c for c in NOT_NULL.get(self.table, ()) if c not in self.key)


# Each table's NOT NULL columns outside its key (the migrations'; tests/warehouse/test_loads.py checks them).
NOT_NULL: dict[str, tuple[str, ...]] = {
    "activities": ("athlete_id", "listed_at"),
    "laps": ("activity_id",),
    "segment_efforts": ("activity_id", "athlete_id", "segment_id"),
    "segments": ("synced_at", "raw"),
    "starred_segments": ("synced_at", "raw"),
    "activity_zones": ("raw",),
    "athletes": ("synced_at", "raw"),
    "athlete_snapshots": ("synced_at",),
    "gear": ("athlete_id", "kind", "synced_at", "raw"),
    "athlete_stats": ("synced_at", "raw"),
    "athlete_zones": ("synced_at", "raw"),
    "unrecognized_payloads": ("received_at",),
}


def differs(table: str, columns: dict[str, str], key: tuple[str, ...]) -> str:
    """An update condition for a row without its own JSON: any non-key column differs."""
    cols = [c for c in columns if c not in key]
    return f"({', '.join(f'{table}.{c}' for c in cols)}) IS DISTINCT FROM ({', '.join(f'excluded.{c}' for c in cols)})"


# The arrays of a batch document that mappings unnest. A load reads them, and the document's id, out of each
# document in the one parse of the batch (staging.py) into columns `arr__<path>` and `parent_id`; a mapping then
# unnests its column instead of parsing the whole document again.
ARRAY_PATHS = ("splits_metric", "laps", "segment_efforts", "zones")


def array_column(path: str) -> str:
    return f"arr__{path}"


def _unnest_select(path: str) -> str:
    """Rows of (batch columns…, item, idx) for each element of an array, with its 1-based position."""
    assert path in ARRAY_PATHS, path
    arr = array_column(path)
    return f"SELECT *, unnest({arr}) AS item, generate_subscripts({arr}, 1) AS idx FROM batch WHERE {arr} IS NOT NULL"


def unnest_source(path: str) -> str:
    return f"({_unnest_select(path)})"


# Sources of rows that are one member of an array's elements (the segment inside each effort), one row per distinct
# id: {source: (array path, member, the column the member is in)}. staging.py reads such a member out of the array's
# one parse when it can; the columns of such rows read the member and the batch's context, not the document.
MEMBER_ROWS: dict[str, tuple[str, str, str]] = {}


def member_rows(path: str, member: str, column: str) -> str:
    """Rows of (…, item, idx, <column>: the JSON of each element's `member`), one per distinct member id."""
    source = (
        f"(SELECT DISTINCT ON ({column}->>'$.id') * FROM (SELECT *, json_extract(item, '$.{member}') AS "
        f"{column} FROM ({_unnest_select(path)})))"
    )
    MEMBER_ROWS[source] = (path, member, column)
    return source


ACTIVITY_FIELDS = {
    "name": "VARCHAR",
    "sport_type": "VARCHAR",
    "type": "VARCHAR",
    "workout_type": "INTEGER",
    "utc_offset": "INTEGER",
    "distance": "DOUBLE",
    "moving_time": "INTEGER",
    "elapsed_time": "INTEGER",
    "total_elevation_gain": "DOUBLE",
    "elev_high": "DOUBLE",
    "elev_low": "DOUBLE",
    "average_speed": "DOUBLE",
    "max_speed": "DOUBLE",
    "average_cadence": "DOUBLE",
    "average_temp": "DOUBLE",
    "has_heartrate": "BOOLEAN",
    "average_heartrate": "DOUBLE",
    "max_heartrate": "DOUBLE",
    "device_watts": "BOOLEAN",
    "average_watts": "DOUBLE",
    "weighted_average_watts": "DOUBLE",
    "max_watts": "DOUBLE",
    "kilojoules": "DOUBLE",
    "suffer_score": "DOUBLE",
    "achievement_count": "INTEGER",
    "pr_count": "INTEGER",
    "kudos_count": "INTEGER",
    "trainer": "BOOLEAN",
    "commute": "BOOLEAN",
    "manual": "BOOLEAN",
    "private": "BOOLEAN",
    "visibility": "VARCHAR",
    "flagged": "BOOLEAN",
    "gear_id": "VARCHAR",
    "device_name": "VARCHAR",
    "external_id": "VARCHAR",
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

# Listing pages: summary fields; detail fields and the detail JSON are kept. The summary itself is kept whole in a
# Parquet file (documents.SUMMARIES, the view activity_summary_documents); `summary_hash` tells a changed one.
# Once the detail is loaded, the richer source wins: a summary changes only the kudos (which no re-pull follows); a
# summary that shows the activity changed queues its detail again (sync/progress.record_listing), and the
# detail brings the new values.
ACTIVITY_SUMMARIES = Mapping(
    "activities",
    ("activity_id",),
    {
        **ACTIVITY_COLUMNS,
        "listed_at": "fetched_at",
        "summary_raw": "NULL::JSON",
        "summary_hash": "hash(raw)",
        "detail_loaded": "false",
    },
    keep_on_update=("detail_loaded",),
    update_when="activities.summary_hash IS DISTINCT FROM excluded.summary_hash",
    documents=SUMMARIES,
    kept=tuple(c for c in ACTIVITY_COLUMNS if c not in ("activity_id", "athlete_id", "kudos_count")),
    keep_when="activities.detail_loaded",
    clears="deleted_activities",
)

# Detailed activity: everything, plus its children below. The document itself is kept whole, as received, in a
# Parquet file beside the warehouse (documents.py; the view activity_documents): the one copy of its splits and laps
# as JSON (their rows hold typed columns), so a member or value fitsync does not map is never lost. `detail_hash`
# tells a changed document from the same one loaded again. The summary's columns stay as the listing left them.
ACTIVITY_DETAILS = Mapping(
    "activities",
    ("activity_id",),
    {
        **ACTIVITY_COLUMNS,
        **DETAIL_ONLY,
        "listed_at": "fetched_at",
        "detail_raw": "NULL::JSON",
        "detail_hash": "hash(raw)",
        "summary_raw": "NULL::JSON",
        "detail_fetched_at": "fetched_at",
        "detail_loaded": "true",
    },
    keep_on_update=("listed_at", "summary_raw"),
    update_when="activities.detail_hash IS DISTINCT FROM excluded.detail_hash",
    documents=DETAILS,
    clears="deleted_activities",
)


# Splits and laps are typed columns only: their JSON is in the activity's document (a text per element cost most of
# a load: ≈ 50 per activity written and compared).
SPLIT_COLUMNS = {
    "activity_id": "parent_id",
    **columns(
        "item",
        {
            "split": "INTEGER",
            "distance": "DOUBLE",
            "elapsed_time": "INTEGER",
            "moving_time": "INTEGER",
            "elevation_difference": "DOUBLE",
            "average_speed": "DOUBLE",
            "pace_zone": "INTEGER",
            "average_heartrate": "DOUBLE",
            "average_grade_adjusted_speed": "DOUBLE",
        },
    ),
}
SPLITS = Mapping(
    "splits_metric",
    ("activity_id", "split"),
    SPLIT_COLUMNS,
    source=unnest_source("splits_metric"),
    update_when=differs("splits_metric", SPLIT_COLUMNS, ("activity_id", "split")),
)

LAP_COLUMNS = {
    "lap_id": val("id", "BIGINT", "item"),
    "activity_id": "parent_id",
    **columns(
        "item",
        {
            "lap_index": "INTEGER",
            "name": "VARCHAR",
            "elapsed_time": "INTEGER",
            "moving_time": "INTEGER",
            "distance": "DOUBLE",
            "total_elevation_gain": "DOUBLE",
            "average_speed": "DOUBLE",
            "max_speed": "DOUBLE",
            "average_cadence": "DOUBLE",
            "device_watts": "BOOLEAN",
            "average_watts": "DOUBLE",
            "start_index": "INTEGER",
            "end_index": "INTEGER",
            "split": "INTEGER",
            "average_heartrate": "DOUBLE",
            "max_heartrate": "DOUBLE",
        },
    ),
    "start_date": instant("start_date", "item"),
    "start_date_local": local("start_date_local", "item"),
}
LAPS = Mapping(
    "laps",
    ("lap_id",),
    LAP_COLUMNS,
    source=unnest_source("laps"),
    update_when=differs("laps", LAP_COLUMNS, ("lap_id",)),
)

EFFORT_COLUMNS = {
    "effort_id": val("id", "BIGINT", "item"),
    "activity_id": val("activity.id", "BIGINT", "item"),
    "athlete_id": "batch_athlete_id",
    "segment_id": val("segment.id", "BIGINT", "item"),
    **columns(
        "item",
        {
            "name": "VARCHAR",
            "elapsed_time": "INTEGER",
            "moving_time": "INTEGER",
            "distance": "DOUBLE",
            "start_index": "INTEGER",
            "end_index": "INTEGER",
            "average_cadence": "DOUBLE",
            "device_watts": "BOOLEAN",
            "average_watts": "DOUBLE",
            "average_heartrate": "DOUBLE",
            "max_heartrate": "DOUBLE",
            "pr_rank": "INTEGER",
            "kom_rank": "INTEGER",
            "hidden": "BOOLEAN",
        },
    ),
    "start_date": instant("start_date", "item"),
    "start_date_local": local("start_date_local", "item"),
    "achievements": json_of("achievements", "item"),
    "raw": "item",
}
# Efforts from a segment's effort history: the listing's JSON is kept in `raw` (no document holds it).
EFFORTS = Mapping(
    "segment_efforts",
    ("effort_id",),
    EFFORT_COLUMNS,
    source=unnest_source("segment_efforts"),
    update_when="segment_efforts.raw IS DISTINCT FROM excluded.raw",
)
# Efforts of a detailed activity: typed columns only, their JSON is in the activity's document (activity_documents).
# A JSON text per effort made DuckDB's checkpoints rewrite ≈ 1 KB per effort whenever they merged the table's row
# groups, so a backfill's peak memory grew with the history (bench load: 1.46× → 1.09–1.18× from 10k to 100k
# activities; db.ROW_GROUP_SIZE did the rest).
# An effort also in a history keeps that listing's JSON (`raw` is not among these columns, so never overwritten).
DETAIL_EFFORT_COLUMNS = {name: expr for name, expr in EFFORT_COLUMNS.items() if name != "raw"}
DETAIL_EFFORTS = Mapping(
    "segment_efforts",
    ("effort_id",),
    DETAIL_EFFORT_COLUMNS,
    source=unnest_source("segment_efforts"),
    update_when=differs("segment_efforts", DETAIL_EFFORT_COLUMNS, ("effort_id",)),
)


def segment_columns(src: str) -> dict[str, str]:
    return {
        "segment_id": val("id", "BIGINT", src),
        **columns(
            src,
            {
                "name": "VARCHAR",
                "activity_type": "VARCHAR",
                "distance": "DOUBLE",
                "average_grade": "DOUBLE",
                "maximum_grade": "DOUBLE",
                "elevation_high": "DOUBLE",
                "elevation_low": "DOUBLE",
                "total_elevation_gain": "DOUBLE",
                "climb_category": "INTEGER",
                "city": "VARCHAR",
                "state": "VARCHAR",
                "country": "VARCHAR",
                "private": "BOOLEAN",
                "hazardous": "BOOLEAN",
                "effort_count": "INTEGER",
                "athlete_count": "INTEGER",
                "star_count": "INTEGER",
                "resource_state": "INTEGER",
            },
        ),
        "start_lat": coord("start_latlng", 0, src),
        "start_lng": coord("start_latlng", 1, src),
        "end_lat": coord("end_latlng", 0, src),
        "end_lng": coord("end_latlng", 1, src),
        "polyline": text("map.polyline", src),
        "synced_at": "fetched_at",
        "raw": src,
    }


SEGMENT_UPDATE_WHEN = (
    "segments.resource_state <= excluded.resource_state AND segments.raw IS DISTINCT FROM excluded.raw"
)
# Detailed segments; a summary (seen inside an effort) never overwrites a detailed row.
SEGMENTS = Mapping("segments", ("segment_id",), segment_columns("raw"), update_when=SEGMENT_UPDATE_WHEN)
# Segment summaries embedded in efforts; one row per distinct segment of the batch's efforts.
EFFORT_SEGMENTS = Mapping(
    "segments",
    ("segment_id",),
    segment_columns("seg"),
    source=member_rows("segment_efforts", "segment", "seg"),
    update_when=SEGMENT_UPDATE_WHEN,
)

STARRED = Mapping(
    "starred_segments",
    ("athlete_id", "segment_id"),
    {"athlete_id": "batch_athlete_id", "segment_id": val("id", "BIGINT"), "synced_at": "fetched_at", "raw": "raw"},
    update_when="starred_segments.raw IS DISTINCT FROM excluded.raw",
)

ACTIVITY_ZONES = Mapping(
    "activity_zones",
    ("activity_id", "zone_type"),
    {
        "activity_id": "batch_activity_id",
        "zone_type": text("type", "item"),
        "score": val("score", "DOUBLE", "item"),
        "sensor_based": val("sensor_based", "BOOLEAN", "item"),
        "points": val("points", "INTEGER", "item"),
        "custom_zones": val("custom_zones", "BOOLEAN", "item"),
        "raw": "item",
    },
    source=unnest_source("zones"),
    update_when="activity_zones.raw IS DISTINCT FROM excluded.raw",
)

ZONE_BUCKETS_SOURCE = (
    "(SELECT batch_activity_id, zone->>'$.type' AS zone_type, unnest(buckets) AS bucket, "
    "generate_subscripts(buckets, 1) AS bucket_index FROM (SELECT batch_activity_id, item AS zone, "
    "CAST(json_extract(item, '$.distribution_buckets') AS JSON[]) AS buckets FROM " + unnest_source("zones") + "))"
)
BUCKET_COLUMNS = {
    "activity_id": "batch_activity_id",
    "zone_type": "zone_type",
    "bucket_index": "bucket_index",
    "min": val("min", "DOUBLE", "bucket"),
    "max": val("max", "DOUBLE", "bucket"),
    "seconds": val("time", "INTEGER", "bucket"),
}
BUCKET_KEY = ("activity_id", "zone_type", "bucket_index")
ACTIVITY_ZONE_BUCKETS = Mapping(
    "activity_zone_buckets",
    BUCKET_KEY,
    BUCKET_COLUMNS,
    source=ZONE_BUCKETS_SOURCE,
    update_when=differs("activity_zone_buckets", BUCKET_COLUMNS, BUCKET_KEY),
)

ATHLETES = Mapping(
    "athletes",
    ("athlete_id",),
    {
        "athlete_id": val("id", "BIGINT"),
        **columns(
            "raw",
            {
                "username": "VARCHAR",
                "firstname": "VARCHAR",
                "lastname": "VARCHAR",
                "city": "VARCHAR",
                "state": "VARCHAR",
                "country": "VARCHAR",
                "sex": "VARCHAR",
                "premium": "BOOLEAN",
                "measurement_preference": "VARCHAR",
                "ftp": "DOUBLE",
                "weight": "DOUBLE",
            },
        ),
        "created_at": instant("created_at"),
        "updated_at": instant("updated_at"),
        "synced_at": "fetched_at",
        "raw": "raw",
    },
    update_when="athletes.raw IS DISTINCT FROM excluded.raw",
)

# The profile's FTP and weight per day fetched: the history behind the ftp_timeline view.
ATHLETE_SNAPSHOTS = Mapping(
    "athlete_snapshots",
    ("athlete_id", "snapshot_date"),
    {
        "athlete_id": val("id", "BIGINT"),
        "snapshot_date": "snapshot_date",
        "ftp": val("ftp", "DOUBLE"),
        "weight": val("weight", "DOUBLE"),
        "synced_at": "fetched_at",
    },
    update_when="(athlete_snapshots.ftp, athlete_snapshots.weight) IS DISTINCT FROM (excluded.ftp, excluded.weight)",
)

GEAR_SOURCE = (
    "(SELECT *, 'bike' AS kind, unnest(CAST(json_extract(raw, '$.bikes') AS JSON[])) AS item FROM batch "
    "UNION ALL SELECT *, 'shoe' AS kind, unnest(CAST(json_extract(raw, '$.shoes') AS JSON[])) AS item "
    "FROM batch)"
)
GEAR = Mapping(
    "gear",
    ("gear_id",),
    {
        "gear_id": text("id", "item"),
        "athlete_id": val("id", "BIGINT"),
        "kind": "kind",
        "name": text("name", "item"),
        "is_primary": val("primary", "BOOLEAN", "item"),
        "distance": val("distance", "DOUBLE", "item"),
        "retired": val("retired", "BOOLEAN", "item"),
        "synced_at": "fetched_at",
        "raw": "item",
    },
    source=GEAR_SOURCE,
    update_when="gear.raw IS DISTINCT FROM excluded.raw",
)

ATHLETE_STATS = Mapping(
    "athlete_stats",
    ("athlete_id", "snapshot_date"),
    {
        "athlete_id": "batch_athlete_id",
        "snapshot_date": "snapshot_date",
        "biggest_ride_distance": val("biggest_ride_distance", "DOUBLE"),
        "biggest_climb_elevation_gain": val("biggest_climb_elevation_gain", "DOUBLE"),
        "synced_at": "fetched_at",
        "raw": "raw",
    },
    update_when="athlete_stats.raw IS DISTINCT FROM excluded.raw",
)

STATS_TOTALS_SOURCE = (
    "(SELECT batch_athlete_id, snapshot_date, p.period, s.sport, "
    "json_extract(raw, '$.' || p.period || '_' || s.sport || '_totals') AS totals FROM batch, "
    "(VALUES ('recent'), ('ytd'), ('all')) AS p(period), (VALUES ('ride'), ('run'), ('swim')) AS s(sport))"
)
TOTALS_COLUMNS = {
    "athlete_id": "batch_athlete_id",
    "snapshot_date": "snapshot_date",
    "period": "period",
    "sport": "sport",
    **columns(
        "totals",
        {
            "count": "INTEGER",
            "distance": "DOUBLE",
            "moving_time": "INTEGER",
            "elapsed_time": "INTEGER",
            "elevation_gain": "DOUBLE",
            "achievement_count": "INTEGER",
        },
    ),
}
TOTALS_KEY = ("athlete_id", "snapshot_date", "period", "sport")
ATHLETE_STATS_TOTALS = Mapping(
    "athlete_stats_totals",
    TOTALS_KEY,
    TOTALS_COLUMNS,
    source=STATS_TOTALS_SOURCE,
    update_when=differs("athlete_stats_totals", TOTALS_COLUMNS, TOTALS_KEY),
)

# Zones in one form (client/athlete_zones.py): each item has type, custom_zones, distribution_buckets and the zone
# as received; batches landed before schema 4 hold the spec's zone objects themselves.
ATHLETE_ZONES_SOURCE = (
    "(SELECT batch_athlete_id, snapshot_date, fetched_at, coalesce(raw->>'$.shape', 'array') AS shape, item AS zone, "
    "coalesce(json_extract(item, '$.received'), item) AS received, unnest(buckets) AS bucket, "
    "generate_subscripts(buckets, 1) AS bucket_index FROM (SELECT *, "
    "CAST(json_extract(item, '$.distribution_buckets') AS JSON[]) AS buckets FROM " + unnest_source("zones") + "))"
)
ATHLETE_ZONES = Mapping(
    "athlete_zones",
    ("athlete_id", "snapshot_date", "zone_type", "bucket_index"),
    {
        "athlete_id": "batch_athlete_id",
        "snapshot_date": "snapshot_date",
        "zone_type": text("type", "zone"),
        "bucket_index": "bucket_index",
        "min": val("min", "DOUBLE", "bucket"),
        "max": val("max", "DOUBLE", "bucket"),
        "seconds": val("time", "INTEGER", "bucket"),
        "shape": "shape",
        "custom_zones": val("custom_zones", "BOOLEAN", "zone"),
        "synced_at": "fetched_at",
        "raw": "received",
    },
    source=ATHLETE_ZONES_SOURCE,
    update_when="athlete_zones.raw IS DISTINCT FROM excluded.raw",
)

UNRECOGNIZED = Mapping(
    "unrecognized_payloads",
    ("athlete_id", "endpoint", "object_id", "problem"),
    {
        "athlete_id": "batch_athlete_id",
        "endpoint": text("endpoint"),
        "object_id": f"coalesce({text('object_id')}, '')",
        "problem": text("problem"),
        "received_at": "fetched_at",
        "raw": json_of("body"),
    },
    update_when="unrecognized_payloads.raw IS DISTINCT FROM excluded.raw",
)
