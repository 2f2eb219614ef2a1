"""`fitsync query`: SQL on the warehouse for analysts, as a table on screen or as CSV, JSON or Parquet.

The connection is read-only (a sync can keep loading); only a warehouse an older fitsync left is first brought up to
date (its views would answer as that version computed), once. A script may hold several statements (and comments):
each result is shown in turn; CSV/JSON/Parquet take the last one. Nothing is cut silently: a table shows at
most --limit rows and says how many there are in all ("10,000 rows (200 shown)", as the DuckDB shell does).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click
from rich.console import Console

from . import result_table, sql_prompt, terminate
from .errors import DUCKDB_INTERRUPTED

if TYPE_CHECKING:  # DuckDB loads in a third of a second: only when a query runs
    import duckdb

    from fitsync.warehouse.location import Warehouse

FORMATS = ("table", "csv", "json", "parquet")
# The format an --output file's extension asks for, when --format is not given.
EXTENSIONS = {".csv": "csv", ".json": "json", ".parquet": "parquet"}
# DuckDB's own writers (COPY … TO) for the exports: streamed, typed as DuckDB types them, no extra copy.
COPY_OPTIONS = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet"}
COUNT_CHUNK = 10_000
LIST_SQL = (
    "SELECT table_name AS name, 'table' AS kind, comment FROM duckdb_tables() WHERE NOT internal "
    "UNION ALL SELECT view_name, 'view', comment FROM duckdb_views() WHERE NOT internal "
    "AND schema_name = 'main' ORDER BY kind, name"
)
# The reader of stdout went away (`| head`): end without a word, with the status a shell reports for a process
# that SIGPIPE ended (128 + 13), as the sqlite3 shell does (`sqlite3 … | head -1` gives 141): it keeps SIGPIPE's
# default action, and so does the duckdb shell that grew out of it. `set -o pipefail` sees it, as for them.
BROKEN_PIPE = 141
READ_ONLY_HINT = (
    "`fitsync query` only reads (a sync can keep loading meanwhile). FTP, LTHR and threshold pace by date are set with "
    "`fitsync thresholds set`; the other tables are written by `fitsync sync`."
)
# What DuckDB raises when a signal handler raised while it worked (it checks between tasks): the KeyboardInterrupt
# of Ctrl-C is lost, replaced by this, which is no error of the SQL.


class _Screen(Console):
    """Rich's console, but a reader going away ends the command as any other write to stdout does (exit 141),
    not with Rich's own exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _warehouse() -> Warehouse:
    from .warehouse_open import existing_warehouse  # DuckDB loads in a third of a second: only when a query runs

    return existing_warehouse()


