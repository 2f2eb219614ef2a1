"""rate-budget: how much of the application's rate budget fitsync turns into answered calls, and how many 429s,
for 1 and 4 processes sharing the budget; baseline: a client that sleeps only once the headers show a spent
budget (what popular clients do).

The sandbox runs with a short window (2 s by default) and a small read limit (20 per window). Each process is a
subprocess making GET /athlete calls in a loop for W whole windows, starting at a window boundary. fitsync
processes go through FitsyncClient and share one FITSYNC_HOME (one rate ledger), as every fitsync process on
a machine does. The maximum the limit allows is limit × W answered calls; the share is the calls sent inside
those W windows and answered 200, over that maximum. 429s are counted by the processes and by the sandbox.
The largest process count runs once more with the state store (the rate ledger) on one PostgreSQL database
(`FITSYNC_STATE_URL`, a throwaway server from the machine's binaries), as processes on several hosts would share it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import click

from fitsync.client.secret import Secret

from . import common
from .common import table, target

TARGET_SHARE = 0.95
HANG_AFTER = 5.0  # seconds past the end after which a call still waiting is reported as hung


# ----------------------------------------------------------------------------------------------- workers


def _window_end(now: float, window: float) -> float:
    return (now // window + 1) * window


def worker(job: dict[str, Any]) -> None:
    """One process: ready → wait for the start line → call until the end time → one JSON report."""
    events: list[list[Any]] = []  # [sent_at, status, short read usage or None]
    failures: list[str] = []

    def on_request(request: Any) -> None:
        events.append([time.time(), None, None])

    def on_response(response: Any) -> None:
        entry = next(e for e in reversed(events) if e[1] is None)
        entry[1] = response.status_code
        usage = response.headers.get("X-ReadRateLimit-Usage")
        entry[2] = int(usage.split(",")[0]) if usage else None

    if job["approach"] == "fitsync":
        from fitsync.client.config import Config
        from fitsync.client.runtime import FitsyncClient

        client = FitsyncClient(Config.load())
        client.transport.http.event_hooks["request"].append(on_request)
        client.transport.http.event_hooks["response"].append(on_response)
        api = client.athlete(job["athlete_id"], bulk=job.get("bulk", False))

        def call() -> None:
            athlete = api.athlete()
            if athlete.id != job["athlete_id"]:
                raise AssertionError(f"wrong athlete {athlete.id}")
    else:
        import httpx

        http = httpx.Client(
            base_url=job["api_url"],
            headers={"Authorization": f"Bearer {job['token']}"},
            timeout=30,
            event_hooks={"request": [on_request], "response": [on_response]},
        )
        window = job["window"]

        def call() -> None:
            """stravalib-style: send; if the answer says the budget is spent (or is a 429), sleep to the window's end."""
            while True:
                response = http.get("/athlete")
                spent = response.status_code == 429
                for name in ("X-RateLimit", "X-ReadRateLimit"):
                    limit, usage = response.headers.get(f"{name}-Limit"), response.headers.get(f"{name}-Usage")
                    if limit and usage and int(usage.split(",")[0]) >= int(limit.split(",")[0]):
                        spent = True
                if spent:
                    time.sleep(max(0.0, _window_end(time.time(), window) - time.time()))
                if response.status_code != 429:
                    response.raise_for_status()
                    return

    print("ready", flush=True)
    start, end = (float(x) for x in sys.stdin.readline().split())
    done = {"calls": 0}

    def loop() -> None:
        time.sleep(max(0.0, start - time.time()))
        while time.time() < end:
            try:
                call()
                done["calls"] += 1
            except Exception as error:  # noqa: BLE001 (reported, not raised)
                failures.append(f"{type(error).__name__}: {error}"[:300])
                if len(failures) > 20:
                    break

    # A call may wait for the next window (that is the point); one still blocked well after the end is a hang.
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    thread.join(timeout=max(0.0, end - time.time()) + HANG_AFTER)
    hung = thread.is_alive()
    print(json.dumps({"events": list(events), "failures": failures, "calls": done["calls"], "hung": hung}), flush=True)
    os._exit(0)  # a hung call holds no lock worth releasing


# ----------------------------------------------------------------------------------------------- runner


