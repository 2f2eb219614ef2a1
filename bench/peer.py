"""peer: the listing's summaries queryable, fitsync against strava-offline, side by side on one sandbox world.

One athlete with N activities (default 1,500), generous limits; each tool has an app of its own (rate limits are per
app) and syncs the athlete from nothing, one after the other, --runs times each (the median is reported), then once
more with nothing new:

- fitsync: `fitsync sync` from a fresh home as `fitsync connect` leaves it (the tokens, the athlete's partition in
  Dagster's instance), from its start until every listed activity is in the warehouse
  (`activities`, polled from this process), and the command's whole run (details and zones follow the summaries);
- strava-offline 1.1.1 (github.com/liskin/strava-offline, the fastest open-source peer that keeps summaries
  locally): `strava-offline sqlite` from an empty database until it exits (it stores the summaries and bikes only).

strava-offline is installed into a folder of its own (`pip install --target`, from the machine's package index) and
runs in its own process: its requests go to `https://www.strava.com`, which a requests adapter sends to the sandbox,
and its token file holds an access token this process obtained for its app, as its own OAuth flow would leave it.

Target (issue 33): fitsync's summaries queryable within max(3 × the peer's time, the peer's time + 3 s).

    python -m bench peer [--activities 1500] [--runs 3]
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import common
from .common import table, target

PEER = "strava-offline==1.1.1"
PEER_DIR = common.SCRATCH / "peer-strava-offline"
STRAVA = "https://www.strava.com/api/v3"
# Run in the peer's process: its requests to the real service go to the sandbox (OAuth2Session adds the token to the
# https URL first, then requests.Session.request sends it).
SHIM = """
import sys, requests
api = sys.argv.pop(1)
send = requests.Session.request
def request(self, method, url, *args, **kwargs):
    return send(self, method, url.replace({strava!r}, api), *args, **kwargs)
requests.Session.request = request
from strava_offline.cli import cli
sys.exit(cli())
"""


def install_peer() -> Path:
    """strava-offline in a folder of its own (once): none of its dependencies reach fitsync's environment."""
    marker = PEER_DIR / ".installed"
    if not marker.exists():
        common.out.print(f"[dim]installing {PEER} into {PEER_DIR}…[/]")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(PEER_DIR), PEER],
            check=True,
            timeout=600,
        )
        marker.write_text(PEER)
    return PEER_DIR


def peer_sync(sb: common.Sandbox, athlete_id: int, folder: Path) -> dict[str, Any]:
    """One strava-offline sync from an empty database: seconds until it exits, activities stored, calls made."""
    from fitsync.client.runtime import FitsyncClient

    config = sb.config(folder / "grant", sb.new_app("strava-offline"))
    sb.connect(config, athlete_id)
    with FitsyncClient(config) as client:  # the token strava-offline's own OAuth flow would have saved
        token = client.tokens.access_token(athlete_id).reveal()
    token_file = folder / "token.json"
    token_file.write_text(
        json.dumps(
            {"access_token": token, "refresh_token": "unused", "token_type": "Bearer", "expires_at": time.time() + 3600}
        )
    )
    database = folder / "strava.sqlite"
    env = {**common.clean_env(), "PYTHONPATH": str(PEER_DIR)}
    argv = [sys.executable, "-c", SHIM.format(strava=STRAVA), sb.api_url, "sqlite"]
    argv += ["--client-id", str(config.client_id), "--client-secret", config.client_secret.reveal()]
    argv += ["--token-file", str(token_file), "--database", str(database)]
    before = sb.counters().get("requests", 0)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise click.ClickException(f"strava-offline failed ({done.returncode}): {done.stderr[-2000:]}")
    with sqlite3.connect(database) as conn:
        stored = conn.execute("SELECT count(*) FROM activity").fetchone()[0]
    return {"seconds": seconds, "activities": stored, "calls": sb.counters().get("requests", 0) - before}


