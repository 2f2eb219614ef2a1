"""A load as a pipeline: the next batches are staged on a worker thread while the one writer writes this one, and one
write connection serves consecutive batches for up to a second.

On two cores this is what made the load fast (bench load): staging (parsing JSON into rows, loads.stage) and writing
(loads.write) each take about half of a batch's time, and DuckDB releases the GIL while it works, so the two overlap.
Each close of a write connection is a DuckDB checkpoint (≈ 50 ms per batch of 500 activities when every batch had its
own connection); held for a second, a connection closes once per ≈ 8 batches.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import duckdb

from . import db

T = TypeVar("T")

# How long one write connection serves consecutive batches. A reader (an analyst's query) waits at most this long plus
# one batch more than it did with a connection per batch.
HOLD_SECONDS = 1.0
# A load's writer: its statements are small (a second DuckDB thread only costs, ≈ 15 % measured, while the other core
# stages the next batch), and it checkpoints once, when it closes, rather than whenever its log passes 16 MB (5–10 %).
WRITER_SETTINGS = ("SET threads = 1", "SET checkpoint_threshold = '1GB'")


def ahead(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """`items`, produced up to `depth` ahead on a worker thread. More than one ahead, since a large batch (details) and
    a small one (their zones) alternate. Order and exceptions are kept; closing the iterator early cancels the rest."""
    source = iter(items)
    end: Any = object()
    with ThreadPoolExecutor(1, thread_name_prefix="fitsync-staging") as pool:
        # one worker thread: the calls of next() run one at a time, in order
        pending = collections.deque(pool.submit(next, source, end) for _ in range(depth))
        try:
            while (item := pending.popleft().result()) is not end:
                pending.append(pool.submit(next, source, end))
                yield item
        finally:
            for future in pending:
                future.cancel()


def write_held(
    database: db.Where,
    items: Iterable[T],
    write_one: Callable[[duckdb.DuckDBPyConnection, T], None],
    notice: Callable[[str], None] | None = None,
    hold: float = HOLD_SECONDS,
    timeout: float = db.WRITE_WAIT,
    migrated: bool = False,
    opened: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> None:
    """Write each item with `write_one` (its own transaction), keeping one write connection for consecutive items up
    to `hold` seconds. `write_one` may act on its item's commit (a landed batch is removed once its transaction
    commits: DuckDB's log makes it durable then, before the checkpoint). `notice` hears why a writer waits
    (db.writing), which gives up after `timeout` seconds. `migrated`: the schema made current on the first connection.
    `opened`: called with the first connection (its schema current) before the first item is taken, for what the
    items are made with (the warehouse's NOT NULL columns: sync/load_landed.py); that item is made while the
    connection is open."""
    source = iter(items)
    end: Any = object()
    item: Any = next(source, end) if opened is None else None  # None: taken once a connection is open
    while item is not end:
        with db.writing(database, timeout=timeout, notice=notice, migrated=migrated) as conn:
            migrated = False
            for setting in WRITER_SETTINGS:
                conn.execute(setting)
            if opened is not None:
                opened(conn)
                opened, item = None, next(source, end)
            held_since = time.monotonic()
            while item is not end:
                write_one(conn, item)
                if time.monotonic() - held_since >= hold:
                    item = None  # the next one is taken once this connection is closed
                    break
                item = next(source, end)
        if item is None:
            item = next(source, end)
