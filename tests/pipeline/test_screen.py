"""Off a terminal (cron, a pipe into a log) fitsync's output keeps its lines whole and its tables uncut."""

from __future__ import annotations

import subprocess
import sys

from ..processes import REPO, subprocess_env

SCRIPT = """
from rich.table import Table
from fitsync.cli import screen
out = screen.console()
out.print("athlete 48000001: " + "a sentence that goes on " * 8 + "run `fitsync sync` again")
table = Table("asset", "counted")
table.add_row("segment_effort_history", "efforts=12, segments=6, " * 5)
out.print(table)
"""


def test_off_a_terminal_lines_stay_whole_and_tables_uncut(tmp_path: object) -> None:
    env = {k: v for k, v in subprocess_env(tmp_path).items() if k != "COLUMNS"}  # type: ignore[arg-type]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert any(line.startswith("athlete 48000001:") and line.endswith("run `fitsync sync` again") for line in lines)
    assert "segment_effort_history" in done.stdout and "…" not in done.stdout, done.stdout
    assert sum("efforts=12" in line for line in lines) == 1  # the cell on one line, not wrapped