def fitsync_sync(sb: common.Sandbox, athlete_id: int, listed: int) -> dict[str, Any]:
    """One `fitsync sync` from a fresh home: seconds until every listed activity is queryable, and until it exits."""
    from fitsync.pipelines.instance import add_athlete_partition
    from fitsync.warehouse import db

    config = sb.connected_home(athlete_id, "bench-peer-")
    # what `fitsync connect` does after the grant, as a user's first sync finds it: the athlete's partition in
    # Dagster's instance (which creates the instance); strava-offline's own authorization is not timed either
    add_athlete_partition(config.home, athlete_id)
    warehouse = config.home / "warehouse.duckdb"
    before = sb.counters().get("requests", 0)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fitsync.cli.main", "sync", "--quiet"],
        env=common.env_for(config),
        cwd=common.REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    queryable = None
    while queryable is None and proc.poll() is None:
        if warehouse.exists():
            try:
                with db.reading(warehouse, timeout=0.2) as conn:
                    tables = conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'activities'")
                    if (
                        tables.fetchall()[0][0]
                        and conn.execute("SELECT count(*) FROM activities").fetchall()[0][0] >= listed
                    ):
                        queryable = time.perf_counter() - started
            except Exception:  # noqa: BLE001 (the loader holds the file this moment: look again)
                pass
        time.sleep(0.02)
    _, err = proc.communicate(timeout=900)
    ended = time.perf_counter() - started
    if proc.returncode != 0:
        raise click.ClickException(f"fitsync sync failed ({proc.returncode}): {err[-2000:]}")
    if queryable is None:  # the run ended between two looks
        queryable = ended
    return {
        "seconds": queryable,
        "run_seconds": ended,
        "calls": sb.counters().get("requests", 0) - before,
        "home": config,
    }


def nothing_new(sb: common.Sandbox, config: Any) -> dict[str, Any]:
    """A second `fitsync sync` of the same home: nothing changed since the first."""
    before = sb.counters().get("requests", 0)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fitsync.cli.main", "sync", "--quiet"],
        env=common.env_for(config),
        cwd=common.REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return {"seconds": time.perf_counter() - started, "calls": sb.counters().get("requests", 0) - before}


@click.command()
@click.option("--activities", "n", default=1500, show_default=True, help="The athlete's activities.")
@click.option("--runs", default=3, show_default=True, help="Syncs from nothing per tool (the median is reported).")
def main(n: int, runs: int) -> None:
    """Summaries queryable: fitsync against strava-offline on the same sandbox world, in one run."""
    started = time.monotonic()
    install_peer()
    sb = common.start_sandbox(athletes=1, activities=n)
    folder = common.scratch_folder("bench-peer-")
    load_before = os.getloadavg()[0]
    try:
        aid = sb.athletes()[0]["id"]
        peer_runs, ours = [], []
        for run in range(runs):  # alternating, so that a busier moment of the machine weighs on both
            peer_runs.append(peer_sync(sb, aid, folder / f"peer-{run}"))
            ours.append(fitsync_sync(sb, aid, peer_runs[-1]["activities"]))
        again_ours = nothing_new(sb, ours[-1]["home"])
    finally:
        sb.close()
    load_after = os.getloadavg()[0]
    listed = peer_runs[0]["activities"]
    peer_s = statistics.median(r["seconds"] for r in peer_runs)
    ours_s = statistics.median(r["seconds"] for r in ours)
    run_s = statistics.median(r["run_seconds"] for r in ours)
    goal = max(3 * peer_s, peer_s + 3)
    rows = [
        ("strava-offline 1.1.1: summaries stored (its whole sync)", round(peer_s, 2), peer_runs[0]["calls"], "1.00×"),
        ("fitsync: summaries queryable", round(ours_s, 2), "—", f"{ours_s / peer_s:.2f}×"),
        ("fitsync: the whole sync (details and zones too)", round(run_s, 2), ours[0]["calls"], "—"),
        ("fitsync: a sync with nothing new", round(again_ours["seconds"], 2), again_ours["calls"], "—"),
    ]
    caption = (
        f"one athlete, {listed:,} activities, generous limits, an app per tool; each from nothing, alternating, "
        f"median of {runs} runs, seconds from the command's start (start-up included). Load average "
        f"{load_before:.1f} → {load_after:.1f} on {os.cpu_count()} CPUs."
    )
    tables = [
        table(
            "Summaries queryable: fitsync and strava-offline",
            ["what", "seconds", "calls", "vs the peer"],
            rows,
            caption,
        )
    ]
    targets = [
        target(
            "summaries queryable within max(3 × strava-offline, strava-offline + 3 s)",
            f"{ours_s:.2f} s against {goal:.2f} s (strava-offline {peer_s:.2f} s)",
            ours_s <= goal,
        )
    ]
    common.save(
        "peer",
        params={
            "activities": n,
            "runs": runs,
            "peer": PEER,
            "load_average": [round(load_before, 2), round(load_after, 2)],
        },
        tables=tables,
        targets=targets,
        data={
            "peer": peer_runs,
            "fitsync": [{k: v for k, v in r.items() if k != "home"} for r in ours],
            "nothing_new": again_ours,
        },
        started=started,
    )


if __name__ == "__main__":
    main()
