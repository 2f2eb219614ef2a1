"""OAuth 2.0 endpoints (spec §3.2, §4.4, §5): authorize pages, token exchange and refresh, deauthorization."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Awaitable, Callable
from importlib import resources as pkg_resources
from string import Template
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from . import console, flavors, representations, scopes, store, tokens
from .api import bearer_token, read_sources
from .apps import App, authenticate_client, get_app, parse_client_id
from .faults import ApiError, bad_request
from .secrets_util import digest, new_secret
from .state import SandboxState

SESSION_COOKIE = "sandbox_session"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1")
CONSENT_LIFETIME_S = 3600


def _template(name: str) -> Template:
    return Template(pkg_resources.files(__package__).joinpath("templates", name).read_text())


def _page(title: str, content: str, mobile: bool, status: int = 200) -> HTMLResponse:
    body = _template("page.html").substitute(
        title=html.escape(title), content=content, layout="mobile" if mobile else ""
    )
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})


def redirect_allowed(redirect_uri: str, callback_domain: str) -> bool:
    """http(s) inside the registered callback domain (or a subdomain); localhost and 127.0.0.1 always pass."""
    try:
        parts = urlsplit(redirect_uri)
        host = (parts.hostname or "").lower()
        _ = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        return False  # javascript:, data:, ftp: and app schemes are refused even for the registered domain
    if host in LOOPBACK_HOSTS:
        return True
    return host == callback_domain or host.endswith("." + callback_domain)


def with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) + [(k, v) for k, v in params.items()]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _authorize_request(state: SandboxState, query: dict[str, str]) -> tuple[App, str, list[str], str | None, str]:
    """Check §5.3 before anything is shown: bad requests never reach the athlete."""
    app = get_app(state.conn, parse_client_id(query.get("client_id")))
    if app is None:
        raise bad_request("Application", "client_id")
    redirect_uri = query.get("redirect_uri") or ""
    if not redirect_uri:
        raise bad_request("Application", "redirect_uri", "missing")
    if len(redirect_uri) > 2048 or not redirect_allowed(redirect_uri, app.callback_domain):
        raise bad_request("Application", "redirect_uri")
    if query.get("response_type") != "code":
        raise bad_request("Application", "response_type", "missing" if not query.get("response_type") else "invalid")
    prompt = query.get("approval_prompt") or "auto"
    if prompt not in ("auto", "force"):
        raise bad_request("Application", "approval_prompt")
    requested = scopes.parse(query.get("scope"))
    if not query.get("scope"):
        raise bad_request("Application", "scope", "missing")
    if requested is None or not requested:
        raise bad_request("Application", "scope")
    state_param = query.get("state")
    if state_param is not None and len(state_param) > 2048:
        raise bad_request("Application", "state")
    return app, redirect_uri, requested, state_param, prompt


def _session_athlete(state: SandboxState, request: Request) -> int | None:
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        return None
    row = state.conn.execute("SELECT athlete_id FROM browser_sessions WHERE hash = ?", (digest(cookie),)).fetchone()
    return row["athlete_id"] if row else None


def _fault(error: ApiError) -> JSONResponse:
    return JSONResponse(error.payload(), status_code=error.status)


def authorize_page(state: SandboxState, mobile: bool) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        query = dict(request.query_params)
        try:
            app, redirect_uri, requested, state_param, prompt = _authorize_request(state, query)
        except ApiError as error:
            return _fault(error)
        athlete_id = _session_athlete(state, request)
        if athlete_id is None:
            return _login_page(state, request, mobile)
        granted = tokens.active_grant_scope(state.conn, app.id, athlete_id)
        if prompt == "auto" and granted is not None and set(requested) <= set(granted.split()):
            with store.transaction(state.conn):
                code = tokens.issue_code(
                    state.conn, app, athlete_id, redirect_uri, scopes.render(requested), state.settings
                )
            return _redirect_back(
                redirect_uri, {"code": code, "scope": ",".join(scopes.render(requested).split())}, state_param
            )
        request_id = new_secret()
        with store.transaction(state.conn):
            state.conn.execute(
                """INSERT INTO consent_requests (hash, app_id, athlete_id, redirect_uri, scope, state, created_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                (
                    digest(request_id),
                    app.id,
                    athlete_id,
                    redirect_uri,
                    " ".join(requested),
                    state_param,
                    int(time.time()),
                ),
            )
        return _consent_page(state, app, athlete_id, requested, redirect_uri, request_id, mobile)

    return handle


