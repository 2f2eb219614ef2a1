"""The Dagster code location and the `fitsync` command line."""