def run_config(
    sb: common.Sandbox,
    approach: str,
    processes: int,
    *,
    window: int,
    windows: int,
    limit: int,
    guard: float,
    bulk: bool,
    athlete_id: int,
    state_url: str = "",
) -> dict[str, Any]:
    home = common.scratch_folder("bench-rate-")
    config = sb.config(
        home,
        sb.new_app(f"bench {approach} ×{processes}"),
        short_window=window,
        long_window=86400,
        boundary_guard=guard,
        timeout=15.0,
        state_url=Secret(state_url),
    )
    sb.connect(config, athlete_id)
    job: dict[str, Any] = {"approach": approach, "athlete_id": athlete_id, "window": window, "bulk": bulk}
    if approach == "baseline":
        from fitsync.client.runtime import FitsyncClient

        with FitsyncClient(config) as client:
            job.update(api_url=sb.api_url, token=client.tokens.access_token(athlete_id).reveal())
    env = common.env_for(config)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.rate_budget", "worker", json.dumps(job)],
            env=env,
            cwd=common.REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    try:
        for proc in procs:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if line.strip() != "ready":
                raise RuntimeError(f"worker failed to start: {line!r} {proc.stderr.read()}")  # type: ignore[union-attr]
        before = sb.counters()
        start = _window_end(time.time() + 0.5, window)  # a whole window from its first instant
        end = start + windows * window
        for proc in procs:
            proc.stdin.write(f"{start} {end}\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
        reports = []
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=windows * window + 120)
            if proc.returncode != 0:
                raise RuntimeError(f"worker crashed ({proc.returncode}): {stderr[-3000:]}")
            reports.append(json.loads(stdout.strip().splitlines()[-1]))
        after = sb.counters()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    events = [e for r in reports for e in r["events"]]
    inside = [e for e in events if start <= e[0] < end]
    ok = sum(1 for e in inside if e[1] == 200)
    per_window = [
        sum(1 for e in inside if e[1] == 200 and start + w * window <= e[0] < start + (w + 1) * window)
        for w in range(windows)
    ]
    maximum = limit * windows
    return {
        "approach": approach + (" (bulk)" if bulk else ""),
        "processes": processes,
        "guard": guard,
        "state": "postgresql" if state_url else "sqlite",
        "hung": sum(1 for r in reports if r["hung"]),
        "ok": ok,
        "maximum": maximum,
        "share": ok / maximum,
        "throughput_per_s": ok / (end - start),
        "limit_per_s": limit / window,
        "status_429": sum(1 for e in events if e[1] == 429),
        "sandbox_429": after.get("status_429", 0) - before.get("status_429", 0),
        "max_read_usage": max((e[2] for e in events if e[1] == 200 and e[2] is not None), default=0),
        "per_window": per_window,
        "failures": [f for r in reports for f in r["failures"]],
        "sent_after_end": sum(1 for e in events if e[0] >= end),
    }


