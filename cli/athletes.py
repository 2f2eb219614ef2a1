"""`fitsync connect`, `disconnect`, `athletes` and `webhooks …`: the athlete's side of fitsync."""

from __future__ import annotations

import sys
import webbrowser

import click
import httpx

from fitsync.client import oauth, scopes
from fitsync.client.config_basics import ConfigError, load_config
from fitsync.client.errors import FitsyncError
from fitsync.client.runtime import FitsyncClient

HEADLESS_REDIRECT = "http://localhost/fitsync/callback"


def open_client() -> FitsyncClient:
    try:
        return FitsyncClient(load_config())
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
@click.option("--port", default=0, type=int, help="Loopback port for the redirect (default: any free port).")
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for the athlete.")
def connect(scope_list: str, headless: bool, no_browser: bool, port: int, timeout: float) -> None:
    """Connect an athlete: consent in the browser, tokens stored encrypted in FITSYNC_HOME."""
    wanted = tuple(s for s in scope_list.replace(" ", ",").split(",") if s)
    with open_client() as client:
        try:
            if headless:
                auth = oauth.authorization(client.config, HEADLESS_REDIRECT, wanted)
                click.echo(f"Open this address in a browser and authorize fitsync:\n\n  {auth.url}\n")
                click.echo(
                    "Your browser then fails to load a localhost page: copy that page's address from the "
                    "address bar and paste it here."
                )
                # Hidden on a terminal (the URL holds the code); read from stdin when it is piped: getpass
                # would read the terminal instead of the pipe.
                redirected = click.prompt("Redirected URL", hide_input=sys.stdin.isatty())
            else:
                with oauth.LoopbackReceiver(port) as receiver:
                    auth = oauth.authorization(client.config, receiver.redirect_uri, wanted)
                    if no_browser or not webbrowser.open(auth.url):
                        click.echo(f"Open this address in a browser and authorize fitsync:\n\n  {auth.url}\n")
                    redirected = receiver.wait(timeout)
            code, granted = oauth.parse_redirect(redirected, auth.state)
            body = oauth.exchange_code(client.config, client.transport, code)
            granted = body.get("scope") or granted.replace(",", " ")
            athlete = client.tokens.save_grant(body, granted)
        except FitsyncError as error:
            raise click.ClickException(str(error)) from None
    from fitsync.pipelines.instance import add_athlete_partition  # Dagster loads slowly: only here

    add_athlete_partition(client.config.home, athlete.athlete_id)
    click.echo(f"Connected {athlete.name} (athlete {athlete.athlete_id}); granted: {granted}")
    for line in scopes.missing_report(granted, list(wanted)):
        click.secho(f"  ! {line}", fg="yellow")


@click.command()
@click.argument("athlete_id", type=int)
def disconnect(athlete_id: int) -> None:
    """Revoke fitsync's access for an athlete and delete everything fitsync holds of them."""
    from fitsync.pipelines.instance import instance
    from fitsync.pipelines.purge import purge_everything

    with open_client() as client:
        record = client.tokens.athlete(athlete_id)
        if record is None:
            raise click.ClickException(f"athlete {athlete_id} is not connected")
        try:
            token = client.tokens.access_token(athlete_id)
            revoked = oauth.deauthorize(client.config, client.transport, token.reveal())
        except (FitsyncError, httpx.HTTPError) as error:
            click.secho(
                f"could not revoke at the service ({type(error).__name__}: {error}); deleting the local tokens anyway",
                fg="yellow",
            )
            revoked = False
        # The service's deauthorization event will name an athlete fitsync no longer knows: purge now.
        state, rows = purge_everything(client, str(client.config.home / "warehouse.duckdb"), athlete_id)
        dagster_instance = instance(client.config.home)
        if dagster_instance.has_dynamic_partition("athletes", str(athlete_id)):
            dagster_instance.delete_dynamic_partition("athletes", str(athlete_id))
    click.echo(
        f"Disconnected athlete {athlete_id}"
        + ("" if revoked else " (the service had already revoked access)")
        + f"; removed {sum(rows.values())} warehouse rows and {sum(state.values())} state rows"
    )


@click.command()
def athletes() -> None:
    """Connected athletes, their granted scopes and status."""
    with open_client() as client:
        rows = client.tokens.athletes()
    if not rows:
        click.echo("No athletes connected: run `fitsync connect`.")
        return
    click.echo("athlete\tname\tstatus\tscopes")
    for a in rows:
        note = f" — {a.status_reason}" if a.status_reason else ""
        click.echo(f"{a.athlete_id}\t{a.name}\t{a.status}\t{a.scopes}{note}")
