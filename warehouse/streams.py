"""Activity streams (per-second samples) in Parquet files beside the warehouse, one file per athlete, month and write,
and the views over them: `activity_streams` (one row per activity and sample) and `activity_stream_answers` (one row
per activity: what the service answered, whole, and what became of it).

Why Parquet files and not a DuckDB table: measured on the sandbox's streams (five rides and runs of 1–4 h, every
channel, 41,405 samples, written 20 times over: 828k samples), the samples take 0.65 bytes per sample and channel in
Parquet (zstd, format v2: time, distance and latlng delta-coded integers, the sensor channels dictionary-coded small
ints; 1.36 with format v1, 1.79 as doubles) and 1.79 in a DuckDB table of the same compact types; the raw answers,
zstd-compressed beside them, 1.48 more (2.13 in all, against 6.4 for the JSON). Above all the files are written by the
fetch step alone, without the warehouse's one writer: a history's streams take days to fetch under the real limits,
and a step holding the DuckDB file that long would block every other load. Nothing is ever rewritten (a checkpoint
never re-reads them: memory stays flat in history length), and a purge deletes folders.

Exact compact types: a channel is stored as the type the service's values fit exactly (distance in centimetres,
latlng in micro-degrees, heart rate as a small int, …: CHANNELS); a value that does not fit (more decimals, out of
range), a channel fitsync does not know, a channel of another length than `time`, or an answer of another shape
leaves that channel (or the whole answer) out of the samples: it is in the raw answer, and the load says so.

Layout, under the documents' folder (documents.root: `<warehouse>.documents/`, or the lake's data path):
`activity_streams/athlete=<id>/month=<YYYY-MM>/<uuid>.parquet` (samples) and `activity_stream_answers/…` (one row per
answer), and `activity_mmp/…` (each activity's mean-maximal power and speed, computed from the samples as they are
written: stream_mmp.py). Each file appears whole (written under a temporary name, then renamed); the samples of a write
(then their MMP) go first and its answers file last, so an answers row is the record that the activity's streams are
stored: a write cut short leaves samples no answer names (the view leaves them out) and the activity still waiting, never the reverse. The view
shows an activity's latest answer and only while the activity is in `activities` (a deleted one's streams vanish).
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from . import db, documents, stream_mmp, stream_queue
from .plausible import RANGES, Range
from .stream_queue import ANSWERS, SAMPLES, SCHEMA_FILE, WANTED, quoted, waiting  # noqa: F401 (where callers find them)


@dataclass(frozen=True)
class Channel:
    """A stored column: the service's stream it comes from, its compact type on disk, the values it may hold, and
    what it means."""

    column: str
    stream: str
    stored: str  # the DuckDB type written to Parquet
    scale: int | None  # decimals kept: a value with more is not stored (None: a boolean)
    plausible: Range | None  # a value outside it is not stored (a heart rate of 5,000, −500 W): NULL, said
    shown: str  # the view's type
    what: str

    @property
    def compact(self) -> pl.DataType:
        """`stored` as Polars' type, which the samples are cast to before they are written."""
        if self.stored.startswith("DECIMAL("):
            precision, scale = self.stored.removeprefix("DECIMAL(").removesuffix(")").split(",")
            return pl.Decimal(int(precision), int(scale))
        return _POLARS_TYPES[self.stored]

    @property
    def comment(self) -> str:
        return self.what if self.plausible is None else f"{self.what}; {self.plausible.text()} ({self.plausible.why})"


_POLARS_TYPES: dict[str, pl.DataType] = {"INTEGER": pl.Int32(), "SMALLINT": pl.Int16(), "BOOLEAN": pl.Boolean()}


