"""The sync's own logic, without Dagster: which listing is due and the listing itself (`listing`), what has been
listed and what still needs fetching (`progress`), reconciling a listing with what is known, with the proof a
deletion needs (`reconciliation`, `deletion_proof`), fetching and recording details (`details`), the landing area
between fetching and loading (`landing`), what this process has fetched and not recorded yet (`live`), loading what landed, at a run's end and while it fetches (`load_landed`),
and what is due on its slow cadence (`cadence`). A step's work without Dagster (`steps`: its athlete, rate class, log
and metadata) for the profile, stats and zones (`athlete_bundles`) and the listing step whole (`listing_step`); the
first steps `fitsync sync` does before Dagster loads and the run adopts (`first_steps`), with the answers its check
already holds (`known_answers`). The assets, the headless CLI and the "nothing new" check call it.

May import: client, state, warehouse.
"""
