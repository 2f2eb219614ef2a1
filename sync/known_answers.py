"""Answers `fitsync sync` already holds when its run's first steps begin: the profile and the incremental listing its
"nothing new" check asked for (pipelines/nothing_new.py) and found changed. The first steps (sync/first_steps.py) take
them once instead of asking the service the same two questions again a moment later."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fitsync.client.records import Record


@dataclass
class Known:
    profile: Record
    after: int  # the incremental listing's `after`
    listing: list[Record] | None  # its whole answer, every page, as the client read it (None: not asked)
    used: set[str] = field(default_factory=set)


@dataclass
class Answering:
    """A session that answers from `known` first (each answer once), and asks the service for anything else."""

    session: Any
    known: Known

    def athlete(self) -> Record:
        if "profile" in self.known.used:
            return self.session.athlete()
        self.known.used.add("profile")
        return self.known.profile

    def activities(self, *, after: int | None = None, **kwargs: Any) -> Iterator[Record]:
        if kwargs or after != self.known.after or self.known.listing is None or "listing" in self.known.used:
            return self.session.activities(after=after, **kwargs)
        self.known.used.add("listing")
        return iter(self.known.listing)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)
