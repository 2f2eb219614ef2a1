"""Per-second analysis of the streams: the one resampling rule every stream analysis stands on, and each activity's
mean-maximal power and speed, computed once when its samples are written (warehouse/streams.write) and kept in Parquet
beside them.

**Resampling to one second** (`resampled`, the view `activity_stream_seconds`). The service's samples are one a
second from a device recording every second (the sandbox), but often every 1-5 s ("smart recording") and with gaps;
so every analysis works on time, never on sample counts. Between two consecutive samples at t₀ < t₁, the seconds
t₀ … t₁ − 1 are filled as GoldenCheetah's "Fix Gaps in Recording" fills them (`FixGaps.cpp`, default stop 90 s):

- when the seconds missing between them (t₁ − t₀ − 1) are at most MAX_GAP_S (90), every channel is interpolated
  linearly (a dropped sensor, smart recording): those seconds are recorded time;
- a longer gap is a pause (auto-pause, a stop): its seconds have power 0 and speed 0 (NULL in an activity without that
  channel: a pause says nothing of a power meter there was not), no heart rate, `paused` true and are not moving;
  distance is interpolated across it, as GoldenCheetah does;
- so is a gap of at least STOP_MIN_S missing seconds over which the athlete stood still (the distance moved less than
  STOP_SPEED a second: a red light, auto-pause at a junction), whatever its length — GoldenCheetah's `stationary`
  rule, on the distance stream: interpolated, a standing start after a stop made up to 90 s of invented power.

Two samples with the same time keep the later one; the last sample is its own second. So a 3-second-sampled ride
becomes three seconds per sample, and a café stop of 20 minutes is 20 minutes of zeros.

**Mean-maximal power and speed** (`compute`, the view `activity_mmp`): for each duration D of DURATIONS (1 s … 5 h)
the best average power over any D consecutive seconds of that series — paused seconds count as 0 W, so no window
takes a stop for an effort (GoldenCheetah's mean-max on its gap-fixed 1-s data) — and the best average speed
(distance covered in D seconds / D). With one cumulative sum per activity, a window's total is a difference of two
sums: per answer, one slice difference per duration over its 1-s series (`seconds`: the rule of `resampled` in Polars,
over the frame the fetch step wrote; a test holds the two equal).
Each best window's first second and the sample it comes from are kept (`start_s`, `start_sample`).

Files: `activity_mmp/athlete=<id>/month=<YYYY-MM>/<uuid>.parquet`, written by `streams.write` after the month's
samples and before its answers file (the answers file stays the record that everything of the activity is stored).
"""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

FOLDER = "activity_mmp"
VIEW = "activity_mmp"
SECONDS_VIEW = "activity_stream_seconds"
# Missing seconds between two samples up to which the channels are interpolated; a longer gap is a pause
# (GoldenCheetah's Fix Gaps in Recording, its default `stop`).
MAX_GAP_S = 90
# A gap of at least this many missing seconds (longer than smart recording's) over which the distance moved less than
# STOP_SPEED metres a second (slower than any walk: GPS drift at a standstill) is a stop, whatever its length.
STOP_MIN_S = 10
STOP_SPEED = 0.5
# The durations of each activity's mean-maximal power and speed: every second to 10 s, then about logarithmic to 5 h
# (with every duration of analysis_power_durations, so the power-duration curve finds each of them).
DURATIONS: tuple[int, ...] = (
    *range(1, 11),
    12, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 360, 480, 600, 720, 900, 1200, 1800, 2400, 2700,
    3600, 5400, 7200, 10800, 14400, 18000,
)  # fmt: skip

SCHEMA: dict[str, Any] = {
    "activity_id": pl.Int64,
    "fetched_us": pl.Int64,
    "duration_s": pl.Int32,
    "watts": pl.Float64,
    "watts_start_s": pl.Int32,
    "watts_start_sample": pl.Int32,
    "speed": pl.Float64,
    "speed_start_s": pl.Int32,
    "speed_start_sample": pl.Int32,
}


# The interpolated channels of the 1-s series: (the stream's column, what a paused second holds).
INTERPOLATED: dict[str, tuple[str, str]] = {
    "watts": ("watts", "0"),
    "heartrate": ("heartrate", "NULL"),
    "speed": ("velocity_smooth", "0"),
}


