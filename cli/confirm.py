"""The question a destructive command asks before it deletes: a person at a terminal answers it, `--yes` answers it
in advance, and a script that gave neither is stopped before anything changed (exit 2) rather than left waiting
for an answer no one types or deleting what no one agreed to lose."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import termios
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TypeVar

import click

from . import terminate
from .stop_signals import SIGNALS, StopSignals

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
        with _stops_noted() as stops:
            while (answer := _ask(question, stops)) not in ANSWERS:
                click.echo("Please answer y or n.", err=True)
    except _Stopped as stop:
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
    line = _line(stops)
    if not line.endswith("\n"):  # Ctrl-D: end the prompt's line
        click.echo(err=True)
    return line.strip().lower()


def _line(stops: socket.socket) -> str:
    """The terminal's next line ("" at the end of input), or _Stopped for a stop signal noted on `stops` first. The
    line is one read (a terminal gives a line at a time), which a signal cannot leave waiting."""
    while True:
        ready = select.select([sys.stdin, stops], [], [])[0]
        if stops in ready and (signum := _stop_in(stops)) is not None:
            raise _Stopped(signum)
        if sys.stdin in ready:
            return os.read(sys.stdin.fileno(), 4096).decode(sys.stdin.encoding or "utf-8", errors="replace")


def hidden_line(prompt: str) -> str | None:
    """A line typed at the terminal without echo (a secret, as getpass reads it), None at the end of input (Ctrl-D).
    A stop signal while it waits raises KeyboardInterrupt, SIGTERM noted as cli/terminate.py notes it: getpass's
    read, begun just after a signal landed, waited for a line instead."""
    fd = sys.stdin.fileno()
    echoing = termios.tcgetattr(fd)
    quiet = list(echoing)
    quiet[3] &= ~termios.ECHO
    click.echo(prompt, nl=False, err=True)
    try:
        with _stops_noted() as stops:
            termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
            try:
                line = _line(stops)
            finally:
                termios.tcsetattr(fd, termios.TCSAFLUSH, echoing)
    except _Stopped as stop:
        if stop.signum == signal.SIGTERM:
            terminate.RECEIVED.append(stop.signum)
        raise KeyboardInterrupt from None
    click.echo(err=True)  # the typed line's Enter was not echoed either
    return line if line.endswith("\n") else None


class _Stopped(KeyboardInterrupt):
    """A stop signal came while the question waited for its answer."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _stops_noted() -> Iterator[socket.socket]:
    """While the question waits, Ctrl-C and SIGTERM are only noted, on the socket given, for `_ask` to end the
    question with at once; one noted as the answer came ends it too (nothing was changed yet).

    The command's own handlers would not end it: a sync's StopSignals asks to stop at the next safe point, and none
    comes while the read waits; Polars, once loaded, leaves a SIGINT handler that restarts the read; SIGTERM's
    default kills without a word. Nor would a handler that raises, by itself: a signal landing just before the read
    begins leaves the read waiting for a line. The signal's number, written to the wakeup fd whenever it lands,
    does not wait (the self-pipe trick)."""
    reader, writer = socket.socketpair()
    try:
        for end in (reader, writer):
            end.setblocking(False)
        with _noting(writer):
            yield reader
        if (signum := _stop_in(reader)) is not None:
            raise _Stopped(signum)
    finally:
        reader.close()
        writer.close()


@contextlib.contextmanager
def _noting(writer: socket.socket) -> Iterator[None]:
    """Stop signals handled by doing nothing but the interpreter's writing their number to `writer`; the command's
    handlers and wakeup fd are back after."""
    handlers = {signum: signal.getsignal(signum) for signum in SIGNALS}
    wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        for signum in SIGNALS:
            signal.signal(signum, _noted)
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(wakeup)


def _noted(signum: int, frame: FrameType | None) -> None:
    """Nothing: the wakeup fd has the signal's number already."""


def _stop_in(reader: socket.socket) -> int | None:
    """The first stop signal noted on `reader` since it was last read, if any."""
    noted = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := reader.recv(64):
            noted += chunk
    return next((signum for signum in noted if signum in SIGNALS), None)
