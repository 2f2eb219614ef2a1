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
-- Each view is the one definition of its analysis: Python reads it with warehouse/analysis.py (`view`), the report
-- and the analysis assets through that.

-- --- stream storage stand-ins ----------------------------------------------------------------------------

-- The views over the stream files (activity_streams, activity_mmp, activity_stream_seconds) are made by
-- warehouse/streams.py after this script, with this warehouse's folder in them (db.migrate); the stream analyses
-- below need them to exist first. So each has an empty stand-in of the same columns here, made only when missing:
-- streams.create_view replaces it (and a warehouse without a folder, in memory, keeps it: no streams, no rows).
CREATE VIEW IF NOT EXISTS activity_streams AS
SELECT NULL::BIGINT AS activity_id, NULL::BIGINT AS athlete_id, NULL::INTEGER AS sample, NULL::INTEGER AS time,
       NULL::DOUBLE AS distance, NULL::DOUBLE AS lat, NULL::DOUBLE AS lng, NULL::DOUBLE AS altitude,
       NULL::DOUBLE AS velocity_smooth, NULL::SMALLINT AS heartrate, NULL::SMALLINT AS cadence,
       NULL::SMALLINT AS watts, NULL::SMALLINT AS temp, NULL::BOOLEAN AS moving, NULL::DOUBLE AS grade_smooth
WHERE false;
CREATE VIEW IF NOT EXISTS activity_mmp AS
SELECT NULL::BIGINT AS activity_id, NULL::BIGINT AS athlete_id, NULL::INTEGER AS duration_s, NULL::DOUBLE AS watts,
       NULL::INTEGER AS watts_start_s, NULL::INTEGER AS watts_start_sample, NULL::DOUBLE AS speed,
       NULL::INTEGER AS speed_start_s, NULL::INTEGER AS speed_start_sample
WHERE false;
CREATE VIEW IF NOT EXISTS activity_stream_seconds AS
SELECT NULL::BIGINT AS activity_id, NULL::BIGINT AS athlete_id, NULL::INTEGER AS second, NULL::INTEGER AS sample,
       NULL::BOOLEAN AS paused, NULL::BOOLEAN AS moving, NULL::DOUBLE AS watts, NULL::DOUBLE AS heartrate,
       NULL::DOUBLE AS speed, NULL::DOUBLE AS distance
WHERE false;

-- The season a local date belongs to: the year it starts in, a season starting on the first of start_month
-- (analysis_settings season_start_month; 1 = the calendar year).
CREATE OR REPLACE MACRO season_of(local_date, start_month) AS
    CAST(year(local_date) - CASE WHEN month(local_date) < start_month THEN 1 ELSE 0 END AS INTEGER);

-- --- calendar -----------------------------------------------------------------------------------------------

-- Every activity with what would leave it out of the analyses (recordings()), per athlete (a filter on athlete_id
-- reaches it through its windows):
-- - dated ahead: it starts more than future_margin_s after fitsync received it (listed_at: a device clock years
--   ahead); one dated 2031 would run every daily series and "today's" form to 2031;
-- - a second recording: the same session recorded twice (a bike computer and a watch): another activity of the
--   athlete's, of the same sport family, overlapping it by at least duplicate_overlap of the longer of the two,
--   ranks above it (device power, else heart rate, else the longer moving time, else the lower id). Compared with
--   the two before and the two after it in start order (three devices on one ride: each pair is among those).
-- The seconds a neighbour in start order (o_*) overlaps this one, when it is the better recording of this one's
-- session (a higher rank r, overlapping by share of the longer of the two); NULL otherwise.
CREATE OR REPLACE MACRO recorded_by(r, starts, seconds, o_r, o_starts, o_seconds, share) AS
    CASE WHEN o_r > r AND seconds > 0 AND o_seconds > 0
              AND least(starts + seconds, o_starts + o_seconds) - greatest(starts, o_starts)
                  >= share * greatest(seconds, o_seconds)
         THEN least(starts + seconds, o_starts + o_seconds) - greatest(starts, o_starts) END;

CREATE OR REPLACE MACRO recordings() AS TABLE
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'duplicate_overlap') AS share,
           max(value) FILTER (WHERE name = 'future_margin_s') AS margin_s
    FROM analysis_settings
), a AS (
    SELECT a.activity_id, a.athlete_id, a.sport_type, a.start_date_local, a.start_date, a.listed_at, a.utc_offset,
           coalesce(f.family, 'Other') AS family, CAST(epoch(a.start_date) AS BIGINT) AS starts,
           coalesce(nullif(a.elapsed_time, 0), a.moving_time, 0) AS seconds,
           -- device power, else heart rate, else the longer moving time, else the lower id: one number
           (CAST(coalesce(a.device_watts, false) AS HUGEINT) * 2 + CAST(coalesce(a.average_heartrate > 0, false) AS INT))
               * 10000000000000000000 + least(coalesce(a.moving_time, 0), 999999) * 10000000000000
               + (9999999999999 - least(a.activity_id, 9999999999999)) AS r
    FROM activities a LEFT JOIN analysis_sport_families f ON f.sport_type = a.sport_type
), near AS (
    SELECT *,
           recorded_by(r, starts, seconds, lag(r, 2) OVER w, lag(starts, 2) OVER w, lag(seconds, 2) OVER w, share) AS o1,
           recorded_by(r, starts, seconds, lag(r) OVER w, lag(starts) OVER w, lag(seconds) OVER w, share) AS o2,
           recorded_by(r, starts, seconds, lead(r) OVER w, lead(starts) OVER w, lead(seconds) OVER w, share) AS o3,
           recorded_by(r, starts, seconds, lead(r, 2) OVER w, lead(starts, 2) OVER w, lead(seconds, 2) OVER w, share)
               AS o4,
           lag(r, 2) OVER w AS r1, lag(r) OVER w AS r2, lead(r) OVER w AS r3, lead(r, 2) OVER w AS r4,
           lag(activity_id, 2) OVER w AS i1, lag(activity_id) OVER w AS i2, lead(activity_id) OVER w AS i3,
           lead(activity_id, 2) OVER w AS i4
    FROM a CROSS JOIN params p
    WINDOW w AS (PARTITION BY athlete_id, family ORDER BY start_date, activity_id)
), best AS (  -- the best-ranked neighbour this one is a second recording of
    SELECT *, greatest(CASE WHEN o1 IS NOT NULL THEN r1 END, CASE WHEN o2 IS NOT NULL THEN r2 END,
                       CASE WHEN o3 IS NOT NULL THEN r3 END, CASE WHEN o4 IS NOT NULL THEN r4 END) AS kept_r
    FROM near
)
SELECT activity_id, athlete_id, sport_type, start_date_local, start_date, listed_at, utc_offset,
       coalesce(start_date > listed_at + to_seconds(CAST(margin_s AS BIGINT)), false) AS dated_ahead,
       CASE kept_r WHEN r1 THEN i1 WHEN r2 THEN i2 WHEN r3 THEN i3 WHEN r4 THEN i4 END AS kept_activity_id,
       CAST(CASE kept_r WHEN r1 THEN o1 WHEN r2 THEN o2 WHEN r3 THEN o3 WHEN r4 THEN o4 END AS INTEGER) AS overlap_s
FROM best;

CREATE OR REPLACE VIEW future_activities AS
SELECT athlete_id, activity_id, start_date, listed_at FROM recordings() WHERE dated_ahead
ORDER BY athlete_id, activity_id;

-- The second recordings of a session (recordings()): left out of activity_calendar, so out of every analysis (its
-- load and distance counted twice otherwise); still in activities.
CREATE OR REPLACE VIEW duplicate_activities AS
SELECT athlete_id, activity_id, kept_activity_id, overlap_s FROM recordings() WHERE kept_activity_id IS NOT NULL
ORDER BY athlete_id, activity_id;

CREATE OR REPLACE VIEW activity_calendar AS
WITH a AS (
    SELECT activity_id, athlete_id, sport_type, start_date_local, CAST(start_date_local AS DATE) AS local_date
    FROM recordings()
    WHERE start_date_local IS NOT NULL AND NOT dated_ahead AND kept_activity_id IS NULL
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
    FROM recordings()
    WHERE start_date_local IS NOT NULL AND NOT dated_ahead
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

-- Every segment effort with what leaves it out of the PRs, counted by segment_pr_summary: hidden (the athlete hid
-- it), untimed (elapsed_time 0 or missing: no time to compare), of an activity no analysis counts (a second
-- recording, one dated ahead of its receipt: recordings()) or of a motorized sport type (analysis_sport_families
-- .motorized: e-bikes), or on another course: the service re-measures segments (2.0 km, later 1.6 km), and every
-- effort on the shorter course would be a PR against the longer one. The course is the median distance of the
-- athlete's last three timed efforts on the segment (one effort's GPS error moves no course; after a re-measure the
-- second effort on the new course makes it the course); an effort whose distance differs from it by more than
-- segment_course_share of it and segment_course_min_m was made on another. Efforts without a distance are on it.
CREATE OR REPLACE MACRO segment_efforts_judged() AS TABLE
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'segment_course_share') AS share,
           max(value) FILTER (WHERE name = 'segment_course_min_m') AS min_m
    FROM analysis_settings
), e AS NOT MATERIALIZED (  -- inlined where read: the flags joined on the athlete, so a read for one athlete reads theirs
    SELECT e.athlete_id, e.segment_id, e.name, e.effort_id, e.activity_id, e.start_date, e.start_date_local,
           e.elapsed_time, e.moving_time, e.distance, e.pr_rank, e.hidden,
           coalesce(e.hidden, false) AS is_hidden, coalesce(e.elapsed_time, 0) <= 0 AS untimed,
           coalesce(r.dated_ahead OR r.kept_activity_id IS NOT NULL OR f.motorized, false) AS not_counted
    FROM segment_efforts e
    LEFT JOIN recordings() r ON r.athlete_id = e.athlete_id AND r.activity_id = e.activity_id
    LEFT JOIN analysis_sport_families f ON f.sport_type = r.sport_type
), courses AS (  -- the median distance of the athlete's last three timed efforts with a distance (an aggregate:
                -- no sort of every effort)
    SELECT athlete_id, segment_id,
           list_aggregate(max_by(distance, (start_date, effort_id), 3), 'median') AS course_m
    FROM e
    WHERE NOT is_hidden AND NOT untimed AND NOT not_counted AND distance > 0
    GROUP BY athlete_id, segment_id
)
SELECT e.*, c.course_m,
       coalesce(abs(e.distance - c.course_m) > greatest(p.share * c.course_m, p.min_m), false) AS other_course
FROM e LEFT JOIN courses c ON c.athlete_id = e.athlete_id AND c.segment_id = e.segment_id CROSS JOIN params p;

-- Every effort per athlete and segment that segment_efforts_judged() leaves in, in time order (start instant, then
-- effort id), with the running best. The PRs are recomputed from the efforts (the service's pr_rank, kept as
-- service_pr_rank, is a snapshot from upload time). A PR is an effort strictly faster than every earlier one; the
-- first attempt sets the first best (is_first_attempt). One window aggregate: the running best is the lesser of the
-- effort and the previous best (least() skips NULL), not a second frame (≈15% faster over 250k efforts,
-- bench/query.py).
CREATE OR REPLACE VIEW segment_effort_progression AS
WITH s AS MATERIALIZED (
    SELECT segment_id, name FROM segments
), e AS (
    SELECT e.athlete_id, e.segment_id, coalesce(s.name, e.name) AS segment_name, e.effort_id, e.activity_id,
           e.start_date, e.start_date_local, CAST(e.start_date_local AS DATE) AS local_date,
           e.elapsed_time, e.moving_time, e.pr_rank AS service_pr_rank
    FROM segment_efforts_judged() e LEFT JOIN s ON s.segment_id = e.segment_id
    WHERE NOT e.is_hidden AND NOT e.untimed AND NOT e.not_counted AND NOT e.other_course
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
-- from the current PR to the athlete's as_of_date. Efforts left out of the progression are counted, not dropped
-- silently: hidden ones (the athlete hid them) and untimed ones (elapsed_time 0 or missing: no time to compare);
-- a segment with no timed, visible effort has a row with 0 attempts. exclusion_note says what was left out.
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
), x AS (
    SELECT athlete_id, segment_id, max(name) AS effort_name,
           CAST(count(*) FILTER (WHERE is_hidden) AS INTEGER) AS hidden_efforts,
           CAST(count(*) FILTER (WHERE NOT is_hidden AND untimed) AS INTEGER) AS untimed_efforts,
           CAST(count(*) FILTER (WHERE NOT is_hidden AND NOT untimed AND NOT not_counted AND other_course) AS INTEGER)
               AS other_course_efforts,
           any_value(course_m) AS course_m,
           min(distance) FILTER (WHERE other_course) AS other_min_m, max(distance) FILTER (WHERE other_course) AS other_max_m
    FROM segment_efforts_judged()
    GROUP BY athlete_id, segment_id
), n AS MATERIALIZED (
    SELECT segment_id, name FROM segments
), o AS (
    SELECT athlete_id, as_of_date FROM athlete_as_of
)
SELECT x.athlete_id, x.segment_id, coalesce(s.segment_name, n.name, x.effort_name) AS segment_name,
       coalesce(s.attempts, 0) AS attempts, s.first_attempt_date, s.last_attempt_date,
       s.current_pr_s, s.current_pr_effort_id, s.current_pr_date, coalesce(s.improvements, 0) AS improvements,
       CAST(coalesce(o.as_of_date, s.last_attempt_date) - s.current_pr_date AS INTEGER) AS days_since_pr,
       x.hidden_efforts, x.untimed_efforts, x.other_course_efforts, x.course_m,
       CASE WHEN x.hidden_efforts + x.untimed_efforts + x.other_course_efforts = 0 THEN 'ok'
            ELSE concat_ws('; ',
                CASE WHEN x.untimed_efforts > 0 THEN x.untimed_efforts || ' without a time (elapsed_time 0 or missing)' END,
                CASE WHEN x.hidden_efforts > 0 THEN x.hidden_efforts || ' hidden' END,
                CASE WHEN x.other_course_efforts > 0
                     THEN x.other_course_efforts || ' on another course ('
                          || CAST(round(x.other_min_m) AS BIGINT)
                          || CASE WHEN round(x.other_max_m) > round(x.other_min_m)
                                  THEN '–' || CAST(round(x.other_max_m) AS BIGINT) ELSE '' END
                          || ' m against ' || CAST(round(x.course_m) AS BIGINT)
                          || ' m now: the segment was re-measured)' END)
                || ': left out' END
           AS exclusion_note
FROM x LEFT JOIN s ON s.athlete_id = x.athlete_id AND s.segment_id = x.segment_id
LEFT JOIN n ON n.segment_id = x.segment_id
LEFT JOIN o ON o.athlete_id = x.athlete_id
ORDER BY x.athlete_id, x.segment_id;

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
), o AS (
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
WITH b AS (  -- the calendar's activities first, then their buckets: a read for one athlete counts theirs only
    SELECT c.athlete_id, c.activity_id, c.sport_type, c.start_date_local, c.local_date, c.week_start, c.iso_year,
           c.iso_week, c.month_start, c.year, c.month, z.zone_type, z.bucket_index, z.min, z.max,
           CAST(coalesce(z.seconds, 0) AS BIGINT) AS seconds,
           CAST(count(*) OVER (PARTITION BY c.athlete_id, c.activity_id, z.zone_type) AS INTEGER) AS zone_count
    FROM activity_calendar c JOIN activity_zone_buckets z ON z.activity_id = c.activity_id
), seiler_map AS (
    -- each athlete's mapping: their own row for a bucket if they have one, else the default (athlete_id 0)
    SELECT a.athlete_id, s.zone_type, s.zone_count, s.bucket_index, arg_max(s.seiler_zone, s.athlete_id) AS seiler_zone
    FROM (SELECT DISTINCT athlete_id FROM activities) a
    JOIN analysis_seiler_zones s ON s.athlete_id IN (0, a.athlete_id)
    GROUP BY a.athlete_id, s.zone_type, s.zone_count, s.bucket_index
)
SELECT b.athlete_id, b.activity_id, b.sport_type, b.start_date_local, b.local_date, b.week_start, b.iso_year,
       b.iso_week, b.month_start, b.year, b.month, b.zone_type, b.bucket_index AS zone, b.zone_count,
       b.min AS zone_min, b.max AS zone_max, b.seconds, m.seiler_zone
FROM b
LEFT JOIN analysis_sport_families f ON f.sport_type = b.sport_type
LEFT JOIN seiler_map m
       ON m.athlete_id = b.athlete_id AND m.zone_type = b.zone_type AND m.zone_count = b.zone_count
      AND m.bucket_index = b.bucket_index
WHERE b.zone_type <> 'power' OR coalesce(f.power_tss, false)  -- the power zones are the bike's: no run's pod in them
ORDER BY b.athlete_id, b.start_date_local, b.activity_id, b.zone_type, b.bucket_index;

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

-- Seiler's polarization index (Treff et al. 2019, Front. Physiol. 10:707) from the seconds in zones 1, 2 and 3, with
-- the paper's own rules. On the shares f1, f2, f3 (fractions, not percent):
--   PI = log10(f1 / f2 * f3 * 100)                        (eq. 1)
--   f2 = 0: PI = log10(f1 / 0.01 * (f3 - 0.01) * 100)     (eq. 2: 1 % moved from zone 3 to zone 2)
--   f3 = 0: PI = 0 by definition (no high-intensity time: not polarized)
--   f3 > f1: no PI (not a valid distribution for the index)
-- Eq. 2 reproduces the paper's Table 1 (80/0/20 -> 3.18, 72/0/28 -> 3.29); with f2 = 0 and f3 <= 1 % it has no
-- value and PI is 0, as for f3 = 0. polarization_note says which rule gave the value. Macros, so analysts can
-- apply them to their own groupings: SELECT polarization_index(sum(z1_seconds), sum(z2_seconds), sum(z3_seconds))
CREATE OR REPLACE MACRO polarization_index(z1, z2, z3) AS
    CASE WHEN z1 + z2 + z3 <= 0 OR z3 > z1 THEN NULL
         WHEN z3 = 0 THEN 0.0
         WHEN z2 = 0 THEN CASE WHEN z3 / (z1 + z2 + z3) > 0.01
                               THEN log10((z1 / (z1 + z2 + z3)) / 0.01 * (z3 / (z1 + z2 + z3) - 0.01) * 100)
                               ELSE 0.0 END
         ELSE log10((z1 / (z1 + z2 + z3)) / (z2 / (z1 + z2 + z3)) * (z3 / (z1 + z2 + z3)) * 100) END;

CREATE OR REPLACE MACRO polarization_note(z1, z2, z3) AS
    CASE WHEN z1 + z2 + z3 <= 0 THEN 'undefined: no time in mapped zones'
         WHEN z3 > z1 THEN 'not valid: more zone-3 than zone-1 time'
         WHEN z3 = 0 THEN 'zone 3 is 0: PI 0 by definition'
         WHEN z2 = 0 AND z3 / (z1 + z2 + z3) > 0.01 THEN 'zone 2 is 0: eq. 2 (1 % of zone 3 moved to zone 2)'
         WHEN z2 = 0 THEN 'zone 2 is 0 and zone 3 at most 1 %: PI 0, as for zone 3 = 0'
         ELSE 'ok' END;

-- Seiler's three zones per period and zone type, their shares, and the polarization index with Treff's rules
-- (above; pi_note says which rule applied); time in buckets without a mapping is unmapped_seconds.
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

-- The profile FTPs no load uses (outside ftp_min_w .. ftp_max_w: a typo, a wrong unit), each value with the days
-- fitsync saw it: what ftp_timeline leaves out, and what the report and `fitsync thresholds` say.
CREATE OR REPLACE VIEW profile_ftp_unused AS
WITH bounds AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'ftp_min_w') AS low, max(value) FILTER (WHERE name = 'ftp_max_w') AS high
    FROM analysis_settings
)
SELECT s.athlete_id, s.ftp, min(s.snapshot_date) AS first_seen, max(s.snapshot_date) AS last_seen,
       any_value(b.low) AS ftp_min_w, any_value(b.high) AS ftp_max_w
FROM athlete_snapshots s CROSS JOIN bounds b
WHERE s.ftp > 0 AND NOT s.ftp BETWEEN b.low AND b.high
GROUP BY s.athlete_id, s.ftp
ORDER BY s.athlete_id, first_seen;

-- FTP by date per athlete, from two sources merged into one timeline: the explicit analysis_ftp_history rows
-- ('history') and the profile FTP as fitsync saw it (athlete_snapshots: 'profile', from the first day each value
-- was seen; a value outside ftp_min_w .. ftp_max_w is not used: profile_ftp_unused says so). From each valid_from the
-- row applies until the next one (valid_to, NULL: still in force); an explicit row wins over a profile value first
-- seen the same day. Before the first row no FTP was known: activity_load
-- uses the earliest known one there and says so.
CREATE OR REPLACE VIEW ftp_timeline AS
WITH seen AS (
    SELECT s.athlete_id, s.snapshot_date, s.ftp,
           lag(s.ftp) OVER (PARTITION BY s.athlete_id ORDER BY s.snapshot_date) AS seen_before
    FROM athlete_snapshots s
    WHERE s.ftp > 0
      AND NOT EXISTS (SELECT 1 FROM profile_ftp_unused u WHERE u.athlete_id = s.athlete_id AND u.ftp = s.ftp)
), points AS (
    SELECT athlete_id, valid_from, ftp, 'history' AS source, 0 AS preference FROM analysis_ftp_history
    UNION ALL
    -- a profile FTP applies from the day fitsync first saw it, and from each day it saw it change: the service's
    -- word on that day, which ends an older row of the athlete's as any later value does (`fitsync thresholds set`
    -- says so, with the command that keeps the row's value after it)
    SELECT s.athlete_id, s.snapshot_date, s.ftp, 'profile', 1 FROM seen s
    WHERE s.seen_before IS DISTINCT FROM s.ftp
), one AS (
    SELECT DISTINCT ON (athlete_id, valid_from) athlete_id, valid_from, ftp, source
    FROM points
    ORDER BY athlete_id, valid_from, preference
)
SELECT athlete_id, valid_from, lead(valid_from) OVER (PARTITION BY athlete_id ORDER BY valid_from) AS valid_to,
       ftp, source