def resampled(
    source: str, keys: str = "activity_id, fetched_us", channels: tuple[str, ...] = tuple(INTERPOLATED)
) -> str:
    """The query of the 1-s series (the rule in the module's docstring) over `source`, a relation with the columns of
    activity_streams (activity_id, sample, time, distance, watts, heartrate, velocity_smooth, moving) and `keys`;
    `channels`: those of INTERPOLATED it holds (the MMP's needs only power: each channel costs its own window). Each
    answer (`keys`) is its own series: two answers of one activity are never interleaved."""
    values = "".join(f", CAST({INTERPOLATED[c][0]} AS DOUBLE) AS {c}" for c in channels)
    leads = "".join(f", CAST(lead({INTERPOLATED[c][0]}) OVER w AS DOUBLE) AS next_{c}" for c in channels)
    # whether the activity has the channel at all, on the window the leads are on (one sort for both)
    held = "".join(
        f", count({INTERPOLATED[c][0]}) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) > 0 AS has_{c}"
        for c in channels
        if INTERPOLATED[c][1] != "NULL"
    )
    seconds = "".join(
        f""",
       CASE WHEN k = 0 THEN {c} WHEN pause_after THEN {_paused(c)}
            ELSE coalesce({c} + (next_{c} - {c}) * k / span, {c}) END AS {c}"""
        for c in channels
    )
    return f"""WITH ordered AS (
    SELECT {keys}, sample, time, distance, moving{values},
           lead(time) OVER w AS next_time, lead(distance) OVER w AS next_distance{leads}{held}
    FROM {source}
    WHERE time IS NOT NULL
    WINDOW w AS (PARTITION BY {keys} ORDER BY sample)
), spans AS (
    SELECT *, coalesce(next_time - time, 1) AS span,
           coalesce(next_time - time, 1) - 1 > {MAX_GAP_S}
               OR coalesce(next_time - time - 1 >= {STOP_MIN_S}
                           AND next_distance - distance < {STOP_SPEED} * (next_time - time), false) AS pause_after
    FROM ordered
), seconds AS (  -- a sample a second (most) is its own second: only the others are unnested into their seconds
    SELECT *, 0 AS k FROM spans WHERE span = 1
    UNION ALL
    SELECT *, unnest(range(CAST(greatest(span, 0) AS BIGINT))) AS k FROM spans WHERE span <> 1
)
SELECT {keys}, CAST(time + k AS INTEGER) AS second, sample,
       k > 0 AND pause_after AS paused,
       NOT (k > 0 AND pause_after) AND coalesce(moving, true) AS moving{seconds},
       coalesce(distance + (next_distance - distance) * k / span, distance) AS distance
FROM seconds"""


def _paused(channel: str) -> str:
    """What a paused second holds of a channel: INTERPOLATED's value where the activity has the channel, else NULL."""
    value = INTERPOLATED[channel][1]
    return value if value == "NULL" else f"CASE WHEN has_{channel} THEN {value} END"


# An answer: one activity's samples as fetched at one time (two answers of an activity are two series).
ANSWER = ["activity_id", "fetched_us"]


def compute(samples: pl.DataFrame) -> pl.DataFrame:
    """Each answer's mean-maximal power and speed on DURATIONS, from `samples` (streams.SOURCE_SCHEMA's columns: the
    answers one after the other, each in sample order, as the fetch step framed them). The 1-s series comes from
    `seconds`; the windows are differences of slices of one cumulative sum per answer (`_best`): ≈ 5× less work than a
    column per duration over the whole frame, measured on 40 rides (bench/streams.py)."""
    rows = [row for one in seconds(samples).partition_by(ANSWER, maintain_order=True) for row in _best(one)]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row").sort(*ANSWER, "duration_s")


