"""`fitsync query` with no SQL at a terminal: an SQL prompt on the warehouse, as the DuckDB shell's.

Each statement opens its own read-only connection and closes it: a prompt left open all afternoon never holds the
file's lock against the nightly sync. Line editing and this session's history come from readline; a statement
may run over several lines and ends with `;`. Ctrl-C drops the statement being typed, Ctrl-D (or `.quit`) leaves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import click

PROMPT, MORE = "fitsync> ", "   ...> "
QUIT = {".quit", ".exit", "quit", "exit"}


def complete_statements(buffer: str) -> bool:
    """True once the typed text ends a statement (DuckDB's parser decides, so a `;` inside a string does not)."""
    import duckdb

    text = buffer.strip()
    if not text.endswith(";"):
        return False
    try:
        return bool(duckdb.extract_statements(text))
    except duckdb.Error:
        return True  # let it run: DuckDB's own error says what is wrong


def run(warehouse: object, run_sql: Callable[[str], None]) -> None:
    """Read statements until the end of input; `run_sql` shows each one's result (errors are shown, not fatal)."""
    with contextlib.suppress(ImportError):  # readline gives line editing and history where the platform has it
        import readline  # noqa: F401

    click.echo(f"SQL on {warehouse} (read-only). End a statement with ';'. Ctrl-D to leave.")
    buffer = ""
    while True:
        try:
            line = input(MORE if buffer else PROMPT)
        except EOFError:
            click.echo()
            return
        except KeyboardInterrupt:  # drops what was typed, as a shell does
            click.echo()
            buffer = ""
            continue
        if not buffer and line.strip().lower() in QUIT:
            return
        buffer += line + "\n"
        if complete_statements(buffer):
            sql, buffer = buffer, ""
            try:
                run_sql(sql)
            except click.ClickException as error:
                click.echo(f"Error: {error.format_message()}", err=True)
