"""`fitsync sync`: the assets, headless, with progress, a clean stop and exit codes that say how it went."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn

import click
from rich.console import Console
from rich.text import Text

from fitsync.cli import screen, sync_summary
from fitsync.cli.athlete_choice import ATHLETE_ID, chosen
from fitsync.cli.confirm import confirm, yes_option
from fitsync.cli.stop_signals import StopSignals
from fitsync.cli.sync_waits import WaitsShown
from fitsync.client import stop_request
from fitsync.client.config_basics import ConfigError, load_config
from fitsync.client.errors import ReauthorizationRequired
from fitsync.client.runtime import FitsyncClient
from fitsync.client.transport import calls_in_process
from fitsync.pipelines import daemon_runs, nothing_new
from fitsync.state import landing
from fitsync.state.store import AthleteBusy, held_elsewhere
from fitsync.sync import progress

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from fitsync.client.config import Config
    from fitsync.pipelines.sync_runner import SyncOutcome
    from fitsync.sync.known_answers import Known


# The command prints each failed step's message itself (below): Dagster's own ERROR events would repeat it with
# a stack trace. The run's full log stays in the Dagster instance under FITSYNC_HOME.
DAGSTER_LOG_LEVEL = "CRITICAL"
REFUSED_TOKEN = "needs re-authorization (the service refused its refresh token)"  # for `fitsync status`
STARTING = "starting the Dagster run…"  # said until its first step starts: loading Dagster takes seconds
VERBOSE_DAGSTER_LOG_LEVEL = "WARNING"  # --verbose: Dagster's warnings too (a listing's kept activities, …)


def _config() -> Config:
    from fitsync.resources.warehouse import warehouse_of

    try:
        config = load_config()
        warehouse_of(config)  # a wrong warehouse_url is said before anything is fetched
        config.require_app()  # no credentials: `fitsync init`, before the home gets a state store or a key
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    return config


@click.command()
@click.option(
    "--athlete",
    "athlete_ids",
    type=ATHLETE_ID,
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
    type=click.FloatRange(min=0),
    default=900.0,
    show_default=True,
    help="Seconds to wait for the rate budget before leaving the rest to the next run.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no tables: only what needs attention.")
@click.option(
    "--verbose", "-v", is_flag=True, help="Every asset in the tables (those that did nothing too), calls per endpoint."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="The summary as JSON on stdout; on stderr, as with --quiet, only what needs attention (no progress).",
)
@yes_option
def sync(
    athlete_ids: tuple[int, ...],
    full: bool,
    allow_shrink: bool,
    max_wait: float,
    quiet: bool,
    verbose: bool,
    as_json: bool,
    yes: bool,
) -> None:
    """Sync connected athletes into the warehouse.

    Exit codes: 0 done (an athlete another process or host is syncing is said so and left to it); 1 a sync failed;
    2 a usage error (an option's value, an athlete not connected); 4 done, but some of what the service sent was left out of the warehouse (implausible values, unreadable rows:
    named above, kept raw); 3 partial: work is left for a later run (the rate budget ran out first); 130 / 143
    stopped by Ctrl-C / SIGTERM (the next `fitsync sync` continues).
    """
    if quiet and verbose:
        raise click.UsageError("--quiet and --verbose do not go together")
    if allow_shrink and not full:
        raise click.UsageError("--allow-shrink goes with --full: only a full listing reconciles deletions")
    config = _config()
    # --json is for scripts: what they read is stdout, and a log of stderr gets only what needs attention
    out = screen.console(stderr=True, quiet=quiet or as_json)
    summaries: list[sync_summary.AthleteSummary] = []
    with screen.library_noise_logged(), FitsyncClient(config) as client, StopSignals() as signals:
        known = client.tokens.athletes()
        connected = [a.athlete_id for a in known if a.status == "connected"]
        # refused tokens: said (failed) on every sync until someone runs `fitsync connect`, never skipped in silence
        refused = {a.athlete_id: a.status_reason for a in known if a.status == "needs_reauth"}
        # --athlete of one not connected: a usage error (exit 2)
        targets = chosen(athlete_ids, [a.athlete_id for a in known if a.status in ("connected", "needs_reauth")])
        if not targets:
            raise click.ClickException("no connected athletes: run `fitsync connect` first")
        if damaged := nothing_new.damaged_warehouse(client):  # every run would fail on it, after spending calls
            raise click.ClickException(damaged)
        if allow_shrink and (asked := [a for a in targets if a not in refused]):
            _confirm_shrink(client, asked, yes)
        priority = "interactive" if athlete_ids else None
        instance = None
        again = " ".join(["fitsync sync", *(["--full"] if full else []), *(f"--athlete {a}" for a in athlete_ids)])
        stop = functools.partial(_stopped, out, client, again=again, done=summaries, as_json=as_json)
        for index, athlete_id in enumerate(targets):
            if signals.received:
                stop(signals.received, None, targets[index:])
            if athlete_id in refused:
                summaries.append(sync_summary.needs_reauth(athlete_id, refused[athlete_id]))
                _tell(out, summaries[-1], verbose=verbose)
                _failed_before_run(client, athlete_id, REFUSED_TOKEN)
                continue
            started = time.monotonic()
            if (elsewhere := _held_elsewhere(client, athlete_id)) is not None:  # said now: no check, no Dagster
                summaries.append(sync_summary.AthleteSummary(athlete_id, "busy", seconds=0.0, lines=[elsewhere]))
                _tell(out, summaries[-1], verbose=verbose)
                continue
            found = None
            if not full and athlete_id in connected:
                with WaitsShown(f"athlete {athlete_id}", out, "checking for anything new"):
                    try:
                        found = nothing_new.check(
                            client, athlete_id, priority=priority or "incremental", max_wait=max_wait
                        )
                    except KeyboardInterrupt:  # the check's request or wait met the stop: said with its signal
                        if not signals.received:
                            raise
                        stop(signals.received, None, targets[index:])
                if found.nothing_new:
                    summaries.append(_nothing_new(out, athlete_id, found, time.monotonic() - started))
                    continue
                if isinstance(found.error, ReauthorizationRequired):  # refused since the last sync: a run would be too
                    summary = sync_summary.needs_reauth(
                        athlete_id, found.error.reason, found.calls, time.monotonic() - started
                    )
                    summaries.append(summary)
                    _tell(out, summary, verbose=verbose)
                    _failed_before_run(client, athlete_id, REFUSED_TOKEN)
                    continue
                if (unanswered := _unreachable(config, found.error)) is not None:
                    # nothing was sent: a run (Dagster loading for seconds, its steps retrying each) would meet the
                    # same silence; the error is said now instead
                    summary = sync_summary.unreachable(athlete_id, found.calls, time.monotonic() - started, unanswered)
                    summaries.append(summary)
                    _tell(out, summary, verbose=verbose)
                    _failed_before_run(client, athlete_id, "the service did not answer")
                    continue
                if found.budget_until is not None:  # a run now would wait, or stop at once, the same
                    summary = sync_summary.budget_spent(
                        athlete_id, found.calls, time.monotonic() - started, found.budget_until
                    )
                    summaries.append(summary)
                    _tell(out, summary, verbose=verbose)
                    continue
                out.print(Text(f"athlete {athlete_id}: {found.why}: syncing", style="dim"), soft_wrap=True)
            if (until := _spent_past(client, max_wait)) is not None:  # the run would stop at its first call
                calls = found.calls if found is not None else 0
                summary = sync_summary.budget_spent(athlete_id, calls, time.monotonic() - started, until)
                summaries.append(summary)
                _tell(out, summary, verbose=verbose)
                continue
            before = _recorded(client, athlete_id)
            run_id = str(uuid.uuid4())  # known before the run: its first steps are done for it before Dagster loads
            calls_before = calls_in_process()  # the first steps' calls are the run's
            try:
                with client.store.athlete_lock(athlete_id):
                    done_first: list[str] = []
                    try:
                        # not while the daemon's run syncs the athlete (the run says so), nor unknown (it asks Dagster)
                        if daemon_runs.in_flight(config.home, athlete_id) is False:
                            held = found.known if found is not None else None
                            done_first = _first_steps(
                                client, config, athlete_id, out, run_id, full, allow_shrink, max_wait, priority, held
                            )
                    except KeyboardInterrupt:  # a request or wait met the stop: what is done is recorded
                        if not signals.received:
                            raise
                        stop(signals.received, athlete_id, targets[index + 1 :], before)
                    try:
                        with screen.doing(out, f"athlete {athlete_id}: {STARTING}"):  # the run's display follows
                            if instance is None:
                                instance = signals.wait_for(functools.partial(_dagster_instance, config))
                    except KeyboardInterrupt:
                        if not signals.received:
                            raise
                    if signals.received:  # before the run: it would start only to stop at its first request
                        if not done_first:  # nothing done for the athlete yet
                            stop(signals.received, None, targets[index:])
                        stop(signals.received, athlete_id, targets[index + 1 :], before)
                    outcome = _run(
                        client,
                        instance,
                        config,
                        athlete_id,
                        out,
                        run_id=run_id,
                        calls_before=calls_before,
                        done_first=done_first,
                        full=full,
                        allow_shrink=allow_shrink,
                        max_wait=max_wait,
                        priority=priority,
                        verbose=verbose,
                    )
            except AthleteBusy as busy:  # another process or host took the athlete since the look above
                summaries.append(
                    sync_summary.AthleteSummary(athlete_id, "busy", seconds=0.0, lines=[held_elsewhere(busy)])
                )
                _tell(out, summaries[-1], verbose=verbose)
                continue
            if signals.received:
                stop(signals.received, athlete_id, targets[index + 1 :], before)
            if not outcome.ran and outcome.error:
                # refused before a run started (the token refused since the check): status must not show an older run
                _failed_before_run(client, athlete_id, outcome.error.removeprefix(f"athlete {athlete_id} "))
            summary = sync_summary.from_outcome(outcome, athlete_id, time.monotonic() - started)
            if found is not None:
                sync_summary.add_check(summary, found.calls, found.why)
            summaries.append(summary)
            _tell(out, summary, verbose=verbose)
    _finish(out, config, summaries, as_json)


def _failed_before_run(client: FitsyncClient, athlete_id: int, why: str) -> None:
    """Recorded for `fitsync status`, whose last run would otherwise be an older one that went well."""
    with client.store.transaction() as conn:
        progress.set_cursor(conn, athlete_id, progress.FAILED_BEFORE_RUN, why)


def _confirm_shrink(client: FitsyncClient, targets: list[int], yes: bool) -> None:
    """--allow-shrink lifts the guard against a listing short by mistake: agreed to before anything is fetched."""
    known = {athlete_id: len(progress.known_ids(client.store, athlete_id)) for athlete_id in targets}
    whose = "; ".join(f"athlete {athlete_id}: {count:,} known" for athlete_id, count in known.items())
    confirm(
        "with --allow-shrink this sync deletes from the warehouse every activity the service's full listing lacks, "
        f"however many ({whose}); each is asked for by id first and deleted only when the service answers that it "
        "is gone, and kept in deleted_activities",
        "Sync and delete them?",
        yes,
    )


def _unreachable(config: Config, error: Exception | None) -> str | None:
    """The message for a check the service left unanswered, every retry refused or timed out while connecting (the
    request never reached it), or answered 404 (base_url is not the API root); None for any other outcome, which the
    run meets and reports itself."""
    from urllib.parse import urlsplit

    import httpx

    from fitsync.client.errors import ApiError
    from fitsync.client.explain import unreachable
    from fitsync.client.transport import NOT_SENT, ServiceUnresponsive

    if isinstance(error, ApiError) and error.status == 404:  # the profile and the listing exist at the API root
        return (
            f"{error} at {config.base_url}: that is not the service's API root (…/api/v3); fix base_url / "
            "FITSYNC_BASE_URL (`fitsync doctor` checks it), then run `fitsync sync` again"
        )
    if not isinstance(error, (*NOT_SENT, ServiceUnresponsive)):
        return None
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(config.base_url))
    cause = error if isinstance(error, httpx.HTTPError) else (error.__cause__ or error)
    return unreachable(origin, str(cause) or type(cause).__name__) + ", then run `fitsync sync` again"


def _nothing_new(
    out: Console, athlete_id: int, found: nothing_new.Check, seconds: float
) -> sync_summary.AthleteSummary:
    """Said at once: the two-call check found nothing new, so no run."""
    out.print(
        f"athlete {athlete_id}: nothing new ({found.calls} call{'' if found.calls == 1 else 's'} in {seconds:.1f} s: "
        f"{found.why})",
        soft_wrap=True,
    )
    return sync_summary.nothing_new(athlete_id, found.calls, seconds, found.why)


def _dagster_instance(config: Config) -> DagsterInstance:
    """fitsync's Dagster instance, imported only once a run is needed: Dagster, the job's definitions and the run's
    display load in seconds (while the command says so)."""
    # loaded now, under the status line, rather than in silence by _run
    import fitsync.cli.sync_progress  # noqa: F401
    import fitsync.pipelines.sync_runner  # noqa: F401
    from fitsync.pipelines import instance as dagster_instance
    from fitsync.resources.warehouse import warehouse_of

    return dagster_instance.instance(config.home, lake=warehouse_of(config).is_lake)


def _first_steps(
    client: FitsyncClient,
    config: Config,
    athlete_id: int,
    out: Console,
    run_id: str,
    full: bool,
    allow_shrink: bool,
    max_wait: float,
    priority: str | None,
    known: Known | None,
) -> list[str]:
    """The run's first steps — profile, stats, zones, the listing, its summaries in the warehouse — before Dagster
    loads (sync/first_steps.py): the summaries answer ≈ 2 s sooner. A new warehouse's migrations run meanwhile.
    Returns the steps done (the run's display does not say them again). `known`: what the nothing-new check asked
    and found changed, taken instead of asking again."""
    from fitsync.cli.sync_phases import PHASES
    from fitsync.resources.warehouse import warehouse_of
    from fitsync.sync import first_steps  # DuckDB: loaded once a run is due, not on every command's start

    who = f"athlete {athlete_id}"
    with screen.doing(out, f"{who}: {PHASES['athlete']}") as say:
        shown = WaitsShown(who, out, PHASES["athlete"], say=None if out.quiet else say)  # quiet: a wait at a terminal

        def starting(step: str) -> None:  # each phase said as the run's display says it (cli/sync_progress.py)
            if (phase := PHASES.get(step, step)) != shown.doing:
                shown.doing = phase
                say(f"{who}: {phase}")

        with shown, _schema_meanwhile(config) as schema:
            return first_steps.run(
                client,
                athlete_id,
                warehouse_of(config),
                run_id=run_id,
                full=full,
                allow_shrink=allow_shrink,
                max_wait=max_wait,
                priority=priority,
                schema=schema,
                starting=starting,
                known=known,
            )


@contextlib.contextmanager
def _schema_meanwhile(config: Config) -> Iterator[Callable[[], None]]:
    """A new warehouse file's migrations (≈ 0.5 s) run while the first steps fetch: DuckDB works outside the GIL, so
    the first sync's summaries reach the warehouse that much sooner. Yields how to wait for them (before the load).
    Whatever stops them (another process creating the file at the same moment, a folder not writable) is left to the
    load, which waits, says why, or reports it; its own migrate finds the schema current otherwise."""
    from fitsync.resources.warehouse import warehouse_of
    from fitsync.warehouse import db

    warehouse = warehouse_of(config)
    if warehouse.is_lake or warehouse.path.exists():  # made already: its migrate is ≈ 40 ms, left to the load
        yield lambda: None
        return

    def migrate() -> None:
        with contextlib.suppress(Exception):
            db.migrate(warehouse, timeout=1.0)

    worker = threading.Thread(target=migrate, name="fitsync-schema", daemon=True)
    worker.start()
    try:
        yield worker.join
    finally:
        worker.join()


def _tell(out: Console, summary: sync_summary.AthleteSummary, *, verbose: bool) -> None:
    """Say how the athlete's run went: even with --quiet, whatever is not "ok" (its lines, on stderr)."""
    if out.quiet and summary.verdict != "ok":
        loud = screen.console(stderr=True)
        for line in summary.lines:
            loud.print(Text(line, style=sync_summary.STYLES.get(summary.verdict, "red")), soft_wrap=True)
        return
    sync_summary.render(out, summary, verbose=verbose)


def _finish(out: Console, config: Config, summaries: list[sync_summary.AthleteSummary], as_json: bool) -> None:
    """The command's end: the JSON summary (--json), the verdicts' one line each, then the exit code."""
    from fitsync.resources.warehouse import warehouse_of

    code = sync_summary.exit_code(summaries)
    warehouse = warehouse_of(config)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "exit_code": code,
                    "warehouse": str(warehouse),
                    "athletes": [s.as_json() for s in summaries],
                },
                indent=1,
            )
        )
    loud = screen.console(stderr=True)  # what decides the exit code is said even with --quiet
    by_verdict: dict[str, list[int]] = {}
    for summary in summaries:
        by_verdict.setdefault(summary.verdict, []).append(summary.athlete_id)
    ids = {verdict: ", ".join(map(str, found)) for verdict, found in by_verdict.items()}
    if "failed" in ids:
        raise click.ClickException(
            f"sync failed for athlete(s) {ids['failed']} (why is said above): `fitsync sync` continues where this "
            "stopped once that is fixed, or in a while when the service failed; `fitsync doctor` checks the "
            "settings, the tokens and the service"
        )
    if not as_json and not out.quiet:
        click.echo(f"warehouse: {warehouse}")
    if "busy" in ids:
        out.print(f"being synced elsewhere: athlete(s) {ids['busy']} (left to that process)")
    if "left out" in ids:
        loud.print(
            f"left out: some of what the service sent for athlete(s) {ids['left out']} is not in "
            "the warehouse (named above); it is kept as received in the views activity_summary_documents and "
            "activity_documents and the table unrecognized_payloads"
        )
    if "partial" in ids:
        loud.print(f"partial: athlete(s) {ids['partial']} not finished: work is left for the next `fitsync sync`")
    if code:
        raise SystemExit(code)


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
    run_id: str,
    calls_before: int,
    done_first: list[str],
    priority: str | None,
    verbose: bool,
) -> SyncOutcome:
    """One Dagster run of the sync job for the athlete (whose lock the caller holds), its steps shown as they go (not
    with --quiet); its calls are those the process made since `calls_before` (the first steps' with them)."""
    from fitsync.cli.last_runs import mark_stopped
    from fitsync.cli.sync_progress import SyncProgress
    from fitsync.pipelines.sync_runner import sync_athlete

    shown = (
        WaitsShown(f"athlete {athlete_id}", out, "syncing")  # quiet: a wait at a terminal only
        if out.quiet
        else SyncProgress(client, instance, athlete_id, run_id, out, plain=not out.is_terminal, adopted=set(done_first))
    )
    with shown, _forgotten(run_id):
        outcome = sync_athlete(
            config,
            athlete_id,
            instance,
            full=full,
            allow_shrink=allow_shrink,
            max_wait_seconds=max_wait,
            log_level=VERBOSE_DAGSTER_LOG_LEVEL if verbose else DAGSTER_LOG_LEVEL,
            run_id=run_id,
            priority=priority,
            locked=True,
        )
    if stop_request.requested():  # `fitsync status` and Dagster say "stopped", not "failure", for a person's stop
        mark_stopped(instance, run_id)
    return dataclasses.replace(outcome, calls=calls_in_process() - calls_before)


