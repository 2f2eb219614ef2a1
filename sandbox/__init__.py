"""A spec-faithful, runnable Fitness Activity Service (Strava-v3-compatible, with a `real` flavour) for the demo,
the tests and the benchmarks; it knows nothing of fitsync.

May import: nothing of fitsync.
"""
