"""An athlete's own thresholds by date — FTP, lactate-threshold heart rate, running threshold pace — in the analysis
tables the load views read (`analysis_ftp_history`, `analysis_thresholds`): each row applies from its date until the
next. The service knows only today's FTP (the profile), never an LTHR or a threshold pace; these are what a lab test
or a field test gave, and `fitsync thresholds` sets them.

A value outside what a person sustains for about an hour is refused (`Threshold.low`/`high`): a typo there would
change every load after its date without a word. Rows are replaced whole (deleted, then inserted, in one
transaction), not upserted: a lake's tables have no primary key for `ON CONFLICT` to stand on (lake_schema.py).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

import duckdb

from . import db


@dataclass(frozen=True)
class Threshold:
    """One value an athlete sets by date: where it is kept, and the range a person's hour-long effort falls in."""

    name: str  # the command's option
    label: str  # the word shown
    table: str
    column: str
    low: float
    high: float
    unit: str
    what: str

    def text(self, value: float) -> str:
        """The value as the command takes it: `250`, `4:30` (a pace, min:s; `4:30.5` with its tenth)."""
        if self.unit != "/km":
            return f"{value:g}"
        minutes, seconds = divmod(round(value, 1), 60)
        return f"{int(minutes)}:{int(seconds):02d}" if seconds == int(seconds) else f"{int(minutes)}:{seconds:04.1f}"

    def shown(self, value: float) -> str:
        return f"{self.text(value)} {self.unit}"


THRESHOLDS = (
    Threshold("ftp", "FTP", "analysis_ftp_history", "ftp", 50, 600, "W", "functional threshold power (cycling)"),
    Threshold("lthr", "LTHR", "analysis_thresholds", "lthr", 100, 220, "bpm", "lactate-threshold heart rate"),
    Threshold(
        "pace",
        "threshold pace",
        "analysis_thresholds",
        "threshold_pace_s_per_km",
        150,
        720,
        "/km",
        "running threshold pace per km",
    ),
)
BY_NAME = {t.name: t for t in THRESHOLDS}
# An FTP set this far from the profile's is said (not refused: a test may well differ), with what it does to loads.
PROFILE_GAP = 0.2
TABLES = tuple(dict.fromkeys(t.table for t in THRESHOLDS))


@dataclass(frozen=True)
class Row:
    """An athlete's thresholds from one date (None: not set by this row), and the note of that date's test."""

    valid_from: dt.date
    values: dict[str, float | None]
    note: str | None

    def shown(self) -> str:
        set_here = [f"{t.label} {t.shown(v)}" for t in THRESHOLDS if (v := self.values.get(t.name)) is not None]
        return ", ".join(set_here) + (f" ({self.note})" if self.note else "")


def out_of_range(name: str, value: float) -> str | None:
    """Why a value cannot be a threshold (None when it can)."""
    t = BY_NAME[name]
    if not math.isfinite(value):
        return f"{t.label} must be a number"
    if t.low <= value <= t.high:
        return None
    return (
        f"{t.label} {t.shown(value)} is outside {t.shown(t.low)} to {t.shown(t.high)}, what a person's "
        f"{t.what} is: check the value and its unit"
    )


def rows(conn: duckdb.DuckDBPyConnection, athlete_id: int) -> list[Row]:
    """The athlete's rows of every threshold, one per date, in date order (the notes of a date's rows joined, when
    they differ)."""
    values: dict[dt.date, dict[str, float | None]] = {}
    notes: dict[dt.date, list[str]] = {}
    for table in TABLES:
        columns = [t for t in THRESHOLDS if t.table == table]
        selected = ", ".join(t.column for t in columns)
        for valid_from, *found, note in conn.execute(
            f"SELECT valid_from, {selected}, note FROM {table} WHERE athlete_id = ?", [athlete_id]
        ).fetchall():
            values.setdefault(valid_from, {}).update({t.name: v for t, v in zip(columns, found, strict=True)})
            if note and note not in notes.setdefault(valid_from, []):
                notes[valid_from].append(note)
    return [Row(day, values[day], "; ".join(notes.get(day, [])) or None) for day in sorted(values)]


