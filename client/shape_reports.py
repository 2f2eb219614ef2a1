"""What fitsync met and does not know (a new sport type, a field of the wrong type, a body of another shape):
kept raw, never a failed run, and reported once — a warning the first time, a count afterwards.

The reports live in the state store (`shape_reports`) so "once" holds across runs and processes, and the warehouse
keeps the raw JSON they were found in. A process writes each problem once (a field the service added appears on
every record: no write per record), so `seen` counts the runs that met it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from fitsync.state import shape_reports as report_rows
from fitsync.state.store import StateStore

log = logging.getLogger("fitsync.shapes")


@dataclass(frozen=True)
class ShapeReport:
    endpoint: str
    problem: str
    first_object: str | None
    seen: int


class ShapeReports:
    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._met: set[tuple[str, str]] = set()  # met by this process already

    def report(self, endpoint: str, object_id: Any, problems: tuple[str, ...] | list[str]) -> list[str]:
        """Count each problem once per process; warn about (and return) those never reported before."""
        fresh = [p for p in dict.fromkeys(problems) if (endpoint, p) not in self._met]
        if not fresh:
            return []
        self._met.update((endpoint, p) for p in fresh)
        first_object = None if object_id is None else str(object_id)
        with self.store.transaction() as conn:
            new = [p for p in fresh if report_rows.count(conn, endpoint, p, first_object) == 1]
        for problem in new:
            where = "" if object_id is None else f" (first seen on {object_id})"
            log.warning("%s: %s%s — kept raw in the warehouse; reported once", endpoint, problem, where)
        return new

    def all(self) -> list[ShapeReport]:
        return [
            ShapeReport(r["endpoint"], r["problem"], r["first_object"], r["seen"])
            for r in report_rows.all_reports(self.store)
        ]
