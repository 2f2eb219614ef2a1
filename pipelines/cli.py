"""The `fitsync` command."""

from __future__ import annotations

import os

import click

from fitsync.sandbox.cli import sandbox

from .cli_bench import bench
from .cli_client import athletes, connect, disconnect, webhooks
from .cli_doctor import doctor
from .cli_errors import FitsyncGroup
from .cli_init import init
from .cli_query import query
from .cli_report import report
from .cli_status import status
from .cli_sync import sync
from .demo import demo


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
