-- fitsync warehouse, schema 13: critical power a coach can trust and heart-rate load on the power scale.
-- Critical power is fitted on the power-duration envelope and must pass physiological gates; heart-rate load is
-- time in each heart-rate zone times a load per hour of that zone (calibrated per athlete against power where both
-- exist), not average HR squared, which counts an easy hour at twice its weight. The values are rows, as every
-- other analysis setting. Aerobic decoupling leaves out the warm-up and needs a steady output.

INSERT INTO analysis_settings VALUES
    ('cp_min_spread', 3, 'The critical-power fit needs its longest point at least this many times its shortest'),
    ('cp_hour_s', 3600, 'Efforts at least this long (seconds) bound critical power from below'),
    ('cp_hour_share', 0.95, 'Critical power must be at least this share of the best power held for cp_hour_s or longer'),
    ('w_prime_min_j', 3000, 'Smallest plausible W'', joules; a fit below is NULL'),
    ('w_prime_max_j', 50000, 'Largest plausible W'', joules; a fit above is NULL'),
    ('hr_calibration_min_rides', 10, 'Rides with both power load and heart-rate zones an athlete needs before the heart-rate zone loads are calibrated to power'),
    ('hr_calibration_min_ratio', 0.5, 'Lowest calibration ratio (power load / default zone load) accepted; outside, the defaults stay'),
    ('hr_calibration_max_ratio', 2.0, 'Highest calibration ratio accepted; outside, the defaults stay'),
    ('pmc_constant_form', 0, 'CTL/ATL constant: 0 = 1 - exp(-1/days) (GoldenCheetah, the exact exponential), 1 = 1/days (TrainingPeaks)'),
    ('decoupling_warmup_s', 600, 'Aerobic decoupling leaves out the splits or laps that end within this much moving time, seconds'),
    ('decoupling_max_cv', 0.15, 'Aerobic decoupling needs a steady output: above this coefficient of variation it is NULL'),
    ('acwr_min_sessions', 8, 'Fewest activities in the chronic window before the acute:chronic ratios are shown (one session in four weeks gives 4.0)'),
    ('acwr_min_chronic_load', 10, 'Lowest chronic load, a day, before the acute:chronic ratios are shown');
COMMENT ON COLUMN analysis_settings.name IS 'Setting name: ctl_days, atl_days, ramp_days, pi_polarized_above, lthr_zone, estimate_if_default, acwr_acute_days, acwr_chronic_days, monotony_days, cp_min_s, cp_max_s, cp_min_points, cp_min_spread, cp_hour_s, cp_hour_share, w_prime_min_j, w_prime_max_j, hr_calibration_min_rides, hr_calibration_min_ratio, hr_calibration_max_ratio, pmc_constant_form, decoupling_warmup_s, decoupling_max_cv, acwr_min_sessions, acwr_min_chronic_load';

-- The critical-power window: 2 to 20 minutes, the last band 15-20 min inclusive (no band of exactly 20:00).
UPDATE analysis_settings SET description = 'Longest effort the critical-power fit uses, seconds (20 min, inclusive: the last band runs from the duration before it)'
WHERE name = 'cp_max_s';

-- Heart-rate load per hour in each zone, by the number of zones the activity's heart-rate buckets have. The
-- service's five zones put the lactate threshold at the start of zone 4 (lthr_zone). An hour at threshold is 100
-- on every scale fitsync adds up; below it load falls faster than heart rate (an hour at 80 % of LTHR is about 30,
-- the TrainingPeaks hrTSS scale), so the defaults are the TSS an hour in each zone is worth at the zone's usual
-- intensity. Per athlete they are scaled to power where enough rides have both (activity_load.hr_calibration).
CREATE TABLE analysis_hr_zone_weights (
    zone_count INTEGER NOT NULL,
    zone INTEGER NOT NULL,
    load_per_hour DOUBLE NOT NULL CHECK (load_per_hour >= 0),
    PRIMARY KEY (zone_count, zone)
);
INSERT INTO analysis_hr_zone_weights VALUES (5, 1, 30), (5, 2, 55), (5, 3, 75), (5, 4, 100), (5, 5, 125);
COMMENT ON TABLE analysis_hr_zone_weights IS 'Heart-rate load (TSS scale) of an hour in each heart-rate zone, by the zone count of the activity''s buckets; scaled per athlete to power when enough rides have both';
COMMENT ON COLUMN analysis_hr_zone_weights.zone_count IS 'How many heart-rate zones the activity''s buckets have';
COMMENT ON COLUMN analysis_hr_zone_weights.zone IS 'The zone, 1-based (activity_zone_buckets.bucket_index)';
COMMENT ON COLUMN analysis_hr_zone_weights.load_per_hour IS 'Load of an hour in the zone before calibration (an hour at threshold = 100)';

-- Running best efforts are whole kilometre splits: 21 of them are not a half marathon (21.0975 km), so the labels
-- say the distance they measure.
UPDATE analysis_run_distances SET label = '21 km' WHERE splits = 21 AND label = 'half marathon (21 km)';
UPDATE analysis_run_distances SET label = '42 km' WHERE splits = 42 AND label = 'marathon (42 km)';
