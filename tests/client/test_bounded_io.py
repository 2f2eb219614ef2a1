"""A broken or hostile server cannot make fitsync read without end: an endless body stops at the size cap, a body
dripped a byte at a time stops at the deadline, both with an error naming the endpoint (real HTTP, loopback)."""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fitsync.client import stop_request
from fitsync.client.transport import DeadlineExceeded, ResponseTooLarge, ServiceUnresponsive, Transport
from fitsync.sandbox.server import UvicornThread

MiB = 1024 * 1024


async def endless(request: Request) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        while not await request.is_disconnected():  # endless for the client; the server stops when it hangs up
            yield b"[" + b"0," * (MiB // 2)
            await asyncio.sleep(0)

    return StreamingResponse(chunks(), media_type="application/json")


async def dripping(request: Request) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"["
        while not await request.is_disconnected():
            await asyncio.sleep(0.05)  # well inside the per-read timeout, for ever
            yield b"1,"

    return StreamingResponse(chunks(), media_type="application/json")


async def hanging(request: Request) -> Response:
    """Accepts the request and never answers (until the client hangs up)."""
    while not await request.is_disconnected():
        await asyncio.sleep(0.05)
    return Response(b"")


async def announced(request: Request) -> Response:
    return Response(b"[]", media_type="application/json", headers={"Content-Length": str(10 * 1024 * MiB)})


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    app = Starlette(
        routes=[
            Route("/endless", endless),
            Route("/dripping", dripping),
            Route("/announced", announced),
            Route("/hanging", hanging),
        ]
    )
    with UvicornThread(app) as server:
        yield server.base_url


def test_an_endless_body_stops_at_the_cap(hostile: str) -> None:
    transport = Transport(None, timeout=5, max_retries=1, max_response_bytes=8 * MiB)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ResponseTooLarge, match=r"GET /endless: the answer grew past 8,388,608 bytes"):
        transport.request("GET", hostile + "/endless", budget=None)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 64, f"reading the endless body grew the process by {grown_mib:.0f} MiB"
    assert transport.calls == 1  # not retried


def test_an_announced_huge_body_is_refused_before_reading(hostile: str) -> None:
    transport = Transport(None, timeout=5, max_retries=3, max_response_bytes=8 * MiB)
    with pytest.raises(ResponseTooLarge, match="announces 10,737,418,240 bytes"):
        transport.request("GET", hostile + "/announced", budget=None)


def test_a_dripping_body_stops_at_the_deadline(hostile: str) -> None:
    transport = Transport(None, timeout=5, max_retries=3, deadline=1.0)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"GET /dripping: the answer was not read whole within 1 s"):
        transport.request("GET", hostile + "/dripping", budget=None)
    assert time.monotonic() - started < 5 and transport.calls == 1


@pytest.fixture(scope="module")
def header_drip() -> Iterator[str]:
    """A raw server that sends its status line and then headers one byte every 50 ms, for ever."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not stop.wait(0.05):
                    conn.sendall(b"X")  # a header name that never ends
            except OSError:
                pass  # the client hung up: done

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()


def test_headers_dripped_a_byte_at_a_time_stop_at_the_deadline(header_drip: str) -> None:
    transport = Transport(None, timeout=5, max_retries=3, deadline=1.0)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"GET /activities: the answer was not read whole within 1 s"):
        transport.request("GET", header_drip + "/activities", budget=None)
    assert time.monotonic() - started < 5 and transport.calls == 1  # not retried


def test_a_service_that_never_answers_costs_one_requests_retries_then_nothing_is_sent(hostile: str) -> None:
    """A service that accepts and never answers: the first request times out through its retries, the next ones fail
    at once with the reason, for `quiet_seconds` (a sync of an athlete ends in one request's retries, not in each
    endpoint's in turn)."""
    import httpx

    transport = Transport(None, timeout=0.3, max_retries=2, backoff_initial=0.01, quiet_seconds=60)
    with pytest.raises(httpx.ReadTimeout):
        transport.request("GET", hostile + "/hanging", budget=None)
    started = time.monotonic()
    with pytest.raises(
        ServiceUnresponsive,
        match=r"not sent: the service left GET /hanging "
        r"unanswered \(ReadTimeout after 2 tries\)",
    ):
        transport.request("GET", hostile + "/announced", budget=None)
    assert time.monotonic() - started < 0.1 and transport.calls == 2


def test_a_stop_ends_a_read_the_service_never_answers(hostile: str) -> None:
    """Ctrl-C or SIGTERM during a read that would wait 30 s: the read ends within a fraction of a second."""
    import threading

    transport = Transport(None, timeout=30, max_retries=1)
    stopper = threading.Timer(0.3, stop_request.request)
    started = time.monotonic()
    stopper.start()
    try:
        with pytest.raises(stop_request.StopRequested):
            transport.request("GET", hostile + "/hanging", budget=None)
    finally:
        stop_request.clear()
    assert time.monotonic() - started < 1.5
