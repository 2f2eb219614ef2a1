"""Assembles the sandbox: operation routes, OAuth pages, console, OpenAPI, error pages, background worker."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import console_routes, oauth, openapi, push, store
from .api import endpoint
from .faults import ApiError
from .middleware import SandboxMiddleware
from .operations import OPERATIONS
from .state import SandboxState

log = logging.getLogger(__name__)


def operation_routes(state: SandboxState) -> list[Route]:
    # Literal paths first: Starlette matches in order and /segments/{id} would swallow /segments/starred.
    ordered = sorted(OPERATIONS, key=lambda op: "{" in op.path)
    return [Route(state.api_prefix + op.path, endpoint(state, op), methods=[op.method]) for op in ordered]


def build_app(state: SandboxState, *, run_worker: bool = True) -> SandboxMiddleware:
    doc = openapi.document(OPERATIONS, state.api_prefix, state.auth_prefix)

    async def openapi_json(request: Request) -> Response:
        return JSONResponse(doc)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error = ApiError(
            exc.status_code,
            "Request",
            "path" if exc.status_code == 404 else "method",
            "invalid",
            message="Resource Not Found" if exc.status_code == 404 else None,
        )
        return JSONResponse(error.payload(), status_code=exc.status_code, headers=getattr(exc, "headers", None))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        store.bump(state.conn, "server_errors")
        return JSONResponse(ApiError(500, "Server", "", "error").payload(), status_code=500)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.http = httpx.AsyncClient(follow_redirects=False)
        if run_worker:
            state.worker = push.DeliveryWorker(state.conn, lambda: state.settings, http=state.http)
            task = asyncio.create_task(state.worker.run())
        try:
            yield
        finally:
            if run_worker:
                await state.worker.stop()
                await task
            await state.http.aclose()

    routes = [
        *operation_routes(state),
        Route(f"{state.api_prefix}/openapi.json", openapi_json, methods=["GET"]),
        *oauth.routes(state),
        *console_routes.routes(state),
    ]
    app = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error, Exception: server_error}
    )
    return SandboxMiddleware(app, state)