def _count(count: int, noun: str = "row") -> str:
    """`1 row`, `2 rows`, `1,000 rows`."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


# SQL may begin with a `--` comment: unknown "options" are taken as the SQL's words.
@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("sql_words", nargs=-1)
@click.option("-f", "--file", "script", type=click.File("r"), help="Read the SQL from this file (`-` for stdin).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="table on screen, or the last result as CSV, JSON (an array of objects) or Parquet.  "
    "[default: from --output's extension (.csv, .json, .parquet), else table]",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the result to this file instead of stdout (required for parquet).",
)
@click.option(
    "--mode",
    type=click.Choice(sql_prompt.MODES),
    help="The table's shape: box, a table (columns that do not fit are elided and counted); line, "
    "`column = value` per row.  [default: box]",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Rows shown per table at most (the rest is counted).",
)
@click.option(
    "--list", "list_relations", is_flag=True, help="List the warehouse's tables and views, with what each holds."
)
@click.option("--describe", metavar="NAME", help="The columns of one table or view: type and what each means.")
def query(
    sql_words: tuple[str, ...],
    script: IO[str] | None,
    fmt: str | None,
    output: Path | None,
    mode: str | None,
    limit: int,
    list_relations: bool,
    describe: str | None,
) -> None:
    """Run SQL on the warehouse (read-only): `fitsync query "SELECT …"`, `-f report.sql`, SQL piped in,
    `-o out.csv`; with no SQL at a terminal, an SQL prompt."""
    try:
        _query(sql_words, script, fmt, output, mode, limit, list_relations, describe)
    except BrokenPipeError:
        # Python's advice (the signal module's "Note on SIGPIPE"): stdout to devnull, so that the flush at exit
        # does not fail again and print its own error
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(BROKEN_PIPE) from None
    except KeyboardInterrupt:  # read-only, and an export's file appears only whole: nothing was changed
        click.echo(f"{terminate.said()}: the query was stopped; nothing was changed.", err=True)
        raise SystemExit(terminate.exit_code()) from None


def _query(
    sql_words: tuple[str, ...],
    script: IO[str] | None,
    fmt: str | None,
    output: Path | None,
    mode: str | None,
    limit: int,
    list_relations: bool,
    describe: str | None,
) -> None:
    given = [
        name
        for name, there in (
            ("the SQL argument", sql_words),
            ("-f", script is not None),
            ("--list", list_relations),
            ("--describe", describe is not None),
        )
        if there
    ]
    if given == ["the SQL argument", "-f"]:
        raise click.UsageError("give the SQL as an argument or with -f, not both")
    if len(given) > 1:
        raise click.UsageError(f"{' and '.join(given)} each say what to run: give one of them")
    if output is not None and str(output) == "-":  # as for -f: standard output
        output, fmt = None, fmt or "csv"
    fmt = _format(fmt, output)
    if mode is not None and fmt != "table":
        raise click.UsageError(f"--mode shapes the table on screen only, not --format {fmt}: drop one of them")
    sql = " ".join(sql_words)
    if list_relations:
        sql = LIST_SQL
        limit = max(limit, 1000)
    elif describe is not None:
        sql = (
            f"SELECT column_name AS name, data_type AS type, comment FROM duckdb_columns() "
            f"WHERE schema_name = 'main' AND table_name = '{describe.replace(chr(39), chr(39) * 2)}' "
            "ORDER BY column_index"
        )
        limit = max(limit, 1000)
    elif script is not None:
        try:
            sql = script.read()
        except UnicodeDecodeError:
            raise click.BadParameter(
                f"{script.name} is not UTF-8 text: save it as UTF-8 (plain SQL)", param_hint="'-f'"
            ) from None
    if not sql.strip() and not sys.stdin.isatty():
        sql = _piped_sql()
    if not sql.strip():
        if sys.stdin.isatty() and sys.stdout.isatty():  # a person at a terminal: the SQL prompt
            warehouse = _warehouse()
            sql_prompt.run(
                warehouse,
                lambda typed, shape: _run(warehouse, typed, "table", None, shape, limit, wrap=False, at_prompt=True),
                lambda: _run(warehouse, LIST_SQL, "table", None, "box", max(limit, 1000), wrap=True, at_prompt=True),
                mode or "box",
            )
            return
        raise click.UsageError(
            "give the SQL as an argument, with -f FILE, or on stdin (`echo 'SELECT …' | fitsync query`), "
            "or use --list / --describe NAME"
        )
    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet needs --output FILE")
    if output is not None and not output.absolute().parent.is_dir():
        raise click.BadParameter(
            f"the folder {output.absolute().parent} does not exist: create it, or write elsewhere",
            param_hint="'--output'",
        )
    if describe is not None:
        _check_relation(describe, sql)
    # the catalogue's comments are what --list and --describe are read for: wrapped, not cut
    _run(_warehouse(), sql, fmt, output, mode or "box", limit, wrap=list_relations or describe is not None)


def _piped_sql() -> str:
    """SQL piped or redirected in (`echo 'SELECT …' | fitsync query`, `< report.sql`), as DuckDB's and SQLite's shells
    read it; '' for stdin that is neither (/dev/null, a closed stdin)."""
    try:
        kind = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return ""
    return sys.stdin.read() if stat.S_ISFIFO(kind) or stat.S_ISREG(kind) else ""


def _format(fmt: str | None, output: Path | None) -> str:
    """--format as given, else the one --output's extension names, else a table on screen."""
    if output is None:
        return fmt or "table"
    named = EXTENSIONS.get(output.suffix.lower())
    if fmt not in (None, "table") and named not in (None, fmt):  # a .parquet file of CSV would fail every reader
        raise click.UsageError(f"{output.name!r} names {named}, --format says {fmt}: drop one of them")
    if fmt is None:
        fmt = EXTENSIONS.get(output.suffix.lower())
        if fmt is None:
            raise click.UsageError(
                f"cannot tell the format from {output.name!r} (.csv, .json and .parquet are known): "
                "give --format csv, json or parquet"
            )
    if fmt == "table":
        raise click.UsageError("--output writes csv, json or parquet; a table is shown on screen (or `> FILE`)")
    return fmt


