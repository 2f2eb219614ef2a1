"""One warehouse for many hosts (issue 31): three fitsync homes stand for three machines sharing one PostgreSQL state
store and one DuckLake (its catalog in PostgreSQL, its data files in one folder). Two run `fitsync sync` at once
over the same athletes; the third, which never synced, queries every athlete's activities, all detailed, and writes
the report. Everything runs as processes, as on the hosts: slow (a minute and more), run with `-m slow`.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from fitsync.client import config_file
from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient

from ..postgres_server import PostgresServer
from ..processes import FITSYNC, REPO, popen, subprocess_env
from ..sandbox_harness import Harness, add_athlete, record, save_grant
from .test_destructive_commands import fitsync

pytestmark = pytest.mark.slow

ATHLETES, ACTIVITIES = 3, 4
HOSTS = ("sync-1", "sync-2", "analyst")


@pytest.mark.timeout(600)  # three fitsync processes and a PostgreSQL on two cores: ≈ 40 s idle, 2 min and more busy
def test_two_hosts_load_one_lake_and_a_third_reads_it(
    sb: Harness, postgres_server: PostgresServer, tmp_path: Path, roomy_limits: None
) -> None:
    app = sb.new_app()
    athletes = [add_athlete(sb) for _ in range(ATHLETES)]
    for athlete in athletes:
        for i in range(ACTIVITIES):
            record(sb, athlete, days_ago=1.5 + 3 * i)
    shared = {
        "base_url": sb.server.api_url,
        "auth_url": sb.server.base_url,
        "client_id": app.client_id,
        "client_secret": app.client_secret,
        "state_url": postgres_server.new_database(),
        "secret_key": secrets.token_urlsafe(24),
        "warehouse_url": f"ducklake:postgres:{postgres_server.new_database()}",
        "warehouse_data_path": str(tmp_path / "lake"),
        "boundary_guard": 0.05,
    }
    homes = {host: tmp_path / host for host in HOSTS}
    for home in homes.values():
        config_file.write(home, shared)
    with FitsyncClient(Config.load({}, home=homes["sync-1"])) as client:  # `fitsync connect`, on one host
        for athlete in athletes:
            save_grant(sb, client, app, athlete)

    workers = [
        popen(
            [*FITSYNC, "sync"],
            cwd=REPO,
            env=subprocess_env(homes[host]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for host in ("sync-1", "sync-2")
    ]
    said = [worker.communicate(timeout=300) for worker in workers]
    for worker, (_, err) in zip(workers, said, strict=True):
        assert worker.returncode == 0, err  # an athlete the other host has is left to it: not "partial"
    assert not any("Traceback" in err for _, err in said)

    analyst = homes["analyst"]
    assert not (analyst / "warehouse.duckdb").exists()
    found = fitsync(
        analyst,
        "query",
        "--format",
        "json",
        "SELECT athlete_id, count(*) AS activities, count(detail_fetched_at) AS detailed "
        "FROM activities GROUP BY ALL ORDER BY 1",
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == [
        {"athlete_id": athlete, "activities": ACTIVITIES, "detailed": ACTIVITIES} for athlete in sorted(athletes)
    ]
    report = fitsync(analyst, "report", "--athlete", str(athletes[0]), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / str(athletes[0]) / "report.html").stat().st_size > 10_000
    assert not (analyst / "warehouse.duckdb").exists()  # the lake, never a file of its own
    doctor = fitsync(analyst, "doctor")
    assert "warehouse lake" in doctor.stdout + doctor.stderr, doctor.stdout
