"""What changes slowly is fetched on its own cadence, not on every sync.

Stats, athlete zones, starred segments and their effort histories cost a call or more each; under the real
service's limits a sync with nothing new should cost the profile and one listing page. New activities bring
their segment efforts with their details, so nothing of theirs waits for the cadence. The nightly sync (24 h
apart) always refreshes; `fitsync sync --full` (tag REFRESH_TAG) too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fitsync.client.runtime import FitsyncClient
from fitsync.state.store import Connection

from . import progress

REFRESH_TAG = "fitsync/refresh"  # "all": refresh everything whatever the cadence says


def cursor(name: str) -> str:
    return f"refreshed_at:{name}"


SLOW = ("athlete_stats", "athlete_zones", "starred_segments", "segment_effort_history")
# Those a run fetches after its listing: a listing that finds a new warehouse makes them due in the same run (the stats
# and zones, before it, are due by their own `holds` question)
AFTER_LISTING = ("starred_segments", "segment_effort_history")


def skip_reason(
    refresh_all: bool, client: FitsyncClient, aid: int, name: str, holds: Callable[[], bool] | None = None
) -> str | None:
    """Why this run does not fetch `name` (refreshed recently), or None: fetch it. `refresh_all`: the run refreshes
    everything whatever the cadence (tagged REFRESH_TAG "all": the nightly sync, `--full`)."""
    return None if refresh_all else not_due(client, aid, name, holds)


def not_due(client: FitsyncClient, aid: int, name: str, holds: Callable[[], bool] | None = None) -> str | None:
    """Why `name` need not be fetched now (refreshed recently), or None: it is due. `holds`: whether the warehouse
    holds the athlete's activities; where it holds none (a new one, which the listing finds only after the stats and
    zones ran), it is due whatever its age."""
    hours = client.config.slow_refresh_hours
    if hours <= 0:
        return None
    last = progress.get_cursor(client.store, aid, cursor(name))
    age = time.time() - float(last) if last is not None else None
    if age is None or not 0 <= age < hours * 3600:  # never, long ago, or a clock that went back
        return None
    if holds is not None and not holds():
        return None
    when = f"{age / 3600:.1f} h" if age >= 3600 else f"{max(1, round(age / 60))} min"
    return (
        f"not due: refreshed {when} ago, every {hours:g} h (slow_refresh_hours); `fitsync sync --full` refreshes it now"
    )


def refreshed(conn: Connection, aid: int, name: str) -> None:
    """Record a complete refresh (inside the caller's transaction)."""
    progress.set_cursor(conn, aid, cursor(name), repr(time.time()))
