"""`fitsync thresholds`: an athlete's own FTP, lactate-threshold heart rate and running threshold pace by date (a lab
or field test's), which the load views use from that date on (warehouse/thresholds.py). `fitsync query` only reads:
this is how they are written."""

from __future__ import annotations

import datetime as dt
import math
import shlex
from typing import TYPE_CHECKING, Any

import click

from fitsync.cli.athlete_choice import ATHLETE_ID

if TYPE_CHECKING:
    from fitsync.warehouse.location import Warehouse


class Pace(click.ParamType):
    """A pace per km as min:s (`4:30`) or seconds (`270`)."""

    name = "min:s"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            if ":" in text:
                minutes, seconds = text.split(":")
                if not 0 <= float(seconds) < 60:
                    raise ValueError
                pace = int(minutes) * 60 + float(seconds)
            else:
                pace = float(text)
                if 0 < pace < 60:  # minutes, not seconds: no one runs a km in under a minute
                    meant = text.replace(".", ":") if "." in text else f"{text}:00"
                    self.fail(
                        f"{value!r} is not a pace per km: did you mean {meant}? give min:s (4:30) or seconds (270)",
                        param,
                        ctx,
                    )
            if not math.isfinite(pace):
                raise ValueError
            return pace
        except ValueError:
            self.fail(f"{value!r} is not a pace per km: give min:s (4:30) or seconds (270)", param, ctx)


ATHLETE = click.option(
    "--athlete",
    "athlete_id",
    type=ATHLETE_ID,
    default=None,
    help="The athlete (default: the only one in the warehouse).",
)
FROM = click.option(
    "--from",
    "valid_from",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    required=True,
    help="The first day (YYYY-MM-DD, the athlete's local date) the values apply.",
)


@click.group(invoke_without_command=True)
@ATHLETE
@click.pass_context
def thresholds(ctx: click.Context, athlete_id: int | None) -> None:
    """FTP, LTHR and threshold pace by date, for the training loads: list them (the default), set or remove them."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(listed, athlete_id=athlete_id)
    elif athlete_id is not None:
        raise click.UsageError(f"give --athlete after `{ctx.invoked_subcommand}`", ctx)


@thresholds.command("list")
@ATHLETE
def listed(athlete_id: int | None = None) -> None:
    """Each athlete's thresholds by date (only the one given with --athlete)."""
    from fitsync.warehouse import db
    from fitsync.warehouse import thresholds as kept

    from .warehouse_open import athletes_in

    warehouse = _warehouse()
    athletes = athletes_in(warehouse, () if athlete_id is None else (athlete_id,))
    with db.reading(warehouse, notice=_notice) as conn:
        for athlete in athletes:
            found = kept.rows(conn, athlete)
            for unused in kept.profile_ftp_unused(conn, athlete):
                click.echo(
                    f"athlete {athlete}: {unused} (`fitsync thresholds set --athlete {athlete} --from YYYY-MM-DD --ftp W`)"
                )
            if not found:
                click.echo(
                    f"athlete {athlete}: no thresholds set (the loads use the profile's FTP where it has one, and the "
                    f"heart-rate zones): `fitsync thresholds set --athlete {athlete} --from YYYY-MM-DD --ftp W` sets one"
                )
                continue
            click.echo(f"athlete {athlete}:")
            for row in found:
                click.echo(f"  from {row.valid_from}: {row.shown()}")
            if today := kept.ftp_in_force(conn, athlete):
                click.echo(f"  FTP in force now: {today}")


