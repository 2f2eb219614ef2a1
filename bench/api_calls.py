"""api-calls: API calls of a backfill of N activities and of an incremental sync with k new ones, against the
minimum the data allows, for fitsync and for the common approach of re-listing everything each run.

Minimum for the activity data (issue 4): a listing that ends at a short page (N // 200 + 1 pages of 200), plus
one detail per activity to fetch and one zones call per activity that can have zones (heart rate, a power
meter, or a run over GPS for pace zones); an incremental sync with k new activities: one listing page plus k
details plus their zones. fitsync's other assets (profile, stats, zones, starred segments, segment details, effort
histories) are shown apart, against their own minimum (one call each, one page per starred segment, one
detail per segment not seen before). Calls are counted twice: the per-asset `api_calls` run metadata and
the sandbox's own request counter.

Baseline ("re-list everything"): what many sync scripts do each run, with plain httpx — list every page of
activities (200 a page, the most the service allows), then fetch the detail and zones of every activity.
"""

from __future__ import annotations

import time
from typing import Any

import click
import httpx

from . import common
from .common import table, target

PAGE = 200
ACTIVITY_ASSETS = ("activities", "activity_details", "activity_zones")


def pages(n: int) -> int:
    """Pages of 200 a listing of n items needs when it stops at the first short page."""
    return n // PAGE + 1


