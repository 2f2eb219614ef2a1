"""The resource-operation pipeline: authenticate, charge the rate budget, parse parameters, check scopes."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import ratelimit, scopes, tokens
from .apps import App, authenticate_client
from .broken_answers import broken
from .faults import ApiError, bad_request, missing_scope, subscription_required
from .params import Location, Param, parse_all
from .state import SandboxState

Auth = Literal["token", "client"]


@dataclass(frozen=True)
class Operation:
    """One public operation; the table of these drives routing, validation and the OpenAPI document."""

    operation_id: str
    method: str
    path: str
    handler: Callable[[Call], Any]
    resource: str
    summary: str
    params: tuple[Param, ...] = ()
    scopes: tuple[str, ...] = ()
    premium: bool = False
    auth: Auth = "token"
    status: int = 200
    response: str = ""
    counts_as_read: bool = True
    tags: tuple[str, ...] = ()


@dataclass
class Call:
    """A request that passed the pipeline, as handlers see it."""

    state: SandboxState
    op: Operation
    params: dict[str, Any]
    app: App | None = None
    grant: tokens.TokenGrant | None = None
    granted: frozenset[str] = field(default_factory=frozenset)

    @property
    def conn(self):
        return self.state.conn

    @property
    def athlete_id(self) -> int:
        assert self.grant is not None
        return self.grant.athlete_id

    def has(self, scope: str) -> bool:
        return scope in self.granted

    def require(self, scope: str) -> None:
        if scope not in self.granted:
            raise missing_scope(scope)


def bearer_token(request: Request, query_or_form: dict[str, Any]) -> str | None:
    """Both `Authorization: Bearer` and an `access_token` parameter are accepted; real clients send either."""
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer " and header[7:].strip():
        return header[7:].strip()
    value = query_or_form.get("access_token")
    return value if isinstance(value, str) and value else None


async def read_sources(request: Request) -> dict[Location, dict[str, Any]]:
    """Query, form and JSON body of a request; a body that cannot be read is a 400."""
    sources: dict[Location, dict[str, Any]] = {
        "path": dict(request.path_params),
        "query": _single(request.query_params),
    }
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method != "HEAD":  # bodies are read on GET too: clients may keep credentials out of the URL
        if ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            try:
                form: FormData = await request.form(max_files=0, max_fields=200)
            except Exception:
                raise bad_request("Request", "body") from None
            sources["form"] = {k: v for k, v in form.items() if isinstance(v, str)}
        elif ctype == "application/json":
            body = await request.body()
            if body.strip():
                try:
                    parsed = json.loads(body)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    raise bad_request("Request", "body") from None
                if not isinstance(parsed, dict):
                    raise bad_request("Request", "body")
                sources["body"] = parsed
        elif request.method in ("POST", "PUT", "PATCH") and (await request.body()).strip():
            # A body the service cannot read must not be silently ignored.
            raise ApiError(415, "Request", "content-type", "unsupported")
    return sources


def _single(multi: Any) -> dict[str, str]:
    return {k: v for k, v in multi.items()}


def endpoint(state: SandboxState, op: Operation) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        headers: dict[str, str] = {}
        try:
            sources = await read_sources(request)
            call = Call(state, op, {})
            settings = state.settings
            credentials = {**sources["query"], **sources.get("form", {})}
            if op.auth == "token":
                token = bearer_token(request, credentials)
                if token is None:
                    raise ApiError(401, "Athlete", "access_token", "missing")
                call.grant = tokens.resolve(state.conn, token)
                call.granted = scopes.effective(call.grant.scope)
                app_id = call.grant.app_id
            else:
                call.app = authenticate_client(
                    state.conn, credentials.get("client_id"), credentials.get("client_secret")
                )
                app_id = call.app.id
            usage, refused = ratelimit.charge(state.conn, app_id, op.counts_as_read, settings)
            headers = usage.headers(settings)
            if refused is not None:
                raise refused
            for scope in op.scopes:
                call.require(scope)
            call.params = parse_all(op.params, sources, op.resource)
            if op.premium and not _is_premium(state, call.athlete_id):
                raise subscription_required()
            result = op.handler(call)
            if inspect.isawaitable(result):
                result = await result
        except ApiError as error:
            return JSONResponse(error.payload(), status_code=error.status, headers=headers)
        if (fault := state.settings.fault_answers.get(f"{op.method} {op.path}")) is not None:
            return Response(
                broken(result, fault),
                status_code=int(fault.get("status", op.status)),
                headers={**headers, **fault.get("headers", {})},
                media_type=fault.get("media_type", "application/json"),
            )
        if result is None:
            return Response(status_code=204, headers=headers)
        return JSONResponse(result, status_code=op.status, headers=headers)

    handle.__name__ = op.operation_id
    return handle


def _is_premium(state: SandboxState, athlete_id: int) -> bool:
    row = state.conn.execute("SELECT premium FROM athletes WHERE id = ?", (athlete_id,)).fetchone()
    return bool(row and row["premium"])
