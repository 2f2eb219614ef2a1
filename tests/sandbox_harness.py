"""Driving a running sandbox from tests: console calls, apps, OAuth grants and API clients."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from fitsync.client import tls
from fitsync.sandbox import browser, scopes
from fitsync.sandbox.server import ServerThread

ALL_SCOPES = tuple(scopes.SCOPES)  # every scope the sandbox's authorization page knows
REDIRECT_URI = "http://localhost:9999/callback"
# The service's own 404 for an activity it does not have (a `fault_answers` entry): its word that the activity is gone.
ACTIVITY_NOT_FOUND = {
    "status": 404,
    "media_type": "application/json",
    "text": '{"message":"Record Not Found","errors":[{"resource":"Activity","field":"id","code":"invalid"}]}',
}
# Everything a request could change, except bookkeeping (rate usage, counters, browser sessions).
STATE_TABLES = (
    "apps",
    "athletes",
    "gear",
    "segments",
    "stars",
    "activities",
    "efforts",
    "grants",
    "codes",
    "token_families",
    "access_tokens",
    "refresh_tokens",
    "subscriptions",
    "events",
)


@dataclass
class App:
    client_id: int
    client_secret: str

    def creds(self) -> dict[str, Any]:
        return {"client_id": self.client_id, "client_secret": self.client_secret}


@dataclass
class Grant:
    app: App
    athlete_id: int
    access_token: str
    refresh_token: str
    expires_at: int
    scope: str
    body: dict[str, Any]


class Harness:
    def __init__(self, server: ServerThread) -> None:
        self.server = server
        self.http = httpx.Client(base_url=server.base_url, timeout=15, verify=tls.context())
        self.console = httpx.Client(
            base_url=server.base_url + "/sandbox",
            timeout=15,
            headers={"X-Sandbox-Console-Key": server.console_key},
            verify=tls.context(),
        )

    # world
    def athletes(self) -> list[dict[str, Any]]:
        return self.console.get("/athletes").json()

    def athlete_id(self, premium: bool | None = True, index: int = 0) -> int:
        chosen = [a for a in self.athletes() if premium is None or a["premium"] == premium]
        return chosen[index]["id"]

    def snapshot(self, tables: tuple[str, ...] = STATE_TABLES) -> dict[str, list[tuple[Any, ...]]]:
        """The server's stored state, read through a separate read-only connection (WAL allows it)."""
        conn = sqlite3.connect(f"file:{self.server.options.db}?mode=ro", uri=True)
        try:
            return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables}
        finally:
            conn.close()

    def counters(self) -> dict[str, int]:
        return self.console.get("/counters").json()

    @contextlib.contextmanager
    def settings(self, **changes: Any) -> Iterator[dict[str, Any]]:
        before = self.console.get("/settings").json()
        response = self.console.put("/settings", json=changes)
        assert response.status_code == 200, response.text
        try:
            yield response.json()
        finally:
            self.console.put("/settings", json={k: before[k] for k in changes})

    # OAuth
    def new_app(self, domain: str = "localhost") -> App:
        body = self.console.post(
            "/apps", json={"name": f"test-{secrets.token_hex(3)}", "callback_domain": domain}
        ).json()
        return App(body["client_id"], body["client_secret"])

    def authorize_url(
        self,
        app: App,
        scope: str,
        *,
        state: str | None = None,
        redirect_uri: str = REDIRECT_URI,
        prompt: str | None = None,
        mobile: bool = False,
    ) -> str:
        params: dict[str, Any] = {
            "client_id": app.client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": scope,
        }
        if state is not None:
            params["state"] = state
        if prompt is not None:
            params["approval_prompt"] = prompt
        path = "/oauth/mobile/authorize" if mobile else "/oauth/authorize"
        return str(httpx.URL(path, params=params))

    def browser(self) -> httpx.Client:
        """A fresh 'browser' (its own cookie jar; the process's TLS context: making one costs ≈ 45 ms)."""
        return httpx.Client(base_url=self.server.base_url, timeout=15, verify=tls.context())

    def consent(
        self, app: App, athlete_id: int, scopes: tuple[str, ...] = ALL_SCOPES, untick: tuple[str, ...] = ()
    ) -> tuple[str, str]:
        """(code, granted scope) from the redirect back: the real service's token answer has no `scope`."""
        with self.browser() as b:
            redirect = browser.consent(b, self.authorize_url(app, ",".join(scopes)), athlete_id, untick=untick)
        return redirect.params["code"], redirect.params.get("scope", "")

    def code(
        self, app: App, athlete_id: int, scopes: tuple[str, ...] = ALL_SCOPES, untick: tuple[str, ...] = ()
    ) -> str:
        return self.consent(app, athlete_id, scopes, untick)[0]

    def exchange(self, app: App, code: str) -> httpx.Response:
        return self.http.post("/oauth/token", data={**app.creds(), "code": code, "grant_type": "authorization_code"})

    def refresh(self, app: App, refresh_token: str) -> httpx.Response:
        return self.http.post(
            "/oauth/token", data={**app.creds(), "refresh_token": refresh_token, "grant_type": "refresh_token"}
        )

    def connect(
        self,
        scopes: tuple[str, ...] = ALL_SCOPES,
        athlete_id: int | None = None,
        app: App | None = None,
        untick: tuple[str, ...] = (),
    ) -> Grant:
        app = app or self.new_app()
        athlete_id = athlete_id or self.athlete_id()
        code, granted = self.consent(app, athlete_id, scopes, untick)
        response = self.exchange(app, code)
        assert response.status_code == 200, response.text
        body = response.json()
        return Grant(
            app,
            athlete_id,
            body["access_token"],
            body["refresh_token"],
            body["expires_at"],
            body.get("scope", " ".join(granted.split(","))),
            body,
        )

    # API
    def api(self, grant: Grant | str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        token = grant.access_token if isinstance(grant, Grant) else grant
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        headers.update(kwargs.pop("headers", {}))
        return self.http.request(method, "/api/v3" + path, headers=headers, **kwargs)

    def get(self, grant: Grant | str | None, path: str, **kwargs: Any) -> httpx.Response:
        return self.api(grant, "GET", path, **kwargs)


def assert_fault(
    response: httpx.Response, status: int, field: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """A non-success answer is the Fault payload with the expected status (and field/code when given)."""
    assert response.status_code == status, f"{response.status_code} != {status}: {response.text}"
    body = response.json()
    assert isinstance(body.get("message"), str) and body["message"]
    assert isinstance(body.get("errors"), list) and body["errors"]
    for error in body["errors"]:
        assert set(error) == {"resource", "field", "code"}
    if field is not None:
        assert body["errors"][0]["field"] == field, body
    if code is not None:
        assert body["errors"][0]["code"] == code, body
    return body


# --- waiting on a condition, and a real webhook receiver (appended for the event/limit conformance tests) ---

import json  # noqa: E402
from dataclasses import field  # noqa: E402


def wait_until(predicate: Any, timeout: float = 5.0, what: str = "condition", interval: float = 0.02) -> Any:
    """Poll `predicate()` until it returns something truthy (returned) or fail after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; last value: {value!r}")
        time.sleep(interval)


@dataclass
class Hook:
    """One callback address of a `Receiver` and how it behaves.

    Validation GET: answered 200 with `{"hub.challenge": …}` as JSON when `hub.verify_token` matches (403
    otherwise), after `validation_delay` seconds; `echo` = "json" (correct), "wrong" (another challenge),
    "none" (200 with an empty JSON object) or "text" (the right JSON sent as text/plain).
    Event POST: recorded on arrival; the next `fail_next` POSTs are answered `fail_status` (500), every POST
    waits `post_delay` seconds before answering.
    """

    name: str
    url: str
    verify_token: str
    echo: str = "json"
    validation_delay: float = 0.0
    fail_next: int = 0
    post_delay: float = 0.0
    fail_status: int = 500
    validations: list[dict[str, str]] = field(default_factory=list)  # query of each validation GET
    posts: list[dict[str, Any]] = field(default_factory=list)  # {"body", "content_type", "status"} per POST

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event body POSTed here, in arrival order (retries included)."""
        return [p["body"] for p in list(self.posts)]


class Receiver:
    """A webhook receiver: a Starlette app under uvicorn on 127.0.0.1, port 0, in a daemon thread.

    `hook()` makes a fresh callback address (`{base}/hooks/<name>`) with its own behaviour and records.
    """

    def __init__(self) -> None:
        import threading

        from starlette.applications import Starlette
        from starlette.routing import Route

        self.base = ""
        self.hooks: dict[str, Hook] = {}
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/hooks/{name}", self._validate, methods=["GET"]),
                Route("/hooks/{name}", self._event, methods=["POST"]),
            ]
        )
        self._server: Any = None

    def hook(self, verify_token: str | None = None, **behaviour: Any) -> Hook:
        name = secrets.token_hex(6)
        hook = Hook(name, f"{self.base}/hooks/{name}", verify_token or secrets.token_urlsafe(8), **behaviour)
        self.hooks[name] = hook
        return hook

    async def _validate(self, request: Any) -> Any:
        import asyncio

        from starlette.responses import JSONResponse, PlainTextResponse, Response

        hook = self.hooks.get(request.path_params["name"])
        if hook is None:
            return Response(status_code=404)
        query = dict(request.query_params)
        hook.validations.append(query)
        if hook.validation_delay:
            await asyncio.sleep(hook.validation_delay)
        if query.get("hub.verify_token") != hook.verify_token:
            return JSONResponse({"error": "verify_token mismatch"}, status_code=403)
        challenge = query.get("hub.challenge", "")
        if hook.echo == "wrong":
            return JSONResponse({"hub.challenge": challenge + "-not"})
        if hook.echo == "none":
            return JSONResponse({})
        if hook.echo == "text":
            return PlainTextResponse(json.dumps({"hub.challenge": challenge}))
        return JSONResponse({"hub.challenge": challenge})

    async def _event(self, request: Any) -> Any:
        import asyncio

        from starlette.responses import Response

        hook = self.hooks.get(request.path_params["name"])
        if hook is None:
            return Response(status_code=404)
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        with self._lock:
            status = hook.fail_status if hook.fail_next > 0 else 200
            hook.fail_next = max(0, hook.fail_next - 1)
            delay = hook.post_delay  # read before recording: a test may change it once it sees this POST
        hook.posts.append({"body": body, "content_type": request.headers.get("content-type", ""), "status": status})
        if delay:
            await asyncio.sleep(delay)
        return Response(status_code=status)

    def start(self, timeout: float = 10.0) -> Receiver:
        from fitsync.sandbox.server import UvicornThread

        self._server = UvicornThread(self.app).start(timeout)
        self.base = self._server.base_url
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- reading stored world facts (appended for the resource conformance, scope matrix and malformed sweep) ---


