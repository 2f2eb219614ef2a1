"""Which warehouse the settings name (warehouse_url, warehouse_data_path): the one place a Config becomes a
warehouse location, for the commands, the assets and the Python API alike."""

from __future__ import annotations

from fitsync.client.config import Config, ConfigError
from fitsync.warehouse.location import LAKE_PREFIX, Warehouse

FILE_NAME = "warehouse.duckdb"


def warehouse_of(config: Config) -> Warehouse:
    """The lake warehouse_url names, else the DuckDB file in the home."""
    url = config.warehouse_url.reveal()
    if url and not url.startswith(LAKE_PREFIX):
        raise ConfigError(
            f"warehouse_url (FITSYNC_WAREHOUSE_URL) must be {LAKE_PREFIX}<PostgreSQL conninfo>, such as "
            f"{LAKE_PREFIX}host=db.example dbname=fitsync_lake user=fitsync, or empty for {FILE_NAME} in the home"
        )
    return Warehouse(url or str(config.home / FILE_NAME), config.warehouse_data_path)
