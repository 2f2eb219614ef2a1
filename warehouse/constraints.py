"""Which columns each warehouse table holds no NULL in, read from the schema (duckdb_columns()), never copied: a load
leaves out a row missing one (an effort without a segment id, a shape fitsync does not know), its JSON kept in the
document, rather than failing the batch (loads._complete).

Batches are staged without the warehouse (loads.stage), so the load reads the schema the migrations make: the
migrations run once per process on an in-memory database.
"""

from __future__ import annotations

import functools

import duckdb

from . import db

# Each table's NOT NULL columns: {table: columns}.
NotNull = dict[str, frozenset[str]]

QUERY = """SELECT table_name, list(column_name) FROM duckdb_columns() WHERE NOT is_nullable AND NOT internal
           AND database_name = current_database() AND schema_name = 'main' GROUP BY ALL"""


def not_null(conn: duckdb.DuckDBPyConnection) -> NotNull:
    """The NOT NULL columns of every table of the connection's database."""
    return {table: frozenset(columns) for table, columns in conn.execute(QUERY).fetchall()}


@functools.cache
def migrated() -> NotNull:
    """The NOT NULL columns of the schema the migrations make (read once per process)."""
    with duckdb.connect(":memory:") as conn:
        for statement in (*db.WORKAROUNDS, *db.BOOKKEEPING):
            conn.execute(statement)
        for _, _, script in db.migration_scripts():
            conn.execute(script)
        return not_null(conn)
