-- fitsync warehouse, schema 2: the small settings tables the analysis views read (warehouse/analysis_views.sql).
-- Configurable values live here, not in the SQL: change a row, every view follows.

-- --- settings -----------------------------------------------------------------------------------------------

CREATE TABLE analysis_settings (
    name VARCHAR PRIMARY KEY,
    value DOUBLE NOT NULL,
    description VARCHAR
);
INSERT INTO analysis_settings VALUES
    ('ctl_days', 42, 'CTL (fitness) time constant in days: CTL += (load - CTL) * (1 - exp(-1/ctl_days))'),
    ('atl_days', 7, 'ATL (fatigue) time constant in days: ATL += (load - ATL) * (1 - exp(-1/atl_days))'),
    ('ramp_days', 7, 'ramp rate = CTL today - CTL this many days earlier (0 before the series starts)'),
    ('pi_polarized_above', 2, 'a polarization index above this is a polarized distribution (Treff et al. 2019)');

-- The athlete's zones (by count of zones in the activity's buckets) mapped onto Seiler's three zones:
-- 1 = below the first threshold, 2 = between the thresholds, 3 = above the second. athlete_id 0 is everyone's
-- default; a row for an athlete overrides the default row with the same zone_type, zone_count and bucket_index.
CREATE TABLE analysis_seiler_zones (
    athlete_id BIGINT NOT NULL DEFAULT 0,
    zone_type VARCHAR NOT NULL,       -- heartrate | power
    zone_count INTEGER NOT NULL,      -- number of buckets the activity's zones have
    bucket_index INTEGER NOT NULL,    -- 1-based, as in activity_zone_buckets
    seiler_zone INTEGER NOT NULL CHECK (seiler_zone IN (1, 2, 3)),
    PRIMARY KEY (athlete_id, zone_type, zone_count, bucket_index)
);
INSERT INTO analysis_seiler_zones VALUES
    -- heart rate, 5 zones (endurance, moderate | tempo | threshold, anaerobic)
    (0, 'heartrate', 5, 1, 1), (0, 'heartrate', 5, 2, 1), (0, 'heartrate', 5, 3, 2),
    (0, 'heartrate', 5, 4, 3), (0, 'heartrate', 5, 5, 3),
    -- power, 7 zones (active recovery, endurance | tempo, threshold | VO2max, anaerobic, neuromuscular)
    (0, 'power', 7, 1, 1), (0, 'power', 7, 2, 1), (0, 'power', 7, 3, 2), (0, 'power', 7, 4, 2),
    (0, 'power', 7, 5, 3), (0, 'power', 7, 6, 3), (0, 'power', 7, 7, 3);

-- FTP by date: the row with the latest valid_from on or before the activity's local date applies; with none,
-- the athlete's current profile FTP (athletes.ftp) does.
CREATE TABLE analysis_ftp_history (
    athlete_id BIGINT NOT NULL,
    valid_from DATE NOT NULL,
    ftp DOUBLE NOT NULL CHECK (ftp > 0),
    note VARCHAR,
    PRIMARY KEY (athlete_id, valid_from)
);

-- Sport types grouped into families (Eddington, YTD); power_tss says whether a device-power activity of that
-- type gets a power-based TSS from the (cycling) FTP. Types not listed are family 'Other' without power TSS.
CREATE TABLE analysis_sport_families (
    sport_type VARCHAR PRIMARY KEY,
    family VARCHAR NOT NULL,
    power_tss BOOLEAN NOT NULL DEFAULT false
);
INSERT INTO analysis_sport_families VALUES
    ('Ride', 'Ride', true), ('VirtualRide', 'Ride', true), ('GravelRide', 'Ride', true),
    ('MountainBikeRide', 'Ride', true), ('EBikeRide', 'Ride', false), ('EMountainBikeRide', 'Ride', false),
    ('Handcycle', 'Ride', true), ('Velomobile', 'Ride', true),
    ('Run', 'Run', false), ('TrailRun', 'Run', false), ('VirtualRun', 'Run', false),
    ('Swim', 'Swim', false),
    ('Walk', 'Walk/Hike', false), ('Hike', 'Walk/Hike', false),
    ('NordicSki', 'Ski', false), ('BackcountrySki', 'Ski', false), ('AlpineSki', 'Ski', false),
    ('RollerSki', 'Ski', false);

-- Form (TSB) bands for the PMC: tsb_from inclusive, tsb_to exclusive, NULL = unbounded.
CREATE TABLE analysis_form_bands (
    band VARCHAR PRIMARY KEY,
    tsb_from DOUBLE,
    tsb_to DOUBLE,
    sort_order INTEGER NOT NULL
);
INSERT INTO analysis_form_bands VALUES
    ('high risk', NULL, -30, 1), ('optimal', -30, -10, 2), ('grey zone', -10, 5, 3), ('fresh', 5, 25, 4),
    ('transition', 25, NULL, 5);
