"""What every sync asset shares: run config, pools, tags, the rate class of a run, and run metadata."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dagster import Config, MetadataValue

from fitsync.client.rate_governor import CLASSES
from fitsync.client.runtime import FitsyncClient
from fitsync.state.store import StateStore
from fitsync.sync import progress

API_POOL = "fitsync_api"
DUCKDB_POOL = "fitsync_duckdb"
DETAIL_CHUNK = 25
# Before any other step ready at the same time: the listing, then loading its summaries, so the warehouse
# answers from summaries before the details start to wait for the rate budget.
FIRST = {"dagster/priority": "10"}


class SyncConfig(Config):
    """Run config shared by the sync assets."""

    full: bool = False  # list every activity and reconcile (finds deletions that no webhook announced)
    activity_ids: list[int] = []  # webhook-driven: re-pull only these activities
    deleted_ids: list[int] = []  # webhook-driven: these were deleted (or made Only You for a read-only grant)
    allow_shrink: bool = False  # --full may delete more than the reconciliation guard allows (activities.py)


# Run metadata a command reads to say how a run went (pipelines/sync_runner.SyncOutcome): an answer of the wrong shape
# (nothing of it stored: the step's work failed) and what the service sent that was left out of the warehouse
# (implausible values, rows without an id: the run is not "ok").
WRONG_ANSWER = "wrong_answer"
LEFT_OUT = "left_out"


@dataclass
class Meter:
    """API calls and budget for run metadata."""

    client: FitsyncClient
    start_calls: int = 0
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    stopped_early: str | None = None
    wrong: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def budget_spent(self, note: str) -> None:
        """The rate budget ran out before the work did: noted, and flagged so a command can exit "partial"."""
        self.notes.append(note)
        self.stopped_early = note

    def wrong_answer(self, endpoint: str, problem: str) -> None:
        """The service answered something that is not what the endpoint answers: kept raw by the caller, nothing of it
        stored or marked done; the run fails for this athlete (the other steps go on)."""
        self.wrong.append(f"{endpoint} answered {problem}: kept raw in unrecognized_payloads, nothing stored")

    def left_out(self, line: str) -> None:
        """Part of an answer that could not be read and was left out (kept raw by the caller): the rest goes on."""
        self.left.append(line)

    @property
    def calls(self) -> int:
        return self.client.transport.calls - self.start_calls

    def metadata(self, **extra: Any) -> dict[str, Any]:
        budget = {f"{b.window} {b.budget}": f"{b.used}/{b.limit}" for b in self.client.governor.snapshot()}
        out: dict[str, Any] = {
            "api_calls": self.calls,
            "rate_budget": MetadataValue.json(budget),
            "seconds": round(time.monotonic() - self.started, 2),
        }
        if self.notes:
            out["notes"] = MetadataValue.md("\n".join(f"- {n}" for n in self.notes))
        if self.stopped_early:
            out["stopped_early"] = self.stopped_early
        if self.wrong:
            more = f"; and {len(self.wrong) - 3} more such answers" if len(self.wrong) > 3 else ""
            out[WRONG_ANSWER] = "; ".join(self.wrong[:3]) + more
        if self.left:
            out[LEFT_OUT] = MetadataValue.md("\n".join(f"- {line}" for line in self.left))
        out.update(extra)
        return out


@contextlib.contextmanager
def metered(client: FitsyncClient) -> Iterator[Meter]:
    yield Meter(client, client.transport.calls)


WEBHOOK_TAG = "fitsync/trigger"


def is_webhook_run(context: Any) -> bool:
    """Webhook-driven re-pulls may use the reserve of the rate budget that backfills leave free."""
    return context.run.tags.get(WEBHOOK_TAG) == "webhook"


PRIORITY_TAG = "fitsync/priority"  # a run's class for the rate governor, when it is not the usual one
BACKFILL_BACKLOG = 2 * DETAIL_CHUNK  # details still to fetch above which an athlete's sync is a backfill


def priority(context: Any, store: StateStore, aid: int) -> str:
    """The rate governor's class for this run's calls: asked for (`fitsync sync --athlete`: interactive), a
    webhook's re-pull, an athlete with history still to fetch (backfill), else an incremental sync."""
    asked = context.run.tags.get(PRIORITY_TAG)
    if asked in CLASSES:
        return str(asked)
    if is_webhook_run(context):
        return "webhook"
    if (
        progress.get_cursor(store, aid, progress.LISTED_AFTER) is None
        or progress.count_needing(store, aid, "detail") > BACKFILL_BACKLOG
    ):
        return "backfill"
    return "incremental"
