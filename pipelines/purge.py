"""The purge after a deauthorization: the athlete's state and warehouse rows go, with counts in the log."""

import datetime as dt
import json
import os
import shutil

from dagster import Config, OpExecutionContext, job, op

from fitsync.assets.analysis import output_dir
from fitsync.client.runtime import FitsyncClient
from fitsync.resources.api import FitsyncApi
from fitsync.resources.run import DUCKDB_POOL
from fitsync.resources.warehouse import warehouse_of
from fitsync.state import athletes as athlete_rows
from fitsync.warehouse import db
from fitsync.warehouse.purge import purge_athlete

ANALYSIS_OUTPUTS = ("analysis", "reports")


class PurgeConfig(Config):
    athlete_id: int


def forget_athlete_state(client: FitsyncClient, athlete_id: int) -> dict[str, int]:
    """Tokens, cursors, queues and landed data of the athlete, in one state-store transaction."""
    with client.store.transaction() as conn:
        return athlete_rows.purge(conn, athlete_id)


PURGES_LOG = "purges.jsonl"  # in the home: a line per purge (when, whom, why, rows and files removed), never its data


def _logged(
    client: FitsyncClient,
    athlete_id: int,
    why: str,
    state: dict[str, int],
    rows: dict[str, int],
    unfinished: BaseException | None = None,
) -> None:
    line = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "athlete_id": athlete_id, "why": why}
    if unfinished is not None:  # what was removed before it stopped, and how to finish
        line["unfinished"] = (
            f"{type(unfinished).__name__}: {str(unfinished).splitlines()[0][:300] if str(unfinished) else ''}; "
            f"`fitsync disconnect {athlete_id}` finishes it"
        )
    descriptor = os.open(client.config.home / PURGES_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as log:
        log.write(json.dumps({**line, "warehouse": rows, "state": state}) + "\n")


def purge_everything(
    client: FitsyncClient, athlete_id: int, why: str = "deauthorized by the athlete"
) -> tuple[dict[str, int], dict[str, int]]:
    """Warehouse rows and files, then state-store rows, of the athlete: (state counts, warehouse counts).

    Under the athlete's sync lock (AthleteBusy while a sync of theirs runs: one running on would record what it
    fetched after the purge, rows no athlete names). The athlete is marked disconnected first, the state purged last:
    a purge stopped or failed halfway leaves them listed as disconnected (no sync takes them, their data not yet
    gone), and running it again (`fitsync disconnect`, the purge run's retries) finishes it. What was removed is
    logged even then (purges.jsonl, with `unfinished`)."""
    with client.store.athlete_lock(athlete_id):
        with client.store.transaction() as conn:
            athlete_rows.deauthorized(conn, athlete_id, why)
        rows: dict[str, int] = {}
        state: dict[str, int] = {}
        try:
            warehouse = warehouse_of(client.config)
            db.migrate(warehouse)
            with db.writing(warehouse) as conn:
                rows.update(purge_athlete(conn, athlete_id))
            for kind in ANALYSIS_OUTPUTS:  # snapshots and reports made from the athlete's data
                folder = output_dir(client.config.home, kind, athlete_id)
                if folder.exists():
                    shutil.rmtree(folder)
                    rows[f"{kind}_folder"] = 1
            state = forget_athlete_state(client, athlete_id)
        except BaseException as error:
            if rows:
                _logged(client, athlete_id, why, state, rows, unfinished=error)
            raise
        _logged(client, athlete_id, why, state, rows)
    return state, rows


@op(pool=DUCKDB_POOL)
def purge_athlete_data(context: OpExecutionContext, config: PurgeConfig, fitsync_api: FitsyncApi) -> None:
    state, rows = purge_everything(fitsync_api.client(), config.athlete_id)
    context.log.info(
        f"purged athlete {config.athlete_id} after deauthorization: warehouse rows {rows}; state rows {state}"
    )


@job(description="Remove an athlete's tokens, state and warehouse data after they revoked fitsync's access.")
def purge_athlete_job() -> None:
    purge_athlete_data()
