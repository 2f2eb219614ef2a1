"""demo: `fitsync demo` wall time and peak memory, and the peak memory of a backfill at 1k and 10k activities.

Each measured command runs as a child process; its peak memory is the kernel's ru_maxrss for that child
(os.wait4, the per-child form of getrusage(RUSAGE_CHILDREN)). `fitsync demo` runs its own sandbox in-process,
so its figure includes the sandbox. The backfills run `fitsync sync --athlete ID` (the headless CLI, the full
Dagster job) against a sandbox in this process seeded with one athlete and N activities, so their figure is
fitsync's alone. Memory must not grow with history: the 10k/1k ratio of peak memory should stay near 1.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import threading
import time
from typing import Any

import click

from . import common
from .common import table, target

DEMO_TARGET_S = 60.0
FLAT_RATIO = 1.10  # "flat": 10× the history costs at most 10% more peak memory (run-to-run noise)


def backfill(activities: int) -> dict[str, Any]:
    from fitsync.warehouse import db

    common.out.print(f"[dim]sandbox with {activities:,} activities…[/]")
    work = common.scratch_folder(f"bench-backfill-{activities}-")
    sb = common.start_sandbox(athletes=1, activities=activities, db=str(work / "sandbox.db"))
    samples: list[tuple[float, float, int]] = []  # (seconds, RSS MiB, API requests so far)
    stop = threading.Event()

    def sample(pid: int) -> None:
        """RSS of the sync process against the sandbox's request count: fetch phase vs warehouse load phase."""

        def loop() -> None:
            t0 = time.monotonic()
            while not stop.wait(0.25):
                rss = common.rss_mib(pid)
                if rss is None:
                    return
                try:
                    requests = sb.counters().get("requests", 0)
                except Exception:  # noqa: BLE001 (a sample lost is no harm)
                    continue
                samples.append((time.monotonic() - t0, rss, requests))

        threading.Thread(target=loop, daemon=True).start()

    try:
        athlete_id = sb.athletes()[0]["id"]
        config = sb.config(work / "home", sb.new_app())
        sb.connect(config, athlete_id)
        sb.reset_counters()
        common.out.print(f"[dim]fitsync sync --athlete {athlete_id} ({activities:,} activities)…[/]")
        run = common.run_measured(
            [sys.executable, "-m", "fitsync.cli.main", "sync", "--athlete", str(athlete_id)],
            env=common.env_for(config),
            cwd=work,
            timeout=1800,
            on_start=sample,
        )
        stop.set()
        if run["returncode"] != 0:
            raise RuntimeError(f"the backfill failed: {run['output'][-3000:]}")
        requests = sb.counters().get("requests", 0)
        with db.reading(config.home / "warehouse.duckdb") as conn:
            stored = conn.execute("SELECT count(*) FROM activities").fetchone()[0]
            details = conn.execute("SELECT count(*) FROM activities WHERE detail_fetched_at IS NOT NULL").fetchone()[0]
    finally:
        stop.set()
        sb.close()
        shutil.rmtree(work, ignore_errors=True)
    assert stored == activities == details, (stored, details, activities)
    fetching = [rss for _, rss, n in samples if n < requests]
    loading = [rss for _, rss, n in samples if n >= requests]
    return {
        "activities": activities,
        "seconds": run["seconds"],
        "maxrss_mib": run["maxrss_mib"],
        "requests": requests,
        "stored": stored,
        "fetch_peak_mib": max(fetching, default=float("nan")),
        "load_peak_mib": max(loading, default=float("nan")),
        "samples": samples[::4],
    }


@click.command()
@click.option("--scales", default="1000,10000", show_default=True, help="Backfill sizes (activities), comma-separated.")
@click.option(
    "--repeats",
    default=2,
    show_default=True,
    help="Runs of each scale but the largest (peak memory varies from run to run; the median is used).",
)
@click.option("--demo/--no-demo", "with_demo", default=True, show_default=True, help="Also time `fitsync demo`.")
def main(scales: str, repeats: int, with_demo: bool) -> None:
    """`fitsync demo` wall time and peak memory; backfill peak memory at 1k and 10k activities."""
    started = time.monotonic()
    sizes = sorted(int(s) for s in scales.split(",") if s.strip())
    demo_run = None
    if with_demo:
        home = common.scratch_folder("bench-demo-") / "fitsync-demo"
        common.out.print("[dim]fitsync demo…[/]")
        demo_run = common.run_measured(
            [sys.executable, "-m", "fitsync.cli.main", "demo", "--home", str(home)],
            env=common.clean_env(),
            cwd=home.parent,
            timeout=600,
        )
        shutil.rmtree(home.parent, ignore_errors=True)
        if demo_run["returncode"] != 0:
            raise RuntimeError(f"fitsync demo failed: {demo_run['output'][-3000:]}")
    runs = [backfill(n) for n in sizes for _ in range(repeats if n != sizes[-1] else 1)]
    by_size = {n: [r for r in runs if r["activities"] == n] for n in sizes}
    median = {n: statistics.median(r["maxrss_mib"] for r in rs) for n, rs in by_size.items()}

    tables = []
    if demo_run:
        tables.append(
            table(
                "fitsync demo (default: 2 athletes × 150 activities, sandbox in-process)",
                ["command", "wall s", "peak RSS MiB"],
                [["fitsync demo", demo_run["seconds"], demo_run["maxrss_mib"]]],
            )
        )
    first = sizes[0]
    tables.append(
        table(
            "Backfill (fitsync sync --athlete ID, full Dagster job, sandbox in another process)",
            [
                "activities",
                "API requests",
                "wall s",
                "activities/s",
                "peak RSS MiB",
                "peak while fetching",
                "peak while loading the warehouse",
                f"peak vs {first:,} (median)",
            ],
            [
                [
                    r["activities"],
                    r["requests"],
                    r["seconds"],
                    r["activities"] / r["seconds"],
                    r["maxrss_mib"],
                    r["fetch_peak_mib"],
                    r["load_peak_mib"],
                    f"{r['maxrss_mib'] / median[first]:.2f}×",
                ]
                for r in runs
            ],
            caption="peak RSS: ru_maxrss of the sync process; the two phase peaks are sampled every 0.25 s (fetching: "
            "while the sandbox still receives requests; loading: after the last request).",
        )
    )
    targets = []
    if demo_run:
        targets.append(
            target(
                f"fitsync demo < {DEMO_TARGET_S:g} s",
                f"{demo_run['seconds']:.1f} s",
                demo_run["seconds"] < DEMO_TARGET_S,
            )
        )
    if len(sizes) > 1:
        last = sizes[-1]
        ratio = median[last] / median[first]
        targets.append(
            target(
                f"backfill peak memory flat in history length ({last:,} vs {first:,} activities, ≤ {FLAT_RATIO}×)",
                f"{median[last]:.0f} vs {median[first]:.0f} MiB = {ratio:.2f}×",
                ratio <= FLAT_RATIO,
            )
        )
    common.save(
        "demo",
        params={"scales": sizes, "repeats": repeats, "demo": with_demo},
        tables=tables,
        targets=targets,
        data={"demo": {k: v for k, v in (demo_run or {}).items() if k != "output"}, "backfills": runs},
        started=started,
    )


if __name__ == "__main__":
    main()
