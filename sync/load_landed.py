"""Loading what the fetch steps landed into the warehouse: in order, one transaction per batch, each batch removed from
the landing area once its transaction has committed — at the end of a run (the warehouse assets), and while a fetch
step still runs (`WhileFetching`), so that what was fetched is queryable long before a run under the real limits ends.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb

from fitsync.state.store import StateStore
from fitsync.sync import landing
from fitsync.warehouse import constraints, db, load_pipeline, loads
from fitsync.warehouse.location import Warehouse

log = logging.getLogger(__name__)


def stage_batch(
    athlete: int, batch: landing.Landed, not_null: constraints.NotNull | None = None
) -> loads.Staged | None:
    """One landed batch parsed into warehouse rows (None for a deletion, which needs the warehouse itself); `not_null`:
    the warehouse's NOT NULL columns (default: the schema the migrations make, loads.stage)."""
    if batch.bundle == "delete_activities":
        return None
    extra: dict[str, Any] = {}
    if batch.bundle == "activity_zones":
        extra["activity_ids"] = [_activity_id(text) for text in batch.texts]
    if batch.issues is not None:  # a detail is checked as its summary was (landing.CHECKED)
        extra["issues"] = batch.issues
    frame = loads.frame(batch.texts, athlete_id=athlete, **extra)
    return loads.stage(batch.bundle, frame, parents=batch.context.get("replace_parents"), not_null=not_null)


# How the details step lands an activity's zones, compactly (sync/details.py, landing._compact): its id first.
_ZONES_OF = re.compile(r'\{"activity_id":(-?\d+)[,}]')


def _activity_id(zones: str) -> Any:
    """The activity a landed zones object is of: read off the text's start (parsing 500 objects for it took ≈ 9 ms of
    a zones batch's ≈ 25), or from the parsed object where it starts otherwise."""
    found = _ZONES_OF.match(zones)
    return int(found.group(1)) if found else json.loads(zones)["activity_id"]


def write_batch(
    conn: duckdb.DuckDBPyConnection, athlete: int, batch: landing.Landed, staged: loads.Staged | None
) -> dict[str, int]:
    """Write one staged batch (or apply a landed deletion) in its own transaction."""
    if staged is not None:
        return loads.write(conn, staged)
    removed = 0
    for item in batch.payloads:
        removed += loads.delete_activities(conn, item["ids"], item["reason"], athlete_id=athlete)
    return {"deleted_activities": removed}


def apply_batch(conn: duckdb.DuckDBPyConnection, athlete: int, batch: landing.Landed) -> dict[str, int]:
    """Turn one landed batch into warehouse rows."""
    return write_batch(conn, athlete, batch, stage_batch(athlete, batch))


@dataclass
class Loaded:
    """What applying the landed batches did: rows written per table, and what was left out of them."""

    batches: int = 0
    written: dict[str, int] = field(default_factory=dict)
    # rows left out per table for a value their table requires (an id) missing: their JSON stays in the documents
    left_out: dict[str, int] = field(default_factory=dict)
    # values refused as implausible (warehouse/plausible.py): (table, the row's key, "column=value; …")
    rejected: list[tuple[str, tuple[Any, ...], str]] = field(default_factory=list)

    def add(self, written: dict[str, int], staged: loads.Staged | None) -> None:
        self.batches += 1
        for table, rows in written.items():
            self.written[table] = self.written.get(table, 0) + rows
        if staged is not None:
            for table, rows in staged.left_out.items():
                self.left_out[table] = self.left_out.get(table, 0) + rows
            self.rejected += staged.rejected

    def problems(self, aid: int, shown: int = 3) -> list[str]:
        """One line per kind of thing left out, naming the athlete, the first few rows and where the JSON is."""
        lines = []
        by_table: dict[str, list[str]] = {}
        for table, key, text in self.rejected:
            by_table.setdefault(table, []).append(f"{'/'.join(map(str, key))} ({text})")
        for table, rows in sorted(by_table.items()):
            more = f" and {len(rows) - shown} more" if len(rows) > shown else ""
            lines.append(
                f"athlete {aid}: {len(rows)} {table} row(s) with implausible values: those values were not stored "
                f"(each keeps the value it had, none in a new row; the JSON as received is kept): "
                f"{'; '.join(rows[:shown])}{more}"
            )
        if self.left_out:
            lines.append(
                f"athlete {aid}: "
                + ", ".join(f"{n} {t} row(s)" for t, n in sorted(self.left_out.items()))
                + " left out of the warehouse: a value their table requires (an id) is missing or not a "
                "number in what the service sent (a detailed activity's JSON is kept whole in "
                "activity_documents)"
            )
        return lines


