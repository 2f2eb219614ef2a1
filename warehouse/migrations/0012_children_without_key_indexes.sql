-- fitsync warehouse, schema 12: the child tables of activities (splits, laps, efforts, zones and zone buckets)
-- without their PRIMARY KEY indexes. They are 97 rows in 100 a load writes. DuckDB keeps a table's key index in
-- memory once a writer touches it, so a backfill's memory grew with the history (bench load: ≈ +50 MiB from 10k to
-- 100k activities); the index on a split's (activity_id, split) also took half of the splits' insert and commit and
-- 37 % of the file. The keys stay unique by construction: a load replaces an activity's children as a whole, inserts
-- only keys not stored (an anti-join), one writer at a time, each batch's rows distinct by key; the `unique_keys`
-- asset check verifies every key after every load. DuckDB cannot drop a table's key, so each table is rebuilt with
-- the same columns, comments and rows (in key order); the views read them by name.
CREATE TABLE splits_metric_rebuilt (
    activity_id BIGINT NOT NULL,
    split INTEGER NOT NULL,
    distance DOUBLE,
    elapsed_time INTEGER,
    moving_time INTEGER,
    elevation_difference DOUBLE,
    average_speed DOUBLE,
    pace_zone INTEGER,
    raw JSON,
    average_heartrate DOUBLE,
    average_grade_adjusted_speed DOUBLE
);
INSERT INTO splits_metric_rebuilt SELECT activity_id, split, distance, elapsed_time, moving_time, elevation_difference, average_speed, pace_zone, raw, average_heartrate, average_grade_adjusted_speed FROM splits_metric ORDER BY activity_id, split;
DROP TABLE splits_metric;
ALTER TABLE splits_metric_rebuilt RENAME TO splits_metric;
COMMENT ON TABLE splits_metric IS 'Per-kilometre splits of an activity, from its detail (splits_metric array); replaced when the detail is re-fetched. Unique by (activity_id, split), without an index (schema 12)';
COMMENT ON COLUMN splits_metric.activity_id IS 'The activity the split belongs to';
COMMENT ON COLUMN splits_metric.split IS 'Split number, 1-based from the start';
COMMENT ON COLUMN splits_metric.distance IS 'Distance of the split, in metres (about 1000; the last split is usually shorter)';
COMMENT ON COLUMN splits_metric.elapsed_time IS 'Elapsed time of the split, in seconds';
COMMENT ON COLUMN splits_metric.moving_time IS 'Moving time of the split, in seconds';
COMMENT ON COLUMN splits_metric.elevation_difference IS 'Elevation at the end of the split minus at its start, in metres';
COMMENT ON COLUMN splits_metric.average_speed IS 'Average speed over the split, in m/s';
COMMENT ON COLUMN splits_metric.pace_zone IS 'The service''s pace zone of the split (running); 0 when none applies';
COMMENT ON COLUMN splits_metric.raw IS 'NULL: the split''s JSON is in its activity''s document (activity_documents); splits loaded before schema 9 kept it here';
COMMENT ON COLUMN splits_metric.average_heartrate IS 'Average heart rate over the split, bpm (the real service sends it; the spec does not)';
COMMENT ON COLUMN splits_metric.average_grade_adjusted_speed IS 'Grade-adjusted average speed over the split, m/s (real service only)';

