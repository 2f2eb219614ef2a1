"""Streams, the lowest-priority work of a sync: one call per activity (every channel in it), newest first, written
straight to Parquet files by the fetch step (warehouse/streams.py), never through the landing area.

Why not the landing area: a 4-hour ride's answer is ≈ 1 MB of JSON, a history's ≈ 1.5 GB; through SQLite (or the
shared PostgreSQL store) every byte would be written, read back and deleted once more, and the warehouse's one writer
held to load it. Written directly, each answer is framed into its compact columns as it arrives and kept in memory
only until its chunk is written (`Writer`: at most two chunks of CHUNK_SAMPLES samples, so memory is flat whatever the
history's length), on a thread of its own while the next answers arrive, before every wait for the rate budget and
when the budget is spent. A file appears whole under its final name or
not at all, and the answers file, written after the samples, is the record that an activity's streams are stored:
the queue is "wanted and not answered" (warehouse/streams.waiting), so a run stopped by the budget continues with
the next activity and repeats no call; a killed run repeats at most the chunk it had not written.

What is stored follows what was answered: both shapes the service uses (keyed by type, or the list), each channel in
its compact type. What does not fit — an answer of another shape, a channel fitsync does not know, one whose length
is not the others', a value that is not a number or does not fit its type — is kept in the raw answer and reported
(`problems`), never a failed run; the rest of the activity is stored.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from fitsync.client.errors import MissingScope, NotFound
from fitsync.warehouse import streams as stored
from fitsync.warehouse.stream_queue import since  # noqa: F401 (the fetch step's setting, read here)
from fitsync.warehouse.streams import Answer

ENDPOINT = "GET /activities/{id}/streams"
KEYS = ",".join(stored.STREAMS)
# Samples an unwritten chunk may hold: ≈ 7 four-hour rides, ≈ 15 MB of frames; 25 activities at most.
CHUNK_SAMPLES = 100_000
CHUNK_ACTIVITIES = 25


def fetch(session: Any, activity_id: int, start: dt.datetime | None) -> Answer:
    """One activity's streams, every channel in one call, read into an Answer (raises only what ends the run: the
    rate budget, a stop, a scope other than activity:read_all, a failing service)."""
    fetched = time.time_ns() // 1000
    try:
        content = session.body(
            "GET", f"/activities/{activity_id}/streams", params={"keys": KEYS, "key_by_type": "true"}
        )
    except NotFound:
        return Answer(activity_id, start, fetched, stored.NOT_FOUND, None)
    except MissingScope as error:
        if error.scope != "activity:read_all":
            raise
        return Answer(activity_id, start, fetched, stored.REFUSED, None, problems=(str(error),))
    return read_bytes(activity_id, start, fetched, content)


def read_bytes(activity_id: int, start: dt.datetime | None, fetched_us: int, content: bytes) -> Answer:
    """An answer as it came: kept whole as its text, its channels in their columns. A well-formed answer keyed by type — what the service sends for key_by_type=true — is parsed by Polars
    straight into columns (_read_fast: ≈ 5× the Python parse); anything else goes the careful way (`read`), which
    names what it cannot store."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:  # numbers only, yet bytes that are not text: a mangled answer, stored as it came
        problem = "an answer with bytes that are not UTF-8 (replaced with U+FFFD in the kept text; nothing stored)"
        kept = content.decode("utf-8", errors="replace")
        return Answer(activity_id, start, fetched_us, stored.KEPT_RAW, kept, problems=(problem,))
    if (fast := _read_fast(activity_id, start, fetched_us, content, text)) is not None:
        return fast
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as error:
        problem = f"an answer that is not JSON ({str(error)[:160]}; kept raw)"
        return Answer(activity_id, start, fetched_us, stored.KEPT_RAW, text, problems=(problem,))
    return read(activity_id, start, fetched_us, body, raw=text)