@contextlib.contextmanager
def _forgotten(run_id: str) -> Iterator[None]:
    """Whatever of the first steps' outcomes the run did not adopt (it did not start: busy, not connected) goes."""
    try:
        yield
    finally:
        from fitsync.sync import first_steps

        first_steps.forget(run_id)


def _spent_past(client: FitsyncClient, max_wait: float) -> float | None:
    """When the budget comes back, if the ledger says it is spent for longer than --max-wait: no call can go, and a
    run would load Dagster for seconds only to stop at its first one. None when a call may go within the wait."""
    now = client.governor.clock()
    spent = [line.resets_at for line in client.governor.snapshot() if line.used >= line.limit]
    return max(spent) if spent and max(spent) - now > max_wait else None


def _held_elsewhere(client: FitsyncClient, athlete_id: int) -> str | None:
    """Who syncs the athlete now, if another process or host does: asked before the check's calls and Dagster's
    seconds of loading. Only a look: the run takes the lock itself (one that starts meanwhile is met there)."""
    try:
        with client.store.athlete_lock(athlete_id):
            return None
    except AthleteBusy as busy:
        return held_elsewhere(busy)


def _recorded(client: FitsyncClient, athlete_id: int) -> tuple[int, int, int]:
    """(activities known, of which detailed, activities' zones ever fetched) for the athlete, as recorded: an answer
    not yet recorded when a stop came is fetched again next run, so it is not counted as this run's."""
    known = len(progress.known_ids(client.store, athlete_id))
    detailed = known - progress.count_needing(client.store, athlete_id, "detail")
    return known, detailed, progress.count_done(client.store, athlete_id, "zones")


