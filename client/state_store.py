"""fitsync's state: tokens, rate ledger, sync cursors and the webhook inbox, in SQLite (WAL).

SQLite, not the DuckDB warehouse: many processes (runs, sensors, the CLI, the webhook receiver) write here
at once, and DuckDB allows a single writing process. `BEGIN IMMEDIATE` is the cross-process lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Config

# Numbered migrations; PRAGMA user_version records how many have run.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE athletes (
        athlete_id INTEGER PRIMARY KEY,
        firstname TEXT,
        lastname TEXT,
        scopes TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('connected', 'needs_reauth', 'disconnected')),
        status_reason TEXT,
        access_token BLOB,
        access_expires_at INTEGER,
        refresh_token BLOB,
        connected_at REAL NOT NULL,
        granted_at REAL NOT NULL,         -- the current grant's consent: older deauthorizations do not apply
        updated_at REAL NOT NULL
    );
    CREATE TABLE rate_ledger (
        window_kind TEXT NOT NULL CHECK (window_kind IN ('short', 'long')),
        budget TEXT NOT NULL CHECK (budget IN ('read', 'overall')),
        window_start INTEGER NOT NULL,
        used INTEGER NOT NULL,
        limit_value INTEGER NOT NULL,
        PRIMARY KEY (window_kind, budget)
    );
    CREATE TABLE sync_cursors (
        athlete_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (athlete_id, name)
    );
    CREATE TABLE webhook_inbox (
        id INTEGER PRIMARY KEY,
        dedupe_key TEXT NOT NULL UNIQUE,
        received_at REAL NOT NULL,
        payload TEXT NOT NULL,
        processed_at REAL
    );
    CREATE TABLE app_state (
        key TEXT PRIMARY KEY,
        value BLOB NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 2: per-athlete sync progress and the landing area between API fetches and warehouse loads.
    """
    CREATE TABLE known_activities (
        athlete_id INTEGER NOT NULL,
        activity_id INTEGER NOT NULL,
        start_ts INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        needs_detail INTEGER NOT NULL,
        needs_zones INTEGER NOT NULL,
        PRIMARY KEY (athlete_id, activity_id)
    );
    CREATE INDEX known_activities_pending ON known_activities (athlete_id, needs_detail, needs_zones);
    CREATE TABLE landing (
        id INTEGER PRIMARY KEY,
        athlete_id INTEGER NOT NULL,
        bundle TEXT NOT NULL,
        payload TEXT NOT NULL,
        context TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX landing_by_athlete ON landing (athlete_id, id);
    CREATE TABLE known_segments (
        athlete_id INTEGER NOT NULL,
        segment_id INTEGER NOT NULL,
        starred INTEGER NOT NULL,
        needs_detail INTEGER NOT NULL,
        efforts_after TEXT,
        PRIMARY KEY (athlete_id, segment_id)
    );
    """,
    # 3: the last create or delete the webhook sensor acted on per activity, so late events are judged by it.
    """
    CREATE TABLE webhook_lifecycle (
        athlete_id INTEGER NOT NULL,
        activity_id INTEGER NOT NULL,
        aspect TEXT NOT NULL CHECK (aspect IN ('create', 'delete')),
        event_time INTEGER NOT NULL,
        PRIMARY KEY (athlete_id, activity_id)
    );
    """,
    # 4: whether the athlete has the paid subscription that activity zones and effort histories need (NULL: not
    # known yet), from the profile's `premium` or a 402, so a non-subscriber's runs do not spend calls on them.
    """
    ALTER TABLE athletes ADD COLUMN subscriber INTEGER;
    """,
    # 5: shapes and values of answers fitsync does not know (kept raw in the warehouse), each reported once.
    """
    CREATE TABLE shape_reports (
        endpoint TEXT NOT NULL,           -- e.g. GET /activities/{id}
        problem TEXT NOT NULL,            -- e.g. unexpected sport_type='Padel'
        first_object TEXT,                -- the id of the first object it was seen on
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        seen INTEGER NOT NULL,
        PRIMARY KEY (endpoint, problem)
    );
    """,
    # 6: what checking an event with the service found: events are hints, anyone can POST one. A delete or a
    # deauthorization acts only on the service's answer; `verdict` says which way it went and why.
    """
    ALTER TABLE webhook_inbox ADD COLUMN verdict TEXT CHECK (verdict IN ('confirmed', 'rejected', 'deferred'));
    ALTER TABLE webhook_inbox ADD COLUMN verdict_reason TEXT;
    """,
    # 7: which of the service's stats totals (ride/run/swim, Everyone activities only) counts each activity, so a
    # sync can tell from the stats that the service has activities its listings never showed (backdated uploads).
    """
    ALTER TABLE known_activities ADD COLUMN stats_group TEXT;
    """,
    # 8: one app budget, many athletes, by priority (rate_governor.CLASSES): who is waiting for a turn (or was
    # just served and will be back), what each class and each athlete of a class got in the current window.
    """
    CREATE TABLE rate_waiters (
        waiter TEXT PRIMARY KEY,      -- host:pid:thread of a request waiting for its turn
        class TEXT NOT NULL,
        athlete_id INTEGER,
        alive_until REAL NOT NULL,    -- a waiter that crashed stops counting after this
        blocked_until REAL NOT NULL   -- asleep until the budget refills: no rival of requests that can go now
    );
    CREATE TABLE rate_class_usage (
        class TEXT PRIMARY KEY,
        window_start INTEGER NOT NULL,
        used INTEGER NOT NULL
    );
    CREATE TABLE rate_turns (
        class TEXT NOT NULL,
        athlete_id INTEGER NOT NULL,
        window_start INTEGER NOT NULL,
        used INTEGER NOT NULL,        -- calls granted to the athlete's class work in that 15-minute window
        last_granted REAL NOT NULL,
        PRIMARY KEY (class, athlete_id)
    );
    """,
)


class AthleteBusy(Exception):
    def __init__(self, athlete_id: int, owner: str) -> None:
        self.athlete_id, self.owner = athlete_id, owner
        super().__init__(
            f"athlete {athlete_id} is being synced by {owner or 'another process'}: skipped (it continues there)"
        )


class StateStore:
    """One SQLite file shared by every fitsync process on this machine (the default); state_postgres.py is the same
    store on PostgreSQL, for several hosts."""

    dialect = "sqlite"
    # What a failed read or write of the store raises (a full disk, a lock held too long).
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.path.parent, 0o700)
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
        os.chmod(self.path, 0o600)
        self._migrate()

    def describe(self) -> str:
        """Where the state is (for messages)."""
        return str(self.path)

    def connect(self, wait: float = 60.0) -> sqlite3.Connection:
        """A connection whose writes wait up to `wait` seconds for another process's write transaction."""
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=wait, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")  # a rotated refresh token must survive a power cut
        return conn

    @contextlib.contextmanager
    def transaction(self, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """An IMMEDIATE transaction: holds the write lock, so read-check-write is atomic across processes."""
        own = conn is None
        conn = conn or self.connect()
        try:
            self.begin_write(conn)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if own:
                conn.close()

    @contextlib.contextmanager
    def athlete_lock(self, athlete_id: int) -> Iterator[None]:
        """One sync per athlete at a time across processes (two would fetch the same queue twice). Here an advisory
        `flock` on `<home>/locks/athlete-<id>.lock`: the kernel releases it when the process ends, however it ends,
        so a killed sync never leaves a stale lock. The file holds the owner's pid for the message."""
        folder = self.path.parent / "locks"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / f"athlete-{athlete_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(fd, 32, 0).decode(errors="replace").strip()
                raise AthleteBusy(athlete_id, f"process {owner}" if owner else "") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)

    def usable(self, conn: sqlite3.Connection) -> bool:
        """Whether a connection that raised can still be used (a file connection always can)."""
        return True

    def begin_write(self, conn: sqlite3.Connection) -> None:
        """Start a transaction holding the store's write lock."""
        conn.execute("BEGIN IMMEDIATE")

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        conn = self.connect()
        try:
            yield conn
        finally:
            conn.close()

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise RuntimeError(f"{self.path} was written by a newer fitsync (schema {version})")
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

    @property
    def schema_version(self) -> int:
        with self.reading() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])


def open_store(config: Config) -> StateStore:
    """The configured state store: PostgreSQL when `state_url` names one, else the SQLite file in the home."""
    url = config.state_url.reveal()
    if url and not url.startswith(("postgresql://", "postgres://")):
        from .config import ConfigError

        raise ConfigError(
            "state_url (FITSYNC_STATE_URL) must be a postgresql://user:password@host/database address, "
            "or empty for the SQLite file in the home"
        )
    config.home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(config.home, 0o700)  # tokens' key, landed JSON, the warehouse: the owner's only
    if url:
        from .state_postgres import PostgresStateStore  # psycopg only where a server is used

        return PostgresStateStore(url, retry_seconds=config.state_retry_seconds)
    return StateStore(config.state_path)
