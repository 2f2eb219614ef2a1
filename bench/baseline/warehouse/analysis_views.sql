-- fitsync warehouse: the analysis views (PR progression, zone trends, training load, volume). Every view is plain
-- SQL over the tables, recomputed on each query. Not a numbered migration: db.migrate re-applies this file, after
-- the migrations, whenever its checksum differs from the one recorded in schema_views, so a changed view reaches
-- every existing warehouse (views hold no data). Views must be CREATE OR REPLACE.
--
-- Rules that hold in every view:
--   * Calendar fields (local date, ISO week with Monday start and ISO year, month, year) come from the local
--     start time (start_date_local), never from the UTC instant: a 06:00 activity in Denver is on its local day.
--   * Configurable values live in the analysis_* tables (migrations/0002_analysis_settings.sql), not in the SQL:
--     change a row, every view follows.
--   * Nothing is ever infinite: a ratio with a zero denominator is NULL (and a note column says why, where that
--     matters).
--   * Lookup tables (athletes, segments, FTP history, settings) are LEFT JOINed through MATERIALIZED CTEs: DuckDB
--     2.0.0 miscomputes sums when a filtered query LEFT JOINs a table its statistics prove empty for the filter
--     value (tests/analysis has an athlete that triggers it).
-- warehouse/analysis.py computes the same results with Polars; tests assert both agree.

-- --- calendar -----------------------------------------------------------------------------------------------

-- One row per activity with its local calendar: local date, ISO year/week (Monday start), month, year.
CREATE OR REPLACE VIEW activity_calendar AS
WITH a AS (
    SELECT activity_id, athlete_id, sport_type, start_date_local, CAST(start_date_local AS DATE) AS local_date
    FROM activities
    WHERE start_date_local IS NOT NULL
), f AS MATERIALIZED (
    SELECT sport_type, family FROM analysis_sport_families
)
SELECT a.activity_id, a.athlete_id, a.sport_type, coalesce(f.family, 'Other') AS sport_family,
       a.start_date_local, a.local_date,
       CAST(isoyear(a.local_date) AS INTEGER) AS iso_year,
       CAST(week(a.local_date) AS INTEGER) AS iso_week,
       strftime(a.local_date, '%G-W%V') AS iso_week_label,
       CAST(date_trunc('week', a.local_date) AS DATE) AS week_start,
       CAST(date_trunc('month', a.local_date) AS DATE) AS month_start,
       CAST(year(a.local_date) AS INTEGER) AS year,
       CAST(month(a.local_date) AS INTEGER) AS month,
       CAST(isodow(a.local_date) AS INTEGER) AS iso_weekday,
       CAST(dayofyear(a.local_date) AS INTEGER) AS day_of_year
FROM a LEFT JOIN f ON f.sport_type = a.sport_type
ORDER BY a.athlete_id, a.start_date_local, a.activity_id;

-- Per athlete: the first and last local activity dates and the date the data is known complete to (the later of
-- the last activity's local date and the local date of the last sync, by the latest activity's UTC offset).
-- Dense series run from first_activity_date to as_of_date; "days since" counts to as_of_date.
CREATE OR REPLACE VIEW athlete_as_of AS
WITH acts AS (
    SELECT athlete_id,
           CAST(min(start_date_local) AS DATE) AS first_activity_date,
           CAST(max(start_date_local) AS DATE) AS last_activity_date,
           arg_max(utc_offset, (start_date_local, activity_id)) AS utc_offset
    FROM activities
    WHERE start_date_local IS NOT NULL
    GROUP BY athlete_id
), ath AS MATERIALIZED (
    SELECT athlete_id, synced_at FROM athletes
), synced AS (
    SELECT acts.*, CAST(timezone('UTC', ath.synced_at) + to_seconds(coalesce(acts.utc_offset, 0)) AS DATE)
               AS synced_local_date
    FROM acts LEFT JOIN ath ON ath.athlete_id = acts.athlete_id
)
SELECT athlete_id, first_activity_date, last_activity_date, synced_local_date,
       greatest(last_activity_date, synced_local_date) AS as_of_date
FROM synced
ORDER BY athlete_id;

-- --- segment PR progression -------------------------------------------------------------------------------

