"""`fitsync bench NAME [OPTIONS]`: the benchmarks of a source checkout (the same as `python -m bench NAME`)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click


def _bench_package_root() -> Path:
    """The checkout holding bench/: the one this package was installed from (editable), else the current folder."""
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        if (root / "bench" / "__main__.py").exists():
            return root
    raise click.ClickException("the benchmarks live in fitsync's source checkout: run this from its root")


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []})
@click.argument("name", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(name: str | None, args: tuple[str, ...]) -> None:
    """Run a benchmark (api-calls, rate-budget, webhook-ack, load, query, demo, freshness, all).

    Prints a table and writes .bench-out/NAME.json (bench/results/ with FITSYNC_BENCH_RECORD=1); `fitsync bench NAME --help` lists its options.
    """
    root = str(_bench_package_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    # bench/ is a folder of the checkout, not part of the package: loaded by name, its `cli` is untyped here
    cli = importlib.import_module("bench.__main__").cli

    code = cli([*([name] if name else []), *args], prog="fitsync bench")
    if code:
        sys.exit(code)
