"""What `fitsync status` (and the nothing-new check) says of the streams queue: per athlete, how many activities wait for their streams (the
`streams` setting's activities without a stored answer, warehouse/stream_queue.waiting), read without writing a byte."""

from __future__ import annotations

from typing import Any

from fitsync.client.config import Config
from fitsync.client.explain import damaged_warehouse
from fitsync.resources.warehouse import warehouse_of
from fitsync.warehouse import db
from fitsync.warehouse import stream_queue as stored
from fitsync.warehouse.stream_queue import since


def count_waiting(config: Config, athlete_id: int) -> int:
    """How many of the athlete's activities wait for their streams (0: off, no warehouse yet, or it could not be read
    now: a run would meet the same hold)."""
    warehouse = warehouse_of(config)
    if config.streams == "off" or not db.exists(warehouse):
        return 0
    try:
        with db.reading(warehouse, timeout=2.0) as conn:
            return len(stored.waiting(conn, athlete_id, since(config.streams, config.streams_days), looking=True))
    except Exception:  # noqa: BLE001 (busy or unreadable: the nightly run fetches them)
        return 0


def waiting_text(count: int) -> str:
    """'1 activity waits for its streams', '3 activities wait for their streams'."""
    return "1 activity waits for its streams" if count == 1 else f"{count:,} activities wait for their streams"


def note_pending(config: Config, athletes: list[dict[str, Any]]) -> list[str]:
    """Set each athlete's `pending.streams` (None: off, or the warehouse could not be read now); the lines to show."""
    for a in athletes:
        a["pending"]["streams"] = None
    warehouse = warehouse_of(config)
    if config.streams == "off" or not db.exists(warehouse):
        return []
    lines = []
    try:
        with db.reading(warehouse, timeout=2.0) as conn:
            for a in athletes:
                waiting = stored.waiting(
                    conn, a["athlete_id"], since(config.streams, config.streams_days), looking=True
                )
                a["pending"]["streams"] = len(waiting)
                if waiting:
                    lines.append(
                        f"athlete {a['athlete_id']}: {waiting_text(len(waiting))} "
                        f"(streams = {config.streams}; fetched after everything else, newest first)"
                    )
    except Exception as error:  # noqa: BLE001 (busy: the rest of the status still helps)
        if damaged_warehouse(str(error), "") is None:  # a damaged file is said once, on the warehouse's line
            lines.append(f"streams queue unavailable: {str(error).splitlines()[0]}")
    return lines
