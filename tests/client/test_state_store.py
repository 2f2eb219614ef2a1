"""The state store's own parts (fitsync.state): statements written once for both dialects, the schema they create,
and each repository's key behaviour, on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fitsync.state import app_state, athletes, health, inbox, landing, progress, rate_ledger, shape_reports
from fitsync.state.migrations import MIGRATIONS, statements
from fitsync.state.sql import to_psycopg
from fitsync.state.store import StateStore

from ..conftest import StateUrl


@pytest.fixture
def store(tmp_path: Path, new_state_url: StateUrl) -> StateStore:
    url = new_state_url()
    if not url:
        return StateStore(tmp_path / "state.db")
    from fitsync.state.postgres import PostgresStateStore

    return PostgresStateStore(url)


# placeholders -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = %s AND c = %s"),
        ("SELECT '?', ?", "SELECT '?', %s"),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s"),
        ('SELECT "odd?name" FROM t WHERE x = ?', 'SELECT "odd?name" FROM t WHERE x = %s'),
        ("SELECT ? -- why? because\n, ?", "SELECT %s -- why? because\n, %s"),
        ("SELECT /* ? */ ?", "SELECT /* ? */ %s"),
        ("SELECT $$a ? b$$, $q$?$q$, ?", "SELECT $$a ? b$$, $q$?$q$, %s"),
        ("SELECT '100%' WHERE x LIKE ? AND y = 5 % 2", "SELECT '100%%' WHERE x LIKE %s AND y = 5 %% 2"),
    ],
)
def test_placeholders_become_psycopg_only_outside_literals_identifiers_and_comments(sql: str, expected: str) -> None:
    assert to_psycopg(sql) == expected


@pytest.mark.parametrize("sql", ["SELECT 'open ?", 'SELECT "open', "SELECT /* open ?"])
def test_an_unterminated_literal_is_refused_not_guessed(sql: str) -> None:
    with pytest.raises(ValueError, match="unterminated"):
        to_psycopg(sql)


def test_a_question_mark_and_a_percent_in_a_literal_survive_on_both_stores(store: StateStore) -> None:
    with store.reading() as conn:
        row = conn.execute("SELECT '?' AS mark, '5%' AS share, ? AS given", (7,)).fetchone()
    assert (row["mark"], row["share"], row["given"]) == ("?", "5%", 7)
    with store.transaction() as conn:
        app_state.put(conn, "why?", b"because '?'")
        assert app_state.get(conn, "why?") == b"because '?'"


# the schema -------------------------------------------------------------------------------------------------------

# What fitsync's stores held before the state package (PRAGMA table_info: name, type, not null, key position;
# information_schema.columns: name, type, nullable, identity): the migrations must create exactly this.
SQLITE_SCHEMA = {
    "app_state": [("key", "TEXT", 0, 1), ("value", "BLOB", 1, 0), ("updated_at", "REAL", 1, 0)],
    "athletes": [
        ("athlete_id", "INTEGER", 0, 1),
        ("firstname", "TEXT", 0, 0),
        ("lastname", "TEXT", 0, 0),
        ("scopes", "TEXT", 1, 0),
        ("status", "TEXT", 1, 0),
        ("status_reason", "TEXT", 0, 0),
        ("access_token", "BLOB", 0, 0),
        ("access_expires_at", "INTEGER", 0, 0),
        ("refresh_token", "BLOB", 0, 0),
        ("connected_at", "REAL", 1, 0),
        ("granted_at", "REAL", 1, 0),
        ("updated_at", "REAL", 1, 0),
        ("subscriber", "INTEGER", 0, 0),
    ],
    "known_activities": [
        ("athlete_id", "INTEGER", 1, 1),
        ("activity_id", "INTEGER", 1, 2),
        ("start_ts", "INTEGER", 1, 0),
        ("fingerprint", "TEXT", 1, 0),
        ("needs_detail", "INTEGER", 1, 0),
        ("needs_zones", "INTEGER", 1, 0),
        ("stats_group", "TEXT", 0, 0),
    ],
    "known_segments": [
        ("athlete_id", "INTEGER", 1, 1),
        ("segment_id", "INTEGER", 1, 2),
        ("starred", "INTEGER", 1, 0),
        ("needs_detail", "INTEGER", 1, 0),
        ("efforts_after", "TEXT", 0, 0),
    ],
    "landing": [
        ("id", "INTEGER", 0, 1),
        ("athlete_id", "INTEGER", 1, 0),
        ("bundle", "TEXT", 1, 0),
        ("payload", "TEXT", 1, 0),
        ("context", "TEXT", 1, 0),
        ("created_at", "REAL", 1, 0),
    ],
    "rate_class_usage": [("class", "TEXT", 0, 1), ("window_start", "INTEGER", 1, 0), ("used", "INTEGER", 1, 0)],
    "rate_ledger": [
        ("window_kind", "TEXT", 1, 1),
        ("budget", "TEXT", 1, 2),
        ("window_start", "INTEGER", 1, 0),
        ("used", "INTEGER", 1, 0),
        ("limit_value", "INTEGER", 1, 0),
    ],
    "rate_turns": [
        ("class", "TEXT", 1, 1),
        ("athlete_id", "INTEGER", 1, 2),
        ("window_start", "INTEGER", 1, 0),
        ("used", "INTEGER", 1, 0),
        ("last_granted", "REAL", 1, 0),
    ],
    "rate_waiters": [
        ("waiter", "TEXT", 0, 1),
        ("class", "TEXT", 1, 0),
        ("athlete_id", "INTEGER", 0, 0),
        ("alive_until", "REAL", 1, 0),
        ("blocked_until", "REAL", 1, 0),
    ],
    "shape_reports": [
        ("endpoint", "TEXT", 1, 1),
        ("problem", "TEXT", 1, 2),
        ("first_object", "TEXT", 0, 0),
        ("first_seen", "REAL", 1, 0),
        ("last_seen", "REAL", 1, 0),
        ("seen", "INTEGER", 1, 0),
    ],
    "sync_cursors": [
        ("athlete_id", "INTEGER", 1, 1),
        ("name", "TEXT", 1, 2),
        ("value", "TEXT", 1, 0),
        ("updated_at", "REAL", 1, 0),
    ],
    "webhook_inbox": [
        ("id", "INTEGER", 0, 1),
        ("dedupe_key", "TEXT", 1, 0),
        ("received_at", "REAL", 1, 0),
        ("payload", "TEXT", 1, 0),
        ("processed_at", "REAL", 0, 0),
        ("verdict", "TEXT", 0, 0),
        ("verdict_reason", "TEXT", 0, 0),
    ],
    "webhook_lifecycle": [
        ("athlete_id", "INTEGER", 1, 1),
        ("activity_id", "INTEGER", 1, 2),
        ("aspect", "TEXT", 1, 0),
        ("event_time", "INTEGER", 1, 0),
    ],
}
# PostgreSQL: INTEGER is bigint (ids and epoch times exceed 32 bits), REAL double precision, BLOB bytea, an
# integer key an identity; known_segments has the rowid SQLite gives implicitly; fitsync_schema keeps the version.
PG_TYPES = {"TEXT": "text", "INTEGER": "bigint", "REAL": "double precision", "BLOB": "bytea"}
IDENTITIES = {("athletes", "athlete_id"), ("landing", "id"), ("webhook_inbox", "id")}
POSTGRES_SCHEMA = {
    table: [
        (name, PG_TYPES[kind], "NO" if not_null or key else "YES", "YES" if (table, name) in IDENTITIES else "NO")
        for name, kind, not_null, key in columns
    ]
    for table, columns in SQLITE_SCHEMA.items()
}
POSTGRES_SCHEMA["known_segments"].append(("rowid", "bigint", "NO", "YES"))
POSTGRES_SCHEMA["fitsync_schema"] = [("version", "bigint", "NO", "NO")]
INDEXES = {"known_activities_pending", "landing_by_athlete"}


def schema(store: StateStore) -> tuple[dict[str, list[tuple[object, ...]]], set[str]]:
    """(table → its columns, the named indexes) as the store's own catalogue says."""
    with store.reading() as conn:
        if store.dialect == "sqlite":
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
            columns = {
                t: [tuple(r)[1:4] + tuple(r)[5:6] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables
            }
            indexes = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            }
        else:
            columns = {}
            for t, *column in conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable, is_identity FROM information_schema.columns "
                "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
            ).fetchall():
                columns.setdefault(t, []).append(tuple(column))
            indexes = {
                r[0]
                for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
                if not r[0].endswith(("_pkey", "_key"))
            }
    return columns, indexes


