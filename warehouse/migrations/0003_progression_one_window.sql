-- segment_effort_progression with one window aggregate instead of two: the running best is the lesser of the
-- effort and the previous best (DuckDB's least() skips NULL), so only previous_best needs a window frame.
-- Same columns, types, rows and order as in 0002; about 15% faster over 250k efforts (bench/query.py).
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
