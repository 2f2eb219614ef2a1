"""Whether a run the Dagster daemon launched is syncing an athlete now, read before Dagster loads.

`fitsync sync` does the run's first steps itself (sync/first_steps.py) only when no such run is in flight, so that a
command and the daemon never fetch for one athlete at once (the daemon's runs take no athlete lock: the run queue
allows one per partition instead). Read from Dagster's own SQLite run storage under DAGSTER_HOME (its `runs` and
`run_tags` tables), read-only. With any other storage a dagster.yaml names (PostgreSQL) it cannot tell without
Dagster: the command then loads Dagster first and asks it (sync_runner.daemon_run_of), as a run always does.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

PARTITION_TAG = "dagster/partition"
PID_TAG, HOST_TAG = "fitsync/pid", "fitsync/host"  # a fitsync command's run: its athlete lock answers for it
STORAGE_KEYS = ("storage", "run_storage")  # a dagster.yaml naming either keeps its runs elsewhere

IN_FLIGHT = f"""
SELECT r.run_id FROM runs r JOIN run_tags t ON t.run_id = r.run_id
WHERE t.key = '{PARTITION_TAG}' AND t.value = ? AND r.status IN ('STARTING', 'STARTED')
  AND NOT EXISTS (SELECT 1 FROM run_tags p WHERE p.run_id = r.run_id AND p.key = '{PID_TAG}')
LIMIT 1
"""


def dagster_home(fitsync_home: Path) -> Path:
    """DAGSTER_HOME, or FITSYNC_HOME/dagster when it is unset (pipelines/instance.py)."""
    return Path(os.environ.get("DAGSTER_HOME") or fitsync_home / "dagster")


def in_flight(fitsync_home: Path, athlete_id: int) -> bool | None:
    """True: a daemon's run of the athlete is starting or started; False: none is; None: not known without Dagster."""
    home = dagster_home(fitsync_home)
    settings = home / "dagster.yaml"
    if settings.exists():
        import yaml  # Dagster's own dependency: the settings file as Dagster reads it

        try:
            loaded = yaml.safe_load(settings.read_text())
        except (OSError, yaml.YAMLError):
            return None
        if loaded is not None and (not isinstance(loaded, dict) or any(key in loaded for key in STORAGE_KEYS)):
            return None
    runs = home / "history" / "runs.db"
    if not runs.exists():
        return False  # no run ever stored here
    try:
        with contextlib.closing(sqlite3.connect(f"{runs.as_uri()}?mode=ro", uri=True, timeout=5.0)) as conn:
            return conn.execute(IN_FLIGHT, (str(athlete_id),)).fetchone() is not None
    except sqlite3.Error:
        return None
