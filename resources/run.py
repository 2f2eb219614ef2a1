"""What every sync asset shares: run config, pools, tags, the rate class of a run, and run metadata."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from dagster import Config, MetadataValue

from fitsync.client.runtime import FitsyncClient
from fitsync.resources.partitions import athlete_id
from fitsync.state.store import StateStore
from fitsync.sync import first_steps, steps
from fitsync.sync.cadence import REFRESH_TAG
from fitsync.sync.steps import (  # noqa: F401 (the assets and commands import them from here)
    DETAIL_CHUNK,
    ENDPOINT_CALLS,
    LEFT_OUT,
    WRONG_ANSWER,
    Markdown,
    Step,
)
from fitsync.warehouse import db

API_POOL = "fitsync_api"
DUCKDB_POOL = "fitsync_duckdb"
# Before any other step ready at the same time: the listing, then loading its summaries, so the warehouse
# answers from summaries before the details start to wait for the rate budget.
FIRST = {"dagster/priority": "10"}
# After every other step ready at the same time: the efforts on starred segments page through each segment's whole
# history, which would otherwise spend a first window's budget before the newest activities' details.
LAST = {"dagster/priority": "-10"}


class SyncConfig(Config):
    """Run config shared by the sync assets."""

    full: bool = False  # list every activity and reconcile (finds deletions that no webhook announced)
    activity_ids: list[int] = []  # webhook-driven: re-pull only these activities
    deleted_ids: list[int] = []  # webhook-driven: these were deleted (or made Only You for a read-only grant)
    allow_shrink: bool = False  # --full may delete more than the reconciliation guard allows (activities.py)


class Meter(steps.Meter):
    """A step's meter whose metadata is Dagster's."""

    def metadata(self, **extra: Any) -> dict[str, Any]:
        return dagster_metadata(self.plain(**extra))


def dagster_metadata(plain: dict[str, Any]) -> dict[str, Any]:
    """A step's plain metadata (sync/steps.py) as Dagster shows it: Markdown as Markdown, dicts and lists as JSON."""
    return {
        key: MetadataValue.md(str(value))
        if isinstance(value, Markdown)
        else MetadataValue.json(value)
        if isinstance(value, dict | list)
        else value
        for key, value in plain.items()
    }


def load_notice(context: Any) -> Callable[[str], None]:
    """Why a warehouse load waits (another process holds the file), said in the run's log (`context.log`) and
    fitsync's (a sync at a terminal shows it)."""

    def say(message: str) -> None:
        context.log.warning(message)
        db.log.warning(message)

    return say


def metered(client: FitsyncClient) -> contextlib.AbstractContextManager[Meter]:
    """A Meter counting the client's calls while the block runs."""
    return steps.metered(client, Meter)


WEBHOOK_TAG = "fitsync/trigger"


def is_webhook_run(context: Any) -> bool:
    """Webhook-driven re-pulls may use the reserve of the rate budget that backfills leave free."""
    return context.run.tags.get(WEBHOOK_TAG) == "webhook"


PRIORITY_TAG = "fitsync/priority"  # a run's class for the rate governor, when it is not the usual one


def priority(context: Any, store: StateStore, aid: int) -> str:
    """The rate governor's class for this run's calls (steps.rate_class), from the run's tags."""
    return steps.rate_class(context.run.tags.get(PRIORITY_TAG), is_webhook_run(context), store, aid)


def refreshes_all(context: Any) -> bool:
    """The run refreshes what changes slowly whatever its cadence (sync/cadence.py): the nightly sync, `--full`."""
    return context.run.tags.get(REFRESH_TAG) == "all"


def step_of(context: Any, api: Any) -> Step:
    """The Dagster-free step (sync/steps.py) this asset's context describes."""
    client = api.client()
    aid = athlete_id(context.partition_key)
    return Step(
        aid,
        lambda: priority(context, client.store, aid),
        api.max_wait_seconds,
        refreshes_all(context),
        lambda level, message: getattr(context.log, level)(message),
    )


def adopted(context: Any, name: str) -> first_steps.Done | None:
    """The step `name` as `fitsync sync` did it before this run (sync/first_steps.py), its log lines said here and
    what it raised raised again; None: the step does its work."""
    done = first_steps.adopt(context.run.run_id, name)
    if done is not None:
        for level, message in done.logs:
            getattr(context.log, level)(message)
        if done.error is not None:
            raise done.error
    return done
