"""The sync's own logic, without Dagster: what has been listed and what still needs fetching (`progress`), the
landing area between fetching and loading (`landing`), what is due on its slow cadence (`cadence`) and the proof a
deletion needs (`deletion_proof`). The assets, the headless CLI and the "nothing new" check call it.

May import: client, warehouse.
"""
