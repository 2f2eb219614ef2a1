"""demo: `fitsync demo` wall time and peak memory, and the peak memory of a backfill at 1k and 10k activities.

Each measured command runs as a child process; its peak memory is the kernel's ru_maxrss for that child
(os.wait4, the per-child form of getrusage(RUSAGE_CHILDREN)). `fitsync demo` runs its own sandbox in-process,
so its figure includes the sandbox. The backfills run `fitsync sync --athlete ID` (the headless CLI, the full
Dagster job) against a sandbox in this process seeded with one athlete and N activities, so their figure is
fitsync's alone. Memory must not grow with history: the 10k/1k ratio of peak memory should stay near 1.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from . import common
from .common import table, target

DEMO_TARGET_S = 60.0
FLAT_RATIO = 1.25  # "flat": 10× the history costs at most 25% more peak memory


def backfill(activities: int) -> dict[str, Any]:
    from fitsync.warehouse import db

    common.out.print(f"[dim]sandbox with {activities:,} activities…[/]")
    work = Path(tempfile.mkdtemp(prefix=f"bench-backfill-{activities}-"))
    sb = common.start_sandbox(athletes=1, activities=activities, db=str(work / "sandbox.db"))
    try:
        athlete_id = sb.athletes()[0]["id"]
        config = sb.config(work / "home", sb.new_app())
        sb.connect(config, athlete_id)
        common.out.print(f"[dim]fitsync sync --athlete {athlete_id} ({activities:,} activities)…[/]")
        run = common.run_measured([sys.executable, "-m", "fitsync.pipelines.cli", "sync", "--athlete", str(athlete_id)],
                                  env=common.env_for(config), cwd=work, timeout=1800)
        if run["returncode"] != 0:
            raise RuntimeError(f"the backfill failed: {run['output'][-3000:]}")
        requests = sb.counters().get("requests", 0)
        with db.reading(config.home / "warehouse.duckdb") as conn:
            stored = conn.execute("SELECT count(*) FROM activities").fetchone()[0]
            details = conn.execute("SELECT count(*) FROM activities WHERE detail_fetched_at IS NOT NULL").fetchone()[0]
    finally:
        sb.close()
        shutil.rmtree(work, ignore_errors=True)
    assert stored == activities == details, (stored, details, activities)
    return {"activities": activities, "seconds": run["seconds"], "maxrss_mib": run["maxrss_mib"],
            "requests": requests, "stored": stored}


@click.command()
@click.option("--scales", default="1000,10000", show_default=True, help="Backfill sizes (activities), comma-separated.")
@click.option("--demo/--no-demo", "with_demo", default=True, show_default=True, help="Also time `fitsync demo`.")
def main(scales: str, with_demo: bool) -> None:
    """`fitsync demo` wall time and peak memory; backfill peak memory at 1k and 10k activities."""
    started = time.monotonic()
    sizes = sorted(int(s) for s in scales.split(",") if s.strip())
    demo_run = None
    if with_demo:
        home = Path(tempfile.mkdtemp(prefix="bench-demo-")) / "fitsync-demo"
        common.out.print("[dim]fitsync demo…[/]")
        demo_run = common.run_measured([sys.executable, "-m", "fitsync.pipelines.cli", "demo", "--home", str(home)],
                                       env=common.clean_env(), cwd=home.parent, timeout=600)
        shutil.rmtree(home.parent, ignore_errors=True)
        if demo_run["returncode"] != 0:
            raise RuntimeError(f"fitsync demo failed: {demo_run['output'][-3000:]}")
    runs = [backfill(n) for n in sizes]

    tables = []
    if demo_run:
        tables.append(table("fitsync demo (default: 2 athletes × 150 activities, sandbox in-process)",
                            ["command", "wall s", "peak RSS MiB"],
                            [["fitsync demo", demo_run["seconds"], demo_run["maxrss_mib"]]]))
    first = runs[0]
    tables.append(table(
        "Backfill (fitsync sync --athlete ID, full Dagster job, sandbox in another process)",
        ["activities", "API requests", "wall s", "activities/s", "peak RSS MiB", f"vs {first['activities']:,}"],
        [[r["activities"], r["requests"], r["seconds"], r["activities"] / r["seconds"], r["maxrss_mib"],
          f"{r['maxrss_mib'] / first['maxrss_mib']:.2f}×"] for r in runs]))
    targets = []
    if demo_run:
        targets.append(target(f"fitsync demo < {DEMO_TARGET_S:g} s", f"{demo_run['seconds']:.1f} s",
                              demo_run["seconds"] < DEMO_TARGET_S))
    if len(runs) > 1:
        last = runs[-1]
        ratio = last["maxrss_mib"] / first["maxrss_mib"]
        targets.append(target(f"backfill peak memory flat in history length ({last['activities']:,} vs "
                              f"{first['activities']:,} activities, ≤ {FLAT_RATIO}×)",
                              f"{last['maxrss_mib']:.0f} vs {first['maxrss_mib']:.0f} MiB = {ratio:.2f}×",
                              ratio <= FLAT_RATIO))
    common.save("demo", params={"scales": sizes, "demo": with_demo}, tables=tables, targets=targets,
                data={"demo": {k: v for k, v in (demo_run or {}).items() if k != "output"}, "backfills": runs},
                started=started)


if __name__ == "__main__":
    main()
