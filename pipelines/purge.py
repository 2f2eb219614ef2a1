"""The purge after a deauthorization: the athlete's state and warehouse rows go, with counts in the log."""

from dagster import Config, OpExecutionContext, job, op
from dagster_duckdb import DuckDBResource

from fitsync.assets.common import DUCKDB_POOL
from fitsync.warehouse import db
from fitsync.warehouse.purge import purge_athlete

from .resources import FitsyncApi

STATE_TABLES = ("athletes", "sync_cursors", "known_activities", "known_segments", "landing", "webhook_deletions")


class PurgeConfig(Config):
    athlete_id: int


def forget_athlete_state(client, athlete_id: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Tokens, cursors, queues and landed data of the athlete, in one state-store transaction."""
    with client.store.transaction() as conn:
        return {t: conn.execute(f"DELETE FROM {t} WHERE athlete_id = ?", (athlete_id,)).rowcount for t in STATE_TABLES}


@op(pool=DUCKDB_POOL)
def purge_athlete_data(context: OpExecutionContext, config: PurgeConfig, fitsync_api: FitsyncApi,
                       duckdb_warehouse: DuckDBResource) -> None:
    state = forget_athlete_state(fitsync_api.client(), config.athlete_id)
    db.migrate(duckdb_warehouse.database)
    with duckdb_warehouse.get_connection() as conn:
        rows = purge_athlete(conn, config.athlete_id)
    context.log.info(f"purged athlete {config.athlete_id} after deauthorization: warehouse rows {rows}; state rows {state}")


@job(description="Remove an athlete's tokens, state and warehouse data after they revoked fitsync's access.")
def purge_athlete_job() -> None:
    purge_athlete_data()