MAX_TIME_S = 30 * 86_400
# Each range within what the compact type holds, and the same as the activity's own column of that kind (plausible).
CHANNELS = (
    # A time no recording reaches is refused: each second of a pause is a row of the 1-s series (stream_mmp), and one
    # time of 2 billion made as many of them, more than a machine's memory.
    Channel(
        "time",
        "time",
        "INTEGER",
        0,
        Range(0, MAX_TIME_S, "30 days, more than any recording lasts"),
        "INTEGER",
        "Seconds since the start (stops are jumps)",
    ),
    Channel("distance", "distance", "DECIMAL(12,2)", 2, RANGES["distance"], "DOUBLE", "Metres since the start"),
    Channel("lat", "latlng", "DECIMAL(9,6)", 6, RANGES["start_lat"], "DOUBLE", "Latitude, degrees"),
    Channel("lng", "latlng", "DECIMAL(9,6)", 6, RANGES["start_lng"], "DOUBLE", "Longitude, degrees"),
    Channel("altitude", "altitude", "DECIMAL(8,2)", 2, RANGES["elev_high"], "DOUBLE", "Metres above sea level"),
    Channel(
        "velocity_smooth", "velocity_smooth", "DECIMAL(8,3)", 3, RANGES["max_speed"], "DOUBLE", "Smoothed speed, m/s"
    ),
    Channel(
        "heartrate", "heartrate", "SMALLINT", 0, RANGES["max_heartrate"], "SMALLINT", "Heart rate, beats per minute"
    ),
    Channel(
        "cadence",
        "cadence",
        "SMALLINT",
        0,
        RANGES["average_cadence"],
        "SMALLINT",
        "Cadence, rpm (runs: steps per minute / 2)",
    ),
    Channel(
        "watts",
        "watts",
        "SMALLINT",
        0,
        RANGES["max_watts"],
        "SMALLINT",
        "Power, watts (a power meter's: never estimated)",
    ),
    Channel("temp", "temp", "SMALLINT", 0, RANGES["average_temp"], "SMALLINT", "Temperature, °C"),
    Channel("moving", "moving", "BOOLEAN", None, None, "BOOLEAN", "Whether the athlete was moving"),
    Channel(
        "grade_smooth",
        "grade_smooth",
        "DECIMAL(8,2)",
        2,
        Range(-1_000, 1_000, "ten times a 45° slope: a GPS glitch over a few metres, never a road"),
        "DOUBLE",
        "Smoothed grade, percent",
    ),
)
STREAMS = tuple(dict.fromkeys(c.stream for c in CHANNELS))  # the streams fitsync asks for and stores, in order
# What an answers row says became of the answer.
RECEIVED = "received"  # not yet framed (sync/stream_answers.framed): never written
STATUSES = STORED, PART_STORED, KEPT_RAW, NO_STREAMS, SHORT, NOT_FOUND, REFUSED, TOO_LARGE = (
    "stored",  # every channel in the samples
    "partly stored",  # some channels or values only: what was left out is in the raw answer (see problems)
    "kept raw",  # an answer of a shape fitsync does not know: nothing in the samples
    stream_queue.NO_STREAMS,  # an empty answer, for an activity with a recording: asked again (stream_queue.ASKS)
    stream_queue.SHORT,  # fewer samples than original_size, ending before the activity: none stored, asked again
    "not found",  # 404: the activity has no streams, or is gone
    "refused",  # a scope not granted (an Only You activity without activity:read_all)
    "too large",  # larger than the max_response_bytes setting: not read, nothing kept (see problems)
)


@dataclass
class Answer:
    """One activity's answer, ready to write: `frame` holds its samples (the source columns of SOURCE_SCHEMA)."""

    activity_id: int
    start: datetime | None
    fetched_us: int
    status: str
    raw: str | None
    frame: pl.DataFrame | None = None
    channels: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    # The quotes, `null`s, booleans and backslashes of `raw`, counted as it arrived (sync/stream_answers.tokens): on
    # the fetching thread, which waits for the service, not on the framing thread, which is what holds a load back.
    tokens: tuple[int, int, int, int] | None = None
    # The activity's elapsed time, as the warehouse has it: an answer whose samples end well before it, with fewer
    # than the service counts, was cut short (stream_answers._short); a downsampled one spans it all.
    elapsed_s: int | None = None

    @property
    def samples(self) -> int:
        return 0 if self.frame is None else self.frame.height

    @property
    def month(self) -> str:
        return self.start.strftime("%Y-%m") if self.start else "unknown"


# The samples as the fetch step frames them (polars): every channel as its JSON values read, before the compact types.
SOURCE_SCHEMA: dict[str, Any] = {
    "activity_id": pl.Int64,
    "fetched_us": pl.Int64,
    "sample": pl.Int32,
    **{c.column: pl.Boolean if c.stored == "BOOLEAN" else pl.Float64 for c in CHANNELS},
}
# The samples as written: every channel in its compact type (cast by Polars: DuckDB's casts from DOUBLE to DECIMAL
# took 3× as long).
STORED_SCHEMA: dict[str, Any] = {
    "activity_id": pl.Int64,
    "fetched_us": pl.Int64,
    "sample": pl.Int32,
    **{c.column: c.compact for c in CHANNELS},
}
_ANSWER_SCHEMA: dict[str, Any] = {
    "activity_id": pl.Int64,
    "athlete_id": pl.Int64,
    "fetched_us": pl.Int64,
    "status": pl.String,
    "samples": pl.Int32,
    "channels": pl.List(pl.String),
    "problems": pl.List(pl.String),
    "raw": pl.String,
}