@thresholds.command("set")
@ATHLETE
@FROM
@click.option("--ftp", type=float, default=None, help="Functional threshold power, watts.")
@click.option("--lthr", type=float, default=None, help="Lactate-threshold heart rate, beats per minute.")
@click.option("--pace", type=Pace(), default=None, help="Running threshold pace per km, min:s (4:30).")
@click.option("--note", default=None, help="Where the values come from (a lab test, a 20-minute test …).")
def set_thresholds(
    athlete_id: int | None,
    valid_from: dt.datetime,
    ftp: float | None,
    lthr: float | None,
    pace: float | None,
    note: str | None,
) -> None:
    """Set thresholds from a date on (the others of that date are kept): the loads use them until the next date."""
    from fitsync.warehouse import db
    from fitsync.warehouse import thresholds as kept

    values = {name: v for name, v in (("ftp", ftp), ("lthr", lthr), ("pace", pace)) if v is not None}
    if not values:
        raise click.UsageError("give at least one of --ftp, --lthr and --pace")
    for name, value in values.items():
        if why := kept.out_of_range(name, value):
            raise click.BadParameter(why, param_hint=f"'--{name}'")
    day = valid_from.date()
    if day > dt.date.today():
        raise click.BadParameter(
            f"{day} is after today: thresholds apply from the day of the test that gave them", param_hint="'--from'"
        )
    warehouse = _warehouse()
    athlete = _athlete(warehouse, athlete_id)
    with db.writing(warehouse, notice=_notice) as conn:
        before = kept.set_values(conn, athlete, day, values, note)
        after = kept.row_of(conn, athlete, day)
        assert after is not None  # just written
        profile = kept.profile_ftp(conn, athlete)
        ended = kept.ftp_ended_by_profile(conn, athlete, day) if ftp is not None else None
    was = f" (was: {before.shown()})" if before else ""
    click.echo(f"athlete {athlete}: from {day}: {after.shown()}{was}")
    if ended:
        since, value = ended
        click.secho(
            f"note: FTP {ftp:g} W applies until {since}: from that day the profile's {value:g} W does (fitsync saw it "
            f"then). To keep {ftp:g} W after it: fitsync thresholds set --athlete {athlete} --from {since} --ftp {ftp:g}",
            fg="yellow",
            err=True,
        )
    if ftp is not None and profile and abs(ftp / profile - 1) > kept.PROFILE_GAP:
        click.secho(
            f"note: FTP {ftp:g} W is {abs(ftp / profile - 1):.0%} {'above' if ftp > profile else 'below'} the "
            f"profile's {profile:g} W: a ride's power load on it is {(profile / ftp) ** 2 - 1:+.0%} against the "
            "profile's. If the value is a typo, run `fitsync thresholds set` again with the right one",
            fg="yellow",
            err=True,
        )
    click.echo(
        "activity_load and pmc use them from that date until the next one set (an FTP also until the profile's FTP "
        "that fitsync sees next: ftp_timeline); `fitsync report` draws the loads."
    )


@thresholds.command("remove")
@ATHLETE
@FROM
def remove(athlete_id: int | None, valid_from: dt.datetime) -> None:
    """Remove the thresholds set from a date (says what they were, and how to set them again)."""
    from fitsync.warehouse import db
    from fitsync.warehouse import thresholds as kept

    warehouse = _warehouse()
    athlete = _athlete(warehouse, athlete_id)
    day = valid_from.date()
    with db.writing(warehouse, notice=_notice) as conn:
        before = kept.remove(conn, athlete, day)
    if before is None:
        raise click.ClickException(
            f"athlete {athlete} has no thresholds from {day}: `fitsync thresholds list --athlete {athlete}` lists them"
        )
    again = " ".join(f"--{t.name} {t.text(v)}" for t in kept.THRESHOLDS if (v := before.values.get(t.name)) is not None)
    note = f" --note {shlex.quote(before.note)}" if before.note else ""
    click.echo(f"athlete {athlete}: removed the thresholds from {day}: {before.shown()}")
    click.echo(f"To set them again: fitsync thresholds set --athlete {athlete} --from {day} {again}{note}")


def _warehouse() -> Warehouse:
    from fitsync.warehouse import db

    from .warehouse_open import existing_warehouse

    warehouse = existing_warehouse()
    db.ensure_schema(warehouse)
    return warehouse


def _athlete(warehouse: Warehouse, athlete_id: int | None) -> int:
    """The athlete asked for, which must be in the warehouse; without --athlete, the only one there."""
    from .warehouse_open import athletes_in

    held = athletes_in(warehouse, () if athlete_id is None else (athlete_id,))
    if len(held) > 1:
        raise click.UsageError(f"the warehouse holds athletes {', '.join(map(str, held))}: say which with --athlete")
    return held[0]


def _notice(line: str) -> None:
    click.echo(line, err=True)
