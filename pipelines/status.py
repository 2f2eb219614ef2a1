"""What `fitsync status` reports: one dictionary, read from the state store, the warehouse and Dagster's runs.

Reading only: no API call, no write, and the warehouse is opened read-only (a running sync is not disturbed;
while it writes, the row counts are left out rather than waited for).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fitsync.client.explain import damaged_warehouse
from fitsync.client.state_reader import StateReader
from fitsync.resources.warehouse import warehouse_of
from fitsync.state import inbox as inbox_rows
from fitsync.state import progress as progress_rows
from fitsync.sync import progress
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse
from fitsync.webhooks.subscriptions import masked

# Set on a run whose steps all succeeded but whose sync failed all the same (an answer of the wrong shape lets the
# other steps go on, then fails the athlete's sync: sync_runner.run_job): `fitsync status` says "failed" for it.
FAILED_TAG = "fitsync/failed"
# Set on a run whose steps succeeded but left work for the next run (the rate budget ran out): "partial".
PARTIAL_TAG = "fitsync/partial"

WAREHOUSE_TABLES = ("activities", "segment_efforts", "activity_zones", "starred_segments", "deleted_activities")


def iso(epoch: float | int | str | None) -> str | None:
    if epoch in (None, ""):
        return None
    return dt.datetime.fromtimestamp(float(epoch), dt.UTC).isoformat(timespec="seconds")


def collect(reader: StateReader, last_runs: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    store = reader.store
    athletes = []
    for a in reader.athletes():
        cursors = progress_rows.cursors(store, a.athlete_id)
        listed = cursors.get(progress.LISTED_AFTER)
        full = cursors.get(progress.FULL_LISTED_AT)
        unchanged = cursors.get(progress.NOTHING_NEW_AT)
        failed = cursors.get(progress.FAILED_BEFORE_RUN)
        first, last = progress.queue_span(store, a.athlete_id)
        athletes.append(
            {
                "athlete_id": a.athlete_id,
                "name": a.name,
                "status": a.status,
                "status_reason": a.status_reason,
                "scopes": a.scopes.replace(",", " ").split(),
                "access_token_expires_at": iso(a.access_expires_at),
                "known_activities": len(progress.known_ids(store, a.athlete_id)),
                "pending": {
                    "details": progress.count_needing(store, a.athlete_id, "detail"),
                    "zones": progress.count_needing(store, a.athlete_id, "zones"),
                    # the order they come in: newest first, each detail with its zones
                    "details_from": iso(first),
                    "details_to": iso(last),
                },
                "last_listing_at": iso(listed[1]) if listed else None,
                "newest_start_listed": iso(listed[0]) if listed else None,
                "last_full_listing_at": iso(full[0]) if full else None,
                "last_run": (last_runs or {}).get(a.athlete_id),
                "last_nothing_new_at": iso(unchanged[1]) if unchanged else None,  # a sync that needed no run
                # a sync that failed before starting a run: when, and why
                "last_failed_before_run": {"at": iso(failed[1]), "why": failed[0]} if failed else None,
            }
        )
    last_event, unprocessed, deferred = inbox_rows.summary(store)
    subscription = reader.subscription()
    return {
        "home": str(reader.config.home),
        "athletes": athletes,
        "webhooks": {
            "subscription_id": subscription.id if subscription else None,
            "callback": masked(subscription.callback_url) if subscription and subscription.callback_url else None,
            "last_event_at": iso(last_event),
            "unprocessed": unprocessed,
            "deferred": deferred,
        },
        "rate_budget": [
            {
                "window": b.window,
                "budget": b.budget,
                "used": b.used,
                "limit": b.limit,
                "limit_from": "service" if b.heard else "default",
                "resets_at": iso(b.resets_at),
            }
            for b in reader.budget()
        ],
        "warehouse": _warehouse(warehouse_of(reader.config)),
    }


def _warehouse(warehouse: Warehouse) -> dict[str, Any]:
    if not warehouse.is_lake and not warehouse.path.exists():
        return {"path": str(warehouse), "exists": False}
    out: dict[str, Any] = {"path": str(warehouse), "exists": True}
    if not warehouse.is_lake:
        out["bytes"] = warehouse.path.stat().st_size
    try:
        with db.reading(warehouse, timeout=2.0) as conn:
            out["rows"] = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in WAREHOUSE_TABLES}
    except Exception as error:  # noqa: BLE001 (busy or damaged: say so, the rest of the status still helps)
        out["rows"] = None
        out["note"] = (
            damaged_warehouse(str(error), warehouse.file) or f"row counts unavailable: {str(error).splitlines()[0]}"
        )
    return out