FROM one
ORDER BY athlete_id, valid_from;

-- Per activity: every load it could have on the TSS scale (an hour at threshold = 100), and the one chosen
-- (load, load_source), explicit thresholds before derived ones:
--   power_load     duration * (NP / FTP)^2 / 3600 * 100, NP approximated by weighted_average_watts: device power on
--                  a sport type with power_tss, FTP for the local date from ftp_timeline (ftp_source: history,
--                  profile, or known_later: before the athlete's first known FTP, the first one, known only later);
--   pace_load      runs with a threshold pace set (analysis_thresholds): rTSS = duration * (speed / threshold
--                  speed)^2 / 3600 * 100, on the grade-adjusted speed when every split carries it (the real service),
--                  else the average speed (pace_basis);
--   hr_load        the seconds in each heart-rate zone (activity_zone_buckets) times the zone's load per hour
--                  (analysis_hr_zone_weights), scaled per athlete by hr_calibration = the median of power_load /
--                  that zone load over the athlete's rides with both, when there are hr_calibration_min_rides and
--                  the ratio is within hr_calibration_min_ratio .. max_ratio (hr_load_basis zones_calibrated, else
--                  zones); buckets covering less than hr_min_coverage of the duration (a strap that dropped out):
--                  the seconds not covered at the sport's usual intensity (as estimated_load), never the recorded
--                  minutes scaled up; more than its inverse (buckets longer than the activity): scaled to the
--                  duration (hr_coverage); neither counted as measured; without zone buckets,
--                  duration * (average HR / LTHR)^2 / 3600 * 100 (average_hr), LTHR from analysis_thresholds by
--                  date ('setting'), else the lower bound of zone lthr_zone of the athlete's 5 heart-rate zones in force (athlete_zone_history; the first version before it: 'zones');
--   suffer_score   the service's relative effort;
--   estimated_load duration * estimate_if^2 / 3600 * 100, the sport type's usual intensity (analysis_sport_families;
--                  estimate_if_default for others).
-- load_source is the first of power, pace (runs: rTSS before hrTSS, as TrainingPeaks orders them), heart_rate,
-- suffer_score, estimate that the activity has; 'none' without any (no duration). duration is moving_time, else
-- elapsed_time. intensity_factor is the chosen source's: NP / FTP, speed / threshold speed, HR / LTHR (for zone
-- loads the IF an hour of that load means), estimate_if; NULL for the suffer score.
CREATE OR REPLACE VIEW activity_load AS
WITH settings AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'lthr_zone') AS lthr_zone,
           max(value) FILTER (WHERE name = 'estimate_if_default') AS estimate_if_default,
           max(value) FILTER (WHERE name = 'hr_calibration_min_rides') AS min_rides,
           max(value) FILTER (WHERE name = 'hr_calibration_min_ratio') AS min_ratio,
           max(value) FILTER (WHERE name = 'hr_calibration_max_ratio') AS max_ratio,
           max(value) FILTER (WHERE name = 'hr_min_coverage') AS min_coverage
    FROM analysis_settings
), f AS MATERIALIZED (
    SELECT sport_type, power_tss, estimate_if FROM analysis_sport_families
), tl AS MATERIALIZED (
    SELECT athlete_id, valid_from, ftp, source FROM ftp_timeline
), first_ftp AS MATERIALIZED (
    SELECT athlete_id, arg_min(ftp, valid_from) AS ftp FROM ftp_timeline GROUP BY athlete_id
), lthr_set AS MATERIALIZED (
    SELECT athlete_id, valid_from, lthr FROM analysis_thresholds WHERE lthr IS NOT NULL
), pace_set AS MATERIALIZED (
    SELECT athlete_id, valid_from, threshold_pace_s_per_km AS pace FROM analysis_thresholds
    WHERE threshold_pace_s_per_km IS NOT NULL
), lthr_zones AS MATERIALIZED (
    SELECT athlete_id, valid_from, zone_min AS lthr
    FROM (SELECT *, count(*) OVER (PARTITION BY athlete_id, zone_type, version) AS zones
          FROM athlete_zone_history WHERE zone_type = 'heartrate')
    WHERE zones = 5 AND zone = (SELECT lthr_zone FROM settings) AND zone_min > 0
), first_zone AS MATERIALIZED (
    SELECT athlete_id, arg_min(lthr, valid_from) AS lthr FROM lthr_zones GROUP BY athlete_id
), base AS (
    SELECT c.activity_id, c.athlete_id, c.sport_type, c.sport_family, c.local_date, c.week_start, c.iso_year,
           c.iso_week, a.moving_time, coalesce(nullif(a.moving_time, 0), a.elapsed_time) AS duration_s, a.distance,
           a.device_watts, a.weighted_average_watts, a.average_heartrate, a.suffer_score,
           coalesce(f.power_tss, false) AS power_tss, coalesce(f.estimate_if, s.estimate_if_default) AS estimate_if,
           z.zone_load, z.zone_seconds,
           z.zone_seconds / nullif(coalesce(nullif(a.moving_time, 0), a.elapsed_time), 0) AS hr_coverage,
           g.gap_speed
    FROM activity_calendar c
    JOIN activities a ON a.activity_id = c.activity_id
    LEFT JOIN f ON f.sport_type = c.sport_type
    -- the zone load and the grade-adjusted speed of each activity read (laterally: for one athlete's read, only
    -- that athlete's buckets and splits are summed, not the warehouse's)
    LEFT JOIN LATERAL (
        SELECT sum(b.seconds * w.load_per_hour) / 3600 AS zone_load, sum(b.seconds) AS zone_seconds
        FROM (SELECT bucket_index, seconds, count(*) OVER () AS zone_count
              FROM activity_zone_buckets WHERE activity_id = c.activity_id AND zone_type = 'heartrate') b
        JOIN analysis_hr_zone_weights w ON w.zone_count = b.zone_count AND w.zone = b.bucket_index
        HAVING sum(b.seconds) > 0
    ) z ON true
    LEFT JOIN LATERAL (
        SELECT sum(average_grade_adjusted_speed * moving_time) / sum(moving_time) AS gap_speed
        FROM splits_metric
        WHERE activity_id = c.activity_id AND moving_time > 0
        HAVING min(coalesce(average_grade_adjusted_speed, 0)) > 0
    ) g ON true
    CROSS JOIN settings s
), dated AS (
    SELECT base.*, tl.ftp AS dated_ftp, tl.source AS dated_source, first_ftp.ftp AS first_ftp,
           lthr_set.lthr AS set_lthr, lthr_zones.lthr AS dated_zone_lthr, first_zone.lthr AS first_zone_lthr,
           pace_set.pace AS threshold_pace
    FROM base
    ASOF LEFT JOIN tl ON tl.athlete_id = base.athlete_id AND base.local_date >= tl.valid_from
    LEFT JOIN first_ftp ON first_ftp.athlete_id = base.athlete_id
    ASOF LEFT JOIN lthr_set ON lthr_set.athlete_id = base.athlete_id AND base.local_date >= lthr_set.valid_from
    ASOF LEFT JOIN lthr_zones ON lthr_zones.athlete_id = base.athlete_id AND base.local_date >= lthr_zones.valid_from
    LEFT JOIN first_zone ON first_zone.athlete_id = base.athlete_id
    ASOF LEFT JOIN pace_set ON pace_set.athlete_id = base.athlete_id AND base.local_date >= pace_set.valid_from
), sourced AS (
    SELECT *, coalesce(dated_ftp, first_ftp) AS ftp,
           CASE WHEN dated_ftp IS NOT NULL THEN dated_source WHEN first_ftp IS NOT NULL THEN 'known_later' END
               AS ftp_source,
           coalesce(set_lthr, dated_zone_lthr, first_zone_lthr) AS lthr,
           CASE WHEN set_lthr IS NOT NULL THEN 'setting' WHEN dated_zone_lthr IS NOT NULL THEN 'zones'
                WHEN first_zone_lthr IS NOT NULL THEN 'known_later' END AS lthr_source
    FROM dated
), rated AS (
    SELECT *,
           CASE WHEN duration_s > 0 AND power_tss AND coalesce(device_watts, false) AND weighted_average_watts > 0
                     AND ftp > 0 THEN weighted_average_watts / ftp END AS power_if,
           CASE WHEN duration_s > 0 AND sport_family = 'Run' AND threshold_pace > 0 AND distance > 0
                THEN coalesce(gap_speed, distance / duration_s) * threshold_pace / 1000 END AS pace_if,
           CASE WHEN duration_s > 0 AND average_heartrate > 0 AND lthr > 0 THEN average_heartrate / lthr END AS hr_if,
           CASE WHEN duration_s > 0 AND estimate_if > 0 THEN estimate_if END AS estimate_if_used
    FROM sourced
), candidates AS (
    SELECT *, duration_s * power_if * power_if / 3600 * 100 AS power_load,
           duration_s * pace_if * pace_if / 3600 * 100 AS pace_load,
           duration_s * estimate_if_used * estimate_if_used / 3600 * 100 AS estimated_load
    FROM rated
), calibration AS (
    SELECT athlete_id, count(*) AS rides, median(power_load / zone_load) AS ratio
    FROM candidates CROSS JOIN settings s
    WHERE power_load > 0 AND zone_load > 0 AND hr_coverage BETWEEN s.min_coverage AND 1 / s.min_coverage
    GROUP BY athlete_id
), calibrated AS (
    SELECT c.*,
           CASE WHEN k.rides >= s.min_rides AND k.ratio BETWEEN s.min_ratio AND s.max_ratio THEN k.ratio END
               AS hr_calibration,
           NOT c.hr_coverage BETWEEN s.min_coverage AND 1 / s.min_coverage AS hr_partial,
           c.hr_coverage < s.min_coverage AS hr_short
    FROM candidates c
    LEFT JOIN calibration k ON k.athlete_id = c.athlete_id
    CROSS JOIN settings s
), hr AS (
    SELECT *,
           -- a strap that dropped out: what it recorded, and the rest as an activity without heart rate (2 minutes
           -- scaled to a 3-hour ride made the 2 minutes' intensity 90 times over)
           CASE WHEN zone_load > 0 AND hr_short
                     THEN zone_load * coalesce(hr_calibration, 1)
                          + (duration_s - zone_seconds) * coalesce(estimate_if_used * estimate_if_used, 0) / 36
                WHEN zone_load > 0 THEN zone_load * coalesce(hr_calibration, 1)
                                        / CASE WHEN hr_partial THEN hr_coverage ELSE 1 END
                WHEN hr_if IS NOT NULL THEN duration_s * hr_if * hr_if / 3600 * 100 END AS hr_load,
           CASE WHEN zone_load > 0 AND hr_calibration IS NOT NULL THEN 'zones_calibrated'
                WHEN zone_load > 0 THEN 'zones'
                WHEN hr_if IS NOT NULL THEN 'average_hr' END AS hr_load_basis
    FROM calibrated
), chosen AS (
    SELECT *,
           CASE WHEN power_load IS NOT NULL THEN 'power'
                WHEN pace_load IS NOT NULL THEN 'pace'
                WHEN hr_load IS NOT NULL THEN 'heart_rate'
                WHEN suffer_score IS NOT NULL THEN 'suffer_score'
                WHEN estimated_load IS NOT NULL THEN 'estimate'
                ELSE 'none' END AS load_source
    FROM hr
)
SELECT activity_id, athlete_id, sport_type, sport_family, local_date, week_start, iso_year, iso_week, moving_time,
       duration_s, weighted_average_watts AS np_watts, ftp, ftp_source, average_heartrate AS average_hr, lthr,
       lthr_source, threshold_pace AS threshold_pace_s_per_km, power_load, pace_load,
       CASE WHEN pace_load IS NOT NULL THEN CASE WHEN gap_speed IS NOT NULL THEN 'grade_adjusted'
                                                 ELSE 'average_speed' END END AS pace_basis,
       hr_load, hr_load_basis, hr_calibration, hr_coverage, suffer_score, estimated_load,
       CASE load_source WHEN 'power' THEN power_if
                        WHEN 'pace' THEN pace_if
                        WHEN 'heart_rate' THEN CASE WHEN hr_load_basis = 'average_hr' THEN hr_if
                                                    WHEN duration_s > 0 THEN sqrt(hr_load * 36 / duration_s) END
                        WHEN 'estimate' THEN estimate_if_used END AS intensity_factor,
       CASE load_source WHEN 'power' THEN power_load WHEN 'pace' THEN pace_load WHEN 'heart_rate' THEN hr_load
                        WHEN 'suffer_score' THEN suffer_score WHEN 'estimate' THEN estimated_load END AS load,
       load_source,
       load_source IN ('power', 'pace', 'heart_rate', 'suffer_score')
           AND NOT coalesce(load_source = 'power' AND ftp_source = 'known_later', false)
           AND NOT coalesce(load_source = 'heart_rate' AND zone_load > 0 AND hr_partial, false)
           AND NOT coalesce(load_source = 'heart_rate' AND hr_load_basis = 'average_hr' AND lthr_source = 'known_later',
                            false) AS measured
FROM chosen
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

-- The daily load per athlete and sport family (and 'All': every activity), dense from the athlete's first activity
-- to as_of_date for every family the athlete has: rest days are 0.
CREATE OR REPLACE VIEW daily_load_by_family AS
WITH per_day AS (
    SELECT athlete_id, CASE WHEN grouping(sport_family) = 1 THEN 'All' ELSE sport_family END AS sport_family,
           local_date, sum(load) AS load, count(*) AS activities
    FROM activity_load
    GROUP BY GROUPING SETS ((athlete_id, sport_family, local_date), (athlete_id, local_date))
), families AS (
    SELECT DISTINCT athlete_id, unnest([sport_family, 'All']) AS sport_family FROM activity_calendar
), days AS (
    SELECT f.athlete_id, f.sport_family, o.first_activity_date + CAST(i AS INTEGER) AS date
    FROM families f
    JOIN (SELECT athlete_id, first_activity_date, unnest(range(0, as_of_date - first_activity_date + 1)) AS i
          FROM athlete_as_of) o ON o.athlete_id = f.athlete_id
)
SELECT d.athlete_id, d.sport_family, d.date, coalesce(p.load, 0.0) AS load,
       CAST(coalesce(p.activities, 0) AS BIGINT) AS activities
FROM days d
LEFT JOIN per_day p ON p.athlete_id = d.athlete_id AND p.sport_family = d.sport_family AND p.local_date = d.date
ORDER BY d.athlete_id, d.sport_family, d.date;

-- Two exponentially weighted averages of daily_load_by_family, time constants tau_a and tau_b (columns a and b),
-- per athlete and family (one family, or every one when family is NULL). With k = 1 - exp(-1/tau) the recurrence, from 0 before the first day, is
--   x[t] = x[t-1] + k * (load[t] - x[t-1]),  i.e.  x[t] = sum over i <= t of k * load[i] * exp(-(t-i)/tau)
-- computed here without recursion: the series is cut in blocks of B = ceil(40 * tau) days; each day's value is a
-- running sum over its own and the previous block, factored around that window's start so no exponent exceeds
-- 2B/tau (about 80). What it leaves out is older than B days and weighs below exp(-40) ~ 4e-18 of a load: the
-- values equal the recurrence to double precision. The PMC (CTL, ATL) and the EWMA workload ratio use it.
CREATE OR REPLACE MACRO load_ewma(tau_a, tau_b, only_family) AS TABLE
WITH kinds AS (
    SELECT 'a' AS kind, tau_a AS tau
    UNION ALL
    SELECT 'b', tau_b
), series AS (
    SELECT athlete_id, sport_family, date, load,
           CAST(date - min(date) OVER (PARTITION BY athlete_id, sport_family) AS BIGINT) AS n
    FROM daily_load_by_family
    WHERE only_family IS NULL OR sport_family = only_family
), spread AS (
    SELECT s.athlete_id, s.sport_family, s.date, s.load, s.n, k.kind, k.tau, 1 - exp(-1 / k.tau) AS alpha,
           CAST(ceil(40 * k.tau) AS BIGINT) AS block,
           s.n // CAST(ceil(40 * k.tau) AS BIGINT) + shift.blocks AS target
    FROM series s CROSS JOIN kinds k CROSS JOIN (VALUES (0), (1)) AS shift(blocks)
), summed AS (
    SELECT athlete_id, sport_family, date, load, n, kind, tau, block, target,
           sum(alpha * load * exp((n - (target - 1) * block) / tau))
               OVER (PARTITION BY athlete_id, sport_family, kind, target ORDER BY n ROWS UNBOUNDED PRECEDING) AS acc
    FROM spread
), ewma AS (
    SELECT athlete_id, sport_family, date, load, kind, acc * exp(-(n - (target - 1) * block) / tau) AS value
    FROM summed
    WHERE n // block = target
)
SELECT athlete_id, sport_family, date, load,
       max(value) FILTER (WHERE kind = 'a') AS a,
       max(value) FILTER (WHERE kind = 'b') AS b
FROM ewma
GROUP BY athlete_id, sport_family, date, load;

-- The time constant load_ewma takes for a PMC time constant in days: itself for the exact exponential (k = 1 -
-- exp(-1/days), GoldenCheetah), or the one whose k is 1/days (TrainingPeaks) when pmc_constant_form is 1.
CREATE OR REPLACE MACRO pmc_tau(days) AS
    CASE WHEN (SELECT value FROM analysis_settings WHERE name = 'pmc_constant_form') = 1
         THEN -1 / ln(1 - 1 / days) ELSE days END;

-- The performance management chart of one sport family ('All': every activity), or of every family (NULL): CTL
-- and ATL (load_ewma with ctl_days and atl_days), TSB = yesterday's CTL - ATL, ramp_rate = CTL minus CTL
-- ramp_days earlier, and the form band of the TSB.
CREATE OR REPLACE MACRO pmc_of(only_family) AS TABLE
WITH params AS (
    SELECT CAST(max(value) FILTER (WHERE name = 'ramp_days') AS INTEGER) AS ramp_days FROM analysis_settings
), wide AS (
    SELECT athlete_id, sport_family, date, load, a AS ctl, b AS atl
    FROM load_ewma((SELECT pmc_tau(value) FROM analysis_settings WHERE name = 'ctl_days'),
                   (SELECT pmc_tau(value) FROM analysis_settings WHERE name = 'atl_days'), only_family)
), shaped AS (
    SELECT w.athlete_id, w.sport_family, w.date, w.load, w.ctl, w.atl,
           lag(w.ctl, 1, 0) OVER w1 - lag(w.atl, 1, 0) OVER w1 AS tsb,
           w.ctl - lag(w.ctl, p.ramp_days, 0) OVER w1 AS ramp_rate
    FROM wide w CROSS JOIN params p
    WINDOW w1 AS (PARTITION BY w.athlete_id, w.sport_family ORDER BY w.date)
)
SELECT s.athlete_id, s.sport_family, s.date, s.load, s.ctl, s.atl, s.tsb, s.ramp_rate, b.band AS form_band
FROM shaped s
LEFT JOIN analysis_form_bands b
       ON s.tsb >= coalesce(b.tsb_from, '-Infinity'::DOUBLE) AND s.tsb < coalesce(b.tsb_to, 'Infinity'::DOUBLE);

-- The performance management chart per athlete and sport family ('All': every activity, as the pmc view).
CREATE OR REPLACE VIEW pmc_by_family AS
SELECT * FROM pmc_of(NULL) ORDER BY athlete_id, sport_family, date;

-- The performance management chart of all the athlete's activities (pmc_by_family's 'All' rows).
CREATE OR REPLACE VIEW pmc AS
SELECT athlete_id, date, load, ctl, atl, tsb, ramp_rate, form_band FROM pmc_of('All') ORDER BY athlete_id, date;

