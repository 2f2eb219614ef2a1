"""`fitsync webhooks`: the application's push subscription (subscribe, status, unsubscribe) and the receiver that
stores the service's events in the inbox (serve)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from fitsync.client.errors import ApiError, FitsyncError
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret

from . import screen
from .athletes import open_client
from .confirm import confirm, yes_option
from .relative_time import ago
from .sync_waits import WaitsShown

DEFAULT_PORT = 8710  # of `serve`
DEFAULT_PREFIX = "/webhooks"


@click.group()
def webhooks() -> None:
    """The application's push subscription."""


@webhooks.command()
@click.option(
    "--callback-url",
    required=True,
    help="Public address of `fitsync webhooks serve` up to its prefix, e.g. https://host/webhooks; "
    "fitsync appends a random path secret.",
)
def subscribe(callback_url: str) -> None:
    """Create the subscription (the service validates the callback first); again after unsubscribe rotates the
    path secret."""
    from urllib.parse import urlsplit

    from fitsync.webhooks.subscriptions import masked
    from fitsync.webhooks.subscriptions import subscribe as create_subscription

    parts = urlsplit(callback_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(
            f"{callback_url!r} is not a web address: give the public http(s) address where `fitsync webhooks serve` "
            "answers, e.g. https://host/webhooks",
            param_hint="'--callback-url'",
        )
    with open_client() as client, _waits_said("subscribing"):
        try:
            sub_id = create_subscription(client, callback_url)
        except ApiError as error:
            if error.status == 400 and error.field == "callback url":  # the service's validation GET failed
                raise click.ClickException(
                    f"the service could not validate the callback at {callback_url} ({error.code}): start "
                    f"`{_serving(callback_url)}` so that it answers at that address, then subscribe again"
                ) from None
            raise click.ClickException(str(error)) from None
        except FitsyncError as error:
            raise click.ClickException(str(error)) from None
        current = client.subscription_state.current()
    click.echo(f"Subscribed: id {sub_id} → {masked(current.callback_url) if current else callback_url}")


def _waits_said(doing: str) -> WaitsShown:
    """A wait for the app's rate budget said on stderr while `doing` (minutes, when the window is spent), not silence."""
    return WaitsShown("webhooks", screen.console(stderr=True), doing)


def _serving(callback_url: str) -> str:
    """The `fitsync webhooks serve` that answers at `callback_url` when that is on this machine (its port and
    prefix); for a public address, the plain command (a proxy or tunnel decides where it forwards)."""
    from urllib.parse import urlsplit

    command = "fitsync webhooks serve"
    try:
        parts = urlsplit(callback_url.rstrip("/"))
        port = parts.port
    except ValueError:
        return command
    if parts.hostname not in ("127.0.0.1", "localhost"):
        return command
    if port and port != DEFAULT_PORT:
        command += f" --port {port}"
    if parts.path and parts.path != DEFAULT_PREFIX:
        command += f" --prefix {parts.path}"
    return command


@webhooks.command()
@click.option("--json", "as_json", is_flag=True, help="Print the subscriptions as JSON (for scripts).")
def status(as_json: bool) -> None:
    """Show the application's subscription, as the service has it."""
    import json

    from fitsync.webhooks.subscriptions import masked

    with _looking_client() as client:
        with _waits_said("asking the service"):
            subs = client.subscriptions().view()
        token = client.subscription_state.callback_token() if subs else None
    if as_json:
        whole = [
            {
                "id": sub.id,
                "callback_url": without_secrets(str(sub.get("callback_url")), token.reveal() if token else None),
                "created_at": sub.get("created_at"),
            }
            for sub in subs
        ]
        click.echo(json.dumps(whole, indent=2))
        return
    if not subs:
        click.echo("No subscription.")
        return
    screen.console().print(_subscriptions_table(subs, masked))


@contextlib.contextmanager
def _looking_client() -> Iterator[FitsyncClient]:
    """The home's client; on a home with no state yet (nothing ever connected), one on a scratch state removed after:
    asking the service creates no state.db or key file there, and no process of the home has a rate ledger to share
    (the first one that does creates it)."""
    from fitsync.client.open_state import open_store_for_reading

    from .athletes import load_settings

    config = load_settings(app=True)  # the missing credentials named before anything else
    if open_store_for_reading(config) is not None:
        with open_client(config) as client:
            yield client
        return
    with tempfile.TemporaryDirectory(prefix="fitsync-look-") as scratch:
        with open_client(config.replace(home=Path(scratch), state_url=Secret(""))) as client:
            yield client


def _subscriptions_table(subs: list[Any], masked: Callable[[str], str]) -> Table:
    """A row per subscription, as `fitsync athletes` shows its table (scripts use --json): its callback address with
    the secret path masked, and when it was created, relative and local."""
    table = Table(title="Webhook subscriptions (this app)")
    for column in ("subscription", "callback address", "created"):
        table.add_column(column)
    for sub in subs:
        created = sub.get("created_at")
        table.add_row(str(sub.id), masked(str(sub.get("callback_url"))), ago(created) if created else "—")
    return table


SECRET = "<secret>"  # what stands for a secret in an address shown whole (as `webhooks serve` says it)


def without_secrets(url: str, path_secret: str | None) -> str:
    """The callback address whole for scripts (never cut short), with its secrets, if it has any, replaced by
    <secret>: the path secret it ends in (the one this home stores; storing none, a last segment long enough to be
    one, as `masked` judges) and a password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", f":{SECRET}@", 1)
    trimmed = parts.path.rstrip("/")
    head, slash, tail = trimmed.rpartition("/")
    secret = tail == path_secret if path_secret else len(tail) >= 16
    path = f"{head}/{SECRET}{parts.path[len(trimmed) :]}" if slash and tail and secret else parts.path
    return urlunsplit(parts._replace(netloc=netloc, path=path))


@webhooks.command()
@yes_option
def unsubscribe(yes: bool) -> None:
    """Delete the application's subscription (asks first)."""
    from fitsync.webhooks.subscriptions import masked

    with open_client() as client:
        with _waits_said("asking the service"):
            subs = client.subscriptions().view()
        if not subs:
            raise click.ClickException(
                "nothing to unsubscribe: the application has no subscription at the service "
                "(`fitsync webhooks subscribe` makes one)"
            )
        shown = ", ".join(f"{sub.id} to {masked(str(sub.get('callback_url')))}" for sub in subs)
        confirm(
            f"this deletes the application's push subscription {shown}: the service sends no more events until "
            "`fitsync webhooks subscribe` makes a new one (with a new path secret)",
            "Unsubscribe?",
            yes,
        )
        with _waits_said("unsubscribing"):
            for sub in subs:
                client.subscriptions().delete(int(sub.id))
        client.subscription_state.forget()
    click.echo("Unsubscribed.")


@webhooks.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (behind a reverse proxy or tunnel that terminates TLS).",
)
@click.option(
    "--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option(
    "--prefix",
    "--path",
    "prefix",
    default=DEFAULT_PREFIX,
    show_default=True,
    callback=lambda ctx, param, value: _path_prefix(value),
    help="Path the events arrive under; the subscription's secret follows it.",
)
def serve(host: str, port: int, prefix: str) -> None:
    """Receive the service's events into the inbox (the `webhook_events` sensor acts on them)."""
    import logging

    import uvicorn

    from fitsync.cli.receiver_server import ReceiverServer
    from fitsync.cli.stop_signals import StopSignals
    from fitsync.sandbox.listening import listening_socket
    from fitsync.webhooks.receiver import Receiver

    listener = listening_socket(host, port)  # first: a busy port is the one thing said
    port = listener.getsockname()[1]  # --port 0: the one the system chose
    logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", datefmt="%Y-%m-%dT%H:%M:%S")
    logging.getLogger("fitsync.webhooks.receiver").setLevel(logging.INFO)  # one line per event
    client = open_client()  # no credentials: refused before the state store opens (nothing created)
    if client.subscription_state.encrypt_stored_address():
        click.echo("The subscription's callback address (it ends in the path secret) is now stored encrypted.")
    receiver = Receiver(client, prefix)
    click.echo(
        f"Receiving events at http://{host}:{port}{receiver.prefix}/<secret> (put it behind HTTPS for the real service)"
    )
    if client.subscription_state.current() is None:
        click.echo(
            "Warning: no subscription yet, so no event arrives: with this receiver running, run `fitsync webhooks "
            f"subscribe --callback-url <public address up to {receiver.prefix}>`.",
            err=True,
        )
    if receiver.weak_secret():
        click.echo(
            "Warning: the subscription's callback path is guessable (made before fitsync added a path "
            "secret): run `fitsync webhooks unsubscribe` and `fitsync webhooks subscribe "
            "--callback-url <public address up to the prefix>` to get one.",
            err=True,
        )
    server = ReceiverServer(uvicorn.Config(receiver.app, host=host, port=port, log_level="warning", access_log=False))
    server.run(
        sockets=[listener]
    )  # on SIGINT / SIGTERM uvicorn stops accepting, finishes the requests in flight, then returns
    if server.stop_signal:
        click.echo(
            f"Stopped by {StopSignals.name(server.stop_signal)}: {receiver.stored} events stored since start; "
            "the service retries what was not acknowledged.",
            err=True,
        )
        raise SystemExit(StopSignals.exit_code(server.stop_signal))


def _path_prefix(value: str) -> str:
    """A path of at least one segment (`/webhooks`): "/" or "" would put the secret at the root, an address no
    subscription can be validated at."""
    if not value.strip("/"):
        raise click.BadParameter("give a path such as /webhooks: the subscription's secret follows it")
    return value
