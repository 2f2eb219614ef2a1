"""An analyst's session holding `warehouse.duckdb` open makes a sync wait and say so, then load: never a failure.
Every connection fitsync opens runs with DuckDB 2.0's false-"Conversion Error" optimizer switched off."""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fitsync.warehouse import db

from ..processes import popen
from ..sandbox_harness import Harness, wait_until
from .conftest import REPO, Connect, add_athlete, record_many
from .test_cli import FITSYNC, env_for, fitsync, synced_by_cli

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow

HOLDER = """
import sys, duckdb

conn = duckdb.connect(sys.argv[1], read_only=True)
print("open", flush=True)
sys.stdin.readline()
conn.close()
"""


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse file
def test_a_sync_waits_for_an_analysts_open_session_and_says_so(sb: Harness, connect: Connect) -> None:
    aid, home, env = synced_by_cli(sb, connect, 3)
    assert stat.S_IMODE(home.warehouse.stat().st_mode) == 0o600  # training data: the owner's only
    newer = record_many(sb, aid, 2, oldest_days=1)

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home.warehouse)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
    sync = popen([*FITSYNC, "sync"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(sync.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        wait_until(
            lambda: any(f"is open in process {holder.pid} (" in line for line in lines),
            60,
            "the sync to say it waits for the warehouse",
            interval=0.1,
        )
        assert sync.poll() is None  # waiting, not failed
        holder.communicate("close\n", timeout=10)
        sync.wait(120)
    finally:
        holder.kill()
        sync.kill()
    reader.join(10)
    message = next(line for line in lines if f"is open in process {holder.pid} (" in line)
    assert "waiting for it to close" in message and "giving up after" in message
    assert sync.returncode == 0, "".join(lines)
    assert set(newer) <= {r[0] for r in home.query("SELECT activity_id FROM activities")}


def test_every_connection_carries_the_duckdb_optimizer_workaround(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    db.migrate(path)
    for opened in (db.writing(path), db.reading(path)):
        with opened as conn:
            assert (
                conn.execute("SELECT current_setting('disabled_optimizers')").fetchone()[0]
                == "compressed_materialization"
            )
            # the shape of query DuckDB 2.0.0 fails on: LEFT JOIN + filter + GROUP BY + ORDER BY
            conn.execute(
                "SELECT a.sport_type, count(z.activity_id) FROM activities a LEFT JOIN activity_zones z "
                "USING (activity_id) WHERE a.distance > 0 GROUP BY ALL ORDER BY 2 DESC"
            ).fetchall()


@pytest.mark.sqlite_only  # the state store is incidental: the files of the home
def test_everything_a_sync_writes_under_the_home_is_the_owners_only(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=5)
    home = connect(aid)
    home.config.home.chmod(0o755)  # even when the folder was made by hand, loosely
    assert fitsync(env_for(home), "sync").returncode == 0
    assert fitsync(env_for(home), "report", "--out", str(home.config.home / "report")).returncode == 0
    loose = [
        f"{p.relative_to(home.config.home)} {stat.S_IMODE(p.stat().st_mode):o}"
        for p in [home.config.home, *home.config.home.rglob("*")]
        if p.name != "config.toml" and stat.S_IMODE(p.stat().st_mode) & 0o077
    ]
    assert loose == []
