-- fitsync warehouse, schema 14: the settings of the analyses from streams (warehouse/stream_mmp.py and the stream
-- views of analysis_views.sql): when a season starts, the window of the critical-speed fit, and the distances of
-- the exact best efforts of runs.

INSERT INTO analysis_settings VALUES
    ('season_start_month', 1, 'Month (1-12) a season starts in for the season power and pace curves: 1 = the calendar year; 11 = November to October, named by the year it starts in'),
    ('cs_min_s', 180, 'Shortest duration the critical-speed fit uses, seconds (3 min)'),
    ('cs_max_s', 1200, 'Longest duration the critical-speed fit uses, seconds (20 min, inclusive)');
COMMENT ON COLUMN analysis_settings.name IS 'Setting name: ctl_days, atl_days, ramp_days, pi_polarized_above, lthr_zone, estimate_if_default, acwr_acute_days, acwr_chronic_days, monotony_days, cp_min_s, cp_max_s, cp_min_points, cp_min_spread, cp_hour_s, cp_hour_share, w_prime_min_j, w_prime_max_j, hr_calibration_min_rides, hr_calibration_min_ratio, hr_calibration_max_ratio, pmc_constant_form, decoupling_warmup_s, decoupling_max_cv, acwr_min_sessions, acwr_min_chronic_load, season_start_month, cs_min_s, cs_max_s';

-- Exact-distance best efforts of runs, from the distance stream (stream_best_efforts): the distances, as rows.
CREATE TABLE IF NOT EXISTS analysis_best_effort_distances (
    distance_m DOUBLE NOT NULL,       -- no key or check: a lake runs this migration as written (lake_schema.py)
    label VARCHAR NOT NULL
);
INSERT INTO analysis_best_effort_distances VALUES
    (400, '400 m'), (1000, '1 km'), (1609.344, '1 mile'), (5000, '5 km'), (10000, '10 km'),
    (21097.5, 'half marathon'), (42195, 'marathon');
COMMENT ON TABLE analysis_best_effort_distances IS 'The distances of the exact best efforts of runs (stream_best_efforts), from the distance stream';
COMMENT ON COLUMN analysis_best_effort_distances.distance_m IS 'Distance, metres';
COMMENT ON COLUMN analysis_best_effort_distances.label IS 'How the distance is shown';
