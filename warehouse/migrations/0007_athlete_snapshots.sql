-- fitsync warehouse, schema 7: the profile as fitsync saw it, day by day. athletes keeps the latest profile; the
-- FTP (and weight) of each day the profile was fetched is kept here, so a load computed for 2019 uses the FTP of
-- 2019, not today's (the ftp_timeline view). Warehouses from before start with the snapshot they have.
CREATE TABLE athlete_snapshots (
    athlete_id BIGINT NOT NULL,
    snapshot_date DATE NOT NULL,
    ftp DOUBLE,
    weight DOUBLE,
    synced_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (athlete_id, snapshot_date)
);
INSERT INTO athlete_snapshots
SELECT athlete_id, CAST(timezone('UTC', synced_at) AS DATE), ftp, weight, synced_at FROM athletes;
COMMENT ON TABLE athlete_snapshots IS 'The athlete''s profile FTP and weight on each day fitsync fetched the profile (UTC date): the history behind ftp_timeline';
COMMENT ON COLUMN athlete_snapshots.athlete_id IS 'The athlete';
COMMENT ON COLUMN athlete_snapshots.snapshot_date IS 'UTC date of the fetch (a later fetch that day with other values replaces the row)';
COMMENT ON COLUMN athlete_snapshots.ftp IS 'Functional threshold power in the profile that day, watts (NULL: none set)';
COMMENT ON COLUMN athlete_snapshots.weight IS 'Weight in the profile that day, kg';
COMMENT ON COLUMN athlete_snapshots.synced_at IS 'When that fetch happened (UTC)';