def test_a_fresh_store_has_the_schema_stores_had_before(store: StateStore) -> None:
    columns, indexes = schema(store)
    assert columns == (SQLITE_SCHEMA if store.dialect == "sqlite" else POSTGRES_SCHEMA)
    assert indexes == INDEXES
    assert store.schema_version == len(MIGRATIONS) == 8


def test_a_store_an_older_fitsync_made_migrates_to_the_same_schema(tmp_path: Path, new_state_url: StateUrl) -> None:
    """Version 3 (before subscriber, shape reports, verdicts, stats groups and turns), as that fitsync wrote it."""
    url = new_state_url()
    if url:
        from fitsync.state.postgres import PostgresStateStore

        older: StateStore = PostgresStateStore(url, migrate=False)
        with older.transaction() as conn:
            conn.execute("CREATE TABLE fitsync_schema (version BIGINT NOT NULL)")
            conn.execute("INSERT INTO fitsync_schema (version) VALUES (3)")
            for number in (1, 2, 3):
                for statement in statements(number, "postgresql"):
                    conn.execute(statement)
        opened: StateStore = PostgresStateStore(url)
    else:
        path = tmp_path / "state.db"
        with contextlib.closing(sqlite3.connect(path)) as raw, raw:
            for number in (1, 2, 3):
                for statement in statements(number, "sqlite"):
                    raw.execute(statement)
            raw.execute("PRAGMA user_version = 3")
        opened = StateStore(path)
    assert opened.schema_version == 8
    assert schema(opened)[0] == (SQLITE_SCHEMA if opened.dialect == "sqlite" else POSTGRES_SCHEMA)


