"""The warehouse a read-only command opens: the one the settings name, which must exist (nothing is created)."""

from __future__ import annotations

from collections.abc import Sequence

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


def athletes_in(warehouse: Warehouse, requested: Sequence[int] = ()) -> list[int]:
    """The athletes --athlete names (each once), which must have activities in the warehouse (a usage error
    otherwise, exit 2, as `sync --athlete` makes it); without one every athlete there, at least one."""
    athletes = db.athletes_held(warehouse)
    for athlete_id in requested:
        if athlete_id not in athletes:
            raise click.BadParameter(
                f"athlete {athlete_id} has no activities in the warehouse: `fitsync athletes` lists who is "
                "connected, `fitsync sync` loads them",
                param_hint="'--athlete'",
            )
    if requested:
        return list(dict.fromkeys(requested))
    if not athletes:
        raise click.ClickException("the warehouse has no activities yet: run `fitsync sync` first")
    return athletes
