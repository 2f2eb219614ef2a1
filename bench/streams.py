"""streams: a history's per-second streams loaded, stored and read back (issue 34).

A few dozen real answers of the sandbox (`GET /activities/{id}/streams`, every channel, keyed by type: rides and
runs of 20 minutes to 4 hours) are fetched over HTTP once, then written as N activities' answers, the bytes as
received, through the path the fetch step takes: `sync/streams.received`, then `sync/streams.Writer` (chunks framed
into columns by sync/stream_answers.framed and written as Parquet per athlete and month, each activity's mean-maximal
power computed as it is written: warehouse/streams.py), on the Writer's two threads as the step writes them. Each
scale runs in a child process of its own, so its peak memory is its own (`ru_maxrss`). Figures:

- load: samples (one per second of recording, every channel) per second, parse and write together;
- disk: bytes per sample and channel of the samples' files (the raw answers, kept beside them, shown apart);
- read: a season's power curve (`season_power_curve`) over the whole history, median of 5, from a warehouse whose
  `activities` rows name the activities (one ride every 17.5 hours);
- memory: peak RSS of the largest scale over the smallest (flat: ≤ 1.1×).

Targets (issue 34): load ≥ 1 million samples/s, ≤ 4 bytes per sample and channel, a season's curve < 200 ms,
memory flat in history length.

    python -m bench streams [--scales 500,1500]
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import common
from .common import table, target

TARGET_SAMPLES_PER_S = 1_000_000
TARGET_BYTES = 4.0
TARGET_CURVE_MS = 200.0
MEMORY_GROWTH = 1.1
ATHLETE = 1
FIRST_ID = 10_000
EVERY = dt.timedelta(hours=17.5)
START = dt.datetime(2023, 1, 1, 8, tzinfo=dt.UTC)


def fetch_answers(count: int, folder: Path) -> tuple[Path, float]:
    """Stream answers of a seeded sandbox athlete's recorded activities, as the service sent them, in one file; and
    the sandbox's median milliseconds per answer (over loopback HTTP: the tests and benchmarks fetch thousands)."""
    import statistics

    import httpx

    from fitsync.client.runtime import FitsyncClient
    from fitsync.sync import streams

    sb = common.start_sandbox(athletes=1, activities=count)
    try:
        aid = sb.athletes()[0]["id"]
        config = sb.connected_home(aid, "bench-streams-")
        with FitsyncClient(config) as client:
            token = client.tokens.access_token(aid).reveal()
        with httpx.Client(base_url=sb.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            listed = http.get("/athlete/activities", params={"per_page": 200}).json()
            bodies, served = [], []
            for a in (a for a in listed if not a.get("manual")):
                started = time.perf_counter()
                params = {"keys": streams.KEYS, "key_by_type": "true"}
                bodies.append(http.get(f"/activities/{a['id']}/streams", params=params).text)
                served.append((time.perf_counter() - started) * 1000)
    finally:
        sb.close()
    path = folder / "answers.json"
    path.write_text(json.dumps([b for b in bodies if b.startswith("{")]))
    return path, statistics.median(served)


def child(answers: Path, n: int, folder: Path) -> None:
    """One scale, in its own process: load n activities' streams, then read a season's curve. Prints JSON."""
    import duckdb

    from fitsync.sync import streams
    from fitsync.warehouse import analysis, db
    from fitsync.warehouse import streams as stored

    bodies = [b.encode() for b in json.loads(answers.read_text())]
    path = folder / "warehouse.duckdb"
    db.migrate(path)
    root = path.resolve().with_name(path.name + ".documents")
    samples = 0

    def written(answers: list[stored.Answer], count: int) -> None:
        nonlocal samples
        samples += count

    started = time.perf_counter()
    with streams.Writer(root, ATHLETE, written) as writer:  # as the fetch step writes: on a thread of its own
        for k in range(n):
            writer.add(streams.received(FIRST_ID + k, START + k * EVERY, 1, bodies[k % len(bodies)]))
    seconds = time.perf_counter() - started
    channels = 0
    with duckdb.connect() as conn:
        glob = str(root / stored.SAMPLES / "**" / "*.parquet")
        counted = conn.execute(
            "SELECT " + ", ".join(f"count({c.column})" for c in stored.CHANNELS) + f" FROM read_parquet('{glob}')"
        ).fetchall()[0]
        channels = sum(counted)
    sample_bytes = sum(p.stat().st_size for p in (root / stored.SAMPLES).rglob("*.parquet"))
    raw_bytes = sum(p.stat().st_size for p in (root / stored.ANSWERS).rglob("*.parquet"))
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "INSERT INTO athletes (athlete_id, firstname, lastname, synced_at, raw) VALUES (?, 'a', 'b', now(), '{}')",
            [ATHLETE],
        )
        conn.execute(
            """INSERT INTO activities (activity_id, athlete_id, name, sport_type, type, start_date, start_date_local,
                   moving_time, elapsed_time, device_watts, listed_at, summary_raw)
               SELECT ? + k, ?, 'ride', 'Ride', 'Ride', ?::TIMESTAMPTZ + k * INTERVAL 63000 SECOND,
                   (?::TIMESTAMPTZ + k * INTERVAL 63000 SECOND)::TIMESTAMP, 3600, 3600, true, now(), '{}'
               FROM range(?) t(k)""",
            [FIRST_ID, ATHLETE, START, START, n],
        )
    db.migrate(path)
    with db.reading(path) as conn:
        analysis.view(conn, "season_power_curve", ATHLETE)
        times = []
        for _ in range(5):
            t = time.perf_counter()
            curve = analysis.view(conn, "season_power_curve", ATHLETE)
            times.append(time.perf_counter() - t)
    print(
        json.dumps(
            {
                "activities": n,
                "samples": samples,
                "seconds": seconds,
                "channel_values": channels,
                "sample_bytes": sample_bytes,
                "raw_bytes": raw_bytes,
                "curve_ms": statistics.median(times) * 1000,
                "curve_rows": curve.height,
            }
        )
    )