# repositories -----------------------------------------------------------------------------------------------------


def test_athletes_grant_tokens_status_and_purge(store: StateStore) -> None:
    with store.transaction() as conn:
        athletes.save_grant(conn, 5, "Ada", None, "read", b"a1", 100, b"r1")
    first = athletes.record(store, 5)
    assert first is not None and (first["firstname"], first["status"], first["access_expires_at"]) == (
        "Ada",
        "connected",
        100,
    )
    with store.transaction() as conn:
        athletes.needs_reauth(conn, 5, "refresh token rejected")
        assert athletes.status(conn, 5) == "needs_reauth"
        athletes.save_grant(conn, 5, "Ada", "L", "read,activity:read", b"a2", 200, b"r2")  # a reconnect
        row = athletes.tokens(conn, 5)
        assert (row["status"], row["status_reason"], bytes(row["refresh_token"])) == ("connected", None, b"r2")
        athletes.save_grant(conn, 6, None, None, "read", b"b1", 100, b"s1")
        athletes.deauthorized(conn, 6, "deauthorized by the athlete")
        assert athletes.not_disconnected(conn) == {5}
        assert athletes.encrypted_tokens(conn) == [(5, b"a2", b"r2")]
        athletes.replace_tokens(conn, 5, None, b"r3")
        assert athletes.encrypted_tokens(conn) == [(5, b"a2", b"r3")]
        assert athletes.status(conn, 7) is None
        progress.set_cursor(conn, 5, "listed", "1")
        progress.request_refresh(conn, 5, [1, 2])
        landing.insert(conn, 5, "activities", "[]", "{}")
    with store.transaction() as conn:
        purged = athletes.purge(conn, 5)
    assert purged == {
        "athletes": 1,
        "sync_cursors": 1,
        "known_activities": 2,
        "known_segments": 0,
        "landing": 1,
        "webhook_lifecycle": 0,
        "webhook_inbox": 0,
    }
    assert athletes.record(store, 5) is None and [r["athlete_id"] for r in athletes.records(store)] == [6]


def test_app_state_first_writer_wins_and_keys_go_together(store: StateStore) -> None:
    with store.transaction() as conn:
        assert app_state.put_if_absent(conn, "salt", b"first") == b"first"
        assert app_state.put_if_absent(conn, "salt", b"second") == b"first"
        app_state.put(conn, "a", b"1")
        app_state.put(conn, "a", b"2")
        app_state.put(conn, "b", b"3")
        assert app_state.get_many(conn, ("a", "b", "c")) == {"a": b"2", "b": b"3"}
        app_state.delete(conn, ("a", "b"))
        assert app_state.get_many(conn, ("a", "b", "salt")) == {"salt": b"first"}


