"""Driving a running sandbox from tests: console calls, apps, OAuth grants and API clients."""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from dataclasses import dataclass
from typing import Any, Iterator

import httpx

from fitsync.sandbox import browser
from fitsync.sandbox.server import ServerThread

ALL_SCOPES = ("read", "read_all", "profile:read_all", "profile:write", "activity:read", "activity:read_all",
              "activity:write")
REDIRECT_URI = "http://localhost:9999/callback"
# Everything a request could change, except bookkeeping (rate usage, counters, browser sessions).
STATE_TABLES = ("apps", "athletes", "gear", "segments", "stars", "activities", "efforts", "grants", "codes",
                "token_families", "access_tokens", "refresh_tokens", "subscriptions", "events")


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
        self.http = httpx.Client(base_url=server.base_url, timeout=15)
        self.console = httpx.Client(base_url=server.base_url + "/sandbox", timeout=15,
                                    headers={"X-Sandbox-Console-Key": server.console_key})

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
        body = self.console.post("/apps", json={"name": f"test-{secrets.token_hex(3)}", "callback_domain": domain}).json()
        return App(body["client_id"], body["client_secret"])

    def authorize_url(self, app: App, scope: str, *, state: str | None = None, redirect_uri: str = REDIRECT_URI,
                      prompt: str | None = None, mobile: bool = False) -> str:
        params: dict[str, Any] = {"client_id": app.client_id, "redirect_uri": redirect_uri, "response_type": "code",
                                  "scope": scope}
        if state is not None:
            params["state"] = state
        if prompt is not None:
            params["approval_prompt"] = prompt
        path = "/oauth/mobile/authorize" if mobile else "/oauth/authorize"
        return str(httpx.URL(path, params=params))

    def browser(self) -> httpx.Client:
        """A fresh 'browser' (its own cookie jar)."""
        return httpx.Client(base_url=self.server.base_url, timeout=15)

    def code(self, app: App, athlete_id: int, scopes: tuple[str, ...] = ALL_SCOPES, untick: tuple[str, ...] = ()) -> str:
        with self.browser() as b:
            redirect = browser.consent(b, self.authorize_url(app, ",".join(scopes)), athlete_id, untick=untick)
        return redirect.params["code"]

    def exchange(self, app: App, code: str) -> httpx.Response:
        return self.http.post("/oauth/token", data={**app.creds(), "code": code, "grant_type": "authorization_code"})

    def refresh(self, app: App, refresh_token: str) -> httpx.Response:
        return self.http.post("/oauth/token", data={**app.creds(), "refresh_token": refresh_token,
                                                    "grant_type": "refresh_token"})

    def connect(self, scopes: tuple[str, ...] = ALL_SCOPES, athlete_id: int | None = None, app: App | None = None,
                untick: tuple[str, ...] = ()) -> Grant:
        app = app or self.new_app()
        athlete_id = athlete_id or self.athlete_id()
        response = self.exchange(app, self.code(app, athlete_id, scopes, untick))
        assert response.status_code == 200, response.text
        body = response.json()
        return Grant(app, athlete_id, body["access_token"], body["refresh_token"], body["expires_at"], body["scope"], body)

    # API
    def api(self, grant: Grant | str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        token = grant.access_token if isinstance(grant, Grant) else grant
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        headers.update(kwargs.pop("headers", {}))
        return self.http.request(method, "/api/v3" + path, headers=headers, **kwargs)

    def get(self, grant: Grant | str | None, path: str, **kwargs: Any) -> httpx.Response:
        return self.api(grant, "GET", path, **kwargs)


def assert_fault(response: httpx.Response, status: int, field: str | None = None, code: str | None = None) -> dict[str, Any]:
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
