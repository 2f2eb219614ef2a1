"""`fitsync sync`: the assets, headless, with progress, a clean stop and exit codes that say how it went."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fitsync.cli.stop_signals import StopSignals
from fitsync.client.config_basics import ConfigError, load_config
from fitsync.client.runtime import FitsyncClient
from fitsync.pipelines import nothing_new
from fitsync.sync import progress

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from fitsync.client.config import Config
    from fitsync.pipelines.sync_runner import SyncOutcome


# The command prints each failed step's message itself (below): Dagster's own ERROR events would repeat it with
# a stack trace. The run's full log stays in the Dagster instance under FITSYNC_HOME.
DAGSTER_LOG_LEVEL = "CRITICAL"


def _config() -> Config:
    try:
        return load_config()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


@click.command()
@click.option(
    "--athlete",
    "athlete_ids",
    type=int,
    multiple=True,
    help="Only this athlete (repeatable); its calls go before other syncs' on a shared budget.",
)
@click.option(
    "--full",
    is_flag=True,
    help="List every activity and reconcile deletions; refresh stats, zones and starred "
    "segments whenever they were last fetched.",
)
@click.option(
    "--allow-shrink",
    is_flag=True,
    help="With --full: delete what the listing lacks even when that is more than a fifth of the activities "
    "(or the listing is empty).",
)
@click.option(
    "--max-wait",
    default=900.0,
    show_default=True,
    help="Seconds to wait for the rate budget before leaving the rest to the next run.",
)
def sync(athlete_ids: tuple[int, ...], full: bool, allow_shrink: bool, max_wait: float) -> None:
    """Sync connected athletes into the warehouse.

    Exit codes: 0 done; 1 a sync failed; 4 done, but some of what the service sent was left out of the warehouse
    (implausible values, unreadable rows: named above, kept raw); 3 partial (the rate budget ran out first, or another
    process is syncing an athlete); 130 / 143 stopped by Ctrl-C / SIGTERM (the next `fitsync sync` continues).
    """
    config = _config()
    out = Console(stderr=True)
    tally = _Tally()
    with FitsyncClient(config) as client, StopSignals() as signals:
        connected = [a.athlete_id for a in client.tokens.athletes() if a.status == "connected"]
        targets = list(athlete_ids) or connected
        if not targets:
            raise click.ClickException("no connected athletes: run `fitsync connect` first")
        priority = "interactive" if athlete_ids else None
        instance = None
        for index, athlete_id in enumerate(targets):
            if signals.received:
                _stopped(out, client, signals.received, None, targets[index:])
            if not full and athlete_id in connected and _nothing_new(client, out, athlete_id, priority, max_wait):
                continue
            if instance is None:
                instance = _dagster_instance(config)
            detailed_before = _detailed(client, athlete_id)
            outcome = _run(
                client,
                instance,
                config,
                athlete_id,
                out,
                full=full,
                allow_shrink=allow_shrink,
                max_wait=max_wait,
                priority=priority,
            )
            if signals.received:
                _stopped(out, client, signals.received, athlete_id, targets[index + 1 :], detailed_before)
            _tell(out, athlete_id, outcome, tally)
    _finish(out, config, tally)


PARTIAL = 3
LEFT_OUT = 4


@dataclass
class _Tally:
    """The athletes whose sync did not simply finish, by how: they decide the exit code."""

    failed: list[int] = field(default_factory=list)
    partial: list[int] = field(default_factory=list)
    left_out: list[int] = field(default_factory=list)


def _nothing_new(client: FitsyncClient, out: Console, athlete_id: int, priority: str | None, max_wait: float) -> bool:
    """Whether the two-call check finds nothing new for the athlete, so no run is needed (said either way)."""
    found = nothing_new.check(client, athlete_id, priority=priority or "incremental", max_wait=max_wait)
    if found.nothing_new:
        out.print(f"athlete {athlete_id}: nothing new ({found.calls} calls: {found.why})", soft_wrap=True)
        return True
    out.print(Text(f"athlete {athlete_id}: {found.why}: syncing", style="dim"), soft_wrap=True)
    return False


def _dagster_instance(config: Config) -> DagsterInstance:
    """fitsync's Dagster instance, imported only once a run is needed: Dagster loads in seconds."""
    from fitsync.pipelines import instance as dagster_instance

    return dagster_instance.instance(config.home)


