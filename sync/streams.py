"""Streams, the lowest-priority work of a sync: one call per activity (every channel in it), newest first, written
straight to Parquet files by the fetch step (warehouse/streams.py), never through the landing area.

Why not the landing area: a 4-hour ride's answer is ≈ 1 MB of JSON, a history's ≈ 1.5 GB; through SQLite (or the
shared PostgreSQL store) every byte would be written, read back and deleted once more, and the warehouse's one writer
held to load it. Written directly, each answer is kept in memory only until its chunk is framed into its compact
columns and written (`Writer`: at most three chunks of CHUNK_BYTES, so memory is flat whatever the history's length),
on threads of their own while the next answers arrive, before every wait for the rate budget and when the budget is
spent. A file appears whole under its final name or not at all, and the answers file, written after the samples, is
the record that an activity's streams are stored: the queue is "wanted and not answered" (warehouse/streams.waiting),
so a run stopped by the budget continues with the next activity and repeats no call; a killed run repeats at most the
chunks it had not written.

What is stored follows what was answered: both shapes the service uses (keyed by type, or the list), each channel in
its compact type. What does not fit — an answer of another shape, a channel fitsync does not know, one whose length
is not the others', a value that is not a number or does not fit its type — is kept in the raw answer and reported
(`problems`), never a failed run; the rest of the activity is stored.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import polars as pl

from fitsync.client.errors import MissingScope, NotFound
from fitsync.client.transport import ResponseTooLarge
from fitsync.sync import stream_answers
from fitsync.warehouse import streams as stored
from fitsync.warehouse.stream_queue import since  # noqa: F401 (the fetch step's setting, read here)
from fitsync.warehouse.streams import Answer

ENDPOINT = "GET /activities/{id}/streams"
KEYS = ",".join(stored.STREAMS)
# Answers' text an unwritten chunk may hold: ≈ 57,000 samples of every channel (≈ 4 four-hour rides); 25 activities
# at most. Measured (bench streams, 300 activities): 8 MB chunks load 3 % faster for 120 MiB more peak memory, 2 MB
# ones 20 % slower for 90 MiB less.
CHUNK_BYTES = 4_000_000
CHUNK_ACTIVITIES = 25
# Chunks handed over and not yet written: one framing while the one before is written. With one, the framing thread
# waited for the writing of the chunk before its own had even begun (300 sandbox answers: 3.4 s against 3.0 s, for
# 25–35 MiB more peak memory).
IN_FLIGHT = 2
T = TypeVar("T")


def fetch(session: Any, activity_id: int, start: dt.datetime | None, elapsed_s: int | None = None) -> Answer:
    """One activity's streams, every channel in one call, as received (raises only what ends the run: the
    rate budget, a stop, a scope other than activity:read_all, a failing service). An answer larger than
    max_response_bytes is recorded as such: it would fail every run, and every activity behind it would wait."""
    fetched = time.time_ns() // 1000
    try:
        content = session.body(
            "GET", f"/activities/{activity_id}/streams", params={"keys": KEYS, "key_by_type": "true"}
        )
    except NotFound as error:
        if not error.about("Activity"):  # a 404 for the request's path (a wrong address): no answer about the activity
            raise
        return Answer(activity_id, start, fetched, stored.NOT_FOUND, None)
    except MissingScope as error:
        if error.scope != "activity:read_all":
            raise
        return Answer(activity_id, start, fetched, stored.REFUSED, None, problems=(str(error),))
    except ResponseTooLarge as error:  # it would be as large at every run: answered, named, and the queue goes on
        problem = f"{error}: its streams are not stored, and not asked for again"
        return Answer(activity_id, start, fetched, stored.TOO_LARGE, None, problems=(problem,))
    return received(activity_id, start, fetched, content, elapsed_s)


def received(
    activity_id: int, start: dt.datetime | None, fetched_us: int, content: bytes, elapsed_s: int | None = None
) -> Answer:
    """An answer as it came, kept whole as its text, to be framed with its chunk (sync/stream_answers.framed) on the
    writer's framing thread."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:  # numbers only, yet bytes that are not text: a mangled answer, stored as it came
        problem = "an answer with bytes that are not UTF-8 (replaced with U+FFFD in the kept text; nothing stored)"
        kept = content.decode("utf-8", errors="replace")
        return Answer(activity_id, start, fetched_us, stored.KEPT_RAW, kept, problems=(problem,))
    return Answer(
        activity_id,
        start,
        fetched_us,
        stored.RECEIVED,
        text,
        tokens=stream_answers.tokens(content),
        elapsed_s=elapsed_s,
    )


