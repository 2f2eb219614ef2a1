"""A bound listening socket for a uvicorn server, taken before anything is printed or created: a port another process
holds is one line naming the fix (exit 1), not a URL followed by uvicorn's own error. Used by the sandbox's server
and by fitsync's (the webhook receiver); it lives here because the sandbox package imports nothing of fitsync's."""

from __future__ import annotations

import errno
import socket

import click


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound as uvicorn binds it."""
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
