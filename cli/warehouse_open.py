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
        config = load_config()
        warehouse = warehouse_of(config)
        found = db.exists(warehouse)
    except (ConfigError, db.LakeUnavailable) as error:
        raise click.ClickException(str(error)) from None
    if not found:
        from .status import first_steps  # only on this way out

        raise click.ClickException(
            f"no warehouse at {warehouse}: nothing was synced into it yet. To start, {first_steps(config)} (if no "
            "athlete is connected yet), then `fitsync sync`; or `fitsync demo` to try fitsync on a sandbox"
        )
    return warehouse
