"""What this process's runs have fetched from a queue and not recorded yet, for the live line of the same process.

A chunk of the details queue is recorded in one transaction (sync/details.py), so the recorded count moves in
steps of a chunk; `fitsync sync` and the demo run in the process that shows their progress, and count the chunk
being fetched too. One lock makes "recorded + pending" a consistent pair: a chunk is recorded and forgotten here
under it, so no reading counts it twice or not at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, TypeVar


class Pending(Protocol):
    def pending(self) -> int: ...


T = TypeVar("T")
STREAMS = "streams"  # the streams step's queue (a Tally)
_lock = threading.RLock()
_chunks: dict[tuple[int, str], Pending] = {}


@dataclass
class Tally:
    """A queue counted only in this process: the streams, whose record is the warehouse's files, not the state store."""

    total: int
    done: int = 0

    def pending(self) -> int:
        return self.done


@contextmanager
def fetching(athlete_id: int, queue: str, chunk: Pending) -> Iterator[None]:
    """While `chunk` fills with the athlete's `queue` work."""
    with _lock:
        _chunks[(athlete_id, queue)] = chunk
    try:
        yield
    finally:
        with _lock:
            _chunks.pop((athlete_id, queue), None)


@contextmanager
def recording() -> Iterator[None]:
    """Around recording a chunk and forgetting it: a reading sees it either pending or recorded."""
    with _lock:
        yield


def read(athlete_id: int, queue: str, recorded: Callable[[], T]) -> tuple[T, int]:
    """What `recorded` reads from the state store, and the number fetched and not recorded yet, as one pair."""
    with _lock:
        chunk = _chunks.get((athlete_id, queue))
        return recorded(), (chunk.pending() if chunk is not None else 0)


def tally(athlete_id: int, queue: str) -> Tally | None:
    """The athlete's `queue` as this process's run counts it, while it is being fetched."""
    with _lock:
        chunk = _chunks.get((athlete_id, queue))
        return chunk if isinstance(chunk, Tally) else None
