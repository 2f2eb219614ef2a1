"""Which athletes a command asked for by `--athlete` acts on: each must be connected, or it is a usage error (exit 2)
that names the command listing who is, before any work starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click


class AthleteId(click.ParamType):
    """An athlete's id, the number the service gives: a name or a typo says where the numbers are listed."""

    name = "ATHLETE_ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            self.fail(
                f"{value!r} is not an athlete id: athletes are named by the service's number "
                "(`fitsync athletes` lists them)",
                param,
                ctx,
            )


ATHLETE_ID = AthleteId()


def chosen(requested: Sequence[int], connected: Sequence[int]) -> list[int]:
    """The athletes asked for, or every connected one when none was; raises click.BadParameter naming the ones
    asked for that are not connected."""
    strangers = [athlete_id for athlete_id in requested if athlete_id not in connected]
    if strangers:
        named = ", ".join(map(str, strangers))
        raise click.BadParameter(
            f"athlete {named} is not connected: run `fitsync connect` as that athlete; "
            "`fitsync athletes` lists who is connected"
            if len(strangers) == 1
            else f"athletes {named} are not connected: `fitsync athletes` lists who is; `fitsync connect` adds one",
            param_hint="'--athlete'",
        )
    return list(requested) or list(connected)
