"""Connecting an athlete: authorize URL with a random state, the redirect back, the code exchange.

Interactive: a one-shot listener on loopback receives the redirect (the service accepts localhost and
127.0.0.1 redirect URIs). Headless: the person pastes the URL their browser was sent to.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit

from . import tls
from .errors import OAuthError, fault_summary, is_fault, json_object
from .transport import Transport

if TYPE_CHECKING:
    from .config import Config

DEFAULT_SCOPES = ("read", "read_all", "profile:read_all", "activity:read_all")


@dataclass(frozen=True)
class Authorization:
    url: str
    state: str
    redirect_uri: str


def authorization(
    config: Config,
    redirect_uri: str,
    scopes: tuple[str, ...] = DEFAULT_SCOPES,
    *,
    mobile: bool = False,
    force_prompt: bool = False,
) -> Authorization:
    client_id, _ = config.require_app()
    state = secrets.token_urlsafe(24)
    query = urlencode(
        {
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "approval_prompt": "force" if force_prompt else "auto",
            "scope": ",".join(scopes),
            "state": state,
        }
    )
    path = "/oauth/mobile/authorize" if mobile else "/oauth/authorize"
    return Authorization(f"{config.auth_url}{path}?{query}", state, redirect_uri)


AUTH_URL_FIX = "check auth_url / FITSYNC_AUTH_URL: the site root, e.g. https://www.strava.com"
AUTH_ROOT_FIX = "auth_url must be the site root without /oauth (fitsync adds /oauth/authorize)"


@dataclass(frozen=True)
class PageAnswer:
    """What the authorization page answered: its status, or why there was no answer (then `status` is None)."""

    url: str
    status: int | None
    error: str = ""

    @property
    def problem(self) -> str | None:
        """The one line naming the fix, or None: the page is there (404: auth_url names another path)."""
        if self.status is None:
            return f"the authorization page {self.url} does not answer ({self.error}): {AUTH_URL_FIX}"
        if self.status == 404:
            return f"the authorization page {self.url} answers 404: {AUTH_ROOT_FIX}"
        return None


def authorize_page(config: Config, timeout: float = 10) -> PageAnswer:
    """Ask the page a browser would open (no token, nothing granted): before `connect` shows an address that cannot
    load, and in `fitsync doctor`."""
    import httpx

    url = f"{config.auth_url}/oauth/authorize"
    params = {
        "client_id": str(config.client_id or 0),
        "response_type": "code",
        "redirect_uri": "http://localhost/",
        "scope": "read",
    }
    try:
        return PageAnswer(url, httpx.get(url, params=params, timeout=timeout, verify=tls.context()).status_code)
    except httpx.HTTPError as error:
        return PageAnswer(url, None, type(error).__name__)


def parse_redirect(url: str, expected_state: str) -> tuple[str, str]:
    """(code, granted scope) from the redirect back; a wrong state or a denial is a clear error."""
    params = {k: v[0] for k, v in parse_qs(urlsplit(url.strip()).query, keep_blank_values=True).items()}
    if not secrets.compare_digest(params.get("state", ""), expected_state):
        raise OAuthError(
            "the redirect's state does not match this request: ignored (possible forgery or an old link); run "
            "`fitsync connect` again and use the address of that attempt"
        )
    if params.get("error") == "access_denied":
        raise OAuthError("the athlete denied access (Cancel on the authorization page): nothing was stored")
    if params.get("error"):
        raise OAuthError(f"the service refused the authorization: {params['error']}")
    if not params.get("code"):
        raise OAuthError("the redirect carries no authorization code")
    return params["code"], params.get("scope", "")


# What to do when the service refuses the app's credentials.
APP_CREDENTIALS_FIX = (
    "check client_id and client_secret (or FITSYNC_CLIENT_ID and FITSYNC_CLIENT_SECRET) against the app's settings "
    "page at the service (`fitsync init` rewrites them)"
)


def exchange_code(config: Config, transport: Transport, code: str) -> dict[str, Any]:
    client_id, client_secret = config.require_app()
    response = transport.request(
        "POST",
        config.token_url,
        budget=None,
        idempotent=False,
        data={"client_id": client_id, "client_secret": client_secret, "code": code, "grant_type": "authorization_code"},
    )
    if response.status_code != 200:
        # 401: the service did not know the app (Strava: Application.client_id or client_secret invalid); anything
        # else: the code (single use, minutes long), which a new consent replaces
        fix = APP_CREDENTIALS_FIX if response.status_code == 401 else "run `fitsync connect` again"
        raise OAuthError(f"the code exchange failed with {response.status_code}: {fault_summary(response)}; {fix}")
    body = json_object(response)
    if body is None:
        raise OAuthError(
            "the code exchange answered 200 with something that is not a token answer "
            f"({response.headers.get('content-type') or 'no content type'}): is auth_url the service's? Then run "
            "`fitsync connect` again"
        )
    return body


def deauthorize(config: Config, transport: Transport, access_token: str) -> bool:
    """Revoke fitsync's access for the athlete; False when the token was already invalid."""
    response = transport.request(
        "POST", config.auth_url + config.deauthorize_path, budget=None, data={"access_token": access_token}
    )
    if response.status_code == 401 and is_fault(json_object(response)):  # the service's word; not a proxy's page
        return False
    if response.status_code != 200:
        raise OAuthError(f"deauthorization failed with {response.status_code}: {fault_summary(response)}")
    return True


class LoopbackReceiver:
    """Receives exactly one redirect on 127.0.0.1 and shows the person a page saying they may close it."""

    def __init__(self, port: int = 0, path: str = "/fitsync/callback") -> None:
        received: list[str] = []
        done = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if urlsplit(self.path).path != path:
                    self.send_error(404)
                    return
                received.append(self.path)
                body = (
                    b"<!doctype html><title>fitsync</title><p>fitsync received the answer. You can close this tab.</p>"
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                done.set()

            def log_message(self, format: str, *args: Any) -> None:  # the query holds the code: never log it
                pass

        self._server = HTTPServer(("127.0.0.1", port), Handler)
        self._received, self._done, self._path = received, done, path
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self._path}"

    def __enter__(self) -> LoopbackReceiver:
        self._thread.start()
        return self

    def wait(self, timeout: float) -> str:
        if not self._done.wait(timeout):
            raise OAuthError(f"no answer from the authorization page within {timeout:.0f} s")
        return self.redirect_uri.split("/fitsync")[0] + self._received[0]

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
