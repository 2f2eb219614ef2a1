"""`fitsync demo`, the README's first command, as a newcomer runs it: it finishes, and the commands it prints at the
end paste into a shell as they are (no markup lost, no line wrapped, the right executable)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    hints = [line.strip() for line in lines[lines.index("Look at it (copy a line; each is one command):") + 1 :]]
    assert len(hints) == 3, hints
    query, report, dagster = hints
    # absolute paths: each command is right pasted in any folder
    assert f"-e '{REPO}[dev]'" in dagster and "dagster dev -m fitsync.pipelines.definitions" in dagster
    assert f"DAGSTER_HOME={home}" in dagster and "'.[dev]'" not in dagster
    assert "INFO" not in ran.stderr, ran.stderr  # Dagster's sensor logs nothing the demo did not ask for

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
    assert list((home / "report").rglob("report.html")), sorted(map(str, home.rglob("*.html")))
