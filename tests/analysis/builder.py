"""A tiny warehouse of known rows: a real DuckDB file made by the migrations, then INSERTs of what each test
needs (activities with their local start time and UTC offset, efforts, zone buckets, athlete zones, FTP)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import duckdb

from fitsync.warehouse import db

HR_BOUNDS = [(0, 120), (120, 145), (145, 160), (160, 175), (175, -1)]


class Builder:
    """Inserts rows into a migrated warehouse; ids are handed out in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        db.migrate(path)
        self.conn = duckdb.connect(str(path))
        self._ids = itertools.count(1000)

    def close(self) -> None:
        self.conn.close()

    def athlete(
        self,
        athlete_id: int,
        *,
        ftp: float | None = None,
        synced_at: str = "2025-01-10 12:00:00+00",
        preference: str = "meters",
        firstname: str = "Test",
        profile: dict[str, Any] | None = None,
    ) -> int:
        """`profile`: the raw profile's members (its bikes and shoes: gear_mileage.profile_lists)."""
        self.conn.execute(
            "INSERT INTO athletes (athlete_id, firstname, lastname, measurement_preference, ftp, synced_at, raw) "
            "VALUES (?, ?, 'Athlete', ?, ?, ?::TIMESTAMPTZ, ?)",
            [athlete_id, firstname, preference, ftp, synced_at, json.dumps(profile or {})],
        )
        self.snapshot(athlete_id, synced_at[:10], ftp)
        return athlete_id

    def snapshot(self, athlete_id: int, day: str, ftp: float | None) -> None:
        """The profile as fitsync saw it that day (what the athlete bundle loads)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO athlete_snapshots (athlete_id, snapshot_date, ftp, synced_at) "
            "VALUES (?, ?, ?, ?::TIMESTAMPTZ)",
            [athlete_id, day, ftp, f"{day} 12:00:00+00"],
        )

    def activity(
        self,
        athlete_id: int,
        local: str,
        *,
        offset_h: float = 0.0,
        sport: str = "Ride",
        distance: float = 0.0,
        moving_time: int | None = 3600,
        elevation: float = 0.0,
        device_watts: bool | None = None,
        np: float | None = None,
        suffer: float | None = None,
        tz: str = "Etc/UTC",
        activity_id: int | None = None,
        hr: float | None = None,
        elapsed: int | None = None,
        avg_watts: float | None = None,
        gear: str | None = None,
    ) -> int:
        """An activity starting at `local` (wall clock) with the UTC offset `offset_h` (start_date = local - offset)."""
        activity_id = activity_id or next(self._ids)
        wall = dt.datetime.fromisoformat(local)
        instant = (wall - dt.timedelta(hours=offset_h)).replace(tzinfo=dt.UTC)
        self.conn.execute(
            "INSERT INTO activities (activity_id, athlete_id, name, sport_type, type, start_date, start_date_local, "
            "timezone, utc_offset, distance, moving_time, elapsed_time, total_elevation_gain, device_watts, "
            "weighted_average_watts, average_watts, suffer_score, average_heartrate, gear_id, listed_at, summary_raw) "
            "VALUES (?, ?, 'a', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now(), '{}')",
            [
                activity_id,
                athlete_id,
                sport,
                sport,
                instant,
                wall,
                tz,
                int(offset_h * 3600),
                distance,
                moving_time,
                moving_time if elapsed is None else elapsed,
                elevation,
                device_watts,
                np,
                avg_watts if avg_watts is not None else np,
                suffer,
                hr,
                gear,
            ],
        )
        return activity_id

    def effort(
        self,
        athlete_id: int,
        activity_id: int,
        segment_id: int,
        local: str,
        elapsed: int | None,
        *,
        hidden: bool = False,
        pr_rank: int | None = None,
        effort_id: int | None = None,
        offset_h: float = 0.0,
        watts: float | None = None,
        distance: float | None = None,
    ) -> int:
        effort_id = effort_id or next(self._ids)
        wall = dt.datetime.fromisoformat(local)
        instant = (wall - dt.timedelta(hours=offset_h)).replace(tzinfo=dt.UTC)
        self.conn.execute(
            "INSERT INTO segment_efforts (effort_id, activity_id, athlete_id, segment_id, name, elapsed_time, "
            "moving_time, start_date, start_date_local, pr_rank, hidden, device_watts, average_watts, distance, raw) "
            "VALUES (?, ?, ?, ?, 'effort name', ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}')",
            [
                effort_id,
                activity_id,
                athlete_id,
                segment_id,
                elapsed,
                elapsed,
                instant,
                wall,
                pr_rank,
                hidden,
                watts is not None,
                watts,
                distance,
            ],
        )
        return effort_id

    def lap(
        self,
        activity_id: int,
        lap_id: int,
        local: str,
        moving_time: int,
        watts: float | None,
        *,
        index: int = 1,
        hr: float | None = None,
        distance: float = 0.0,
    ) -> None:
        self.conn.execute(
            "INSERT INTO laps (lap_id, activity_id, lap_index, moving_time, elapsed_time, distance, "
            "start_date_local, device_watts, average_watts, average_heartrate, raw) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}')",
            [lap_id, activity_id, index, moving_time, moving_time, distance, local, watts is not None, watts, hr],
        )

    def splits(self, activity_id: int, splits: list[tuple[float, ...]], *, gap: float | None = None) -> None:
        """Kilometre splits: (distance m, elapsed s[, average heart rate]), numbered from 1; `gap`: every split's
        grade-adjusted speed, m/s (as the real service sends)."""
        for n, split in enumerate(splits, start=1):
            distance, elapsed, hr = (*split, None)[:3]
            self.conn.execute(
                "INSERT INTO splits_metric (activity_id, split, distance, elapsed_time, moving_time, "
                "average_heartrate, average_grade_adjusted_speed, raw) VALUES (?, ?, ?, ?, ?, ?, ?, '{}')",
                [activity_id, n, distance, elapsed, elapsed, hr, gap],
            )

    def gear(
        self,
        athlete_id: int,
        gear_id: str,
        kind: str,
        name: str,
        *,
        distance: float = 0.0,
        retired: bool | None = None,
        primary: bool = False,
    ) -> None:
        self.conn.execute(
            "INSERT INTO gear (gear_id, athlete_id, kind, name, is_primary, distance, retired, synced_at, "
            "raw) VALUES (?, ?, ?, ?, ?, ?, ?, now(), '{}')",
            [gear_id, athlete_id, kind, name, primary, distance, retired],
        )

    def segment(self, segment_id: int, name: str) -> None:
        self.conn.execute(
            "INSERT INTO segments (segment_id, name, synced_at, raw) VALUES (?, ?, now(), '{}')", [segment_id, name]
        )

    def buckets(
        self,
        activity_id: int,
        seconds: list[int],
        zone_type: str = "heartrate",
        bounds: list[tuple[float, float]] | None = None,
    ) -> None:
        bounds = bounds or (HR_BOUNDS if len(seconds) == 5 else [(i * 50, (i + 1) * 50) for i in range(len(seconds))])
        for index, (secs, (low, high)) in enumerate(zip(seconds, bounds), start=1):
            self.conn.execute(
                "INSERT INTO activity_zone_buckets VALUES (?, ?, ?, ?, ?, ?)",
                [activity_id, zone_type, index, low, high, secs],
            )

    def athlete_zones(
        self, athlete_id: int, snapshot: str, bounds: list[tuple[float, float]], zone_type: str = "heartrate"
    ) -> None:
        for index, (low, high) in enumerate(bounds, start=1):
            self.conn.execute(
                "INSERT INTO athlete_zones (athlete_id, snapshot_date, zone_type, bucket_index, min, max, "
                "seconds, synced_at, raw) VALUES (?, ?, ?, ?, ?, ?, 0, now(), '{}')",
                [athlete_id, snapshot, zone_type, index, low, high],
            )

    def thresholds(
        self, athlete_id: int, valid_from: str, *, lthr: float | None = None, pace: float | None = None
    ) -> None:
        self.conn.execute(
            "INSERT INTO analysis_thresholds VALUES (?, ?, ?, ?, 'test')", [athlete_id, valid_from, lthr, pace]
        )

    def ftp(self, athlete_id: int, valid_from: str, ftp: float) -> None:
        self.conn.execute("INSERT INTO analysis_ftp_history VALUES (?, ?, ?, 'test')", [athlete_id, valid_from, ftp])

    def sql(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, list(params)).fetchall()