def set_values(
    conn: duckdb.DuckDBPyConnection, athlete_id: int, valid_from: dt.date, values: dict[str, float], note: str | None
) -> Row | None:
    """Set these thresholds from `valid_from` (the others of that date kept; a note given becomes the note of every
    row of that date); returns the date's row as it was."""
    before = row_of(conn, athlete_id, valid_from)

    def replace() -> None:
        for table in TABLES:
            columns = [t for t in THRESHOLDS if t.table == table]
            given = {t.name: values[t.name] for t in columns if t.name in values}
            found = conn.execute(
                f"SELECT {', '.join(t.column for t in columns)}, note FROM {table} "
                "WHERE athlete_id = ? AND valid_from = ?",
                [athlete_id, valid_from],
            ).fetchall()
            if not given and not (found and note is not None):  # nothing of this table's to set or to note
                continue
            *old, old_note = found[0] if found else [None] * (len(columns) + 1)
            row = {t.column: given.get(t.name, was) for t, was in zip(columns, old, strict=True)}
            _delete(conn, table, athlete_id, valid_from)
            conn.execute(
                f"INSERT INTO {table} (athlete_id, valid_from, {', '.join(row)}, note) "
                f"VALUES (?, ?, {', '.join('?' for _ in row)}, ?)",
                [athlete_id, valid_from, *row.values(), note if note is not None else old_note],
            )

    db.transaction(conn, replace)
    return before


def remove(conn: duckdb.DuckDBPyConnection, athlete_id: int, valid_from: dt.date) -> Row | None:
    """Remove the athlete's thresholds of that date; returns what they were (None: there were none)."""
    before = row_of(conn, athlete_id, valid_from)
    if before is not None:

        def delete() -> None:
            for table in TABLES:
                _delete(conn, table, athlete_id, valid_from)

        db.transaction(conn, delete)
    return before


def row_of(conn: duckdb.DuckDBPyConnection, athlete_id: int, valid_from: dt.date) -> Row | None:
    """The athlete's thresholds of that date (None: none)."""
    return next((r for r in rows(conn, athlete_id) if r.valid_from == valid_from), None)


def _delete(conn: duckdb.DuckDBPyConnection, table: str, athlete_id: int, valid_from: dt.date) -> None:
    conn.execute(f"DELETE FROM {table} WHERE athlete_id = ? AND valid_from = ?", [athlete_id, valid_from])


def profile_ftp(conn: duckdb.DuckDBPyConnection, athlete_id: int) -> float | None:
    """The athlete's FTP as the profile last said it (None: it has none, or none the loads use)."""
    found = conn.execute(  # one the loads use: within ftp_min_w .. ftp_max_w (profile_ftp_unused names the others)
        "SELECT s.ftp FROM athlete_snapshots s WHERE s.athlete_id = ? AND s.ftp > 0 "
        "AND NOT EXISTS (SELECT 1 FROM profile_ftp_unused u WHERE u.athlete_id = s.athlete_id AND u.ftp = s.ftp) "
        "ORDER BY s.snapshot_date DESC LIMIT 1",
        [athlete_id],
    ).fetchall()
    return float(found[0][0]) if found else None


def profile_ftp_unused(conn: duckdb.DuckDBPyConnection, athlete_id: int) -> list[str]:
    """What is said of each profile FTP the loads leave out (outside ftp_min_w .. ftp_max_w)."""
    found = conn.execute(
        "SELECT ftp, first_seen, last_seen, ftp_min_w, ftp_max_w FROM profile_ftp_unused WHERE athlete_id = ?",
        [athlete_id],
    ).fetchall()
    return [
        f"the profile's FTP of {ftp:g} W (seen {first}{'' if first == last else f' to {last}'}) is outside "
        f"{low:g}–{high:g} W: not used for power loads"
        for ftp, first, last, low, high in found
    ]


def ftp_ended_by_profile(
    conn: duckdb.DuckDBPyConnection, athlete_id: int, day: dt.date
) -> tuple[dt.date, float] | None:
    """The day and value of the profile FTP that ends the FTP set from `day` (None: the next value is the athlete's
    own, or none)."""
    found = conn.execute(
        "SELECT n.valid_from, n.ftp FROM ftp_timeline t JOIN ftp_timeline n "
        "ON n.athlete_id = t.athlete_id AND n.valid_from = t.valid_to "
        "WHERE t.athlete_id = ? AND t.valid_from = ? AND n.source = 'profile' AND n.ftp <> t.ftp",
        [athlete_id, day],
    ).fetchall()
    return (found[0][0], float(found[0][1])) if found else None


def ftp_in_force(conn: duckdb.DuckDBPyConnection, athlete_id: int) -> str | None:
    """The FTP the loads use from today on, and where it comes from (None: no FTP known)."""
    found = conn.execute(
        "SELECT ftp, source, valid_from FROM ftp_timeline WHERE athlete_id = ? AND valid_to IS NULL", [athlete_id]
    ).fetchall()
    if not found:
        return None
    ftp, source, since = found[0]
    return f"{ftp:g} W ({'set' if source == 'history' else 'the profile'}, from {since})"
