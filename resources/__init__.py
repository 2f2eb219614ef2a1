"""What the assets run with: the Dagster resource that talks to the service (`api`, its settings embedded from the
one settings model), the athlete partitions (`partitions`), and the run config, pools, tags and run metadata every
sync asset shares (`run`).

May import: client, state, warehouse, sync.
"""
