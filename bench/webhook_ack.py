"""webhook-ack: how fast the receiver acknowledges push events, and whether every acknowledged event is stored.

The receiver runs as shipped (`fitsync webhooks serve`, its own process, uvicorn) against a FITSYNC_HOME with a
connected athlete and a real subscription (created through the sandbox, which validated the callback). A load
generator in another process sends valid, distinct activity events over loopback on a fixed open-loop schedule
(event i at t0 + i/rate, whether or not earlier ones were answered), over keep-alive connections, with a
minimal asyncio HTTP/1.1 client so that the generator's own overhead stays in the tens of microseconds.
Latency is from the moment the request is written to the moment the whole answer is read. After each step the
inbox is counted: stored events vs events acknowledged with 200.

Steps: 100/s and 500/s, then rising rates until one misses the target (p99 < 20 ms, every event acknowledged
and stored); the highest sustainable rate is the last step that met it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click
import httpx

from . import common
from .common import percentile, table, target

P99_TARGET_MS = 20.0
PREFIX = "/webhooks"


# ----------------------------------------------------------------------------------------------- generator


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer


async def _exchange(conn: Connection, request: bytes) -> tuple[int, bytes]:
    conn.writer.write(request)
    head = await conn.reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    body = await conn.reader.readexactly(length) if length else b""
    return status, body


async def _generate(job: dict[str, Any]) -> dict[str, Any]:
    host, port, rate, count = job["host"], job["port"], job["rate"], job["count"]
    idle: list[Connection] = []

    async def connect() -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Connection(reader, writer)

    for _ in range(job.get("connections", 16)):
        idle.append(await connect())
    results: list[tuple[float, float, int, bool]] = []  # (lag s, latency s, status, stored)
    errors: list[str] = []

    async def send(i: int, scheduled: float) -> None:
        event = {
            "object_type": "activity",
            "object_id": job["first_id"] + i,
            "aspect_type": "create",
            "updates": {},
            "owner_id": job["owner_id"],
            "subscription_id": job["subscription_id"],
            "event_time": int(time.time()),
        }
        body = json.dumps(event, separators=(",", ":")).encode()
        request = (
            f"POST {job['path']} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nUser-Agent: bench\r\n\r\n"
        ).encode() + body
        conn = idle.pop() if idle else await connect()
        sent = time.perf_counter()
        try:
            status, answer = await _exchange(conn, request)
        except (OSError, asyncio.IncompleteReadError) as error:
            errors.append(f"{type(error).__name__}: {error}")
            conn.writer.close()
            return
        done = time.perf_counter()
        idle.append(conn)
        stored = status == 200 and json.loads(answer or b"{}").get("stored") is True
        results.append((sent - scheduled, done - sent, status, stored))

    loop = asyncio.get_running_loop()
    tasks = []
    start = time.perf_counter() + 0.2
    for i in range(count):
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(loop.create_task(send(i, scheduled)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    for conn in idle:
        conn.writer.close()
    return {"results": results, "errors": errors[:20], "error_count": len(errors), "elapsed": elapsed}


def generator(job: dict[str, Any]) -> None:
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    print(json.dumps(asyncio.run(_generate(job))), flush=True)


# ----------------------------------------------------------------------------------------------- runner


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inbox_count(state_path: Path) -> int:
    conn = sqlite3.connect(state_path, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM webhook_inbox").fetchone()[0]
    finally:
        conn.close()


def step(job: dict[str, Any], state_path: Path, rate: int, seconds: float) -> dict[str, Any]:
    job = {**job, "rate": rate, "count": int(rate * seconds)}
    before = inbox_count(state_path)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.webhook_ack", "generate", json.dumps(job)],
        cwd=common.REPO,
        env=job["env"],
        capture_output=True,
        text=True,
        timeout=seconds * 10 + 60,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the load generator failed: {proc.stderr[-3000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    stored_now = inbox_count(state_path) - before
    lat = [r[1] * 1000 for r in report["results"]]
    lag = [r[0] * 1000 for r in report["results"]]
    acked = sum(1 for r in report["results"] if r[2] == 200)
    stored_answers = sum(1 for r in report["results"] if r[3])
    row = {
        "rate": rate,
        "events": job["count"],
        "acknowledged": acked,
        "stored": stored_now,
        "stored_answers": stored_answers,
        "non_200": sum(1 for r in report["results"] if r[2] != 200),
        "errors": report["error_count"],
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "max_ms": max(lat, default=float("nan")),
        "achieved_per_s": acked / report["elapsed"],
        "generator_lag_p99_ms": percentile(lag, 99),
        "seconds": seconds,
    }
    row["met"] = (
        row["p99_ms"] < P99_TARGET_MS
        and acked == job["count"]
        and stored_now == acked
        and row["errors"] == 0
        and row["generator_lag_p99_ms"] < P99_TARGET_MS
    )
    return row


@click.command()
@click.option("--seconds", default=10.0, show_default=True, help="Duration of the 100/s and 500/s steps.")
@click.option("--search-seconds", default=5.0, show_default=True, help="Duration of each step of the search.")
@click.option("--rates", default="100,500", show_default=True, help="Fixed rates, events/s.")
@click.option(
    "--search",
    default="750,1000,1500,2000,3000,4000,6000,8000",
    show_default=True,
    help="Rising rates tried after the fixed ones, until one misses the target (empty: no search).",
)
def main(seconds: float, search_seconds: float, rates: str, search: str) -> None:
    """Receiver acknowledgement latency p50/p99/max at fixed rates and the highest sustainable rate."""
    from fitsync.client.runtime import FitsyncClient
    from fitsync.webhooks.subscriptions import subscribe

    started = time.monotonic()
    sb = common.start_sandbox(athletes=1, activities=5)
    port = free_port()
    receiver = None
    rows: list[dict[str, Any]] = []
    try:
        athlete_id = sb.athletes()[0]["id"]
        config = sb.connected_home(athlete_id, "bench-webhook-")
        env = common.env_for(config)
        receiver = subprocess.Popen(
            [sys.executable, "-m", "fitsync.cli.main", "webhooks", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=common.REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        callback = f"http://127.0.0.1:{port}{PREFIX}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(callback + "/probe", timeout=1).status_code == 404:  # up: not the secret path
                    break
            except httpx.TransportError:
                pass
            if receiver.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the receiver did not start: {receiver.stderr.read() if receiver.stderr else ''}")
            time.sleep(0.1)
        with FitsyncClient(config) as client:
            subscription_id = subscribe(client, callback)  # the sandbox validates the callback (GET) first
            path = httpx.URL(client.subscription_state.current().callback_url).path  # type: ignore[union-attr]
        job = {
            "host": "127.0.0.1",
            "port": port,
            "owner_id": athlete_id,
            "subscription_id": subscription_id,
            "env": env,
            "path": path,
        }
        first_id = 10**12
        steps = [(int(r), seconds) for r in rates.split(",") if r.strip()]
        search_rates = [int(r) for r in search.split(",") if r.strip()]
        for rate, duration in steps + [(r, search_seconds) for r in search_rates]:
            is_search = rate in search_rates and (rate, duration) not in steps
            if is_search and rows and not rows[-1]["met"] and rows[-1]["search"]:
                break
            common.out.print(f"[dim]{rate} events/s for {duration:g} s…[/]")
            row = step({**job, "first_id": first_id}, config.state_path, rate, duration)
            first_id += row["events"]
            row["search"] = is_search
            rows.append(row)
    finally:
        if receiver is not None:
            receiver.terminate()
            receiver.wait(timeout=10)
        sb.close()

    passing = [r["rate"] for r in rows if r["met"]]
    sustainable = max(passing, default=None)
    result_table = table(
        "Webhook receiver: acknowledgement latency over loopback (fitsync webhooks serve, its own process)",
        [
            "events/s",
            "events",
            "acknowledged (200)",
            "stored in inbox",
            "errors",
            "p50 ms",
            "p99 ms",
            "max ms",
            "achieved/s",
            "generator lag p99 ms",
            "meets target",
        ],
        [
            [
                r["rate"],
                r["events"],
                r["acknowledged"],
                r["stored"],
                r["errors"] + r["non_200"],
                f"{r['p50_ms']:.2f}",
                f"{r['p99_ms']:.2f}",
                f"{r['max_ms']:.1f}",
                r["achieved_per_s"],
                f"{r['generator_lag_p99_ms']:.2f}",
                r["met"],
            ]
            for r in rows
        ],
        caption=f"target: p99 < {P99_TARGET_MS:g} ms with every event acknowledged and stored. Highest sustainable: "
        + (
            f"at least {sustainable} events/s (every rate tried met it)"
            if rows and rows[-1]["met"]
            else f"{sustainable if sustainable else 'none'} events/s (the last rate meeting it)"
        )
        + ".",
    )
    at_500 = next((r for r in rows if r["rate"] == 500), None)
    targets = []
    if at_500:
        targets.append(
            target(
                "p99 < 20 ms at 500 events/s with nothing lost",
                f"p99 {at_500['p99_ms']:.2f} ms, {at_500['stored']}/{at_500['acknowledged']} stored/acked "
                f"of {at_500['events']}",
                at_500["met"],
            )
        )
    targets.append(
        target(
            "every acknowledged event stored (all steps)",
            ", ".join(f"{r['stored']}/{r['acknowledged']}" for r in rows),
            all(r["stored"] == r["acknowledged"] for r in rows),
        )
    )
    common.save(
        "webhook-ack",
        params={"seconds": seconds, "search_seconds": search_seconds, "rates": rates, "search": search},
        tables=[result_table],
        targets=targets,
        data={"rows": rows, "highest_sustainable": sustainable},
        started=started,
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["generate"]:
        generator(json.loads(sys.argv[2]))
    else:
        main()
