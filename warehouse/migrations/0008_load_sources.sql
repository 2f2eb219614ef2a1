-- fitsync warehouse, schema 8: a load for every activity, and what power-duration and best efforts are computed for. Besides power TSS and the suffer score, activity_load
-- now uses heart-rate TSS (from a lactate-threshold heart rate), running pace TSS (from a threshold pace) and, for
-- an activity with none of these, an estimate from its duration and its sport's usual intensity. The thresholds
-- and intensities are rows here, like every other analysis setting.

-- Thresholds by date, set by the athlete or coach: the row with the latest valid_from on or before the activity's
-- local date applies (each column on its own: a row may set only one).
CREATE TABLE analysis_thresholds (
    athlete_id BIGINT NOT NULL,
    valid_from DATE NOT NULL,
    lthr DOUBLE CHECK (lthr > 0),
    threshold_pace_s_per_km DOUBLE CHECK (threshold_pace_s_per_km > 0),
    note VARCHAR,
    PRIMARY KEY (athlete_id, valid_from)
);
COMMENT ON TABLE analysis_thresholds IS 'Lactate-threshold heart rate and running threshold pace by date, per athlete: the latest row on or before an activity''s local date applies';
COMMENT ON COLUMN analysis_thresholds.athlete_id IS 'The athlete';
COMMENT ON COLUMN analysis_thresholds.valid_from IS 'First local date the values apply';
COMMENT ON COLUMN analysis_thresholds.lthr IS 'Lactate-threshold heart rate, bpm (NULL: this row does not set it); without any, the lower bound of heart-rate zone lthr_zone is used';
COMMENT ON COLUMN analysis_thresholds.threshold_pace_s_per_km IS 'Running threshold pace, seconds per km (NULL: this row does not set it); runs get pace TSS only with one';
COMMENT ON COLUMN analysis_thresholds.note IS 'Free text: where the value came from';

-- The usual intensity of a sport, for the estimated load: load = hours × estimate_if² × 100.
ALTER TABLE analysis_sport_families ADD COLUMN estimate_if DOUBLE;
UPDATE analysis_sport_families SET estimate_if = CASE
    WHEN sport_type IN ('EBikeRide', 'EMountainBikeRide', 'AlpineSki') THEN 0.45
    WHEN family = 'Ride' THEN 0.65
    WHEN family = 'Run' THEN 0.75
    WHEN family = 'Swim' THEN 0.70
    WHEN family = 'Walk/Hike' THEN 0.50
    WHEN family = 'Ski' THEN 0.65
    ELSE 0.55 END;
COMMENT ON COLUMN analysis_sport_families.estimate_if IS 'Intensity factor of an estimated load (an activity without power, heart rate, pace or suffer score): load = hours × estimate_if² × 100';

INSERT INTO analysis_settings VALUES
    ('lthr_zone', 4, 'Without an analysis_thresholds LTHR: the lower bound of this zone of the athlete''s 5 heart-rate zones (the service''s threshold zone) is the LTHR'),
    ('estimate_if_default', 0.55, 'estimate_if of a sport type not in analysis_sport_families'),
    ('acwr_acute_days', 7, 'Acute window of the acute:chronic workload ratio, days (rolling mean; EWMA span)'),
    ('acwr_chronic_days', 28, 'Chronic window of the acute:chronic workload ratio, days (rolling mean; EWMA span)'),
    ('monotony_days', 7, 'Window of training monotony and strain (Foster), days');

-- Power-duration and running best efforts: the durations and distances they are computed for, and the window of
-- the critical-power fit, as rows.
CREATE TABLE analysis_power_durations (
    duration_s INTEGER PRIMARY KEY CHECK (duration_s > 0),
    label VARCHAR NOT NULL
);
INSERT INTO analysis_power_durations VALUES
    (5, '5 s'), (15, '15 s'), (30, '30 s'), (60, '1 min'), (120, '2 min'), (180, '3 min'), (300, '5 min'),
    (480, '8 min'), (600, '10 min'), (720, '12 min'), (900, '15 min'), (1200, '20 min'), (1800, '30 min'),
    (2700, '45 min'), (3600, '1 h'), (5400, '1.5 h'), (7200, '2 h'), (10800, '3 h'), (14400, '4 h');
