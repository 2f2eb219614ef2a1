"""The `fitsync` command."""

from __future__ import annotations

import os

import click

from fitsync.sandbox.cli import sandbox

from fitsync.cli.bench import bench
from fitsync.cli.athletes import athletes, connect, disconnect, webhooks
from fitsync.cli.doctor import doctor
from fitsync.cli.errors import FitsyncGroup
from fitsync.cli.init import init
from fitsync.cli.query import query
from fitsync.cli.report import report
from fitsync.cli.status import status
from fitsync.cli.sync import sync
from fitsync.cli.demo import demo


@click.group(cls=FitsyncGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fitsync")
@click.option("--debug", is_flag=True, help="Show the traceback of an unexpected error (or FITSYNC_DEBUG=1).")
def main(debug: bool) -> None:
    """fitsync: keep an athlete's training data in a local warehouse."""
    if debug:
        os.environ["FITSYNC_DEBUG"] = "1"
    os.umask(0o077)  # tokens, training data, GPS tracks, reports: everything fitsync writes is the owner's only


main.add_command(sandbox)
main.add_command(demo)
for command in (init, connect, disconnect, athletes, status, doctor, webhooks, sync, query, report, bench):
    main.add_command(command)


if __name__ == "__main__":
    main()