CREATE TABLE laps_rebuilt (
    lap_id BIGINT NOT NULL,
    activity_id BIGINT NOT NULL,
    lap_index INTEGER,
    name VARCHAR,
    elapsed_time INTEGER,
    moving_time INTEGER,
    start_date TIMESTAMP WITH TIME ZONE,
    start_date_local TIMESTAMP,
    distance DOUBLE,
    total_elevation_gain DOUBLE,
    average_speed DOUBLE,
    max_speed DOUBLE,
    average_cadence DOUBLE,
    device_watts BOOLEAN,
    average_watts DOUBLE,
    start_index INTEGER,
    end_index INTEGER,
    split INTEGER,
    raw JSON,
    average_heartrate DOUBLE,
    max_heartrate DOUBLE
);
INSERT INTO laps_rebuilt SELECT lap_id, activity_id, lap_index, name, elapsed_time, moving_time, start_date, start_date_local, distance, total_elevation_gain, average_speed, max_speed, average_cadence, device_watts, average_watts, start_index, end_index, split, raw, average_heartrate, max_heartrate FROM laps ORDER BY lap_id;
DROP TABLE laps;
ALTER TABLE laps_rebuilt RENAME TO laps;
COMMENT ON TABLE laps IS 'Laps of an activity, from its detail (laps array); replaced when the detail is re-fetched. Unique by (lap_id), without an index (schema 12)';
COMMENT ON COLUMN laps.lap_id IS 'The service''s lap id';
COMMENT ON COLUMN laps.activity_id IS 'The activity the lap belongs to';
COMMENT ON COLUMN laps.lap_index IS 'Lap number within the activity, 1-based';
COMMENT ON COLUMN laps.name IS 'Name of the lap, e.g. Lap 1';
COMMENT ON COLUMN laps.elapsed_time IS 'Elapsed time of the lap, in seconds';
COMMENT ON COLUMN laps.moving_time IS 'Moving time of the lap, in seconds';
COMMENT ON COLUMN laps.start_date IS 'Start instant of the lap (UTC)';
COMMENT ON COLUMN laps.start_date_local IS 'Start of the lap in the athlete''s local wall-clock time (the API''s trailing Z dropped)';
COMMENT ON COLUMN laps.distance IS 'Distance of the lap, in metres';
COMMENT ON COLUMN laps.total_elevation_gain IS 'Elevation gain over the lap, in metres';
COMMENT ON COLUMN laps.average_speed IS 'Average speed over the lap, in m/s';
COMMENT ON COLUMN laps.max_speed IS 'Maximum speed in the lap, in m/s';
COMMENT ON COLUMN laps.average_cadence IS 'Average cadence in the lap: rpm when cycling, strides per minute when running';
COMMENT ON COLUMN laps.device_watts IS 'Whether the lap''s power came from a power meter rather than the service''s estimate';
COMMENT ON COLUMN laps.average_watts IS 'Average power over the lap, in watts';
COMMENT ON COLUMN laps.start_index IS 'Index of the lap''s first sample in the activity''s data streams';
COMMENT ON COLUMN laps.end_index IS 'Index of the lap''s last sample in the activity''s data streams';
COMMENT ON COLUMN laps.split IS 'Split number the service gives the lap (usually equal to lap_index)';
COMMENT ON COLUMN laps.raw IS 'NULL: the lap''s JSON is in its activity''s document (activity_documents); laps loaded before schema 9 kept it here';
COMMENT ON COLUMN laps.average_heartrate IS 'Average heart rate over the lap, bpm (real service only)';
COMMENT ON COLUMN laps.max_heartrate IS 'Highest heart rate of the lap, bpm (real service only)';

CREATE TABLE segment_efforts_rebuilt (
    effort_id BIGINT NOT NULL,
    activity_id BIGINT NOT NULL,
    athlete_id BIGINT NOT NULL,
    segment_id BIGINT NOT NULL,
    name VARCHAR,
    elapsed_time INTEGER,
    moving_time INTEGER,
    start_date TIMESTAMP WITH TIME ZONE,
    start_date_local TIMESTAMP,
    distance DOUBLE,
    start_index INTEGER,
    end_index INTEGER,
    average_cadence DOUBLE,
    device_watts BOOLEAN,
    average_watts DOUBLE,
    average_heartrate DOUBLE,
    max_heartrate DOUBLE,
    pr_rank INTEGER,
    kom_rank INTEGER,
    hidden BOOLEAN,
    achievements JSON,
    raw JSON
);
INSERT INTO segment_efforts_rebuilt SELECT effort_id, activity_id, athlete_id, segment_id, name, elapsed_time, moving_time, start_date, start_date_local, distance, start_index, end_index, average_cadence, device_watts, average_watts, average_heartrate, max_heartrate, pr_rank, kom_rank, hidden, achievements, raw FROM segment_efforts ORDER BY effort_id;
DROP TABLE segment_efforts;
ALTER TABLE segment_efforts_rebuilt RENAME TO segment_efforts;
COMMENT ON TABLE segment_efforts IS 'Efforts on segments: from activity details, and from effort histories of starred segments (subscribers). Unique by (effort_id), without an index (schema 12)';
COMMENT ON COLUMN segment_efforts.effort_id IS 'The service''s segment effort id';
COMMENT ON COLUMN segment_efforts.activity_id IS 'The activity the effort is part of (the effort''s activity.id)';
COMMENT ON COLUMN segment_efforts.athlete_id IS 'The athlete who rode or ran the effort (the one whose sync fetched it)';
COMMENT ON COLUMN segment_efforts.segment_id IS 'The segment the effort is on (segments.segment_id)';
COMMENT ON COLUMN segment_efforts.name IS 'Name of the segment as the effort carries it';
COMMENT ON COLUMN segment_efforts.elapsed_time IS 'Time from the start to the end of the segment, in seconds; the PR views rank by it';
COMMENT ON COLUMN segment_efforts.moving_time IS 'Moving time on the segment, in seconds';
COMMENT ON COLUMN segment_efforts.start_date IS 'Start instant of the effort (UTC)';
COMMENT ON COLUMN segment_efforts.start_date_local IS 'Start of the effort in the athlete''s local wall-clock time (the API''s trailing Z dropped)';
COMMENT ON COLUMN segment_efforts.distance IS 'Distance of the effort, in metres';
COMMENT ON COLUMN segment_efforts.start_index IS 'Index of the effort''s first sample in the activity''s data streams';
COMMENT ON COLUMN segment_efforts.end_index IS 'Index of the effort''s last sample in the activity''s data streams';
COMMENT ON COLUMN segment_efforts.average_cadence IS 'Average cadence on the segment: rpm when cycling, strides per minute when running';
COMMENT ON COLUMN segment_efforts.device_watts IS 'Whether the effort''s power came from a power meter rather than the service''s estimate';
COMMENT ON COLUMN segment_efforts.average_watts IS 'Average power on the segment, in watts';
COMMENT ON COLUMN segment_efforts.average_heartrate IS 'Average heart rate on the segment, in bpm';
COMMENT ON COLUMN segment_efforts.max_heartrate IS 'Maximum heart rate on the segment, in bpm';
COMMENT ON COLUMN segment_efforts.pr_rank IS 'The service''s rank among the athlete''s own efforts at upload time (1-3), else NULL; a snapshot, not kept current';
COMMENT ON COLUMN segment_efforts.kom_rank IS 'The service''s rank on the segment''s overall leaderboard at upload time (1-10), else NULL';
COMMENT ON COLUMN segment_efforts.hidden IS 'Whether the service marks the effort hidden; the analysis views leave hidden efforts out';
COMMENT ON COLUMN segment_efforts.achievements IS 'The effort''s achievements as sent: a JSON array of {type_id, type, rank}';
COMMENT ON COLUMN segment_efforts.raw IS 'The effort JSON as a segment''s effort history sent it, including its embedded segment summary; NULL for an effort that came only in its detailed activity, whose document holds it (activity_documents); efforts loaded before schema 10 keep it here';

