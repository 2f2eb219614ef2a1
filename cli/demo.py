"""`fitsync demo`: the main job end to end, on a sandbox embedded in the process — no account anywhere.

Starts the sandbox on a free loopback port with a seeded world, registers an app, connects the athletes
through the real OAuth pages (the demo submits the consent form itself, only ever against its own sandbox),
runs the full sync, subscribes to webhooks with a local receiver, makes changes as an athlete would, lets
the `webhook_events` sensor turn the events into a run, and says what is in the warehouse.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import sys
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
import httpx
from rich.console import Console
from rich.table import Table

from fitsync.cli import screen
from fitsync.cli.stop_signals import StopSignals
from fitsync.cli.sync_waits import duration
from fitsync.client import oauth, stop_request, tls
from fitsync.client.config import Config
from fitsync.client.config_basics import DEMO_MARKER
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.resources.warehouse import warehouse_of
from fitsync.sandbox import browser
from fitsync.sandbox.server import SeedOptions, ServerOptions, ServerThread, UvicornThread
from fitsync.state import inbox as inbox_rows
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse
from fitsync.webhooks.receiver import DEFAULT_PREFIX, Receiver
from fitsync.webhooks.subscriptions import masked, subscribe

if TYPE_CHECKING:
    from dagster import DagsterInstance

MARKER = DEMO_MARKER
# The demo app gets a generous budget (limits differ per app on the real service too).
DEMO_LIMITS = {
    "read_limit_short": 5000,
    "read_limit_long": 50000,
    "overall_limit_short": 10000,
    "overall_limit_long": 100000,
}
SUMMARY_TABLES = (
    "athletes",
    "activities",
    "splits_metric",
    "laps",
    "segment_efforts",
    "segments",
    "starred_segments",
    "activity_zone_buckets",
    "athlete_stats_totals",
    "deleted_activities",
)


def expected_seconds(athletes: int, activities_per_athlete: int) -> float:
    """How long the demo takes, roughly, as its first line says: some 10 s to start the sandbox and Dagster, then the
    full syncs at ≈ 2 calls an activity. The default world took 40 s on a slow machine, 12 s on a fast one
    (docs/performance.md): the slow machine's time is said, so that the demo does not seem stuck there."""
    return 10 + athletes * activities_per_athlete / 10


def fresh_home(home: Path) -> Path:
    """The demo's own folder, emptied: never someone's real FITSYNC_HOME."""
    if home.exists() and any(home.iterdir()):
        if not (home / MARKER).exists():
            raise click.ClickException(f"{home} exists and is not a fitsync demo folder: choose another --home")
        shutil.rmtree(home)
        click.echo(f"emptied the earlier demo in {home} (a demo starts from nothing)", err=True)
    try:
        home.mkdir(parents=True, exist_ok=True)
        (home / MARKER).write_text("created by `fitsync demo`; safe to delete\n")
    except OSError as error:  # a read-only current folder: the fix is --home (the demo does not read FITSYNC_HOME)
        raise click.ClickException(
            f"cannot make the demo's folder {home} ({error.strerror}): give --home a folder you can write "
            "(`fitsync demo --home /tmp/fitsync-demo`), or run it from one"
        ) from None
    return home


def connect_athlete(config: Config, client: FitsyncClient, base_url: str, athlete_id: int) -> int:
    """The real flow of `fitsync connect`, with the demo acting as the athlete in a browser of their own."""
    with (
        oauth.LoopbackReceiver() as receiver,
        httpx.Client(base_url=base_url, timeout=15, verify=tls.context()) as athlete_browser,
    ):
        auth = oauth.authorization(config, receiver.redirect_uri)
        redirect = browser.consent(athlete_browser, auth.url, athlete_id)
        httpx.get(redirect.url, timeout=10, verify=tls.context())  # the browser follows the redirect back to fitsync
        code, granted = oauth.parse_redirect(receiver.wait(10), auth.state)
    body = oauth.exchange_code(config, client.transport, code)
    return client.tokens.save_grant(body, body.get("scope") or granted).athlete_id