def test_rate_ledger_counts_per_window_and_finds_rivals(store: StateStore) -> None:
    with store.transaction() as conn:
        rate_ledger.write_line(conn, "short", "read", 900, 3, 100)
        rate_ledger.write_line(conn, "short", "read", 900, 4, 90)
        assert [tuple(r) for r in rate_ledger.lines(conn)] == [("short", "read", 900, 4, 90)]
        for start in (900, 900, 1800):
            rate_ledger.count_class(conn, "backfill", start)
            rate_ledger.count_turn(conn, "backfill", 5, start, float(start))
        assert rate_ledger.class_usage(conn, 1800) == {"backfill": 1}
        rate_ledger.count_class(conn, "backfill", 1800)
        assert rate_ledger.class_usage(conn, 1800) == {"backfill": 2}
        assert [tuple(r) for r in rate_ledger.turns(conn)] == [("backfill", 5, 1800, 1, 1800.0)]
        rate_ledger.waiting(conn, "me", "webhook", 5, alive_until=20.0, blocked_until=0.0)
        rate_ledger.waiting(conn, "live", "backfill", 6, alive_until=20.0, blocked_until=0.0)
        rate_ledger.waiting(conn, "asleep", "backfill", 7, alive_until=20.0, blocked_until=15.0)
        rate_ledger.waiting(conn, "dead", "backfill", None, alive_until=5.0, blocked_until=0.0)
        assert rate_ledger.rivals(conn, "me", 10.0) == [("backfill", 6)]
        rate_ledger.drop_dead_waiters(conn, 10.0)
        rate_ledger.leave(conn, "live")
        assert sorted(r[0] for r in conn.execute("SELECT waiter FROM rate_waiters").fetchall()) == ["asleep", "me"]


def test_the_sync_queue_newest_first_with_skips_and_segments_in_order(store: StateStore) -> None:
    with store.transaction() as conn:
        for activity_id, start in ((1, 100), (2, 300), (3, 200)):
            progress.add_listed(conn, 9, activity_id, start, f"p{activity_id}", zones=activity_id != 3)
        progress.set_stats_group(conn, 9, 1, "ride")
        progress.set_stats_group(conn, 9, 2, "run")
        assert progress.stored_fingerprint(conn, 9, 2) == "p2" and progress.stored_fingerprint(conn, 9, 4) is None
        progress.mark(conn, 9, [2], "detail")
        progress.update_listed(conn, 9, 2, 300, "p2b", changed=True)  # a changed field queues the detail again
        progress.update_listed(conn, 9, 1, 100, "p1b", changed=False)
        progress.mark(conn, 9, [1], "detail")
        progress.request_refresh(conn, 9, [1, 4], zones=False)  # a webhook's re-pull
        progress.note_segments(conn, 9, [30, 10], starred=False)
        progress.note_segments(conn, 9, [20, 10], starred=True)
        progress.set_cursor(conn, 9, "listed", "1")
        progress.set_cursor(conn, 9, "listed", "2")
    assert progress.needing(store, 9, "detail", 10) == [2, 3, 1, 4]
    assert progress.needing(store, 9, "detail", 2, skip=[2]) == [3, 1]
    assert progress.needing(store, 9, "zones", 10) == [2, 1, 4]
    assert progress.needing_among(store, 9, [1, 3, 5], "zones") == {1}
    assert progress.count_needing(store, 9, "detail") == 4
    # only those started then or later (the streams window); activity 4's start is 0 (a webhook's, not listed yet)
    assert progress.count_needing(store, 9, "detail", since_ts=250) == 1
    assert progress.count_needing(store, 9, "detail", since_ts=0) == 4
    assert progress.queue_span(store, 9) == (300, 100)  # the re-pulled unknown one (start 0) is not in the span
    assert progress.count_stats_counted(store, 9) == 2 and progress.count_stats_counted(store, 9, [2, 3]) == 1
    assert progress.known_ids(store, 9) == {1, 2, 3, 4}
    assert progress.get_cursor(store, 9, "listed") == "2" and progress.get_cursor(store, 9, "other") is None
    assert progress.segments_to_detail(store, 9) == [10, 20, 30]  # starred first, then as their efforts came
    with store.transaction() as conn:
        progress.segment_fetched(conn, 9, 10)
        progress.set_efforts_after(conn, 9, 20, "2026-01-01T00:00:00")
        progress.unstar_all(conn, 9)
        progress.note_segments(conn, 9, [20], starred=True)
        progress.forget(conn, 9, [4])
    assert progress.segments_to_detail(store, 9) == [20, 30]
    assert progress.starred_segments(store, 9) == [(20, "2026-01-01T00:00:00")]
    assert progress.known_ids(store, 9) == {1, 2, 3}


