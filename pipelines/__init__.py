"""The Dagster code location: definitions, jobs, the nightly schedule, the webhook sensor, the purge job, the
instance fitsync's commands use and the headless runner of its jobs."""