@click.command()
@click.option("--window", default=2, show_default=True, help="Short rate window of the sandbox, seconds.")
@click.option("--read-limit", default=20, show_default=True, help="Read requests per short window.")
@click.option("--windows", default=10, show_default=True, help="Whole windows each configuration runs for.")
@click.option("--processes", default="1,4", show_default=True, help="Process counts to run, comma-separated.")
@click.option(
    "--guard",
    default=0.2,
    show_default=True,
    help="fitsync's boundary_guard for these short windows (seconds; the default 1.0 is for 15-minute windows).",
)
@click.option(
    "--bulk/--no-bulk",
    default=True,
    show_default=True,
    help="Also run fitsync in bulk (backfill) mode, which leaves its reserve of each window unused.",
)
@click.option(
    "--postgres/--no-postgres",
    default=True,
    show_default=True,
    help="Also run the largest process count on one PostgreSQL state store (FITSYNC_STATE_URL), where the "
    "machine has the server binaries (a throwaway server is started).",
)
@click.option(
    "--default-guard/--no-default-guard",
    default=True,
    show_default=True,
    help="Also run 1 fitsync process with the shipped boundary_guard (1.0 s) on these windows.",
)
def main(
    window: int,
    read_limit: int,
    windows: int,
    processes: str,
    guard: float,
    bulk: bool,
    default_guard: bool,
    postgres: bool,
) -> None:
    """Share of the rate budget used and 429s, fitsync vs a header-reading client, 1 and 4 processes."""
    started = time.monotonic()
    counts = [int(p) for p in processes.split(",") if p.strip()]
    # reads also spend the overall budget: give it room so the read limit is the one that binds
    settings = {
        "short_window": window,
        "read_limit_short": read_limit,
        "overall_limit_short": read_limit * 2,
        "long_window": 86400,
        "read_limit_long": 10_000_000,
        "overall_limit_long": 10_000_000,
    }
    sb = common.start_sandbox(athletes=1, activities=5, settings=settings)
    results = []
    try:
        athlete_id = sb.athletes()[0]["id"]
        plan = [("fitsync", n, False, guard) for n in counts] + [("baseline", n, False, guard) for n in counts]
        if bulk:
            plan.append(("fitsync", max(counts), True, guard))
        if default_guard:
            from fitsync.client.config import Config

            plan.append(("fitsync", 1, False, Config().boundary_guard))
        for approach, n, as_bulk, g in plan:
            common.out.print(
                f"[dim]{approach}{' (bulk)' if as_bulk else ''} × {n} process(es), guard {g} s, {windows} windows…[/]"
            )
            results.append(
                run_config(
                    sb,
                    approach,
                    n,
                    window=window,
                    windows=windows,
                    limit=read_limit,
                    guard=g,
                    bulk=as_bulk,
                    athlete_id=athlete_id,
                )
            )
        if postgres:
            server = _postgres_server()
            if server is not None:
                try:
                    n = max(counts)
                    common.out.print(
                        f"[dim]fitsync × {n} process(es), one PostgreSQL state store, {windows} windows…[/]"
                    )
                    results.append(
                        run_config(
                            sb,
                            "fitsync",
                            n,
                            window=window,
                            windows=windows,
                            limit=read_limit,
                            guard=guard,
                            bulk=False,
                            athlete_id=athlete_id,
                            state_url=server.new_database(),
                        )
                    )
                finally:
                    server.stop()
    finally:
        sb.close()

    def name(r: dict[str, Any]) -> str:
        label = {
            "fitsync": "fitsync",
            "baseline": "sleep when headers say spent",
            "fitsync (bulk)": "fitsync, bulk mode",
        }[r["approach"]]
        return (
            label
            + (f", boundary_guard {r['guard']} s" if r["approach"] != "baseline" else "")
            + (", PostgreSQL state store" if r.get("state") == "postgresql" else "")
        )

    main_table = table(
        f"Rate budget: {read_limit} reads per {window} s window, {windows} windows per configuration",
        [
            "client",
            "processes",
            "answered calls",
            "maximum",
            "share of maximum",
            "calls/s",
            "429s (clients)",
            "429s (sandbox)",
            "max usage seen",
            "failures",
            "hung",
        ],
        [
            [
                name(r),
                r["processes"],
                r["ok"],
                r["maximum"],
                f"{r['share']:.1%}",
                r["throughput_per_s"],
                r["status_429"],
                r["sandbox_429"],
                f"{r['max_read_usage']}/{read_limit}",
                len(r["failures"]),
                r["hung"],
            ]
            for r in results
        ],
        caption=f"maximum = {read_limit} × {windows} windows. Bulk mode leaves bulk_reserve (10%) of each short window to "
        "interactive and webhook work by design. hung = processes whose call was still blocked "
        f"{HANG_AFTER:.0f} s after the end.",
    )
    targets = []
    for r in results:
        if r["approach"] != "fitsync" or r["guard"] != guard:
            continue
        on = " on one PostgreSQL state store" if r.get("state") == "postgresql" else ""
        targets.append(
            target(
                f"fitsync, {r['processes']} process(es){on}: ≥ 95% of the budget with zero 429s",
                f"{r['share']:.1%}, {r['sandbox_429']} 429s",
                r["share"] >= TARGET_SHARE and r["sandbox_429"] == 0 and r["status_429"] == 0 and not r["failures"],
            )
        )
    common.save(
        "rate-budget",
        params={
            "window": window,
            "read_limit": read_limit,
            "windows": windows,
            "processes": counts,
            "guard": guard,
            "bulk": bulk,
        },
        tables=[main_table],
        targets=targets,
        data={"results": results},
        started=started,
    )


def _postgres_server() -> Any:
    """A throwaway PostgreSQL server (the tests' harness), or None where the machine has no server binaries."""
    from tests import postgres_server

    found = postgres_server.binaries()
    if found is None:
        common.out.print("[yellow]no PostgreSQL server binaries here: the PostgreSQL state store is not measured[/]")
        return None
    return postgres_server.PostgresServer(found)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(json.loads(sys.argv[2]))
    else:
        main()
