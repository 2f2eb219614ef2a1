"""`python -m bench NAME [OPTIONS]` (or `fitsync bench NAME [OPTIONS]`): run one benchmark, `all` for each in turn.

Each benchmark is `bench/<name>.py` (dashes become underscores) with a `main()`; it prints a table and
writes .bench-out/<name>.json (bench/results/, whose figures docs/performance.md shows, with
FITSYNC_BENCH_RECORD=1).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import click

HERE = Path(__file__).resolve().parent
NOT_BENCHMARKS = {"__init__", "__main__", "common"}


def available() -> list[str]:
    found = sorted(
        p.stem.replace("_", "-")
        for p in HERE.glob("*.py")
        if p.stem not in NOT_BENCHMARKS and not p.stem.startswith("_") and "def main" in p.read_text()
    )
    from .common import ORDER  # with the benchmarks' own imports: only once one is chosen

    return [n for n in ORDER if n in found] + [n for n in found if n not in ORDER]


def run(name: str, args: Sequence[str], *, standalone: bool = True, prog: str = "python -m bench") -> int:
    """Run benchmark `name` with its own options; returns its exit code."""
    if name == "all":
        if args:
            raise click.UsageError("`all` runs every benchmark with its defaults: it takes no options")
        codes = []
        for each in available():
            try:
                codes.append(run(each, [], standalone=False, prog=prog))
            except Exception:  # noqa: BLE001 (one failing benchmark does not stop the others)
                traceback.print_exc()
                codes.append(1)
        return max(codes, default=0)
    if name not in available():
        raise click.UsageError(f"unknown benchmark {name!r}; one of: {', '.join(available())}, all")
    module = importlib.import_module(f"bench.{name.replace('-', '_')}")
    main = module.main
    prog = f"{prog} {name}"
    if isinstance(main, click.Command):
        try:
            main.main(args=list(args), prog_name=prog, standalone_mode=standalone)
        except SystemExit as stop:
            return int(stop.code or 0)
        return 0
    saved = sys.argv
    sys.argv = [prog, *args]
    try:
        main()
    except SystemExit as stop:
        return int(stop.code or 0)
    finally:
        sys.argv = saved
    return 0


def cli(argv: Sequence[str], prog: str = "python -m bench") -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nbenchmarks: " + ", ".join(available()) + ", all")
        return 0
    try:
        return run(argv[0], argv[1:], prog=prog)
    except click.ClickException as error:
        error.show()
        return error.exit_code


if __name__ == "__main__":
    # `fitsync bench` runs this module and names itself in BENCH_PROG (cli/bench.py)
    sys.exit(cli(sys.argv[1:], prog=os.environ.get("BENCH_PROG", "python -m bench")))