def _tell(out: Console, athlete_id: int, outcome: SyncOutcome, tally: _Tally) -> None:
    """Say how the athlete's run went (its error, its steps, what was left out or stopped early) and tally it."""
    if outcome.skipped:
        out.print(Text(outcome.skipped, style="yellow"), soft_wrap=True)
        tally.partial.append(athlete_id)
        return
    if outcome.error:  # not wrapped: the command it names must stay whole for copy and paste
        out.print(Text(outcome.error, style="red"), soft_wrap=True)
    _report(out, outcome)
    for line in outcome.left_out():
        out.print(Text(line, style="yellow"), soft_wrap=True)
    if outcome.left_out():
        tally.left_out.append(athlete_id)
    if not outcome.success:
        tally.failed.append(athlete_id)
    elif early := outcome.stopped_early():
        out.print(
            Text(
                f"athlete {athlete_id}: stopped early, {early[0]}; `fitsync sync` continues where this stopped",
                style="yellow",
            ),
            soft_wrap=True,
        )
        tally.partial.append(athlete_id)


def _finish(out: Console, config: Config, tally: _Tally) -> None:
    """The command's end: a failure's message, else where the warehouse is, then the exit code for what was left out
    or left for the next run."""
    if tally.failed:
        raise click.ClickException(f"sync failed for athlete(s) {', '.join(map(str, tally.failed))}: see the log above")
    click.echo(f"warehouse: {config.home / 'warehouse.duckdb'}")
    if tally.left_out:
        out.print(
            f"left out: some of what the service sent for athlete(s) {', '.join(map(str, tally.left_out))} is not in "
            "the warehouse (named above); it is kept as received in the views activity_summary_documents and "
            "activity_documents and the table unrecognized_payloads"
        )
        raise SystemExit(LEFT_OUT)
    if tally.partial:
        out.print(f"partial: athlete(s) {', '.join(map(str, tally.partial))} not finished (see above)")
        raise SystemExit(PARTIAL)


def _run(
    client: FitsyncClient,
    instance: DagsterInstance,
    config: Config,
    athlete_id: int,
    out: Console,
    *,
    full: bool,
    allow_shrink: bool,
    max_wait: float,
    priority: str | None,
) -> SyncOutcome:
    """One Dagster run of the sync job for the athlete, its steps shown as they go."""
    from fitsync.cli.sync_progress import SyncProgress
    from fitsync.pipelines.sync_runner import sync_athlete

    run_id = str(uuid.uuid4())  # known before the run starts: the progress display follows its steps
    with SyncProgress(client, instance, athlete_id, run_id, out, plain=not out.is_terminal):
        return sync_athlete(
            config,
            athlete_id,
            instance,
            full=full,
            allow_shrink=allow_shrink,
            max_wait_seconds=max_wait,
            log_level=DAGSTER_LOG_LEVEL,
            run_id=run_id,
            priority=priority,
        )


def _detailed(client: FitsyncClient, athlete_id: int) -> tuple[int, int]:
    """(activities known, of them detailed) for the athlete."""
    known = len(progress.known_ids(client.store, athlete_id))
    return known, known - progress.count_needing(client.store, athlete_id, "detail")


def _stopped(
    out: Console,
    client: FitsyncClient,
    signum: int,
    athlete_id: int | None,
    rest: list[int],
    detailed_before: tuple[int, int] = (0, 0),
) -> None:
    """One line of what was done (by this run: what it found already done is not counted) and what remains, then the
    signal's exit code."""
    parts = []
    if athlete_id is not None:
        known, detailed = _detailed(client, athlete_id)
        fetched = max(0, detailed - detailed_before[1])
        parts.append(
            f"athlete {athlete_id} interrupted after {fetched} new detail(s) in this run "
            f"({detailed} of {known} activities detailed in all)"
        )
    if rest:
        parts.append(f"not started: athlete(s) {', '.join(map(str, rest))}")
    out.print(
        Text(
            f"Stopped by {StopSignals.name(signum)}: {'; '.join(parts) or 'nothing started'}. "
            "Run `fitsync sync` to continue where this stopped.",
            style="yellow",
        ),
        soft_wrap=True,
    )
    raise SystemExit(StopSignals.exit_code(signum))


def _report(out: Console, outcome: SyncOutcome) -> None:
    if not outcome.metadata:  # nothing ran to the end: the error above says why
        return
    verdict = "FAILED" if not outcome.success else "LEFT OUT" if outcome.left_out() else "ok"
    table = Table(title=f"athlete {outcome.athlete_id}: {verdict}")
    for column in ("asset", "api calls", "notes"):
        table.add_column(column)
    for asset, meta in sorted(outcome.metadata.items()):
        notes = ", ".join(
            f"{k}={v}"
            for k, v in meta.items()
            if k in ("new", "changed", "fetched", "remaining", "reconciled_deletions", "skipped", "mode")
        )
        table.add_row(
            asset, str(meta.get("api_calls", "")), notes + (" " + str(meta["notes"]) if "notes" in meta else "")
        )
    out.print(table)
