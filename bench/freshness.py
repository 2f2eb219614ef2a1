"""freshness: an athlete's change in the sandbox → the row in the warehouse, with the sensor as shipped.

Set-up: a connected athlete, a full sync, the receiver as shipped (`fitsync webhooks serve`, its own
process) and a real subscription. Then, as the Dagster daemon would, the shipped `webhook_events` sensor is
evaluated every `minimum_interval_seconds` (5 s), and each RunRequest it returns is executed (in-process,
like `execute_run_request`; under `dagster dev` the run launcher would add a process start per run).
Meanwhile the athlete makes ~10 changes at random moments (one per sensor interval, at a random phase):
records an activity, renames one, deletes one, in turn. For each change: time to the event in the inbox, and
time until the warehouse shows it (checked right after each run ends, so an upper bound by the run's
bookkeeping).
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any

import click
import httpx

from . import common
from .common import percentile, table, target
from .webhook_ack import PATH, free_port


def start_receiver(config: Any, port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "fitsync.cli.main", "webhooks", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=common.env_for(config),
        cwd=common.REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{PATH}", timeout=1).status_code == 400:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the receiver did not start: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.1)


@click.command()
@click.option("--changes", default=10, show_default=True, help="Athlete changes to time.")
@click.option("--activities", default=60, show_default=True, help="Activities in the athlete's history.")
@click.option("--seed", default=7, show_default=True, help="Seed of the random moments of the changes.")
def main(changes: int, activities: int, seed: int) -> None:
    """Change in the sandbox → row in the warehouse, p50/max, with the shipped webhook_events sensor."""
    from fitsync.client.runtime import FitsyncClient
    from fitsync.pipelines import instance as dagster_instance
    from fitsync.pipelines.sync_runner import execute_run_request, sync_athlete, tick_webhook_sensor
    from fitsync.pipelines.webhook_sensor import webhook_events
    from fitsync.warehouse import db
    from fitsync.webhooks.subscriptions import subscribe

    started = time.monotonic()
    common.quiet_dagster()
    interval = float(webhook_events.minimum_interval_seconds or 30)
    rng = random.Random(seed)
    sb = common.start_sandbox(athletes=1, activities=activities)
    receiver = None
    records: list[dict[str, Any]] = []
    try:
        athlete_id = sb.athletes()[0]["id"]
        config = sb.connected_home(athlete_id, "bench-freshness-")
        home = config.home
        instance = dagster_instance.instance(home)
        common.out.print("[dim]full sync…[/]")
        if not sync_athlete(config, athlete_id, instance).success:
            raise RuntimeError("the initial sync failed")
        receiver = start_receiver(config, free_port())
        port = int(receiver.args[receiver.args.index("--port") + 1])  # type: ignore[union-attr]
        with FitsyncClient(config) as client:
            subscribe(client, f"http://127.0.0.1:{port}{PATH}")
        with db.reading(home / "warehouse.duckdb") as conn:
            existing = [
                r[0] for r in conn.execute("SELECT activity_id FROM activities ORDER BY start_date DESC").fetchall()
            ]

        # --- the athlete, in a thread: one change per sensor interval, at a random phase
        t0 = time.time() + 1.0
        plan = [
            (t0 + j * interval + rng.uniform(0, interval), ("create", "rename", "delete")[j % 3])
            for j in range(changes)
        ]
        lock = threading.Lock()

        def athlete() -> None:
            for at, kind in plan:
                time.sleep(max(0.0, at - time.time()))
                if kind == "create":
                    response = sb.console.post(f"/athletes/{athlete_id}/activities", json={"sport_type": "Run"})
                    response.raise_for_status()
                    record = {"kind": kind, "activity_id": response.json()["id"]}
                elif kind == "rename":
                    activity_id = existing.pop(0)
                    name = f"renamed {rng.randrange(10**9)}"
                    sb.console.patch(f"/activities/{activity_id}", json={"name": name}).raise_for_status()
                    record = {"kind": kind, "activity_id": activity_id, "name": name}
                else:
                    activity_id = existing.pop()
                    sb.console.delete(f"/activities/{activity_id}").raise_for_status()
                    record = {"kind": kind, "activity_id": activity_id}
                record["changed_at"] = time.time()
                with lock:
                    records.append(record)

        actor = threading.Thread(target=athlete, daemon=True)
        actor.start()

        def visible(conn: Any, r: dict[str, Any]) -> bool:
            row = conn.execute("SELECT name FROM activities WHERE activity_id = ?", [r["activity_id"]]).fetchone()
            if r["kind"] == "create":
                return row is not None
            if r["kind"] == "rename":
                return row is not None and row[0] == r["name"]
            return row is None

        # --- the daemon: evaluate the sensor every `interval` seconds, run what it asks for
        cursor: str | None = None
        ticks = runs = 0
        next_tick = time.time()
        deadline = plan[-1][0] + 6 * interval + 60
        common.out.print(f"[dim]{changes} changes, sensor every {interval:g} s…[/]")
        while time.time() < deadline:
            time.sleep(max(0.0, next_tick - time.time()))
            next_tick = max(next_tick + interval, time.time())
            requests, cursor = tick_webhook_sensor(config, instance, cursor)
            ticks += 1
            for request in requests:
                outcome = execute_run_request(config, instance, request)
                runs += outcome is not None
                if outcome is not None and not outcome.success:
                    raise RuntimeError(f"run {request.run_key} failed")
            if requests:
                now = time.time()
                with lock:
                    pending = [r for r in records if "visible_at" not in r]
                if pending:
                    with db.reading(home / "warehouse.duckdb") as conn:
                        for r in pending:
                            if visible(conn, r):
                                r["visible_at"] = now
            with lock:
                if len(records) == changes and all("visible_at" in r for r in records):
                    break
        actor.join(timeout=5)
        # when each event reached the inbox (the receiver commits it before answering 200)
        conn = sqlite3.connect(config.state_path)
        inbox = conn.execute("SELECT received_at, payload FROM webhook_inbox").fetchall()
        conn.close()
    finally:
        if receiver is not None:
            receiver.terminate()
            receiver.wait(timeout=10)
        sb.close()

    import json as _json

    arrivals: dict[int, float] = {}
    for received_at, payload in inbox:
        event = _json.loads(payload)
        arrivals.setdefault(event["object_id"], received_at)
    for r in records:
        r["inbox_s"] = arrivals.get(r["activity_id"], float("nan")) - r["changed_at"]
        r["warehouse_s"] = r["visible_at"] - r["changed_at"] if "visible_at" in r else float("nan")
    missing = [r for r in records if "visible_at" not in r]
    totals = [r["warehouse_s"] for r in records if "visible_at" in r]
    inbox_times = [r["inbox_s"] for r in records if r["inbox_s"] == r["inbox_s"]]
    detail = table(
        f"Freshness: athlete change → warehouse, webhook_events sensor every {interval:g} s",
        ["#", "change", "activity", "→ inbox ms", "→ warehouse s"],
        [
            [i + 1, r["kind"], str(r["activity_id"]), f"{r['inbox_s'] * 1000:.1f}", f"{r['warehouse_s']:.2f}"]
            for i, r in enumerate(records)
        ],
    )
    summary = table(
        "Freshness summary",
        [
            "changes",
            "in warehouse",
            "→ inbox p50 ms",
            "→ inbox max ms",
            "→ warehouse p50 s",
            "→ warehouse max s",
            "sensor ticks",
            "runs",
        ],
        [
            [
                len(records),
                len(totals),
                f"{percentile(inbox_times, 50) * 1000:.1f}",
                f"{max(inbox_times, default=float('nan')) * 1000:.1f}",
                percentile(totals, 50),
                max(totals, default=float("nan")),
                ticks,
                runs,
            ]
        ],
        caption="Runs executed in-process right after the tick (as execute_run_request does); under `dagster dev` "
        "each run also pays its run launcher's process start. Expected: about half the sensor interval "
        "plus one run on average, one interval plus one run at worst.",
    )
    worst = max(totals, default=float("inf"))
    targets = [
        target("every change reaches the warehouse", f"{len(totals)}/{len(records)}", not missing),
        target(
            f"within seconds (max ≤ one sensor interval + 5 s = {interval + 5:g} s)",
            f"p50 {percentile(totals, 50):.1f} s, max {worst:.1f} s",
            worst <= interval + 5,
        ),
    ]
    common.save(
        "freshness",
        params={"changes": changes, "activities": activities, "seed": seed, "interval": interval},
        tables=[detail, summary],
        targets=targets,
        data={"changes": records, "ticks": ticks, "runs": runs},
        started=started,
    )


if __name__ == "__main__":
    main()