def query(sb: Harness, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Rows of a read-only SQL query on the server's db (WAL allows a separate reader), as dicts."""
    conn = sqlite3.connect(f"file:{sb.server.options.db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


# --- the athlete's side, through the console (appended for the pipeline and webhook suites) ---


def add_athlete(sb: Harness, premium: bool = True, **options: Any) -> int:
    """A new athlete of the test's own, so the seeded world other modules rely on stays as it is."""
    response = sb.console.post(
        "/athletes", json={"firstname": "Test", "lastname": "Athlete", "premium": premium, **options}
    )
    assert response.status_code == 200, response.text
    return int(response.json()["id"])


def record(sb: Harness, athlete_id: int, *, days_ago: float | None = None, **fields: Any) -> int:
    """A device upload (full detail) for the athlete; `days_ago` sets its start time."""
    if days_ago is not None:
        fields["start_date"] = (dt.datetime.now(dt.UTC) - dt.timedelta(days=days_ago)).isoformat()
    response = sb.console.post(f"/athletes/{athlete_id}/activities", json=fields)
    assert response.status_code == 200, response.text
    return int(response.json()["id"])


def record_with_heart_rate(sb: Harness, athlete_id: int, *, days_ago: float, **fields: Any) -> int:
    """A device upload that has heart rate: the sandbox leaves it off 4 % of recordings (the console draws each
    recording's seed at random), so a test that needs zones takes the first of a few uploads that has it, the others
    deleted before any sync sees them."""
    return _record_having(sb, athlete_id, "json_extract(data, '$.has_heartrate')", "heart rate", days_ago, fields)


def record_with_efforts(sb: Harness, athlete_id: int, *, days_ago: float, **fields: Any) -> int:
    """A device upload with at least one segment effort: the sandbox's recordings visit no segment about 1 time in 6
    (a 10-minute ride 2 in 3), so a test that needs efforts takes the first of a few uploads that has one."""
    has_effort = "EXISTS (SELECT 1 FROM efforts e WHERE e.activity_id = activities.id)"
    return _record_having(sb, athlete_id, has_effort, "a segment effort", days_ago, fields)


def _record_having(
    sb: Harness, athlete_id: int, condition: str, what: str, days_ago: float, fields: dict[str, Any]
) -> int:
    """The first of up to 20 uploads (a minute apart) whose stored activity meets the SQL `condition`."""
    for minute in range(20):
        start = dt.datetime.now(dt.UTC) - dt.timedelta(days=days_ago, minutes=minute)
        response = sb.console.post(
            f"/athletes/{athlete_id}/activities", json={**fields, "start_date": start.isoformat()}
        )
        assert response.status_code == 200, response.text
        activity_id = int(response.json()["id"])
        [row] = query(sb, f"SELECT ({condition}) AS ok FROM activities WHERE id = ?", activity_id)
        if row["ok"]:
            return activity_id
        delete(sb, activity_id)
    raise AssertionError(f"no recording with {what} in 20 starts")


def change(sb: Harness, activity_id: int, **fields: Any) -> dict[str, Any]:
    """The athlete edits an activity (title, type, visibility…); returns it as the console shows it."""
    response = sb.console.patch(f"/activities/{activity_id}", json=fields)
    assert response.status_code == 200, response.text
    return response.json()


def delete(sb: Harness, activity_id: int) -> None:
    response = sb.console.delete(f"/activities/{activity_id}")
    assert response.status_code == 204, response.text


def save_grant(
    sb: Harness, client: Any, app: App, athlete_id: int, scopes: tuple[str, ...] = ALL_SCOPES, **consent: Any
) -> dict[str, Any]:
    """Consent as the athlete in the sandbox's pages, exchange the code through fitsync's client (a FitsyncClient)
    and store the grant, as `fitsync connect` does: the granted scope from the answer, else from the redirect (the
    real service's answer has none). Returns the token answer."""
    from fitsync.client import oauth

    code, granted = sb.consent(app, athlete_id, scopes, **consent)
    body = oauth.exchange_code(client.config, client.transport, code)
    client.tokens.save_grant(body, body.get("scope") or " ".join(granted.split(",")))
    return body
