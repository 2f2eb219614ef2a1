"""Code of earlier fitsync versions that benchmarks measure today's against, in the same run.

`warehouse/`: the warehouse loader before issue 15 (bench load's baseline, bench/load_before.py): the files its
load path needs (`db`, `loads`, `mappings`, `expressions`, the migrations and the views `db.migrate` applies),
copied unchanged from `git archive 1cca795fc971e8f1cb63f6e8958a221feb847b57 warehouse`, so that the baseline runs
from a shallow clone or a source tarball. Kept as it was: ruff leaves this folder alone (pyproject.toml) and mypy
checks only the fitsync package.
"""
