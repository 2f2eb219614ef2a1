"""`fitsync sandbox …`: serve the sandbox and act as its athletes from the command line."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from . import console, store
from .faults import ApiError
from .listening import listening_socket
from .server import SeedOptions, ServerOptions, make_server
from .settings import Settings


def _world(db: str) -> Any:
    """A connection to the world `sandbox serve --db` keeps. A console command on a file that is not there refuses:
    typed in another folder, `--db sandbox.db` would make a new, empty world, and an app made there is one the
    running server does not know."""
    if not Path(db).is_file():
        raise click.BadParameter(
            f"no sandbox world at {Path(db).absolute()}: give the file `fitsync sandbox serve --db` was started with "
            "(its absolute path, or run this from the same folder)",
            param_hint="'--db'",
        )
    conn = store.connect(db)
    if store.get_meta(conn, "seed") is None:  # its generation is one transaction: stopped, it left the schema only
        conn.close()
        raise click.ClickException(
            f"the sandbox world at {Path(db).absolute()} was never generated (a `sandbox serve` stopped while "
            f"generating it): `fitsync sandbox serve --db {db}` generates it"
        )
    return conn


def _when(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.datetime | None:
    """An unreadable time is the typist's error (2), said before the world is opened."""
    try:
        return console.parse_when(value)
    except ApiError:
        raise click.BadParameter(f"{value!r} is not an ISO time such as 2026-11-27T07:30 or 2026-11-27") from None


GENERATED_PER_SECOND = 480  # activities of a new world (3 × 2,000 in 12.6 s on a 2-core machine)

db_option = click.option(
    "--db", required=True, type=click.Path(dir_okay=False), help="The file `sandbox serve --db` keeps."
)


def _run(action: Callable[[], Any], as_json: bool = True) -> None:
    """Run a console action; a refused action prints the Fault and exits 1 instead of a traceback."""
    try:
        result = action()
    except ApiError as error:
        click.echo(json.dumps(error.payload()), err=True)
        sys.exit(1)
    if result is not None and as_json:
        click.echo(json.dumps(result, indent=2))


def parse_settings(items: tuple[str, ...]) -> dict[str, Any]:
    """NAME=JSON pairs from the command line."""
    parsed = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals:
            raise click.BadParameter(f"{item!r}: give NAME=JSON, such as {item}=true or {item}=2")
        try:
            parsed[name] = json.loads(value)
        except ValueError:
            raise click.BadParameter(
                f'{item!r}: the value must be JSON (true, 2, [1, 5], "POST /oauth/token")'
            ) from None
    return parsed


