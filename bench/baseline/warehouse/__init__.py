"""The DuckDB warehouse: migrations, idempotent loads and analysis."""