def folders(root: Path) -> tuple[Path, Path]:
    """(samples, answers) folders under the documents' folder."""
    return root / SAMPLES, root / ANSWERS


def prepare(root: Path) -> None:
    """Both folders with their schema file, so the views and the queue read something before the first write."""
    empty = {
        SAMPLES: pl.DataFrame(schema=STORED_SCHEMA),
        ANSWERS: pl.DataFrame(schema=_ANSWER_SCHEMA),
        stream_mmp.FOLDER: stream_mmp.empty(),
    }
    for name, frame in empty.items():
        base = root / name
        base.mkdir(parents=True, exist_ok=True)
        if not (base / SCHEMA_FILE).exists():
            _write(frame, base / SCHEMA_FILE)


RULE_FILE = "rule"  # in the MMP folder: the stream_mmp.RULE its files were computed by
LOCK_FILE = ".lock"  # in the MMP folder: a write and a rebuild never interleave


@contextlib.contextmanager
def mmp_lock(root: Path) -> Iterator[None]:
    """An advisory lock on the MMP folder (the kernel drops it with the process): a stream write between a rebuild's
    listing and its removal would leave an activity's MMP twice, two migrates at once every activity's."""
    folder = root / stream_mmp.FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+b") as lock:
        with contextlib.suppress(OSError):  # a shared folder without locks (some NFS): the write goes on unlocked
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield


def rebuild_mmp(root: Path) -> int:
    """Every athlete-month's mean-maximal power computed again from its stored samples when the MMP files were
    computed by an earlier resampling rule (stream_mmp.RULE): a corrected rule reaches the history, not only the
    answers written after it. Returns the months computed again."""
    folder = root / stream_mmp.FOLDER
    marker = folder / RULE_FILE
    if marker.exists() and marker.read_text().strip() == str(stream_mmp.RULE):
        return 0
    with mmp_lock(root):
        if marker.exists() and marker.read_text().strip() == str(stream_mmp.RULE):
            return 0  # another process rebuilt it meanwhile
        return _rebuild(root, folder, marker)


def _rebuild(root: Path, folder: Path, marker: Path) -> int:
    months = 0
    for month in sorted((root / SAMPLES).glob("athlete=*/month=*")):
        stored = sorted(month.glob("*.parquet"))
        if not stored:
            continue
        target = folder / month.relative_to(root / SAMPLES)
        old = sorted(target.glob("*.parquet"))
        samples = (
            pl.read_parquet(stored)
            .select(pl.col(name).cast(kind) for name, kind in SOURCE_SCHEMA.items())
            .sort("activity_id", "fetched_us", "sample")
        )
        _write(stream_mmp.compute(samples), _fresh(target))
        for file in old:
            file.unlink(missing_ok=True)
        months += 1
    marker.write_text(f"{stream_mmp.RULE}\n")
    return months


def write(root: Path, athlete_id: int, answers: list[Answer]) -> int:
    """Write these answers (framed: none RECEIVED): `write_samples`, then `write_answers`; returns the samples
    written."""
    best = mean_maximal(answers)
    with mmp_lock(root):  # its samples and MMP files land together, never across a rebuild
        written = write_samples(root, athlete_id, answers)
        write_answers(root, athlete_id, answers, best)
    return written


def mean_maximal(answers: list[Answer]) -> dict[str, pl.DataFrame]:
    """Per month, the answers' mean-maximal power and speed (stream_mmp.compute), for `write_answers`."""
    return {
        month: stream_mmp.compute(pl.concat(frames, how="vertical"))
        for month, group in _by_month(answers).items()
        if (frames := _frames(group))
    }