def _prefix(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A path under which routes are served: it starts with "/" and is not the root or the console's /sandbox."""
    if not value.startswith("/") or not value.strip("/") or value.rstrip("/") == "/sandbox":
        raise click.BadParameter(
            f"{value!r}: give a path that starts with / (such as /api/v3), other than / and /sandbox"
        )
    return value


@click.group("sandbox")
def sandbox() -> None:
    """The Fitness Activity Service, served locally over real HTTP."""


@sandbox.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--db", default=":memory:", show_default=True, help="SQLite file (or :memory:).")
@click.option("--seed", default=42, show_default=True, type=int, help="World seed (first start only).")
@click.option(
    "--athletes",
    default=3,
    show_default=True,
    type=click.IntRange(1, 500),
    help="Athletes in a new world (first start only).",
)
@click.option(
    "--activities-per-athlete",
    default=60,
    show_default=True,
    type=click.IntRange(0, 20000),
    help="Activities each athlete has recorded in a new world (first start only).",
)
@click.option(
    "--api-prefix", default="/api/v3", show_default=True, callback=_prefix, help="Path the API is served under."
)
@click.option(
    "--auth-prefix",
    default="/oauth",
    show_default=True,
    callback=_prefix,
    help="Path the authorization pages are served under.",
)
@click.option(
    "--flavor",
    "--flavour",  # the banner's spelling
    type=click.Choice(["spec", "real"]),
    default="spec",
    show_default=True,
    help="Answer as the spec says, or as the real service does where it differs (docs/real-service.md).",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="NAME=JSON",
    help="Override a setting, e.g. --set short_window=2 --set rotate_refresh_tokens=false.",
)
def serve(
    host: str,
    port: int,
    db: str,
    seed: int,
    athletes: int,
    activities_per_athlete: int,
    api_prefix: str,
    auth_prefix: str,
    flavor: str,
    overrides: tuple[str, ...],
) -> None:
    """Serve the API, the authorization pages and the console."""
    settings = {"flavor": flavor, **parse_settings(overrides)}
    try:
        Settings().updated(settings)  # before anything is made: a typo'd name leaves no world behind
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--set'") from None
    if db != ":memory:" and not Path(db).absolute().parent.is_dir():
        folder = Path(db).absolute().parent
        raise click.BadParameter(f"the folder {folder} does not exist: create it first", param_hint="'--db'")
    if Path(db).is_dir():
        raise click.BadParameter(
            f"{Path(db).absolute()} is a folder: give a file in it, e.g. {Path(db) / 'sandbox.db'}", param_hint="'--db'"
        )
    listener = listening_socket(host, port)  # first: a busy port is the one thing said, and no db is created
    port = listener.getsockname()[1]  # --port 0: the one the system chose
    options = ServerOptions(
        db=db,
        host=host,
        port=port,
        api_prefix=api_prefix,
        auth_prefix=auth_prefix,
        seed=SeedOptions(seed, athletes, activities_per_athlete),
        settings=settings,
        log_level="warning",  # uvicorn's lines on starting and stopping: ours say both, once
    )
    if db == ":memory:" or not Path(db).is_file():  # a new world: a large one takes seconds to generate
        total = athletes * activities_per_athlete
        who = f"{athletes} athlete{'' if athletes == 1 else 's'}"
        seconds = total / GENERATED_PER_SECOND
        took = f" (about {seconds:.0f} s)" if seconds >= 2 else ""
        click.echo(f"Generating the sandbox world: {who}, {total:,} activities{took}…", err=True)
    try:
        server, state = make_server(options)
    except ValueError as error:
        listener.close()
        raise click.ClickException(str(error)) from None
    except sqlite3.Error as error:  # the world's file: a folder not writable, a file that is not SQLite's
        listener.close()
        raise click.ClickException(
            f"the sandbox world {Path(db).absolute()} cannot be opened ({error}): give --db a file in a folder you may "
            "write to, either new or one `sandbox serve` made"
        ) from None
    key_note = f"written to {db}.console-key" if db != ":memory:" else "in memory only"
    with _stop_signals(server, db):  # before the address is shown: a signal from then on is the server's stop
        click.echo(
            f"Fitness Activity Service sandbox ({flavor} flavour) on http://{host}:{port}{state.api_prefix} "
            f"(authorize at {state.auth_prefix}/authorize)"
        )
        click.echo(f"Console key ({key_note}): {state.console_key}")
        server.run(sockets=[listener])


@contextlib.contextmanager
def _stop_signals(server: Any, db: str) -> Iterator[None]:
    """Ctrl-C or SIGTERM asks the server to shut down (as uvicorn's own handler does, which hands the signal back
    once it has); then one line says so, with the signal's exit code (130 / 143), instead of an interrupted
    command's advice or a silent death by SIGTERM. The handler only sets flags: an exception raised at whatever
    point the signal lands (uvicorn starting, asyncio's loop) could be swallowed there."""
    received: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        received.append(signum)
        server.should_exit = True

    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    if received:
        kept = f"its world stays in {db}" if db != ":memory:" else "its world was in memory only"
        click.echo(f"Sandbox stopped ({signal.Signals(received[0]).name}): {kept}.", err=True)
        raise SystemExit(128 + received[0])


@sandbox.group()
def app() -> None:
    """Registered applications."""


@app.command("create")
@db_option
@click.option("--name", required=True, help="The app's name, shown on the consent page.")
@click.option("--callback-domain", required=True, help="Host name redirects must lie within, e.g. localhost.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on the last line.")
def app_create(db: str, name: str, callback_domain: str, as_json: bool) -> None:
    """Register an app and print its client_id and secret (the secret is shown only once)."""
    conn = _world(db)
    try:
        result = console.register_app(conn, name, callback_domain)
    except ApiError as error:  # the value typed is wrong: a usage error (2), named by its option
        option = "--callback-domain" if error.field == "callback_domain" else "--name"
        raise click.BadParameter(error.message or str(error), param_hint=f"'{option}'") from None
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(f"client_id:     {result['client_id']}\nclient_secret: {result['client_secret']}")


@sandbox.group()
def athlete() -> None:
    """Athletes of the sandbox world."""


@athlete.command("list")
@db_option
def athlete_list(db: str) -> None:
    """Every athlete with id, name and subscription."""
    _run(lambda: console.list_athletes(_world(db)))


@athlete.command("add")
@db_option
@click.option("--firstname", help="First name (default: generated).")
@click.option("--lastname", help="Last name (default: generated).")
@click.option(
    "--premium/--no-premium", default=True, help="A subscriber (zones and effort histories answer) or not (402)."
)
@click.option("--region", help="Home region, where the athlete's activities and segments lie (default: generated).")
def athlete_add(db: str, firstname: str | None, lastname: str | None, premium: bool, region: str | None) -> None:
    """A new athlete with gear, zones and starred segments, and no activities yet."""
    options = {k: v for k, v in {"firstname": firstname, "lastname": lastname, "region": region}.items() if v}
    _run(lambda: {"id": console.add_athlete(_world(db), premium=premium, **options)})


@athlete.command("premium")
@db_option
@click.argument("athlete_id", type=int)
@click.argument("premium", type=bool)
def athlete_premium(db: str, athlete_id: int, premium: bool) -> None:
    """Make an athlete a subscriber (true) or not (false)."""
    _run(lambda: console.set_premium(_world(db), athlete_id, premium))


@athlete.command("revoke")
@db_option
@click.argument("athlete_id", type=int)
@click.option("--client-id", required=True, type=int, help="The app the athlete removes.")
def athlete_revoke(db: str, athlete_id: int, client_id: int) -> None:
    """The athlete removes the app from their settings (deauthorization event)."""
    _run(lambda: {"revoked_token_families": console.revoke_app(_world(db), client_id, athlete_id)})


@sandbox.group()
def activity() -> None:
    """Record, change and delete athletes' activities (webhook events follow)."""


@activity.command("record")
@db_option
@click.argument("athlete_id", type=int)
@click.option("--sport-type", default="Ride", show_default=True, help="Ride, Run, Swim, Hike, Walk, …")
@click.option(
    "--start-date", callback=_when, metavar="ISO_TIME", help="UTC ISO time, e.g. 2026-11-27T07:30; default an hour ago."
)
@click.option("--distance", type=float, help="Meters.")
@click.option("--name", help="Title (default: generated).")
@click.option(
    "--visibility",
    type=click.Choice(console.VISIBILITIES),
    default="everyone",
    show_default=True,
    help="Who may see it: only_me activities need the activity:read_all scope.",
)
@click.option("--phone", is_flag=True, help="Recorded on a phone: GPS only, no heart rate or power (and no zones).")
def activity_record(
    db: str,
    athlete_id: int,
    sport_type: str,
    start_date: dt.datetime | None,
    distance: float | None,
    name: str | None,
    visibility: str,
    phone: bool,
) -> None:
    """Record an activity with full detail, as a device upload (subscribers hear a create event)."""
    options: dict[str, Any] = {"sport_type": sport_type, "visibility": visibility, "device": not phone}
    if start_date:
        options["start_date"] = start_date
    if distance:
        options["distance"] = distance
    if name:
        options["name"] = name
    _run(lambda: {"id": console.record_activity(_world(db), athlete_id, **options)})


@activity.command("update")
@db_option
@click.argument("activity_id", type=int)
@click.option("--name", help="New title.")
@click.option("--sport-type", help="New sport type.")
@click.option("--visibility", type=click.Choice(console.VISIBILITIES), help="New visibility.")
def activity_update(
    db: str, activity_id: int, name: str | None, sport_type: str | None, visibility: str | None
) -> None:
    """Rename, retype or change who sees an activity (an update event follows)."""
    _run(
        lambda: console.update_activity(
            _world(db), activity_id, name=name, sport_type=sport_type, visibility=visibility
        )
    )


@activity.command("delete")
@db_option
@click.argument("activity_id", type=int)
def activity_delete(db: str, activity_id: int) -> None:
    """Delete an activity, as the athlete does in the service's app (a delete event follows)."""
    _run(lambda: console.delete_activity(_world(db), activity_id))


@sandbox.command("settings")
@db_option
@click.argument("changes", nargs=-1, metavar="NAME=JSON...")
@click.option("--set", "set_", multiple=True, metavar="NAME=JSON", help="A change, as `serve --set` takes it.")
def settings_cmd(db: str, changes: tuple[str, ...], set_: tuple[str, ...]) -> None:
    """Show or change settings (token lifetimes, rate limits, faults); a running server picks them up.

    Each change is NAME=JSON, e.g. `read_limit_short=99`, with or without `--set` before it."""
    conn = _world(db)
    parsed = parse_settings(changes + set_)
    with store.transaction(conn):
        try:
            updated = store.load_settings(conn).updated(parsed)
        except ValueError as error:  # a name or value typed wrong: a usage error, as `serve --set` says it
            raise click.BadParameter(str(error), param_hint="NAME=JSON") from None
        store.save_settings(conn, updated)
    click.echo(json.dumps(updated.to_json(), indent=2))


@sandbox.command("counters")
@db_option
def counters_cmd(db: str) -> None:
    """Requests, status codes, 429s and deliveries counted by the server."""
    click.echo(json.dumps(store.counters(_world(db)), indent=2))
