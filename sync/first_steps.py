"""`fitsync sync`'s first steps — the profile, stats and zones, the listing, and its summaries' load — done before
Dagster is loaded, then adopted by the run's steps of the same names.

A first sync's summaries are what a person waits for, and Dagster costs ≈ 2 s before its first step (its import and
fitsync's definitions, the run's creation, each step's events). So the command does these five steps itself, with
the same functions the assets call, and hands each outcome to the run it then starts in this process
(`execute_in_process`) under the run's id: the run's step finds it (`adopt`) and reports it as its own — the same
metadata, log lines, failure and check — without a call. The asset graph shows the same materializations, in the same
run. A step that raised here (an error it does not handle itself) fails in the run with that error, and the steps
after it that depend on it are skipped there, as Dagster would; runs the daemon launches do every step themselves.
The command does them only while no run of the daemon syncs the athlete (pipelines/daemon_runs.py) and under the
athlete's lock; one the daemon starts meanwhile is met when the run would start (`busy`), what was done kept.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fitsync.client.runtime import FitsyncClient
from fitsync.state import landing as landed
from fitsync.warehouse import db
from fitsync.warehouse.location import Warehouse

from . import athlete_bundles, load_landed, steps
from .known_answers import Answering, Known
from .listing_step import Listed, list_and_reconcile

log = logging.getLogger(__name__)


@dataclass
class Done:
    """A first step's outcome, as its asset reports it."""

    logs: list[tuple[str, str]] = field(default_factory=list)  # (level, message), said again in the run's log
    metadata: dict[str, Any] = field(default_factory=dict)  # plain (sync/steps.py)
    listed: Listed | None = None  # the listing's step
    loaded: load_landed.Loaded | None = None  # the summaries' load, and the batches an earlier run had fetched
    earlier: int = 0
    error: Exception | None = None  # what the step raised: its step in the run fails with it, as it would have there


# The first steps' upstreams among them (the assets' deps): a step whose upstream failed is skipped in the run.
UPSTREAM = {"activities": {"athlete_stats", "athlete_zones"}, "activity_summaries": {"activities"}}

_done: dict[str, dict[str, Done]] = {}
_lock = threading.Lock()


def adopt(run_id: str, name: str) -> Done | None:
    """The outcome of step `name` done before the run `run_id`, once; None: the run does the step itself."""
    with _lock:
        return _done.get(run_id, {}).pop(name, None)


def forget(run_id: str) -> None:
    """The run will not start (the athlete is busy elsewhere): its steps' outcomes go."""
    with _lock:
        _done.pop(run_id, None)


def run(
    client: FitsyncClient,
    aid: int,
    where: Warehouse,
    *,
    run_id: str,
    full: bool,
    allow_shrink: bool,
    max_wait: float,
    priority: str | None,
    schema: Callable[[], None] = lambda: None,
    starting: Callable[[str], None] = lambda name: None,
    known: Known | None = None,
) -> list[str]:
    """Do the first steps for the run `run_id`, in the run's order; the names of those done. `schema`: waited for
    before the load (a new warehouse's migrations, made meanwhile); `starting`: told each step's name as it starts;
    `known`: the check's answers, taken instead of asking again."""
    started = time.time()
    with _lock:
        done = _done.setdefault(run_id, {})

    def step(logs: list[tuple[str, str]]) -> steps.Step:
        return steps.Step(
            aid,
            lambda: steps.rate_class(priority, False, client.store, aid),
            max_wait,
            full,
            lambda level, message: logs.append((level, message)),
            (lambda session: Answering(session, known)) if known is not None else lambda session: session,
        )

    def holds() -> bool:
        return db.holds_athlete(where, aid)

    def summaries(outcome: Done) -> None:
        def warn(message: str) -> None:
            outcome.logs.append(("warning", message))

        def notice(message: str) -> None:  # why the load waits: said now too (a sync at a terminal shows it)
            db.log.warning(message)
            warn(message)

        schema()
        outcome.earlier = landed.count_older(client.store, aid, started)
        outcome.loaded = load_landed.load_landed(client.store, aid, where, notice, warn)

    def bundle(name: str) -> Callable[[Done], None]:
        def fetch(outcome: Done) -> None:
            outcome.metadata = athlete_bundles.fetch(step(outcome.logs), client, name, holds)

        return fetch

    def listing(outcome: Done) -> None:
        outcome.listed = list_and_reconcile(step(outcome.logs), client, where, full=full, allow_shrink=allow_shrink)

    work = [
        *((name, bundle(name)) for name in athlete_bundles.BUNDLES),
        ("activities", listing),
        ("activity_summaries", summaries),
    ]
    failed: set[str] = set()
    for name, do in work:
        if failed & UPSTREAM.get(name, set()):
            continue  # the run skips it (an upstream step failed), as always
        outcome = Done()
        starting(name)
        try:
            do(outcome)
        except KeyboardInterrupt:  # a stop (client/stop_request.py): what is done is recorded; the command says so
            raise
        except Exception as error:  # noqa: BLE001 (the run's step fails with it: its failure is said there)
            log.debug("athlete %s: %s before the run: %s", aid, name, error)
            outcome.error = error
        if outcome.error is not None or (outcome.listed is not None and outcome.listed.refusal):
            failed.add(name)
        with _lock:
            done[name] = outcome
    return list(done)
