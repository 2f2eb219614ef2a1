"""`fitsync status`: how each athlete's sync stands, the webhook inbox, the rate budget and the warehouse."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from fitsync.client.config_basics import ConfigError, load_config
from fitsync.client.runtime import FitsyncClient

if TYPE_CHECKING:
    from fitsync.client.config import Config


def _last_runs(config: Config, athlete_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The newest Dagster run of each athlete's partition on fitsync's instance."""
    from dagster import RunsFilter

    from fitsync.pipelines import instance as dagster_instance
    from fitsync.pipelines.status import iso

    instance = dagster_instance.instance(config.home)
    out = {}
    for athlete_id in athlete_ids:
        records = instance.get_run_records(RunsFilter(tags={"dagster/partition": str(athlete_id)}), limit=1)
        if records:
            record = records[0]
            out[athlete_id] = {
                "job": record.dagster_run.job_name,
                "status": record.dagster_run.status.value,
                "started_at": iso(record.start_time),
                "ended_at": iso(record.end_time),
                "run_id": record.dagster_run.run_id,
            }
    return out


def _span(pending: dict[str, Any]) -> str:
    """Which activities the pending details are, in the order they come: 2026-11-20 → 2019-03-02."""
    if not pending["details_from"]:
        return "—"
    return f"{pending['details_from'][:10]} → {pending['details_to'][:10]}"


def _last_sync(run: dict[str, Any], nothing_new_at: str | None) -> str:
    """The last run, or the last sync that found nothing new (and so needed no run) when that came later."""
    if nothing_new_at and nothing_new_at > (run.get("ended_at") or ""):
        return f"nothing new {nothing_new_at}"
    return f"{run.get('status', '—')} {run.get('ended_at') or ''}".strip()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON (for scripts and monitoring).")
def status(as_json: bool) -> None:
    """Per athlete: token, last sync and what is still pending; the webhook inbox, the rate budget, the warehouse."""
    from fitsync.pipelines.status import collect

    try:
        config = load_config()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    with FitsyncClient(config) as client:
        report = collect(client, _last_runs(config, [a.athlete_id for a in client.tokens.athletes()]))
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    out = Console()
    if not report["athletes"]:
        out.print("No athletes connected: run `fitsync connect`.")
    out.print(_athletes_table(report["athletes"]))
    out.print(_budget_table(report["rate_budget"]))
    out.print(_webhooks_line(report["webhooks"]), soft_wrap=True, markup=False)
    out.print(_warehouse_line(report["warehouse"]), soft_wrap=True, markup=False)


def _athletes_table(athletes: list[dict[str, Any]]) -> Table:
    """A row per athlete: its token's status, what it knows and still has to fetch, its last listing and run."""
    table = Table(title="Athletes")
    for column in (
        "athlete",
        "status",
        "known",
        "pending details / zones",
        "next (newest first)",
        "last listing",
        "last run",
    ):
        table.add_column(column)
    for a in athletes:
        run = a["last_run"] or {}
        table.add_row(
            f"{a['athlete_id']} {a['name']}",
            a["status"] + (f" ({a['status_reason']})" if a["status_reason"] else ""),
            str(a["known_activities"]),
            f"{a['pending']['details']} / {a['pending']['zones']}",
            _span(a["pending"]),
            a["last_listing_at"] or "never",
            _last_sync(run, a["last_nothing_new_at"]),
        )
    return table


def _budget_table(windows: list[dict[str, Any]]) -> Table:
    """A row per rate window of the app: how much of it is used and when it resets."""
    budget = Table(title="Rate budget (this app)")
    for column in ("window", "budget", "used", "limit", "resets at"):
        budget.add_column(column)
    for line in windows:
        budget.add_row(line["window"], line["budget"], str(line["used"]), str(line["limit"]), line["resets_at"])
    return budget


def _webhooks_line(hooks: dict[str, Any]) -> str:
    """The subscription, the last event and what waits in the inbox, on one line."""
    return (
        f"Webhooks: subscription {hooks['subscription_id'] or 'none'} {hooks['callback'] or ''} · last event "
        f"{hooks['last_event_at'] or 'never'} · {hooks['unprocessed']} unprocessed, {hooks['deferred']} waiting"
    )


def _warehouse_line(house: dict[str, Any]) -> str:
    """Where the warehouse is, its size and rows per table (or that it is not created yet), on one line."""
    rows = ", ".join(f"{t} {n:,}" for t, n in (house.get("rows") or {}).items())
    return (
        f"Warehouse: {house['path']}"
        + (
            f" · {house['bytes'] / 1e6:.1f} MB · {rows}"
            if house["exists"]
            else " (not created yet: run `fitsync sync`)"
        )
        + (f" · {house['note']}" if house.get("note") else "")
    )
