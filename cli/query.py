"""`fitsync query`: SQL on the warehouse for analysts, as a table on screen or as CSV, JSON or Parquet.

The connection is read-only (a sync can keep loading). A script may hold several statements (and comments):
each result is shown in turn; CSV/JSON/Parquet take the last one. Nothing is cut silently: a table shows at
most --limit rows and says how many more there are.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click
from rich.console import Console

from . import result_table, sql_prompt

if TYPE_CHECKING:  # DuckDB loads in a third of a second: only when a query runs
    import duckdb

    from fitsync.warehouse.location import Warehouse

FORMATS = ("table", "csv", "json", "parquet")
# DuckDB's own writers (COPY … TO) for the exports: streamed, typed as DuckDB types them, no extra copy.
COPY_OPTIONS = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet"}
COUNT_CHUNK = 10_000


def _warehouse() -> Warehouse:
    from .warehouse_open import existing_warehouse  # DuckDB loads in a third of a second: only when a query runs

    return existing_warehouse()


# SQL may begin with a `--` comment: unknown "options" are taken as the SQL's words.
@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("sql_words", nargs=-1)
@click.option("-f", "--file", "script", type=click.File("r"), help="Read the SQL from this file (`-` for stdin).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table on screen, or the last result as CSV, JSON (an array of objects) or Parquet.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the result to this file instead of stdout (required for parquet).",
)
@click.option(
    "--mode",
    type=click.Choice(("box", "line")),
    default="box",
    show_default=True,
    help="box: a table (columns that do not fit are elided and counted); line: `column = value` per row.",
)
@click.option("--limit", default=200, show_default=True, help="Rows shown per table at most (the rest is counted).")
@click.option(
    "--list", "list_relations", is_flag=True, help="List the warehouse's tables and views, with what each holds."
)
@click.option("--describe", metavar="NAME", help="The columns of one table or view: type and what each means.")
def query(
    sql_words: tuple[str, ...],
    script: IO[str] | None,
    fmt: str,
    output: Path | None,
    mode: str,
    limit: int,
    list_relations: bool,
    describe: str | None,
) -> None:
    """Run SQL on the warehouse (read-only): `fitsync query "SELECT …"`, `-f report.sql`, `--format csv -o out.csv`;
    with no SQL at a terminal, an SQL prompt."""
    sql: str | None = " ".join(sql_words)
    if list_relations:
        sql = (
            "SELECT table_name AS name, 'table' AS kind, comment FROM duckdb_tables() WHERE NOT internal "
            "UNION ALL SELECT view_name, 'view', comment FROM duckdb_views() WHERE NOT internal "
            "AND schema_name = 'main' ORDER BY kind, name"
        )
        limit = max(limit, 1000)
    elif describe is not None:
        sql = (
            f"SELECT column_name AS name, data_type AS type, comment FROM duckdb_columns() "
            f"WHERE schema_name = 'main' AND table_name = '{describe.replace(chr(39), chr(39) * 2)}' "
            "ORDER BY column_index"
        )
        limit = max(limit, 1000)
    elif script is not None:
        sql = script.read()
    if not sql or not sql.strip():
        if sys.stdin.isatty() and sys.stdout.isatty():  # a person at a terminal: the SQL prompt
            warehouse = _warehouse()
            sql_prompt.run(warehouse, lambda typed: _run(warehouse, typed, "table", None, mode, limit, wrap=False))
            return
        raise click.UsageError("give the SQL as an argument, with -f FILE, or use --list / --describe NAME")
    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet needs --output FILE")
    if describe is not None:
        with _reading(_warehouse()) as conn:
            if not conn.execute(sql).fetchall():
                raise click.ClickException(f"no table or view named {describe!r}: `fitsync query --list` shows them")
    # the catalogue's comments are what --list and --describe are read for: wrapped, not cut
    _run(_warehouse(), sql, fmt, output, mode, limit, wrap=list_relations or describe is not None)


@contextlib.contextmanager
def _reading(warehouse: Warehouse) -> Iterator[duckdb.DuckDBPyConnection]:
    from fitsync.warehouse import db

    with db.reading(warehouse) as conn:
        yield conn


def _run(warehouse: Warehouse, sql: str, fmt: str, output: Path | None, mode: str, limit: int, wrap: bool) -> None:
    """Each statement of `sql` in turn, on one read-only connection: shown, or the last one exported."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise click.ClickException(str(error).strip()) from None
    if not statements:
        raise click.UsageError("the SQL holds no statement (only comments?)")
    with _reading(warehouse) as conn:
        for index, statement in enumerate(statements):
            last = index == len(statements) - 1
            try:
                if fmt != "table" and last:
                    _export(conn, statement.query, fmt, output)
                    continue
                result = conn.execute(statement.query)
                if fmt == "table":
                    _show(result, limit, mode, len(statements) > 1, wrap)
            except duckdb.Error as error:  # DuckDB's own message says what is wrong with the SQL
                where = f"statement {index + 1}: " if len(statements) > 1 else ""
                raise click.ClickException(where + str(error).strip()) from None  # with its hints and caret


def _show(result: duckdb.DuckDBPyConnection, limit: int, mode: str, several: bool, wrap: bool = False) -> None:
    """At most `limit` rows, as a box (text wrapped with `wrap`) or as lines, and the count of the rows not shown;
    paged on a terminal when longer than the screen."""
    if result.description is None:  # a statement without rows (SET, PRAGMA …)
        return
    rows = result.fetchmany(limit)
    more = 0
    while chunk := result.fetchmany(COUNT_CHUNK):
        more += len(chunk)
    out = Console()
    lines = len(rows) * (len(result.description) + 1) if mode == "line" else len(rows) + 5
    with out.pager(styles=True) if out.is_terminal and lines > out.height else contextlib.nullcontext():
        if mode == "line":
            result_table.show_lines(out, result.description, rows)
            note = None
        else:
            note = result_table.show_table(out, result.description, rows, wrap)
        if note:
            out.print(note, style="dim", soft_wrap=True)
        if more:
            out.print(
                f"… {more:,} more rows not shown: raise --limit, or write them all with --format csv -o FILE",
                style="yellow",
                soft_wrap=True,
            )
        elif several:
            out.print(f"{len(rows):,} rows", style="dim")


def _export(conn: duckdb.DuckDBPyConnection, sql: str, fmt: str, output: Path | None) -> None:
    """The result written by DuckDB itself to the file, or to a scratch file streamed to stdout."""
    with tempfile.TemporaryDirectory(prefix="fitsync-query-") as scratch:
        target = output if output else Path(scratch) / f"result.{fmt}"
        literal = str(target).replace("'", "''")
        rows = conn.execute(f"COPY ({sql}) TO '{literal}' ({COPY_OPTIONS[fmt]})").fetchall()[0][0]
        if output:
            click.echo(f"{rows:,} rows → {output}", err=True)
            return
        with target.open("rb") as written:
            shutil.copyfileobj(written, sys.stdout.buffer)
        sys.stdout.buffer.flush()