def _read_fast(
    activity_id: int, start: dt.datetime | None, fetched_us: int, content: bytes, text: str
) -> Answer | None:
    """The answer as `read` frames it, when it is keyed by type, every channel one fitsync knows, of one length and
    of the JSON type its column takes, every value within its compact type; None for anything else. A few Polars
    calls per answer, whatever its channels: each one costs more than the values it moves."""
    try:
        parsed = pl.read_json(io.BytesIO(content))
    except Exception:  # noqa: BLE001 (not JSON, or not a shape Polars reads: the careful way says which)
        return None
    if parsed.height != 1 or not parsed.width or set(parsed.columns) - set(stored.STREAMS):
        return None
    wanted: dict[str, Any] = {}  # channel → the JSON type its data must have
    for kind, dtype in parsed.schema.items():
        if not isinstance(dtype, pl.Struct) or "data" not in {f.name for f in dtype.fields}:
            return None
        wanted[kind] = next(f.dtype for f in dtype.fields if f.name == "data")
    for kind, dtype in wanted.items():
        inner = dtype.inner if isinstance(dtype, pl.List) else None
        if kind == "latlng":
            ok = isinstance(inner, pl.List) and inner.inner in (pl.Float64, pl.Int64)
        else:
            ok = inner == pl.Boolean if kind == "moving" else inner in (pl.Float64, pl.Int64)
        if not ok:
            return None
    try:  # one row per sample: the lists must be of one length
        rows = parsed.select(pl.col(k).struct.field("data").alias(k) for k in wanted).explode(list(wanted))
    except pl.exceptions.PolarsError:
        return None
    if "latlng" in wanted:
        if rows.select((pl.col("latlng").list.len() != 2).any()).item():
            return None
        rows = rows.with_columns(
            pl.col("latlng").list.get(0).alias("lat"), pl.col("latlng").list.get(1).alias("lng")
        ).drop("latlng")
    numbers = [c for c in stored.CHANNELS if c.column in rows.columns and c.scale is not None]
    fits = rows.select(
        pl.all_horizontal(
            [
                (pl.col(c.column).abs().max().fill_null(0) <= c.bound)
                & (pl.col(c.column).cast(pl.Float64).round(c.scale or 0) == pl.col(c.column)).all()
                for c in numbers
            ]
            or [pl.lit(True)]
        )
    ).item()
    if not fits:
        return None
    frame = rows.with_row_index("sample").select(
        pl.lit(activity_id, pl.Int64).alias("activity_id"),
        pl.lit(fetched_us, pl.Int64).alias("fetched_us"),
        pl.col("sample").cast(pl.Int32),
        *(
            (pl.col(name) if name in rows.columns else pl.lit(None)).cast(kind).alias(name)
            for name, kind in stored.SOURCE_SCHEMA.items()
            if name not in ("activity_id", "fetched_us", "sample")
        ),
    )
    kept = tuple(k for k in stored.STREAMS if k in wanted)
    return Answer(activity_id, start, fetched_us, stored.STORED, text, frame, kept, ())


def _frame(activity_id: int, fetched_us: int, length: int, columns: dict[str, pl.Series]) -> pl.DataFrame:
    """The samples in SOURCE_SCHEMA: the channels read, NULL for the others."""
    return pl.DataFrame(
        {
            "activity_id": pl.repeat(activity_id, length, dtype=pl.Int64, eager=True),
            "fetched_us": pl.repeat(fetched_us, length, dtype=pl.Int64, eager=True),
            "sample": pl.int_range(0, length, dtype=pl.Int32, eager=True),
            **{
                name: columns.get(name, pl.repeat(None, length, dtype=kind, eager=True))
                for name, kind in stored.SOURCE_SCHEMA.items()
                if name not in ("activity_id", "fetched_us", "sample")
            },
        },
        schema=stored.SOURCE_SCHEMA,
    )


def read(activity_id: int, start: dt.datetime | None, fetched_us: int, body: Any, raw: str | None = None) -> Answer:
    """The answer's channels in their columns; what cannot be stored, named in `problems`. `raw`: the answer's text as
    received (else the body written out again)."""
    raw = raw if raw is not None else json.dumps(body, separators=(",", ":"))
    found, problems = _by_type(body)
    if found is None:
        return Answer(activity_id, start, fetched_us, stored.KEPT_RAW, raw, problems=tuple(problems))
    if not found:
        return Answer(activity_id, start, fetched_us, stored.NO_STREAMS, raw, problems=tuple(problems))
    sizes = {k: len(v) for k, v in found.items()}
    length = sizes["time"] if "time" in sizes else Counter(sizes.values()).most_common(1)[0][0]
    columns: dict[str, pl.Series] = {}
    kept: list[str] = []
    for kind, data in found.items():
        if kind not in stored.STREAMS:
            problems.append(f"a channel fitsync does not know: {kind!r} (kept raw)")
            continue
        if len(data) != length:
            problems.append(f"channel {kind!r} has {len(data)} samples, the others {length} (kept raw)")
            continue
        try:
            columns.update(_columns(kind, data))
        except (TypeError, ValueError, pl.exceptions.PolarsError) as error:
            problems.append(f"channel {kind!r}: {str(error).splitlines()[0][:160]} (kept raw)")
            continue
        kept.append(kind)
    frame = _frame(activity_id, fetched_us, length, columns)
    status = stored.STORED if not problems else stored.PART_STORED if kept else stored.KEPT_RAW
    return Answer(
        activity_id,
        start,
        fetched_us,
        status,
        raw,
        frame if kept else None,
        tuple(k for k in stored.STREAMS if k in kept),
        tuple(problems),
    )