CREATE TABLE activity_zones_rebuilt (
    activity_id BIGINT NOT NULL,
    zone_type VARCHAR NOT NULL,
    score DOUBLE,
    sensor_based BOOLEAN,
    points INTEGER,
    custom_zones BOOLEAN,
    raw JSON NOT NULL
);
INSERT INTO activity_zones_rebuilt SELECT activity_id, zone_type, score, sensor_based, points, custom_zones, raw FROM activity_zones ORDER BY activity_id, zone_type;
DROP TABLE activity_zones;
ALTER TABLE activity_zones_rebuilt RENAME TO activity_zones;
COMMENT ON TABLE activity_zones IS 'An activity''s zone distributions (GET /activities/{id}/zones, a paid feature): one row per zone type. Unique by (activity_id, zone_type), without an index (schema 12)';
COMMENT ON COLUMN activity_zones.activity_id IS 'The activity the distribution belongs to';
COMMENT ON COLUMN activity_zones.zone_type IS 'heartrate or power (the real service also sends pace)';
COMMENT ON COLUMN activity_zones.score IS 'The service''s score for the distribution: relative effort for heartrate, a power-based training load for power';
COMMENT ON COLUMN activity_zones.sensor_based IS 'Whether the distribution comes from sensor data rather than an estimate';
COMMENT ON COLUMN activity_zones.points IS 'The service''s points value for the distribution, as sent (undocumented by the service)';
COMMENT ON COLUMN activity_zones.custom_zones IS 'Whether the athlete''s custom zones (not the service''s defaults) were used';
COMMENT ON COLUMN activity_zones.raw IS 'The zone distribution JSON as sent, buckets included';

CREATE TABLE activity_zone_buckets_rebuilt (
    activity_id BIGINT NOT NULL,
    zone_type VARCHAR NOT NULL,
    bucket_index INTEGER NOT NULL,
    min DOUBLE,
    max DOUBLE,
    seconds INTEGER
);
INSERT INTO activity_zone_buckets_rebuilt SELECT activity_id, zone_type, bucket_index, min, max, seconds FROM activity_zone_buckets ORDER BY activity_id, zone_type, bucket_index;
DROP TABLE activity_zone_buckets;
ALTER TABLE activity_zone_buckets_rebuilt RENAME TO activity_zone_buckets;
COMMENT ON TABLE activity_zone_buckets IS 'Time in each zone of an activity, with the bounds the activity''s zones had then: one row per bucket. Unique by (activity_id, zone_type, bucket_index), without an index (schema 12)';
COMMENT ON COLUMN activity_zone_buckets.activity_id IS 'The activity the bucket belongs to';
COMMENT ON COLUMN activity_zone_buckets.zone_type IS 'heartrate or power (the real service also sends pace), as in activity_zones';
COMMENT ON COLUMN activity_zone_buckets.bucket_index IS 'Zone number, 1-based from the lowest zone';
COMMENT ON COLUMN activity_zone_buckets.min IS 'Lower bound of the zone: bpm for heartrate, watts for power';
COMMENT ON COLUMN activity_zone_buckets.max IS 'Upper bound of the zone (bpm or watts); -1 means no upper bound (the top zone)';
COMMENT ON COLUMN activity_zone_buckets.seconds IS 'Time spent in the zone during the activity, in seconds';