def write_samples(root: Path, athlete_id: int, answers: list[Answer]) -> int:
    """Per month, the answers' samples file (whole under its final name only once written: until its answers file
    is, no view reads it); returns the samples written."""
    if any(a.status == RECEIVED for a in answers):
        raise ValueError("an answer not framed yet (sync/stream_answers.framed)")
    prepare(root)
    written = 0
    for month, group in _by_month(answers).items():
        if frames := _frames(group):
            target = root / SAMPLES / f"athlete={athlete_id}" / f"month={month}"
            samples = pl.concat(frames, how="vertical", rechunk=False).select(
                pl.col(name).cast(kind) for name, kind in STORED_SCHEMA.items()
            )
            _write(samples, _fresh(target))
            written += sum(f.height for f in frames)
    return written


def write_answers(
    root: Path,
    athlete_id: int,
    answers: list[Answer],
    best: dict[str, pl.DataFrame],
) -> None:
    """After their samples files: per month, the answers' mean-maximal power (`best`: `mean_maximal`'s), then the
    answers file, the record that everything of its activities is whole."""
    prepare(root)
    for month, rows in best.items():
        _write(rows, _fresh(root / stream_mmp.FOLDER / f"athlete={athlete_id}" / f"month={month}"))
    for month, group in _by_month(answers).items():
        rows = pl.DataFrame(
            {
                "activity_id": [a.activity_id for a in group],
                "athlete_id": [athlete_id] * len(group),
                "fetched_us": [a.fetched_us for a in group],
                "status": [a.status for a in group],
                "samples": [a.samples for a in group],
                "channels": [list(a.channels) for a in group],
                "problems": [list(a.problems) for a in group],
                "raw": [a.raw for a in group],
            },
            schema=_ANSWER_SCHEMA,
        )
        # written by Polars, zstd level 1, no statistics: 0.07 s for 40 sandbox answers (22 MB of text) against 0.10 s
        # by DuckDB's COPY and 0.12 s at level 3; 5 % more bytes than level 3
        target = _fresh(root / ANSWERS / f"athlete={athlete_id}" / f"month={month}")
        partial = _partial(target)
        rows.write_parquet(partial, compression="zstd", compression_level=1, statistics=False)
        partial.rename(target)


def _by_month(answers: list[Answer]) -> dict[str, list[Answer]]:
    """The answers per month, in month order."""
    months: dict[str, list[Answer]] = {}
    for answer in sorted(answers, key=lambda a: a.month):
        months.setdefault(answer.month, []).append(answer)
    return months


def _frames(group: list[Answer]) -> list[pl.DataFrame]:
    return [a.frame for a in group if a.frame is not None and a.frame.height]


def scratch() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB for framing streams (sync/stream_answers), with the settings every connection of fitsync's
    has, on one thread: a chunk's few rows of answers give DuckDB nothing to share out, and the stages run beside
    each other."""
    conn = duckdb.connect(config={"threads": 1})
    for statement in db.WORKAROUNDS:
        conn.execute(statement)
    return conn


def _fresh(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{uuid.uuid4().hex}.parquet"


def _partial(target: Path) -> Path:
    """A temporary name beside `target`, one per writer (hosts share folders)."""
    return target.with_name(f".{target.stem}.{uuid.uuid4().hex[:8]}.partial")


def _write(frame: pl.DataFrame, target: Path) -> None:
    """`frame` to `target`, whole: written under a temporary name in the same folder, then renamed. By pyarrow, for
    the encodings of Parquet's version 2 (integers and decimals delta-packed: a second's time, distance or position
    differs little from the one before) with dictionaries off, and zstd at level 1: 40 sandbox answers' samples
    written in ≈ 56 ms and 1.33 MB, against ≈ 100 ms and 1.27 MB by DuckDB (level 3, its casts), 5.5 MB plain."""
    table = frame.to_arrow()
    delta = [f.name for f in table.schema if pa.types.is_integer(f.type) or pa.types.is_decimal(f.type)]
    partial = _partial(target)
    pq.write_table(
        table,
        partial,
        compression="zstd",
        compression_level=1,
        use_dictionary=False,
        column_encoding=dict.fromkeys(delta, "DELTA_BINARY_PACKED"),
        store_decimal_as_integer=True,
        data_page_version="2.0",
        row_group_size=1_000_000,
    )
    partial.rename(target)


# --- reading ------------------------------------------------------------------------------------------------------


def views_current(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether both views exist and read this warehouse's folders (a moved file's views do not)."""
    root = documents.root(conn)
    if root is None:
        return True
    found = dict(
        conn.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() AND NOT internal"
        ).fetchall()
    )
    return all(_quoted(root / name) in (found.get(name) or "") for name in (SAMPLES, ANSWERS)) and stream_mmp.current(
        found, _quoted(root / stream_mmp.FOLDER)
    )