def _login_page(state: SandboxState, request: Request, mobile: bool) -> HTMLResponse:
    options = "\n".join(
        f'    <option value="{r["id"]}">{html.escape(r["name"])} ({r["id"]})</option>'
        for r in state.conn.execute(
            "SELECT id, json_extract(data, '$.firstname') || ' ' || json_extract(data, '$.lastname') AS name "
            "FROM athletes ORDER BY id"
        )
    )
    next_url = request.url.path + ("?" + request.url.query if request.url.query else "")
    content = _template("login.html").substitute(
        action=html.escape(f"{state.auth_prefix}/session"), next=html.escape(next_url), options=options
    )
    return _page("Sign in", content, mobile)


def _consent_page(
    state: SandboxState,
    app: App,
    athlete_id: int,
    requested: list[str],
    redirect_uri: str,
    request_id: str,
    mobile: bool,
) -> HTMLResponse:
    athlete = json.loads(state.conn.execute("SELECT data FROM athletes WHERE id = ?", (athlete_id,)).fetchone()["data"])
    boxes = "\n".join(
        f'  <label class="scope"><input type="checkbox" name="scope" value="{html.escape(name)}" checked> '
        f"<code>{html.escape(name)}</code><small>{html.escape(scopes.SCOPES[name])}</small></label>"
        for name in requested
    )
    content = _template("consent.html").substitute(
        app_name=html.escape(app.name),
        athlete_name=html.escape(f"{athlete['firstname']} {athlete['lastname']}"),
        action=html.escape(f"{state.auth_prefix}/authorize"),
        request=html.escape(request_id),
        scopes=boxes,
        redirect_host=html.escape(urlsplit(redirect_uri).hostname or ""),
    )
    return _page(f"Authorize {app.name}", content, mobile)


def _redirect_back(redirect_uri: str, params: dict[str, str], state_param: str | None) -> RedirectResponse:
    if state_param is not None:
        params = {**params, "state": state_param}
    return RedirectResponse(with_query(redirect_uri, params), status_code=302)


def sign_in(state: SandboxState) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        form = await request.form()
        next_url = str(form.get("next") or "")
        try:
            athlete_id = int(str(form.get("athlete_id")))
        except ValueError:
            return _fault(bad_request("Athlete", "athlete_id"))
        if state.conn.execute("SELECT 1 FROM athletes WHERE id = ?", (athlete_id,)).fetchone() is None:
            return _fault(bad_request("Athlete", "athlete_id"))
        next_parts = urlsplit(next_url)  # only the path is checked: the query may hold an unencoded redirect_uri
        if (
            next_parts.scheme
            or next_parts.netloc
            or not next_parts.path.startswith(state.auth_prefix + "/")
            or "//" in next_parts.path
            or "\\" in next_parts.path
        ):
            return _fault(bad_request("Session", "next"))  # no open redirects
        session = new_secret()
        with store.transaction(state.conn):
            state.conn.execute(
                "INSERT INTO browser_sessions (hash, athlete_id, created_at) VALUES (?, ?, ?)",
                (digest(session), athlete_id, int(time.time())),
            )
        response = RedirectResponse(next_url, status_code=303)
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="lax", path=state.auth_prefix)
        return response

    return handle


