-- fitsync warehouse, schema 17: like against like. A run's last, partial kilometre split (960 m of a 4.96 km run)
-- makes no "5 km"; a segment effort on an older course of the segment (re-measured by the service: 2.0 km then
-- 1.6 km) is no attempt at today's, so every effort on the shorter course is not a PR against the longer one.

INSERT INTO analysis_settings VALUES
    ('run_split_min_m', 990, 'Shortest kilometre split a running best effort spans, metres: a whole split measures 1,000 m (± a sample''s step); a shorter one is the run''s last, partial split'),
    ('segment_course_share', 0.15, 'A segment effort whose distance differs from the segment''s by more than this share (and segment_course_min_m) was made on another course of the segment (the service re-measured it): left out of PRs, counted in segment_pr_summary'),
    ('segment_course_min_m', 100, 'Least distance difference, metres, that makes a segment effort one of another course (short segments'' efforts vary by tens of metres)');
COMMENT ON COLUMN analysis_settings.name IS 'Setting name: ctl_days, atl_days, ramp_days, pi_polarized_above, lthr_zone, estimate_if_default, acwr_acute_days, acwr_chronic_days, monotony_days, cp_min_s, cp_max_s, cp_min_points, cp_min_spread, cp_hour_s, cp_hour_share, w_prime_min_j, w_prime_max_j, hr_calibration_min_rides, hr_calibration_min_ratio, hr_calibration_max_ratio, pmc_constant_form, decoupling_warmup_s, decoupling_max_cv, acwr_min_sessions, acwr_min_chronic_load, season_start_month, cs_min_s, cs_max_s, ftp_min_w, ftp_max_w, hr_min_coverage, run_max_speed, d_prime_min_m, d_prime_max_m, decoupling_min_s, duplicate_overlap, future_margin_s, run_split_min_m, segment_course_share, segment_course_min_m';
