"""A sync step without Dagster: whose it is, its rate class, where its log lines go, and what it reports (`Meter`).

The run's assets build a `Step` from their context (resources/run.py); `fitsync sync` builds one to do the first
steps before Dagster is loaded (sync/first_steps.py). Either way the same functions do the work and report the same
metadata, as plain values: `Markdown` marks the text a UI shows as Markdown.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from fitsync.client.rate_governor import CLASSES
from fitsync.client.runtime import FitsyncClient
from fitsync.state.store import StateStore

from . import progress

DETAIL_CHUNK = 25
BACKFILL_BACKLOG = 2 * DETAIL_CHUNK  # details still to fetch above which an athlete's sync is a backfill

# Run metadata a command reads to say how a run went (pipelines/sync_runner.SyncOutcome): an answer of the wrong shape
# (nothing of it stored: the step's work failed) and what the service sent that was left out of the warehouse
# (implausible values, rows without an id: the run is not "ok").
WRONG_ANSWER = "wrong_answer"
LEFT_OUT = "left_out"

# Calls per endpoint ("GET /activities/{id}/zones": the path after the API root, ids as {id}), counted as they are
# sent: a step that fetches for another asset's table (the details step fetches each activity's zones) says so, and a
# command sums them per asset honestly.
ID_PART = re.compile(r"/\d+(?=/|$)")
ENDPOINT_CALLS = "api_calls_by_endpoint"


class Markdown(str):
    """Metadata text a UI shows as Markdown (Dagster's MetadataValue.md)."""


@dataclass(frozen=True)
class Step:
    """What a step's work needs of its run: the athlete, the rate class of its calls, how long a call may wait for the
    budget, whether the run refreshes what changes slowly whatever its cadence, and where its log lines go."""

    aid: int
    priority: Callable[[], str]  # asked at each session: the listing can turn a backfill into an incremental sync
    max_wait: float
    refresh_all: bool
    log: Callable[[str, str], None]  # (level: "info" or "warning", message)
    # the step's session as it asks: answers the command already holds come first (sync/known_answers.py)
    answering: Callable[[Any], Any] = lambda session: session


def rate_class(asked: str | None, webhook: bool, store: StateStore, aid: int) -> str:
    """The rate governor's class for a run's calls: asked for (`fitsync sync --athlete`: interactive), a webhook's
    re-pull, an athlete with history still to fetch (backfill), else an incremental sync."""
    if asked in CLASSES:
        return str(asked)
    if webhook:
        return "webhook"
    if (
        progress.get_cursor(store, aid, progress.LISTED_AFTER) is None
        or progress.count_needing(store, aid, "detail") > BACKFILL_BACKLOG
    ):
        return "backfill"
    return "incremental"


def endpoint(request: httpx.Request, root: str = "") -> str:
    """`METHOD /path` with ids as {id}, the API root's path (`root`, e.g. /api/v3) left off."""
    path = request.url.path
    path = path[len(root) :] if root and path.startswith(root + "/") else path
    return f"{request.method} {ID_PART.sub('/{id}', path)}"


@dataclass
class Meter:
    """API calls (in all and per endpoint) and budget for run metadata."""

    client: FitsyncClient
    start_calls: int = 0
    by_endpoint: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    stopped_early: str | None = None
    wrong: dict[str, list[str]] = field(default_factory=dict)  # each problem → the records that had it
    left: list[str] = field(default_factory=list)

    def budget_spent(self, note: str) -> None:
        """The rate budget ran out before the work did: noted, and flagged so a command can exit "partial"."""
        self.notes.append(note)
        self.stopped_early = note

    def wrong_answer(self, endpoint: str, problem: str, about: str = "") -> None:
        """The service answered something that is not what the endpoint answers: kept raw by the caller, nothing of it
        stored or marked done; the run fails for this athlete (the other steps go on). `about`: the record asked for
        (said once per problem, with the others that had it)."""
        line = f"{endpoint} answered {problem}: kept raw in unrecognized_payloads, nothing stored"
        self.wrong.setdefault(line, []).append(about)

    def left_out(self, line: str) -> None:
        """Part of an answer that could not be read and was left out (kept raw by the caller): the rest goes on."""
        self.left.append(line)

    @property
    def calls(self) -> int:
        return self.client.transport.calls - self.start_calls

    def plain(self, **extra: Any) -> dict[str, Any]:
        """The step's metadata as plain values (dicts are JSON, `Markdown` is Markdown)."""
        budget = {f"{b.window} {b.budget}": f"{b.used}/{b.limit}" for b in self.client.governor.snapshot()}
        out: dict[str, Any] = {
            "api_calls": self.calls,
            ENDPOINT_CALLS: dict(sorted(self.by_endpoint.items())),
            "rate_budget": budget,
            "seconds": round(time.monotonic() - self.started, 2),
        }
        if self.notes:
            out["notes"] = Markdown("\n".join(f"- {n}" for n in self.notes))
        if self.stopped_early:
            out["stopped_early"] = self.stopped_early
        if self.wrong:  # each problem once, with the records that had it
            kinds = [_with_records(line, abouts) for line, abouts in self.wrong.items()]
            more = f"; and {len(kinds) - 3} more kinds of wrong answer" if len(kinds) > 3 else ""
            out[WRONG_ANSWER] = "; ".join(kinds[:3]) + more
        if self.left:
            out[LEFT_OUT] = Markdown("\n".join(f"- {line}" for line in self.left))
        out.update(extra)
        return out


def _with_records(line: str, abouts: list[str]) -> str:
    """A wrong answer's line, with the records that had it: "(3 answers: activity 1, activity 2, activity 3)"."""
    named = [a for a in abouts if a]
    if len(abouts) == 1:
        return f"{line} ({named[0]})" if named else line
    shown = ", ".join(named[:5]) + (", …" if len(named) > 5 else "")
    return f"{line} ({len(abouts)} answers{': ' + shown if shown else ''})"


M = TypeVar("M", bound=Meter)


@contextlib.contextmanager
def metered(client: FitsyncClient, kind: type[M]) -> Iterator[M]:
    """A meter counting the client's calls while the block runs (per endpoint through httpx's request hook)."""
    meter = kind(client, client.transport.calls)
    root = urlsplit(str(client.config.base_url)).path.rstrip("/")

    def sent(request: httpx.Request) -> None:
        meter.by_endpoint[endpoint(request, root)] += 1

    hooks = client.transport.http.event_hooks
    hooks["request"].append(sent)
    try:
        yield meter
    finally:
        hooks["request"].remove(sent)
