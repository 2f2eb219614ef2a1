"""The warehouse a read-only command opens: the one the settings name, which must exist (nothing is created)."""

from __future__ import annotations

import click

from fitsync.client.config_basics import ConfigError, load_config
from fitsync.resources.warehouse import warehouse_of
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse


def existing_warehouse() -> Warehouse:
    """The configured warehouse; a one-line error when the settings are wrong, the lake does not answer, or nothing
    was synced yet."""
    try:
        warehouse = warehouse_of(load_config())
        found = db.exists(warehouse)
    except (ConfigError, db.LakeUnavailable) as error:
        raise click.ClickException(str(error)) from None
    if not found:
        raise click.ClickException(
            f"no warehouse at {warehouse}: nothing was synced into it yet. Run `fitsync sync` (on a new home: "
            "`fitsync init`, then `fitsync connect`, first; or `fitsync demo` to try fitsync on a sandbox)"
        )
    return warehouse
