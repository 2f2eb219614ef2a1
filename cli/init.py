"""`fitsync init`: a commented config.toml (mode 600) with the app's credentials, asked for or given as flags."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fitsync.client.config_basics import CONFIG_FILE, REAL_AUTH_URL, REAL_BASE_URL, ConfigError, load_config
from fitsync.client.config_file import write
from fitsync.client.secret import Secret

if TYPE_CHECKING:
    from fitsync.client.config import Config


@click.command()
@click.option("--client-id", type=int, help="Your app's id at the service (asked for when not given).")
@click.option(
    "--client-secret",
    help="Your app's secret (asked for, hidden, when not given; or set "
    "FITSYNC_CLIENT_SECRET and leave it out of the file).",
)
@click.option("--base-url", default=REAL_BASE_URL, show_default=True, help="The API root.")
@click.option(
    "--auth-url", default=REAL_AUTH_URL, show_default=True, help="The site of the authorization pages, without /oauth."
)
@click.option("--secret-in-env", is_flag=True, help="Keep the secret out of the file (FITSYNC_CLIENT_SECRET).")
def init(client_id: int | None, client_secret: str | None, base_url: str, auth_url: str, secret_in_env: bool) -> None:
    """Write FITSYNC_HOME/config.toml with every setting explained; an existing one is kept as a .bak copy."""
    home = Path(os.environ.get("FITSYNC_HOME") or Path.home() / ".fitsync").expanduser()
    interactive = sys.stdin.isatty()
    if client_id is None:
        if not interactive:
            raise click.UsageError("give --client-id (and --client-secret, or --secret-in-env)")
        client_id = click.prompt("Client id of your app at the service", type=click.IntRange(min=1))
    if client_secret is None and not secret_in_env:
        if not interactive:
            raise click.UsageError("give --client-secret, or --secret-in-env and set FITSYNC_CLIENT_SECRET")
        client_secret = click.prompt("Client secret (not shown)", hide_input=True)
    if client_secret is not None and not client_secret.strip():  # an empty secret: every token exchange refused
        raise click.BadParameter(
            "the client secret is empty: give the one on your app's API settings page (or --secret-in-env)",
            param_hint="'--client-secret'",
        )
    if auth_url.rstrip("/").endswith("/oauth"):
        raise click.UsageError(
            f"--auth-url is the site without /oauth (fitsync adds /oauth/authorize): "
            f"try {auth_url.rstrip('/').removesuffix('/oauth')}"
        )
    values: dict[str, Any] = {"client_id": client_id}
    if client_secret:
        values["client_secret"] = client_secret
    if base_url.rstrip("/") != REAL_BASE_URL:
        values["base_url"] = base_url.rstrip("/")
    if auth_url.rstrip("/") != REAL_AUTH_URL:
        values["auth_url"] = auth_url.rstrip("/")
    _check(values)  # before anything is written: a refused value leaves the home as it was
    before = _previous(home)
    kept = write(home, values)
    try:
        after = load_config(env={}, home=home)  # what was written reads back
    except ConfigError as error:
        raise click.ClickException(f"the written file does not load: {error}") from None
    if kept:
        click.echo(f"kept the previous file as {kept}")
        for line in _changes(before, after) if before is not None else []:
            click.echo(line)
    click.echo(f"wrote {home / 'config.toml'} (mode 600)")
    click.echo("next: `fitsync doctor` checks it, `fitsync connect` connects an athlete")


# The option that gives each setting `init` writes, to name it when the value is refused.
OPTIONS = {
    "client_id": "--client-id",
    "client_secret": "--client-secret",
    "base_url": "--base-url",
    "auth_url": "--auth-url",
}


def _previous(home: Path) -> Config | None:
    """What the existing config.toml says (without the environment's variables), to tell what the new one changes;
    None without a file, or when it does not load (it is kept as .bak all the same)."""
    if not (home / CONFIG_FILE).exists():
        return None
    try:
        return load_config(env={}, home=home)
    except ConfigError:
        return None


def _changes(before: Config, after: Config) -> list[str]:
    """One line per setting the new file changes, `old → new`; a secret's values are never shown."""
    lines = []
    for name in type(after).settings():
        old, new = getattr(before, name), getattr(after, name)
        if old == new:
            continue
        if isinstance(new, Secret) or isinstance(old, Secret):
            said = "set" if not old else "removed from the file" if not new else "changed"
            lines.append(f"  {name}: {said} (not shown: a secret)")
        else:
            lines.append(f"  {name}: {_shown(old)} → {_shown(new)}")
    return ["changed from the previous file:", *lines] if lines else []


def _shown(value: Any) -> str:
    return "(not set)" if value in (None, "") else str(value)


def _check(values: dict[str, Any]) -> None:
    """Each value as the settings model validates it (the addresses as http(s) URLs too); a refused one is a usage
    error naming its option (exit 2)."""
    from fitsync.client.config import Config  # pydantic loads when a file is to be written, not with --help

    defaults = Config.model_construct()  # the defaults, read from no file and no variable
    for name, value in values.items():
        try:
            defaults.replace(**{name: value})
        except ConfigError as error:
            said = str(error).removeprefix("keyword arguments: ")  # the origin is the option, named by click
            raise click.BadParameter(said, param_hint=f"'{OPTIONS[name]}'") from None