def _stopped(
    out: Console,
    client: FitsyncClient,
    signum: int,
    athlete_id: int | None,
    rest: list[int],
    before: tuple[int, int, int] = (0, 0, 0),
    *,
    again: str = "fitsync sync",
    done: list[sync_summary.AthleteSummary],
    as_json: bool = False,
) -> NoReturn:
    """One line of what this run recorded (details kept in the state store: nothing it found done, merely listed, or
    answered but not yet recorded) and what remains, then the signal's exit code. Said with --quiet too (a stop is
    what a log must show); with --json, the summary of the athletes done so far and of the stop on stdout."""
    parts = []
    if athlete_id is not None:
        known, detailed, zoned = _recorded(client, athlete_id)
        zones = f" and {zoned - before[2]} activities' zones" if zoned > before[2] else ""
        unloaded = landing.count(client.store, athlete_id)  # a stop does not wait for a load: the next run loads it
        parts.append(
            f"athlete {athlete_id} interrupted after {detailed - before[1]} new detail(s){zones} in this run "
            f"({detailed} of {known} activities detailed in all"
            + (
                "; what it fetched and did not load yet is kept, and reaches the warehouse with the next sync)"
                if unloaded
                else ")"
            )
        )
    if rest:
        parts.append(f"not started: athlete(s) {', '.join(map(str, rest))}")
    code = StopSignals.exit_code(signum)
    if as_json:
        stop = {"signal": StopSignals.name(signum), "interrupted": athlete_id, "not_started": rest}
        click.echo(json.dumps({"exit_code": code, "stopped": stop, "athletes": [s.as_json() for s in done]}, indent=1))
    loud = out if not out.quiet else screen.console(stderr=True)
    loud.print(
        Text(
            f"Stopped by {StopSignals.name(signum)}: {'; '.join(parts) or 'nothing started'}. "
            f"Run `{again}` to continue where this stopped.",
            style="yellow",
        ),
        soft_wrap=True,
    )
    raise SystemExit(code)
