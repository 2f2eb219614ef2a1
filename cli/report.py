"""`fitsync report`: the athlete's training report (HTML that opens offline, PNG charts, a Markdown summary); it
says where it wrote them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

from fitsync.cli import screen
from fitsync.cli.athlete_choice import ATHLETE_ID
from fitsync.client.config_basics import load_config


@click.command()
@click.option(
    "--athlete",
    "athlete_ids",
    type=ATHLETE_ID,
    multiple=True,
    help="Only this athlete (repeatable; default: every athlete in the warehouse).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the report (default: FITSYNC_HOME/reports); one subfolder per athlete.",
)
def report(athlete_ids: tuple[int, ...], out_dir: Path | None) -> None:
    """Write a self-contained HTML training report with charts (PMC, volume, zones, segments, Eddington, YTD)."""
    from fitsync.warehouse import db

    from .warehouse_open import athletes_in, existing_warehouse

    warehouse = existing_warehouse()
    status = screen.console(stderr=True)  # what it is doing, for the seconds it takes; stdout says what it wrote
    given, out_dir = out_dir is not None, out_dir or load_config().home / "reports"
    fix = "give one you can write" if given else "give a folder you can write with --out DIR"
    if out_dir.exists() and not out_dir.is_dir():
        raise click.BadParameter(f"{out_dir} is not a folder: give a folder for the report", param_hint="'--out'")
    if given and not out_dir.absolute().parent.is_dir():  # as `query -o` refuses it: a typo makes no folder tree
        raise click.BadParameter(
            f"the folder {out_dir.absolute().parent} does not exist: create it, or give another (--out makes only "
            "its last folder)",
            param_hint="'--out'",
        )
    if not _writable(out_dir):  # said before the seconds the report takes, not after
        raise click.ClickException(f"cannot write the report to {out_dir}: the folder is read-only here; {fix}")
    db.ensure_schema(warehouse)  # a damaged or busy warehouse is said before the charting libraries load (a second)
    athletes = athletes_in(warehouse, athlete_ids)
    with screen.doing(status, "loading the charting libraries…"):
        from fitsync.warehouse import report as reports
    try:
        for athlete in athletes:
            folder = out_dir / str(athlete)
            new = not folder.exists()
            try:
                doing = f"athlete {athlete}: building the report (warehouse queries, then the charts)…"
                with screen.doing(status, doing) as then:
                    result = reports.build_report(
                        warehouse,
                        folder,
                        athlete,
                        drawing=lambda k, n: then(f"athlete {athlete}: drawing chart {k} of {n}…"),
                    )
            except KeyboardInterrupt:  # a report stopped halfway is not left as if it were one
                if new:
                    shutil.rmtree(folder, ignore_errors=True)
                raise
            except OSError as error:  # its folder is made only once the charts are drawn: here it could not be
                raise click.ClickException(f"cannot write the report to {out_dir} ({error.strerror}): {fix}") from None
            click.echo(result.title)
            click.echo(f"  report   {result.html_path}")
            click.echo(f"  summary  {result.markdown_path}")
            click.echo(
                f"  charts   {len(result.png_paths)} PNGs in {result.html_path.parent}: "
                + ", ".join(p.name for p in result.png_paths)
            )
    except reports.ReportError as error:
        listed = "" if not athlete_ids else ": `fitsync athletes` lists who is connected, `fitsync sync` loads them"
        raise click.ClickException(f"{error}{listed}") from None


def _writable(folder: Path) -> bool:
    """Whether `folder` can be written, or made in its nearest existing parent (a home mounted read-only cannot)."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)
