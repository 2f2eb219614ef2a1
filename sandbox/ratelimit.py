"""Per-application rate limits with natural window boundaries (real-service notes, "Rate limits")."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from . import store
from .faults import ApiError, rate_limited
from .settings import Settings


@dataclass(frozen=True)
class Usage:
    overall: tuple[int, int]
    read: tuple[int, int]

    def headers(self, settings: Settings) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": f"{settings.overall_limit_short},{settings.overall_limit_long}",
            "X-RateLimit-Usage": f"{self.overall[0]},{self.overall[1]}",
            "X-ReadRateLimit-Limit": f"{settings.read_limit_short},{settings.read_limit_long}",
            "X-ReadRateLimit-Usage": f"{self.read[0]},{self.read[1]}",
        }


def window_starts(settings: Settings, now: float) -> dict[str, int]:
    """Windows are multiples of their length since the epoch: :00/:15/:30/:45 and UTC midnight by default."""
    return {
        "short": int(now // settings.short_window * settings.short_window),
        "long": int(now // settings.long_window * settings.long_window),
    }


def charge(
    conn: sqlite3.Connection, app_id: int, is_read: bool, settings: Settings, now: float | None = None
) -> tuple[Usage, ApiError | None]:
    """Count one request and decide on it; refused requests count too, so reported usage can pass the limit.

    Returns the usage after counting and the 429 error when the request is over a limit.
    """
    now = time.time() if now is None else now
    starts = window_starts(settings, now)
    budgets = ("overall", "read") if is_read else ("overall",)
    with store.transaction(conn):
        before = _current(conn, app_id, starts)
        for window, start in starts.items():
            for budget in budgets:
                conn.execute(
                    """INSERT INTO rate_usage (app_id, window, window_start, budget, used) VALUES (?, ?, ?, ?, 1)
                       ON CONFLICT (app_id, window, budget) DO UPDATE SET
                         used = CASE WHEN window_start = excluded.window_start THEN used + 1 ELSE 1 END,
                         window_start = excluded.window_start""",
                    (app_id, window, start, budget),
                )
        after = _current(conn, app_id, starts)
        exceeded = _exceeded(before, is_read, settings)
        if exceeded:
            store.bump(conn, "rate_limited")
    return after, rate_limited(exceeded) if exceeded else None


def current(conn: sqlite3.Connection, app_id: int, settings: Settings, now: float | None = None) -> Usage:
    return _current(conn, app_id, window_starts(settings, time.time() if now is None else now))


def _current(conn: sqlite3.Connection, app_id: int, starts: dict[str, int]) -> Usage:
    used = {(w, b): 0 for w in starts for b in ("overall", "read")}
    for row in conn.execute("SELECT window, window_start, budget, used FROM rate_usage WHERE app_id = ?", (app_id,)):
        if starts.get(row["window"]) == row["window_start"]:
            used[(row["window"], row["budget"])] = row["used"]
    return Usage(
        overall=(used[("short", "overall")], used[("long", "overall")]),
        read=(used[("short", "read")], used[("long", "read")]),
    )


def _exceeded(before: Usage, is_read: bool, settings: Settings) -> str | None:
    if before.overall[0] >= settings.overall_limit_short or before.overall[1] >= settings.overall_limit_long:
        return "overall"
    if is_read and (before.read[0] >= settings.read_limit_short or before.read[1] >= settings.read_limit_long):
        return "read"
    return None
