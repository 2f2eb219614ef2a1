"""HTTP endpoints of the athlete console and the test hooks, under /sandbox, behind the console key."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import console, push, store
from .faults import ApiError, bad_request
from .state import SandboxState

CONSOLE_KEY_HEADER = "x-sandbox-console-key"
Handler = Callable[[SandboxState, Request, dict[str, Any]], Any]


def _guarded(state: SandboxState, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            key = request.headers.get(CONSOLE_KEY_HEADER, "")
            if not hmac.compare_digest(key.encode(), state.console_key.encode()):
                raise ApiError(401, "Console", "console_key", "invalid")
            body: dict[str, Any] = {}
            if request.method in ("POST", "PUT", "PATCH"):
                raw = await request.body()
                try:
                    body = json.loads(raw) if raw.strip() else {}
                except (ValueError, RecursionError):
                    raise bad_request("Request", "body") from None
                if not isinstance(body, dict):
                    raise bad_request("Request", "body")
            result = handler(state, request, body)
        except ApiError as error:
            return JSONResponse(error.payload(), status_code=error.status)
        except (TypeError, ValueError) as error:
            return JSONResponse(bad_request("Request", "body").payload() | {"message": str(error)}, status_code=400)
        state.wake_worker()
        return Response(status_code=204) if result is None else JSONResponse(result)

    return endpoint


def _int(request: Request, name: str) -> int:
    try:
        return int(request.path_params[name])
    except ValueError:
        raise bad_request("Request", name) from None


def _bool(body: dict[str, Any], name: str) -> bool:
    value = body.get(name)
    if not isinstance(value, bool):
        raise bad_request("Request", name, "missing" if value is None else "invalid")
    return value


def _str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise bad_request("Request", name)
    return value


ATHLETE_OPTIONS = ("firstname", "lastname", "sex", "measurement_preference", "region")


def add_athlete(state: SandboxState, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {k: _str(body, k) for k in ATHLETE_OPTIONS if k in body}
    options["premium"] = _bool(body, "premium") if "premium" in body else True
    return {"id": console.add_athlete(state.conn, **options)}


def record_activity(state: SandboxState, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {
        "visibility": _str(body, "visibility") or "everyone",
        "sport_type": _str(body, "sport_type") or "Ride",
    }
    if body.get("name") is not None:
        options["name"] = _str(body, "name")
    if body.get("start_date") is not None:
        options["start_date"] = console.parse_when(body["start_date"])
    for key in ("distance", "moving_time"):
        if body.get(key) is not None:
            if isinstance(body[key], bool) or not isinstance(body[key], (int, float)) or body[key] <= 0:
                raise bad_request("Activity", key)
            options[key] = body[key]
    if body.get("device") is not None:  # false: a phone recording, without heart rate or power
        if not isinstance(body["device"], bool):
            raise bad_request("Activity", "device")
        options["device"] = body["device"]
    return {"id": console.record_activity(state.conn, _int(request, "id"), **options)}


def update_activity(state: SandboxState, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return console.update_activity(
        state.conn,
        _int(request, "id"),
        name=_str(body, "name"),
        sport_type=_str(body, "sport_type"),
        visibility=_str(body, "visibility"),
    )


def revoke(state: SandboxState, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    client_id = body.get("client_id")
    if not isinstance(client_id, int) or isinstance(client_id, bool):
        raise bad_request("Request", "client_id")
    return {"revoked_token_families": console.revoke_app(state.conn, client_id, _int(request, "id"))}


def create_app(state: SandboxState, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return console.register_app(state.conn, _str(body, "name") or "", _str(body, "callback_domain") or "")


def settings(state: SandboxState, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    if request.method == "PUT":
        return state.update_settings(body).to_json()
    return state.settings.to_json()


def reset_counters(state: SandboxState, request: Request, body: dict[str, Any]) -> None:
    with store.transaction(state.conn):
        state.conn.execute("DELETE FROM counters")


def routes(state: SandboxState) -> list[Route]:
    def r(path: str, handler: Handler, methods: list[str]) -> Route:
        return Route(f"/sandbox{path}", _guarded(state, handler), methods=methods)

    return [
        Route("/sandbox/health", lambda request: JSONResponse({"ok": True}), methods=["GET"]),
        r("/athletes", lambda s, q, b: console.list_athletes(s.conn), ["GET"]),
        r("/athletes", add_athlete, ["POST"]),
        r(
            "/athletes/{id}/premium",
            lambda s, q, b: console.set_premium(s.conn, _int(q, "id"), _bool(b, "premium")),
            ["PUT"],
        ),
        r("/athletes/{id}/activities", record_activity, ["POST"]),
        r("/athletes/{id}/revoke", revoke, ["POST"]),
        r("/activities/{id}", update_activity, ["PATCH"]),
        r("/activities/{id}", lambda s, q, b: console.delete_activity(s.conn, _int(q, "id")), ["DELETE"]),
        r("/apps", create_app, ["POST"]),
        r("/settings", settings, ["GET", "PUT"]),
        r("/counters", lambda s, q, b: store.counters(s.conn), ["GET"]),
        r("/counters", reset_counters, ["DELETE"]),
        r("/events", lambda s, q, b: push.list_events(s.conn), ["GET"]),
        r("/deliveries", lambda s, q, b: push.delivery_log(s.conn), ["GET"]),
    ]
