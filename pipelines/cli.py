"""The `fitsync` command."""

from __future__ import annotations

import os

import click

from fitsync.sandbox.cli import sandbox

from .cli_client import athletes, connect, disconnect, webhooks
from .cli_bench import bench
from .cli_report import report
from .cli_sync import query, sync
from .demo import demo


@click.group()
@click.version_option(package_name="fitsync")
def main() -> None:
    """fitsync: keep an athlete's training data in a local warehouse."""
    os.umask(0o077)  # tokens, training data, GPS tracks, reports: everything fitsync writes is the owner's only


main.add_command(sandbox)
main.add_command(demo)
for command in (connect, disconnect, athletes, webhooks, sync, query, report, bench):
    main.add_command(command)


if __name__ == "__main__":
    main()
