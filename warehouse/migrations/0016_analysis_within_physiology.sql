-- fitsync warehouse, schema 16: the analyses keep to physiology. A profile FTP outside what a rider can have (a
-- typo of 25 for 250 multiplies every power load by 100) is not used, and said (`fitsync thresholds`, the report):
-- the same bounds `fitsync thresholds set --ftp` takes. A heart-rate zone load whose buckets cover a fraction of the
-- activity (a strap that dropped out) is scaled to the whole activity and not called measured. A run's GPS jump is no
-- best effort. Critical speed has the gates critical power has (D' in range, not below the hour's speed). Aerobic
-- decoupling needs 20 minutes after the warm-up, and a ride's is on power, never on its speed (wind, terrain). One
-- session recorded by two devices counts once; one dated after fitsync received it is left out.

INSERT INTO analysis_settings VALUES
    ('ftp_min_w', 50, 'Lowest FTP the loads use, watts: a profile FTP below is not used (and said); the lowest `fitsync thresholds set --ftp` takes'),
    ('ftp_max_w', 600, 'Highest FTP the loads use, watts: a profile FTP above is not used (and said); the highest `fitsync thresholds set --ftp` takes'),
    ('hr_min_coverage', 0.8, 'Share of an activity''s duration its heart-rate zone buckets must cover for a measured heart-rate load; below (a strap that dropped out), the zone load is scaled to the whole duration and not counted as measured'),
    ('run_max_speed', 12.5, 'Fastest a run''s distance stream may move, metres a second (faster than anyone has run): a faster step is a GPS jump, which no best effort, pace or critical speed holds'),
    ('d_prime_min_m', 50, 'Smallest plausible D'' (critical speed''s distance above it), metres; a fit below is NULL: the runs were not maximal'),
    ('d_prime_max_m', 500, 'Largest plausible D'', metres; a fit above is NULL'),
    ('decoupling_min_s', 1200, 'Aerobic decoupling needs at least this much moving time after the warm-up, seconds (two halves of 10 min): shorter, it is NULL'),
    ('duplicate_overlap', 0.8, 'Two activities of one athlete and sport family whose times overlap by at least this share of the longer are one session recorded twice: the second is left out of the analyses (duplicate_activities)'),
    ('future_margin_s', 54000, 'An activity starting this many seconds or more after fitsync received it (a device clock ahead; 15 h: a local time read as UTC is at most 14 h ahead) is left out of the analyses and the as-of date (future_activities)');
COMMENT ON COLUMN analysis_settings.name IS 'Setting name: ctl_days, atl_days, ramp_days, pi_polarized_above, lthr_zone, estimate_if_default, acwr_acute_days, acwr_chronic_days, monotony_days, cp_min_s, cp_max_s, cp_min_points, cp_min_spread, cp_hour_s, cp_hour_share, w_prime_min_j, w_prime_max_j, hr_calibration_min_rides, hr_calibration_min_ratio, hr_calibration_max_ratio, pmc_constant_form, decoupling_warmup_s, decoupling_max_cv, acwr_min_sessions, acwr_min_chronic_load, season_start_month, cs_min_s, cs_max_s, ftp_min_w, ftp_max_w, hr_min_coverage, run_max_speed, d_prime_min_m, d_prime_max_m, decoupling_min_s, duplicate_overlap, future_margin_s';

-- Sport types with a motor's help (e-bikes): their segment efforts are no PRs of the rider's (the service keeps them
-- on a leaderboard of their own).
ALTER TABLE analysis_sport_families ADD COLUMN IF NOT EXISTS motorized BOOLEAN;
UPDATE analysis_sport_families SET motorized = sport_type IN ('EBikeRide', 'EMountainBikeRide');
COMMENT ON COLUMN analysis_sport_families.motorized IS 'Whether a motor helps (e-bikes): its segment efforts are left out of the PR progression';
