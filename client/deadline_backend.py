"""An overall deadline per request, status line and headers included.

httpx's timeouts are per socket read: a server dripping its status line and headers a byte at a time never
trips them. This network backend wraps each connection's stream so every read waits at most until the
deadline of the request in flight on this thread (`within`), and fails with a read timeout once it is past.
"""

from __future__ import annotations

import contextlib
import threading
import time
import typing
from collections.abc import Iterator

import httpcore
import httpx

from . import stop_request, tls

_local = threading.local()


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Reads on this thread end by `seconds` from now."""
    _local.ends = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.ends = None


# A read waits in slices this long, so a stop asked for (Ctrl-C, SIGTERM) ends even a read the service never answers.
SLICE = 0.25


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        now = time.monotonic()
        ends = getattr(_local, "ends", None)
        limit = min(t for t in (ends, None if timeout is None else now + timeout, float("inf")) if t is not None)
        while True:
            left = limit - time.monotonic()
            if left <= 0:
                raise httpcore.ReadTimeout("the request's deadline passed" if limit == ends else "timed out")
            try:
                return self._inner.read(max_bytes, min(left, SLICE))
            except (
                httpcore.ReadTimeout
            ):  # nothing arrived in this slice (nothing was consumed): wait on, unless stopped
                stop_request.checkpoint()

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: typing.Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Iterable[typing.Any] | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def transport(**options: typing.Any) -> httpx.HTTPTransport:
    """httpx's transport with the deadline backend under its connection pool (httpx has no public hook for the
    backend; tests/client/test_bounded_io.py fails if this stops taking effect)."""
    made = httpx.HTTPTransport(**{"verify": tls.context(), **options})
    pool = made._pool
    pool._network_backend = DeadlineBackend(pool._network_backend or httpcore.SyncBackend())
    return made
