"""`fitsync status`: how each athlete's sync stands, the webhook inbox, the rate budget and the warehouse."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table
from rich.text import Text

from fitsync.cli import screen
from fitsync.client.config_basics import ConfigError, load_config

from .athletes import status_shown
from .relative_time import ago

if TYPE_CHECKING:
    from fitsync.client.config import Config


def _span(pending: dict[str, Any]) -> str:
    """Which activities the pending details are, in the order they come: 2026-11-20 → 2019-03-02."""
    if not pending["details_from"]:
        return "—"
    return f"{pending['details_from'][:10]} → {pending['details_to'][:10]}"


def _last_sync(run: dict[str, Any], nothing_new_at: str | None, failed: dict[str, str] | None) -> str:
    """The last sync: its run, or, when it came later, a sync that found nothing new (and so needed no run) or one that
    failed before starting a run (the service silent, the token refused)."""
    ended = run.get("ended_at") or ""
    if failed and failed["at"] > max(ended, nothing_new_at or ""):
        return f"failed {ago(failed['at'])}, no run: {failed['why']}"
    if nothing_new_at and nothing_new_at > ended:
        return f"nothing new {ago(nothing_new_at)}"
    return f"{run.get('status', '—').lower()} {ago(ended) if ended else ''}".strip()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON (for scripts and monitoring).")
def status(as_json: bool) -> None:
    """Per athlete: token, last sync and what is still pending; the webhook inbox, the rate budget, the warehouse.
    Reads only: it creates and changes no file."""
    from fitsync.client.state_reader import StateReader
    from fitsync.pipelines.status import collect
    from fitsync.pipelines.stream_queue import note_pending

    from .last_runs import last_runs

    try:
        config = load_config()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    reader = StateReader.open(config)
    if reader is None:
        _not_set_up(config, as_json)
        return
    report = collect(reader, last_runs(config.home, [a.athlete_id for a in reader.athletes()]))
    report["tokens_unreadable"] = reader.token_problem() if report["athletes"] else None
    _note_unavailable_zones(reader, report["athletes"])
    streams_waiting = note_pending(config, report["athletes"])  # pending.streams, and a line per athlete waiting
    _note_time_left(reader, report["athletes"])
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    out = screen.console()
    if not report["athletes"]:
        out.print(f"No athletes connected: {first_steps(config)}.")
    out.print(_athletes_table(report["athletes"]))
    if unreadable := report.get("tokens_unreadable"):
        out.print(Text(TOKENS_UNREADABLE.format(unreadable), style="red"), soft_wrap=True)
    for a in report["athletes"]:
        if a["pending"].get("zones_unavailable"):
            out.print(
                f"athlete {a['athlete_id']}: zones not available ({a['pending']['zones_unavailable']}): the "
                f"{a['pending']['zones']} activities queued for them are fetched once the profile says premium",
                soft_wrap=True,
                markup=False,
            )
    for line in streams_waiting:
        out.print(line, soft_wrap=True, markup=False)
    out.print(_budget_table(report["rate_budget"]))
    out.print(_webhooks_line(report["webhooks"]), soft_wrap=True, markup=False)
    out.print(_warehouse_line(report["warehouse"]), soft_wrap=True, markup=False)


NOT_A_SUBSCRIBER = "the athlete is not a subscriber"
TOKENS_UNREADABLE = "The stored tokens cannot be read: {}"  # `athletes` and `status` show them as connected


def _note_unavailable_zones(reader: Any, athletes: list[dict[str, Any]]) -> None:
    """Pending zones of an athlete without a subscription are never asked for while it lasts: say why they wait
    (`pending.zones_unavailable`, null otherwise), rather than a count that looks stuck."""
    from fitsync.state.athletes import known_non_subscriber

    for a in athletes:
        a["pending"]["zones_unavailable"] = (
            NOT_A_SUBSCRIBER if known_non_subscriber(reader.store, a["athlete_id"]) else None
        )


def _note_time_left(reader: Any, athletes: list[dict[str, Any]]) -> None:
    """`pending.time_left_seconds`: how long the queued calls take against what is left of both rate windows, as
    `fitsync sync` estimates it while it runs (sync_waits.time_left: the governor's seconds_for, the same reserve),
    the streams waiting (`pending.streams`, a call each) included; null when nothing is queued."""
    import time

    from .sync_waits import calls_queued, time_left

    config = reader.config
    lines, now = reader.budget(), time.time()
    lengths = {"short": config.short_window, "long": config.long_window}
    for a in athletes:
        calls = calls_queued(reader.store, a["athlete_id"]) + (a["pending"].get("streams") or 0)
        left = time_left(calls, lines, now, lengths, config.bulk_reserve)
        a["pending"]["time_left_seconds"] = None if left is None else round(left, 1) if left != float("inf") else -1


def first_steps(config: Config) -> str:
    """The commands that set up a home from where it is: credentials first, then an athlete."""
    if config.client_id and config.client_secret:
        return "run `fitsync connect`"
    return "run `fitsync init` (your app's id and secret), then `fitsync connect`"


def _not_set_up(config: Config, as_json: bool) -> None:
    """A home without state: what is missing and the commands that set it up."""
    says = f"Nothing synced yet: no state in {config.home}. To start, {first_steps(config)}, then `fitsync sync`."
    if as_json:
        click.echo(json.dumps({"home": str(config.home), "athletes": [], "set_up": False, "next": says}, indent=2))
    else:
        click.echo(says)


def _athletes_table(athletes: list[dict[str, Any]]) -> Table:
    """A row per athlete: its token's status, what it knows and still has to fetch, its last listing and run."""
    table = Table(title="Athletes")
    for column in (
        "athlete",
        "status",
        "known",
        "pending details / zones",
        "time left",
        "next (newest first)",
        "last listing",
        "last run",
    ):
        table.add_column(column)
    for a in athletes:
        run = a["last_run"] or {}
        table.add_row(
            f"{a['athlete_id']} {a['name']}",
            status_shown(a["athlete_id"], a["status"], a["status_reason"]),
            str(a["known_activities"]),
            f"{a['pending']['details']} / "
            + ("not available" if a["pending"].get("zones_unavailable") else str(a["pending"]["zones"])),
            _time_left(a["pending"].get("time_left_seconds")),
            _span(a["pending"]),
            ago(a["last_listing_at"]) if a["last_listing_at"] else "never",
            _last_sync(run, a["last_nothing_new_at"], a["last_failed_before_run"]),
        )
    return table


def _time_left(seconds: float | None) -> str:
    """About how long the queued calls take (the rate windows' waits included), as a person reads it."""
    from .sync_waits import duration

    if seconds is None:
        return "—"
    if seconds < 0:
        return "over a year"
    return "under a second" if seconds < 1 else f"about {duration(seconds)}"


def _budget_table(windows: list[dict[str, Any]]) -> Table:
    """A row per rate window of the app: how much of it is used and when it resets."""
    budget = Table(title="Rate budget (this app)")
    for column in ("window", "budget", "used", "limit", "resets"):
        budget.add_column(column)
    for line in windows:
        limit = f"{line['limit']}{'' if line['limit_from'] == 'service' else '*'}"
        budget.add_row(line["window"], line["budget"], str(line["used"]), limit, ago(line["resets_at"]))
    if any(line["limit_from"] != "service" for line in windows):
        budget.caption = DEFAULT_LIMITS_CAPTION
    return budget


# Before any call the ledger has no line: the limits shown are the documented ones, not yet this app's.
DEFAULT_LIMITS_CAPTION = (
    "* the service's documented limit, until this app's first call: the service's answers then say the app's own"
)


# Who acts on the inbox: no fitsync command does; the Dagster daemon's sensor does, within seconds.
INBOX_HINT = "the `webhook_events` sensor of the Dagster daemon acts on them (`dagster dev -w workspace.yaml` runs it)"


def _webhooks_line(hooks: dict[str, Any]) -> str:
    """The subscription, the last event and what waits in the inbox (and what acts on it), on one line."""
    subscription = " ".join(str(part) for part in (hooks["subscription_id"] or "none", hooks["callback"]) if part)
    last = ago(hooks["last_event_at"]) if hooks["last_event_at"] else "never"
    waiting = f"{hooks['unprocessed']} unprocessed, {hooks['deferred']} waiting"
    if hooks["unprocessed"] or hooks["deferred"]:
        # deferred: held back by the sensor (an athlete's re-pull running, the webhook share of the budget spent)
        later = "; it reconsiders the waiting ones at each evaluation" if hooks["deferred"] else ""
        waiting += f" ({INBOX_HINT}{later})"
    return f"Webhooks: subscription {subscription} · last event {last} · {waiting}"


def _warehouse_line(house: dict[str, Any]) -> str:
    """Where the warehouse is, its size and rows per table (or that it is not created yet), on one line."""
    rows = ", ".join(f"{t} {n:,}" for t, n in (house.get("rows") or {}).items())
    return (
        f"Warehouse: {house['path']}"
        + (
            f" · {house['bytes'] / 1e6:.1f} MB" + (f" · {rows}" if rows else "")
            if house["exists"]
            else " (not created yet: run `fitsync sync`)"
        )
        + (f" · {house['note']}" if house.get("note") else "")
    )