def test_landing_pages_in_order_and_removes(store: StateStore) -> None:
    with store.transaction() as conn:
        for n in range(5):
            landing.insert(conn, 1, "activities", f"[{n}]", "{}")
        landing.insert(conn, 2, "activities", "[9]", "{}")
    first = landing.page(store, 1, 0, 3)
    rest = landing.page(store, 1, first[-1]["id"], 3)
    assert [r["payload"] for r in first + rest] == ["[0]", "[1]", "[2]", "[3]", "[4]"]
    landing.remove(store, [r["id"] for r in first])
    assert landing.count(store, 1) == 2 and landing.count(store, 2) == 1


def test_the_inbox_stores_once_narrows_reopens_and_keeps_the_lifecycle(store: StateStore) -> None:
    with store.transaction() as conn:
        assert inbox.insert(conn, "k1", '{"owner_id":5,"object_id":12}')
        assert not inbox.insert(conn, "k1", '{"owner_id":5,"object_id":12}')
        assert inbox.insert(conn, "k2", '{"owner_id":5,"object_id":123}')
        assert inbox.insert(conn, "k3", '{"owner_id":5,"object_id":7}')
    rows = inbox.after(store, 0, 10)
    ids = [r["id"] for r in rows]
    assert len(ids) == 3 and inbox.after(store, ids[0], 10)[0]["id"] == ids[1]
    with store.transaction() as conn:
        found = inbox.undecided_containing(conn, ['"owner_id":5'], [('"object_id":12,', '"object_id":12}')])
        assert [r["id"] for r in found] == [ids[0]]  # not 123
        inbox.set_verdict(conn, ids[1:], "deferred", "waits")
        inbox.set_verdict(conn, ids[:1], "rejected", "no")
        inbox.reopen(conn, ids)
        assert sorted(r["id"] for r in inbox.undecided_containing(conn, [], [])) == ids[1:]  # only deferred reopen
        inbox.set_verdict(conn, ids[2:], "deferred", "waits")
        before = {(5, 12): ("create", 100)}
        inbox.save_lifecycle(conn, {}, before)
        inbox.save_lifecycle(conn, before, {(5, 12): ("delete", 110), (5, 7): ("create", 90)})
        assert inbox.load_lifecycle(conn) == {(5, 12): ("delete", 110), (5, 7): ("create", 90)}
    assert [r["id"] for r in inbox.deferred(store, 10)] == ids[2:]
    inbox.mark_processed(store, ids[:2])
    last, unprocessed, deferred = inbox.summary(store)
    assert last is not None and (unprocessed, deferred) == (1, 1) and inbox.count(store) == 3


def test_shape_reports_count_runs_that_met_a_problem(store: StateStore) -> None:
    with store.transaction() as conn:
        assert shape_reports.count(conn, "GET /x", "odd", "7") == 1
        assert shape_reports.count(conn, "GET /x", "odd", "8") == 2
    assert [tuple(r) for r in shape_reports.all_reports(store)] == [("GET /x", "odd", "7", 2)]


def test_doctor_reads_a_store_as_it_is(store: StateStore) -> None:
    with store.transaction() as conn:
        athletes.save_grant(conn, 5, None, None, "read", b"a", 100, b"r")
    if store.dialect == "sqlite":
        found = health.of_file(store.path)
    else:
        from fitsync.state.postgres import PostgresStateStore

        assert isinstance(store, PostgresStateStore)
        found = health.of_server(PostgresStateStore(store.url, migrate=False))
    assert (found.integrity, found.version, found.athletes) == ("ok", len(MIGRATIONS), [(5, "connected", 100)])


# connections ------------------------------------------------------------------------------------------------------


