"""`fitsync connect`, `disconnect`, `athletes` and `webhooks …`: the athlete's side of fitsync."""

from __future__ import annotations

import sys
import webbrowser

import click
import httpx

from fitsync.client import oauth, scopes
from fitsync.client.config import Config, ConfigError
from fitsync.client.errors import FitsyncError
from fitsync.client.runtime import FitsyncClient

HEADLESS_REDIRECT = "http://localhost/fitsync/callback"


def open_client() -> FitsyncClient:
    try:
        return FitsyncClient(Config.load())
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


@click.command()
@click.option("--scopes", "scope_list", default=",".join(oauth.DEFAULT_SCOPES), show_default=True,
              help="Comma-separated scopes to request.")
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
                click.echo("Your browser then fails to load a localhost page: copy that page's address from the "
                           "address bar and paste it here.")
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
            click.secho(f"could not revoke at the service ({type(error).__name__}: {error}); "
                        "deleting the local tokens anyway", fg="yellow")
            revoked = False
        # The service's deauthorization event will name an athlete fitsync no longer knows: purge now.
        state, rows = purge_everything(client, str(client.config.home / "warehouse.duckdb"), athlete_id)
        dagster_instance = instance(client.config.home)
        if dagster_instance.has_dynamic_partition("athletes", str(athlete_id)):
            dagster_instance.delete_dynamic_partition("athletes", str(athlete_id))
    click.echo(f"Disconnected athlete {athlete_id}" + ("" if revoked else " (the service had already revoked access)")
               + f"; removed {sum(rows.values())} warehouse rows and {sum(state.values())} state rows")


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


@click.group()
def webhooks() -> None:
    """The application's push subscription."""


@webhooks.command()
@click.option("--callback-url", required=True,
              help="Public address of `fitsync webhooks serve` up to its prefix, e.g. https://host/webhooks; "
                   "fitsync appends a random path secret.")
def subscribe(callback_url: str) -> None:
    """Create the subscription (the service validates the callback first); again after unsubscribe rotates the
    path secret."""
    from fitsync.webhooks.subscriptions import masked, subscribe as create_subscription

    with open_client() as client:
        try:
            sub_id = create_subscription(client, callback_url)
        except FitsyncError as error:
            raise click.ClickException(str(error)) from None
        current = client.subscription_state.current()
    click.echo(f"Subscribed: id {sub_id} → {masked(current.callback_url) if current else callback_url}")


@webhooks.command()
def status() -> None:
    """Show the application's subscription."""
    from fitsync.webhooks.subscriptions import masked

    with open_client() as client:
        subs = client.subscriptions().view()
    if not subs:
        click.echo("No subscription.")
    for sub in subs:
        click.echo(f"{sub.id}\t{masked(str(sub.get('callback_url')))}\tcreated {sub.get('created_at')}")


@webhooks.command()
def unsubscribe() -> None:
    """Delete the application's subscription."""
    with open_client() as client:
        subs = client.subscriptions().view()
        if not subs:
            raise click.ClickException("the application has no subscription")
        for sub in subs:
            client.subscriptions().delete(int(sub.id))
        client.subscription_state.forget()
    click.echo("Unsubscribed.")


def _receiver_server_class():  # type: ignore[no-untyped-def]
    import contextlib
    import signal

    import uvicorn

    class ReceiverServer(uvicorn.Server):
        """uvicorn's graceful stop, then fitsync's own last line and exit code instead of re-raising the signal."""

        stop_signal: int | None = None

        def handle_exit(self, sig: int, frame: object) -> None:
            self.stop_signal = self.stop_signal or sig
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

        @contextlib.contextmanager
        def capture_signals(self):  # type: ignore[no-untyped-def]
            original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return ReceiverServer


@webhooks.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (behind a reverse proxy or tunnel that terminates TLS).")
@click.option("--port", default=8710, show_default=True, type=int, help="Port to listen on.")
@click.option("--prefix", "--path", "prefix", default="/webhooks", show_default=True,
              help="Path the events arrive under; the subscription's secret follows it.")
def serve(host: str, port: int, prefix: str) -> None:
    """Receive the service's events into the inbox (the `webhook_events` sensor acts on them)."""
    import uvicorn

    from fitsync.webhooks.receiver import Receiver

    import logging

    logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", datefmt="%Y-%m-%dT%H:%M:%S")
    logging.getLogger("fitsync.webhooks.receiver").setLevel(logging.INFO)  # one line per event
    client = open_client()
    if client.subscription_state.encrypt_stored_address():
        click.echo("The subscription's callback address (it ends in the path secret) is now stored encrypted.")
    receiver = Receiver(client, prefix)
    click.echo(f"Receiving events at http://{host}:{port}{receiver.prefix}/<secret> "
               "(put it behind HTTPS for the real service)")
    if receiver.weak_secret():
        click.echo("Warning: the subscription's callback path is guessable (made before fitsync added a path "
                   "secret): run `fitsync webhooks unsubscribe` and `fitsync webhooks subscribe "
                   "--callback-url <public address up to the prefix>` to get one.", err=True)
    from fitsync.cli.stop_signals import StopSignals

    server = _receiver_server_class()(uvicorn.Config(receiver.app, host=host, port=port, log_level="warning", access_log=False))
    server.run()  # on SIGINT / SIGTERM uvicorn stops accepting, finishes the requests in flight, then returns
    if server.stop_signal:
        click.echo(f"Stopped by {StopSignals.name(server.stop_signal)}: {receiver.stored} events stored since start; "
                   "the service retries what was not acknowledged.", err=True)
        raise SystemExit(StopSignals.exit_code(server.stop_signal))
