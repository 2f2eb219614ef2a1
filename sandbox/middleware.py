"""ASGI middleware: request counters, body-size limit and fault injection (latency, 5xx, dropped connections,
answers lost after the request took effect)."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import store
from .faults import ApiError
from .state import SandboxState

INJECTED_STATUSES = (500, 502, 503)


class DroppedConnection(Exception):
    """Raised after a partial response so the server closes the socket mid-answer."""


async def send_fault(send: Send, error: ApiError, headers: dict[str, str] | None = None) -> None:
    body = json.dumps(error.payload()).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": error.status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def drop_connection(send: Send) -> None:
    """Start a response and break it off: the client sees the connection fail mid-answer."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"4096")],
        }
    )
    await send({"type": "http.response.body", "body": b"{", "more_body": True})
    raise DroppedConnection("injected dropped connection")


class SandboxMiddleware:
    def __init__(self, app: ASGIApp, state: SandboxState, rng: random.Random | None = None) -> None:
        self.app = app
        self.state = state
        self.rng = rng or random.Random()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        public = path.startswith(self.state.api_prefix) or path.startswith(self.state.auth_prefix)
        settings = self.state.settings
        if public:
            store.bump(self.state.conn, "requests")
            if settings.fault_latency_ms or settings.fault_latency_jitter_ms:
                delay = settings.fault_latency_ms + self.rng.random() * settings.fault_latency_jitter_ms
                await asyncio.sleep(delay / 1000)
            roll = self.rng.random()
            if roll < settings.fault_drop_rate:
                store.bump(self.state.conn, "injected_drops")
                await drop_connection(send)
            if roll < settings.fault_drop_rate + settings.fault_error_rate:
                store.bump(self.state.conn, "injected_errors")
                status = self.rng.choice(INJECTED_STATUSES)
                await send_fault(send, ApiError(status, "Server", "", "injected fault"))
                return
        try:
            receive = await self._limited_body(scope, receive, settings.max_body_bytes)
        except _TooLarge:
            store.bump(self.state.conn, "rejected_large_bodies")
            await send_fault(send, ApiError(413, "Request", "body", "too large"))
            return

        async def counting_send(message: Message) -> None:
            if public and message["type"] == "http.response.start":
                store.bump(self.state.conn, f"status_{message['status']}")
            await send(message)

        if public and self._loses_answer(scope, settings):

            async def discard(message: Message) -> None:
                pass

            await self.app(scope, receive, discard)  # handled and committed: only the answer goes missing
            store.bump(self.state.conn, "injected_lost_responses")
            await drop_connection(send)
        await self.app(scope, receive, counting_send)

    def _loses_answer(self, scope: Scope, settings: Any) -> bool:
        """Counts down fault_lost_responses (one event loop: no two requests take the same one)."""
        left = settings.fault_lost_responses
        if not left or not f"{scope['method']} {scope['path']}".startswith(settings.fault_lost_response_match):
            return False
        self.state.update_settings({"fault_lost_responses": left - 1})
        return True

    async def _limited_body(self, scope: Scope, receive: Receive, limit: int) -> Receive:
        """Read the body up front (it is small by construction) and refuse anything over the limit."""
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return _replay([message])
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            chunks.append(chunk)
            more = message.get("more_body", False)
        return _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}])


class _TooLarge(Exception):
    pass


def _replay(messages: list[Message]) -> Receive:
    queue = list(messages)

    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        return {"type": "http.disconnect"}

    return receive
