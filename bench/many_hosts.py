"""many-hosts: three sync hosts, two webhook receivers and the daemon's host on one PostgreSQL state store.

The scenario of `tests/pipeline/test_many_hosts.py` (tests/many_hosts.py) at a larger size: every host a fitsync
home of its own, one application (so one rate budget), refresh tokens rotated at every refresh and access tokens
living a few seconds, a burst of webhook events split across both receivers with one killed (SIGKILL) mid-burst.
Measured in the same run against one sync host on the same store and workload: the budget binds, so more hosts
should finish no sooner — what they must do is share it without a 429, a lost token or an athlete synced twice
at once.
"""

from __future__ import annotations

import time
from typing import Any

import click

from . import common
from .common import table, target

TARGET_SHARE = 0.95


def _figures(name: str, out: Any) -> dict[str, Any]:
    return {
        "hosts": name,
        "wall_s": round(out.wall_s, 1),
        "budget_use": out.budget_use,
        "windows": len(out.per_window),
        "status_429": out.status_429,
        "token_refreshes": out.token_refreshes,
        "token_refusals": out.token_refusals,
        "live_tokens": out.live_refresh_tokens,
        "overlaps": len(out.overlaps),
        "synced": len(out.synced_by),
        "activities": f"{out.activities_found}/{out.activities}",
        "events": out.events,
        "acked_before_kill": out.acknowledged_before_kill,
        "resent": out.resent,
        "stored_once": out.stored_once,
        "unprocessed": out.unprocessed,
        "deletes_acted": len(out.deletes_acted),
        "updates_applied": f"{out.updates_applied}/{out.updates}",
        "worker_exit": out.worker_exit,
        "run_failures": out.refresh_run_failures,
    }


@click.command()
@click.option("--athletes", default=9, show_default=True, help="Athletes connected to the one application.")
@click.option("--activities", default=12, show_default=True, help="Activities per athlete.")
@click.option("--events", default=2000, show_default=True, help="Webhook events in the burst.")
@click.option("--window", default=4, show_default=True, help="Short rate window of the sandbox, seconds.")
@click.option("--read-limit", default=60, show_default=True, help="Read calls per short window.")
def main(athletes: int, activities: int, events: int, window: int, read_limit: int) -> None:
    """Budget use, 429s, token rotation and event delivery with 3 sync hosts vs 1, on one PostgreSQL store."""
    from tests import postgres_server
    from tests.many_hosts import UNKNOWN_IDS, Scenario, run
    from tests.sandbox_harness import Harness

    started = time.monotonic()
    found = postgres_server.binaries()
    if found is None:
        raise click.ClickException("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
    server = postgres_server.PostgresServer(found)
    scratch = common.scratch_folder("bench-many-hosts-")
    sb = common.start_sandbox(athletes=1, activities=1, db=str(scratch / "sandbox.db"))
    harness = Harness(sb.server)
    results = []
    try:
        for workers in (1, 3):
            common.out.print(
                f"[dim]{workers} sync host(s), 2 receivers, {athletes} athletes × {activities} "
                f"activities, {events} events…[/]"
            )
            scenario = Scenario(
                workers=workers,
                athletes=athletes,
                activities=activities,
                events=events,
                window=window,
                read_limit=read_limit,
            )
            base = scratch / f"hosts-{workers}"
            base.mkdir()
            out = run(harness, base, server.new_database(), scenario)
            figures = _figures(f"{workers} sync host{'s' if workers > 1 else ''}", out)
            figures["deletes_each_once"] = out.deletes_acted == [UNKNOWN_IDS + i for i in range(athletes, events)]
            results.append(figures)
    finally:
        harness.http.close()
        harness.console.close()
        sb.close()
        server.stop()

    one, three = results
    main_table = table(
        f"Many hosts, one budget: {read_limit} reads per {window} s window, {athletes} athletes × {activities} "
        f"activities, {events} webhook events",
        [
            "sync hosts",
            "wall time",
            "vs 1 host",
            "budget use (busy windows)",
            "429s",
            "token refreshes",
            "refresh tokens refused",
            "live refresh tokens",
            "athletes synced twice at once",
            "activities loaded",
            "events acked before the kill",
            "resent to receiver 2",
            "each stored once",
            "deletes acted on",
            "renames applied",
        ],
        [
            [
                r["hosts"],
                f"{r['wall_s']} s",
                f"{r['wall_s'] / one['wall_s']:.2f}×",
                f"{r['budget_use']:.1%} of {r['windows']}",
                r["status_429"],
                r["token_refreshes"],
                r["token_refusals"],
                f"{r['live_tokens']}/{athletes}",
                r["overlaps"],
                r["activities"],
                r["acked_before_kill"],
                r["resent"],
                r["stored_once"],
                r["deletes_acted"],
                r["updates_applied"],
            ]
            for r in results
        ],
        caption="Every host is a fitsync home of its own (FITSYNC_HOME, warehouse, Dagster instance) on one "
        "PostgreSQL state store and one FITSYNC_SECRET_KEY; two `fitsync webhooks serve` receivers take "
        "the burst, receiver 1 is killed -9 after 30 % of its share and what it did not acknowledge is "
        "sent to receiver 2; the daemon's host ticks the sensor and runs the refreshes meanwhile. Access "
        "tokens live 3 s (refreshed 1 s before), every refresh rotates the refresh token. Budget use: "
        "the app's read calls in each whole window between the first and the last, over the limit.",
    )
    targets = [
        target(
            "3 sync hosts on one PostgreSQL state store: ≥ 95 % of the budget with zero 429s",
            f"{three['budget_use']:.1%}, {three['status_429']} 429s",
            three["budget_use"] >= TARGET_SHARE and three["status_429"] == 0,
        ),
        target(
            "no refresh token lost under strict rotation (none refused, every stored one live)",
            f"{three['token_refusals']} refused, {three['live_tokens']}/{athletes} live after "
            f"{three['token_refreshes']} refreshes",
            three["token_refusals"] == 0 and three["live_tokens"] == athletes,
        ),
        target(
            "every acknowledged event stored and acted on once, a receiver killed mid-burst",
            f"stored once: {three['stored_once']}, unprocessed {three['unprocessed']}, deletes each once: "
            f"{three['deletes_each_once']}, renames {three['updates_applied']}",
            three["stored_once"]
            and three["unprocessed"] == 0
            and three["deletes_each_once"]
            and three["updates_applied"] == f"{athletes}/{athletes}",
        ),
        target(
            "no athlete synced by two hosts at once",
            f"{three['overlaps']} overlaps, {three['synced']}/{athletes} synced",
            three["overlaps"] == 0 and three["synced"] == athletes,
        ),
    ]
    common.save(
        "many-hosts",
        params={
            "athletes": athletes,
            "activities": activities,
            "events": events,
            "window": window,
            "read_limit": read_limit,
        },
        tables=[main_table],
        targets=targets,
        data={"results": results},
        started=started,
    )