-- Load risk per athlete and day, from all activities' daily load:
--   acute_load / chronic_load: mean daily load over the last acwr_acute_days (7) and acwr_chronic_days (28) days,
--   today included; acwr_rolling = acute_load / chronic_load (the coupled rolling ratio, Gabbett 2016);
--   acwr_ewma = EWMA(acute) / EWMA(chronic) with lambda = 2 / (N + 1) (Williams et al. 2017), from 0 before the
--   first day. Both are NULL until the series has a full chronic window, while the chronic window holds fewer than
--   acwr_min_sessions activities (chronic_sessions) or while chronic_load is below acwr_min_chronic_load a day: a
--   ratio over one session in four weeks is 4.0 whatever the session was. acwr_note says which;
--   monotony = mean / population standard deviation of the daily load over monotony_days (7) days, NULL when the
--   loads are all equal or the window is not full; strain = the window's total load * monotony (Foster 1998).
CREATE OR REPLACE VIEW load_risk_daily AS
WITH params AS (
    SELECT CAST(max(value) FILTER (WHERE name = 'acwr_acute_days') AS INTEGER) AS acute_days,
           CAST(max(value) FILTER (WHERE name = 'acwr_chronic_days') AS INTEGER) AS chronic_days,
           CAST(max(value) FILTER (WHERE name = 'monotony_days') AS INTEGER) AS monotony_days,
           max(value) FILTER (WHERE name = 'acwr_min_sessions') AS min_sessions,
           max(value) FILTER (WHERE name = 'acwr_min_chronic_load') AS min_chronic
    FROM analysis_settings
), ewma AS (
    -- lambda = 2 / (N + 1) is k = 1 - exp(-1/tau) with tau = -1 / ln(1 - lambda)
    SELECT athlete_id, date, a AS ewma_acute, b AS ewma_chronic
    FROM load_ewma((SELECT -1 / ln(1 - 2 / (value + 1)) FROM analysis_settings WHERE name = 'acwr_acute_days'),
                   (SELECT -1 / ln(1 - 2 / (value + 1)) FROM analysis_settings WHERE name = 'acwr_chronic_days'),
                   'All')
), windows AS (
    SELECT d.athlete_id, d.date, d.load, p.chronic_days, p.monotony_days, p.min_sessions, p.min_chronic,
           row_number() OVER w AS days,
           CAST(sum(d.activities) OVER (w ROWS BETWEEN p.chronic_days - 1 PRECEDING AND CURRENT ROW) AS BIGINT)
               AS chronic_sessions,
           sum(d.load) OVER (w ROWS BETWEEN p.acute_days - 1 PRECEDING AND CURRENT ROW) / p.acute_days AS acute_load,
           sum(d.load) OVER (w ROWS BETWEEN p.chronic_days - 1 PRECEDING AND CURRENT ROW) / p.chronic_days
               AS chronic_load,
           sum(d.load) OVER (w ROWS BETWEEN p.monotony_days - 1 PRECEDING AND CURRENT ROW) AS week_load,
           avg(d.load) OVER (w ROWS BETWEEN p.monotony_days - 1 PRECEDING AND CURRENT ROW) AS week_mean,
           stddev_pop(d.load) OVER (w ROWS BETWEEN p.monotony_days - 1 PRECEDING AND CURRENT ROW) AS week_sd
    FROM daily_load_by_family d CROSS JOIN params p
    WHERE d.sport_family = 'All'
    WINDOW w AS (PARTITION BY d.athlete_id ORDER BY d.date)
)
SELECT s.athlete_id, s.date, s.load, s.acute_load, s.chronic_load, s.chronic_sessions,
       CASE WHEN s.ratio_ok AND s.chronic_load > 1e-9 THEN s.acute_load / s.chronic_load END AS acwr_rolling,
       e.ewma_acute, e.ewma_chronic,
       CASE WHEN s.ratio_ok AND e.ewma_chronic > 1e-9 THEN e.ewma_acute / e.ewma_chronic END AS acwr_ewma,
       CASE WHEN s.days < s.chronic_days THEN 'fewer than ' || s.chronic_days || ' days of history'
            WHEN s.chronic_sessions < s.min_sessions
                 THEN 'too few sessions: ' || s.chronic_sessions || ' in ' || s.chronic_days || ' days, '
                      || CAST(s.min_sessions AS BIGINT) || ' needed'
            WHEN s.chronic_load < s.min_chronic OR s.chronic_load <= 1e-9
                 THEN 'chronic load too low: ' || CAST(round(s.chronic_load, 1) AS VARCHAR) || ' a day on average, '
                      || CAST(s.min_chronic AS BIGINT) || ' needed'
            ELSE 'ok' END AS acwr_note,
       CASE WHEN s.days >= s.monotony_days AND s.week_sd > 1e-6 THEN s.week_mean / s.week_sd END AS monotony,
       CASE WHEN s.days >= s.monotony_days AND s.week_sd > 1e-6 THEN s.week_load * s.week_mean / s.week_sd END
           AS strain
FROM (SELECT *, days >= chronic_days AND chronic_sessions >= min_sessions AND chronic_load >= min_chronic AS ratio_ok
      FROM windows) s
JOIN ewma e ON e.athlete_id = s.athlete_id AND e.date = s.date
ORDER BY s.athlete_id, s.date;

-- Per athlete and ISO week: how much of the time has a load, how much of it was measured (power, heart rate, pace
-- or suffer score) rather than estimated, and how many activities each source gave. Power load from an FTP known
-- only later (ftp_source known_later) is not measured: it is counted apart (later_ftp_activities).
CREATE OR REPLACE VIEW load_coverage_weekly AS
SELECT athlete_id, week_start, iso_year, iso_week,
       CAST(count(*) AS BIGINT) AS activities,
       CAST(coalesce(sum(duration_s), 0) AS BIGINT) AS moving_time_s,
       CAST(coalesce(sum(duration_s) FILTER (WHERE load IS NOT NULL), 0) AS BIGINT) AS loaded_moving_time_s,
       coalesce(sum(duration_s) FILTER (WHERE load IS NOT NULL), 0) / nullif(sum(duration_s), 0) AS coverage,
       coalesce(sum(duration_s) FILTER (WHERE measured), 0) / nullif(sum(duration_s), 0) AS measured_coverage,
       CAST(count(*) FILTER (WHERE load_source = 'power') AS BIGINT) AS power_activities,
       CAST(count(*) FILTER (WHERE load_source = 'heart_rate') AS BIGINT) AS heart_rate_activities,
       CAST(count(*) FILTER (WHERE load_source = 'pace') AS BIGINT) AS pace_activities,
       CAST(count(*) FILTER (WHERE load_source = 'suffer_score') AS BIGINT) AS suffer_score_activities,
       CAST(count(*) FILTER (WHERE load_source = 'estimate') AS BIGINT) AS estimated_activities,
       CAST(count(*) FILTER (WHERE load_source = 'none') AS BIGINT) AS unloaded_activities,
       CAST(count(*) FILTER (WHERE load_source = 'power' AND NOT measured) AS BIGINT) AS later_ftp_activities
FROM activity_load
GROUP BY athlete_id, week_start, iso_year, iso_week
ORDER BY athlete_id, week_start;

-- --- power-duration, critical power and best efforts --------------------------------------------------------

-- Every known stretch of device power on a sport type with power_tss (cycling), with its local date and season
-- (season_of: the year the season starts in, season_start_month): an activity's mean-maximal power from its streams
-- (activity_mmp, source 'stream': each duration of its grid a stretch of exactly that length) when its streams are
-- stored; otherwise its segment efforts (elapsed time), laps (moving time) and the whole activity (moving time,
-- average_watts), the only durations known without streams. A table macro the views below share.
CREATE OR REPLACE MACRO power_efforts() AS TABLE
WITH known AS (
    SELECT 'segment_effort' AS source, e.effort_id AS source_id, e.activity_id,
           CAST(e.start_date_local AS DATE) AS local_date, e.elapsed_time AS duration_s, e.average_watts AS watts
    FROM segment_efforts e
    WHERE e.device_watts AND NOT coalesce(e.hidden, false)
    UNION ALL
    SELECT 'lap', l.lap_id, l.activity_id, CAST(l.start_date_local AS DATE), l.moving_time, l.average_watts
    FROM laps l
    WHERE l.device_watts
    UNION ALL
    SELECT 'activity', a.activity_id, a.activity_id, NULL, a.moving_time, a.average_watts
    FROM activities a
    WHERE a.device_watts
    UNION ALL
    SELECT 'stream', m.activity_id, m.activity_id, NULL, m.duration_s, m.watts
    FROM activity_mmp m
    WHERE m.watts > 0
), rides AS (  -- those the analyses count (activity_calendar: no second recording, no date ahead); joined once, on
               -- the athlete too, so that a read for one athlete computes that athlete's calendar only
    SELECT c.athlete_id, k.source, k.source_id, k.activity_id, coalesce(k.local_date, c.local_date) AS local_date,
           k.duration_s, k.watts,
           bool_or(k.source = 'stream') OVER (PARTITION BY c.athlete_id, k.activity_id) AS streamed
    FROM known k JOIN activity_calendar c ON c.activity_id = k.activity_id
    JOIN analysis_sport_families f ON f.sport_type = c.sport_type AND f.power_tss
)
SELECT r.athlete_id, r.source, r.source_id, r.activity_id, r.local_date, r.duration_s, r.watts,
       season_of(r.local_date, p.start_month) AS season
FROM rides r CROSS JOIN (
    SELECT max(value) FILTER (WHERE name = 'season_start_month') AS start_month FROM analysis_settings
) p
WHERE (r.source = 'stream' OR NOT r.streamed) AND r.duration_s > 0 AND r.watts > 0 AND r.local_date IS NOT NULL;

-- Mean-maximal power per athlete, season (the year it starts in, season_start_month; 0 = all time) and duration of
-- analysis_power_durations: an activity with streams gives its exact mean-maximal power at that duration
-- (activity_mmp); an effort, lap or ride without streams gives its average power at every duration up to its length
-- (an estimate: usually below the true best, yet an average over D s is not held over every shorter window — a
-- strong start and finish around a weak middle hold less; a stream's 1.5 h at 175 W carried down to 1 h beat that
-- ride's exact 1 h of 172 W). The best effort is
-- the highest power; on a tie the earliest, then the lowest id. at_duration: the best effort itself lasted less
-- than the next listed duration, so the point is an effort of about that length, not a longer one carried down
-- (charts draw only those as measured).
CREATE OR REPLACE VIEW power_duration_curve AS
WITH e AS (
    SELECT athlete_id, season, source, source_id, activity_id, local_date, duration_s, watts
    FROM power_efforts()
    UNION ALL
    SELECT athlete_id, 0, source, source_id, activity_id, local_date, duration_s, watts FROM power_efforts()
), d AS MATERIALIZED (
    SELECT duration_s, label, lead(duration_s) OVER (ORDER BY duration_s) AS next_s FROM analysis_power_durations
)
SELECT e.athlete_id, e.season, d.duration_s, any_value(d.label) AS label,
       max(e.watts) AS best_watts,
       arg_max(e.source, (e.watts, -epoch(e.local_date), -e.source_id)) AS source,
       arg_max(e.source_id, (e.watts, -epoch(e.local_date), -e.source_id)) AS source_id,
       arg_max(e.activity_id, (e.watts, -epoch(e.local_date), -e.source_id)) AS activity_id,
       arg_max(e.local_date, (e.watts, -epoch(e.local_date), -e.source_id)) AS local_date,
       arg_max(e.duration_s, (e.watts, -epoch(e.local_date), -e.source_id)) AS effort_duration_s,
       coalesce(arg_max(e.duration_s, (e.watts, -epoch(e.local_date), -e.source_id)) < any_value(d.next_s), true)
           AS at_duration
FROM e JOIN d ON e.duration_s >= d.duration_s AND (e.source <> 'stream' OR e.duration_s = d.duration_s)
GROUP BY e.athlete_id, e.season, d.duration_s
ORDER BY e.athlete_id, e.season, d.duration_s;

-- Critical power and W' per athlete and season (0 = all time), the 2-parameter model P = CP + W'/t fitted on the
-- power-duration envelope: an effort is a point only if no longer effort of the season was at least as strong (a
-- sub-maximal 20:00 beside a harder 37:00 says nothing about CP). One point per band between consecutive durations
-- of analysis_power_durations from cp_min_s up to cp_max_s (2-20 min; the last band includes cp_max_s, so no band
-- holds only efforts of exactly one length): the band's strongest envelope effort at its real duration, so a dozen
-- efforts of one length do not outweigh the rest. Two fits of the same points: work = CP * t + W' (least squares,
-- cp_watts, w_prime_j, r2, rmse_watts) and P = CP + W' * (1/t) (cp_inverse_t_watts, w_prime_inverse_t_j).
-- Gates (settings rows): at least cp_min_points points whose longest is cp_min_spread times the shortest; W'
-- between w_prime_min_j and w_prime_max_j; CP at least cp_hour_share of the best power held for cp_hour_s or longer
-- (CP lies above an hour's power); the points within cp_max_rmse_share of CP of the model on average (rmse_watts:
-- a 5-minute effort's 2 and 3 minutes, never ridden flat out, make points far below the curve and a CP the athlete
-- cannot hold for 20 minutes). A fit that fails one is NULL and cp_note says which; 'ok' otherwise. source:
-- what the points came from (power_efforts: streams where an activity's are stored, its efforts otherwise).
CREATE OR REPLACE VIEW critical_power AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'cp_min_s') AS lo, max(value) FILTER (WHERE name = 'cp_max_s') AS hi,
           max(value) FILTER (WHERE name = 'cp_min_points') AS min_points,
           max(value) FILTER (WHERE name = 'cp_min_spread') AS min_spread,
           max(value) FILTER (WHERE name = 'cp_hour_s') AS hour_s,
           max(value) FILTER (WHERE name = 'cp_hour_share') AS hour_share,
           max(value) FILTER (WHERE name = 'w_prime_min_j') AS w_min, max(value) FILTER (WHERE name = 'w_prime_max_j') AS w_max,
           max(value) FILTER (WHERE name = 'cp_max_rmse_share') AS max_rmse_share
    FROM analysis_settings
), bands AS MATERIALIZED (
    SELECT band_from, CASE WHEN band_to IS NULL OR band_to >= params.hi THEN params.hi + 1 ELSE band_to END AS band_to
    FROM (SELECT duration_s AS band_from, lead(duration_s) OVER (ORDER BY duration_s) AS band_to
          FROM analysis_power_durations) CROSS JOIN params
    WHERE band_from >= params.lo AND band_from < params.hi
), e AS (  -- each effort in its season and in all time (0); every step below reads the one before once, so that a
             -- read for one athlete reaches that athlete's efforts only
    SELECT pe.athlete_id, CASE WHEN t.all_time THEN 0 ELSE pe.season END AS season, pe.source, pe.source_id,
           pe.local_date, pe.duration_s, pe.watts
    FROM power_efforts() pe CROSS JOIN (VALUES (false), (true)) t(all_time)
), longer AS (
    SELECT e.*, max(e.watts) OVER (PARTITION BY e.athlete_id, e.season ORDER BY e.duration_s DESC
                                   RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS longer_best,
           max(e.watts) FILTER (WHERE e.duration_s >= params.hour_s) OVER (PARTITION BY e.athlete_id, e.season)
               AS hour_watts
    FROM e CROSS JOIN params
), points AS (  -- per band the strongest envelope effort; efforts in no band (or under a longer one) make a row
                -- of NULL band_from, so that every season is judged
    SELECT l.athlete_id, l.season, b.band_from, any_value(l.hour_watts) AS hour_watts,
           arg_max(l.duration_s, (l.watts, -epoch(l.local_date), -l.source_id)) FILTER (WHERE b.band_from IS NOT NULL)
               AS t,
           arg_max(l.source, (l.watts, -epoch(l.local_date), -l.source_id)) FILTER (WHERE b.band_from IS NOT NULL)
               AS source,
           max(l.watts) FILTER (WHERE b.band_from IS NOT NULL) AS p
    FROM longer l
    LEFT JOIN bands b ON l.duration_s >= b.band_from AND l.duration_s < b.band_to
                     AND (l.longer_best IS NULL OR l.longer_best < l.watts)
    GROUP BY l.athlete_id, l.season, b.band_from
), fitted AS (  -- the fits over each season's points, on every row of the season
    SELECT *, CAST(count(t) OVER s AS INTEGER) AS n_points, regr_slope(p * t, t) OVER s AS cp,
           regr_intercept(p * t, t) OVER s AS w_prime, regr_r2(p * t, t) OVER s AS r2,
           regr_intercept(p, 1.0 / t) OVER s AS cp_inv, regr_slope(p, 1.0 / t) OVER s AS w_prime_inv,
           min(t) OVER s AS shortest_s, max(t) OVER s AS longest_s,
           CASE WHEN bool_and(source = 'stream') OVER s THEN 'streams' WHEN bool_or(source = 'stream') OVER s
                THEN 'streams and efforts' WHEN count(t) OVER s > 0 THEN 'efforts' END AS fit_source
    FROM points
    WINDOW s AS (PARTITION BY athlete_id, season)
), scattered AS (  -- how far the points lie from the fitted curve, in watts
    SELECT *, sqrt(avg((p - (cp + w_prime / t)) ^ 2) OVER (PARTITION BY athlete_id, season)) AS rmse
    FROM fitted
), judged AS (
    SELECT f.*,
           CASE WHEN f.n_points < params.min_points
                     THEN 'too few envelope efforts between ' || CAST(params.lo AS INTEGER) || ' and '
                          || CAST(params.hi AS INTEGER) || ' s: ' || f.n_points || ' found, '
                          || CAST(params.min_points AS INTEGER) || ' needed'
                WHEN f.longest_s < params.min_spread * f.shortest_s
                     THEN 'efforts too alike in length: ' || f.shortest_s || '-' || f.longest_s || ' s, the longest '
                          || 'must last ' || CAST(params.min_spread AS INTEGER) || ' times the shortest'
                WHEN f.cp <= 0 OR f.w_prime <= 0 THEN 'no physical fit (CP or W'' not positive)'
                WHEN f.w_prime < params.w_min OR f.w_prime > params.w_max
                     THEN 'implausible W'' ' || CAST(round(f.w_prime) AS BIGINT) || ' J (outside '
                          || CAST(params.w_min AS BIGINT) || '-' || CAST(params.w_max AS BIGINT)
                          || ' J): the efforts are not maximal'
                WHEN f.cp < params.hour_share * f.hour_watts
                     THEN 'implausible: CP ' || CAST(round(f.cp) AS BIGINT) || ' W below '
                          || CAST(round(f.hour_watts, 1) AS VARCHAR) || ' W held for ' || CAST(params.hour_s / 60 AS BIGINT)
                          || ' min or more: the short efforts are not maximal'
                WHEN f.rmse > params.max_rmse_share * f.cp
                     THEN 'poor fit: the efforts lie ' || CAST(round(f.rmse) AS BIGINT)
                          || ' W from the best-fitting curve on average, ' || CAST(round(f.rmse / f.cp * 100) AS BIGINT)
                          || ' % of its CP, over the ' || CAST(round(params.max_rmse_share * 100) AS BIGINT)
                          || ' % allowed: not all of them were maximal'
                ELSE 'ok' END AS cp_note
    FROM scattered f CROSS JOIN params
)
SELECT athlete_id, season, any_value(n_points) AS points, CAST(any_value(shortest_s) AS INTEGER) AS shortest_s,
       CAST(any_value(longest_s) AS INTEGER) AS longest_s,
       CASE WHEN any_value(cp_note) = 'ok' THEN any_value(cp) END AS cp_watts,
       CASE WHEN any_value(cp_note) = 'ok' THEN any_value(w_prime) END AS w_prime_j,
       CASE WHEN any_value(cp_note) = 'ok' THEN any_value(r2) END AS r2,
       CASE WHEN any_value(cp_note) = 'ok' THEN any_value(rmse) END AS rmse_watts,
       CASE WHEN any_value(cp_note) = 'ok' THEN any_value(cp_inv) END AS cp_inverse_t_watts,
       CASE WHEN any_value(cp_note) = 'ok' THEN any_value(w_prime_inv) END AS w_prime_inverse_t_j,
       any_value(hour_watts) AS best_hour_watts, any_value(cp_note) AS cp_note, any_value(fit_source) AS source
FROM judged
GROUP BY athlete_id, season
ORDER BY athlete_id, season;

-- Running best efforts per athlete, season (the year it starts in, season_start_month; 0 = all time) and distance of
-- analysis_run_distances: the fastest run of that many consecutive whole kilometre splits (splits_metric of at least
-- run_split_min_m: a run's last, partial split is no whole kilometre; in one activity of the Run family), by elapsed time, with its pace. Together they are the pace-duration
-- curve. On a tie the earliest wins.
CREATE OR REPLACE VIEW running_best_efforts AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'season_start_month') AS start_month,
           max(value) FILTER (WHERE name = 'run_split_min_m') AS split_min_m
    FROM analysis_settings
), s AS (
    SELECT c.athlete_id, c.activity_id, c.local_date, season_of(c.local_date, p.start_month) AS year, sp.split,
           sp.distance, sp.elapsed_time
    FROM splits_metric sp JOIN activity_calendar c ON c.activity_id = sp.activity_id CROSS JOIN params p
    WHERE c.sport_family = 'Run' AND sp.distance >= p.split_min_m AND sp.elapsed_time > 0
), r AS MATERIALIZED (
    SELECT splits, label FROM analysis_run_distances
), runs AS (
    SELECT s.athlete_id, s.activity_id, s.local_date, s.year, r.splits, r.label,
           CAST(sum(s.elapsed_time) OVER w AS BIGINT) AS time_s, sum(s.distance) OVER w AS distance_m,
           count(*) OVER w AS n, min(s.split) OVER w AS first_split, s.split AS last_split
    FROM s CROSS JOIN r
    WINDOW w AS (PARTITION BY s.athlete_id, s.activity_id, r.splits ORDER BY s.split ROWS BETWEEN r.splits - 1 PRECEDING AND CURRENT ROW)
), scoped AS (  -- each stretch in its season and in all time (0): whole ones, read once
    SELECT runs.*, CASE WHEN t.all_time THEN 0 ELSE runs.year END AS season
    FROM runs CROSS JOIN (VALUES (false), (true)) t(all_time)
    WHERE runs.n = runs.splits AND runs.last_split - runs.first_split = runs.splits - 1
)
SELECT athlete_id, season, splits, any_value(label) AS label,
       min(time_s) AS best_time_s,
       arg_min(distance_m, (time_s, local_date, activity_id, first_split)) AS distance_m,
       arg_min(activity_id, (time_s, local_date, activity_id, first_split)) AS activity_id,
       arg_min(local_date, (time_s, local_date, activity_id, first_split)) AS local_date,
       arg_min(first_split, (time_s, local_date, activity_id, first_split)) AS first_split,
       min(time_s) / (arg_min(distance_m, (time_s, local_date, activity_id, first_split)) / 1000) AS pace_s_per_km
FROM scoped
GROUP BY athlete_id, season, splits
ORDER BY athlete_id, season, splits;

-- --- analysis from streams -----------------------------------------------------------------------------------
-- Every one of these reads the streams resampled to one row per second (activity_stream_seconds: gaps of up to
-- 90 missing seconds interpolated, longer ones and stops a pause, as GoldenCheetah fixes gaps; stream_mmp.py) or,
-- for the exact best efforts, the samples themselves; each activity's mean-maximal power and speed were computed
-- once when its streams were written (activity_mmp). Seasons: season_of(local date, season_start_month).

