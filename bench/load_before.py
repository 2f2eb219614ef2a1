"""The warehouse load before issue 15, measured in the same run as today's (bench load's baseline).

Its code is the copy in bench/baseline/warehouse (the package `bench.baseline.warehouse`), run in a child process
so that its memory does not count in today's peak; the templates and the batch loop are today's bench.load, so both
load the same documents the same way. Ratios to row-by-row inserts vary 2–3× between runs on one machine; this
one compares like with like.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "bench.baseline.warehouse"
REPO = Path(__file__).resolve().parents[1]


def measure(templates: Any, athlete_id: int, count: int, work: Path) -> dict[str, Any] | None:
    """Load `count` activities with the old loader into an empty warehouse: {seconds, rows, rows_per_s, and the
    same without the writer's closes}; None when the old loader fails, with the reason printed."""
    root = Path(tempfile.mkdtemp(prefix="before-", dir=work))
    try:
        with (root / "templates.pkl").open("wb") as f:
            pickle.dump(templates, f)
        child = subprocess.run(
            [sys.executable, "-m", "bench.load_before", str(root), str(athlete_id), str(count)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode:
            print(f"no load-before-issue-15 baseline: the old loader failed:\n{child.stderr[-2000:]}")
            return None
        return json.loads(child.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _child(root: Path, athlete_id: int, count: int) -> dict[str, Any]:
    from .baseline.warehouse import db
    from .load import counts, load_range

    with (root / "templates.pkl").open("rb") as f:
        templates = pickle.load(f)
    path = root / "before.duckdb"
    db.migrate(path)
    seconds, without_closes, _ = load_range(path, templates, athlete_id, 0, count, package=PACKAGE)
    assert without_closes is not None, "the old loader has no held writer: its closes are timed apart"
    rows = sum(counts(path, package=PACKAGE).values())
    return {
        "activities": count,
        "seconds": seconds,
        "rows": rows,
        "rows_per_s": rows / seconds,
        "seconds_without_closes": without_closes,
        "rows_per_s_without_closes": rows / without_closes,
    }


if __name__ == "__main__":
    print(json.dumps(_child(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
