"""`fitsync bench NAME [OPTIONS]`: the benchmarks of a source checkout (the same as `python -m bench NAME`).

bench/ is a folder of the checkout, not part of the installed package: the command runs `python -m bench` in a child
process with the checkout on its PYTHONPATH (this process's import path is left alone), in the caller's working
folder, so relative paths given as options mean what they say.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

# Read by bench/__main__.py: the command name its usage lines show.
PROG_VARIABLE = "BENCH_PROG"


def bench_checkout() -> Path:
    """The checkout holding bench/: the one this package was installed from (editable), else the current folder."""
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        if (root / "bench" / "__main__.py").exists():
            return root
    raise click.ClickException(
        "the benchmarks live in fitsync's source checkout (bench/): run this from its root, "
        "or install fitsync from the checkout with `pip install -e .`"
    )


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []})
@click.argument("name", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(name: str | None, args: tuple[str, ...]) -> None:
    """Run a benchmark (api-calls, rate-budget, webhook-ack, load, query, demo, freshness, all).

    Prints a table and writes .bench-out/NAME.json (bench/results/ with FITSYNC_BENCH_RECORD=1); `fitsync bench NAME --help` lists its options.
    """
    root = str(bench_checkout())
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, PROG_VARIABLE: "fitsync bench"}
    code = subprocess.run(
        [sys.executable, "-m", "bench", *([name] if name else []), *args], env=env, check=False
    ).returncode
    if code:
        sys.exit(code)
