"""`fitsync connect`, `disconnect`, `athletes` and `webhooks …`: the athlete's side of fitsync."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import sys
import time
import webbrowser
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import click
import httpx
from rich.table import Table
from rich.text import Text

from fitsync.client import oauth, scopes
from fitsync.client.config_basics import ConfigError, load_config
from fitsync.client.errors import FitsyncError, OAuthError, ReauthorizationRequired
from fitsync.client.runtime import FitsyncClient
from fitsync.state.store import AthleteBusy, held_elsewhere

from . import screen
from .confirm import confirm, yes_option
from .relative_time import ago, iso
from .terminal_line import hidden_line

if TYPE_CHECKING:
    from fitsync.client.config import Config
    from fitsync.client.tokens import AthleteRecord
    from fitsync.warehouse.location import Warehouse

HEADLESS_REDIRECT = "http://localhost/fitsync/callback"


def load_settings(*, app: bool = False) -> Config:
    """The command's settings; `app`: with the application's credentials, or the error naming `fitsync init`."""
    try:
        config = load_config()
        if app:
            config.require_app()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    return config


def open_client(config: Config | None = None, *, app: bool = True) -> FitsyncClient:
    """The client of the command's settings. `app`: the command needs the application's credentials, checked before
    the state store opens (that creates the home, state.db and the key file), so a command refused for the lack of
    them leaves the home as it was."""
    config = config or load_settings()
    try:
        if app:
            config.require_app()
        return FitsyncClient(config)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


@click.command()
@click.option(
    "--scopes",
    "scope_list",
    default=",".join(oauth.DEFAULT_SCOPES),
    show_default=True,
    help="Comma-separated scopes to request.",
)
@click.option("--headless", is_flag=True, help="No browser here: print the URL and paste the redirected one back.")
@click.option("--no-browser", is_flag=True, help="Print the URL instead of opening a browser.")
@click.option(
    "--port",
    default=0,
    type=click.IntRange(0, 65535),
    help="Loopback port for the redirect (default: any free port).",
)
@click.option(
    "--timeout",
    default=300.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Seconds to wait for the athlete.",
)
def connect(scope_list: str, headless: bool, no_browser: bool, port: int, timeout: float) -> None:
    """Connect an athlete: consent in the browser, tokens stored encrypted in FITSYNC_HOME."""
    wanted = tuple(s for s in scope_list.replace(" ", ",").split(",") if s)
    if unknown := [s for s in wanted if s not in scopes.KNOWN]:
        raise click.BadParameter(
            f"{', '.join(map(repr, unknown))}: not a scope of the service (it knows {', '.join(scopes.KNOWN)})",
            param_hint="'--scopes'",
        )
    if headless and (ignored := [o for o, given in (("--port", port), ("--no-browser", no_browser)) if given]):
        raise click.UsageError(
            f"{' and '.join(ignored)} {'shape' if len(ignored) > 1 else 'shapes'} the redirect to this machine, and "
            "with --headless there is none (the "
            "address is pasted back): drop one of them"
        )
    config = load_settings(app=True)  # before the port and the state store: a refusal leaves the home as it was
    with contextlib.ExitStack() as stack:
        # The redirect's port before the state store opens: a busy one is the one thing said, and nothing is created.
        receiver = None if headless else stack.enter_context(_loopback_receiver(port))
        if (problem := oauth.authorize_page(config).problem) is not None:  # not an address that cannot load
            raise click.ClickException(problem)
        client = stack.enter_context(open_client(config))
        try:
            if receiver is None:
                auth = oauth.authorization(client.config, HEADLESS_REDIRECT, wanted)
                click.echo(f"Open this address in a browser and authorize fitsync:\n\n  {auth.url}\n")
                click.echo(
                    "Your browser then fails to load a localhost page: copy that page's address from the "
                    "address bar and paste it here."
                )
                redirected = _pasted_redirect()
            else:
                auth = oauth.authorization(client.config, receiver.redirect_uri, wanted)
                shown = no_browser or not webbrowser.open(auth.url)
                if shown:
                    click.echo(f"Open this address in a browser and authorize fitsync:\n\n  {auth.url}\n")
                redirected = _redirect_within(receiver, timeout, shown)
            code, granted = oauth.parse_redirect(redirected, auth.state)
            body = oauth.exchange_code(client.config, client.transport, code)
            granted = body.get("scope") or granted.replace(",", " ")
            athlete = client.tokens.save_grant(body, granted)
        except FitsyncError as error:
            raise click.ClickException(str(error)) from None
    from fitsync.pipelines.instance import add_athlete_partition  # Dagster loads slowly: only here

    add_athlete_partition(client.config.home, athlete.athlete_id)
    click.echo(f"Connected {athlete.name} (athlete {athlete.athlete_id}); granted: {granted.strip() or 'nothing'}")
    for line in scopes.missing_report(granted, list(wanted)):
        click.secho(f"  ! {line}", fg="yellow")
    if not {"activity:read", "activity:read_all"} & scopes.parse(granted):  # a sync could fetch none of them
        raise click.ClickException(
            f"athlete {athlete.athlete_id} allowed fitsync to read none of their activities: run `fitsync connect` "
            'again and leave "View data about your activities" ticked on the service\'s page'
        )
    click.echo(
        f"Next: `fitsync sync --athlete {athlete.athlete_id}` fetches their training (`fitsync sync`: everyone's)."
    )


def _loopback_receiver(port: int) -> oauth.LoopbackReceiver:
    """The one-shot listener for the redirect, bound: a port another process holds is one line naming the fix."""
    try:
        return oauth.LoopbackReceiver(port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} is in use on 127.0.0.1: stop what listens there, or pass --port with a free one "
                "(without --port fitsync takes any free one)"
            ) from None
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port} for the redirect: {error.strerror}") from None


def _redirect_within(receiver: oauth.LoopbackReceiver, timeout: float, shown: bool) -> str:
    """The redirect the browser delivered, or an error naming what to do when none came within `timeout` s."""
    try:
        return receiver.wait(timeout)
    except OAuthError as error:
        where = (
            "open the address printed above in a browser and authorize fitsync there"
            if shown
            else "authorize fitsync in the browser tab that opened (--no-browser prints the address instead)"
        )
        raise click.ClickException(
            f"{error}: {where}; on a machine without a browser use --headless; --timeout SECONDS gives more time"
        ) from None


def _pasted_redirect() -> str:
    """The address the browser was sent to, as the person pastes it: hidden at a terminal (it holds the code), read
    from stdin when that is piped. Ctrl-C is left to the command group (exit 130); the input ending before a URL came
    is a usage error (exit 2). Not a redirect at all (no query with a state, a code or an error): said as such,
    instead of a state that "does not match"."""
    at_terminal = sys.stdin.isatty()
    while True:
        if at_terminal:
            try:
                line = hidden_line("Redirected URL: ")
            except KeyboardInterrupt:
                click.echo()  # the group's "Interrupted" line on a line of its own
                raise
        else:
            click.echo("Redirected URL: ", nl=False)
            line = sys.stdin.readline() or None
            click.echo()  # the piped URL is not echoed: end the prompt's line
        if line is None:
            raise click.UsageError(
                "--headless needs the redirected URL typed in, and the input ended without one: "
                + (
                    "run it again and paste the address at the prompt"
                    if at_terminal
                    else "run it at a terminal and paste the address there, or write it to the command's stdin "
                    "once the address to open is printed"
                )
            )
        pasted = line.strip()
        if not pasted:
            continue  # Enter alone: ask again
        query = parse_qs(urlsplit(pasted).query)
        if not {"state", "code", "error"} & set(query):
            raise click.ClickException(
                "that is not the address the browser was sent to: paste the whole URL from the address bar "
                f"(it starts with {HEADLESS_REDIRECT})"
            )
        return pasted


@click.command()
@click.argument("athlete_id", type=int)
@click.option(
    "--local-only",
    is_flag=True,
    help="Delete the local data without asking the service to revoke access (when it cannot be reached): the "
    "athlete then removes fitsync in their settings on the service.",
)
@yes_option
def disconnect(athlete_id: int, local_only: bool, yes: bool) -> None:
    """Revoke fitsync's access for an athlete and delete everything fitsync holds of them (asks first). When the
    service cannot be asked to revoke, nothing is deleted (`--local-only` deletes all the same)."""
    from fitsync.client.state_reader import StateReader

    config = load_settings()
    # Looked up without writing first: on a home with no state (nobody ever connected) nothing is created. The app's
    # credentials are not required: revoking takes the athlete's token, and the local data goes even without them.
    try:
        reader = StateReader.open(config)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    if reader is None or all(a.athlete_id != athlete_id for a in reader.athletes()):
        raise _not_connected(athlete_id)
    with open_client(config, app=False) as client:
        record = client.tokens.athlete(athlete_id)
        if record is None:
            raise _not_connected(athlete_id)
        from fitsync.resources.warehouse import warehouse_of  # DuckDB loads in a third of a second: only here

        counted = _warehouse_rows(warehouse_of(client.config), athlete_id)
        confirm(
            f"this {'leaves' if local_only else 'revokes'} fitsync's access for {record.name} (athlete {athlete_id})"
            f"{' at the service' if local_only else ''} and deletes "
            f"{'all their' if counted is None else f'their {counted:,}'} warehouse rows (the segments only they "
            "starred or rode included; their documents, snapshots and reports too), their tokens and their sync state",
            "Disconnect them?",
            yes,
        )
        # Seconds of work (the revocation, Dagster loading, the deletions): said while it goes, not in silence.
        with screen.doing(
            screen.console(stderr=True), f"athlete {athlete_id}: revoking access and deleting their data…"
        ):
            revoked, state, rows = _revoke_and_purge(client, athlete_id, local_only)
    click.echo(
        f"Disconnected athlete {athlete_id}"
        + REVOCATIONS[revoked]
        + f"; removed {_removed(rows)} and {sum(state.values()):,} state rows"
    )
    if revoked == "local":  # the local part is done; the service's is the athlete's to finish
        click.secho(
            f"the service still grants fitsync access to athlete {athlete_id}'s data: remove fitsync in the "
            "athlete's settings on the service (My Apps), as fitsync can no longer revoke it without the tokens",
            fg="yellow",
            err=True,
        )


# Why a disconnect purged, as purges.jsonl says it.
PURGED_BECAUSE = {
    "revoked": "fitsync disconnect",
    "already": "fitsync disconnect (access already revoked at the service)",
    "local": "fitsync disconnect --local-only (access not revoked at the service)",
}
# How the service's side of a disconnect went, as the last line says it.
REVOCATIONS = {
    "revoked": "",
    "already": " (the service had already revoked access)",
    "local": " here only (the service was not asked to revoke access: --local-only)",
}


def _revoke_and_purge(
    client: FitsyncClient, athlete_id: int, local_only: bool
) -> tuple[str, dict[str, int], dict[str, int]]:
    """Revoke at the service (unless `local_only`; a failure deletes nothing: the tokens are what a later try revokes
    with), purge everything of the athlete, drop their Dagster partition: (how the revocation went: a key of
    REVOCATIONS, state rows, warehouse rows removed)."""
    from fitsync.pipelines.instance import instance  # Dagster loads slowly: only once it is agreed
    from fitsync.pipelines.purge import purge_everything

    record = client.tokens.athlete(athlete_id)
    _not_being_synced(client, athlete_id)  # looked at before the revocation: the purge takes the lock itself
    try:
        if record is not None and record.status == "disconnected":  # the athlete revoked it; a purge left unfinished
            revoked = "already"
        elif local_only:
            revoked = "local"
        else:
            token = client.tokens.access_token(athlete_id)
            revoked = "revoked" if oauth.deauthorize(client.config, client.transport, token.reveal()) else "already"
    except ReauthorizationRequired:  # the service already refused the tokens: nothing of fitsync's left to revoke
        click.secho(
            "the service had already withdrawn fitsync's access (its refresh token was refused): nothing to revoke "
            "there; deleting the local data",
            fg="yellow",
            err=True,
        )
        revoked = "already"
    except (FitsyncError, httpx.HTTPError) as error:
        raise click.ClickException(
            f"could not ask the service to revoke fitsync's access for athlete {athlete_id} ({type(error).__name__}: "
            f"{error}): nothing was deleted. Run `fitsync disconnect {athlete_id}` again once the service answers, or "
            f"`fitsync disconnect {athlete_id} --local-only` to delete the local data now (the athlete then removes "
            "fitsync in their settings on the service, My Apps)"
        ) from None
    # The service's deauthorization event will name an athlete fitsync no longer knows: purge now.
    try:
        state, rows = purge_everything(client, athlete_id, PURGED_BECAUSE[revoked])
    except AthleteBusy as busy:  # a sync of theirs started since the look above
        done = "fitsync's access is revoked at the service; " if revoked == "revoked" else ""
        raise _busy(busy, done + "nothing was deleted") from None
    dagster_instance = instance(client.config.home)
    if dagster_instance.has_dynamic_partition("athletes", str(athlete_id)):
        dagster_instance.delete_dynamic_partition("athletes", str(athlete_id))
    return revoked, state, rows


def _not_being_synced(client: FitsyncClient, athlete_id: int) -> None:
    """A sync of the athlete running on would record what it fetched after the purge (rows no athlete names): the
    disconnect waits for no one, it says so and changes nothing."""
    try:
        with client.store.athlete_lock(athlete_id):
            return
    except AthleteBusy as busy:
        raise _busy(busy, "nothing was revoked or deleted") from None


def _busy(busy: AthleteBusy, done: str) -> click.ClickException:
    where = held_elsewhere(busy).partition(": skipped")[0]  # "athlete N is being synced by process P on this host"
    return click.ClickException(
        f"{where}: {done}. Stop that sync (Ctrl-C, or let it finish), then run `fitsync disconnect "
        f"{busy.athlete_id}` again"
    )


def _not_connected(athlete_id: int) -> click.BadParameter:
    """A usage error (exit 2), as `fitsync sync --athlete` of one not connected: the id given is not one to act on."""
    return click.BadParameter(
        f"athlete {athlete_id} is not connected: `fitsync athletes` lists who is connected", param_hint="'ATHLETE_ID'"
    )


def _removed(rows: dict[str, int]) -> str:
    """What the purge removed, rows apart from files and folders (the question counted rows only: the two agree)."""
    files = {kind.removesuffix("_files"): n for kind, n in rows.items() if kind.endswith("_files") and n}
    folders = [kind.removesuffix("_folder") for kind, n in rows.items() if kind.endswith("_folder") and n]
    counted = sum(n for kind, n in rows.items() if not kind.endswith(("_files", "_folder")))
    said = f"{counted:,} warehouse rows"
    for kind, n in files.items():  # document_files, stream_files
        said += f", {n:,} {kind} file{'s' if n != 1 else ''}"
    if folders:
        said += f", their {' and '.join(folders)} folder{'s' if len(folders) > 1 else ''}"
    return said


# The segments `purge_athlete` removes with the athlete: those only they rode or starred (its own criterion).
ONLY_THEIR_SEGMENTS = (
    "SELECT segment_id FROM (SELECT segment_id FROM segment_efforts WHERE athlete_id = $1 UNION "
    "SELECT segment_id FROM starred_segments WHERE athlete_id = $1) s WHERE NOT EXISTS ("
    "SELECT 1 FROM segment_efforts e WHERE e.segment_id = s.segment_id AND e.athlete_id <> $1) "
    "AND NOT EXISTS (SELECT 1 FROM starred_segments t WHERE t.segment_id = s.segment_id AND t.athlete_id <> $1)"
)


def _warehouse_rows(warehouse: Warehouse, athlete_id: int) -> int | None:
    """How many warehouse rows `purge_athlete` deletes of the athlete, counted as it deletes them (the segments no
    other athlete rode or starred included), to say so before; None when the warehouse cannot tell now (a sync writing to it, an older schema, a lake not answering): the
    question says "all"."""
    import duckdb  # not at the top: every command imports this module

    from fitsync.warehouse import db
    from fitsync.warehouse.purge import BY_ACTIVITY, BY_ATHLETE

    try:
        if not db.exists(warehouse):
            return 0
    except db.LakeUnavailable:
        return None

    of_activities = "activity_id IN (SELECT activity_id FROM activities WHERE athlete_id = $1)"
    counts = [f"(SELECT count(*) FROM {table} WHERE {of_activities})" for table in BY_ACTIVITY]
    counts += [f"(SELECT count(*) FROM {table} WHERE athlete_id = $1)" for table in BY_ATHLETE]
    counts.append(f"(SELECT count(*) FROM segments WHERE segment_id IN ({ONLY_THEIR_SEGMENTS}))")
    try:
        with db.reading(warehouse, timeout=2) as conn:
            return int(conn.execute(f"SELECT {' + '.join(counts)}", [athlete_id]).fetchall()[0][0])
    except (duckdb.Error, TimeoutError):
        return None


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the athletes as JSON (for scripts).")
def athletes(as_json: bool) -> None:
    """Connected athletes, their granted scopes and status. Reads only: it creates and changes no file."""
    from fitsync.client.state_reader import StateReader

    from .status import TOKENS_UNREADABLE, first_steps

    try:
        config = load_config()
        reader = StateReader.open(config)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    rows = reader.athletes() if reader else []
    unreadable = reader.token_problem() if reader and rows else None
    if as_json:
        click.echo(json.dumps([_as_json(a) | {"tokens_unreadable": unreadable} for a in rows], indent=2))
        return
    if not rows:
        click.echo(f"No athletes connected: {first_steps(config)}.")
        return
    screen.console().print(_athletes_table(rows))
    if unreadable:  # "connected" in the table, and no sync could use the tokens
        screen.console(stderr=True).print(Text(TOKENS_UNREADABLE.format(unreadable), style="red"), soft_wrap=True)


def _as_json(athlete: AthleteRecord) -> dict[str, object]:
    """The athlete for scripts: times in ISO 8601 (UTC), as `fitsync status --json` gives them."""
    return dataclasses.asdict(athlete) | {
        "name": athlete.name,
        "scopes": athlete.scopes.replace(",", " ").split(),
        "access_expires_at": iso(athlete.access_expires_at),
    }


def _athletes_table(rows: list[AthleteRecord]) -> Table:
    """A row per athlete, as `fitsync status` shows its tables (on a terminal and off it: scripts use --json)."""
    table = Table(title="Connected athletes")
    for column in ("athlete", "name", "status", "access token", "scopes"):
        table.add_column(column)
    for a in rows:
        expires = a.access_expires_at
        token = (
            "—"
            if expires is None
            else "refused"  # its expiry means nothing once the service refused the athlete's tokens
            if a.status == "needs_reauth"
            else (f"expires {ago(expires)}" if expires > time.time() else f"expired {ago(expires)}")
        )
        status = status_shown(a.athlete_id, a.status, a.status_reason)
        table.add_row(str(a.athlete_id), a.name, status, token, a.scopes.replace(",", " "))
    return table


def status_shown(athlete_id: int, status: str, reason: str | None) -> str:
    """An athlete's status as a table shows it: why, and for one that cannot be synced, the command that fixes it."""
    why = f" ({reason})" if reason else ""
    fix = {
        "needs_reauth": f": run `fitsync connect` as athlete {athlete_id}",
        # the purge run removes them; one that failed (the warehouse held for long) leaves them listed
        "disconnected": f": their data is being deleted (if they stay listed: `fitsync disconnect {athlete_id}`)",
    }.get(status, "")
    return f"{status}{why}{fix}"