def read_bytes(activity_id: int, start: dt.datetime | None, fetched_us: int, content: bytes) -> Answer:
    """One answer received and framed at once (what a chunk of one would become)."""
    with stored.scratch() as conn:
        return stream_answers.framed(conn, [received(activity_id, start, fetched_us, content)])[0]


class Writer:
    """One athlete's answers on their way to disk, in chunks (CHUNK_BYTES of answers or CHUNK_ACTIVITIES answers),
    each through two threads of its own while the next is fetched: the framing thread reads the chunk's answers into
    columns (sync/stream_answers.framed) and computes their mean-maximal power (warehouse/streams.mean_maximal), the
    writing thread writes the files — samples, mean-maximal power, then the answers (warehouse/streams.write_samples,
    write_answers), the record they are whole. (Computing on one thread and writing on the other balanced the two:
    with the samples written on the framing thread and the MMP computed on the writing one, 8 % slower.) So
    fetching, framing one chunk and writing the one before overlap, and at most three chunks are in memory. Records
    are written in order: a chunk's answers file appears only after the chunk before it is whole, and none after a
    write that failed (samples no answers file names are read by no view). `written(answers, samples)` runs on the
    caller's thread for each chunk written, in order, and a framing or writing error is raised there. Leaving the
    `with` block writes what is gathered, as a stop or a failing call leaves it."""

    def __init__(self, root: Path, athlete_id: int, written: Callable[[list[Answer], int], None]) -> None:
        self.root, self.athlete_id, self.written = root, athlete_id, written
        self.answers: list[Answer] = []
        self._bytes = 0
        self._pending: deque[Future[tuple[list[Answer], int]]] = deque()
        self._framing = _Stage("fitsync-streams-framer")
        self._writing = ThreadPoolExecutor(1, thread_name_prefix="fitsync-streams-writer")
        self._failed = False

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.flush()
        finally:
            self._framing.close()
            self._writing.shutdown()

    def add(self, answer: Answer) -> None:
        self.answers.append(answer)
        self._bytes += len(answer.raw or "")
        if self._bytes >= CHUNK_BYTES or len(self.answers) >= CHUNK_ACTIVITIES:
            self.write()

    def write(self) -> None:
        """Hand the gathered answers to the framing thread, then wait until at most IN_FLIGHT chunks are unwritten."""
        if self.answers:
            batch, self.answers, self._bytes = self.answers, [], 0
            framed = self._framing.submit(lambda conn: self._frame(conn, batch))
            self._pending.append(self._writing.submit(self._write, framed))
        self._settle(keep=IN_FLIGHT)

    def flush(self) -> None:
        """Everything gathered written, and the writes ended (before a long wait for the budget, and at the end)."""
        self.write()
        self._settle(keep=0)

    def _frame(
        self, conn: duckdb.DuckDBPyConnection, batch: list[Answer]
    ) -> tuple[list[Answer], dict[str, pl.DataFrame]]:
        """The framing thread's part: the chunk framed, and its mean-maximal power computed."""
        answers = stream_answers.framed(conn, batch)
        return answers, stored.mean_maximal(answers)

    def _write(self, framed: Future[tuple[list[Answer], dict[str, pl.DataFrame]]]) -> tuple[list[Answer], int]:
        """The writing thread's part: the chunk's files — samples, mean-maximal power, then answers, the record they
        are whole — once the chunks before it are whole."""
        if self._failed:
            raise RuntimeError("not written: a write of this athlete's streams before it failed")
        try:
            answers, best = framed.result()
            with stored.mmp_lock(self.root):  # never across a rebuild of the MMP files
                samples = stored.write_samples(self.root, self.athlete_id, answers)
                stored.write_answers(self.root, self.athlete_id, answers, best)
            return answers, samples
        except BaseException:
            self._failed = True
            raise

    def _settle(self, keep: int) -> None:
        while len(self._pending) > keep:
            self.written(*self._pending.popleft().result())


class _Stage:
    """One thread and its in-memory DuckDB (warehouse/streams.scratch), for the Writer's framing."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._conn: duckdb.DuckDBPyConnection | None = None

    def submit(self, work: Callable[[duckdb.DuckDBPyConnection], T]) -> Future[T]:
        return self._pool.submit(self._run, work)

    def _run(self, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        if self._conn is None:
            self._conn = stored.scratch()
        return work(self._conn)

    def close(self) -> None:
        self._pool.shutdown()
        if self._conn is not None:
            self._conn.close()
