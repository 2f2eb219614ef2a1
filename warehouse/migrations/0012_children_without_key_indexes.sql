-- fitsync warehouse, schema 12: splits_metric and activity_zone_buckets without their PRIMARY KEY indexes. They are
-- nine rows in ten a load writes, and DuckDB's index on a split's (activity_id, split) took half of their insert and
-- of their commit (bench load, issue 15), 37 % of the file, and memory that grows with the history. Their keys stay
-- unique by construction: a load replaces an activity's splits and zone buckets as a whole, one writer at a time,
-- each batch's rows distinct by key; the `unique_keys` asset check verifies it after every load. (Laps and efforts
-- keep theirs: the service's own ids, which the index keeps from repeating across activities.) DuckDB cannot drop a
-- table's key, so the tables are rebuilt (same columns, rows in key order); the views read them by name.
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
INSERT INTO splits_metric_rebuilt
    SELECT activity_id, split, distance, elapsed_time, moving_time, elevation_difference, average_speed, pace_zone, raw,
           average_heartrate, average_grade_adjusted_speed
    FROM splits_metric ORDER BY activity_id, split;
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

CREATE TABLE activity_zone_buckets_rebuilt (
    activity_id BIGINT NOT NULL,
    zone_type VARCHAR NOT NULL,
    bucket_index INTEGER NOT NULL,
    min DOUBLE,
    max DOUBLE,
    seconds INTEGER
);
INSERT INTO activity_zone_buckets_rebuilt
    SELECT activity_id, zone_type, bucket_index, min, max, seconds FROM activity_zone_buckets
    ORDER BY activity_id, zone_type, bucket_index;
DROP TABLE activity_zone_buckets;
ALTER TABLE activity_zone_buckets_rebuilt RENAME TO activity_zone_buckets;
COMMENT ON TABLE activity_zone_buckets IS 'Time in each zone of an activity, with the bounds the activity''s zones had then: one row per bucket. Unique by (activity_id, zone_type, bucket_index), without an index (schema 12)';
COMMENT ON COLUMN activity_zone_buckets.activity_id IS 'The activity the bucket belongs to';
COMMENT ON COLUMN activity_zone_buckets.zone_type IS 'heartrate or power (the real service also sends pace), as in activity_zones';
COMMENT ON COLUMN activity_zone_buckets.bucket_index IS 'Zone number, 1-based from the lowest zone';
COMMENT ON COLUMN activity_zone_buckets.min IS 'Lower bound of the zone: bpm for heartrate, watts for power';
COMMENT ON COLUMN activity_zone_buckets.max IS 'Upper bound of the zone (bpm or watts); -1 means no upper bound (the top zone)';
COMMENT ON COLUMN activity_zone_buckets.seconds IS 'Time spent in the zone during the activity, in seconds';