def seconds(samples: pl.DataFrame) -> pl.DataFrame:
    """The 1-s series (ANSWER's columns, second, sample, watts, distance) of answers in sample order, one after the
    other: the rule of `resampled` (its power) in Polars, for the whole chunk of answers at once. The view's DuckDB
    windows sorted the chunk again: ≈ 95 ms of 155 for the MMP of 40 sandbox rides, this ≈ 20. A sample a second is
    its own second; only the seconds after a sample further from the next are made (few), put in place by a merge on
    the sample's position, not a sort."""
    timed = samples.select(*ANSWER, "sample", "time", "distance", pl.col("watts").cast(pl.Float64)).filter(
        pl.col("time").is_not_null()
    )
    same = pl.all_horizontal(pl.col(c).shift(-1) == pl.col(c) for c in ANSWER)  # the next row is of this answer
    span = pl.col("span")
    timed = timed.with_row_index("at").with_columns(
        span=pl.when(same).then(pl.col("time").shift(-1) - pl.col("time")).otherwise(1.0),
        next_watts=pl.when(same).then(pl.col("watts").shift(-1)),
        next_distance=pl.when(same).then(pl.col("distance").shift(-1)),
    )
    order = pl.col("at").cast(pl.Int64) * 2**32  # a sample's place; its k-th second after it, + k
    own = timed.filter(span > 0).select(  # a later sample at the same time (or before) replaces it
        order.alias("order"), *ANSWER, pl.col("time").cast(pl.Int32).alias("second"), "sample", "watts", "distance"
    )
    spread = timed.filter(span > 1)
    powered = timed.lazy().group_by(ANSWER).agg(pl.col("watts").count() > 0).collect()
    k = pl.col("k")

    def between(column: str) -> pl.Expr:
        value = pl.col(column)
        return pl.coalesce(value + (pl.col(f"next_{column}") - value) * k / span, value)

    filled = (
        spread.join(powered, on=ANSWER, how="left", suffix="_held", maintain_order="left")  # merged by its order
        .with_columns(k=pl.int_ranges(1, span.cast(pl.Int64)))
        .explode("k")
        .select(
            (order + k).alias("order"),
            *ANSWER,
            (pl.col("time") + k).cast(pl.Int32).alias("second"),
            "sample",
            pl.when(_stopped(span, pl.col("distance"), pl.col("next_distance")))
            .then(pl.when(pl.col("watts_held")).then(0.0))
            .otherwise(between("watts"))
            .alias("watts"),
            between("distance").alias("distance"),
        )
    )
    return own.merge_sorted(filled, key="order").drop("order")


def _stopped(span: pl.Expr, distance: pl.Expr, next_distance: pl.Expr) -> pl.Expr:
    """Whether the seconds after a sample are a pause: `resampled`'s rule (a gap longer than MAX_GAP_S, or a stop)."""
    still = (span - 1 >= STOP_MIN_S) & (next_distance - distance < STOP_SPEED * span)
    return (span - 1 > MAX_GAP_S) | still.fill_null(False)


def _best(one: pl.DataFrame) -> list[tuple[Any, ...]]:
    """One answer's rows of SCHEMA, from its 1-s series in time order (an answer whose time goes back is not framed:
    sync/stream_answers). With P the running total of power from 0, the best D seconds of power is the largest
    P[i + D] − P[i], starting at second i; speed likewise from distance."""
    n = one.height
    activity_id, fetched_us = one["activity_id"][0], one["fetched_us"][0]
    second, sample = one["second"], one["sample"]
    watts, distance = one["watts"], one["distance"]
    power = None if watts.null_count() == n else pl.concat([pl.Series([0.0]), watts.fill_null(0).cum_sum()])
    has_distance = distance.null_count() < n
    rows = []
    for d in DURATIONS:
        best_watts = best_speed = None
        if power is not None and n >= d:
            best_watts = _largest(power.slice(d) - power.slice(0, n + 1 - d))
        if has_distance and n > d:
            best_speed = _largest(distance.slice(d) - distance.slice(0, n - d))
        if best_watts is None and best_speed is None:
            continue
        rows.append(
            (
                activity_id,
                fetched_us,
                d,
                *(
                    (None, None, None)
                    if best_watts is None
                    else (best_watts[0] / d, second[best_watts[1]], sample[best_watts[1]])
                ),
                *(
                    (None, None, None)
                    if best_speed is None
                    else (best_speed[0] / d, second[best_speed[1]], sample[best_speed[1]])
                ),
            )
        )
    return rows