def load_landed(
    store: StateStore,
    aid: int,
    database: Warehouse,
    notice: Callable[[str], None],
    report: Callable[[str], None],
    timeout: float = db.WRITE_WAIT,
    loaded: Loaded | None = None,
) -> Loaded:
    """Apply every batch landed for the athlete, in order, into `loaded` (a new one by default); why a writer waits is
    said to `notice`, what was left out to `report`.

    The next batch is read and parsed on a worker thread while this one is written (load_pipeline.ahead), and one write
    connection, which first makes the schema current, serves consecutive batches for up to a second
    (load_pipeline.write_held); each batch is removed from the landing area once its transaction has committed, so a
    load cut short (a kill, the file held by another process past `timeout`) leaves the rest landed for the next one.
    """
    loaded = loaded if loaded is not None else Loaded()
    if not landing.count(store, aid):
        return loaded
    before = len(loaded.rejected), dict(loaded.left_out)

    def write_one(conn: duckdb.DuckDBPyConnection, item: tuple[landing.Landed, loads.Staged | None]) -> None:
        batch, staged = item
        loaded.add(write_batch(conn, aid, batch, staged), staged)
        landing.remove(store, batch.ids)

    # A file's NOT NULL columns are read from its write connection, once migrated (1 ms), before the first batch is
    # staged: constraints.migrated() would run every migration on an in-memory database first (≈ 0.25 s, once per
    # process). A lake's are the migrations' (its catalog is not asked).
    schema: list[constraints.NotNull] = []
    staged = load_pipeline.ahead(
        (batch, stage_batch(aid, batch, schema[0] if schema else None)) for batch in landing.pending(store, aid)
    )
    load_pipeline.write_held(
        database,
        staged,
        write_one,
        notice=notice,
        timeout=timeout,
        migrated=True,
        opened=None if database.is_lake else lambda conn: schema.append(constraints.not_null(conn)),
    )
    if (len(loaded.rejected), loaded.left_out) != before:
        this_load = Loaded(rejected=loaded.rejected[before[0] :], left_out=_minus(loaded.left_out, before[1]))
        for line in this_load.problems(aid):
            report(line)
    return loaded


def _minus(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {t: n - before.get(t, 0) for t, n in now.items() if n - before.get(t, 0)}


# A fetch step loads what it landed before every wait for the budget of LONG_WAIT or more (rate_governor), and at
# least every EVERY_DETAILS activities fetched or EVERY_SECONDS: under the real limits (100 reads per 15 minutes) the
# newest activities are queryable minutes after they were fetched, not when the run ends hours later.
EVERY_DETAILS = 100
EVERY_SECONDS = 60.0
# How long a load during fetching waits for another process's hold on a warehouse file (another athlete's load, an
# analyst's session) before leaving its batches landed for a later load: the fetching goes on meanwhile.
WAIT_FOR_FILE = 10.0


@dataclass
class WhileFetching:
    """Loads of what one fetch step landed, made while it runs; what they did, for the step's metadata."""

    store: StateStore
    aid: int
    database: Warehouse
    notice: Callable[[str], None]  # why a load waits, and why it was left for later
    report: Callable[[str], None]  # what a load left out
    clock: Callable[[], float] = time.monotonic
    time_scale: float = 1.0  # the rate governor's: EVERY_SECONDS shrinks with windows shortened for a benchmark
    loaded: Loaded = field(default_factory=Loaded)
    loads: int = 0
    deferred: list[str] = field(default_factory=list)  # why a load was left for later
    _fetched: int = 0
    _last: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._last = self.clock()

    def fetched(self, activities: int) -> None:
        """After a chunk was landed: load if enough was fetched, or enough time went by, since the last load."""
        self._fetched += activities
        if self._fetched >= EVERY_DETAILS or self.clock() - self._last >= EVERY_SECONDS * self.time_scale:
            self.load()

    def before_wait(self, seconds: float) -> None:
        """The budget makes the step wait `seconds`: load what was fetched meanwhile."""
        if self._fetched:
            self.load(f"before waiting {seconds:.0f} s for the rate budget")

    def load(self, why: str = "") -> None:
        """Load what is landed now; never raises: what a load could not take stays landed for the next one."""
        self._fetched, self._last = 0, self.clock()
        try:
            batches = self.loaded.batches
            load_landed(
                self.store, self.aid, self.database, self.notice, self.report, WAIT_FOR_FILE, loaded=self.loaded
            )
            if self.loaded.batches > batches:
                self.loads += 1
                log.info("athlete %s: %d landed batches loaded %s", self.aid, self.loaded.batches - batches, why)
        except Exception as error:  # noqa: BLE001 (the warehouse step meets the same batch at the run's end, and fails there)
            self._fetched = 1  # still something to load: before the next wait, or EVERY_SECONDS from now
            self.deferred.append(f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")
            self.notice(
                f"athlete {self.aid}: what was fetched so far could not be loaded yet (it stays landed and is "
                f"loaded later in this run): {self.deferred[-1]}"
            )

    def metadata(self) -> dict[str, Any]:
        return {
            "loads_while_fetching": self.loads,
            "batches_loaded_while_fetching": self.loaded.batches,
            **({"loads_deferred": len(self.deferred)} if self.deferred else {}),
        }