@click.command()
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("fitsync-demo"),
    show_default=True,
    help="Folder for the demo's state and warehouse (emptied first).",
)
@click.option(
    "--athletes", default=2, show_default=True, type=click.IntRange(1, 20), help="Athletes in the demo world."
)
@click.option(
    "--activities-per-athlete",
    default=150,
    show_default=True,
    type=click.IntRange(2, 5000),
    help="Activities each athlete has recorded (at least 2: the demo renames one and deletes another).",
)
@click.option(
    "--flavor",
    type=click.Choice(["spec", "real"]),
    default="spec",
    show_default=True,
    help="The sandbox answers as the spec says, or as the real service does where they differ.",
)
def demo(home: Path, athletes: int, activities_per_athlete: int, flavor: str) -> None:
    """Sandbox → OAuth → full sync → webhooks → athlete changes → sensor-driven run → a look at the warehouse."""
    with StopSignals() as signals:
        try:
            _demo(home, athletes, activities_per_athlete, flavor, signals)
        except (KeyboardInterrupt, click.ClickException):
            if not signals.received:
                raise
    if signals.received:
        click.echo(
            f"Stopped by {StopSignals.name(signals.received)}: the demo's sandbox is shut down; what it "
            f"synced so far is in {home.resolve()}. `fitsync demo --home {home.resolve()}` starts it over.",
            err=True,
        )
        raise SystemExit(StopSignals.exit_code(signals.received))


def _installed_command(name: str) -> str:
    """How to call this installation's `name` from any folder: bare when it is on PATH (an activated venv), else the
    absolute path of the venv's executable."""
    path = Path(sys.executable).parent / name
    return name if shutil.which(name) == str(path) else str(path)


def _demo(home: Path, athletes: int, activities_per_athlete: int, flavor: str, signals: StopSignals) -> None:
    """Each numbered step ends at a safe point: a stop signal received during it ends the demo there (a sync
    step is stopped by Dagster itself)."""
    from fitsync.pipelines import instance as dagster_instance

    started = time.monotonic()
    out = screen.console()
    out.print(  # short: one line on an 80-column terminal
        f"fitsync demo (about {duration(expected_seconds(athletes, activities_per_athlete))}): sandbox, OAuth, "
        "full syncs, webhooks, the warehouse",
        highlight=False,
    )
    logging.getLogger("dagster").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="dagster")
    home = fresh_home(home.resolve())
    os.environ["FITSYNC_HOME"] = str(home)  # what a failure's message names (a full disk: this folder's)
    options = ServerOptions(
        port=0,
        settings={**DEMO_LIMITS, "flavor": flavor},
        seed=SeedOptions(athletes=athletes, activities_per_athlete=activities_per_athlete),
    )
    with (
        ServerThread(options) as sandbox,
        httpx.Client(base_url=sandbox.base_url, timeout=15, verify=tls.context()) as http,
    ):
        console = {"X-Sandbox-Console-Key": sandbox.console_key}
        out.print(
            f"[bold]1.[/] Sandbox ({flavor} flavour) with {athletes} athlete{'s' if athletes != 1 else ''} × "
            f"{activities_per_athlete} "
            f"activities at {sandbox.api_url}"
        )
        signals.checkpoint()
        config = _register_app(sandbox, http, console, home)
        with screen.doing(out, "opening the Dagster instance…"):
            instance = dagster_instance.instance(home, lake=warehouse_of(config).is_lake)
        with FitsyncClient(config) as client:
            stage = _Stage(sandbox, http, console, config, client, instance, out, signals, home)
            ids = _connect_and_sync(stage)
            changes = _webhook_round_trip(stage, ids[0])
    warehouse = warehouse_of(config)
    _show_warehouse(out, warehouse, changes)
    out.print(f"\nWarehouse: {warehouse}  ({time.monotonic() - started:.0f} s)")
    _print_hints(out, home)


@dataclass(frozen=True)
class _Stage:
    """What the demo's steps share: the sandbox, a browser on it with the console's key, the app's config and client,
    the Dagster instance, the terminal, the stop signals and the demo's folder."""

    sandbox: ServerThread
    http: httpx.Client
    console: dict[str, str]
    config: Config
    client: FitsyncClient
    instance: DagsterInstance
    out: Console
    signals: StopSignals
    home: Path


@dataclass(frozen=True)
class _Changes:
    """What the demo did as an athlete, and when (the webhook round trip is timed from it)."""

    renamed: int
    deleted: int
    created: int
    at: float  # time.monotonic()


# What the demo takes from the environment: where a many-host setup keeps its state and warehouse (to try them on the
# sandbox). Everything else is the demo's own, whatever config.toml or FITSYNC_* say.
SHARED = ("state_url", "warehouse_url", "warehouse_data_path")


def _register_app(sandbox: ServerThread, http: httpx.Client, console: dict[str, str], home: Path) -> Config:
    """Register the demo's app at the sandbox, as a developer does at the service, and configure fitsync with it."""
    app = http.post(
        "/sandbox/apps", json={"name": "fitsync demo", "callback_domain": "localhost"}, headers=console
    ).json()
    return Config.load(
        {
            Config.variable(name): os.environ[Config.variable(name)]
            for name in SHARED
            if Config.variable(name) in os.environ
        },
        home=home,
        base_url=sandbox.api_url,
        auth_url=sandbox.base_url,
        client_id=app["client_id"],
        client_secret=Secret(app["client_secret"]),
    )


