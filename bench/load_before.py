"""The warehouse load as it was before issue 15, measured in the same run as today's (bench load's baseline).

Its code is taken from the git history (`git archive` of `warehouse/` at BEFORE_COMMIT) into a temporary folder and run
in a child process that imports that `fitsync.warehouse` instead of today's; the templates and the batch loop are
today's bench.load, so both load the same documents the same way. Ratios to row-by-row inserts vary 2–3× between
runs on this machine; this one compares like with like.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

# The last commit before issue 15 changed the load (dc8df44 was its first change).
BEFORE_COMMIT = "1cca795fc971e8f1cb63f6e8958a221feb847b57"
REPO = Path(__file__).resolve().parents[1]


def measure(templates: Any, athlete_id: int, count: int, work: Path) -> dict[str, Any] | None:
    """Load `count` activities with the old loader into an empty warehouse: {seconds, rows, rows_per_s}; None where
    the git history is not at hand (a source tarball), with the reason printed."""
    root = Path(tempfile.mkdtemp(prefix="before-", dir=work))
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", BEFORE_COMMIT, "warehouse"], capture_output=True, check=False
        )
        if archive.returncode:
            print(f"no load-before-issue-15 baseline: {archive.stderr.decode(errors='replace').strip()}")
            return None
        package = root / "fitsync"
        package.mkdir()
        tar = root / "warehouse.tar"
        tar.write_bytes(archive.stdout)
        with tarfile.open(tar) as t:
            t.extractall(package, filter="data")
        with (root / "templates.pkl").open("wb") as f:
            pickle.dump(templates, f)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO)])}
        child = subprocess.run(
            [sys.executable, "-m", "bench.load_before", str(root), str(athlete_id), str(count)],
            cwd=REPO,
            env=env,
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
    import fitsync.warehouse as old

    assert Path(old.__file__).is_relative_to(root), f"today's warehouse imported, not the old one: {old.__file__}"
    from fitsync.warehouse import db

    from .load import counts, load_range

    with (root / "templates.pkl").open("rb") as f:
        templates = pickle.load(f)
    path = root / "before.duckdb"
    db.migrate(path)
    seconds, without_closes, _ = load_range(path, templates, athlete_id, 0, count)
    assert without_closes is not None, "the old loader has no held writer: its closes are timed apart"
    rows = sum(counts(path).values())
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
