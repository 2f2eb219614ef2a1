"""A spec-faithful, runnable Fitness Activity Service (Strava-v3-compatible) for tests, demos and benchmarks."""