def _connect_and_sync(stage: _Stage) -> list[int]:
    """Steps 2 and 3: connect every athlete of the sandbox through the OAuth pages, then run each one's full sync."""
    world = stage.http.get("/sandbox/athletes", headers=stage.console).json()
    ids = [connect_athlete(stage.config, stage.client, stage.sandbox.base_url, a["id"]) for a in world]
    stage.out.print(f"[bold]2.[/] Connected athletes {', '.join(map(str, ids))} through the OAuth pages")
    stage.signals.checkpoint()
    with screen.doing(stage.out, "loading fitsync's Dagster jobs…"):  # seconds, before the first run can start
        from fitsync.pipelines.sync_runner import sync_athlete
    stage.signals.checkpoint()
    for number, athlete_id in enumerate(ids):
        run_id = str(uuid.uuid4())
        with _run_shown(stage, athlete_id, run_id, "full sync"):
            outcome = sync_athlete(stage.config, athlete_id, stage.instance, log_level="CRITICAL", run_id=run_id)
        _mark_stopped(stage, run_id)
        if not outcome.success:  # its error is said here, not by Dagster's log
            raise click.ClickException(f"the sync failed: {outcome.error}")
        step = "[bold]3.[/]" if number == 0 else "  "  # one step, a line per athlete
        stage.out.print(f"{step} Full sync of athlete {athlete_id}: {outcome.api_calls()} API calls")
        stage.signals.checkpoint()
    return ids


def _webhook_round_trip(stage: _Stage, athlete_id: int) -> _Changes:
    """Steps 4 to 6: subscribe a local receiver, change the athlete's activities at the sandbox, and let the
    webhook_events sensor bring the changes to the warehouse."""
    with UvicornThread(Receiver(stage.client).app) as receiver:
        subscription_id = subscribe(stage.client, receiver.base_url + DEFAULT_PREFIX)
        subscription = stage.client.subscription_state.current()
        assert subscription is not None  # subscribe() stored it
        callback = masked(subscription.callback_url)
        stage.out.print(f"[bold]4.[/] Webhook receiver at {callback}, subscription {subscription_id}")
        stage.signals.checkpoint()
        changes = _change_activities(stage, athlete_id)
        stage.out.print(
            f"[bold]5.[/] As athlete {athlete_id}: renamed {changes.renamed}, deleted {changes.deleted}, "
            f"recorded {changes.created}"
        )
        stage.signals.checkpoint()
        calls = process_events(stage, expected=3)
        stage.out.print(
            f"[bold]6.[/] The webhook_events sensor turned the events into a run "
            f"({calls} API calls); in the warehouse {time.monotonic() - changes.at:.1f} s after the change"
        )
        stage.signals.checkpoint()
    return changes


def process_events(stage: _Stage, expected: int, timeout: float = 30.0) -> int:
    """What `dagster dev` does on its own: once the events are in, tick the sensor and run what it asks for
    (cli/demo_daemon.py, which records both as the daemon would). Returns the runs' API calls."""
    from fitsync.cli import demo_daemon

    _await_events(stage, expected, timeout)
    calls = 0
    for request in demo_daemon.evaluate(stage.config, stage.instance, stage.home):
        run_id = str(uuid.uuid4())
        with _run_shown(stage, int(request.partition_key or 0), run_id, "webhook run"):
            outcome = demo_daemon.launch(stage.config, stage.instance, request, run_id)
        _mark_stopped(stage, run_id)
        if outcome is not None:
            if not outcome.success:
                raise click.ClickException(f"the webhook run {request.run_key} failed: {outcome.error}")
            calls += outcome.api_calls()
    return calls


def _await_events(stage: _Stage, expected: int, timeout: float) -> None:
    """Until the receiver has stored the events the sandbox delivers (milliseconds, usually); a stop asked for
    meanwhile ends the wait."""
    deadline = time.monotonic() + timeout
    while inbox_rows.count(stage.client.store) < expected:
        if time.monotonic() > deadline:
            raise click.ClickException("the webhook events did not arrive")
        stage.signals.checkpoint()
        time.sleep(0.05)


def _run_shown(stage: _Stage, athlete_id: int, run_id: str, what: str) -> contextlib.AbstractContextManager[object]:
    """A run's seconds, said as `fitsync sync` says them (cli/sync_progress.py): on a terminal its live line (phase,
    counts, waits and time left), off it a plain line per phase and per wait, as a log reads them."""
    from fitsync.cli.sync_progress import SyncProgress

    if not stage.out.is_terminal:
        stage.out.print(f"athlete {athlete_id}: {what}…")
    return SyncProgress(stage.client, stage.instance, athlete_id, run_id, stage.out, plain=not stage.out.is_terminal)


