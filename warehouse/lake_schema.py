"""A lake's schema from the same numbered migrations as a file's.

DuckLake has no PRIMARY KEY, UNIQUE or CHECK constraints, no indexes and no sequences; migrations 1–13 use them
(the file keeps them). A new lake therefore starts from their result, not their text: the migrations run on an
in-memory database in the same connection, and each table they made is created in the lake from its columns (types,
NOT NULL, defaults, comments) with the rows they inserted (the analysis settings). Its schema_migrations then
records versions 1–13, and every later migration runs on the lake as written, as it does on a file: from
`LAKE_BASELINE` on a migration uses no constraint, index or sequence (tests/warehouse/test_lake.py runs them on a
lake). What a key guarded on the file, a lake's loads guard themselves (they delete a batch's keys before inserting
it) and `duplicate_keys` reports.
"""

from __future__ import annotations

import duckdb

# The last migration written before lakes existed: later ones run on a lake as written.
LAKE_BASELINE = 13
# The schema the migrations make is built here, in the lake connection's own in-memory database.
SCRATCH = "memory"


def create_baseline(conn: duckdb.DuckDBPyConnection, lake: str, scripts: list[tuple[int, str, str]]) -> list[int]:
    """Create migrations ≤ LAKE_BASELINE's tables (and rows) in the empty lake `lake`, unless another host does so
    first (a conflicting commit is tried again and then finds theirs); returns the versions the baseline covers."""
    from .db import BOOKKEEPING, WORKAROUNDS, transaction

    done = [(version, name, sql) for version, name, sql in scripts if version <= LAKE_BASELINE]
    conn.execute(f"USE {SCRATCH}")
    try:
        for statement in (*WORKAROUNDS, *BOOKKEEPING):
            conn.execute(statement)
        for _, _, sql in done:
            conn.execute(sql)
        tables = conn.execute(
            "SELECT table_name, comment FROM duckdb_tables() WHERE database_name = ? ORDER BY table_name", [SCRATCH]
        ).fetchall()

        def work() -> None:
            if conn.execute(  # another host may have created it since this one looked
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = 'schema_migrations'",
                [lake],
            ).fetchall()[0][0]:
                return
            for table, comment in tables:
                _copy_table(conn, lake, table, comment)
            conn.executemany(
                f"INSERT INTO {lake}.main.schema_migrations (version, name) VALUES (?, ?)",
                [[version, name] for version, name, _ in done],
            )

        transaction(conn, work)
    finally:
        for (table,) in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [SCRATCH]
        ).fetchall():
            conn.execute(f"DROP TABLE {SCRATCH}.main.{_name(table)}")
        conn.execute(f"USE {lake}")
    return [version for version, _, _ in done]


def has_migrations(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether the lake in use holds its bookkeeping (schema_migrations): a lookup of that one table. `duckdb_tables()`
    would read every table's statistics from the catalog (≈ 30 queries to PostgreSQL, 75–300 ms; this: 2)."""
    try:
        conn.execute("SELECT 1 FROM schema_migrations LIMIT 0")
    except duckdb.CatalogException:
        return False
    return True


def in_force(conn: duckdb.DuckDBPyConnection, versions: set[int], views: str, checksum: str) -> int | None:
    """The schema version in force when the lake needs nothing from `migrate` (every one of `versions` applied, the
    views script `views` recorded with `checksum`, the documents views current), else None.

    One read-only transaction: DuckLake reads the catalog's snapshot once for all the checks (≈ 6 queries to
    PostgreSQL instead of ≈ 35 in autocommit, each statement its own snapshot; bench/lake.py), and commits nothing."""
    from . import documents, streams

    conn.execute("BEGIN")
    try:
        try:
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        except duckdb.CatalogException:  # a new lake
            return None
        current = (
            versions <= done
            and conn.execute("SELECT checksum FROM schema_views WHERE name = ?", [views]).fetchall() == [(checksum,)]
            and documents.views_current(conn)
            and streams.views_current(conn)  # and their current definitions (stream_mmp.DEFINED)
        )
        return max(done) if current else None
    finally:
        try:
            conn.execute("ROLLBACK")
        except duckdb.TransactionException:  # pragma: no cover (rolled back already)
            pass


def _copy_table(conn: duckdb.DuckDBPyConnection, lake: str, table: str, comment: str | None) -> None:
    columns = conn.execute(
        """SELECT column_name, data_type, is_nullable, column_default, comment FROM duckdb_columns()
           WHERE database_name = ? AND table_name = ? ORDER BY column_index""",
        [SCRATCH, table],
    ).fetchall()
    defined = ", ".join(
        f"{_name(name)} {data_type}{'' if nullable else ' NOT NULL'}{f' DEFAULT {default}' if default else ''}"
        for name, data_type, nullable, default, _ in columns
    )
    conn.execute(f"CREATE TABLE {lake}.main.{_name(table)} ({defined})")
    if comment:
        conn.execute(f"COMMENT ON TABLE {lake}.main.{_name(table)} IS {_text(comment)}")
    for name, _, _, _, said in columns:
        if said:
            conn.execute(f"COMMENT ON COLUMN {lake}.main.{_name(table)}.{_name(name)} IS {_text(said)}")
    conn.execute(f"INSERT INTO {lake}.main.{_name(table)} SELECT * FROM {SCRATCH}.main.{_name(table)}")


def _name(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def views_for_lake(script: str) -> str:
    """The views script without its comments on view columns (DuckLake refuses them)."""
    return ";\n".join(
        statement.query
        for statement in duckdb.extract_statements(script)
        if not statement.query.lstrip().upper().startswith("COMMENT ON COLUMN")
    )
