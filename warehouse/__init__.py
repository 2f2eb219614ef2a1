"""The DuckDB warehouse: its migrations and analysis views (the one definition of every metric), the idempotent
loads from landed documents (columns described as data), the read helpers and the report.

May import: nothing of fitsync.
"""