def test_sqlite_keeps_idle_connections_but_none_closed_mid_read_or_transaction_nor_to_a_file_made_anew(
    tmp_path: Path,
) -> None:
    """A unit of work reuses the connection an earlier one closed, whichever store of the process opened it (opening
    one cost ≈ 11 ms); one closed with a cursor part-read (its read snapshot) or mid-transaction is closed for good
    (its write lock goes with it), and a state file
    removed and made again is opened anew, never written through a connection to the file that was removed."""
    path = tmp_path / "state.db"
    store = StateStore(path)
    with store.transaction() as conn:
        app_state.put(conn, "probe", b"1")
        first = conn
    with StateStore(path).reading() as conn:
        assert conn is first

    reading = store.connect()
    part_read = reading.execute("SELECT key FROM app_state UNION ALL SELECT 'more'")
    assert part_read.fetchone() is not None
    reading.close()  # a cursor still holds its read snapshot: not handed to the next caller
    with store.reading() as conn:
        assert conn is not reading
    del part_read

    held = store.connect()
    held.execute("BEGIN IMMEDIATE")
    held.close()
    with StateStore(path).transaction() as conn:  # the write lock went with it: no wait
        assert conn is not held
        app_state.put(conn, "probe", b"2")

    for side in ("", "-wal", "-shm"):
        path.with_name(path.name + side).unlink(missing_ok=True)
    anew = StateStore(path)
    with anew.reading() as conn:
        assert conn is not first and app_state.get(conn, "probe") is None
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_process_leaves_no_wal_beside_the_state_file_when_it_exits(tmp_path: Path) -> None:
    """The kept connections are closed at exit: the last one checkpoints the WAL into the file and removes it, as
    when each unit of work closed its own."""
    path = tmp_path / "state.db"
    script = (
        "import sys\n"
        "from fitsync.state import app_state\n"
        "from fitsync.state.store import StateStore\n"
        "with StateStore(sys.argv[1]).transaction() as conn:\n"
        "    app_state.put(conn, 'probe', b'1')\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("state.db")) == ["state.db"]
    with StateStore(path).reading() as conn:
        assert app_state.get(conn, "probe") == b"1"


def test_postgres_keeps_idle_connections_drops_dead_ones_and_never_keeps_a_lock(
    tmp_path: Path, new_state_url: StateUrl
) -> None:
    """A unit of work reuses a connection an earlier one closed (a new server process per transaction cost 5 ms
    each); one the server ended meanwhile is replaced, not handed out; the athlete lock's session is never kept, so
    its lock cannot outlive the sync in an idle connection."""
    url = new_state_url()
    if not url:
        pytest.skip("PostgreSQL's sessions (SQLite's: the test above)")
    from fitsync.state.postgres import PostgresStateStore

    store = PostgresStateStore(url)
    backend = "SELECT pg_backend_pid()"
    with store.transaction() as conn:
        first = conn.execute(backend).fetchone()[0]
    with store.reading() as conn:
        assert conn.execute(backend).fetchone()[0] == first

    other = PostgresStateStore(url, migrate=False)
    with other.reading() as conn:
        conn.execute("SELECT pg_terminate_backend(?)", (first,))
    with store.transaction() as conn:  # the kept one is gone: a new one, and the work is done
        replaced = conn.execute(backend).fetchone()[0]
        app_state.put(conn, "probe", b"1")
    assert replaced != first
    with store.reading() as conn:
        assert app_state.get(conn, "probe") == b"1"

    with store.athlete_lock(7):
        with other.reading() as conn:
            held = conn.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 7 AND granted"
            ).fetchall()
    [(lock_session,)] = held
    with store.reading() as conn:
        assert conn.execute(backend).fetchone()[0] != lock_session
        assert (
            conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 7").fetchone()[0] == 0
        )


def test_a_connection_kept_open_sees_what_other_processes_write_after_this_one_opens_the_store_again(
    tmp_path: Path,
) -> None:
    """A process holding a connection (the webhook receiver holds one for its life) that opens another store on the
    same file keeps its locks: opening the store once closed a descriptor of the file, which drops every POSIX lock
    of the process on it, so another process's close removed the WAL under the kept connection (stale reads, then
    "database disk image is malformed")."""
    path = tmp_path / "state.db"
    held = StateStore(path).connect()
    assert app_state.get(held, "probe") is None
    StateStore(path)  # as a request handler's client would
    script = (
        "import sys\n"
        "from fitsync.state import app_state\n"
        "from fitsync.state.store import StateStore\n"
        "with StateStore(sys.argv[1]).transaction() as conn:\n"
        "    app_state.put(conn, 'probe', sys.argv[2].encode())\n"
    )
    for value in ("first", "second"):  # the second writes a WAL made anew if the first removed the kept one's
        subprocess.run([sys.executable, "-c", script, str(path), value], check=True, timeout=60)
        assert app_state.get(held, "probe") == value.encode()
    held.close()