def _check_relation(name: str, describe_sql: str) -> None:
    """Fails, naming the closest table or view, when `name` has no columns to describe."""
    with _reading(_warehouse()) as conn:
        if conn.execute(describe_sql).fetchall():
            return
        names = [str(row[0]) for row in conn.execute(LIST_SQL).fetchall()]
    by_lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    hint = f' Did you mean "{by_lower[close[0]]}"?' if close else ""
    raise click.BadParameter(
        f"no table or view named {name!r}.{hint} `fitsync query --list` shows them all", param_hint="'--describe'"
    )


# How long bringing an older warehouse up to date waits for another process's hold on the file before the query
# answers from it as it is.
MIGRATE_WAIT = 60.0
_CURRENT: set[str] = set()  # the warehouses this process found with this fitsync's tables and views


@contextlib.contextmanager
def _reading(warehouse: Warehouse) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only session on which this fitsync's views answer: checked on the statement's own connection, once per
    process (after an upgrade, the views the last sync left would answer as the older version computed); only a
    warehouse found older is closed, brought up to date and opened again."""
    from fitsync.warehouse import db

    with _session(warehouse) as conn:
        if str(warehouse) in _CURRENT or db.is_current(conn):
            _CURRENT.add(str(warehouse))
            yield conn
            return
    _bring_up_to_date(warehouse)
    _CURRENT.add(str(warehouse))
    with _session(warehouse) as conn:
        yield conn


def _bring_up_to_date(warehouse: Warehouse) -> None:
    """The warehouse migrated to this fitsync's tables and views; one this user may only read stays as it is, and
    that is said."""
    import duckdb

    from fitsync.warehouse import db

    try:
        with _stoppable(), db.writing(warehouse, MIGRATE_WAIT, _waiting, migrated=True):
            pass
    except (duckdb.Error, OSError) as error:  # OSError: TimeoutError, a file this user may only open to read
        click.echo(
            "Note: the warehouse's tables or views are an older fitsync's and could not be brought up to date "
            f"({str(error).splitlines()[0][:200]}): an analysis view may answer as that version computed it until "
            "`fitsync sync` runs",
            err=True,
        )


def _waiting(said: str) -> None:
    click.echo(f"Waiting: {said}", err=True)


@contextlib.contextmanager
def _session(warehouse: Warehouse) -> Iterator[duckdb.DuckDBPyConnection]:
    from fitsync.warehouse import db

    try:
        with db.reading(warehouse, notice=_waiting) as conn:
            try:
                yield conn
            except KeyboardInterrupt:
                # DuckDB's workers go on with a query Ctrl-C stopped, and closing waits for them (the whole query's
                # time)
                conn.interrupt()
                raise
    except RuntimeError as error:  # a stop while the session opened (its settings are statements): a stop all the
        # same, said as one (a CI run's SIGTERM landed there: "Stopped by SIGTERM: nothing was changed.", no word of
        # the query)
        if str(error) != DUCKDB_INTERRUPTED:
            raise
        raise KeyboardInterrupt from None


def _run(
    warehouse: Warehouse,
    sql: str,
    fmt: str,
    output: Path | None,
    mode: str,
    limit: int,
    wrap: bool,
    at_prompt: bool = False,
) -> None:
    """Each statement of `sql` in turn, on one read-only connection: shown, or the last one exported. `at_prompt`: the
    SQL prompt's own catalog hint, and no pager (the next lines typed would go to it)."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise click.ClickException(str(error).strip()) from None
    if not statements:
        raise click.UsageError("the SQL holds no statement (only comments?)")
    with _reading(warehouse) as conn:
        at = 0
        for index, statement in enumerate(statements):
            last = index == len(statements) - 1
            start = sql.find(statement.query, at)
            lines_before, at = (sql.count("\n", 0, start), start + len(statement.query)) if start >= 0 else (0, at)
            try:
                with _stoppable():
                    if fmt != "table" and last:
                        _export(conn, statement.query, fmt, output)
                        continue
                    result = conn.execute(statement.query)
                    if fmt == "table":
                        _show(result, limit, mode, wrap, page=not at_prompt)
            except duckdb.Error as error:  # DuckDB's own message says what is wrong with the SQL
                where = f"statement {index + 1}: " if len(statements) > 1 else ""
                said = where + _relined(str(error).strip(), lines_before)  # with its hints and caret
                if isinstance(error, duckdb.CatalogException):  # its "Did you mean" may name a system table
                    said += f"\n{PROMPT_HINT if at_prompt else CATALOG_HINT}"
                elif "read-only mode" in str(error):
                    said += f"\n{READ_ONLY_HINT}"
                raise click.ClickException(said) from None


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """Ctrl-C while DuckDB works made a KeyboardInterrupt again (DuckDB raises a RuntimeError in its place), so that a
    stop is said as one and not as a failure."""
    try:
        yield
    except RuntimeError as error:
        if str(error) != DUCKDB_INTERRUPTED:
            raise
        raise KeyboardInterrupt from None