def create_view(conn: duckdb.DuckDBPyConnection) -> None:
    """The views over this warehouse's stream files, by absolute path (re-created by migrate when missing or moved)."""
    root = documents.root(conn)
    if root is None:
        return
    prepare(root)
    rebuild_mmp(root)
    samples = _quoted(root / SAMPLES / "**" / "*.parquet")
    answers = _quoted(root / ANSWERS / "**" / "*.parquet")
    shown = ", ".join(
        f's."{c.column}"' if c.shown == c.stored else f'CAST(s."{c.column}" AS {c.shown}) AS "{c.column}"'
        for c in CHANNELS
    )
    conn.execute(f"""CREATE OR REPLACE VIEW {ANSWERS} AS
        SELECT r.activity_id, a.athlete_id, to_timestamp(r.fetched_us / 1e6) AS fetched_at, r.status, r.samples,
               r.channels, r.problems, r.raw::JSON AS raw
        FROM read_parquet('{answers}', hive_partitioning = false) r JOIN activities a ON a.activity_id = r.activity_id
        QUALIFY row_number() OVER (PARTITION BY r.activity_id ORDER BY r.fetched_us DESC) = 1""")
    conn.execute(f"""CREATE OR REPLACE VIEW {SAMPLES} AS
        SELECT s.activity_id, a.athlete_id, s.sample, {shown}
        FROM read_parquet('{samples}', hive_partitioning = false) s
        JOIN (SELECT activity_id, max(fetched_us) AS fetched_us FROM read_parquet('{answers}', hive_partitioning = false)
              GROUP BY ALL) r ON r.activity_id = s.activity_id AND r.fetched_us = s.fetched_us
        JOIN activities a ON a.activity_id = s.activity_id""")
    stream_mmp.create_views(conn, answers, _quoted(root / stream_mmp.FOLDER / "**" / "*.parquet"))
    conn.execute(
        f"COMMENT ON VIEW {SAMPLES} IS 'Each activity''s streams, one row per sample (one a second from a device "
        "that records every second): read from the Parquet files in <warehouse>.documents/activity_streams/, the "
        "latest answer of each activity still in activities. A channel the activity has not is NULL; laps and "
        "efforts'' start_index/end_index are its sample numbers'"
    )
    conn.execute(
        f"COMMENT ON VIEW {ANSWERS} IS 'What the service answered for each activity''s streams, whole, and what "
        "became of it (status, problems): read from <warehouse>.documents/activity_stream_answers/'"
    )
    lake = conn.execute("SELECT type FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    if lake == [("ducklake",)]:  # DuckLake keeps no comment on a view's columns
        return
    for column, text in (
        ("activity_id", "The activity"),
        ("athlete_id", "Its athlete"),
        ("sample", "The sample's number, from 0 (the index laps and segment efforts give)"),
        *((c.column, c.comment) for c in CHANNELS),
    ):
        conn.execute(f"COMMENT ON COLUMN {SAMPLES}.{column} IS '{_quoted(text)}'")
    for column, text in (
        ("activity_id", "The activity"),
        ("athlete_id", "Its athlete"),
        ("fetched_at", "When fitsync fetched this answer (UTC)"),
        ("status", f"What became of it: {', '.join(STATUSES)}"),
        ("samples", "Samples stored in activity_streams"),
        ("channels", "The channels stored (activity_streams columns)"),
        ("problems", "What was left out of activity_streams and why (it is in raw)"),
        ("raw", "The answer as received (NULL for not found and refused)"),
    ):
        conn.execute(f"COMMENT ON COLUMN {ANSWERS}.{column} IS '{_quoted(text)}'")


def remove_athlete(root: Path, athlete_id: int) -> int:
    """Delete an athlete's stream files (a purge); returns how many."""
    count = 0
    for base in (*folders(root), root / stream_mmp.FOLDER):
        target = base / f"athlete={athlete_id}"
        if target.exists():
            count += sum(1 for _ in target.rglob("*.parquet"))
            shutil.rmtree(target)
    return count


def _quoted(path: Path | str) -> str:
    return quoted(path)
