"""The `fitsync` command."""

from __future__ import annotations

import importlib
import os

import click

from fitsync.cli.athletes import athletes, connect, disconnect
from fitsync.cli.bench import bench
from fitsync.cli.doctor import doctor
from fitsync.cli.errors import FitsyncGroup
from fitsync.cli.init import init
from fitsync.cli.query import query
from fitsync.cli.report import report
from fitsync.cli.status import status
from fitsync.cli.sync import sync
from fitsync.cli.thresholds import thresholds
from fitsync.cli.webhooks import webhooks

# Commands whose modules load a whole service (the sandbox) or DuckDB: imported only when one is run, completed or
# asked for its own help, so `fitsync --help` and every other command start without them. Each keeps the line
# `fitsync --help` lists for it (tests/pipeline/test_cli_help.py checks it is the command's own).
LAZY = {
    "sandbox": ("fitsync.sandbox.cli:sandbox", "The Fitness Activity Service, served locally over real HTTP."),
    "demo": (
        "fitsync.cli.demo:demo",
        "Sandbox → OAuth → full sync → webhooks → athlete changes → sensor-driven run → a look at the warehouse.",
    ),
}


# Names a user may reach for (the DuckDB shell's habit): the command they mean, and its line in `fitsync --help`.
ALIASES = {"sql": ("query", "The SQL prompt on the warehouse (`fitsync query` with no SQL at a terminal).")}


class FitsyncCommands(FitsyncGroup):
    """The top-level group: the commands of LAZY load on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY, *ALIASES})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = ALIASES[name][0] if name in ALIASES else name
        if name in LAZY and name not in self.commands:
            module, attribute = LAZY[name][0].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing, with a lazy command's line taken from LAZY rather than from importing it."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            if name in ALIASES:
                rows.append((name, click.Command(name, help=ALIASES[name][1]).get_short_help_str(limit)))
            elif name in LAZY and name not in self.commands:
                rows.append((name, click.Command(name, help=LAZY[name][1]).get_short_help_str(limit)))
            elif (command := self.get_command(ctx, name)) is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=FitsyncCommands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fitsync")
@click.option("--debug", is_flag=True, help="Show the traceback of an unexpected error (or FITSYNC_DEBUG=1).")
def main(debug: bool) -> None:
    """fitsync: keep an athlete's training data in a local warehouse."""
    if debug:
        os.environ["FITSYNC_DEBUG"] = "1"
    os.umask(0o077)  # tokens, training data, GPS tracks, reports: everything fitsync writes is the owner's only
    if any(name.startswith("FITSYNC_") for name in os.environ):  # the settings model (pydantic) only then
        from fitsync.client.config import stray_variables

        for line in stray_variables(os.environ):
            click.secho(line, fg="yellow", err=True)


for command in (init, connect, disconnect, athletes, status, doctor, webhooks, sync, query, report, thresholds, bench):
    main.add_command(command)


if __name__ == "__main__":
    from fitsync.cli.entry import run

    run(main)
