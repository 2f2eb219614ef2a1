-- fitsync warehouse, schema 1. Instants are TIMESTAMPTZ (UTC); the athlete's local start time is a plain
-- TIMESTAMP (wall clock) beside its IANA time zone and UTC offset — never a fake UTC. Every object keeps
-- the raw JSON it came from, so a schema change can be rebuilt without re-downloading.

CREATE TABLE athletes (
    athlete_id BIGINT PRIMARY KEY,
    username VARCHAR,
    firstname VARCHAR,
    lastname VARCHAR,
    city VARCHAR,
    state VARCHAR,
    country VARCHAR,
    sex VARCHAR,
    premium BOOLEAN,
    measurement_preference VARCHAR,
    ftp DOUBLE,
    weight DOUBLE,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    synced_at TIMESTAMPTZ NOT NULL,
    raw JSON NOT NULL
);

CREATE TABLE gear (
    gear_id VARCHAR PRIMARY KEY,
    athlete_id BIGINT NOT NULL,
    kind VARCHAR NOT NULL,
    name VARCHAR,
    is_primary BOOLEAN,
    distance DOUBLE,
    synced_at TIMESTAMPTZ NOT NULL,
    raw JSON NOT NULL
);

CREATE TABLE athlete_stats (
    athlete_id BIGINT NOT NULL,
    snapshot_date DATE NOT NULL,
    biggest_ride_distance DOUBLE,
    biggest_climb_elevation_gain DOUBLE,
    synced_at TIMESTAMPTZ NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (athlete_id, snapshot_date)
);

CREATE TABLE athlete_stats_totals (
    athlete_id BIGINT NOT NULL,
    snapshot_date DATE NOT NULL,
    period VARCHAR NOT NULL,          -- recent | ytd | all
    sport VARCHAR NOT NULL,           -- ride | run | swim
    count INTEGER,
    distance DOUBLE,
    moving_time INTEGER,
    elapsed_time INTEGER,
    elevation_gain DOUBLE,
    achievement_count INTEGER,
    PRIMARY KEY (athlete_id, snapshot_date, period, sport)
);

CREATE TABLE athlete_zones (
    athlete_id BIGINT NOT NULL,
    snapshot_date DATE NOT NULL,
    zone_type VARCHAR NOT NULL,       -- heartrate | power
    bucket_index INTEGER NOT NULL,
    min DOUBLE,
    max DOUBLE,                       -- -1: no upper bound
    seconds INTEGER,
    synced_at TIMESTAMPTZ NOT NULL,
    raw JSON NOT NULL,                -- the whole zone object
    PRIMARY KEY (athlete_id, snapshot_date, zone_type, bucket_index)
);

CREATE TABLE activities (
    activity_id BIGINT PRIMARY KEY,
    athlete_id BIGINT NOT NULL,
    name VARCHAR,
    sport_type VARCHAR,
    type VARCHAR,
    workout_type INTEGER,
    start_date TIMESTAMPTZ,
    start_date_local TIMESTAMP,
    timezone VARCHAR,
    utc_offset INTEGER,
    distance DOUBLE,
    moving_time INTEGER,
    elapsed_time INTEGER,
    total_elevation_gain DOUBLE,
    elev_high DOUBLE,
    elev_low DOUBLE,
    average_speed DOUBLE,
    max_speed DOUBLE,
    average_cadence DOUBLE,
    average_temp DOUBLE,
    has_heartrate BOOLEAN,
    average_heartrate DOUBLE,
    max_heartrate DOUBLE,
    device_watts BOOLEAN,
    average_watts DOUBLE,
    weighted_average_watts DOUBLE,
    max_watts DOUBLE,
    kilojoules DOUBLE,
    suffer_score DOUBLE,
    calories DOUBLE,
    achievement_count INTEGER,
    pr_count INTEGER,
    kudos_count INTEGER,
    trainer BOOLEAN,
    commute BOOLEAN,
    manual BOOLEAN,
    private BOOLEAN,
    visibility VARCHAR,
    flagged BOOLEAN,
    gear_id VARCHAR,
    description VARCHAR,
    device_name VARCHAR,
    external_id VARCHAR,
    start_lat DOUBLE,
    start_lng DOUBLE,
    end_lat DOUBLE,
    end_lng DOUBLE,
    summary_polyline VARCHAR,
    issues VARCHAR[],                 -- what did not match expectations (kept, flagged)
    listed_at TIMESTAMPTZ NOT NULL,
    detail_fetched_at TIMESTAMPTZ,
    summary_raw JSON NOT NULL,
    detail_raw JSON
);