-- The season power curve per athlete, season (the year it starts in; 0 = all time) and duration of the MMP grid: the
-- best of every activity's mean-maximal power (activity_mmp) on a cycling sport type (power_tss). period says
-- whether the season is the athlete's current one (that of athlete_as_of.as_of_date), the one before, or earlier.
CREATE OR REPLACE VIEW season_power_curve AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'season_start_month') AS start_month FROM analysis_settings
), f AS MATERIALIZED (
    SELECT sport_type FROM analysis_sport_families WHERE power_tss
), now AS (
    SELECT athlete_id, as_of_date FROM athlete_as_of
), m AS (
    SELECT m.athlete_id, m.activity_id, c.local_date, m.duration_s, m.watts, m.watts_start_s,
           season_of(c.local_date, p.start_month) AS season
    FROM activity_mmp m JOIN activity_calendar c ON c.athlete_id = m.athlete_id AND c.activity_id = m.activity_id
    JOIN f ON f.sport_type = c.sport_type CROSS JOIN params p
    WHERE m.watts IS NOT NULL
), scoped AS (  -- each in its season and in all time (0), from one read
    SELECT m.* REPLACE (CASE WHEN t.all_time THEN 0 ELSE m.season END AS season)
    FROM m CROSS JOIN (VALUES (false), (true)) t(all_time)
), best AS (
    SELECT athlete_id, season, duration_s, max(watts) AS best_watts,
           arg_max(activity_id, (watts, -epoch(local_date), -activity_id)) AS activity_id,
           arg_max(local_date, (watts, -epoch(local_date), -activity_id)) AS local_date,
           arg_max(watts_start_s, (watts, -epoch(local_date), -activity_id)) AS start_s,
           CAST(count(*) AS INTEGER) AS activities
    FROM scoped GROUP BY athlete_id, season, duration_s
)
SELECT b.athlete_id, b.season,
       CASE WHEN b.season = 0 THEN 'all time'
            WHEN b.season = season_of(n.as_of_date, p.start_month) THEN 'this season'
            WHEN b.season = season_of(n.as_of_date, p.start_month) - 1 THEN 'last season'
            ELSE 'earlier' END AS period,
       b.duration_s, b.best_watts, b.activity_id, b.local_date, b.start_s, b.activities
FROM best b CROSS JOIN params p LEFT JOIN now n ON n.athlete_id = b.athlete_id
ORDER BY b.athlete_id, b.season, b.duration_s;

-- Each step of a run's distance stream faster than run_max_speed (12.5 m/s: faster than anyone has run), by the
-- time it ends: a GPS jump, which no best effort, pace or critical speed may hold.
CREATE OR REPLACE VIEW run_jumps AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'run_max_speed') AS max_speed FROM analysis_settings
), stepped AS (
    SELECT s.athlete_id, s.activity_id, s.time, s.distance,
           s.distance - lag(s.distance) OVER w AS metres, s.time - lag(s.time) OVER w AS seconds
    FROM activity_streams s
    JOIN activity_calendar c ON c.athlete_id = s.athlete_id AND c.activity_id = s.activity_id AND c.sport_family = 'Run'
    WHERE s.distance IS NOT NULL AND s.time IS NOT NULL
    WINDOW w AS (PARTITION BY s.athlete_id, s.activity_id ORDER BY s.sample)
)
SELECT athlete_id, activity_id, time, metres, seconds
FROM stepped CROSS JOIN params p
WHERE metres > p.max_speed * greatest(seconds, 1)  -- two samples at one second: a second's worth of running
ORDER BY athlete_id, activity_id, time;

-- The pace-duration curve of runs per athlete, season (0 = all time) and duration: the best average speed of any
-- run (Run family) over that many seconds (activity_mmp.speed: distance covered / duration), with its pace. A run
-- whose best window of a duration holds a GPS jump (run_jumps) has no figure at that duration.
CREATE OR REPLACE VIEW pace_duration_curve AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'season_start_month') AS start_month FROM analysis_settings
), now AS (
    SELECT athlete_id, as_of_date FROM athlete_as_of
), m AS (
    SELECT m.athlete_id, m.activity_id, c.local_date, m.duration_s, m.speed, m.speed_start_s,
           season_of(c.local_date, p.start_month) AS season
    FROM activity_mmp m JOIN activity_calendar c ON c.athlete_id = m.athlete_id AND c.activity_id = m.activity_id
    CROSS JOIN params p
    WHERE c.sport_family = 'Run' AND m.speed > 0
), clean AS (  -- no GPS jump in the best window (run_jumps joined on the athlete: one athlete's read reads theirs)
    SELECT m.* FROM m
    LEFT JOIN run_jumps j ON j.athlete_id = m.athlete_id AND j.activity_id = m.activity_id
                         AND j.time > m.speed_start_s AND j.time <= m.speed_start_s + m.duration_s
    WHERE j.activity_id IS NULL  -- not an anti join: DuckDB carries the athlete into a left join's right side only
), scoped AS (  -- each in its season and in all time (0), from one read
    SELECT m.* REPLACE (CASE WHEN t.all_time THEN 0 ELSE m.season END AS season)
    FROM clean m CROSS JOIN (VALUES (false), (true)) t(all_time)
), best AS (
    SELECT athlete_id, season, duration_s, max(speed) AS best_speed,
           arg_max(activity_id, (speed, -epoch(local_date), -activity_id)) AS activity_id,
           arg_max(local_date, (speed, -epoch(local_date), -activity_id)) AS local_date,
           arg_max(speed_start_s, (speed, -epoch(local_date), -activity_id)) AS start_s
    FROM scoped GROUP BY athlete_id, season, duration_s
)
SELECT b.athlete_id, b.season,
       CASE WHEN b.season = 0 THEN 'all time'
            WHEN b.season = season_of(n.as_of_date, p.start_month) THEN 'this season'
            WHEN b.season = season_of(n.as_of_date, p.start_month) - 1 THEN 'last season'
            ELSE 'earlier' END AS period,
       b.duration_s, b.best_speed AS speed_m_s, 1000 / b.best_speed AS pace_s_per_km, b.best_speed * b.duration_s AS distance_m,
       b.activity_id, b.local_date, b.start_s
FROM best b CROSS JOIN params p LEFT JOIN now n ON n.athlete_id = b.athlete_id
ORDER BY b.athlete_id, b.season, b.duration_s;

-- Critical speed and D' per athlete and season (0 = all time): the 2-parameter model distance = CS * t + D' (the
-- running form of P = CP + W'/t), least squares over the season's pace-duration curve from cs_min_s to cs_max_s
-- (3-20 min), one point per duration of the grid. NULL with fewer than cp_min_points points, a fit that is not
-- physical (CS or D' not positive), a D' outside d_prime_min_m .. d_prime_max_m (the runs were not maximal), or CS
-- below cp_hour_share of the best speed held for cp_hour_s or longer (the gates critical_power has); cs_note says why.
CREATE OR REPLACE VIEW critical_speed AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'cs_min_s') AS lo, max(value) FILTER (WHERE name = 'cs_max_s') AS hi,
           max(value) FILTER (WHERE name = 'cp_min_points') AS min_points,
           max(value) FILTER (WHERE name = 'd_prime_min_m') AS d_min, max(value) FILTER (WHERE name = 'd_prime_max_m') AS d_max,
           max(value) FILTER (WHERE name = 'cp_hour_s') AS hour_s,
           max(value) FILTER (WHERE name = 'cp_hour_share') AS hour_share
    FROM analysis_settings
), fit AS (
    SELECT c.athlete_id, c.season, CAST(count(*) FILTER (WHERE c.duration_s BETWEEN p.lo AND p.hi) AS INTEGER) AS points,
           regr_slope(c.distance_m, c.duration_s) FILTER (WHERE c.duration_s BETWEEN p.lo AND p.hi) AS cs,
           regr_intercept(c.distance_m, c.duration_s) FILTER (WHERE c.duration_s BETWEEN p.lo AND p.hi) AS d_prime,
           regr_r2(c.distance_m, c.duration_s) FILTER (WHERE c.duration_s BETWEEN p.lo AND p.hi) AS r2,
           CAST(min(c.duration_s) FILTER (WHERE c.duration_s BETWEEN p.lo AND p.hi) AS INTEGER) AS shortest_s,
           CAST(max(c.duration_s) FILTER (WHERE c.duration_s BETWEEN p.lo AND p.hi) AS INTEGER) AS longest_s,
           max(c.speed_m_s) FILTER (WHERE c.duration_s >= p.hour_s) AS hour_speed,
           any_value(p.min_points) AS min_points, any_value(p.lo) AS lo, any_value(p.hi) AS hi
    FROM pace_duration_curve c CROSS JOIN params p
    GROUP BY c.athlete_id, c.season
), judged AS (
    SELECT fit.*, CASE WHEN fit.points < fit.min_points
                        THEN 'too few durations between ' || CAST(fit.lo AS INTEGER) || ' and '
                             || CAST(fit.hi AS INTEGER) || ' s: ' || fit.points || ' found, ' || CAST(fit.min_points AS INTEGER)
                             || ' needed'
                   WHEN cs <= 0 OR d_prime <= 0 THEN 'no physical fit (CS or D'' not positive)'
                   WHEN d_prime < p.d_min OR d_prime > p.d_max
                        THEN 'implausible D'' ' || CAST(round(d_prime) AS BIGINT) || ' m (outside '
                             || CAST(p.d_min AS BIGINT) || '-' || CAST(p.d_max AS BIGINT) || ' m): the runs are not maximal'
                   WHEN cs < p.hour_share * hour_speed
                        THEN 'implausible: CS ' || CAST(round(cs, 2) AS VARCHAR) || ' m/s below '
                             || CAST(round(hour_speed, 2) AS VARCHAR) || ' m/s held for '
                             || CAST(p.hour_s / 60 AS BIGINT) || ' min or more: the short runs are not maximal'
                   ELSE 'ok' END AS cs_note
    FROM fit CROSS JOIN params p
)
SELECT athlete_id, season, points, shortest_s, longest_s,
       CASE WHEN cs_note = 'ok' THEN cs END AS cs_m_s, CASE WHEN cs_note = 'ok' THEN 1000 / cs END AS cs_pace_s_per_km,
       CASE WHEN cs_note = 'ok' THEN d_prime END AS d_prime_m, CASE WHEN cs_note = 'ok' THEN r2 END AS r2, cs_note
FROM judged
ORDER BY athlete_id, season;

-- Normalized power computed in-house per activity with a power stream (Coggan): the 30-second rolling mean of the
-- 1-s power over the recorded seconds (paused seconds left out, as a paused device records nothing; a second
-- without a power value is 0 W), from the 30th second on; each raised to the 4th power, averaged, 4th root.
-- Beside it the service's weighted_average_watts. IF = NP / FTP in force on the local date (ftp_timeline; before
-- the first known FTP the first one, ftp_source known_later), for cycling sport types only (power_tss: a run's
-- power pod is not measured against the cycling FTP); VI = NP / average power.
CREATE OR REPLACE VIEW activity_normalized_power AS
WITH tl AS MATERIALIZED (
    SELECT athlete_id, valid_from, ftp, source FROM ftp_timeline
), first_ftp AS MATERIALIZED (
    SELECT athlete_id, arg_min(ftp, valid_from) AS ftp FROM ftp_timeline GROUP BY athlete_id
), powered AS (  -- every window per athlete and activity: a read for one athlete reads their streams only
    SELECT athlete_id, activity_id, second, coalesce(watts, 0) AS watts,
           count(watts) OVER (PARTITION BY athlete_id, activity_id) AS with_power
    FROM activity_stream_seconds
    WHERE NOT paused
), rolled AS (
    SELECT athlete_id, activity_id, watts, avg(watts) OVER w AS rolling, row_number() OVER w AS n
    FROM powered
    WHERE with_power > 0
    WINDOW w AS (PARTITION BY athlete_id, activity_id ORDER BY second ROWS BETWEEN 29 PRECEDING AND CURRENT ROW)
), per AS (
    SELECT athlete_id, activity_id, CAST(count(*) AS INTEGER) AS recorded_s, avg(watts) AS average_watts,
           power(avg(power(rolling, 4)) FILTER (WHERE n >= 30), 0.25) AS np_watts
    FROM rolled GROUP BY athlete_id, activity_id
), dated AS (
    SELECT p.*, c.local_date, a.weighted_average_watts AS service_np_watts,
           a.average_watts AS service_average_watts,
           CASE WHEN f.power_tss THEN tl.ftp END AS dated_ftp, tl.source AS dated_source,
           CASE WHEN f.power_tss THEN first_ftp.ftp END AS first_ftp
    FROM per p JOIN activity_calendar c ON c.athlete_id = p.athlete_id AND c.activity_id = p.activity_id
    JOIN activities a ON a.activity_id = p.activity_id
    LEFT JOIN analysis_sport_families f ON f.sport_type = c.sport_type
    ASOF LEFT JOIN tl ON tl.athlete_id = c.athlete_id AND c.local_date >= tl.valid_from
    LEFT JOIN first_ftp ON first_ftp.athlete_id = c.athlete_id
)
SELECT athlete_id, activity_id, local_date, recorded_s, average_watts, np_watts, service_np_watts,
       service_average_watts, coalesce(dated_ftp, first_ftp) AS ftp,
       CASE WHEN dated_ftp IS NOT NULL THEN dated_source WHEN first_ftp IS NOT NULL THEN 'known_later' END AS ftp_source,
       np_watts / nullif(coalesce(dated_ftp, first_ftp), 0) AS intensity_factor,
       np_watts / nullif(average_watts, 0) AS variability_index
FROM dated
ORDER BY athlete_id, local_date, activity_id;

-- W' balance per second (Skiba et al. 2012, the integral model): W'bal(t) = W' - sum over u <= t of
-- max(P(u) - CP, 0) * exp(-(t - u) / tau), tau = 546 * exp(-0.01 * DCP) + 316 seconds, DCP = CP minus the mean power
-- of the activity's recorded seconds below CP. Every second of activity_stream_seconds counts (a pause is 0 W:
-- recovery). CP and W' from critical_power: the activity's season (season_start_month) when it has a fit, else all
-- time (cp_source). The sum is exp(-t/tau) * running sum of max(P - CP, 0) * exp(u/tau): exact while t/tau < 700
-- (activities under about 60 h; NULL beyond, never infinite). Cycling sport types only (power_tss): CP and W' are
-- the bike's. Filter by activity_id: it is per second.
CREATE OR REPLACE VIEW w_prime_balance AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'season_start_month') AS start_month FROM analysis_settings
), fit AS (  -- the season's fit, else all time's (season 0); read once, on the athlete, so that a read for one
             -- athlete fits that athlete's power only
    SELECT c.activity_id, c.athlete_id, c.local_date, arg_max(cp.cp_watts, cp.season) AS cp,
           arg_max(cp.w_prime_j, cp.season) AS w_prime,
           CASE WHEN max(cp.season) > 0 THEN 'season' ELSE 'all time' END AS cp_source
    FROM activity_calendar c CROSS JOIN params p
    JOIN analysis_sport_families f ON f.sport_type = c.sport_type AND f.power_tss
    JOIN critical_power cp ON cp.athlete_id = c.athlete_id AND cp.season IN (season_of(c.local_date, p.start_month), 0)
    WHERE cp.cp_watts IS NOT NULL
    GROUP BY c.activity_id, c.athlete_id, c.local_date
), s AS (
    SELECT x.activity_id, x.athlete_id, x.second, coalesce(x.watts, 0) AS watts, x.paused,
           x.second - min(x.second) OVER (PARTITION BY x.athlete_id, x.activity_id) AS t,
           count(x.watts) OVER (PARTITION BY x.athlete_id, x.activity_id) AS with_power
    FROM activity_stream_seconds x
), timed AS (
    SELECT s.*, f.local_date, f.cp, f.w_prime, f.cp_source,
           546 * exp(-0.01 * (f.cp - coalesce(avg(s.watts) FILTER (WHERE s.watts < f.cp AND NOT s.paused)
                                             OVER (PARTITION BY s.athlete_id, s.activity_id), 0))) + 316 AS tau_s
    FROM s JOIN fit f ON f.athlete_id = s.athlete_id AND f.activity_id = s.activity_id
    WHERE s.with_power > 0
)
SELECT athlete_id, activity_id, local_date, second, watts, cp AS cp_watts, w_prime AS w_prime_j, tau_s, cp_source,
       CASE WHEN t / tau_s < 700
            THEN w_prime - exp(-t / tau_s) * sum(greatest(watts - cp, 0) * exp(t / tau_s))
                     OVER (PARTITION BY athlete_id, activity_id ORDER BY second ROWS UNBOUNDED PRECEDING) END
           AS w_prime_balance_j
FROM timed
ORDER BY athlete_id, activity_id, second;

-- Per activity: the lowest W' balance, when it was reached, and how much of W' that used (w_prime_balance).
CREATE OR REPLACE VIEW w_prime_balance_summary AS
SELECT athlete_id, activity_id, any_value(local_date) AS local_date, any_value(cp_watts) AS cp_watts,
       any_value(w_prime_j) AS w_prime_j, any_value(tau_s) AS tau_s, any_value(cp_source) AS cp_source,
       min(w_prime_balance_j) AS min_w_prime_balance_j,
       arg_min(second, (w_prime_balance_j, second)) AS min_at_s,
       1 - min(w_prime_balance_j) / any_value(w_prime_j) AS w_prime_used
FROM w_prime_balance
GROUP BY athlete_id, activity_id
ORDER BY athlete_id, local_date, activity_id;

-- Aerobic decoupling (Pa:HR, Friel) from the streams per activity: its moving seconds (activity_stream_seconds:
-- not paused, the moving flag) after the first decoupling_warmup_s of moving time, split into two halves of equal
-- moving time; efficiency = mean output / mean heart rate of each half (over the seconds that have each: a power
-- dropout is no 0 W), output = power for a power_tss sport type with a power stream ('power'), else speed in metres
-- per minute ('speed', runs). decoupling_pct = (EF1 - EF2) / EF1
-- * 100: 0 at a constant ratio, under 5 % the usual mark of aerobic durability; NULL with less than decoupling_min_s
-- after the warm-up or for a ride on speed (decoupling_note). Only activities with heart rate in both halves have a
-- row.
CREATE OR REPLACE VIEW stream_decoupling AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'decoupling_warmup_s') AS warmup_s,
           max(value) FILTER (WHERE name = 'decoupling_min_s') AS min_s
    FROM analysis_settings
), f AS MATERIALIZED (
    SELECT sport_type, power_tss FROM analysis_sport_families
), moving AS (  -- every window per athlete and activity: a read for one athlete reads their streams only
    SELECT s.athlete_id, s.activity_id, s.second, s.watts, s.speed, s.heartrate,
           row_number() OVER (PARTITION BY s.athlete_id, s.activity_id ORDER BY s.second) AS n,
           count(*) OVER (PARTITION BY s.athlete_id, s.activity_id) AS moving_s,
           count(s.watts) OVER (PARTITION BY s.athlete_id, s.activity_id) AS with_power
    FROM activity_stream_seconds s
    WHERE s.moving
), kept AS (
    SELECT m.*, m.n - p.warmup_s AS k, m.moving_s - p.warmup_s AS total,
           CASE WHEN coalesce(f.power_tss, false) AND m.with_power > 0 THEN 'power' ELSE 'speed' END AS output_kind,
           coalesce(f.power_tss, false) AS cycling, c.local_date, c.sport_family
    FROM moving m CROSS JOIN params p
    JOIN activity_calendar c ON c.athlete_id = m.athlete_id AND c.activity_id = m.activity_id
    LEFT JOIN f ON f.sport_type = c.sport_type
    WHERE m.n > p.warmup_s
), halves AS (
    SELECT athlete_id, activity_id, any_value(local_date) AS local_date,
           any_value(sport_family) AS sport_family, any_value(output_kind) AS output_kind,
           any_value(cycling) AS cycling, CAST(count(*) AS INTEGER) AS moving_time_s,
           avg(CASE WHEN output_kind = 'power' THEN watts ELSE speed * 60 END) FILTER (WHERE 2 * k <= total)
               AS output_1,
           avg(heartrate) FILTER (WHERE 2 * k <= total) AS hr_1,
           avg(CASE WHEN output_kind = 'power' THEN watts ELSE speed * 60 END) FILTER (WHERE 2 * k > total)
               AS output_2,
           avg(heartrate) FILTER (WHERE 2 * k > total) AS hr_2
    FROM kept
    GROUP BY athlete_id, activity_id
), noted AS (
    SELECT h.*,
           CASE WHEN h.moving_time_s < p.min_s
                     THEN 'too short: ' || h.moving_time_s || ' s after the warm-up (needs ' || CAST(p.min_s AS BIGINT)
                          || ')'
                WHEN h.cycling AND h.output_kind = 'speed'
                     THEN 'a ride without power: its speed follows wind and terrain, not the body'
                WHEN NOT coalesce(h.output_1 > 0 AND h.output_2 > 0, false)
                     THEN 'no output: neither power nor speed in both halves (heart rate alone)'
                ELSE 'ok' END AS decoupling_note
    FROM halves h CROSS JOIN params p
)
SELECT athlete_id, activity_id, local_date, sport_family, output_kind, moving_time_s, output_1 AS first_half_output,
       hr_1 AS first_half_hr, output_2 AS second_half_output, hr_2 AS second_half_hr,
       output_1 / hr_1 AS first_half_ef, output_2 / hr_2 AS second_half_ef,
       CASE WHEN decoupling_note = 'ok'
            THEN (output_1 / hr_1 - output_2 / hr_2) / (output_1 / hr_1) * 100 END AS decoupling_pct,
       decoupling_note
FROM noted
WHERE hr_1 > 0 AND hr_2 > 0
ORDER BY athlete_id, local_date, activity_id;