class Relister:
    """The baseline: list everything, then detail + zones for every activity, every run."""

    def __init__(self, api_url: str, token: str) -> None:
        self.http = httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        self.calls = 0

    def get(self, path: str, **params: Any) -> Any:
        self.calls += 1
        response = self.http.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def listing(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self.get("/athlete/activities", page=page, per_page=PAGE)
            listed += batch
            if len(batch) < PAGE:
                return listed
            page += 1

    def run(self) -> dict[int, dict[str, Any]]:
        listed = self.listing()
        details = {}
        for summary in listed:
            details[summary["id"]] = self.get(f"/activities/{summary['id']}", include_all_efforts="true")
            self.get(f"/activities/{summary['id']}/zones")
        return details


def segment_ids(details: dict[int, dict[str, Any]], only: set[int] | None = None) -> set[int]:
    return {
        e["segment"]["id"]
        for aid, d in details.items()
        if only is None or aid in only
        for e in d.get("segment_efforts") or []
        if isinstance(e.get("segment"), dict)
    }


def fitsync_row(label: str, outcome: Any, counted: int, minimum: int, seconds: float) -> dict[str, Any]:
    md = outcome.metadata
    calls = {a: int(md.get(a, {}).get("api_calls", 0)) for a in md}
    activity = sum(calls.get(a, 0) for a in ACTIVITY_ASSETS)
    return {
        "run": label,
        "approach": "fitsync",
        "listing": calls.get("activities", 0),
        "detail": calls.get("activity_details", 0),
        "zones": calls.get("activity_zones", 0),
        "activity_calls": activity,
        "other_calls": sum(calls.values()) - activity,
        "metadata_total": sum(calls.values()),
        "sandbox_requests": counted,
        "minimum": minimum,
        "ratio": activity / minimum,
        "seconds": seconds,
        "per_asset": calls,
        "success": outcome.success,
    }


@click.command()
@click.option("--activities", "n", default=300, show_default=True, help="Activities in the athlete's history (N).")
@click.option("--new", "k", default=10, show_default=True, help="New activities before the incremental sync (k).")
def main(n: int, k: int) -> None:
    """Calls of a backfill and an incremental sync vs the minimum, fitsync and re-list-everything."""
    from fitsync.client.runtime import FitsyncClient
    from fitsync.pipelines import instance as dagster_instance
    from fitsync.pipelines.sync_runner import sync_athlete
    from fitsync.sync.progress import may_have_zones
    from fitsync.warehouse import db

    started = time.monotonic()
    common.quiet_dagster()
    sb = common.start_sandbox(athletes=1, activities=n)
    rows: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    try:
        athlete = sb.athletes()[0]
        aid = athlete["id"]
        config = sb.connected_home(aid, "bench-api-calls-")
        home = config.home
        instance = dagster_instance.instance(home)
        with FitsyncClient(config) as client:
            token = client.tokens.access_token(aid).reveal()
        inspect = Relister(sb.api_url, token)  # reads the data the minimum depends on; never counted

        def measure_fitsync(label: str, minimum: int) -> dict[str, Any]:
            sb.reset_counters()
            t = time.monotonic()
            outcome = sync_athlete(config, aid, instance)
            seconds = time.monotonic() - t
            row = fitsync_row(label, outcome, sb.counters().get("requests", 0), minimum, seconds)
            rows.append(row)
            return row

        def measure_baseline(label: str, minimum: int) -> dict[int, dict[str, Any]]:
            relister = Relister(sb.api_url, token)
            sb.reset_counters()
            t = time.monotonic()
            details = relister.run()
            seconds = time.monotonic() - t
            rows.append(
                {
                    "run": label,
                    "approach": "re-list everything",
                    "listing": pages(len(details)),
                    "detail": len(details),
                    "zones": len(details),
                    "activity_calls": relister.calls,
                    "other_calls": 0,
                    "metadata_total": None,
                    "sandbox_requests": sb.counters().get("requests", 0),
                    "minimum": minimum,
                    "ratio": relister.calls / minimum,
                    "seconds": seconds,
                }
            )
            return details

        def other_minimum(label: str, asset_calls: dict[str, int], new_segments: set[int], first: bool) -> None:
            starred = inspect.get("/segments/starred", per_page=PAGE)
            efforts = {
                s["id"]: len(inspect.get("/segment_efforts", segment_id=s["id"], per_page=PAGE)) for s in starred
            }
            # stats, athlete zones, starred segments and effort histories: on the first run, then on their own
            # cadence (slow_refresh_hours, 20 h): not again in a sync later that day
            expected = {
                "athlete": 1,
                "athlete_stats": int(first),
                "athlete_zones": int(first),
                "starred_segments": pages(len(starred)) if first else 0,
                "segment_effort_history": sum(pages(e) for e in efforts.values()) if first else 0,
                "segments": len(new_segments),
            }
            for asset, minimum in expected.items():
                other.append({"run": label, "asset": asset, "calls": asset_calls.get(asset, 0), "minimum": minimum})

        def zoned(summaries: list[dict[str, Any]]) -> int:
            return sum(1 for s in summaries if may_have_zones(s))

        # 1. backfill of N
        before = inspect.listing()
        backfill_min = pages(n) + n + zoned(before)
        f1 = measure_fitsync(f"backfill of {n}", backfill_min)
        d1 = measure_baseline(f"backfill of {n}", backfill_min)
        starred_ids = {s["id"] for s in inspect.get("/segments/starred", per_page=PAGE)}
        seen_segments = segment_ids(d1) | starred_ids
        other_minimum(f"backfill of {n}", f1["per_asset"], seen_segments, first=True)

        # 2. k new activities, then an incremental sync
        for i in range(k):
            response = sb.console.post(f"/athletes/{aid}/activities", json={"sport_type": "Ride" if i % 2 else "Run"})
            response.raise_for_status()
        added = [s for s in inspect.listing() if s["id"] not in {b["id"] for b in before}]
        incremental_min = 1 + k + zoned(added)
        f2 = measure_fitsync(f"incremental, {k} new", incremental_min)
        d2 = measure_baseline(f"incremental, {k} new", incremental_min)
        new_ids = set(d2) - set(d1)
        other_minimum(f"incremental, {k} new", f2["per_asset"], segment_ids(d2, new_ids) - seen_segments, first=False)

        with db.reading(home / "warehouse.duckdb") as conn:
            in_warehouse = conn.execute("SELECT count(*) FROM activities WHERE athlete_id = ?", [aid]).fetchone()[0]
    finally:
        sb.close()

    assert len(d1) == n and len(new_ids) == k, (len(d1), len(new_ids))
    assert in_warehouse == n + k, f"warehouse has {in_warehouse} activities, the sandbox {n + k}"
    main_table = table(
        f"API calls: backfill of {n} activities, then an incremental sync with {k} new",
        [
            "run",
            "approach",
            "listing",
            "detail",
            "zones",
            "activity calls",
            "sandbox requests",
            "minimum",
            "calls / minimum",
            "other assets",
            "seconds",
        ],
        [
            [
                r["run"],
                r["approach"],
                r["listing"],
                r["detail"],
                r["zones"],
                r["activity_calls"],
                r["sandbox_requests"],
                r["minimum"],
                f"{r['ratio']:.2f}",
                r["other_calls"] if r["approach"] == "fitsync" else "—",
                r["seconds"],
            ]
            for r in rows
        ],
        caption="activity calls = listing + detail + zones; minimum = N//200+1 listing pages + 1 detail per activity "
        "+ 1 zones call per activity with heart rate, a power meter, or a run over GPS for pace zones "
        "(incremental: 1 page + the same for the k new). sandbox requests = the sandbox's own count "
        "(fitsync: every asset).",
    )
    other_table = table(
        "fitsync's other assets (not in the activity figures above) vs their minimum",
        ["run", "asset", "calls", "minimum"],
        [[o["run"], o["asset"], o["calls"], o["minimum"]] for o in other],
    )
    fits = [r for r in rows if r["approach"] == "fitsync"]
    base = [r for r in rows if r["approach"] != "fitsync"]
    ratio_table = table(
        "Re-list everything vs fitsync (activity calls)",
        ["run", "fitsync", "re-list everything", "re-list / fitsync"],
        [
            [f["run"], f["activity_calls"], b["activity_calls"], f"{b['activity_calls'] / f['activity_calls']:.1f}×"]
            for f, b in zip(fits, base)
        ],
    )
    consistent = all(r["sandbox_requests"] == r["metadata_total"] for r in fits)
    other_ok = all(o["calls"] == o["minimum"] for o in other)
    targets = [
        target(
            "fitsync's activity calls = minimum (ratio 1.00), backfill and incremental",
            ", ".join(f"{r['ratio']:.2f}" for r in fits),
            all(r["activity_calls"] == r["minimum"] for r in fits),
        ),
        target(
            "other assets at their minimum",
            "yes"
            if other_ok
            else "; ".join(f"{o['asset']} {o['calls']} vs {o['minimum']}" for o in other if o["calls"] != o["minimum"]),
            other_ok,
        ),
        target(
            "run metadata agrees with the sandbox's request counter",
            ", ".join(f"{r['metadata_total']} / {r['sandbox_requests']}" for r in fits),
            consistent,
        ),
    ]
    common.save(
        "api-calls",
        params={"activities": n, "new": k},
        tables=[main_table, other_table, ratio_table],
        targets=targets,
        data={"rows": rows, "other": other, "warehouse_activities": in_warehouse},
        started=started,
    )


if __name__ == "__main__":
    main()