def _mark_stopped(stage: _Stage, run_id: str) -> None:
    """`fitsync status` and Dagster's UI say "stopped", not only "failure", for a run a person stopped (as
    `fitsync sync` tags its runs)."""
    from fitsync.cli.last_runs import mark_stopped

    if stop_request.requested():
        mark_stopped(stage.instance, run_id)


def _change_activities(stage: _Stage, athlete_id: int) -> _Changes:
    """As the athlete would at the service: rename their newest activity, delete the one before, record a new one."""
    token = stage.client.tokens.access_token(athlete_id).reveal()
    listing = stage.http.get(
        "/api/v3/athlete/activities", params={"per_page": 3}, headers={"Authorization": f"Bearer {token}"}
    ).json()
    renamed, deleted = listing[0]["id"], listing[1]["id"]
    changed_at = time.monotonic()
    stage.http.patch(
        f"/sandbox/activities/{renamed}", json={"name": "Demo: renamed by the athlete"}, headers=stage.console
    )
    stage.http.delete(f"/sandbox/activities/{deleted}", headers=stage.console)
    created = stage.http.post(
        f"/sandbox/athletes/{athlete_id}/activities", json={"sport_type": "Run"}, headers=stage.console
    ).json()["id"]
    return _Changes(renamed, deleted, created, changed_at)


def _show_warehouse(out: Console, warehouse: Warehouse, changes: _Changes) -> None:
    """Rows per table in the warehouse, and whether each change of the athlete's reached it."""
    with db.reading(warehouse) as conn:
        table = Table(title="In the warehouse")
        table.add_column("table")
        table.add_column("rows", justify="right")
        for name in SUMMARY_TABLES:
            table.add_row(name, str(conn.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]))
        check = conn.execute(
            "SELECT (SELECT name FROM activities WHERE activity_id = ?), "
            "(SELECT count(*) FROM activities WHERE activity_id = ?), "
            "(SELECT count(*) FROM activities WHERE activity_id = ?), "
            "(SELECT count(*) FROM deleted_activities WHERE activity_id = ?)",
            [changes.renamed, changes.deleted, changes.created, changes.deleted],
        ).fetchall()[0]
    out.print(table)
    out.print(
        f"Renamed: {check[0]!r} · deleted one: {'gone' if check[1] == 0 else 'STILL THERE'}, "
        f"{'audited in deleted_activities' if check[3] == 1 else 'NOT AUDITED'} · "
        f"new one: {'present' if check[2] == 1 else 'MISSING'}"
    )


def _print_hints(out: Console, home: Path) -> None:
    """The commands that look at what the demo made: a query, the report, Dagster's UI. Every path in them is
    absolute, so each works from whatever folder it is pasted in.

    The UI is the webserver alone, without the daemon (`dagster dev` starts both): the demo's app and its sandbox
    ended with the demo, so whatever the daemon launched on this home (the nightly sync, a run of the webhook
    sensor) could only fail, against the real service's address with no app."""
    out.print(
        "The last line opens Dagster's UI on the demo's runs without its daemon, so it starts none: the nightly sync "
        "and the sensors would call the demo's sandbox, which stopped with the demo.",
        highlight=False,
        soft_wrap=True,
    )
    out.print("Look at it (copy a line; each is one command):")
    fitsync, webserver, pip = (
        shlex.quote(_installed_command(name)) for name in ("fitsync", "dagster-webserver", "pip")
    )
    source = Path(__file__).resolve().parents[1]  # the checkout an editable install runs from
    package = f"-e {shlex.quote(f'{source}[dev]')}" if (source / "pyproject.toml").is_file() else "'fitsync[dev]'"
    at = f"FITSYNC_HOME={shlex.quote(str(home))}"
    hints = [
        f'{at} {fitsync} query "SELECT sport_type, count(*), round(sum(distance)/1000) AS km '
        'FROM activities GROUP BY ALL ORDER BY 2 DESC"',
        f"{at} {fitsync} report",
        f"{pip} install -q {package} && DAGSTER_HOME={shlex.quote(str(home / 'dagster'))} {at} "
        f"{webserver} -m fitsync.pipelines.definitions",
    ]
    for hint in hints:  # no markup (rich would eat `[dev]`), no wrapping (a split command does not paste)
        out.print("  " + hint, markup=False, highlight=False, soft_wrap=True)
