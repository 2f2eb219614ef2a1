"""The question a destructive command asks before it deletes: a person at a terminal answers it, `--yes` answers it
in advance, and a script that gave neither is stopped before anything changed (exit 2) rather than left waiting
for an answer no one types or deleting what no one agreed to lose."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable
from typing import TypeVar

import click

from . import terminal_line
from .stop_signals import StopSignals

Command = TypeVar("Command", bound=Callable[..., object])

# What a person may type; Enter alone, or Ctrl-D, is the default: no.
ANSWERS = {"y": True, "yes": True, "n": False, "no": False, "": False}
DECLINED = 1


def yes_option(command: Command) -> Command:
    """The `--yes` (`-y`) flag of a command that asks first."""
    return click.option("--yes", "-y", is_flag=True, help="Do not ask: go ahead (needed off a terminal).")(command)


def confirm(loss: str, question: str, yes: bool) -> None:
    """Return when the deletion may go ahead: `yes` given, or "y" typed at the terminal after `loss` (what is lost,
    a clause such as "this deletes …") and `question`. Off a terminal without `yes`: a usage error (exit 2) naming
    the loss and --yes; "n", Enter or Ctrl-D: "Nothing changed." and exit 1; Ctrl-C or SIGTERM while asked: said
    so at once, and the signal's exit code (130 / 143)."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"not asked, as there is no terminal: {loss}; pass --yes to go ahead")
    click.echo(f"{loss[:1].upper()}{loss[1:]}.", err=True)
    try:
        with terminal_line.stops_noted() as stops:
            while (answer := _ask(question, stops)) not in ANSWERS:
                click.echo("Please answer y or n.", err=True)
    except terminal_line.Stopped as stop:
        click.echo(err=True)  # end the question's line
        said = "Interrupted" if stop.signum == signal.SIGINT else f"Stopped by {StopSignals.name(stop.signum)}"
        click.echo(f"{said}: nothing changed.", err=True)
        raise SystemExit(StopSignals.exit_code(stop.signum)) from None
    if not ANSWERS[answer]:
        click.echo("Nothing changed.", err=True)
        raise SystemExit(DECLINED)


def _ask(question: str, stops: socket.socket) -> str:
    """The person's answer, lowercased; "" at the end of input. Asked on stderr: stdout is the command's result.
    Waits for the terminal's line or for a stop signal noted on `stops`, whichever comes first; the line is one read
    (a terminal gives a line at a time), which a signal cannot leave waiting."""
    click.echo(f"{question} [y/N]: ", nl=False, err=True)
    line = terminal_line.line(stops)
    if not line.endswith("\n"):  # Ctrl-D: end the prompt's line
        click.echo(err=True)
    return line.strip().lower()
