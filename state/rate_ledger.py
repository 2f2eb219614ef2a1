"""The app's shared rate budget: what each window has used (`rate_ledger`), who waits for a turn (`rate_waiters`),
what each priority class (`rate_class_usage`) and each athlete of a class (`rate_turns`) got this window.

Every call runs inside the caller's write transaction: client/rate_governor.py reads, decides and writes under one
lock, so processes together never send more than the budget allows.
"""

from __future__ import annotations

from typing import Any

from .store import Connection


def lines(conn: Connection) -> list[Any]:
    """Rows (window_kind, budget, window_start, used, limit_value) of the ledger."""
    return conn.execute("SELECT window_kind, budget, window_start, used, limit_value FROM rate_ledger").fetchall()


def write_line(conn: Connection, window: str, budget: str, start: int, used: int, limit: int) -> None:
    conn.execute(
        """INSERT INTO rate_ledger (window_kind, budget, window_start, used, limit_value) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (window_kind, budget) DO UPDATE SET window_start = excluded.window_start,
             used = excluded.used, limit_value = excluded.limit_value""",
        (window, budget, start, used, limit),
    )


def waiting(
    conn: Connection, waiter: str, klass: str, athlete_id: int | None, *, alive_until: float, blocked_until: float
) -> None:
    conn.execute(
        """INSERT INTO rate_waiters (waiter, class, athlete_id, alive_until, blocked_until) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (waiter) DO UPDATE SET class = excluded.class, athlete_id = excluded.athlete_id,
             alive_until = excluded.alive_until, blocked_until = excluded.blocked_until""",
        (waiter, klass, athlete_id, alive_until, blocked_until),
    )


def leave(conn: Connection, waiter: str) -> None:
    conn.execute("DELETE FROM rate_waiters WHERE waiter = ?", (waiter,))


def drop_dead_waiters(conn: Connection, now: float) -> None:
    """Waiters that stopped polling (crashed) count no more."""
    conn.execute("DELETE FROM rate_waiters WHERE alive_until < ?", (now,))


def rivals(conn: Connection, waiter: str, now: float) -> list[tuple[str, int | None]]:
    """(class, athlete id) of the other waiters alive and able to go now."""
    return [
        (str(r["class"]), r["athlete_id"])
        for r in conn.execute(
            "SELECT class, athlete_id FROM rate_waiters WHERE waiter != ? AND alive_until >= ? AND blocked_until <= ?",
            (waiter, now, now),
        ).fetchall()
    ]


def class_usage(conn: Connection, window_start: int) -> dict[str, int]:
    """Calls each class got in the window starting at `window_start`."""
    return {
        str(r["class"]): int(r["used"])
        for r in conn.execute("SELECT class, used FROM rate_class_usage WHERE window_start = ?", (window_start,))
    }


def turns(conn: Connection) -> list[Any]:
    """Rows (class, athlete_id, window_start, used, last_granted) of every athlete's turns."""
    return conn.execute("SELECT class, athlete_id, window_start, used, last_granted FROM rate_turns").fetchall()


def count_class(conn: Connection, klass: str, window_start: int) -> None:
    """One more call for the class in this window (the first of a new window starts it at one)."""
    conn.execute(
        """INSERT INTO rate_class_usage (class, window_start, used) VALUES (?, ?, 1)
           ON CONFLICT (class) DO UPDATE SET used = CASE WHEN rate_class_usage.window_start = excluded.window_start
             THEN rate_class_usage.used + 1 ELSE 1 END, window_start = excluded.window_start""",
        (klass, window_start),
    )


def count_turn(conn: Connection, klass: str, athlete_id: int, window_start: int, now: float) -> None:
    """One more call for the athlete's class work in this window, granted `now`."""
    conn.execute(
        """INSERT INTO rate_turns (class, athlete_id, window_start, used, last_granted) VALUES (?, ?, ?, 1, ?)
           ON CONFLICT (class, athlete_id) DO UPDATE SET used = CASE
             WHEN rate_turns.window_start = excluded.window_start THEN rate_turns.used + 1 ELSE 1 END,
             window_start = excluded.window_start,
             last_granted = excluded.last_granted""",
        (klass, athlete_id, window_start, now),
    )