def _by_type(body: Any) -> tuple[dict[str, list[Any]] | None, list[str]]:
    """{type: data} from either shape (keyed by type; or the list, each with its `type`), or None for another."""
    if isinstance(body, dict) and all(isinstance(s, dict) and isinstance(s.get("data"), list) for s in body.values()):
        return {str(k): v["data"] for k, v in body.items()}, []
    if isinstance(body, list) and all(
        isinstance(s, dict) and isinstance(s.get("type"), str) and isinstance(s.get("data"), list) for s in body
    ):
        return {s["type"]: s["data"] for s in body}, []
    return None, [f"an answer of a shape fitsync does not know ({type(body).__name__}; kept raw)"]


def _columns(kind: str, data: list[Any]) -> dict[str, pl.Series]:
    """The source columns of one channel, checked against its compact type (ValueError names what does not fit)."""
    if kind == "latlng":
        if not all(isinstance(p, list) and len(p) == 2 for p in data):
            raise ValueError("points that are not [lat, lng] pairs")
        lat, lng = zip(*data) if data else ((), ())
        return {"lat": _numbers("lat", lat), "lng": _numbers("lng", lng)}
    channel = next(c for c in stored.CHANNELS if c.stream == kind)
    if channel.stored == "BOOLEAN":
        return {kind: pl.Series(kind, data, dtype=pl.Boolean, strict=True)}
    return {channel.column: _numbers(channel.column, data)}


def _numbers(column: str, data: Any) -> pl.Series:
    channel = next(c for c in stored.CHANNELS if c.column == column)
    if any(isinstance(v, bool) for v in data):
        raise ValueError("values that are not numbers")
    series = pl.Series(column, data, dtype=pl.Float64, strict=True)
    if series.abs().max() is not None and float(series.abs().max()) > channel.bound:  # type: ignore[arg-type]
        raise ValueError(f"values beyond what {channel.stored} holds")
    if channel.scale is not None and not bool((series.round(channel.scale) == series).all()):
        raise ValueError(f"values with more than {channel.scale} decimals")
    return series


class Writer:
    """One athlete's answers on their way to disk: gathered into chunks (CHUNK_SAMPLES samples or CHUNK_ACTIVITIES
    answers), each written (warehouse/streams.write) on a thread of its own while the next is fetched and parsed, so
    parsing and writing overlap. One write at a time and in order: a chunk's files appear only after the chunk before
    it is whole, and at most two chunks are in memory. `written(answers, samples)` runs on the caller's thread for
    each chunk written, and a write's error is raised there. Leaving the `with` block writes what is gathered, as a
    stop or a failing call leaves it."""

    def __init__(self, root: Path, athlete_id: int, written: Callable[[list[Answer], int], None]) -> None:
        self.root, self.athlete_id, self.written = root, athlete_id, written
        self.answers: list[Answer] = []
        self._pending: tuple[list[Answer], Future[int]] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="fitsync-streams-writer")

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.flush()
        finally:
            self._pool.shutdown()

    def add(self, answer: Answer) -> None:
        self.answers.append(answer)
        if sum(a.samples for a in self.answers) >= CHUNK_SAMPLES or len(self.answers) >= CHUNK_ACTIVITIES:
            self.write()

    def write(self) -> None:
        """Hand the gathered answers to the writing thread, once the write before has ended."""
        self._settle()
        if self.answers:
            batch, self.answers = self.answers, []
            self._pending = (batch, self._pool.submit(stored.write, self.root, self.athlete_id, batch))

    def flush(self) -> None:
        """Everything gathered written, and the write ended (before a long wait for the budget, and at the end)."""
        self.write()
        self._settle()

    def _settle(self) -> None:
        if self._pending is not None:
            batch, future = self._pending
            self._pending = None
            self.written(batch, future.result())