@click.command()
@click.option("--scales", default="500,1500", show_default=True, help="Activity counts, comma-separated.")
@click.option("--templates", "count", default=40, show_default=True, help="Sandbox activities whose answers are used.")
@click.option("--child", "child_args", nargs=3, type=str, hidden=True)
def main(scales: str, count: int, child_args: tuple[str, str, str] | None) -> None:
    """Streams: load speed, bytes on disk, a season's power curve and memory, at each scale in one run."""
    if child_args:
        child(Path(child_args[0]), int(child_args[1]), Path(child_args[2]))
        return
    started = time.monotonic()
    sizes = [int(s) for s in scales.split(",")]
    work = common.scratch_folder("bench-streams-")
    answers, served_ms = fetch_answers(count, work)
    runs: list[dict[str, Any]] = []
    for n in sizes:
        folder = work / f"n{n}"
        folder.mkdir()
        measured = common.run_measured(
            [sys.executable, "-m", "bench.streams", "--child", str(answers), str(n), str(folder)],
            env=common.clean_env(),
            cwd=common.REPO,
            timeout=1800,
        )
        if measured["returncode"]:
            raise click.ClickException(f"the {n}-activity load failed: {measured['output'][-2000:]}")
        figures = json.loads(measured["output"].strip().splitlines()[-1])
        runs.append({**figures, "maxrss_mib": measured["maxrss_mib"]})
    rows = []
    for r in runs:
        rows.append(
            [
                f"{r['activities']:,}",
                f"{r['samples']:,}",
                round(r["samples"] / r["seconds"]),
                round(r["sample_bytes"] / r["channel_values"], 2),
                round(r["raw_bytes"] / r["channel_values"], 2),
                round(r["curve_ms"], 1),
                round(r["maxrss_mib"]),
            ]
        )
    largest, smallest = runs[-1], runs[0]
    speed = largest["samples"] / largest["seconds"]
    per_channel = (largest["sample_bytes"] + largest["raw_bytes"]) / largest["channel_values"]
    growth = largest["maxrss_mib"] / smallest["maxrss_mib"]
    tables = [
        table(
            "Streams: load, disk, a season's power curve, memory",
            [
                "activities",
                "samples",
                "samples/s (parse + write)",
                "bytes per sample and channel",
                "raw answers, bytes per sample and channel",
                "season's power curve, ms",
                "peak RSS, MiB",
            ],
            rows,
            f"{len(json.loads(answers.read_text()))} sandbox answers (1-s samples, every channel the activity has; "
            f"the sandbox served each in a median of {served_ms:.0f} ms) reused as the history; one process per scale.",
        )
    ]
    targets = [
        target("stream load ≥ 1 million samples/s", f"{speed:,.0f}", speed >= TARGET_SAMPLES_PER_S),
        target(
            "≤ 4 bytes per sample and channel on disk (raw answers included)",
            f"{per_channel:.2f}",
            per_channel <= TARGET_BYTES,
        ),
        target(
            "a season's power curve in < 200 ms",
            f"{largest['curve_ms']:.0f} ms",
            largest["curve_ms"] < TARGET_CURVE_MS,
        ),
        target(
            f"memory flat in history length (peak RSS ≤ {MEMORY_GROWTH}× from the smallest to the largest scale)",
            f"{growth:.2f}×",
            growth <= MEMORY_GROWTH,
        ),
    ]
    common.save(
        "streams",
        params={"scales": sizes, "templates": count},
        tables=tables,
        targets=targets,
        data={"runs": runs, "sandbox_ms_per_answer": served_ms},
        started=started,
    )


if __name__ == "__main__":
    main()