COMMENT ON TABLE analysis_power_durations IS 'The durations of the power-duration curve (mean-maximal power); the critical-power fit uses the best effort between each of them within its window';
COMMENT ON COLUMN analysis_power_durations.duration_s IS 'Duration, seconds';
COMMENT ON COLUMN analysis_power_durations.label IS 'How the duration is shown';

CREATE TABLE analysis_run_distances (
    splits INTEGER PRIMARY KEY CHECK (splits > 0),
    label VARCHAR NOT NULL
);
INSERT INTO analysis_run_distances VALUES (1, '1 km'), (5, '5 km'), (10, '10 km'), (21, 'half marathon (21 km)'),
    (42, 'marathon (42 km)');
COMMENT ON TABLE analysis_run_distances IS 'Running best efforts: each distance as a number of consecutive whole 1 km splits';
COMMENT ON COLUMN analysis_run_distances.splits IS 'Consecutive whole kilometre splits (splits_metric) the distance spans';
COMMENT ON COLUMN analysis_run_distances.label IS 'How the distance is shown';

INSERT INTO analysis_settings VALUES
    ('cp_min_s', 120, 'Shortest effort the critical-power fit uses, seconds (2 min)'),
    ('cp_max_s', 1200, 'Longest effort the critical-power fit uses, seconds (20 min)'),
    ('cp_min_points', 3, 'Fewest duration bands with an effort the critical-power fit needs; with fewer, CP and W'' are NULL');
COMMENT ON COLUMN analysis_settings.name IS 'Setting name: ctl_days, atl_days, ramp_days, pi_polarized_above, lthr_zone, estimate_if_default, acwr_acute_days, acwr_chronic_days, monotony_days, cp_min_s, cp_max_s, cp_min_points';

-- Durability and efficiency: the real service's splits and laps carry heart rate (the spec's do not), and its gear
-- summaries say whether a bike or shoe is retired. Typed columns, filled from the JSON kept so far.
ALTER TABLE splits_metric ADD COLUMN average_heartrate DOUBLE;
ALTER TABLE splits_metric ADD COLUMN average_grade_adjusted_speed DOUBLE;
UPDATE splits_metric SET average_heartrate = TRY_CAST(raw->>'$.average_heartrate' AS DOUBLE),
                         average_grade_adjusted_speed = TRY_CAST(raw->>'$.average_grade_adjusted_speed' AS DOUBLE);
ALTER TABLE laps ADD COLUMN average_heartrate DOUBLE;
ALTER TABLE laps ADD COLUMN max_heartrate DOUBLE;
UPDATE laps SET average_heartrate = TRY_CAST(raw->>'$.average_heartrate' AS DOUBLE),
                max_heartrate = TRY_CAST(raw->>'$.max_heartrate' AS DOUBLE);
ALTER TABLE gear ADD COLUMN retired BOOLEAN;
UPDATE gear SET retired = TRY_CAST(raw->>'$.retired' AS BOOLEAN);
COMMENT ON COLUMN splits_metric.average_heartrate IS 'Average heart rate over the split, bpm (the real service sends it; the spec does not)';
COMMENT ON COLUMN splits_metric.average_grade_adjusted_speed IS 'Grade-adjusted average speed over the split, m/s (real service only)';
COMMENT ON COLUMN laps.average_heartrate IS 'Average heart rate over the lap, bpm (real service only)';
COMMENT ON COLUMN laps.max_heartrate IS 'Highest heart rate of the lap, bpm (real service only)';
COMMENT ON COLUMN gear.retired IS 'Whether the service says the gear is retired (real service only; NULL when it does not say)';