def _largest(windows: pl.Series) -> tuple[float, int] | None:
    """The largest value and its first position; None when every value is NULL."""
    at = windows.arg_max()
    return None if at is None else (windows[at], at)


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def create_views(conn: duckdb.DuckDBPyConnection, answers_glob: str, quoted: str) -> None:
    """`activity_mmp` over this warehouse's MMP files (the latest answer of each activity still in `activities`) and
    `activity_stream_seconds` over `activity_streams`. `quoted`: the files' glob, quoted for SQL."""
    # Best power of 0 W is none: an answer with power above 0 W anywhere has more than 0 W at every duration. Files
    # written before a pause without a power meter was NULL (it was 0 W there) are read as they are written now.
    conn.execute(f"""CREATE OR REPLACE VIEW {VIEW} AS
        SELECT m.activity_id, a.athlete_id, m.duration_s,
               {", ".join(f"CASE WHEN {POWERED} THEN m.{c} END AS {c}" for c in ("watts", "watts_start_s", "watts_start_sample"))},
               m.speed, m.speed_start_s, m.speed_start_sample
        FROM read_parquet('{quoted}', hive_partitioning = false) m
        JOIN (SELECT activity_id, max(fetched_us) AS fetched_us
              FROM read_parquet('{answers_glob}', hive_partitioning = false) GROUP BY ALL) r
          ON r.activity_id = m.activity_id AND r.fetched_us = m.fetched_us
        JOIN activities a ON a.activity_id = m.activity_id
        ORDER BY a.athlete_id, m.activity_id, m.duration_s""")
    conn.execute(
        f"CREATE OR REPLACE VIEW {SECONDS_VIEW} AS SELECT * FROM ("
        f"{resampled('activity_streams', 'activity_id, athlete_id')}) ORDER BY athlete_id, activity_id, second"
    )
    conn.execute(
        f"COMMENT ON VIEW {VIEW} IS 'Each activity''s mean-maximal power and speed on a grid of durations (1 s to "
        "5 h), computed once when its streams were written (warehouse/stream_mmp.py): read from "
        "<warehouse>.documents/activity_mmp/'"
    )
    conn.execute(
        f"COMMENT ON VIEW {SECONDS_VIEW} IS 'Each activity''s streams resampled to one row per second: gaps of up to "
        f"{MAX_GAP_S} missing seconds interpolated, longer ones and stops (the distance still over {STOP_MIN_S} s or "
        "more) a pause (power and speed 0 where the activity has them), as GoldenCheetah fixes gaps; every stream "
        "analysis reads it'"
    )
    lake = conn.execute("SELECT type FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    if lake == [("ducklake",)]:  # DuckLake keeps no comment on a view's columns
        return
    for view, column, text in COLUMNS:
        conn.execute(f"COMMENT ON COLUMN {view}.{column} IS '{text.replace(chr(39), chr(39) * 2)}'")


# A word only each view's current definition holds: a view an earlier fitsync made (a pause without a power meter
# read as 0 W) is made again by the next migrate.
POWERED = "m.watts > 0"
STOPS = f"< {STOP_SPEED} * (next_time - time)"  # the view of the seconds with stops (RULE 2)
DEFINED = {VIEW: POWERED, SECONDS_VIEW: STOPS}
# The resampling rule the MMP files were computed by: files of an earlier one are computed again from the stored
# samples (streams.rebuild_mmp). 2: stops (STOP_MIN_S, STOP_SPEED) are pauses.
RULE = 2


def current(found: dict[str, str | None], quoted_folder: str) -> bool:
    """Whether both views exist over this warehouse's folder (not the empty stand-ins of analysis_views.sql), as this
    version defines them."""
    mmp, seconds = found.get(VIEW) or "", found.get(SECONDS_VIEW) or ""
    return (
        quoted_folder in mmp
        and DEFINED[VIEW] in mmp
        and "activity_streams" in seconds
        and DEFINED[SECONDS_VIEW] in seconds
    )


COLUMNS: tuple[tuple[str, str, str], ...] = (
    (VIEW, "activity_id", "The activity"),
    (VIEW, "athlete_id", "Its athlete"),
    (VIEW, "duration_s", "The window, seconds (1-10 every second, then about logarithmic to 18000)"),
    (VIEW, "watts", "Best average power over any window of duration_s seconds (paused seconds count 0 W); NULL without power"),
    (VIEW, "watts_start_s", "First second (the time axis: seconds from the start) of that best window"),
    (VIEW, "watts_start_sample", "The sample that second comes from (activity_streams.sample)"),
    (VIEW, "speed", "Best average speed over any window of duration_s seconds, m/s (distance covered / duration_s); NULL without distance"),
    (VIEW, "speed_start_s", "Start of that best window, seconds from the start"),
    (VIEW, "speed_start_sample", "The sample that second comes from"),
    (SECONDS_VIEW, "activity_id", "The activity"),
    (SECONDS_VIEW, "athlete_id", "Its athlete"),
    (SECONDS_VIEW, "second", "Seconds from the start (the time stream's axis)"),
    (SECONDS_VIEW, "sample", "The sample at or before this second (activity_streams.sample)"),
    (
        SECONDS_VIEW,
        "paused",
        f"Whether the second lies in a pause: a gap of more than {MAX_GAP_S} missing seconds, or of {STOP_MIN_S} or "
        f"more over which the distance moved under {STOP_SPEED} m/s (a stop)",
    ),
    (SECONDS_VIEW, "moving", "Not paused, and the stream's moving flag (true without one)"),
    (SECONDS_VIEW, "watts", "Power, interpolated between samples; 0 in a pause; NULL without power"),
    (SECONDS_VIEW, "heartrate", "Heart rate, interpolated between samples; NULL in a pause or without heart rate"),
    (SECONDS_VIEW, "speed", "velocity_smooth interpolated, m/s; 0 in a pause; NULL without velocity_smooth"),
    (SECONDS_VIEW, "distance", "Metres from the start, interpolated (across pauses too)"),
)  # fmt: skip