CREATE TABLE splits_metric (
    activity_id BIGINT NOT NULL,
    split INTEGER NOT NULL,
    distance DOUBLE,
    elapsed_time INTEGER,
    moving_time INTEGER,
    elevation_difference DOUBLE,
    average_speed DOUBLE,
    pace_zone INTEGER,
    raw JSON NOT NULL,
    PRIMARY KEY (activity_id, split)
);

CREATE TABLE laps (
    lap_id BIGINT PRIMARY KEY,
    activity_id BIGINT NOT NULL,
    lap_index INTEGER,
    name VARCHAR,
    elapsed_time INTEGER,
    moving_time INTEGER,
    start_date TIMESTAMPTZ,
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
    raw JSON NOT NULL
);

CREATE TABLE segment_efforts (
    effort_id BIGINT PRIMARY KEY,
    activity_id BIGINT NOT NULL,
    athlete_id BIGINT NOT NULL,
    segment_id BIGINT NOT NULL,
    name VARCHAR,
    elapsed_time INTEGER,
    moving_time INTEGER,
    start_date TIMESTAMPTZ,
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
    raw JSON NOT NULL
);

CREATE TABLE segments (
    segment_id BIGINT PRIMARY KEY,
    name VARCHAR,
    activity_type VARCHAR,
    distance DOUBLE,
    average_grade DOUBLE,
    maximum_grade DOUBLE,
    elevation_high DOUBLE,
    elevation_low DOUBLE,
    total_elevation_gain DOUBLE,
    climb_category INTEGER,
    city VARCHAR,
    state VARCHAR,
    country VARCHAR,
    private BOOLEAN,
    hazardous BOOLEAN,
    start_lat DOUBLE,
    start_lng DOUBLE,
    end_lat DOUBLE,
    end_lng DOUBLE,
    effort_count INTEGER,
    athlete_count INTEGER,
    star_count INTEGER,
    polyline VARCHAR,
    resource_state INTEGER,           -- 2 summary (seen in an effort), 3 detailed
    synced_at TIMESTAMPTZ NOT NULL,
    raw JSON NOT NULL
);

CREATE TABLE starred_segments (
    athlete_id BIGINT NOT NULL,
    segment_id BIGINT NOT NULL,
    synced_at TIMESTAMPTZ NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (athlete_id, segment_id)
);

CREATE TABLE activity_zones (
    activity_id BIGINT NOT NULL,
    zone_type VARCHAR NOT NULL,
    score DOUBLE,
    sensor_based BOOLEAN,
    points INTEGER,
    custom_zones BOOLEAN,
    raw JSON NOT NULL,
    PRIMARY KEY (activity_id, zone_type)
);

CREATE TABLE activity_zone_buckets (
    activity_id BIGINT NOT NULL,
    zone_type VARCHAR NOT NULL,
    bucket_index INTEGER NOT NULL,
    min DOUBLE,
    max DOUBLE,                       -- -1: no upper bound
    seconds INTEGER,
    PRIMARY KEY (activity_id, zone_type, bucket_index)
);

CREATE TABLE deleted_activities (
    activity_id BIGINT NOT NULL,
    athlete_id BIGINT NOT NULL,
    deleted_at TIMESTAMPTZ NOT NULL,
    reason VARCHAR NOT NULL,          -- webhook delete | made private | missing in reconciliation | deauthorized
    last_summary_raw JSON,
    PRIMARY KEY (activity_id, deleted_at)
);
