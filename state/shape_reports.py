"""Shapes and values of answers fitsync does not know (`shape_reports`), each counted per endpoint and problem."""

from __future__ import annotations

import time
from typing import Any

from .store import Connection, StateStore


def count(conn: Connection, endpoint: str, problem: str, first_object: str | None) -> int:
    """Count one more run that met the problem; how many have (1: never reported before)."""
    now = time.time()
    cursor = conn.execute(
        "INSERT INTO shape_reports VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT (endpoint, problem) DO UPDATE "
        "SET seen = shape_reports.seen + 1, last_seen = excluded.last_seen RETURNING seen",
        (endpoint, problem, first_object, now, now),
    )
    return int(cursor.fetchone()[0])


def all_reports(store: StateStore) -> list[Any]:
    """Rows (endpoint, problem, first_object, seen), the first seen first."""
    with store.reading() as conn:
        return conn.execute(
            "SELECT endpoint, problem, first_object, seen FROM shape_reports ORDER BY first_seen"
        ).fetchall()
