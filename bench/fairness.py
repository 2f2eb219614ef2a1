"""fairness: one app budget, many athletes: webhook refresh latency while 5 backfills run, and their shares.

The rate governor as shipped, over one SQLite ledger in a temporary home, with the real service's read ceiling
(100 per 15 minutes) and its window shrunk by `--scale`. Five backfills (one athlete each, a worker each, the
first with three workers, as a sync with parallel steps would have) ask for calls without end; every so
often, at a random moment, an athlete's webhook re-pull needs K calls (a detail and zones per edited
activity). A granted call takes `--request-ms`, as a request to the service would.

Latency of a refresh: from its first request to its last grant, in real-service time (× scale: what it waits
for is the rate windows). Compared in the same run with the governor before issue 15 (a webhook re-pull used
the bulk reserve but had no priority; no turns between athletes), emulated by putting every caller in one
class without turns.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from typing import Any

import click

from . import common
from .common import percentile, table, target

LIMIT = 100


class Caller(threading.Thread):
    def __init__(self, governor: Any, lane: Any, *, bulk: bool, request_s: float, calls: int | None = None) -> None:
        super().__init__(daemon=True)
        self.governor, self.lane, self.bulk, self.request_s, self.calls = governor, lane, bulk, request_s, calls
        self.granted: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and (self.calls is None or len(self.granted) < self.calls):
            self.governor.reserve(bulk=self.bulk, lane=self.lane)
            self.granted.append(time.time())
            time.sleep(self.request_s)  # the request itself


def scenario(
    policy: str, *, window: int, windows: int, refresh_calls: int, request_s: float, seed: int
) -> dict[str, Any]:
    """Run the mix for `windows` windows; latencies (seconds) of the refreshes and calls per backfill athlete."""
    from fitsync.client import rate_governor
    from fitsync.client.rate_governor import Lane, RateGovernor
    from fitsync.state.store import StateStore

    fair = policy == "by priority"
    rng = random.Random(seed)
    governor = RateGovernor(
        StateStore(common.scratch_folder("bench-fairness-") / "state.db"),
        short_window=window,
        boundary_guard=0.05,
    )
    governor.observe(
        {
            "X-ReadRateLimit-Limit": f"{LIMIT},100000000",
            "X-ReadRateLimit-Usage": "0,0",
            "X-RateLimit-Limit": f"{2 * LIMIT},200000000",
            "X-RateLimit-Usage": "0,0",
        }
    )
    saved = rate_governor.RateGovernor._someone_before
    if not fair:  # before issue 15: whoever asks first
        rate_governor.RateGovernor._someone_before = lambda *args, **kwargs: False  # type: ignore[method-assign]
    try:
        workers = [(1, 3), (2, 1), (3, 1), (4, 1), (5, 1)]
        backfills = [
            Caller(governor, Lane("backfill", a), bulk=True, request_s=request_s) for a, n in workers for _ in range(n)
        ]
        for c in backfills:
            c.start()
        start = time.time()
        end = start + windows * window
        latencies = []
        while time.time() < end - window:
            time.sleep(rng.uniform(0.3, 1.0) * window)
            refresh = Caller(
                governor,
                Lane("webhook" if fair else "backfill", 100 + len(latencies)),
                bulk=False,
                request_s=request_s,
                calls=refresh_calls,
            )
            asked = time.time()
            refresh.start()
            refresh.join()
            latencies.append(refresh.granted[-1] - asked)
        for c in backfills:
            c.stop.set()
        for c in backfills:
            c.join(5)
    finally:
        rate_governor.RateGovernor._someone_before = saved  # type: ignore[method-assign]
    calls: dict[int, int] = {}
    for c in backfills:
        calls[c.lane.athlete_id] = calls.get(c.lane.athlete_id, 0) + sum(1 for t in c.granted if start <= t < end)
    return {"latencies": latencies, "calls": calls}


@click.command()
@click.option("--scale", default=450, show_default=True, help="Real seconds per benchmark second (900/scale: window).")
@click.option("--windows", default=20, show_default=True, help="15-minute windows (scaled) per policy.")
@click.option("--refresh-calls", default=6, show_default=True, help="Calls of one webhook re-pull (3 activities).")
@click.option("--request-ms", default=3.0, show_default=True, help="How long a granted call takes.")
@click.option("--seed", default=11, show_default=True, help="Seed of the refreshes' random moments.")
def main(scale: int, windows: int, refresh_calls: int, request_ms: float, seed: int) -> None:
    """Webhook refresh latency while 5 backfills run, by priority vs whoever asks first."""
    started = time.monotonic()
    if 900 % scale:
        raise click.BadParameter("900 must divide by it", param_hint="--scale")
    window = 900 // scale
    results = {
        policy: scenario(
            policy, window=window, windows=windows, refresh_calls=refresh_calls, request_s=request_ms / 1000, seed=seed
        )
        for policy in ("whoever asks first (before)", "by priority")
    }
    rows, shares = [], []
    for policy, r in results.items():
        lat = [x * scale / 60 for x in r["latencies"]]  # real-service minutes
        rows.append([policy, len(lat), statistics.median(lat), percentile(lat, 99), max(lat)])
        total = sum(r["calls"].values())
        shares.append([policy, *(f"{r['calls'].get(a, 0) / total:.0%}" for a in range(1, 6))])
    latency_table = table(
        f"Webhook re-pull ({refresh_calls} calls) while 5 backfills hold the budget: latency in real-service minutes",
        ["policy", "re-pulls", "p50 min", "p99 min", "max min"],
        rows,
        caption=f"Read ceiling {LIMIT} per 15 minutes, window scaled ×{scale} ({window} s); the backfills leave the "
        "10 % bulk reserve free. Latency: first request to last grant.",
    )
    share_table = table(
        "Each backfill athlete's share of the backfills' calls (athlete 1 runs three workers)",
        ["policy", "athlete 1", "athlete 2", "athlete 3", "athlete 4", "athlete 5"],
        shares,
    )
    fair = results["by priority"]
    p99 = percentile([x * scale / 60 for x in fair["latencies"]], 99)
    total = sum(fair["calls"].values())
    spread = max(fair["calls"].values()) / total - min(fair["calls"].values()) / total
    common.save(
        "fairness",
        params={
            "scale": scale,
            "windows": windows,
            "refresh_calls": refresh_calls,
            "request_ms": request_ms,
            "seed": seed,
        },
        tables=[latency_table, share_table],
        targets=[
            target("webhook re-pull p99 < 15 minutes while 5 backfills run", f"{p99:.1f} min", p99 < 15),
            target("backfill athletes share evenly (max − min share ≤ 10 points)", f"{spread:.0%}", spread <= 0.10),
        ],
        data={k: v for k, v in results.items()},
        started=started,
    )


if __name__ == "__main__":
    main()
