"""The question a destructive command asks before it deletes: a person at a terminal answers it, `--yes` answers it
in advance, and a script that gave neither is stopped before anything changed (exit 2) rather than left waiting
for an answer no one types or deleting what no one agreed to lose."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import click

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
    the loss and --yes; "n", Enter or Ctrl-D: "Nothing changed." and exit 1. Ctrl-C is left to the command group
    (exit 130, "nothing half-written was kept": nothing was written yet)."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"not asked, as there is no terminal: {loss}; pass --yes to go ahead")
    click.echo(f"{loss[:1].upper()}{loss[1:]}.", err=True)
    while (answer := _ask(question)) not in ANSWERS:
        click.echo("Please answer y or n.", err=True)
    if not ANSWERS[answer]:
        click.echo("Nothing changed.", err=True)
        raise SystemExit(DECLINED)


def _ask(question: str) -> str:
    """The person's answer, lowercased; "" at the end of input. Asked on stderr: stdout is the command's result."""
    click.echo(f"{question} [y/N]: ", nl=False, err=True)
    line = sys.stdin.readline()
    if not line:  # Ctrl-D: end the prompt's line
        click.echo(err=True)
    return line.strip().lower()
