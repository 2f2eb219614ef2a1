"""The phases of an athlete's sync as a person reads them: said by `fitsync sync` for the first steps it does before
Dagster loads (cli/sync.py), then by the run's display for the rest (cli/sync_progress.py). Dagster-free."""

# Dagster step (asset) → the phase a user recognises; steps not named here show under their own name.
PHASES: dict[str, str] = {
    "athlete": "profile",
    "athlete_stats": "stats",
    "athlete_zones": "heart-rate and power zones",
    "activities": "listing",
    "activity_details": "details",
    "activity_zones": "activity zones",
    "starred_segments": "starred segments",
    "segments": "segments",
    "segment_effort_history": "segment efforts",
    "activity_streams": "streams",
    "activity_summaries": "loading the summaries",
    "warehouse": "loading the warehouse",
    "warehouse_checks": "checking the warehouse",
}
