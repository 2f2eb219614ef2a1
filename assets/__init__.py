"""Dagster asset definitions only, one partition per athlete: each asset reads top to bottom as fetch → frame →
load and calls the sync's logic (`sync/`) with what `resources/` gives it. The asset graph: athlete → activities →
activity_details → segments → warehouse_load → the analysis assets.

May import: client, state, warehouse, webhooks, sync, resources.
"""
