"""A line typed at the terminal that a stop signal ends at once: Ctrl-C or SIGTERM while a command waits for a
person (a confirmation, a pasted address) is said and ends the command, whenever it lands."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import termios
from collections.abc import Iterator
from types import FrameType

import click

from . import terminate
from .stop_signals import SIGNALS


def line(stops: socket.socket) -> str:
    """The terminal's next line ("" at the end of input), or Stopped for a stop signal noted on `stops` first. The
    line is one read (a terminal gives a line at a time), which a signal cannot leave waiting."""
    while True:
        ready = select.select([sys.stdin, stops], [], [])[0]
        if stops in ready and (signum := _stop_in(stops)) is not None:
            raise Stopped(signum)
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
        with stops_noted() as stops:
            termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
            try:
                typed = line(stops)
            finally:
                termios.tcsetattr(fd, termios.TCSAFLUSH, echoing)
    except Stopped as stop:
        if stop.signum == signal.SIGTERM:
            terminate.RECEIVED.append(stop.signum)
        raise KeyboardInterrupt from None
    click.echo(err=True)  # the typed line's Enter was not echoed either
    return typed if typed.endswith("\n") else None


class Stopped(KeyboardInterrupt):
    """A stop signal came while a line was awaited."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def stops_noted() -> Iterator[socket.socket]:
    """While a line is awaited, Ctrl-C and SIGTERM are only noted, on the socket given, for `line` to end the wait
    with at once; one noted as the line came ends it too.

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
            raise Stopped(signum)
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