-- Exact-distance best efforts of runs per athlete, season (0 = all time) and distance of
-- analysis_best_effort_distances: the shortest time in which one run (Run family) covered the distance, by its
-- distance stream, with linear interpolation between samples at both ends. Distance over time is piecewise linear,
-- so the shortest window starts or ends on a sample: both are tried (a start at the last sample of each distance,
-- the end where the distance first reaches start + D; an end at the first sample of each distance, the start where
-- the distance last was end - D). Times are elapsed (a pause inside counts). On a tie the earliest wins. A window
-- holding a step faster than run_max_speed (faster than anyone has run: a GPS jump) is no effort (run_jumps).
-- A macro of the athlete (NULL: every athlete), the view its NULL: a filter on the view's athlete_id does not reach
-- the streams through the CTEs the windows share, so one athlete's read in a coach's warehouse windowed every
-- athlete's runs (20 athletes: 36 s against 1.2 s alone); analysis.view reads the macro for one athlete.
CREATE OR REPLACE MACRO stream_best_efforts_of(athlete) AS TABLE
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'season_start_month') AS start_month,
           max(value) FILTER (WHERE name = 'run_max_speed') AS max_speed
    FROM analysis_settings
), d AS MATERIALIZED (
    SELECT distance_m, label FROM analysis_best_effort_distances
), runs AS MATERIALIZED (
    SELECT activity_id, athlete_id, local_date FROM activity_calendar
    WHERE sport_family = 'Run' AND (athlete IS NULL OR athlete_id = athlete)
), stepped AS (
    SELECT s.activity_id, s.sample, s.time, s.distance,
           lag(s.time) OVER w AS prev_time, lag(s.distance) OVER w AS prev_distance,
           lead(s.time) OVER w AS next_time, lead(s.distance) OVER w AS next_distance
    FROM activity_streams s
    WHERE s.activity_id IN (SELECT activity_id FROM runs) AND s.distance IS NOT NULL AND s.time IS NOT NULL
    WINDOW w AS (PARTITION BY s.activity_id ORDER BY s.sample)
), s AS (  -- jumps: the jumps among the steps up to this sample's (two windows with as many hold none between)
    SELECT *, sum(CAST(coalesce(distance - prev_distance > p.max_speed * greatest(time - prev_time, 1), false)
                       AS INTEGER))
                  OVER (PARTITION BY activity_id ORDER BY sample ROWS UNBOUNDED PRECEDING) AS jumps
    FROM stepped CROSS JOIN params p
), arrivals AS (
    SELECT activity_id, time, distance, prev_time, prev_distance, jumps FROM s WHERE prev_distance < distance
), departures AS (
    SELECT activity_id, time, distance, next_time, next_distance, jumps FROM s WHERE next_distance > distance
), starts AS (
    SELECT st.activity_id, st.time, st.distance + d.distance_m AS target, d.distance_m, st.jumps
    FROM departures st CROSS JOIN d
), ends AS (
    SELECT e.activity_id, e.time, e.distance - d.distance_m AS target, d.distance_m, e.jumps
    FROM arrivals e CROSS JOIN d
), windows AS (
    SELECT q.activity_id, q.distance_m, CAST(q.time AS DOUBLE) AS start_s,
           e.prev_time + (q.target - e.prev_distance) / (e.distance - e.prev_distance) * (e.time - e.prev_time) - q.time
               AS elapsed_s
    FROM starts q ASOF JOIN arrivals e ON e.activity_id = q.activity_id AND q.target <= e.distance
    WHERE e.jumps = q.jumps
    UNION ALL
    SELECT q.activity_id, q.distance_m,
           st.time + (q.target - st.distance) / (st.next_distance - st.distance) * (st.next_time - st.time),
           q.time - (st.time + (q.target - st.distance) / (st.next_distance - st.distance) * (st.next_time - st.time))
    FROM ends q ASOF JOIN departures st ON st.activity_id = q.activity_id AND q.target >= st.distance
    WHERE q.target >= 0 AND q.jumps = st.jumps
), per_run AS (
    SELECT r.athlete_id, w.activity_id, r.local_date, season_of(r.local_date, p.start_month) AS season, w.distance_m,
           min(w.elapsed_s) AS elapsed_s, arg_min(w.start_s, (w.elapsed_s, w.start_s)) AS start_s
    FROM windows w JOIN runs r ON r.activity_id = w.activity_id CROSS JOIN params p
    GROUP BY ALL
), scoped AS (
    SELECT * FROM per_run
    UNION ALL
    SELECT * REPLACE (0 AS season) FROM per_run
)
SELECT s.athlete_id, s.season, s.distance_m, any_value(d.label) AS label, min(s.elapsed_s) AS best_time_s,
       min(s.elapsed_s) / (s.distance_m / 1000) AS pace_s_per_km,
       arg_min(s.activity_id, (s.elapsed_s, s.local_date, s.activity_id)) AS activity_id,
       arg_min(s.local_date, (s.elapsed_s, s.local_date, s.activity_id)) AS local_date,
       arg_min(s.start_s, (s.elapsed_s, s.local_date, s.activity_id)) AS start_s,
       CAST(count(*) AS INTEGER) AS runs
FROM scoped s JOIN d ON d.distance_m = s.distance_m
GROUP BY s.athlete_id, s.season, s.distance_m
ORDER BY s.athlete_id, s.season, s.distance_m;

CREATE OR REPLACE VIEW stream_best_efforts AS SELECT * FROM stream_best_efforts_of(NULL);

-- Time in each of the athlete's heart-rate and power zones from the streams, per activity: the recorded (not
-- paused) seconds of activity_stream_seconds whose value lies in the zone (zone_min <= value < zone_max; -1 = open),
-- the zones as stored (athlete_zone_history) in force on the activity's local date (before the first version, the
-- first), beside the service's own buckets for the activity (service_seconds, activity_zone_buckets: NULL when it
-- sent none). Every zone of the version has a row, 0 seconds included. A macro of the athlete (NULL: every athlete),
-- the view its NULL, as stream_best_efforts: a filter on the view's athlete_id did not reach the streams (20
-- athletes: 7.6 s against 0.4 s alone).
CREATE OR REPLACE MACRO stream_zone_seconds_of(athlete) AS TABLE
WITH zones AS MATERIALIZED (
    SELECT athlete_id, zone_type, version, valid_from, zone, zone_min, zone_max FROM athlete_zone_history
), versions AS MATERIALIZED (
    SELECT DISTINCT athlete_id, zone_type, version, valid_from FROM zones
), first_version AS MATERIALIZED (
    SELECT athlete_id, zone_type, min(version) AS version FROM versions GROUP BY ALL
), buckets AS MATERIALIZED (
    SELECT activity_id, zone_type, bucket_index, seconds FROM activity_zone_buckets
), kinds AS MATERIALIZED (
    SELECT zone_type FROM (VALUES ('heartrate'), ('power')) k(zone_type)
), valued AS (
    SELECT x.activity_id, k.zone_type, CASE WHEN k.zone_type = 'heartrate' THEN x.heartrate ELSE x.watts END AS value
    FROM activity_stream_seconds x CROSS JOIN kinds k
    WHERE NOT x.paused AND (athlete IS NULL OR x.athlete_id = athlete)
), picked AS (
    SELECT c.activity_id, c.athlete_id, c.local_date, v.zone_type, v.value, coalesce(h.version, fv.version) AS version
    FROM valued v JOIN activity_calendar c ON c.activity_id = v.activity_id
    LEFT JOIN analysis_sport_families f ON f.sport_type = c.sport_type
    ASOF LEFT JOIN versions h ON h.athlete_id = c.athlete_id AND h.zone_type = v.zone_type
                             AND c.local_date >= h.valid_from
    LEFT JOIN first_version fv ON fv.athlete_id = c.athlete_id AND fv.zone_type = v.zone_type
    WHERE v.value IS NOT NULL AND coalesce(h.version, fv.version) IS NOT NULL
      AND (v.zone_type = 'heartrate' OR coalesce(f.power_tss, false))  -- the athlete's power zones are the bike's
), placed AS (
    SELECT p.athlete_id, p.activity_id, any_value(p.local_date) AS local_date, p.zone_type, p.version,
           count(*) FILTER (WHERE z.zone_max = -1 OR p.value < z.zone_max) AS seconds, z.zone
    FROM picked p
    ASOF JOIN zones z ON z.athlete_id = p.athlete_id AND z.zone_type = p.zone_type AND z.version = p.version
                     AND p.value >= z.zone_min
    GROUP BY p.athlete_id, p.activity_id, p.zone_type, p.version, z.zone
), present AS (
    SELECT athlete_id, activity_id, any_value(local_date) AS local_date, zone_type, version
    FROM placed GROUP BY athlete_id, activity_id, zone_type, version
)
SELECT p.athlete_id, p.activity_id, p.local_date, p.zone_type, z.zone, z.zone_min, z.zone_max,
       CAST(coalesce(pl.seconds, 0) AS BIGINT) AS seconds, b.seconds AS service_seconds
FROM present p
JOIN zones z ON z.athlete_id = p.athlete_id AND z.zone_type = p.zone_type AND z.version = p.version
LEFT JOIN placed pl ON pl.activity_id = p.activity_id AND pl.zone_type = p.zone_type AND pl.zone = z.zone
LEFT JOIN buckets b ON b.activity_id = p.activity_id AND b.zone_type = p.zone_type AND b.bucket_index = z.zone
ORDER BY p.athlete_id, p.local_date, p.activity_id, p.zone_type, z.zone;

CREATE OR REPLACE VIEW stream_zone_seconds AS SELECT * FROM stream_zone_seconds_of(NULL);

-- --- durability, efficiency and gear ------------------------------------------------------------------------

-- Aerobic decoupling (Pa:HR, Friel) per activity: the efficiency (output per heartbeat: speed in metres per minute,
-- or power for laps that all had device power) of the first half against the second, halves by moving time, each
-- unit (split or lap) in the half that holds its middle. Units: the kilometre splits when at least 4 have heart rate,
-- else the laps when at least 2 have; the service gives no streams. The warm-up is left out: units that end within
-- the first decoupling_warmup_s (10 min) of moving time (a unit that straddles it stays: a split cannot be cut).
-- decoupling_pct = (first EF - second EF) / first EF * 100, under 5 % being the usual mark of aerobic durability;
-- it means something only at a steady output, so it is NULL when the output's time-weighted coefficient of
-- variation over the units (output_cv) is above decoupling_max_cv (intervals, hills), with less than
-- decoupling_min_s after the warm-up, and for a ride on speed (a cycling sport type without power in every lap: wind
-- and terrain move a ride's speed); decoupling_note says which. A ride's laps that all had power come before its
-- splits.
-- Only activities with heart rate in both halves have a row.
CREATE OR REPLACE VIEW aerobic_decoupling AS
WITH params AS MATERIALIZED (
    SELECT max(value) FILTER (WHERE name = 'decoupling_warmup_s') AS warmup_s,
           max(value) FILTER (WHERE name = 'decoupling_max_cv') AS max_cv,
           max(value) FILTER (WHERE name = 'decoupling_min_s') AS min_s
    FROM analysis_settings
), acts AS (  -- the activities the analyses count (read once, so that a read for one athlete reads only theirs)
    SELECT c.athlete_id, c.activity_id, c.local_date, c.sport_family, coalesce(f.power_tss, false) AS cycling
    FROM activity_calendar c LEFT JOIN analysis_sport_families f ON f.sport_type = c.sport_type
), laps_rated AS (
    SELECT a.*, l.lap_index, l.moving_time, l.distance, l.average_watts, l.average_heartrate,
           bool_and(coalesce(l.device_watts, false) AND l.average_watts > 0)
               OVER (PARTITION BY a.athlete_id, a.activity_id) AS all_power
    FROM acts a JOIN laps l ON l.activity_id = a.activity_id
    WHERE l.moving_time > 0 AND l.average_heartrate > 0
), candidates AS (  -- every split and lap that can be a unit
    SELECT a.*, 'splits' AS basis, sp.split AS n, sp.moving_time AS t, sp.distance / sp.moving_time * 60 AS output,
           'speed' AS output_kind, sp.average_heartrate AS hr
    FROM acts a JOIN splits_metric sp ON sp.activity_id = a.activity_id
    WHERE sp.moving_time > 0 AND sp.average_heartrate > 0 AND sp.distance > 0
    UNION ALL
    SELECT athlete_id, activity_id, local_date, sport_family, cycling, 'laps', lap_index, moving_time,
           CASE WHEN all_power THEN average_watts ELSE distance / moving_time * 60 END,
           CASE WHEN all_power THEN 'power' ELSE 'speed' END, average_heartrate
    FROM laps_rated
    WHERE all_power OR distance > 0
), counted AS (
    SELECT *, count(*) FILTER (WHERE basis = 'splits') OVER a AS split_units,
           count(*) FILTER (WHERE basis = 'laps') OVER a AS lap_units,
           count(*) FILTER (WHERE basis = 'laps' AND output_kind = 'power') OVER a AS power_laps
    FROM candidates
    WINDOW a AS (PARTITION BY athlete_id, activity_id)
), units AS (  -- a ride's laps that all had power come first (its splits carry only speed); then 4 or more splits,
               -- else 2 or more laps
    SELECT * EXCLUDE (split_units, lap_units, power_laps) FROM counted
    WHERE CASE WHEN cycling AND power_laps >= 2 THEN basis = 'laps'
               WHEN split_units >= 4 THEN basis = 'splits'
               ELSE basis = 'laps' AND lap_units >= 2 END
), timed AS (
    SELECT *, sum(t) OVER (PARTITION BY athlete_id, activity_id ORDER BY n ROWS UNBOUNDED PRECEDING) AS ends_s
    FROM units
), kept AS (
    SELECT timed.* FROM timed CROSS JOIN params WHERE timed.ends_s > params.warmup_s
), placed AS (
    SELECT *, sum(t) OVER (PARTITION BY athlete_id, activity_id ORDER BY n ROWS UNBOUNDED PRECEDING) - t / 2.0 AS middle,
           sum(t) OVER (PARTITION BY athlete_id, activity_id) AS total,
           sum(output * t) OVER (PARTITION BY athlete_id, activity_id) / sum(t) OVER (PARTITION BY athlete_id, activity_id)
               AS mean_output
    FROM kept
), halves AS (
    SELECT athlete_id, activity_id, any_value(local_date) AS local_date, any_value(sport_family) AS sport_family,
           any_value(cycling) AS cycling, any_value(basis) AS basis, any_value(output_kind) AS output_kind,
           CAST(count(*) AS INTEGER) AS units, CAST(sum(t) AS BIGINT) AS moving_time_s,
           sqrt(sum(t * (output - mean_output) ^ 2) / sum(t)) / any_value(mean_output) AS output_cv,
           sum(output * t) FILTER (WHERE middle < total / 2) / sum(t) FILTER (WHERE middle < total / 2) AS output_1,
           sum(hr * t) FILTER (WHERE middle < total / 2) / sum(t) FILTER (WHERE middle < total / 2) AS hr_1,
           sum(output * t) FILTER (WHERE middle >= total / 2) / sum(t) FILTER (WHERE middle >= total / 2) AS output_2,
           sum(hr * t) FILTER (WHERE middle >= total / 2) / sum(t) FILTER (WHERE middle >= total / 2) AS hr_2
    FROM placed
    GROUP BY athlete_id, activity_id
), noted AS (
    SELECT h.*,
           CASE WHEN h.moving_time_s < p.min_s
                     THEN 'too short: ' || h.moving_time_s || ' s after the warm-up (needs '
                          || CAST(p.min_s AS BIGINT) || ')'
                WHEN h.output_kind = 'speed' AND h.cycling
                     THEN 'a ride on speed (fewer than two laps with power and heart rate): its speed follows wind '
                          || 'and terrain, not the body'
                WHEN h.output_cv > p.max_cv
                     THEN 'not steady: output varies '  -- as many decimals as tell it from the bound
                          || printf('%g', CASE WHEN round(h.output_cv * 100) > round(p.max_cv * 100)
                                               THEN round(h.output_cv * 100)
                                               WHEN round(h.output_cv * 100, 1) > round(p.max_cv * 100, 1)
                                               THEN round(h.output_cv * 100, 1)
                                               ELSE round(h.output_cv * 100, 3) END)
                          || ' % (above ' || printf('%g', p.max_cv * 100) || ' %)'
                ELSE 'steady' END AS decoupling_note
    FROM halves h CROSS JOIN params p
)
SELECT h.athlete_id, h.activity_id, h.local_date, h.sport_family, h.basis, h.output_kind, h.units, h.moving_time_s,
       h.output_1 / h.hr_1 AS first_half_ef, h.output_2 / h.hr_2 AS second_half_ef, h.output_cv,
       CASE WHEN h.decoupling_note = 'steady'
            THEN (h.output_1 / h.hr_1 - h.output_2 / h.hr_2) / (h.output_1 / h.hr_1) * 100 END AS decoupling_pct,
       h.decoupling_note
FROM noted h
WHERE h.hr_1 > 0 AND h.hr_2 > 0 AND h.output_1 > 0
ORDER BY h.athlete_id, h.local_date, h.activity_id;

-- Efficiency factor per athlete, ISO week and sport family: output per heartbeat over the week's activities with an
-- average heart rate, time-weighted. Output is normalized power (weighted_average_watts) for device power on a
-- power_tss sport type ('power'), else speed in metres per minute ('speed'): the two are kept apart (basis).
-- Rising EF at the same heart rate is aerobic fitness.
CREATE OR REPLACE VIEW efficiency_factor_weekly AS
WITH f AS MATERIALIZED (
    SELECT sport_type, power_tss FROM analysis_sport_families
), per_activity AS (
    SELECT c.athlete_id, c.week_start, c.iso_year, c.iso_week, c.sport_family, a.moving_time AS t,
           CASE WHEN coalesce(f.power_tss, false) AND coalesce(a.device_watts, false) AND a.weighted_average_watts > 0
                THEN 'power' ELSE 'speed' END AS basis,
           CASE WHEN coalesce(f.power_tss, false) AND coalesce(a.device_watts, false) AND a.weighted_average_watts > 0
                THEN a.weighted_average_watts ELSE a.distance / a.moving_time * 60 END / a.average_heartrate AS ef
    FROM activity_calendar c
    JOIN activities a ON a.activity_id = c.activity_id
    LEFT JOIN f ON f.sport_type = c.sport_type
    WHERE a.average_heartrate > 0 AND a.moving_time > 0
)
SELECT athlete_id, week_start, iso_year, iso_week, sport_family, basis, CAST(count(*) AS BIGINT) AS activities,
       CAST(sum(t) AS BIGINT) AS moving_time_s, sum(ef * t) / sum(t) AS efficiency_factor
FROM per_activity
WHERE ef > 0
GROUP BY athlete_id, week_start, iso_year, iso_week, sport_family, basis
ORDER BY athlete_id, week_start, sport_family, basis;

-- Per athlete and gear (bike or shoes): what fitsync's activities add up to (distance, time, first and last use),
-- next to the service's own total, and whether the service says it is retired (retired_on: its last use then).
-- profile_lists: whether the athlete's latest profile lists it (gear sold or deleted keeps its row, name and totals;
-- gear only the activities name has a row too, without a name). A profile without bikes and shoes (another shape)
-- tells nothing: gear fitsync stored is taken as listed.
CREATE OR REPLACE VIEW gear_mileage AS
WITH used AS (
    SELECT c.athlete_id, a.gear_id, count(*) AS activities, sum(coalesce(a.distance, 0)) AS distance_m,
           sum(coalesce(a.moving_time, 0)) AS moving_time_s, min(c.local_date) AS first_used,
           max(c.local_date) AS last_used
    FROM activities a JOIN activity_calendar c ON c.activity_id = a.activity_id
    WHERE a.gear_id IS NOT NULL
    GROUP BY c.athlete_id, a.gear_id
), g AS MATERIALIZED (
    SELECT g.gear_id, g.athlete_id, g.kind, g.name, g.is_primary, g.distance, g.retired,
           CASE WHEN json_exists(p.raw, '$.bikes') OR json_exists(p.raw, '$.shoes')
                THEN list_contains(json_extract_string(p.raw, '$.bikes[*].id')
                                   || json_extract_string(p.raw, '$.shoes[*].id'), g.gear_id)
                ELSE true END AS listed
    FROM gear g LEFT JOIN athletes p ON p.athlete_id = g.athlete_id
)
SELECT coalesce(u.athlete_id, g.athlete_id) AS athlete_id, coalesce(u.gear_id, g.gear_id) AS gear_id, g.kind,
       g.name, g.is_primary AND g.listed AS is_primary, CAST(coalesce(u.activities, 0) AS BIGINT) AS activities,
       coalesce(u.distance_m, 0.0) AS distance_m, CAST(coalesce(u.moving_time_s, 0) AS BIGINT) AS moving_time_s,
       u.first_used, u.last_used, g.distance AS service_distance_m, g.retired,
       CASE WHEN g.retired THEN u.last_used END AS retired_on, coalesce(g.listed, false) AS profile_lists
FROM used u FULL JOIN g ON g.gear_id = u.gear_id AND g.athlete_id = u.athlete_id
ORDER BY athlete_id, gear_id;

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