def _show(result: duckdb.DuckDBPyConnection, limit: int, mode: str, wrap: bool = False, page: bool = True) -> None:
    """At most `limit` rows, as a box (text wrapped with `wrap`) or as lines, and the count of the rows not shown;
    paged on a terminal when longer than the screen."""
    if result.description is None:  # a statement without rows (SET, PRAGMA …)
        return
    rows = result.fetchmany(limit)
    more = 0
    while chunk := result.fetchmany(COUNT_CHUNK):
        more += len(chunk)
    out = _Screen()
    lines = len(rows) * (len(result.description) + 1) if mode == "line" else len(rows) + 5
    paged = page and out.is_terminal and lines > out.height
    if paged:
        os.environ.setdefault("LESS", "-R")  # less shows the table's colours, not their escape codes (as git does)
        os.environ.setdefault("LESSHISTFILE", "-")  # and writes no ~/.lesshst: a read-only command changes no file
    with out.pager(styles=True) if paged else contextlib.nullcontext():
        if mode == "line":
            result_table.show_lines(out, result.description, rows)
            note = None
        else:
            note = result_table.show_table(out, result.description, rows, wrap)
        if note:
            out.print(note, style="dim", soft_wrap=True)
        if more:  # as the DuckDB shell says it: "60 rows (3 shown)"
            out.print(
                f"{_count(len(rows) + more)} ({len(rows):,} shown): raise --limit, or write them all with "
                "--format csv -o FILE",
                style="yellow",
                soft_wrap=True,
            )
        else:  # as psql says "(3 rows)": an empty result is not mistaken for a failure to show one
            out.print(_count(len(rows)), style="dim")