-- Every visible effort per athlete and segment in time order (start instant, then effort id), with the running
-- best. The PRs are recomputed from the efforts (the service's pr_rank, kept as service_pr_rank, is a snapshot
-- from upload time). A PR is an effort strictly faster than every earlier one; the first attempt sets the first
-- best (is_first_attempt). One window aggregate: the running best is the lesser of the effort and the previous
-- best (least() skips NULL), not a second frame (≈15% faster over 250k efforts, bench/query.py).
CREATE OR REPLACE VIEW segment_effort_progression AS
WITH s AS MATERIALIZED (
    SELECT segment_id, name FROM segments
), e AS (
    SELECT e.athlete_id, e.segment_id, coalesce(s.name, e.name) AS segment_name, e.effort_id, e.activity_id,
           e.start_date, e.start_date_local, CAST(e.start_date_local AS DATE) AS local_date,
           e.elapsed_time, e.moving_time, e.pr_rank AS service_pr_rank
    FROM segment_efforts e LEFT JOIN s ON s.segment_id = e.segment_id
    WHERE NOT coalesce(e.hidden, false) AND e.elapsed_time > 0
), ordered AS (
    SELECT *,
           row_number() OVER w AS attempt,
           min(elapsed_time) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_best
    FROM e
    WINDOW w AS (PARTITION BY athlete_id, segment_id ORDER BY start_date, effort_id)
)
SELECT athlete_id, segment_id, segment_name, effort_id, activity_id, start_date, start_date_local, local_date,
       elapsed_time, moving_time, CAST(attempt AS INTEGER) AS attempt,
       least(elapsed_time, previous_best) AS running_best, previous_best,
       (previous_best IS NULL OR elapsed_time < previous_best) AS is_pr,
       previous_best IS NULL AS is_first_attempt,
       CASE WHEN elapsed_time < previous_best THEN previous_best - elapsed_time END AS improvement_s,
       CASE WHEN elapsed_time < previous_best THEN 100.0 * (previous_best - elapsed_time) / previous_best END
           AS improvement_pct,
       service_pr_rank
FROM ordered
ORDER BY athlete_id, segment_id, attempt;

-- The PR events: the first attempt (is_first_attempt, no improvement) and every later effort that beat the best.
CREATE OR REPLACE VIEW segment_pr_events AS
SELECT athlete_id, segment_id, segment_name, effort_id, activity_id, start_date_local, local_date, elapsed_time,
       previous_best, improvement_s, improvement_pct, is_first_attempt, attempt,
       CAST(row_number() OVER (PARTITION BY athlete_id, segment_id ORDER BY attempt) AS INTEGER) AS pr_number
FROM segment_effort_progression
WHERE is_pr
ORDER BY athlete_id, segment_id, attempt;

-- Per athlete and segment: attempts, the current PR (time, date, effort), PRs after the first attempt, and days
-- from the current PR to the athlete's as_of_date.
CREATE OR REPLACE VIEW segment_pr_summary AS
WITH s AS (
    SELECT athlete_id, segment_id, max(segment_name) AS segment_name,
           CAST(count(*) AS INTEGER) AS attempts,
           min(local_date) AS first_attempt_date,
           max(local_date) AS last_attempt_date,
           min(elapsed_time) AS current_pr_s,
           arg_max(effort_id, attempt) FILTER (WHERE is_pr) AS current_pr_effort_id,
           arg_max(local_date, attempt) FILTER (WHERE is_pr) AS current_pr_date,
           CAST(count(*) FILTER (WHERE is_pr AND NOT is_first_attempt) AS INTEGER) AS improvements
    FROM segment_effort_progression
    GROUP BY athlete_id, segment_id
), o AS MATERIALIZED (
    SELECT athlete_id, as_of_date FROM athlete_as_of
)
SELECT s.athlete_id, s.segment_id, s.segment_name, s.attempts, s.first_attempt_date, s.last_attempt_date,
       s.current_pr_s, s.current_pr_effort_id, s.current_pr_date, s.improvements,
       CAST(coalesce(o.as_of_date, s.last_attempt_date) - s.current_pr_date AS INTEGER) AS days_since_pr
FROM s LEFT JOIN o ON o.athlete_id = s.athlete_id
ORDER BY s.athlete_id, s.segment_id;

