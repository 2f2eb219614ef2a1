"""How each warehouse table is filled from the service's JSON: a table of Columns (columns.py) per mapping, as data.

A load registers a Polars frame as `batch` (one row per fetched object: its raw JSON plus context columns
such as athlete_id and the fetch time) and runs the mapping's INSERT … SELECT over it. Children (laps,
efforts, splits, zone buckets) are read from arrays inside the parent's JSON with UNNEST (sources.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow as pa

from . import constraints
from .columns import Column, coord, fields, instant, kept, local, sql, text, value, zone_name
from .documents import DETAILS, SUMMARIES, Kind
from .plausible import Range, range_of
from .sources import BATCH, ITEM, Elements, Members, Rows, Source


@dataclass(frozen=True)
class Mapping:
    table: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    source: Source = BATCH
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
    # A table of tombstones (deleted_activities) whose rows for the keys this mapping loads are marked restored: back.
    restores: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

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
            c.name: r
            for c in self.columns
            if c.name not in self.key and c.number and (r := range_of(self.table, c.name)) is not None
        }

    @functools.cached_property
    def check_types(self) -> dict[str, pa.DataType]:
        """The Arrow type each checked column is cast to once checked (it is staged as a double)."""
        types = {c.name: c.type for c in self.columns}
        return {c: pa.int32() if types[c] == "INTEGER" else pa.float64() for c in self._ranges}

    def required_in(self, not_null: constraints.NotNull) -> tuple[str, ...]:
        """The columns besides the key that `not_null` (a schema's NOT NULL columns) says the table holds no NULL in:
        a row missing one is left out, its JSON kept in the document, rather than failing the batch."""
        required = not_null.get(self.table, frozenset())
        return tuple(c for c in self.names if c in required and c not in self.key)

    @property
    def required(self) -> tuple[str, ...]:
        """required_in the schema the migrations make."""
        return self.required_in(constraints.migrated())


def differs(table: str, columns: tuple[Column, ...], key: tuple[str, ...]) -> str:
    """An update condition for a row without its own JSON: any non-key column differs."""
    cols = [c.name for c in columns if c.name not in key]
    return f"({', '.join(f'{table}.{c}' for c in cols)}) IS DISTINCT FROM ({', '.join(f'excluded.{c}' for c in cols)})"


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
ACTIVITY_COLUMNS = (
    value("activity_id", "BIGINT", at="id"),
    sql("athlete_id", "batch_athlete_id"),
    *fields("raw", ACTIVITY_FIELDS),
    instant("start_date"),
    local("start_date_local"),
    zone_name("timezone"),
    coord("start_lat", "start_latlng", 0),
    coord("start_lng", "start_latlng", 1),
    coord("end_lat", "end_latlng", 0),
    coord("end_lng", "end_latlng", 1),
    text("summary_polyline", at="map.summary_polyline"),
    sql("issues", "issues"),
)
DETAIL_ONLY = (text("description"), value("calories", "DOUBLE"))

# Listing pages: summary fields; detail fields and the detail JSON are kept. The summary itself is kept whole in a
# Parquet file (documents.SUMMARIES, the view activity_summary_documents); `summary_hash` tells a changed one.
# Once the detail is loaded, the richer source wins: a summary changes only the kudos (which no re-pull follows); a
# summary that shows the activity changed queues its detail again (sync/progress.record_listing), and the
# detail brings the new values.
ACTIVITY_SUMMARIES = Mapping(
    "activities",
    ("activity_id",),
    (
        *ACTIVITY_COLUMNS,
        sql("listed_at", "fetched_at"),
        sql("summary_raw", "NULL::JSON"),
        sql("summary_hash", "hash(raw)"),
        sql("detail_loaded", "false"),
    ),
    keep_on_update=("detail_loaded",),
    update_when="activities.summary_hash IS DISTINCT FROM excluded.summary_hash",
    documents=SUMMARIES,
    kept=tuple(c.name for c in ACTIVITY_COLUMNS if c.name not in ("activity_id", "athlete_id", "kudos_count")),
    keep_when="activities.detail_loaded",
    restores="deleted_activities",
)

# Detailed activity: everything, plus its children below. The document itself is kept whole, as received, in a
# Parquet file beside the warehouse (documents.py; the view activity_documents): the one copy of its splits and laps
# as JSON (their rows hold typed columns), so a member or value fitsync does not map is never lost. `detail_hash`
# tells a changed document from the same one loaded again. The summary's columns stay as the listing left them.
ACTIVITY_DETAILS = Mapping(
    "activities",
    ("activity_id",),
    (
        *ACTIVITY_COLUMNS,
        *DETAIL_ONLY,
        sql("listed_at", "fetched_at"),
        sql("detail_raw", "NULL::JSON"),
        sql("detail_hash", "hash(raw)"),
        sql("summary_raw", "NULL::JSON"),
        sql("detail_fetched_at", "fetched_at"),
        sql("detail_loaded", "true"),
    ),
    keep_on_update=("listed_at", "summary_raw"),
    update_when="activities.detail_hash IS DISTINCT FROM excluded.detail_hash",
    documents=DETAILS,
    restores="deleted_activities",
)


# Splits and laps are typed columns only: their JSON is in the activity's document (a text per element cost most of
# a load: ≈ 50 per activity written and compared).
SPLIT_COLUMNS = (
    sql("activity_id", "parent_id"),
    *fields(
        ITEM,
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
)
SPLITS = Mapping(
    "splits_metric",
    ("activity_id", "split"),
    SPLIT_COLUMNS,
    source=Elements("splits_metric"),
    update_when=differs("splits_metric", SPLIT_COLUMNS, ("activity_id", "split")),
)

LAP_COLUMNS = (
    value("lap_id", "BIGINT", at="id", src=ITEM),
    sql("activity_id", "parent_id"),
    *fields(
        ITEM,
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
    instant("start_date", src=ITEM),
    local("start_date_local", src=ITEM),
)
LAPS = Mapping(
    "laps",
    ("lap_id",),
    LAP_COLUMNS,
    source=Elements("laps"),
    update_when=differs("laps", LAP_COLUMNS, ("lap_id",)),
)

EFFORT_COLUMNS = (
    value("effort_id", "BIGINT", at="id", src=ITEM),
    value("activity_id", "BIGINT", at="activity.id", src=ITEM),
    sql("athlete_id", "batch_athlete_id"),
    value("segment_id", "BIGINT", at="segment.id", src=ITEM),
    *fields(
        ITEM,
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
    instant("start_date", src=ITEM),
    local("start_date_local", src=ITEM),
    kept("achievements", at="achievements", src=ITEM),
    kept("raw", src=ITEM),
)
# Efforts from a segment's effort history: the listing's JSON is kept in `raw` (no document holds it).
EFFORTS = Mapping(
    "segment_efforts",
    ("effort_id",),
    EFFORT_COLUMNS,
    source=Elements("segment_efforts"),
    update_when="segment_efforts.raw IS DISTINCT FROM excluded.raw",
)
# Efforts of a detailed activity: typed columns only, their JSON is in the activity's document (activity_documents).
# A JSON text per effort made DuckDB's checkpoints rewrite ≈ 1 KB per effort whenever they merged the table's row
# groups, so a backfill's peak memory grew with the history (bench load: 1.46× → 1.09–1.18× from 10k to 100k
# activities; db.ROW_GROUP_SIZE did the rest).
# An effort also in a history keeps that listing's JSON (`raw` is not among these columns, so never overwritten).
DETAIL_EFFORT_COLUMNS = tuple(c for c in EFFORT_COLUMNS if c.name != "raw")
DETAIL_EFFORTS = Mapping(
    "segment_efforts",
    ("effort_id",),
    DETAIL_EFFORT_COLUMNS,
    source=Elements("segment_efforts"),
    update_when=differs("segment_efforts", DETAIL_EFFORT_COLUMNS, ("effort_id",)),
)


def segment_columns(src: str) -> tuple[Column, ...]:
    return (
        value("segment_id", "BIGINT", at="id", src=src),
        *fields(
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
        coord("start_lat", "start_latlng", 0, src=src),
        coord("start_lng", "start_latlng", 1, src=src),
        coord("end_lat", "end_latlng", 0, src=src),
        coord("end_lng", "end_latlng", 1, src=src),
        text("polyline", at="map.polyline", src=src),
        sql("synced_at", "fetched_at"),
        kept("raw", src=src),
    )


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
    source=Members("segment_efforts", "segment", "seg"),
    update_when=SEGMENT_UPDATE_WHEN,
)

STARRED = Mapping(
    "starred_segments",
    ("athlete_id", "segment_id"),
    (
        sql("athlete_id", "batch_athlete_id"),
        value("segment_id", "BIGINT", at="id"),
        sql("synced_at", "fetched_at"),
        kept("raw"),
    ),
    update_when="starred_segments.raw IS DISTINCT FROM excluded.raw",
)

ACTIVITY_ZONES = Mapping(
    "activity_zones",
    ("activity_id", "zone_type"),
    (
        sql("activity_id", "batch_activity_id"),
        text("zone_type", at="type", src=ITEM),
        value("score", "DOUBLE", src=ITEM),
        value("sensor_based", "BOOLEAN", src=ITEM),
        value("points", "INTEGER", src=ITEM),
        value("custom_zones", "BOOLEAN", src=ITEM),
        kept("raw", src=ITEM),
    ),
    source=Elements("zones"),
    update_when="activity_zones.raw IS DISTINCT FROM excluded.raw",
)

ZONE_BUCKETS_SOURCE = Rows(
    "(SELECT batch_activity_id, zone->>'$.type' AS zone_type, unnest(buckets) AS bucket, "
    "generate_subscripts(buckets, 1) AS bucket_index FROM (SELECT batch_activity_id, item AS zone, "
    "CAST(json_extract(item, '$.distribution_buckets') AS JSON[]) AS buckets FROM " + Elements("zones").sql + "))",
    arrays=("zones",),
)
BUCKET_COLUMNS = (
    sql("activity_id", "batch_activity_id"),
    sql("zone_type", "zone_type"),
    sql("bucket_index", "bucket_index"),
    value("min", "DOUBLE", src="bucket"),
    value("max", "DOUBLE", src="bucket"),
    value("seconds", "INTEGER", at="time", src="bucket"),
)
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
    (
        value("athlete_id", "BIGINT", at="id"),
        *fields(
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
        instant("created_at"),
        instant("updated_at"),
        sql("synced_at", "fetched_at"),
        kept("raw"),
    ),
    update_when="athletes.raw IS DISTINCT FROM excluded.raw",
)

# The profile's FTP and weight per day fetched: the history behind the ftp_timeline view.
ATHLETE_SNAPSHOTS = Mapping(
    "athlete_snapshots",
    ("athlete_id", "snapshot_date"),
    (
        value("athlete_id", "BIGINT", at="id"),
        sql("snapshot_date", "snapshot_date"),
        value("ftp", "DOUBLE"),
        value("weight", "DOUBLE"),
        sql("synced_at", "fetched_at"),
    ),
    update_when="(athlete_snapshots.ftp, athlete_snapshots.weight) IS DISTINCT FROM (excluded.ftp, excluded.weight)",
)

GEAR_SOURCE = Rows(
    "(SELECT *, 'bike' AS kind, unnest(CAST(json_extract(raw, '$.bikes') AS JSON[])) AS item FROM batch "
    "UNION ALL SELECT *, 'shoe' AS kind, unnest(CAST(json_extract(raw, '$.shoes') AS JSON[])) AS item "
    "FROM batch)"
)
GEAR = Mapping(
    "gear",
    ("gear_id",),
    (
        text("gear_id", at="id", src=ITEM),
        value("athlete_id", "BIGINT", at="id"),
        sql("kind", "kind"),
        text("name", src=ITEM),
        value("is_primary", "BOOLEAN", at="primary", src=ITEM),
        value("distance", "DOUBLE", src=ITEM),
        value("retired", "BOOLEAN", src=ITEM),
        sql("synced_at", "fetched_at"),
        kept("raw", src=ITEM),
    ),
    source=GEAR_SOURCE,
    update_when="gear.raw IS DISTINCT FROM excluded.raw",
)

ATHLETE_STATS = Mapping(
    "athlete_stats",
    ("athlete_id", "snapshot_date"),
    (
        sql("athlete_id", "batch_athlete_id"),
        sql("snapshot_date", "snapshot_date"),
        value("biggest_ride_distance", "DOUBLE"),
        value("biggest_climb_elevation_gain", "DOUBLE"),
        sql("synced_at", "fetched_at"),
        kept("raw"),
    ),
    update_when="athlete_stats.raw IS DISTINCT FROM excluded.raw",
)

STATS_TOTALS_SOURCE = Rows(
    "(SELECT batch_athlete_id, snapshot_date, p.period, s.sport, "
    "json_extract(raw, '$.' || p.period || '_' || s.sport || '_totals') AS totals FROM batch, "
    "(VALUES ('recent'), ('ytd'), ('all')) AS p(period), (VALUES ('ride'), ('run'), ('swim')) AS s(sport))"
)
TOTALS_COLUMNS = (
    sql("athlete_id", "batch_athlete_id"),
    sql("snapshot_date", "snapshot_date"),
    sql("period", "period"),
    sql("sport", "sport"),
    *fields(
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
)
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
ATHLETE_ZONES_SOURCE = Rows(
    "(SELECT batch_athlete_id, snapshot_date, fetched_at, coalesce(raw->>'$.shape', 'array') AS shape, item AS zone, "
    "coalesce(json_extract(item, '$.received'), item) AS received, unnest(buckets) AS bucket, "
    "generate_subscripts(buckets, 1) AS bucket_index FROM (SELECT *, "
    "CAST(json_extract(item, '$.distribution_buckets') AS JSON[]) AS buckets FROM " + Elements("zones").sql + "))",
    arrays=("zones",),
)
ATHLETE_ZONES = Mapping(
    "athlete_zones",
    ("athlete_id", "snapshot_date", "zone_type", "bucket_index"),
    (
        sql("athlete_id", "batch_athlete_id"),
        sql("snapshot_date", "snapshot_date"),
        text("zone_type", at="type", src="zone"),
        sql("bucket_index", "bucket_index"),
        value("min", "DOUBLE", src="bucket"),
        value("max", "DOUBLE", src="bucket"),
        value("seconds", "INTEGER", at="time", src="bucket"),
        sql("shape", "shape"),
        value("custom_zones", "BOOLEAN", src="zone"),
        sql("synced_at", "fetched_at"),
        kept("raw", src="received"),
    ),
    source=ATHLETE_ZONES_SOURCE,
    update_when="athlete_zones.raw IS DISTINCT FROM excluded.raw",
)

UNRECOGNIZED = Mapping(
    "unrecognized_payloads",
    ("athlete_id", "endpoint", "object_id", "problem"),
    (
        sql("athlete_id", "batch_athlete_id"),
        text("endpoint"),
        text("object_id", default="''"),
        text("problem"),
        sql("received_at", "fetched_at"),
        kept("raw", at="body"),
    ),
    update_when="unrecognized_payloads.raw IS DISTINCT FROM excluded.raw",
)