def decide(state: SandboxState) -> Callable[[Request], Awaitable[Response]]:
    """The consent form's POST: accept with the ticked scopes, or deny."""

    async def handle(request: Request) -> Response:
        form = await request.form()
        request_id = str(form.get("request") or "")
        athlete_id = _session_athlete(state, request)
        with store.transaction(state.conn):
            row = state.conn.execute("SELECT * FROM consent_requests WHERE hash = ?", (digest(request_id),)).fetchone()
            if row is None or athlete_id != row["athlete_id"] or row["created_at"] + CONSENT_LIFETIME_S < time.time():
                return _fault(bad_request("AuthorizationRequest", "request"))
            state.conn.execute("DELETE FROM consent_requests WHERE hash = ?", (row["hash"],))
            if form.get("decision") != "accept":
                return _redirect_back(row["redirect_uri"], {"error": "access_denied"}, row["state"])
            requested = row["scope"].split()
            ticked = [s for s in form.getlist("scope") if isinstance(s, str) and s in requested]
            granted = scopes.render(ticked)
            app = get_app(state.conn, row["app_id"])
            assert app is not None
            code = tokens.issue_code(state.conn, app, row["athlete_id"], row["redirect_uri"], granted, state.settings)
        return _redirect_back(row["redirect_uri"], {"code": code, "scope": ",".join(granted.split())}, row["state"])

    return handle


def token_endpoint(state: SandboxState) -> Callable[[Request], Awaitable[Response]]:
    """§5.4 and §5.5: parameters in the query or the form body."""

    async def handle(request: Request) -> Response:
        try:
            sources = await read_sources(request)
            p: dict[str, Any] = {**sources["query"], **sources.get("body", {}), **sources.get("form", {})}
            app = authenticate_client(state.conn, p.get("client_id"), p.get("client_secret"))
            grant_type = p.get("grant_type")
            if not grant_type:
                raise bad_request("Application", "grant_type", "missing")
            if grant_type == "authorization_code":
                if not isinstance(p.get("code"), str) or not p["code"]:
                    raise bad_request("AuthorizationCode", "code", "missing")
                issued = tokens.exchange_code(
                    state.conn, app, p["code"], p.get("redirect_uri"), state.server_secret, state.settings
                )
                body = flavors.token_exchange_body(_token_body(issued), issued.scope, state.settings.flavor)
                body["athlete"] = representations.athlete(state.conn, issued.athlete_id, detailed=False)
                return JSONResponse(body, headers={"Cache-Control": "no-store"})
            if grant_type == "refresh_token":
                if not isinstance(p.get("refresh_token"), str) or not p["refresh_token"]:
                    raise bad_request("RefreshToken", "refresh_token", "missing")
                issued = tokens.refresh(state.conn, app, p["refresh_token"], state.server_secret, state.settings)
                return JSONResponse(_token_body(issued), headers={"Cache-Control": "no-store"})
            raise bad_request("Application", "grant_type")
        except ApiError as error:
            return _fault(error)

    return handle


def _token_body(issued: tokens.IssuedTokens) -> dict[str, Any]:
    return {
        "token_type": "Bearer",
        "access_token": issued.access_token,
        "expires_at": int(issued.access_expires_at),
        "expires_in": max(0, int(issued.access_expires_at - time.time())),
        "refresh_token": issued.refresh_token,
    }


def deauthorize_endpoint(state: SandboxState) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            sources = await read_sources(request)
            token = bearer_token(request, {**sources["query"], **sources.get("form", {})})
            if token is None:
                raise ApiError(401, "Athlete", "access_token", "missing")
            grant = tokens.resolve(state.conn, token)
            console.revoke_app(state.conn, grant.app_id, grant.athlete_id)
            state.wake_worker()
            return JSONResponse({"access_token": token})
        except ApiError as error:
            return _fault(error)

    return handle


def routes(state: SandboxState) -> list[Route]:
    a = state.auth_prefix
    return [
        Route(f"{a}/authorize", authorize_page(state, mobile=False), methods=["GET"]),
        Route(f"{a}/mobile/authorize", authorize_page(state, mobile=True), methods=["GET"]),
        Route(f"{a}/authorize", decide(state), methods=["POST"]),
        Route(f"{a}/session", sign_in(state), methods=["POST"]),
        Route(f"{a}/token", token_endpoint(state), methods=["POST"]),
        Route(f"{state.api_prefix}/oauth/token", token_endpoint(state), methods=["POST"]),
        Route(f"{a}/deauthorize", deauthorize_endpoint(state), methods=["POST"]),
        Route(f"{a}/revoke", deauthorize_endpoint(state), methods=["POST"]),
        # Where stravalib and other clients send it (with a bearer header), beside the spec's address.
        Route(f"{state.api_prefix}/oauth/deauthorize", deauthorize_endpoint(state), methods=["POST"]),
    ]