-- The PR trend: per athlete and month (dense, from the first effort's month to the as-of month), the PRs set
-- (improvements on a segment already ridden or run), first attempts on new segments, and efforts.
CREATE OR REPLACE VIEW pr_monthly AS
WITH p AS (
    SELECT athlete_id, CAST(date_trunc('month', local_date) AS DATE) AS month_start,
           count(*) AS efforts,
           count(*) FILTER (WHERE is_pr AND NOT is_first_attempt) AS prs,
           count(*) FILTER (WHERE is_first_attempt) AS first_attempts
    FROM segment_effort_progression
    GROUP BY ALL
), o AS MATERIALIZED (
    SELECT athlete_id, as_of_date FROM athlete_as_of
), span AS (
    SELECT p.athlete_id, min(p.month_start) AS first_month,
           greatest(max(p.month_start), CAST(date_trunc('month', any_value(o.as_of_date)) AS DATE)) AS last_month
    FROM p LEFT JOIN o ON o.athlete_id = p.athlete_id
    GROUP BY p.athlete_id
), months AS (
    SELECT athlete_id, CAST(first_month + to_months(CAST(i AS INTEGER)) AS DATE) AS month_start
    FROM (SELECT athlete_id, first_month,
                 unnest(range(0, (year(last_month) - year(first_month)) * 12
                                 + month(last_month) - month(first_month) + 1)) AS i
          FROM span)
)
SELECT m.athlete_id, m.month_start, CAST(year(m.month_start) AS INTEGER) AS year,
       CAST(month(m.month_start) AS INTEGER) AS month,
       CAST(coalesce(p.prs, 0) AS BIGINT) AS prs, CAST(coalesce(p.first_attempts, 0) AS BIGINT) AS first_attempts,
       CAST(coalesce(p.efforts, 0) AS BIGINT) AS efforts
FROM months m LEFT JOIN p ON p.athlete_id = m.athlete_id AND p.month_start = m.month_start
ORDER BY m.athlete_id, m.month_start;

-- --- zones --------------------------------------------------------------------------------------------------

-- Every zone bucket of every activity with the activity's local calendar, its own bucket bounds (zones change
-- over time: the bounds are the activity's), the number of zones it has and the Seiler zone the bucket maps to
-- (NULL when analysis_seiler_zones has no mapping for that zone count).
CREATE OR REPLACE VIEW activity_zone_seconds AS
WITH b AS (
    SELECT activity_id, zone_type, bucket_index, min, max, CAST(coalesce(seconds, 0) AS BIGINT) AS seconds,
           CAST(count(*) OVER (PARTITION BY activity_id, zone_type) AS INTEGER) AS zone_count
    FROM activity_zone_buckets
), seiler_map AS (
    -- each athlete's mapping: their own row for a bucket if they have one, else the default (athlete_id 0)
    SELECT a.athlete_id, s.zone_type, s.zone_count, s.bucket_index, arg_max(s.seiler_zone, s.athlete_id) AS seiler_zone
    FROM (SELECT DISTINCT athlete_id FROM activities) a
    JOIN analysis_seiler_zones s ON s.athlete_id IN (0, a.athlete_id)
    GROUP BY a.athlete_id, s.zone_type, s.zone_count, s.bucket_index
)
SELECT c.athlete_id, c.activity_id, c.sport_type, c.start_date_local, c.local_date, c.week_start, c.iso_year,
       c.iso_week, c.month_start, c.year, c.month, b.zone_type, b.bucket_index AS zone, b.zone_count,
       b.min AS zone_min, b.max AS zone_max, b.seconds, m.seiler_zone
FROM b
JOIN activity_calendar c ON c.activity_id = b.activity_id
LEFT JOIN seiler_map m
       ON m.athlete_id = c.athlete_id AND m.zone_type = b.zone_type AND m.zone_count = b.zone_count
      AND m.bucket_index = b.bucket_index
ORDER BY c.athlete_id, c.start_date_local, c.activity_id, b.zone_type, b.bucket_index;

-- Seconds per zone per ISO week, the zone's share of the week's time in that zone type, and the bounds the zone
-- had in the week's latest activity.
CREATE OR REPLACE VIEW zone_time_weekly AS
SELECT athlete_id, week_start, iso_year, iso_week, zone_type, zone,
       CAST(sum(seconds) AS BIGINT) AS seconds,
       sum(seconds) / nullif(sum(sum(seconds)) OVER (PARTITION BY athlete_id, week_start, zone_type), 0) AS share,
       arg_max(zone_min, (start_date_local, activity_id)) AS zone_min,
       arg_max(zone_max, (start_date_local, activity_id)) AS zone_max,
       CAST(count(*) AS BIGINT) AS activities
FROM activity_zone_seconds
GROUP BY athlete_id, week_start, iso_year, iso_week, zone_type, zone
ORDER BY athlete_id, week_start, zone_type, zone;

CREATE OR REPLACE VIEW zone_time_monthly AS
SELECT athlete_id, month_start, year, month, zone_type, zone,
       CAST(sum(seconds) AS BIGINT) AS seconds,
       sum(seconds) / nullif(sum(sum(seconds)) OVER (PARTITION BY athlete_id, month_start, zone_type), 0) AS share,
       arg_max(zone_min, (start_date_local, activity_id)) AS zone_min,
       arg_max(zone_max, (start_date_local, activity_id)) AS zone_max,
       CAST(count(*) AS BIGINT) AS activities
FROM activity_zone_seconds
GROUP BY athlete_id, month_start, year, month, zone_type, zone
ORDER BY athlete_id, month_start, zone_type, zone;

-- Seiler's polarization index (Treff et al. 2019) from the seconds in zones 1, 2 and 3: log10(z1 / z2 * z3 * 100)
-- over the shares; NULL when any zone has no time (polarization_note says which). Macros, so analysts can apply
-- them to their own groupings: SELECT polarization_index(sum(z1_seconds), sum(z2_seconds), sum(z3_seconds)) ...
CREATE OR REPLACE MACRO polarization_index(z1, z2, z3) AS
    CASE WHEN z1 > 0 AND z2 > 0 AND z3 > 0
         THEN log10((z1 / (z1 + z2 + z3)) / (z2 / (z1 + z2 + z3)) * (z3 / (z1 + z2 + z3)) * 100) END;

CREATE OR REPLACE MACRO polarization_note(z1, z2, z3) AS
    CASE WHEN z1 + z2 + z3 = 0 THEN 'undefined: no time in mapped zones'
         WHEN z2 = 0 THEN 'undefined: no zone-2 time'
         WHEN z3 = 0 THEN 'undefined: no zone-3 time'
         WHEN z1 = 0 THEN 'undefined: no zone-1 time'
         ELSE 'ok' END;

-- Seiler's three zones per period and zone type, their shares, and the polarization index
-- PI = log10(z1 / z2 * z3 * 100) on the shares (Treff et al. 2019). PI is NULL when a zone has no time (it
-- would be infinite or undefined) and pi_note says which; time in buckets without a mapping is unmapped_seconds.
-- grain 'week': period_start is the ISO week's Monday; 'month': the first of the month. The two views below add
-- their calendar columns.
CREATE OR REPLACE MACRO seiler_split(grain) AS TABLE
WITH s AS (
    SELECT athlete_id, CASE WHEN grain = 'week' THEN week_start ELSE month_start END AS period_start, zone_type,
           CAST(coalesce(sum(seconds) FILTER (WHERE seiler_zone = 1), 0) AS BIGINT) AS z1_seconds,
           CAST(coalesce(sum(seconds) FILTER (WHERE seiler_zone = 2), 0) AS BIGINT) AS z2_seconds,
           CAST(coalesce(sum(seconds) FILTER (WHERE seiler_zone = 3), 0) AS BIGINT) AS z3_seconds,
           CAST(coalesce(sum(seconds) FILTER (WHERE seiler_zone IS NULL), 0) AS BIGINT) AS unmapped_seconds
    FROM activity_zone_seconds
    GROUP BY ALL
), t AS (
    SELECT *, z1_seconds + z2_seconds + z3_seconds AS total_seconds FROM s
)
SELECT athlete_id, period_start, zone_type, z1_seconds, z2_seconds, z3_seconds, total_seconds, unmapped_seconds,
       z1_seconds / nullif(total_seconds, 0) AS z1_share,
       z2_seconds / nullif(total_seconds, 0) AS z2_share,
       z3_seconds / nullif(total_seconds, 0) AS z3_share,
       polarization_index(z1_seconds, z2_seconds, z3_seconds) AS polarization_index,
       polarization_note(z1_seconds, z2_seconds, z3_seconds) AS pi_note
FROM t;

CREATE OR REPLACE VIEW seiler_weekly AS
SELECT athlete_id, period_start AS week_start, CAST(isoyear(period_start) AS INTEGER) AS iso_year,
       CAST(week(period_start) AS INTEGER) AS iso_week, * EXCLUDE (athlete_id, period_start)
FROM seiler_split('week')
ORDER BY athlete_id, week_start, zone_type;

CREATE OR REPLACE VIEW seiler_monthly AS
SELECT athlete_id, period_start AS month_start, CAST(year(period_start) AS INTEGER) AS year,
       CAST(month(period_start) AS INTEGER) AS month, * EXCLUDE (athlete_id, period_start)
FROM seiler_split('month')
ORDER BY athlete_id, month_start, zone_type;

-- The athlete's zone definitions over time, from the zone snapshots: one version per change of the bounds, valid
-- from the first snapshot that had it until (excluding) the first snapshot of the next version (NULL: current).
CREATE OR REPLACE VIEW athlete_zone_history AS
WITH snap AS (
    SELECT athlete_id, zone_type, snapshot_date,
           string_agg(CAST(min AS VARCHAR) || ':' || CAST(max AS VARCHAR), ',' ORDER BY bucket_index) AS signature
    FROM athlete_zones
    GROUP BY athlete_id, zone_type, snapshot_date
), marked AS (
    SELECT *,
           CASE WHEN signature IS NOT DISTINCT FROM lag(signature) OVER w THEN 0 ELSE 1 END AS changed
    FROM snap
    WINDOW w AS (PARTITION BY athlete_id, zone_type ORDER BY snapshot_date)
), versioned AS (
    SELECT *, sum(changed) OVER (PARTITION BY athlete_id, zone_type ORDER BY snapshot_date
                                 ROWS UNBOUNDED PRECEDING) AS version
    FROM marked
), ranges AS (
    SELECT athlete_id, zone_type, version, min(snapshot_date) AS valid_from, max(snapshot_date) AS last_seen
    FROM versioned
    GROUP BY athlete_id, zone_type, version
), bounded AS (
    SELECT *, lead(valid_from) OVER (PARTITION BY athlete_id, zone_type ORDER BY version) AS valid_to
    FROM ranges
)
SELECT r.athlete_id, r.zone_type, CAST(r.version AS INTEGER) AS version, r.valid_from, r.valid_to, r.last_seen,
       z.bucket_index AS zone, z.min AS zone_min, z.max AS zone_max
FROM bounded r
JOIN athlete_zones z ON z.athlete_id = r.athlete_id AND z.zone_type = r.zone_type AND z.snapshot_date = r.valid_from
ORDER BY r.athlete_id, r.zone_type, r.version, z.bucket_index;

-- --- training load ------------------------------------------------------------------------------------------

-- Per activity: the load and where it came from. 'power': TSS = moving_time * NP^2 / (FTP^2 * 3600) * 100 with
-- NP approximated by weighted_average_watts, for device power on a sport type with power_tss and an FTP in force
-- on the local date (analysis_ftp_history, else the profile FTP); else 'suffer_score'; else 'none' (NULL load).
CREATE OR REPLACE VIEW activity_load AS
WITH f AS MATERIALIZED (
    SELECT sport_type, power_tss FROM analysis_sport_families
), h AS MATERIALIZED (
    SELECT athlete_id, valid_from, ftp FROM analysis_ftp_history
), ath AS MATERIALIZED (
    SELECT athlete_id, ftp FROM athletes
), base AS (
    SELECT c.activity_id, c.athlete_id, c.sport_type, c.sport_family, c.local_date, c.week_start, c.iso_year,
           c.iso_week, a.moving_time, a.device_watts, a.weighted_average_watts, a.suffer_score,
           coalesce(f.power_tss, false) AS power_tss
    FROM activity_calendar c
    JOIN activities a ON a.activity_id = c.activity_id
    LEFT JOIN f ON f.sport_type = c.sport_type
), with_ftp AS (
    SELECT base.*, h.ftp AS history_ftp, nullif(ath.ftp, 0) AS profile_ftp
    FROM base
    ASOF LEFT JOIN h ON h.athlete_id = base.athlete_id AND base.local_date >= h.valid_from
    LEFT JOIN ath ON ath.athlete_id = base.athlete_id
), sourced AS (
    SELECT *, coalesce(history_ftp, profile_ftp) AS ftp,
           CASE WHEN history_ftp IS NOT NULL THEN 'history' WHEN profile_ftp IS NOT NULL THEN 'profile' END
               AS ftp_source,
           (power_tss AND coalesce(device_watts, false) AND weighted_average_watts > 0
            AND coalesce(history_ftp, profile_ftp) > 0 AND moving_time > 0) AS power_ok
    FROM with_ftp
)
SELECT activity_id, athlete_id, sport_type, local_date, week_start, iso_year, iso_week, moving_time,
       weighted_average_watts AS np_watts, ftp, ftp_source,
       CASE WHEN power_ok THEN weighted_average_watts / ftp END AS intensity_factor,
       CASE WHEN power_ok THEN moving_time * weighted_average_watts * weighted_average_watts / (ftp * ftp * 3600) * 100
            WHEN suffer_score IS NOT NULL THEN suffer_score END AS load,
       CASE WHEN power_ok THEN 'power' WHEN suffer_score IS NOT NULL THEN 'suffer_score' ELSE 'none' END
           AS load_source
FROM sourced
ORDER BY athlete_id, local_date, activity_id;

-- A dense daily series per athlete from the first activity to as_of_date: rest days have load 0.
CREATE OR REPLACE VIEW daily_load AS
WITH days AS (
    SELECT athlete_id, first_activity_date + CAST(i AS INTEGER) AS date
    FROM (SELECT athlete_id, first_activity_date,
                 unnest(range(0, as_of_date - first_activity_date + 1)) AS i
          FROM athlete_as_of)
), per_day AS (
    SELECT athlete_id, local_date, sum(load) AS load, count(*) AS activities
    FROM activity_load
    GROUP BY athlete_id, local_date
)
SELECT d.athlete_id, d.date, coalesce(p.load, 0.0) AS load, CAST(coalesce(p.activities, 0) AS BIGINT) AS activities
FROM days d LEFT JOIN per_day p ON p.athlete_id = d.athlete_id AND p.local_date = d.date
ORDER BY d.athlete_id, d.date;

-- The performance management chart. With k = 1 - exp(-1/tau) the recurrence, from 0 before the first day, is
--   CTL[t] = CTL[t-1] + k * (load[t] - CTL[t-1]),  i.e.  CTL[t] = sum over i <= t of k * load[i] * exp(-(t-i)/tau)
-- computed here without recursion: the series is cut in blocks of B = ceil(40 * tau) days; each day's value is a
-- running sum over its own and the previous block, factored around that window's start so no exponent exceeds
-- 2B/tau (about 80). What it leaves out is older than B days and weighs below exp(-40) ~ 4e-18 of a load: the
-- values equal the recurrence to double precision. TSB is yesterday's CTL - ATL; ramp_rate is CTL minus CTL
-- ramp_days earlier.
CREATE OR REPLACE VIEW pmc AS
WITH params AS (
    SELECT max(value) FILTER (WHERE name = 'ctl_days') AS ctl_days,
           max(value) FILTER (WHERE name = 'atl_days') AS atl_days,
           CAST(max(value) FILTER (WHERE name = 'ramp_days') AS INTEGER) AS ramp_days
    FROM analysis_settings
), kinds AS (
    SELECT 'ctl' AS kind, ctl_days AS tau FROM params
    UNION ALL
    SELECT 'atl', atl_days FROM params
), series AS (
    SELECT athlete_id, date, load,
           CAST(date - min(date) OVER (PARTITION BY athlete_id) AS BIGINT) AS n
    FROM daily_load
), spread AS (
    SELECT s.athlete_id, s.date, s.load, s.n, k.kind, k.tau, 1 - exp(-1 / k.tau) AS alpha,
           CAST(ceil(40 * k.tau) AS BIGINT) AS block,
           s.n // CAST(ceil(40 * k.tau) AS BIGINT) + shift.blocks AS target
    FROM series s CROSS JOIN kinds k CROSS JOIN (VALUES (0), (1)) AS shift(blocks)
), summed AS (
    SELECT athlete_id, date, load, n, kind, tau, block, target,
           sum(alpha * load * exp((n - (target - 1) * block) / tau))
               OVER (PARTITION BY athlete_id, kind, target ORDER BY n ROWS UNBOUNDED PRECEDING) AS acc
    FROM spread
), ewma AS (
    SELECT athlete_id, date, load, kind, acc * exp(-(n - (target - 1) * block) / tau) AS value
    FROM summed
    WHERE n // block = target
), wide AS (
    SELECT athlete_id, date, load,
           max(value) FILTER (WHERE kind = 'ctl') AS ctl,
           max(value) FILTER (WHERE kind = 'atl') AS atl
    FROM ewma
    GROUP BY athlete_id, date, load
), shaped AS (
    SELECT w.athlete_id, w.date, w.load, w.ctl, w.atl,
           lag(w.ctl, 1, 0) OVER w1 - lag(w.atl, 1, 0) OVER w1 AS tsb,
           w.ctl - lag(w.ctl, p.ramp_days, 0) OVER w1 AS ramp_rate
    FROM wide w CROSS JOIN params p
    WINDOW w1 AS (PARTITION BY w.athlete_id ORDER BY w.date)
)
SELECT s.athlete_id, s.date, s.load, s.ctl, s.atl, s.tsb, s.ramp_rate, b.band AS form_band
FROM shaped s
LEFT JOIN analysis_form_bands b
       ON s.tsb >= coalesce(b.tsb_from, '-Infinity'::DOUBLE) AND s.tsb < coalesce(b.tsb_to, 'Infinity'::DOUBLE)
ORDER BY s.athlete_id, s.date;

-- Per athlete and ISO week: how much of the moving time has a load, and where the loads came from.
CREATE OR REPLACE VIEW load_coverage_weekly AS
SELECT athlete_id, week_start, iso_year, iso_week,
       CAST(count(*) AS BIGINT) AS activities,
       CAST(coalesce(sum(moving_time), 0) AS BIGINT) AS moving_time_s,
       CAST(coalesce(sum(moving_time) FILTER (WHERE load IS NOT NULL), 0) AS BIGINT) AS loaded_moving_time_s,
       coalesce(sum(moving_time) FILTER (WHERE load IS NOT NULL), 0) / nullif(sum(moving_time), 0) AS coverage,
       CAST(count(*) FILTER (WHERE load_source = 'power') AS BIGINT) AS power_activities,
       CAST(count(*) FILTER (WHERE load_source = 'suffer_score') AS BIGINT) AS suffer_score_activities,
       CAST(count(*) FILTER (WHERE load_source = 'none') AS BIGINT) AS unloaded_activities
FROM activity_load
GROUP BY athlete_id, week_start, iso_year, iso_week
ORDER BY athlete_id, week_start;

-- --- volume -------------------------------------------------------------------------------------------------

CREATE OR REPLACE VIEW volume_weekly AS
SELECT c.athlete_id, c.week_start, c.iso_year, c.iso_week, c.sport_type, any_value(c.sport_family) AS sport_family,
       CAST(count(*) AS BIGINT) AS activities,
       coalesce(sum(a.distance), 0.0) AS distance_m,
       CAST(coalesce(sum(a.moving_time), 0) AS BIGINT) AS moving_time_s,
       coalesce(sum(a.total_elevation_gain), 0.0) AS elevation_gain_m
FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
GROUP BY c.athlete_id, c.week_start, c.iso_year, c.iso_week, c.sport_type
ORDER BY c.athlete_id, c.week_start, c.sport_type;

CREATE OR REPLACE VIEW volume_monthly AS
SELECT c.athlete_id, c.month_start, c.year, c.month, c.sport_type, any_value(c.sport_family) AS sport_family,
       CAST(count(*) AS BIGINT) AS activities,
       coalesce(sum(a.distance), 0.0) AS distance_m,
       CAST(coalesce(sum(a.moving_time), 0) AS BIGINT) AS moving_time_s,
       coalesce(sum(a.total_elevation_gain), 0.0) AS elevation_gain_m
FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
GROUP BY c.athlete_id, c.month_start, c.year, c.month, c.sport_type
ORDER BY c.athlete_id, c.month_start, c.sport_type;

CREATE OR REPLACE VIEW volume_yearly AS
SELECT c.athlete_id, c.year, c.sport_type, any_value(c.sport_family) AS sport_family,
       CAST(count(*) AS BIGINT) AS activities,
       coalesce(sum(a.distance), 0.0) AS distance_m,
       CAST(coalesce(sum(a.moving_time), 0) AS BIGINT) AS moving_time_s,
       coalesce(sum(a.total_elevation_gain), 0.0) AS elevation_gain_m
FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
GROUP BY c.athlete_id, c.year, c.sport_type
ORDER BY c.athlete_id, c.year, c.sport_type;

-- Year-to-date running totals per athlete, sport family ('All' = every sport) and year, for every day from
-- 1 January (of the first activity's year on) to 31 December or as_of_date.
CREATE OR REPLACE VIEW ytd_cumulative AS
WITH years AS (
    SELECT athlete_id, as_of_date, unnest(range(year(first_activity_date), year(as_of_date) + 1)) AS year
    FROM athlete_as_of
), days AS (
    SELECT athlete_id, year, make_date(year, 1, 1) + CAST(i AS INTEGER) AS date
    FROM (SELECT athlete_id, year,
                 unnest(range(0, least(make_date(year, 12, 31), as_of_date) - make_date(year, 1, 1) + 1)) AS i
          FROM years)
), families AS (
    SELECT DISTINCT athlete_id, sport_family FROM activity_calendar
    UNION
    SELECT athlete_id, 'All' FROM athlete_as_of
), acts AS (
    SELECT c.athlete_id, c.sport_family, c.local_date, a.distance, a.moving_time, a.total_elevation_gain
    FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
), per_day AS (
    SELECT athlete_id, sport_family, local_date, count(*) AS activities, sum(distance) AS distance_m,
           sum(moving_time) AS moving_time_s, sum(total_elevation_gain) AS elevation_gain_m
    FROM (SELECT * FROM acts UNION ALL SELECT athlete_id, 'All', local_date, distance, moving_time,
                                               total_elevation_gain FROM acts)
    GROUP BY athlete_id, sport_family, local_date
), grid AS (
    SELECT d.athlete_id, f.sport_family, d.year, d.date,
           coalesce(p.activities, 0) AS activities, coalesce(p.distance_m, 0.0) AS distance_m,
           coalesce(p.moving_time_s, 0) AS moving_time_s, coalesce(p.elevation_gain_m, 0.0) AS elevation_gain_m
    FROM days d
    JOIN families f ON f.athlete_id = d.athlete_id
    LEFT JOIN per_day p ON p.athlete_id = d.athlete_id AND p.sport_family = f.sport_family AND p.local_date = d.date
)
SELECT athlete_id, sport_family, CAST(year AS INTEGER) AS year, date, CAST(dayofyear(date) AS INTEGER) AS day_of_year,
       CAST(sum(activities) OVER w AS BIGINT) AS activities,
       sum(distance_m) OVER w AS distance_m,
       CAST(sum(moving_time_s) OVER w AS BIGINT) AS moving_time_s,
       sum(elevation_gain_m) OVER w AS elevation_gain_m
FROM grid
WINDOW w AS (PARTITION BY athlete_id, sport_family, year ORDER BY date ROWS UNBOUNDED PRECEDING)
ORDER BY athlete_id, sport_family, year, date;

-- Eddington number per athlete and sport family, in km and miles: the largest E with E days (local days, all of
-- the family's activities that day summed) of at least E. days_to_next: more such days needed for E + 1.
CREATE OR REPLACE VIEW eddington AS
WITH units(unit, unit_m) AS (VALUES ('km', 1000.0), ('mi', 1609.344)),
daily AS (
    SELECT c.athlete_id, c.sport_family, c.local_date, sum(coalesce(a.distance, 0)) AS meters
    FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
    GROUP BY c.athlete_id, c.sport_family, c.local_date
), ranked AS (
    SELECT d.athlete_id, d.sport_family, u.unit, d.meters / u.unit_m AS dist,
           row_number() OVER (PARTITION BY d.athlete_id, d.sport_family, u.unit ORDER BY d.meters DESC) AS r
    FROM daily d CROSS JOIN units u
), e AS (
    SELECT athlete_id, sport_family, unit, coalesce(max(r) FILTER (WHERE dist >= r), 0) AS eddington,
           count(*) AS days
    FROM ranked
    GROUP BY athlete_id, sport_family, unit
)
SELECT e.athlete_id, e.sport_family, e.unit, CAST(e.eddington AS INTEGER) AS eddington,
       CAST(e.days AS BIGINT) AS days,
       CAST(count(*) FILTER (WHERE r.dist >= e.eddington + 1) AS BIGINT) AS days_at_next,
       CAST(e.eddington + 1 - count(*) FILTER (WHERE r.dist >= e.eddington + 1) AS BIGINT) AS days_to_next
FROM e JOIN ranked r ON r.athlete_id = e.athlete_id AND r.sport_family = e.sport_family AND r.unit = e.unit
GROUP BY e.athlete_id, e.sport_family, e.unit, e.eddington, e.days
ORDER BY e.athlete_id, e.sport_family, e.unit;

-- For the Eddington chart: for n = 1 .. the longest day, how many days reached n (km or miles).
CREATE OR REPLACE VIEW eddington_curve AS
WITH units(unit, unit_m) AS (VALUES ('km', 1000.0), ('mi', 1609.344)),
daily AS (
    SELECT c.athlete_id, c.sport_family, c.local_date, sum(coalesce(a.distance, 0)) AS meters
    FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
    GROUP BY c.athlete_id, c.sport_family, c.local_date
), floors AS (
    SELECT d.athlete_id, d.sport_family, u.unit, CAST(floor(d.meters / u.unit_m) AS BIGINT) AS whole
    FROM daily d CROSS JOIN units u
), hist AS (
    SELECT athlete_id, sport_family, unit, whole, count(*) AS days FROM floors GROUP BY ALL
), grid AS (
    SELECT athlete_id, sport_family, unit, unnest(range(1, max(whole) + 1)) AS n
    FROM hist GROUP BY athlete_id, sport_family, unit
)
SELECT g.athlete_id, g.sport_family, g.unit, CAST(g.n AS INTEGER) AS n,
       CAST(sum(h.days) AS BIGINT) AS days_at_least
FROM grid g JOIN hist h ON h.athlete_id = g.athlete_id AND h.sport_family = g.sport_family AND h.unit = g.unit
                       AND h.whole >= g.n
GROUP BY g.athlete_id, g.sport_family, g.unit, g.n
ORDER BY g.athlete_id, g.sport_family, g.unit, g.n;
