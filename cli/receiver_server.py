"""uvicorn's server for `fitsync webhooks serve`: the address bound before anything is printed, its graceful stop,
then fitsync's own last line and exit code instead of re-raising the signal. A module of its own so that uvicorn is
imported only when the receiver runs."""

from __future__ import annotations

import contextlib
import errno
import signal
import socket
from collections.abc import Iterator
from types import FrameType

import click
import uvicorn


def listening_socket(host: str, port: int) -> socket.socket:
    """The receiver's socket, bound (as uvicorn binds it) before the server starts: a port another process holds
    is one line and exit 1, instead of "Receiving events at …" followed by uvicorn's own error."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise click.ClickException(f"cannot listen on {host}: {error.strerror}; check --host") from None
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as error:
        listener.close()
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} is in use on {host}: stop what listens there, or pass --port with a free one"
            ) from None
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror}") from None
    return listener


class ReceiverServer(uvicorn.Server):
    stop_signal: int | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stop_signal = self.stop_signal or sig
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