def _export(conn: duckdb.DuckDBPyConnection, sql: str, fmt: str, output: Path | None) -> None:
    """The result written by DuckDB itself to the file, or to a scratch file streamed to stdout."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="fitsync-query-") as scratch:
        target = _partial(output) if output else Path(scratch) / f"result.{fmt}"
        literal = str(target).replace("'", "''")
        try:
            rows = conn.execute(f"COPY (\n{_bare(sql)}\n) TO '{literal}' ({COPY_OPTIONS[fmt]})").fetchall()[0][0]
            if rows == 0 and fmt == "json":  # DuckDB writes "[", a blank line and "]"
                target.write_text("[]\n")
        except BaseException as error:  # a stop or a failure: no half of a result in the file's place
            if output is not None and target != output:
                target.unlink(missing_ok=True)
            if isinstance(error, duckdb.IOException):  # the file, not the SQL: a full disk, a read-only folder, …
                raise click.ClickException(_not_written(target, output, error)) from None
            if isinstance(error, duckdb.Error):  # its LINE n counts COPY's line before the SQL: said as typed
                raise type(error)(_relined(str(error), -1)) from None
            raise
        if output:
            if target != output:
                target.replace(output)  # whole, at once: a file of that name before stays until then
            if sys.stderr.isatty():  # at a terminal, a word of what was written; from cron or a script, silence
                click.echo(f"{_count(rows)} → {output}", err=True)
            return
        with target.open("rb") as written:
            shutil.copyfileobj(written, sys.stdout.buffer)
        sys.stdout.buffer.flush()


_LINE = re.compile(r"^LINE (\d+):")


def _relined(message: str, shift: int) -> str:
    """DuckDB's `LINE n:` (counted from its statement's start) moved by `shift` lines, its caret line below moved
    with the number's width, so that it still points at the same character."""
    if not shift:
        return message
    lines = message.split("\n")
    for k, line in enumerate(lines):
        if (found := _LINE.match(line)) is None:
            continue
        number = str(int(found[1]) + shift)
        lines[k] = f"LINE {number}:" + line[found.end() :]
        if k + 1 < len(lines) and lines[k + 1].strip() == "^":
            wider = len(number) - len(found[1])
            lines[k + 1] = " " * wider + lines[k + 1] if wider >= 0 else lines[k + 1][-wider:]
    return "\n".join(lines)


def _partial(output: Path) -> Path:
    """Where an export to `output` is written before it takes that name: beside it, hidden, its extensions kept
    last. A device or a pipe
    (/dev/stdout, a FIFO) is written as it is: nothing could be renamed onto it."""
    if output.exists() and not output.is_file():
        return output
    suffixes = "".join(output.suffixes)  # kept last: DuckDB compresses by them (`.csv.gz`)
    return output.with_name(f".{output.name.removesuffix(suffixes)}.{uuid.uuid4().hex[:8]}.partial{suffixes}")


CATALOG_HINT = "`fitsync query --list` lists the warehouse's tables and views, `--describe NAME` a table's columns"
PROMPT_HINT = "`.tables` lists the warehouse's tables and views, `DESCRIBE name;` a table's columns"


def _not_written(target: Path, output: Path | None, error: Exception) -> str:
    """The export's file could not be written: which, why (the system's words, not DuckDB's), and what to do."""
    said = str(error).removeprefix("IO Error: ").strip()
    why = said.rsplit(": ", 1)[-1] if ": " in said else said
    if output is None:  # the scratch file behind stdout: the temporary folder's disk
        return f"the result could not be written to a temporary file ({why}): free space in {target.parent.parent}"
    return f"could not write {output} ({why}): " + WRITE_FIXES.get(why, "write it elsewhere with -o FILE")


WRITE_FIXES = {
    "No space left on device": "free space there, or write it elsewhere with -o FILE",
    "Permission denied": "write it to a folder you may write to with -o FILE",
}


def _bare(statement: str) -> str:
    """The statement without its closing `;` and what follows it (a comment), so that it can be wrapped in COPY (…);
    a line comment it ends with stays on its own line there."""
    import duckdb

    tokens = duckdb.tokenize(statement)
    if tokens and statement[tokens[-1][0]] == ";":
        return statement[: tokens[-1][0]]
    return statement
