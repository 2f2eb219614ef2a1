"""`fitsync demo`, the README's first command, as a newcomer runs it: it finishes, the commands it prints at the end
paste into a shell as they are (no markup lost, no line wrapped, the right executable), Dagster opened on its home
later replays none of its events, and Ctrl-C stops it with its own line only."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from ..processes import foreground
from .conftest import REPO, subprocess_env


def test_the_demo_runs_and_its_closing_commands_paste_and_work(tmp_path: Path) -> None:
    home = tmp_path / "demo"
    env = subprocess_env(tmp_path / "unused", COLUMNS="80")  # a narrow terminal must not break the commands
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "fitsync.cli.main",
            "demo",
            "--home",
            str(home),
            "--athletes",
            "1",
            "--activities-per-athlete",
            "20",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("fitsync demo (about 12 s): "), lines[0]  # how long it takes, first
    assert "athlete 48000001: full sync…" in lines, lines  # a run's seconds are said, off a terminal too
    assert "athlete 48000001: listing" in lines and "athlete 48000001: loading the warehouse" in lines, lines  # phases
    hints = [line.strip() for line in lines[lines.index("Look at it (copy a line; each is one command):") + 1 :]]
    assert len(hints) == 3, hints
    query, report, dagster = hints
    # absolute paths: each command is right pasted in any folder
    assert f"-e '{REPO}[dev]'" in dagster and "dagster-webserver -m fitsync.pipelines.definitions" in dagster
    assert f"DAGSTER_HOME={home}" in dagster and "'.[dev]'" not in dagster
    assert "INFO" not in ran.stderr, ran.stderr  # Dagster's sensor logs nothing the demo did not ask for
    assert_dagster_would_launch_nothing_again(home)

    shell_env = {k: v for k, v in env.items() if k != "FITSYNC_HOME"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command in (query, report):
        done = subprocess.run(
            ["bash", "-c", command], cwd=elsewhere, env=shell_env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    assert (
        "sport_type"
        in subprocess.run(
            ["bash", "-c", query], cwd=elsewhere, env=shell_env, capture_output=True, text=True, timeout=120
        ).stdout
    )
    assert list((home / "reports").rglob("report.html")), sorted(map(str, home.rglob("*.html")))


# The demo, its webhook round trip slowed at the sandbox once the athlete's changes are made (each API call of the
# refresh run takes seconds), so that a Ctrl-C lands while that run is fetching.
SLOW_REFRESH = """
import sys
from fitsync.cli import demo
from fitsync.cli.main import main

changed = demo._change_activities

def change_then_slow_down(stage, athlete_id):
    changes = changed(stage, athlete_id)
    stage.http.put("/sandbox/settings", json={"fault_latency_ms": 2000}, headers=stage.console)
    return changes

demo._change_activities = change_then_slow_down
sys.exit(main())
"""


def test_ctrl_c_during_the_webhook_run_prints_only_the_demos_line(tmp_path: Path) -> None:
    """A stop asked for while the sensor's run fetches: the run's steps end interrupted, and the terminal shows no
    Dagster error (STEP_FAILURE, RUN_FAILURE, a stack trace), only the demo's own line (finding F3)."""
    home = tmp_path / "demo"
    command = [sys.executable, "-c", SLOW_REFRESH, "demo", "--home", str(home), "--athletes", "1"]
    with foreground(
        tmp_path / "unused",
        command=[*command, "--activities-per-athlete", "20"],
        env=subprocess_env(tmp_path / "unused", COLUMNS="120"),
    ) as job:
        job.wait_for("As athlete", timeout=240)  # not "5. As": rich styles the number apart
        job.wait_for_next("listing")  # the run's first step, on the live line
        job.send(signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        text = job.wait_for_exit()
        code = job.close()
    assert code == 130, text
    assert "Stopped by Ctrl-C (SIGINT)" in text, text
    assert f"`fitsync demo --home {home.resolve()}` starts it over" in text, text  # pasted anywhere, the same demo
    for noise in ("STEP_FAILURE", "RUN_FAILURE", "Traceback", "Stack Trace", "ERROR"):
        assert noise not in text, text
    assert "turned the events into a run" not in text, text  # step 6 not done: the stop came during the run


def assert_dagster_would_launch_nothing_again(home: Path) -> None:
    """The demo's webhook run is recorded as the `webhook_events` sensor's, and the sensor's cursor is where the daemon
    reads it: evaluated from there, as `dagster dev` on the demo's home would, the sensor finds no event to replay
    (finding F5: it once re-ran the demo's events against the real service's address)."""
    from dagster import DagsterInstance, RunsFilter

    from fitsync.cli import demo_daemon
    from fitsync.client.config import Config
    from fitsync.pipelines.sync_runner import tick_webhook_sensor

    with DagsterInstance.from_config(str(home / "dagster")) as instance:
        state = demo_daemon.sensor_state(instance)
        assert state is not None and state.instigator_data is not None
        cursor = state.instigator_data.cursor  # type: ignore[union-attr]  (a sensor's data has one)
        assert cursor == "3", state  # the demo's three events
        runs = instance.get_runs(RunsFilter(job_name="webhook_refresh"))
        assert [r.tags.get("dagster/sensor_name") for r in runs] == ["webhook_events"], runs
        assert runs[0].tags.get("dagster/run_key", "").startswith("webhook-")
        assert tick_webhook_sensor(Config.load(home=home), instance, cursor) == ([], cursor)
