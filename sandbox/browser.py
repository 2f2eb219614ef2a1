"""Acting as an athlete in the authorization pages, over HTTP: what a person does in the browser.

Used by the demo and the tests; a third-party client's own tests can use it against the sandbox too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx


@dataclass
class Redirect:
    """Where the service sent the browser back to, with its query decoded."""

    url: str
    params: dict[str, str]


def _field(page: str, name: str) -> str:
    match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    if match is None:
        raise AssertionError(f"no {name!r} field on the page:\n{page[:500]}")
    return unescape(match.group(1))


def _form_action(page: str) -> str:
    match = re.search(r'<form method="post" action="([^"]+)"', page)
    if match is None:
        raise AssertionError(f"no form on the page:\n{page[:500]}")
    return unescape(match.group(1))


def sign_in(http: httpx.Client, authorize_url: str, athlete_id: int) -> httpx.Response:
    """Open the authorize URL; if the sign-in page shows, pick `athlete_id` and come back."""
    page = http.get(authorize_url)
    if 'name="athlete_id"' not in page.text:
        return page
    action = _form_action(page.text)
    signed_in = http.post(action, data={"athlete_id": str(athlete_id), "next": _field(page.text, "next")})
    if signed_in.status_code in (302, 303) and signed_in.headers["location"].startswith("/"):
        # back to the authorize page only: following further could land on the app's redirect_uri
        return http.get(signed_in.request.url.join(signed_in.headers["location"]))
    return signed_in


def consent(
    http: httpx.Client, authorize_url: str, athlete_id: int, *, accept: bool = True, untick: tuple[str, ...] = ()
) -> Redirect:
    """Sign in, untick some scopes, press Authorize (or Cancel); returns the redirect back to the app."""
    page = sign_in(http, authorize_url, athlete_id)
    if page.status_code in (302, 303):
        return _redirect(page)
    if page.status_code != 200 or 'name="request"' not in page.text:
        raise AssertionError(f"expected the consent page, got {page.status_code}: {page.text[:300]}")
    offered = re.findall(r'name="scope" value="([^"]+)"', page.text)
    action = _form_action(page.text)
    answer = http.post(
        action,
        data={
            "request": _field(page.text, "request"),
            "decision": "accept" if accept else "deny",
            "scope": [s for s in offered if s not in untick],
        },
    )
    return _redirect(answer)


def _redirect(response: httpx.Response) -> Redirect:
    if response.status_code not in (302, 303):
        raise AssertionError(f"expected a redirect, got {response.status_code}: {response.text[:300]}")
    location = response.headers["location"]
    return Redirect(location, {k: v[0] for k, v in parse_qs(urlsplit(location).query, keep_blank_values=True).items()})