-- Eddington number per athlete and sport family (and 'All': every activity of the day, whatever its sport), in km
-- and miles: the largest E with E days (local days, all of the family's activities that day summed) of at least E.
-- days: the local days with an activity of the family (of any distance, 0 included): the days E is drawn from.
-- days_at_next: days of at least E + 1; days_to_next: more such days needed for E + 1.
CREATE OR REPLACE VIEW eddington AS
WITH units(unit, unit_m) AS (VALUES ('km', 1000.0), ('mi', 1609.344)),
daily AS (
    SELECT c.athlete_id, c.sport_family, c.local_date, sum(coalesce(a.distance, 0)) AS meters
    FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
    GROUP BY c.athlete_id, c.sport_family, c.local_date
    UNION ALL
    SELECT c.athlete_id, 'All', c.local_date, sum(coalesce(a.distance, 0))
    FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
    GROUP BY c.athlete_id, c.local_date
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
    UNION ALL
    SELECT c.athlete_id, 'All', c.local_date, sum(coalesce(a.distance, 0))
    FROM activity_calendar c JOIN activities a ON a.activity_id = c.activity_id
    GROUP BY c.athlete_id, c.local_date
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

-- --- descriptions -------------------------------------------------------------------------------------------

-- What each view and view column holds, for duckdb_views(), duckdb_columns(), `fitsync query --list` and
-- docs/warehouse.md. CREATE OR REPLACE VIEW drops a view's comments, so they live here, after the views, and are
-- re-applied with them. Dates are the athlete's local dates (from start_date_local); distances in metres, times in
-- seconds unless a column says otherwise.

COMMENT ON VIEW activity_calendar IS 'One row per activity (with a local start time; a second recording of a session and one dated after it was received left out: duplicate_activities, future_activities) and its local calendar: date, ISO year and week, month, year';
COMMENT ON COLUMN activity_calendar.activity_id IS 'The activity (activities.activity_id)';
COMMENT ON COLUMN activity_calendar.athlete_id IS 'The athlete who owns the activity';
COMMENT ON COLUMN activity_calendar.sport_type IS 'The activity''s sport type, as activities.sport_type';
COMMENT ON COLUMN activity_calendar.sport_family IS 'Family of the sport type from analysis_sport_families; Other when the type is not listed';
COMMENT ON COLUMN activity_calendar.start_date_local IS 'Start in the athlete''s local wall-clock time';
COMMENT ON COLUMN activity_calendar.local_date IS 'Local calendar date of the start';
COMMENT ON COLUMN activity_calendar.iso_year IS 'ISO 8601 week-numbering year of local_date (2024-12-30 is in ISO year 2025)';
COMMENT ON COLUMN activity_calendar.iso_week IS 'ISO 8601 week number of local_date, 1-53 (weeks start on Monday)';
COMMENT ON COLUMN activity_calendar.iso_week_label IS 'ISO year and week as text, e.g. 2025-W01';
COMMENT ON COLUMN activity_calendar.week_start IS 'Monday of local_date''s ISO week';
COMMENT ON COLUMN activity_calendar.month_start IS 'First day of local_date''s month';
COMMENT ON COLUMN activity_calendar.year IS 'Calendar year of local_date';
COMMENT ON COLUMN activity_calendar.month IS 'Month of local_date, 1-12';
COMMENT ON COLUMN activity_calendar.iso_weekday IS 'Day of the week of local_date, 1 Monday to 7 Sunday';
COMMENT ON COLUMN activity_calendar.day_of_year IS 'Day of the year of local_date, 1-366';

COMMENT ON VIEW athlete_as_of IS 'Per athlete: first and last local activity dates and the as-of date the dense series run to';
COMMENT ON COLUMN athlete_as_of.athlete_id IS 'The athlete';
COMMENT ON COLUMN athlete_as_of.first_activity_date IS 'Local date of the athlete''s first activity';
COMMENT ON COLUMN athlete_as_of.last_activity_date IS 'Local date of the athlete''s latest activity';
COMMENT ON COLUMN athlete_as_of.synced_local_date IS 'Local date of athletes.synced_at, by the latest activity''s UTC offset; NULL without a profile row';
COMMENT ON COLUMN athlete_as_of.as_of_date IS 'Date the data is taken as complete to: the later of last_activity_date and synced_local_date';

COMMENT ON VIEW segment_effort_progression IS 'Every visible, timed effort per athlete and segment on the segment''s course (segment_efforts_judged()), in time order, with the running best and PRs recomputed from the efforts';
COMMENT ON COLUMN segment_effort_progression.athlete_id IS 'The athlete who made the effort';
COMMENT ON COLUMN segment_effort_progression.segment_id IS 'The segment';
COMMENT ON COLUMN segment_effort_progression.segment_name IS 'Segment name from segments, else as the effort carries it';
COMMENT ON COLUMN segment_effort_progression.effort_id IS 'The effort (segment_efforts.effort_id)';
COMMENT ON COLUMN segment_effort_progression.activity_id IS 'The activity the effort is part of';
COMMENT ON COLUMN segment_effort_progression.start_date IS 'Start instant of the effort (UTC); efforts are ordered by it, then by effort_id';
COMMENT ON COLUMN segment_effort_progression.start_date_local IS 'Start of the effort in local wall-clock time';
COMMENT ON COLUMN segment_effort_progression.local_date IS 'Local date of the effort';
COMMENT ON COLUMN segment_effort_progression.elapsed_time IS 'Elapsed time of the effort, in seconds (the time PRs are judged on)';
COMMENT ON COLUMN segment_effort_progression.moving_time IS 'Moving time of the effort, in seconds';
COMMENT ON COLUMN segment_effort_progression.attempt IS 'Position of the effort among the athlete''s visible efforts on the segment, 1 = first attempt';
COMMENT ON COLUMN segment_effort_progression.running_best IS 'Best elapsed time so far, this effort included, in seconds';
COMMENT ON COLUMN segment_effort_progression.previous_best IS 'Best elapsed time before this effort, in seconds; NULL on the first attempt';
COMMENT ON COLUMN segment_effort_progression.is_pr IS 'Whether the effort is strictly faster than every earlier one (true on the first attempt; a tie is not a PR)';
COMMENT ON COLUMN segment_effort_progression.is_first_attempt IS 'Whether this is the athlete''s first visible effort on the segment';
COMMENT ON COLUMN segment_effort_progression.improvement_s IS 'Seconds faster than previous_best; NULL unless the effort beat an earlier best';
COMMENT ON COLUMN segment_effort_progression.improvement_pct IS 'improvement_s as a percentage of previous_best; NULL unless the effort beat an earlier best';
COMMENT ON COLUMN segment_effort_progression.service_pr_rank IS 'The service''s pr_rank (1-3) from upload time, kept for comparison; not used for is_pr';

COMMENT ON VIEW segment_pr_events IS 'The PR events of segment_effort_progression: each athlete''s first attempt on a segment and every effort that beat the best';
COMMENT ON COLUMN segment_pr_events.athlete_id IS 'The athlete who set the PR';
COMMENT ON COLUMN segment_pr_events.segment_id IS 'The segment';
COMMENT ON COLUMN segment_pr_events.segment_name IS 'Segment name from segments, else as the effort carries it';
COMMENT ON COLUMN segment_pr_events.effort_id IS 'The effort that set the PR';
COMMENT ON COLUMN segment_pr_events.activity_id IS 'The activity the effort is part of';
COMMENT ON COLUMN segment_pr_events.start_date_local IS 'Start of the effort in local wall-clock time';
COMMENT ON COLUMN segment_pr_events.local_date IS 'Local date of the effort';
COMMENT ON COLUMN segment_pr_events.elapsed_time IS 'The new best elapsed time, in seconds';
COMMENT ON COLUMN segment_pr_events.previous_best IS 'The best it beat, in seconds; NULL on the first attempt';
COMMENT ON COLUMN segment_pr_events.improvement_s IS 'Seconds faster than previous_best; NULL on the first attempt';
COMMENT ON COLUMN segment_pr_events.improvement_pct IS 'improvement_s as a percentage of previous_best; NULL on the first attempt';
COMMENT ON COLUMN segment_pr_events.is_first_attempt IS 'Whether this is the first attempt (which sets the first best) rather than an improvement';
COMMENT ON COLUMN segment_pr_events.attempt IS 'Position of the effort among the athlete''s visible efforts on the segment, 1 = first attempt';
COMMENT ON COLUMN segment_pr_events.pr_number IS 'Order of this PR on the segment: 1 is the first attempt, 2 the first improvement, and so on';

COMMENT ON VIEW segment_pr_summary IS 'Per athlete and segment: attempts, the current PR (time, date, effort), improvements, days since the PR, and the efforts left out (hidden, untimed)';
COMMENT ON COLUMN segment_pr_summary.athlete_id IS 'The athlete';
COMMENT ON COLUMN segment_pr_summary.segment_id IS 'The segment';
COMMENT ON COLUMN segment_pr_summary.segment_name IS 'Segment name from segments, else as the efforts carry it';
COMMENT ON COLUMN segment_pr_summary.attempts IS 'Number of visible, timed efforts by the athlete on the segment''s course (0: only hidden, untimed or other-course ones)';
COMMENT ON COLUMN segment_pr_summary.first_attempt_date IS 'Local date of the first effort';
COMMENT ON COLUMN segment_pr_summary.last_attempt_date IS 'Local date of the latest effort';
COMMENT ON COLUMN segment_pr_summary.current_pr_s IS 'Best elapsed time on the segment, in seconds';
COMMENT ON COLUMN segment_pr_summary.current_pr_effort_id IS 'The effort that set the current PR (the first to reach that time)';
COMMENT ON COLUMN segment_pr_summary.current_pr_date IS 'Local date of the current PR';
COMMENT ON COLUMN segment_pr_summary.improvements IS 'Number of PRs after the first attempt';
COMMENT ON COLUMN segment_pr_summary.days_since_pr IS 'Days from current_pr_date to the athlete''s as_of_date (to last_attempt_date without one)';
COMMENT ON COLUMN segment_pr_summary.hidden_efforts IS 'Efforts the athlete hid: left out of the progression';
COMMENT ON COLUMN segment_pr_summary.untimed_efforts IS 'Visible efforts with elapsed_time 0 or missing: left out of the progression (no time to compare)';
COMMENT ON COLUMN segment_pr_summary.other_course_efforts IS 'Visible, timed efforts on another course of the segment (their distance differs from course_m by more than segment_course_share and segment_course_min_m: the service re-measured it): left out of the progression';
COMMENT ON COLUMN segment_pr_summary.course_m IS 'The course the PRs are on: the median distance of the athlete''s last three timed efforts, metres; NULL when they carry no distance';
COMMENT ON COLUMN segment_pr_summary.exclusion_note IS 'ok, or what was left out of the progression and why';

COMMENT ON VIEW pr_monthly IS 'Per athlete and month, dense from the first effort''s month to the as-of month: PRs, first attempts and efforts';
COMMENT ON COLUMN pr_monthly.athlete_id IS 'The athlete';
COMMENT ON COLUMN pr_monthly.month_start IS 'First day of the local month';
COMMENT ON COLUMN pr_monthly.year IS 'Calendar year of the month';
COMMENT ON COLUMN pr_monthly.month IS 'Month, 1-12';
COMMENT ON COLUMN pr_monthly.prs IS 'PRs set in the month on segments attempted before (first attempts not counted)';
COMMENT ON COLUMN pr_monthly.first_attempts IS 'Segments attempted for the first time in the month';
COMMENT ON COLUMN pr_monthly.efforts IS 'Visible segment efforts in the month';

COMMENT ON VIEW activity_zone_seconds IS 'Every zone bucket of every activity with its local calendar, the activity''s own bounds and the Seiler zone it maps to (power buckets of cycling sport types only: the power zones are the bike''s)';
COMMENT ON COLUMN activity_zone_seconds.athlete_id IS 'The athlete who owns the activity';
COMMENT ON COLUMN activity_zone_seconds.activity_id IS 'The activity';
COMMENT ON COLUMN activity_zone_seconds.sport_type IS 'The activity''s sport type';
COMMENT ON COLUMN activity_zone_seconds.start_date_local IS 'Start of the activity in local wall-clock time';
COMMENT ON COLUMN activity_zone_seconds.local_date IS 'Local date of the activity';
COMMENT ON COLUMN activity_zone_seconds.week_start IS 'Monday of the activity''s ISO week';
COMMENT ON COLUMN activity_zone_seconds.iso_year IS 'ISO week-numbering year of the activity';
COMMENT ON COLUMN activity_zone_seconds.iso_week IS 'ISO week number of the activity, 1-53';
COMMENT ON COLUMN activity_zone_seconds.month_start IS 'First day of the activity''s local month';
COMMENT ON COLUMN activity_zone_seconds.year IS 'Calendar year of the activity';
COMMENT ON COLUMN activity_zone_seconds.month IS 'Month of the activity, 1-12';
COMMENT ON COLUMN activity_zone_seconds.zone_type IS 'heartrate or power (pace from the real service)';
COMMENT ON COLUMN activity_zone_seconds.zone IS 'Zone number, 1-based from the lowest (activity_zone_buckets.bucket_index)';
COMMENT ON COLUMN activity_zone_seconds.zone_count IS 'Number of zones the activity''s distribution of this type has';
COMMENT ON COLUMN activity_zone_seconds.zone_min IS 'Lower bound of the zone in this activity: bpm for heartrate, watts for power';
COMMENT ON COLUMN activity_zone_seconds.zone_max IS 'Upper bound of the zone in this activity (bpm or watts); -1 means no upper bound';
COMMENT ON COLUMN activity_zone_seconds.seconds IS 'Time in the zone during the activity, in seconds (0 when the service sent none)';
COMMENT ON COLUMN activity_zone_seconds.seiler_zone IS 'Seiler zone 1-3 from analysis_seiler_zones; NULL when no mapping exists for this zone count';

COMMENT ON VIEW zone_time_weekly IS 'Time per zone per athlete, ISO week and zone type, its share of the week, and the zone''s bounds in the week''s latest activity';
COMMENT ON COLUMN zone_time_weekly.athlete_id IS 'The athlete';
COMMENT ON COLUMN zone_time_weekly.week_start IS 'Monday of the ISO week';
COMMENT ON COLUMN zone_time_weekly.iso_year IS 'ISO week-numbering year';
COMMENT ON COLUMN zone_time_weekly.iso_week IS 'ISO week number, 1-53';
COMMENT ON COLUMN zone_time_weekly.zone_type IS 'heartrate or power (pace from the real service)';
COMMENT ON COLUMN zone_time_weekly.zone IS 'Zone number, 1-based from the lowest';
COMMENT ON COLUMN zone_time_weekly.seconds IS 'Time in the zone over the week''s activities, in seconds';
COMMENT ON COLUMN zone_time_weekly.share IS 'Fraction (0-1) of the week''s time in this zone type spent in this zone; NULL when the week has none';
COMMENT ON COLUMN zone_time_weekly.zone_min IS 'Lower bound of the zone (bpm or watts) in the week''s latest activity';
COMMENT ON COLUMN zone_time_weekly.zone_max IS 'Upper bound of the zone (bpm or watts) in the week''s latest activity; -1 means no upper bound';
COMMENT ON COLUMN zone_time_weekly.activities IS 'Number of activities in the week with a distribution of this zone type that has this zone';

COMMENT ON VIEW zone_time_monthly IS 'Time per zone per athlete, month and zone type, its share of the month, and the zone''s bounds in the month''s latest activity';
COMMENT ON COLUMN zone_time_monthly.athlete_id IS 'The athlete';
COMMENT ON COLUMN zone_time_monthly.month_start IS 'First day of the local month';
COMMENT ON COLUMN zone_time_monthly.year IS 'Calendar year of the month';
COMMENT ON COLUMN zone_time_monthly.month IS 'Month, 1-12';
COMMENT ON COLUMN zone_time_monthly.zone_type IS 'heartrate or power (pace from the real service)';
COMMENT ON COLUMN zone_time_monthly.zone IS 'Zone number, 1-based from the lowest';
COMMENT ON COLUMN zone_time_monthly.seconds IS 'Time in the zone over the month''s activities, in seconds';
COMMENT ON COLUMN zone_time_monthly.share IS 'Fraction (0-1) of the month''s time in this zone type spent in this zone; NULL when the month has none';
COMMENT ON COLUMN zone_time_monthly.zone_min IS 'Lower bound of the zone (bpm or watts) in the month''s latest activity';
COMMENT ON COLUMN zone_time_monthly.zone_max IS 'Upper bound of the zone (bpm or watts) in the month''s latest activity; -1 means no upper bound';
COMMENT ON COLUMN zone_time_monthly.activities IS 'Number of activities in the month with a distribution of this zone type that has this zone';

COMMENT ON VIEW seiler_weekly IS 'Per athlete, ISO week and zone type: time in Seiler''s three zones, their shares and the polarization index';
COMMENT ON COLUMN seiler_weekly.athlete_id IS 'The athlete';
COMMENT ON COLUMN seiler_weekly.week_start IS 'Monday of the ISO week';
COMMENT ON COLUMN seiler_weekly.iso_year IS 'ISO week-numbering year';
COMMENT ON COLUMN seiler_weekly.iso_week IS 'ISO week number, 1-53';
COMMENT ON COLUMN seiler_weekly.zone_type IS 'heartrate or power: which zones the time is measured in';
COMMENT ON COLUMN seiler_weekly.z1_seconds IS 'Time in Seiler zone 1 (below the first threshold), in seconds';
COMMENT ON COLUMN seiler_weekly.z2_seconds IS 'Time in Seiler zone 2 (between the thresholds), in seconds';
COMMENT ON COLUMN seiler_weekly.z3_seconds IS 'Time in Seiler zone 3 (above the second threshold), in seconds';
COMMENT ON COLUMN seiler_weekly.total_seconds IS 'z1_seconds + z2_seconds + z3_seconds (unmapped time excluded)';
COMMENT ON COLUMN seiler_weekly.unmapped_seconds IS 'Time in buckets analysis_seiler_zones does not map (no row for that zone count), in seconds';
COMMENT ON COLUMN seiler_weekly.z1_share IS 'z1_seconds / total_seconds (0-1); NULL when total_seconds is 0';
COMMENT ON COLUMN seiler_weekly.z2_share IS 'z2_seconds / total_seconds (0-1); NULL when total_seconds is 0';
COMMENT ON COLUMN seiler_weekly.z3_share IS 'z3_seconds / total_seconds (0-1); NULL when total_seconds is 0';
COMMENT ON COLUMN seiler_weekly.polarization_index IS 'log10(z1_share / z2_share * z3_share * 100) (Treff et al. 2019) with the paper''s rules for a zone without time (pi_note, docs/analysis.md); above 2 is polarized';
COMMENT ON COLUMN seiler_weekly.pi_note IS 'Which of Treff''s rules gave polarization_index: ok (eq. 1), zone 2 is 0 (eq. 2), zone 3 is 0 (PI 0), not valid (more zone-3 than zone-1 time: NULL), undefined (no time: NULL)';

COMMENT ON VIEW seiler_monthly IS 'Per athlete, month and zone type: time in Seiler''s three zones, their shares and the polarization index';
COMMENT ON COLUMN seiler_monthly.athlete_id IS 'The athlete';
COMMENT ON COLUMN seiler_monthly.month_start IS 'First day of the local month';
COMMENT ON COLUMN seiler_monthly.year IS 'Calendar year of the month';
COMMENT ON COLUMN seiler_monthly.month IS 'Month, 1-12';
COMMENT ON COLUMN seiler_monthly.zone_type IS 'heartrate or power: which zones the time is measured in';
COMMENT ON COLUMN seiler_monthly.z1_seconds IS 'Time in Seiler zone 1 (below the first threshold), in seconds';
COMMENT ON COLUMN seiler_monthly.z2_seconds IS 'Time in Seiler zone 2 (between the thresholds), in seconds';
COMMENT ON COLUMN seiler_monthly.z3_seconds IS 'Time in Seiler zone 3 (above the second threshold), in seconds';
COMMENT ON COLUMN seiler_monthly.total_seconds IS 'z1_seconds + z2_seconds + z3_seconds (unmapped time excluded)';
COMMENT ON COLUMN seiler_monthly.unmapped_seconds IS 'Time in buckets analysis_seiler_zones does not map (no row for that zone count), in seconds';
COMMENT ON COLUMN seiler_monthly.z1_share IS 'z1_seconds / total_seconds (0-1); NULL when total_seconds is 0';
COMMENT ON COLUMN seiler_monthly.z2_share IS 'z2_seconds / total_seconds (0-1); NULL when total_seconds is 0';
COMMENT ON COLUMN seiler_monthly.z3_share IS 'z3_seconds / total_seconds (0-1); NULL when total_seconds is 0';
COMMENT ON COLUMN seiler_monthly.polarization_index IS 'log10(z1_share / z2_share * z3_share * 100) (Treff et al. 2019) with the paper''s rules for a zone without time (pi_note, docs/analysis.md); above 2 is polarized';
COMMENT ON COLUMN seiler_monthly.pi_note IS 'Which of Treff''s rules gave polarization_index: ok (eq. 1), zone 2 is 0 (eq. 2), zone 3 is 0 (PI 0), not valid (more zone-3 than zone-1 time: NULL), undefined (no time: NULL)';

COMMENT ON VIEW athlete_zone_history IS 'The athlete''s zone definitions over time from the zone snapshots: one version per change of bounds, one row per zone';
COMMENT ON COLUMN athlete_zone_history.athlete_id IS 'The athlete';
COMMENT ON COLUMN athlete_zone_history.zone_type IS 'heartrate or power';
COMMENT ON COLUMN athlete_zone_history.version IS 'Version of the zone definition, 1 for the first snapshot, +1 at each change of bounds';
COMMENT ON COLUMN athlete_zone_history.valid_from IS 'Date of the first snapshot with this version';
COMMENT ON COLUMN athlete_zone_history.valid_to IS 'Date of the next version''s first snapshot (exclusive); NULL for the current version';
COMMENT ON COLUMN athlete_zone_history.last_seen IS 'Date of the last snapshot with this version';
COMMENT ON COLUMN athlete_zone_history.zone IS 'Zone number, 1-based from the lowest';
COMMENT ON COLUMN athlete_zone_history.zone_min IS 'Lower bound of the zone: bpm for heartrate, watts for power';
COMMENT ON COLUMN athlete_zone_history.zone_max IS 'Upper bound of the zone (bpm or watts); -1 means no upper bound';

COMMENT ON VIEW ftp_timeline IS 'FTP by date per athlete: analysis_ftp_history rows and the profile FTP as fitsync saw it (athlete_snapshots), merged; each row applies from valid_from until valid_to';
COMMENT ON COLUMN ftp_timeline.athlete_id IS 'The athlete';
COMMENT ON COLUMN ftp_timeline.valid_from IS 'First local date this FTP applies';
COMMENT ON COLUMN ftp_timeline.valid_to IS 'First date of the next row (exclusive); NULL: still in force';
COMMENT ON COLUMN ftp_timeline.ftp IS 'Functional threshold power, watts';
COMMENT ON COLUMN ftp_timeline.source IS 'history (an analysis_ftp_history row) or profile (the first day fitsync saw this value in the profile, within ftp_min_w .. ftp_max_w)';

COMMENT ON VIEW activity_load IS 'Per activity: every training load it could have (power TSS, running pace TSS, heart-rate load, suffer score, an estimate from duration and sport), the one chosen, its source, and the thresholds used';
COMMENT ON COLUMN activity_load.activity_id IS 'The activity';
COMMENT ON COLUMN activity_load.athlete_id IS 'The athlete who owns the activity';
COMMENT ON COLUMN activity_load.sport_type IS 'The activity''s sport type';
COMMENT ON COLUMN activity_load.sport_family IS 'The sport type''s family (analysis_sport_families; Other when not listed)';
COMMENT ON COLUMN activity_load.local_date IS 'Local date of the activity';
COMMENT ON COLUMN activity_load.week_start IS 'Monday of the activity''s ISO week';
COMMENT ON COLUMN activity_load.iso_year IS 'ISO week-numbering year of the activity';
COMMENT ON COLUMN activity_load.iso_week IS 'ISO week number of the activity, 1-53';
COMMENT ON COLUMN activity_load.moving_time IS 'Moving time of the activity, in seconds';
COMMENT ON COLUMN activity_load.duration_s IS 'The duration the load is computed over: moving_time, else elapsed_time, in seconds';
COMMENT ON COLUMN activity_load.np_watts IS 'Normalized power, approximated by activities.weighted_average_watts, in watts';
COMMENT ON COLUMN activity_load.ftp IS 'FTP in force on local_date, in watts (ftp_timeline); before the athlete''s first known FTP, that first one; NULL without any';
COMMENT ON COLUMN activity_load.ftp_source IS 'Where ftp came from: history (an analysis_ftp_history row), profile (the profile FTP as fitsync saw it on or before that date), known_later (the activity predates every known FTP: the first one, seen only later; not counted as measured); NULL without an FTP';
COMMENT ON COLUMN activity_load.average_hr IS 'Average heart rate of the activity, bpm';
COMMENT ON COLUMN activity_load.lthr IS 'Lactate-threshold heart rate for the local date, bpm (analysis_thresholds, else the lower bound of heart-rate zone lthr_zone)';
COMMENT ON COLUMN activity_load.lthr_source IS 'Where lthr came from: setting (analysis_thresholds), zones (the athlete''s heart-rate zones in force) or known_later (before the first zones fitsync saw: those, known only later; an average-HR load on it is not counted as measured); NULL without any';
COMMENT ON COLUMN activity_load.threshold_pace_s_per_km IS 'Running threshold pace set for the local date (analysis_thresholds), seconds per km; NULL when none is set';
COMMENT ON COLUMN activity_load.power_load IS 'Power TSS: duration_s * (NP / FTP)^2 / 3600 * 100 (device power on a power_tss sport type with an FTP); NULL otherwise';
COMMENT ON COLUMN activity_load.pace_load IS 'Running pace TSS (rTSS): duration_s * (speed / threshold speed)^2 / 3600 * 100 for a run with a threshold pace set; NULL otherwise';
COMMENT ON COLUMN activity_load.pace_basis IS 'The speed pace_load used: grade_adjusted (every split carries the service''s grade-adjusted speed) or average_speed';
COMMENT ON COLUMN activity_load.hr_load IS 'Heart-rate load on the TSS scale: seconds in each heart-rate zone times the zone''s load per hour (analysis_hr_zone_weights) times hr_calibration, and the seconds they do not cover (a strap that dropped out: hr_coverage) at the sport''s usual intensity; without zone buckets duration_s * (average HR / LTHR)^2 / 3600 * 100';
COMMENT ON COLUMN activity_load.hr_load_basis IS 'How hr_load was computed: zones_calibrated, zones (default zone loads) or average_hr (no zone buckets: the last fallback)';
COMMENT ON COLUMN activity_load.hr_coverage IS 'Seconds in the heart-rate zone buckets / duration_s: under hr_min_coverage (a strap that dropped out) the seconds not covered count at the sport''s usual intensity (as estimated_load), over its inverse (buckets longer than the activity) the zone load is scaled to the duration; neither counted as measured; NULL without zone buckets';
COMMENT ON COLUMN activity_load.hr_calibration IS 'The athlete''s calibration of zone loads to power: median of power_load / default zone load over rides with both; NULL with fewer than hr_calibration_min_rides or a ratio outside its bounds';
COMMENT ON COLUMN activity_load.suffer_score IS 'The service''s relative effort (suffer score), as given';
COMMENT ON COLUMN activity_load.estimated_load IS 'Estimated load: duration_s * estimate_if^2 / 3600 * 100, the sport''s usual intensity';
COMMENT ON COLUMN activity_load.intensity_factor IS 'The chosen source''s intensity: NP / FTP (power), speed / threshold speed (pace), average HR / LTHR or, for zone loads, the IF an hour of that load means (heart_rate), estimate_if (estimate); NULL for the suffer score';
COMMENT ON COLUMN activity_load.load IS 'Training load on the TSS scale (an hour at threshold = 100): the candidate load_source names; NULL without a duration. A SQL keyword: quote it ("load")';
COMMENT ON COLUMN activity_load.load_source IS 'The chosen source, the first the activity has of: power (TSS), pace (running rTSS: runs with a threshold pace), heart_rate (zone-based hrTSS), suffer_score (the service''s relative effort), estimate (duration and the sport''s usual intensity); none without any';
COMMENT ON COLUMN activity_load.measured IS 'Whether the load rests on a measurement of this activity: power on an FTP in force then, pace, heart rate or the suffer score; false for an estimate, for none, for power on an FTP known only later and for zone buckets covering less than hr_min_coverage of the duration';

COMMENT ON VIEW daily_load IS 'Per athlete, every local day from the first activity to as_of_date: the day''s summed load (0 on rest days)';
COMMENT ON COLUMN daily_load.athlete_id IS 'The athlete';
COMMENT ON COLUMN daily_load.date IS 'Local date';
COMMENT ON COLUMN daily_load.load IS 'Sum of the day''s activity loads (activity_load.load); 0 on a rest day or when no activity had a load';
COMMENT ON COLUMN daily_load.activities IS 'Number of activities on the day';

COMMENT ON VIEW daily_load_by_family IS 'Daily load per athlete and sport family (All: every activity), dense from the first activity to as_of_date';
COMMENT ON COLUMN daily_load_by_family.athlete_id IS 'The athlete';
COMMENT ON COLUMN daily_load_by_family.sport_family IS 'Sport family (analysis_sport_families; Other when not listed; All: every activity)';
COMMENT ON COLUMN daily_load_by_family.date IS 'Local date';
COMMENT ON COLUMN daily_load_by_family.load IS 'Sum of the family''s activity loads that day; 0 on a day without one';
COMMENT ON COLUMN daily_load_by_family.activities IS 'Activities of the family that day';

COMMENT ON VIEW pmc_by_family IS 'Performance management chart per athlete, sport family (All: every activity) and local day: load, CTL, ATL, TSB, ramp rate, form band';
COMMENT ON COLUMN pmc_by_family.athlete_id IS 'The athlete';
COMMENT ON COLUMN pmc_by_family.sport_family IS 'Sport family whose loads the series adds (All: every activity, as the pmc view)';
COMMENT ON COLUMN pmc_by_family.date IS 'Local date';
COMMENT ON COLUMN pmc_by_family.load IS 'The family''s load that day (daily_load_by_family)';
COMMENT ON COLUMN pmc_by_family.ctl IS 'Fitness: exponentially weighted average of the family''s load, time constant ctl_days (42)';
COMMENT ON COLUMN pmc_by_family.atl IS 'Fatigue: exponentially weighted average of the family''s load, time constant atl_days (7)';
COMMENT ON COLUMN pmc_by_family.tsb IS 'Form: yesterday''s ctl - atl';
COMMENT ON COLUMN pmc_by_family.ramp_rate IS 'ctl minus ctl ramp_days (7) earlier';
COMMENT ON COLUMN pmc_by_family.form_band IS 'The analysis_form_bands band the tsb falls in';

COMMENT ON VIEW load_risk_daily IS 'Per athlete and day: acute and chronic load, the acute:chronic workload ratio (rolling and EWMA), training monotony and strain (Foster)';
COMMENT ON COLUMN load_risk_daily.athlete_id IS 'The athlete';
COMMENT ON COLUMN load_risk_daily.date IS 'Local date';
COMMENT ON COLUMN load_risk_daily.load IS 'The day''s load, all activities';
COMMENT ON COLUMN load_risk_daily.acute_load IS 'Mean daily load over the last acwr_acute_days (7) days, today included';
COMMENT ON COLUMN load_risk_daily.chronic_load IS 'Mean daily load over the last acwr_chronic_days (28) days, today included';
COMMENT ON COLUMN load_risk_daily.chronic_sessions IS 'Activities in the last acwr_chronic_days (28) days, today included';
COMMENT ON COLUMN load_risk_daily.acwr_rolling IS 'acute_load / chronic_load (coupled rolling ratio); NULL unless acwr_note is ok';
COMMENT ON COLUMN load_risk_daily.ewma_acute IS 'Exponentially weighted daily load, lambda = 2 / (acwr_acute_days + 1) (Williams et al. 2017), from 0';
COMMENT ON COLUMN load_risk_daily.ewma_chronic IS 'Exponentially weighted daily load, lambda = 2 / (acwr_chronic_days + 1), from 0';
COMMENT ON COLUMN load_risk_daily.acwr_ewma IS 'ewma_acute / ewma_chronic; NULL unless acwr_note is ok (or when ewma_chronic is 0)';
COMMENT ON COLUMN load_risk_daily.acwr_note IS 'ok, or why the ratios are NULL: fewer than acwr_chronic_days of history, fewer than acwr_min_sessions sessions in the chronic window, or a chronic load under acwr_min_chronic_load a day';
COMMENT ON COLUMN load_risk_daily.monotony IS 'Mean / population standard deviation of the daily load over monotony_days (7) days (Foster 1998); NULL when the window is not full or every day had the same load';
COMMENT ON COLUMN load_risk_daily.strain IS 'The window''s total load * monotony (Foster 1998)';

COMMENT ON VIEW power_duration_curve IS 'Mean-maximal power per athlete, season (year; 0 = all time) and duration: the best average power of any effort, lap or activity with device power lasting at least that long';
COMMENT ON COLUMN power_duration_curve.athlete_id IS 'The athlete';
COMMENT ON COLUMN power_duration_curve.season IS 'Year the season of the efforts starts in (local date, season_start_month; 1 = calendar year); 0 = all time';
COMMENT ON COLUMN power_duration_curve.duration_s IS 'Duration of the curve (analysis_power_durations), seconds';
COMMENT ON COLUMN power_duration_curve.label IS 'The duration as shown (5 s, 1 min, 20 min, 1 h, ...)';
COMMENT ON COLUMN power_duration_curve.best_watts IS 'Best power for duration_s, watts: an activity''s exact mean-maximal power where its streams are stored, else the average of an effort at least duration_s long (an estimate, usually from below)';
COMMENT ON COLUMN power_duration_curve.source IS 'What the best was: stream (the activity''s mean-maximal power from its streams), segment_effort, lap or activity';
COMMENT ON COLUMN power_duration_curve.source_id IS 'Its id (effort, lap or activity id)';
COMMENT ON COLUMN power_duration_curve.activity_id IS 'The activity it was part of';
COMMENT ON COLUMN power_duration_curve.local_date IS 'Local date of the best';
COMMENT ON COLUMN power_duration_curve.effort_duration_s IS 'How long the best effort actually lasted, seconds (at least duration_s)';
COMMENT ON COLUMN power_duration_curve.at_duration IS 'Whether the best effort lasted less than the next listed duration: a measurement at about this duration, not a longer effort carried down';

COMMENT ON VIEW critical_power IS 'Critical power and W'' per athlete and season (0 = all time): the 2-parameter model fitted on the power-duration envelope (one point per duration band between 2 and 20 min), with its fit quality; NULL unless it passes the physiological gates (cp_note)';
COMMENT ON COLUMN critical_power.athlete_id IS 'The athlete';
COMMENT ON COLUMN critical_power.season IS 'Year the season of the efforts starts in (season_start_month; 1 = calendar year); 0 = all time';
COMMENT ON COLUMN critical_power.points IS 'Duration bands with an envelope effort (one point each: no longer effort at least as strong) within cp_min_s .. cp_max_s';
COMMENT ON COLUMN critical_power.shortest_s IS 'Duration of the shortest point, seconds';
COMMENT ON COLUMN critical_power.longest_s IS 'Duration of the longest point, seconds';
COMMENT ON COLUMN critical_power.cp_watts IS 'Critical power, watts: the slope of work over time (P = CP + W''/t); NULL without a fit (cp_note)';
COMMENT ON COLUMN critical_power.w_prime_j IS 'W'', joules: the work above CP (the intercept of work over time); NULL without a fit';
COMMENT ON COLUMN critical_power.r2 IS 'Coefficient of determination of the work-time fit (0-1)';
COMMENT ON COLUMN critical_power.rmse_watts IS 'Root mean square of each point''s power minus the model''s, watts';
COMMENT ON COLUMN critical_power.cp_inverse_t_watts IS 'Critical power of the power-1/t form (P = CP + W'' * (1/t), least squares on power), watts; NULL when the fit is not ok';
COMMENT ON COLUMN critical_power.w_prime_inverse_t_j IS 'W'' of the power-1/t form, joules; NULL when the fit is not ok';
COMMENT ON COLUMN critical_power.best_hour_watts IS 'Best power held for cp_hour_s (60 min) or longer in the season, watts: CP must be at least cp_hour_share of it';
COMMENT ON COLUMN critical_power.cp_note IS 'ok, or why there is no fit: too few envelope efforts, efforts too alike in length, no physical fit, an implausible W'', a CP below an hour''s power or a poor fit';
COMMENT ON COLUMN critical_power.source IS 'What the fit''s points came from: streams, efforts (segment efforts, laps, activities) or streams and efforts; NULL without points';

COMMENT ON VIEW running_best_efforts IS 'Fastest runs over 1 km, 5 km, 10 km, half and marathon per athlete and season (0 = all time), from consecutive whole kilometre splits: the pace-duration curve';
COMMENT ON COLUMN running_best_efforts.athlete_id IS 'The athlete';
COMMENT ON COLUMN running_best_efforts.season IS 'Season of the run''s local date (the year it starts in, season_start_month); 0 = all time';
COMMENT ON COLUMN running_best_efforts.splits IS 'Consecutive whole kilometre splits the distance spans (analysis_run_distances)';
COMMENT ON COLUMN running_best_efforts.label IS 'The distance as shown';
COMMENT ON COLUMN running_best_efforts.best_time_s IS 'Fastest elapsed time over those splits, seconds';
COMMENT ON COLUMN running_best_efforts.distance_m IS 'Measured distance of those splits, metres';
COMMENT ON COLUMN running_best_efforts.activity_id IS 'The run it was part of';
COMMENT ON COLUMN running_best_efforts.local_date IS 'Local date of the run';
COMMENT ON COLUMN running_best_efforts.first_split IS 'Number of the first split of the stretch';
COMMENT ON COLUMN running_best_efforts.pace_s_per_km IS 'best_time_s per kilometre of distance_m, seconds';

COMMENT ON VIEW aerobic_decoupling IS 'Per activity with heart rate in both halves: efficiency (output per heartbeat) of the first half against the second, from splits or laps (Pa:HR decoupling)';
COMMENT ON COLUMN aerobic_decoupling.athlete_id IS 'The athlete';
COMMENT ON COLUMN aerobic_decoupling.activity_id IS 'The activity';
COMMENT ON COLUMN aerobic_decoupling.local_date IS 'Local date of the activity';
COMMENT ON COLUMN aerobic_decoupling.sport_family IS 'The activity''s sport family';
COMMENT ON COLUMN aerobic_decoupling.basis IS 'The units the halves are made of: splits (at least 4 kilometre splits with heart rate) or laps (at least 2)';
COMMENT ON COLUMN aerobic_decoupling.output_kind IS 'Output per heartbeat: speed (metres per minute, as efficiency_factor_weekly) or power (watts, when every lap had device power)';
COMMENT ON COLUMN aerobic_decoupling.units IS 'Splits or laps used (after the warm-up: units ending within decoupling_warmup_s are left out)';
COMMENT ON COLUMN aerobic_decoupling.moving_time_s IS 'Their moving time, seconds';
COMMENT ON COLUMN aerobic_decoupling.first_half_ef IS 'Time-weighted output / time-weighted heart rate over the first half';
COMMENT ON COLUMN aerobic_decoupling.second_half_ef IS 'The same over the second half';
COMMENT ON COLUMN aerobic_decoupling.output_cv IS 'Time-weighted coefficient of variation of the output over the units (0 = perfectly steady)';
COMMENT ON COLUMN aerobic_decoupling.decoupling_note IS 'steady, or why decoupling_pct is NULL: too short after the warm-up (decoupling_min_s), a ride on speed (without power in every lap), or an output that varies more than decoupling_max_cv';
COMMENT ON COLUMN aerobic_decoupling.decoupling_pct IS '(first_half_ef - second_half_ef) / first_half_ef * 100: how much efficiency fell; under 5 is the usual mark of durability. NULL when decoupling_note is not steady';

COMMENT ON VIEW efficiency_factor_weekly IS 'Efficiency factor per athlete, ISO week, sport family and basis: normalized power or speed per heartbeat, time-weighted over the week''s activities with heart rate';
COMMENT ON COLUMN efficiency_factor_weekly.athlete_id IS 'The athlete';
COMMENT ON COLUMN efficiency_factor_weekly.week_start IS 'Monday of the ISO week';
COMMENT ON COLUMN efficiency_factor_weekly.iso_year IS 'ISO week-numbering year';
COMMENT ON COLUMN efficiency_factor_weekly.iso_week IS 'ISO week number, 1-53';
COMMENT ON COLUMN efficiency_factor_weekly.sport_family IS 'Sport family';
COMMENT ON COLUMN efficiency_factor_weekly.basis IS 'power: weighted_average_watts per bpm (device power on a power_tss sport); speed: metres per minute per bpm';
COMMENT ON COLUMN efficiency_factor_weekly.activities IS 'Activities with an average heart rate that week';
COMMENT ON COLUMN efficiency_factor_weekly.moving_time_s IS 'Their moving time, seconds';
COMMENT ON COLUMN efficiency_factor_weekly.efficiency_factor IS 'Time-weighted mean of each activity''s output / average heart rate';

COMMENT ON VIEW gear_mileage IS 'Per athlete and gear: distance, time and use dates from the activities, the service''s own distance, and retirement';
COMMENT ON COLUMN gear_mileage.athlete_id IS 'The athlete';
COMMENT ON COLUMN gear_mileage.gear_id IS 'The gear (b… bikes, g… shoes)';
COMMENT ON COLUMN gear_mileage.kind IS 'bike or shoe; NULL for gear only activities name (in no profile fitsync read)';
COMMENT ON COLUMN gear_mileage.name IS 'Name as the latest profile listing it gave it';
COMMENT ON COLUMN gear_mileage.is_primary IS 'Whether it is the athlete''s primary bike or shoes (false once the profile no longer lists it)';
COMMENT ON COLUMN gear_mileage.activities IS 'Activities fitsync has with this gear';
COMMENT ON COLUMN gear_mileage.distance_m IS 'Their distance, metres';
COMMENT ON COLUMN gear_mileage.moving_time_s IS 'Their moving time, seconds';
COMMENT ON COLUMN gear_mileage.first_used IS 'Local date of the first activity with it';
COMMENT ON COLUMN gear_mileage.last_used IS 'Local date of the latest activity with it';
COMMENT ON COLUMN gear_mileage.service_distance_m IS 'The service''s total for the gear, metres, as the latest profile listing it gave it (it counts activities fitsync may not have)';
COMMENT ON COLUMN gear_mileage.retired IS 'Whether the service says it is retired (NULL: it does not say)';
COMMENT ON COLUMN gear_mileage.retired_on IS 'For retired gear: the local date of its last activity';
COMMENT ON COLUMN gear_mileage.profile_lists IS 'Whether the athlete''s latest profile lists the gear (false: sold or deleted since, or only activities name it; its name and totals stay)';

COMMENT ON VIEW pmc IS 'Performance management chart per athlete and local day (dense): load, fitness (CTL), fatigue (ATL), form (TSB)';
COMMENT ON COLUMN pmc.athlete_id IS 'The athlete';
COMMENT ON COLUMN pmc.date IS 'Local date';
COMMENT ON COLUMN pmc.load IS 'The day''s training load, as daily_load.load';
COMMENT ON COLUMN pmc.ctl IS 'Chronic training load (fitness): exponentially weighted average of daily load, time constant ctl_days (42)';
COMMENT ON COLUMN pmc.atl IS 'Acute training load (fatigue): exponentially weighted average of daily load, time constant atl_days (7)';
COMMENT ON COLUMN pmc.tsb IS 'Training stress balance (form): yesterday''s CTL minus yesterday''s ATL';
COMMENT ON COLUMN pmc.ramp_rate IS 'CTL minus CTL ramp_days (7) days earlier, taking CTL as 0 before the series starts';
COMMENT ON COLUMN pmc.form_band IS 'Band of analysis_form_bands that tsb falls in: high risk, optimal, grey zone, fresh or transition';

COMMENT ON VIEW load_coverage_weekly IS 'Per athlete and ISO week: how much of the time has a training load, how much of it was measured rather than estimated, and which sources the loads came from';
COMMENT ON COLUMN load_coverage_weekly.athlete_id IS 'The athlete';
COMMENT ON COLUMN load_coverage_weekly.week_start IS 'Monday of the ISO week';
COMMENT ON COLUMN load_coverage_weekly.iso_year IS 'ISO week-numbering year';
COMMENT ON COLUMN load_coverage_weekly.iso_week IS 'ISO week number, 1-53';
COMMENT ON COLUMN load_coverage_weekly.activities IS 'Number of activities in the week';
COMMENT ON COLUMN load_coverage_weekly.moving_time_s IS 'Total duration (moving time, else elapsed time) of the week''s activities, in seconds';
COMMENT ON COLUMN load_coverage_weekly.loaded_moving_time_s IS 'Duration of the week''s activities that have a load (estimates included), in seconds';
COMMENT ON COLUMN load_coverage_weekly.coverage IS 'loaded_moving_time_s / moving_time_s (0-1); NULL when the week has no moving time';
COMMENT ON COLUMN load_coverage_weekly.measured_coverage IS 'Share of the week''s time whose load was measured (power with an FTP known then, heart rate, pace or suffer score), not estimated (0-1)';
COMMENT ON COLUMN load_coverage_weekly.power_activities IS 'Activities whose load is power TSS';
COMMENT ON COLUMN load_coverage_weekly.heart_rate_activities IS 'Activities whose load is heart-rate TSS';
COMMENT ON COLUMN load_coverage_weekly.pace_activities IS 'Activities whose load is running pace TSS';
COMMENT ON COLUMN load_coverage_weekly.suffer_score_activities IS 'Activities whose load is the service''s suffer score';
COMMENT ON COLUMN load_coverage_weekly.estimated_activities IS 'Activities whose load is estimated from duration and sport';
COMMENT ON COLUMN load_coverage_weekly.unloaded_activities IS 'Activities without a load (load_source none: no duration)';
COMMENT ON COLUMN load_coverage_weekly.later_ftp_activities IS 'Activities whose power load rests on an FTP known only later (ftp_source known_later)';

COMMENT ON VIEW volume_weekly IS 'Per athlete, ISO week and sport type: number of activities, distance, moving time and elevation gain';
COMMENT ON COLUMN volume_weekly.athlete_id IS 'The athlete';
COMMENT ON COLUMN volume_weekly.week_start IS 'Monday of the ISO week';
COMMENT ON COLUMN volume_weekly.iso_year IS 'ISO week-numbering year';
COMMENT ON COLUMN volume_weekly.iso_week IS 'ISO week number, 1-53';
COMMENT ON COLUMN volume_weekly.sport_type IS 'Sport type, as activities.sport_type';
COMMENT ON COLUMN volume_weekly.sport_family IS 'Family of the sport type (analysis_sport_families; Other when not listed)';
COMMENT ON COLUMN volume_weekly.activities IS 'Number of activities';
COMMENT ON COLUMN volume_weekly.distance_m IS 'Total distance, in metres';
COMMENT ON COLUMN volume_weekly.moving_time_s IS 'Total moving time, in seconds';
COMMENT ON COLUMN volume_weekly.elevation_gain_m IS 'Total elevation gain, in metres';

COMMENT ON VIEW volume_monthly IS 'Per athlete, month and sport type: number of activities, distance, moving time and elevation gain';
COMMENT ON COLUMN volume_monthly.athlete_id IS 'The athlete';
COMMENT ON COLUMN volume_monthly.month_start IS 'First day of the local month';
COMMENT ON COLUMN volume_monthly.year IS 'Calendar year of the month';
COMMENT ON COLUMN volume_monthly.month IS 'Month, 1-12';
COMMENT ON COLUMN volume_monthly.sport_type IS 'Sport type, as activities.sport_type';
COMMENT ON COLUMN volume_monthly.sport_family IS 'Family of the sport type (analysis_sport_families; Other when not listed)';
COMMENT ON COLUMN volume_monthly.activities IS 'Number of activities';
COMMENT ON COLUMN volume_monthly.distance_m IS 'Total distance, in metres';
COMMENT ON COLUMN volume_monthly.moving_time_s IS 'Total moving time, in seconds';
COMMENT ON COLUMN volume_monthly.elevation_gain_m IS 'Total elevation gain, in metres';

COMMENT ON VIEW volume_yearly IS 'Per athlete, calendar year and sport type: number of activities, distance, moving time and elevation gain';
COMMENT ON COLUMN volume_yearly.athlete_id IS 'The athlete';
COMMENT ON COLUMN volume_yearly.year IS 'Calendar year of the activities'' local dates';
COMMENT ON COLUMN volume_yearly.sport_type IS 'Sport type, as activities.sport_type';
COMMENT ON COLUMN volume_yearly.sport_family IS 'Family of the sport type (analysis_sport_families; Other when not listed)';
COMMENT ON COLUMN volume_yearly.activities IS 'Number of activities';
COMMENT ON COLUMN volume_yearly.distance_m IS 'Total distance, in metres';
COMMENT ON COLUMN volume_yearly.moving_time_s IS 'Total moving time, in seconds';
COMMENT ON COLUMN volume_yearly.elevation_gain_m IS 'Total elevation gain, in metres';

COMMENT ON VIEW ytd_cumulative IS 'Year-to-date running totals per athlete, sport family (All = every sport) and day, from 1 January to 31 December or as_of_date';
COMMENT ON COLUMN ytd_cumulative.athlete_id IS 'The athlete';
COMMENT ON COLUMN ytd_cumulative.sport_family IS 'Sport family (analysis_sport_families; Other when not listed), or All for every sport';
COMMENT ON COLUMN ytd_cumulative.year IS 'Calendar year the totals run in';
COMMENT ON COLUMN ytd_cumulative.date IS 'Local date; the totals include this day';
COMMENT ON COLUMN ytd_cumulative.day_of_year IS 'Day of the year of date, 1-366';
COMMENT ON COLUMN ytd_cumulative.activities IS 'Activities from 1 January up to and including date';
COMMENT ON COLUMN ytd_cumulative.distance_m IS 'Distance from 1 January up to and including date, in metres';
COMMENT ON COLUMN ytd_cumulative.moving_time_s IS 'Moving time from 1 January up to and including date, in seconds';
COMMENT ON COLUMN ytd_cumulative.elevation_gain_m IS 'Elevation gain from 1 January up to and including date, in metres';

COMMENT ON VIEW eddington IS 'Eddington number per athlete, sport family and unit: the largest E with E local days of at least E km (or miles)';
COMMENT ON COLUMN eddington.athlete_id IS 'The athlete';
COMMENT ON COLUMN eddington.sport_family IS 'Sport family whose activities are summed per day (analysis_sport_families; Other when not listed; All: every activity)';
COMMENT ON COLUMN eddington.unit IS 'Distance unit: km or mi';
COMMENT ON COLUMN eddington.eddington IS 'The Eddington number E: E days with a daily distance of at least E units';
COMMENT ON COLUMN eddington.days IS 'Local days with at least one activity of the family, of any distance (0 included): the days E is drawn from';
COMMENT ON COLUMN eddington.days_at_next IS 'Days with at least E + 1 units';
COMMENT ON COLUMN eddington.days_to_next IS 'More days of at least E + 1 units needed to reach E + 1';

COMMENT ON VIEW eddington_curve IS 'For the Eddington chart: per athlete, sport family and unit, how many local days reached n units, for n = 1 to the longest day';
COMMENT ON COLUMN eddington_curve.athlete_id IS 'The athlete';
COMMENT ON COLUMN eddington_curve.sport_family IS 'Sport family whose activities are summed per day (analysis_sport_families; Other when not listed)';
COMMENT ON COLUMN eddington_curve.unit IS 'Distance unit: km or mi';
COMMENT ON COLUMN eddington_curve.n IS 'Whole number of units, from 1 to the longest day''s distance';
COMMENT ON COLUMN eddington_curve.days_at_least IS 'Number of local days whose summed distance reached at least n units';

COMMENT ON VIEW season_power_curve IS 'Mean-maximal power from the streams per athlete, season (the year it starts in; 0 = all time) and duration: the best activity_mmp of any cycling activity, this season vs last and all time';
COMMENT ON COLUMN season_power_curve.athlete_id IS 'The athlete';
COMMENT ON COLUMN season_power_curve.season IS 'Year the season starts in (season_start_month; 1 = calendar year); 0 = all time';
COMMENT ON COLUMN season_power_curve.period IS 'this season (that of the athlete''s as_of_date), last season, earlier or all time';
COMMENT ON COLUMN season_power_curve.duration_s IS 'Duration of the window, seconds (activity_mmp''s grid)';
COMMENT ON COLUMN season_power_curve.best_watts IS 'Best average power over any window of that duration in the season, watts';
COMMENT ON COLUMN season_power_curve.activity_id IS 'The activity it was ridden in (the earliest on a tie)';
COMMENT ON COLUMN season_power_curve.local_date IS 'Local date of that activity';
COMMENT ON COLUMN season_power_curve.start_s IS 'Start of the best window, seconds from the activity''s start';
COMMENT ON COLUMN season_power_curve.activities IS 'Activities with a window that long in the season';

COMMENT ON VIEW pace_duration_curve IS 'Best average speed of runs from the streams per athlete, season (0 = all time) and duration, with its pace: the pace-duration curve';
COMMENT ON COLUMN pace_duration_curve.athlete_id IS 'The athlete';
COMMENT ON COLUMN pace_duration_curve.season IS 'Year the season starts in (season_start_month); 0 = all time';
COMMENT ON COLUMN pace_duration_curve.period IS 'this season, last season, earlier or all time';
COMMENT ON COLUMN pace_duration_curve.duration_s IS 'Duration of the window, seconds';
COMMENT ON COLUMN pace_duration_curve.speed_m_s IS 'Best average speed over any window of that duration, m/s (distance covered / duration)';
COMMENT ON COLUMN pace_duration_curve.pace_s_per_km IS 'That speed as a pace, seconds per kilometre';
COMMENT ON COLUMN pace_duration_curve.distance_m IS 'Distance covered in that window, metres';
COMMENT ON COLUMN pace_duration_curve.activity_id IS 'The run (the earliest on a tie)';
COMMENT ON COLUMN pace_duration_curve.local_date IS 'Local date of the run';
COMMENT ON COLUMN pace_duration_curve.start_s IS 'Start of the best window, seconds from the run''s start';

COMMENT ON VIEW critical_speed IS 'Critical speed and D'' per athlete and season (0 = all time): distance = CS * t + D'' fitted on the pace-duration curve from cs_min_s to cs_max_s';
COMMENT ON COLUMN critical_speed.athlete_id IS 'The athlete';
COMMENT ON COLUMN critical_speed.season IS 'Year the season starts in; 0 = all time';
COMMENT ON COLUMN critical_speed.points IS 'Durations of the curve within cs_min_s-cs_max_s the fit used';
COMMENT ON COLUMN critical_speed.shortest_s IS 'Shortest of them, seconds';
COMMENT ON COLUMN critical_speed.longest_s IS 'Longest of them, seconds';
COMMENT ON COLUMN critical_speed.cs_m_s IS 'Critical speed, m/s (the slope of distance over time); NULL without a fit (cs_note)';
COMMENT ON COLUMN critical_speed.cs_pace_s_per_km IS 'Critical speed as a pace, seconds per kilometre';
COMMENT ON COLUMN critical_speed.d_prime_m IS 'D'', metres: the distance that can be run above CS (the intercept)';
COMMENT ON COLUMN critical_speed.r2 IS 'Coefficient of determination of the distance-time fit';
COMMENT ON COLUMN critical_speed.cs_note IS 'ok, or why there is no fit: too few durations, CS or D'' not positive, D'' outside d_prime_min_m .. d_prime_max_m, or CS below the hour''s speed (the runs were not maximal)';

COMMENT ON VIEW profile_ftp_unused IS 'Profile FTPs the loads do not use: outside ftp_min_w .. ftp_max_w (analysis_settings), each value with the days it was seen';
COMMENT ON COLUMN profile_ftp_unused.athlete_id IS 'The athlete';
COMMENT ON COLUMN profile_ftp_unused.ftp IS 'The profile''s FTP, watts, as the service sent it';
COMMENT ON COLUMN profile_ftp_unused.first_seen IS 'First day fitsync saw this value';
COMMENT ON COLUMN profile_ftp_unused.last_seen IS 'Last day fitsync saw this value';
COMMENT ON COLUMN profile_ftp_unused.ftp_min_w IS 'The lowest FTP the loads use (ftp_min_w)';
COMMENT ON COLUMN profile_ftp_unused.ftp_max_w IS 'The highest FTP the loads use (ftp_max_w)';
COMMENT ON VIEW run_jumps IS 'Steps of a run''s distance stream faster than run_max_speed (analysis_settings): GPS jumps no best effort, pace or critical speed holds';
COMMENT ON COLUMN run_jumps.athlete_id IS 'The athlete';
COMMENT ON COLUMN run_jumps.activity_id IS 'The run';
COMMENT ON COLUMN run_jumps.time IS 'Seconds from the start at the sample the step ends on';
COMMENT ON COLUMN run_jumps.metres IS 'Metres the distance stream moved in the step';
COMMENT ON COLUMN run_jumps.seconds IS 'Seconds the step took (0: two samples at one time)';
COMMENT ON VIEW duplicate_activities IS 'Second recordings of one session (same athlete and sport family, overlapping by duplicate_overlap of the longer): left out of activity_calendar and so of every analysis';
COMMENT ON COLUMN duplicate_activities.athlete_id IS 'The athlete';
COMMENT ON COLUMN duplicate_activities.activity_id IS 'The second recording, left out of the analyses';
COMMENT ON COLUMN duplicate_activities.kept_activity_id IS 'The recording kept: device power, else heart rate, else the longer moving time, else the lower id';
COMMENT ON COLUMN duplicate_activities.overlap_s IS 'Seconds the two recordings overlap';
COMMENT ON VIEW future_activities IS 'Activities dated after fitsync received them (start_date later than listed_at by more than future_margin_s: a device clock ahead): left out of activity_calendar and the as-of date';
COMMENT ON COLUMN future_activities.athlete_id IS 'The athlete';
COMMENT ON COLUMN future_activities.activity_id IS 'The activity, left out of the analyses';
COMMENT ON COLUMN future_activities.start_date IS 'Its start as the service sent it (UTC)';
COMMENT ON COLUMN future_activities.listed_at IS 'When fitsync received it (UTC), before its start';
COMMENT ON VIEW activity_normalized_power IS 'Per activity with a power stream: normalized power computed from the stream (Coggan), beside the service''s weighted_average_watts, and IF on the FTP of its date';
COMMENT ON COLUMN activity_normalized_power.athlete_id IS 'The athlete';
COMMENT ON COLUMN activity_normalized_power.activity_id IS 'The activity';
COMMENT ON COLUMN activity_normalized_power.local_date IS 'Local date of the activity';
COMMENT ON COLUMN activity_normalized_power.recorded_s IS 'Recorded seconds (activity_stream_seconds not paused) the figures are over';
COMMENT ON COLUMN activity_normalized_power.average_watts IS 'Mean power over the recorded seconds, watts';
COMMENT ON COLUMN activity_normalized_power.np_watts IS 'Normalized power: 4th root of the mean 4th power of the 30-s rolling mean (from the 30th second), watts';
COMMENT ON COLUMN activity_normalized_power.service_np_watts IS 'The service''s weighted_average_watts';
COMMENT ON COLUMN activity_normalized_power.service_average_watts IS 'The service''s average_watts';
COMMENT ON COLUMN activity_normalized_power.ftp IS 'FTP in force on the local date (ftp_timeline), watts; NULL for a sport type without power_tss (a run''s power pod)';
COMMENT ON COLUMN activity_normalized_power.ftp_source IS 'history, profile, or known_later (before the first known FTP: the first one); NULL without an FTP';
COMMENT ON COLUMN activity_normalized_power.intensity_factor IS 'np_watts / ftp';
COMMENT ON COLUMN activity_normalized_power.variability_index IS 'np_watts / average_watts';

COMMENT ON VIEW w_prime_balance IS 'W'' balance per activity and second (Skiba et al. 2012, integral model) on the CP and W'' of the critical-power fit, cycling sport types (power_tss) only: filter by activity_id';
COMMENT ON COLUMN w_prime_balance.athlete_id IS 'The athlete';
COMMENT ON COLUMN w_prime_balance.activity_id IS 'The activity';
COMMENT ON COLUMN w_prime_balance.local_date IS 'Local date of the activity';
COMMENT ON COLUMN w_prime_balance.second IS 'Seconds from the start (activity_stream_seconds)';
COMMENT ON COLUMN w_prime_balance.watts IS 'Power that second, watts (0 in a pause)';
COMMENT ON COLUMN w_prime_balance.cp_watts IS 'Critical power used, watts (critical_power)';
COMMENT ON COLUMN w_prime_balance.w_prime_j IS 'W'' used, joules';
COMMENT ON COLUMN w_prime_balance.tau_s IS 'Recovery time constant: 546 * exp(-0.01 * (CP - mean power below CP)) + 316, seconds';
COMMENT ON COLUMN w_prime_balance.cp_source IS 'season (the activity''s season, season_start_month, has a fit) or all time';
COMMENT ON COLUMN w_prime_balance.w_prime_balance_j IS 'W'' - the sum of each earlier second''s power above CP decayed by exp(-(t - u) / tau), joules';

COMMENT ON VIEW w_prime_balance_summary IS 'Per activity: the lowest W'' balance, when it was reached and the share of W'' used';
COMMENT ON COLUMN w_prime_balance_summary.athlete_id IS 'The athlete';
COMMENT ON COLUMN w_prime_balance_summary.activity_id IS 'The activity';
COMMENT ON COLUMN w_prime_balance_summary.local_date IS 'Local date of the activity';
COMMENT ON COLUMN w_prime_balance_summary.cp_watts IS 'Critical power used, watts';
COMMENT ON COLUMN w_prime_balance_summary.w_prime_j IS 'W'' used, joules';
COMMENT ON COLUMN w_prime_balance_summary.tau_s IS 'Recovery time constant, seconds';
COMMENT ON COLUMN w_prime_balance_summary.cp_source IS 'season or all time';
COMMENT ON COLUMN w_prime_balance_summary.min_w_prime_balance_j IS 'Lowest W'' balance, joules';
COMMENT ON COLUMN w_prime_balance_summary.min_at_s IS 'Second it was first reached';
COMMENT ON COLUMN w_prime_balance_summary.w_prime_used IS '1 - min_w_prime_balance_j / w_prime_j: the share of W'' spent at the lowest point';

COMMENT ON VIEW stream_decoupling IS 'Per activity with heart rate: Pa:HR decoupling from the streams, first against second half of the moving time after the warm-up';
COMMENT ON COLUMN stream_decoupling.athlete_id IS 'The athlete';
COMMENT ON COLUMN stream_decoupling.activity_id IS 'The activity';
COMMENT ON COLUMN stream_decoupling.local_date IS 'Local date of the activity';
COMMENT ON COLUMN stream_decoupling.sport_family IS 'The activity''s sport family';
COMMENT ON COLUMN stream_decoupling.decoupling_note IS 'ok, or why decoupling_pct is NULL: too short after the warm-up (decoupling_min_s), a ride without power (speed follows wind and terrain), or no output in both halves (heart rate alone: weight training, yoga)';
COMMENT ON COLUMN stream_decoupling.output_kind IS 'power (a power_tss sport type with a power stream) or speed (metres per minute)';
COMMENT ON COLUMN stream_decoupling.moving_time_s IS 'Moving seconds after the warm-up (decoupling_warmup_s)';
COMMENT ON COLUMN stream_decoupling.first_half_output IS 'Mean output over the first half';
COMMENT ON COLUMN stream_decoupling.first_half_hr IS 'Mean heart rate over the first half';
COMMENT ON COLUMN stream_decoupling.second_half_output IS 'Mean output over the second half';
COMMENT ON COLUMN stream_decoupling.second_half_hr IS 'Mean heart rate over the second half';
COMMENT ON COLUMN stream_decoupling.first_half_ef IS 'first_half_output / first_half_hr';
COMMENT ON COLUMN stream_decoupling.second_half_ef IS 'second_half_output / second_half_hr';
COMMENT ON COLUMN stream_decoupling.decoupling_pct IS '(first_half_ef - second_half_ef) / first_half_ef * 100; NULL when decoupling_note is not ok';

COMMENT ON VIEW stream_best_efforts IS 'Fastest 400 m to marathon of runs per athlete and season (0 = all time), from the distance stream with interpolation at both ends';
COMMENT ON COLUMN stream_best_efforts.athlete_id IS 'The athlete';
COMMENT ON COLUMN stream_best_efforts.season IS 'Year the season starts in (season_start_month); 0 = all time';
COMMENT ON COLUMN stream_best_efforts.distance_m IS 'The distance (analysis_best_effort_distances), metres';
COMMENT ON COLUMN stream_best_efforts.label IS 'How the distance is shown';
COMMENT ON COLUMN stream_best_efforts.best_time_s IS 'Shortest elapsed time covering the distance in one run, seconds (interpolated)';
COMMENT ON COLUMN stream_best_efforts.pace_s_per_km IS 'best_time_s per kilometre, seconds';
COMMENT ON COLUMN stream_best_efforts.activity_id IS 'The run (the earliest on a tie)';
COMMENT ON COLUMN stream_best_efforts.local_date IS 'Local date of the run';
COMMENT ON COLUMN stream_best_efforts.start_s IS 'When the effort started, seconds from the run''s start';
COMMENT ON COLUMN stream_best_efforts.runs IS 'Runs of the season that covered the distance';

COMMENT ON VIEW stream_zone_seconds IS 'Per activity, zone type and zone: seconds in the athlete''s heart-rate and power zones (power: cycling sport types, power_tss) from the streams, beside the service''s bucket';
COMMENT ON COLUMN stream_zone_seconds.athlete_id IS 'The athlete';
COMMENT ON COLUMN stream_zone_seconds.activity_id IS 'The activity';
COMMENT ON COLUMN stream_zone_seconds.local_date IS 'Local date of the activity';
COMMENT ON COLUMN stream_zone_seconds.zone_type IS 'heartrate or power';
COMMENT ON COLUMN stream_zone_seconds.zone IS 'Zone number, 1-based from the lowest';
COMMENT ON COLUMN stream_zone_seconds.zone_min IS 'Lower bound (bpm or watts) of the athlete''s zone in force on the local date';
COMMENT ON COLUMN stream_zone_seconds.zone_max IS 'Upper bound; -1 means no upper bound';
COMMENT ON COLUMN stream_zone_seconds.seconds IS 'Recorded seconds with zone_min <= value < zone_max';
COMMENT ON COLUMN stream_zone_seconds.service_seconds IS 'The service''s seconds in that zone (activity_zone_buckets); NULL when it sent none';
