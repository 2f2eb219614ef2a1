"""`fitsync query` with no SQL at a terminal: an SQL prompt on the warehouse, as the DuckDB shell's.

Each statement opens its own read-only connection and closes it: a prompt left open all afternoon never holds the
file's lock against the nightly sync. Line editing and history come from readline (a statement typed over several lines
is one entry); the history is kept between sessions in the user's state folder (history_file), as the DuckDB shell keeps
~/.duckdb_history, never in FITSYNC_HOME (which a read-only command does not write);
a statement may run over several lines and ends with `;`. Ctrl-C drops the statement being typed, or stops the one running (the
prompt comes back, as in the DuckDB shell and psql); Ctrl-D (or `.quit`) leaves.
A few of the DuckDB shell's dot commands work at the start of a statement: `.tables`, `.mode`, `.help`, `.quit`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import terminate

PROMPT, MORE = "fitsync> ", "   ...> "
QUIT = {".quit", ".exit", "quit", "exit"}
MODES = ("box", "line")  # the shapes of a result (`fitsync query --mode`, `.mode` here)
HELP = (
    "End each SQL statement with ';' (it may run over several lines). .tables lists the tables and views with "
    "what each holds; .mode box|line shows results as a table or as `column = value` lines; .quit, .exit or Ctrl-D "
    "leaves; Ctrl-C drops the statement being typed or stops the one running."
)


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


def run(
    warehouse: object, run_sql: Callable[[str, str], None], list_tables: Callable[[], None], mode: str = "box"
) -> None:
    """Read statements until the end of input; `run_sql(sql, mode)` shows each one's result (errors are shown, not
    fatal) in the mode `.mode` last chose (`mode` at first); `list_tables` answers `.tables`."""
    history: Any = None
    with contextlib.suppress(ImportError):  # readline gives line editing and history where the platform has it
        import readline

        history = readline
    if history is None:
        _prompt(run_sql, list_tables, history, warehouse, mode)
        return
    kept = history_file()
    with contextlib.suppress(OSError):  # none yet, or not readable: this session starts without
        history.read_history_file(kept)
    history.set_history_length(HISTORY_LENGTH)
    try:
        _prompt(run_sql, list_tables, history, warehouse, mode)
    finally:
        with contextlib.suppress(OSError):  # a folder not writable: the session's history is not kept, said nowhere
            kept.parent.mkdir(parents=True, exist_ok=True)
            history.write_history_file(kept)


HISTORY_LENGTH = 1000


def history_file() -> Path:
    """$XDG_STATE_HOME/fitsync/sql_history (~/.local/state when unset)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "fitsync" / "sql_history"


def _prompt(
    run_sql: Callable[[str, str], None], list_tables: Callable[[], None], history: Any, warehouse: object, mode: str
) -> None:
    click.echo(f"SQL on {warehouse} (read-only). End a statement with ';'. .help for more, Ctrl-D to leave.")
    buffer = ""
    while True:
        try:
            line = input(MORE if buffer else PROMPT)
        except EOFError:
            click.echo()
            return
        except KeyboardInterrupt:  # drops what was typed, as a shell does; SIGTERM ends the session
            if terminate.received():  # at the prompt: no query was running
                click.echo(f"\n{terminate.said()}: the SQL prompt was closed; nothing was changed.", err=True)
                raise SystemExit(terminate.exit_code()) from None
            click.echo()
            buffer = ""
            continue
        try:
            if not buffer and not line.strip():
                continue
            # a word the SQL prompt answers itself: only at the start of a statement, `;` or not
            command = (line.strip().rstrip(";").lower().split() or [""])[0] if not buffer else ""
            if command in QUIT:
                return
            if command in {".help", "help"}:
                click.echo(HELP)
            elif command == ".tables":
                _shown(list_tables)
            elif command == ".mode":
                chosen = line.strip().rstrip(";").split()[1:]
                if chosen and chosen[0].lower() in MODES:
                    mode = chosen[0].lower()
                elif chosen:
                    click.echo(f".mode {chosen[0]}: not a mode here; choose {' or '.join(MODES)}", err=True)
                else:
                    click.echo(f"{mode} (.mode {' or .mode '.join(MODES)} changes it)")
            elif command.startswith("."):
                click.echo(f"{command}: unknown command, .help lists them", err=True)
            else:
                buffer += line + "\n"
                if complete_statements(buffer):
                    sql, buffer = buffer, ""
                    if history is not None:
                        _one_entry(history, sql)
                    _shown(functools.partial(run_sql, sql, mode))
        except KeyboardInterrupt:  # a statement stopped, or about to start (read-only: nothing to undo)
            if terminate.received():
                raise
            click.echo("Interrupted: the query was stopped.", err=True)
            buffer = ""


def _one_entry(history: Any, statement: str) -> None:
    """The statement's lines as one history entry, as the DuckDB shell keeps it: the up arrow brings back the whole
    statement, not its last line."""
    lines = statement.strip().splitlines()
    if len(lines) < 2:
        return
    for _ in lines:
        if history.get_current_history_length():
            history.remove_history_item(history.get_current_history_length() - 1)
    history.add_history(" ".join(line.strip() for line in lines))


def _shown(run_it: Callable[[], None]) -> None:
    """Runs it; an error is said and the prompt goes on (Ctrl-C stopping it: the prompt's loop)."""
    try:
        run_it()
    except click.ClickException as error:
        click.echo(f"Error: {error.format_message()}", err=True)
