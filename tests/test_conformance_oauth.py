"""Conformance: OAuth 2.0 and tokens (spec §3.2, §4.4, §5.1–§5.7), over real HTTP on loopback.

Numbering: `r` is the 1-based data row of a section's table; for prose sections (§5.1, §5.5–§5.7) it is the
bullet/statement in order. §5.3 r7 is the "Redirect outcome" paragraph after its table; §5.4 r8 is the
parameter sentence before its table (the table's rows are r1–r7).

| § | row | what the row says (short) | test |
|---|---|---|---|
| 3.2 | 1 | athlete accepts → code issued, `code` and `scope` added to the redirect | test_s3_2_r1_accept_redirects_with_code_and_scope |
| 3.2 | 2 | POST token with an unused code → code spent, access and refresh token issued | test_s3_2_r2_code_exchange_spends_code_and_issues_tokens |
| 3.2 | 3 | access token lifetime passes → expired, requests get 401 | test_s3_2_r3_expired_access_token_gets_401 |
| 3.2 | 4 | refresh N → N+1 current, N invalid at once; may be the same value | test_s3_2_r4_refresh_rotates_n_to_n_plus_1, test_s3_2_r4_refresh_value_kept_when_rotation_off |
| 3.2 | 5 | access token with > 3600 s left → refresh returns it unchanged | test_s3_2_r5_refresh_returns_same_access_token_when_more_than_threshold_left, test_s3_2_r5_threshold_is_a_setting_b |
| 3.2 | 6 | ≤ 3600 s left or expired → new access token; old and new both work until expiry | test_s3_2_r6_refresh_within_threshold_issues_new_token_both_work, test_s3_2_r6_old_token_works_until_its_own_expiry_b, test_s3_2_r6_refresh_after_expiry_issues_new_token_c |
| 3.2 | 7 | deauthorize → all access and refresh tokens invalid, app removed, later 401 | test_s3_2_r7_deauthorize_invalidates_all_tokens_and_removes_app |
| 4.4 | 1 | GET /oauth/authorize: web authorization page → redirect | test_s4_4_r1_web_authorize_is_a_real_html_page |
| 4.4 | 2 | GET /oauth/mobile/authorize: mobile page, same query → redirect | test_s4_4_r2_mobile_authorize_is_a_real_html_page |
| 4.4 | 3 | POST /oauth/token (also /api/v3/oauth/token), params in query or form | test_s4_4_r3_token_endpoint_paths_and_param_styles[*] |
| 4.4 | 4 | POST /oauth/deauthorize with query access_token → the revoked token | test_s4_4_r4_deauthorize_with_query_token_returns_revoked_token |
| 5.1 | 1 | app gets an integer client ID and a string secret; authorization-code flow | test_s5_1_r1_integer_client_id_string_secret_code_flow |
| 5.1 | 2 | athlete may deselect any requested scope; app must check granted scopes | test_s5_1_r2_athlete_deselects_scopes_granted_scope_is_fewer |
| 5.1 | 3 | short-lived bearer access tokens; refresh tokens obtain new ones | test_s5_1_r3_short_lived_bearer_tokens_refreshable |
| 5.1 | 4 | mobile: refresh tokens and expiring access tokens only | test_s5_1_r4_mobile_flow_gives_refresh_and_expiring_access_tokens |
| 5.2 | 1 | read: public segments, public profile | test_s5_2_r1_read_grants_public_profile_and_segments |
| 5.2 | 2 | read_all: private segments (implies read) | test_s5_2_r2_read_all_grants_private_segments_and_implies_read |
| 5.2 | 3 | profile:read_all: all profile information | test_s5_2_r3_profile_read_all_grants_detailed_profile_and_zones |
| 5.2 | 4 | profile:write: update weight, star/unstar segments | test_s5_2_r4_profile_write_grants_weight_and_starring |
| 5.2 | 5 | activity:read: Everyone and Followers activities | test_s5_2_r5_activity_read_grants_non_private_activities |
| 5.2 | 6 | activity:read_all: activity:read plus Only You activities | test_s5_2_r6_activity_read_all_implies_activity_read_and_adds_only_you |
| 5.2 | 7 | activity:write: create manual activities | test_s5_2_r7_activity_write_grants_create |
| 5.3 | 1 | client_id: integer application ID | test_s5_3_r1_client_id_unknown_malformed_or_missing_is_400 |
| 5.3 | 2 | redirect_uri inside the callback domain; localhost, 127.0.0.1 accepted | test_s5_3_r2_redirect_uri_must_be_in_callback_domain, test_s5_3_r2_subdomain_redirect_completes_b, test_s5_3_r2_bad_redirect_never_redirects_signed_in_athlete_c, test_s5_3_r2_unencoded_redirect_uri_survives_sign_in_d |
| 5.3 | 3 | response_type must be `code` | test_s5_3_r3_response_type_must_be_code |
| 5.3 | 4 | approval_prompt force/auto, default auto; force always prompts | test_s5_3_r4_force_always_shows_prompt, test_s5_3_r4_auto_skips_prompt_for_granted_scopes_b |
| 5.3 | 5 | scope comma- or URL-safe space-separated | test_s5_3_r5_scope_comma_or_space_separated, test_s5_3_r5_unknown_or_missing_scope_is_400_b |
| 5.3 | 6 | state returned unchanged whenever supplied | test_s5_3_r6_state_returned_unchanged_on_accept_and_deny |
| 5.3 | 7 | outcome: deny → error=access_denied; accept → code, scope; code short-lived, single-use | test_s5_3_r7_deny_redirects_access_denied, test_s5_3_r7_code_single_use_b, test_s5_3_r7_replayed_code_revokes_its_tokens_c, test_s5_3_r7_code_expires_after_code_lifetime_d |
| 5.4 | 1 | token_type `Bearer` | test_s5_4_r1_token_type_bearer |
| 5.4 | 2 | access_token | test_s5_4_r2_access_token_authenticates |
| 5.4 | 3 | refresh_token; older one stops working when it changes | test_s5_4_r3_refresh_token_present_and_older_stops_working |
| 5.4 | 4 | expires_at, epoch seconds | test_s5_4_r4_expires_at_epoch_seconds |
| 5.4 | 5 | expires_in, seconds until expiry | test_s5_4_r5_expires_in_six_hours_by_default |
| 5.4 | 6 | athlete: summary athlete | test_s5_4_r6_athlete_is_summary_without_private_keys |
| 5.4 | 7 | scope: space-delimited granted scopes, may be fewer | test_s5_4_r7_scope_space_delimited_may_be_fewer |
| 5.4 | 8 | params: client_id, client_secret, code, grant_type=authorization_code | test_s5_4_r8_wrong_client_secret_is_401, test_s5_4_r8_unknown_or_missing_grant_type_is_400_b, test_s5_4_r8_code_bound_to_client_c, test_s5_4_r8_code_bound_to_redirect_uri_d, test_s5_4_r8_missing_code_is_400_e |
| 5.5 | 1 | refresh params: client_id, client_secret, grant_type=refresh_token, refresh_token | test_s5_5_r1_refresh_params_checked |
| 5.5 | 2 | response: token_type, access_token, expires_at, expires_in, refresh_token | test_s5_5_r2_refresh_response_fields |
| 5.5 | 3 | access tokens last six hours | test_s5_5_r3_new_access_token_lasts_six_hours |
| 5.5 | 4 | rules in §3.2; store and use the latest refresh token (spent → 400 RefreshToken) | test_s5_5_r4_spent_refresh_token_is_400_refresh_token_invalid |
| 5.6 | 1 | resource requests carry `Authorization: Bearer` (also `access_token` query) | test_s5_6_r1_bearer_header_works, test_s5_6_r1_access_token_query_works_b, test_s5_6_r1_missing_token_is_401_c, test_s5_6_r1_garbage_token_is_401_athlete_access_token_d |
| 5.7 | 1 | POST /oauth/deauthorize with query access_token | test_s5_7_r1_deauthorize_with_query_access_token |
| 5.7 | 2 | invalidates every access and refresh token of the app for that athlete | test_s5_7_r2_deauthorize_covers_every_family_but_not_other_apps |
| 5.7 | 3 | invalidated tokens → 401 | test_s5_7_r3_invalidated_tokens_get_401 |
| 5.7 | 4 | response body shape: not shown (sandbox returns the revoked token) | test_s4_4_r4_deauthorize_with_query_token_returns_revoked_token |

Plain tests: test_fifty_concurrent_refreshes_of_one_token_exactly_one_succeeds,
test_tokens_and_codes_are_stored_hashed, test_secrets_never_in_urls_or_pages,
test_sign_in_next_cannot_redirect_off_site, test_consent_request_is_single_use_and_bound_to_signed_in_athlete.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from fitsync.sandbox import browser

from .sandbox_harness import ALL_SCOPES, REDIRECT_URI, App, Grant, Harness, assert_fault, query, wait_until

SIX_HOURS = 6 * 3600
SPECIAL_STATE = "a b&c=d/é?#+%20;'\"<x>"


# --- helpers ---------------------------------------------------------------------------------------------


def _params(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query, keep_blank_values=True).items()}


def _field(page: str, name: str) -> str:
    match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    assert match, f"no {name!r} field on the page"
    return html.unescape(match.group(1))


def _consent_page(b: httpx.Client, url: str, athlete_id: int) -> httpx.Response:
    """Open an authorize URL in browser `b`, signing in when asked; returns the consent page."""
    page = browser.sign_in(b, url, athlete_id)
    assert page.status_code == 200 and 'name="request"' in page.text, (page.status_code, page.text[:300])
    return page


def _decide(b: httpx.Client, request_id: str, accept: bool = True, scopes: list[str] | None = None) -> httpx.Response:
    data: dict[str, Any] = {"request": request_id, "decision": "accept" if accept else "deny"}
    if scopes is not None:
        data["scope"] = scopes
    return b.post("/oauth/authorize", data=data)


def _offered(page: str) -> list[str]:
    return re.findall(r'name="scope" value="([^"]+)"', page)


def _grant_in(
    sb: Harness,
    b: httpx.Client,
    app: App,
    athlete_id: int,
    scopes: tuple[str, ...] = ALL_SCOPES,
    prompt: str | None = None,
) -> Grant:
    """Consent in browser `b` (keeping its cookie) and exchange the code."""
    redirect = browser.consent(b, sb.authorize_url(app, ",".join(scopes), prompt=prompt), athlete_id)
    response = sb.exchange(app, redirect.params["code"])
    assert response.status_code == 200, response.text
    body = response.json()
    return Grant(app, athlete_id, body["access_token"], body["refresh_token"], body["expires_at"], body["scope"], body)


def _ok(sb: Harness, token: str) -> bool:
    return sb.get(token, "/athlete").status_code == 200


def _refresh_ok(sb: Harness, app: App, refresh_token: str) -> dict[str, Any]:
    response = sb.refresh(app, refresh_token)
    assert response.status_code == 200, response.text
    return response.json()


def _assert_refresh_invalid(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["errors"] == [{"resource": "RefreshToken", "field": "refresh_token", "code": "invalid"}]


def _wait_expired(sb: Harness, token: str, timeout: float = 8.0) -> httpx.Response:
    """Poll until the access token is refused; returns the refusal."""
    return wait_until(
        lambda: (r := sb.get(token, "/athlete")).status_code == 401 and r,
        timeout,
        "the access token to expire",
        interval=0.1,
    )


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@pytest.fixture(scope="module")
def fresh_athlete(sb: Harness) -> int:
    """An athlete of this module's own, for the write scopes (no other test's data changes)."""
    response = sb.console.post("/athletes", json={"firstname": "Oauth", "lastname": "Writer", "premium": False})
    assert response.status_code == 200, response.text
    return response.json()["id"]


@pytest.fixture(scope="module")
def owner(sb: Harness) -> dict[str, Any]:
    """The premium cyclist (index 0): a private segment of hers, a public one, Only You and other activities."""
    athlete_id = sb.athlete_id(premium=True, index=0)
    private = query(sb, "SELECT id FROM segments WHERE private = 1 AND owner_id = ?", athlete_id)
    public = query(sb, "SELECT id FROM segments WHERE private = 0 ORDER BY id")
    acts = query(sb, "SELECT id, visibility FROM activities WHERE athlete_id = ?", athlete_id)
    only_me = {a["id"] for a in acts if a["visibility"] == "only_me"}
    assert private and public and only_me and len(only_me) < len(acts)
    return {
        "id": athlete_id,
        "private_segment": private[0]["id"],
        "public_segment": public[0]["id"],
        "only_me": only_me,
        "visible": {a["id"] for a in acts} - only_me,
    }


# --- §3.2 tokens ---------------------------------------------------------------------------------------------


def test_s3_2_r1_accept_redirects_with_code_and_scope(sb: Harness) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        redirect = browser.consent(b, sb.authorize_url(app, "read,activity:read"), sb.athlete_id())
    assert redirect.url.startswith(REDIRECT_URI + "?")
    assert set(redirect.params) == {"code", "scope"}
    assert re.fullmatch(r"[0-9A-Za-z_-]{20,}", redirect.params["code"])
    assert set(re.split(r"[, ]", redirect.params["scope"])) == {"read", "activity:read"}


def test_s3_2_r2_code_exchange_spends_code_and_issues_tokens(sb: Harness) -> None:
    app = sb.new_app()
    code = sb.code(app, sb.athlete_id())
    first = sb.exchange(app, code)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["access_token"] and body["refresh_token"] and body["access_token"] != body["refresh_token"]
    assert _ok(sb, body["access_token"])
    assert _refresh_ok(sb, app, body["refresh_token"])["access_token"]
    assert_fault(sb.exchange(app, code), 400, "code", "invalid")  # spent


def test_s3_2_r3_expired_access_token_gets_401(sb: Harness) -> None:
    with sb.settings(access_token_lifetime=2):
        grant = sb.connect()
        assert grant.body["expires_in"] <= 2
        refusal = _wait_expired(sb, grant.access_token)
    assert refusal.json()["errors"] == [{"resource": "Athlete", "field": "access_token", "code": "invalid"}]
    assert time.time() >= grant.expires_at
    assert not _ok(sb, grant.access_token)  # stays expired with default lifetimes back


def test_s3_2_r4_refresh_rotates_n_to_n_plus_1(sb: Harness) -> None:
    grant = sb.connect()
    n1 = _refresh_ok(sb, grant.app, grant.refresh_token)["refresh_token"]
    assert n1 != grant.refresh_token
    _assert_refresh_invalid(sb.refresh(grant.app, grant.refresh_token))  # N invalid at once
    n2 = _refresh_ok(sb, grant.app, n1)["refresh_token"]
    assert n2 not in (n1, grant.refresh_token)
    _assert_refresh_invalid(sb.refresh(grant.app, n1))


def test_s3_2_r4_refresh_value_kept_when_rotation_off(sb: Harness) -> None:
    grant = sb.connect()
    with sb.settings(rotate_refresh_tokens=False):
        assert _refresh_ok(sb, grant.app, grant.refresh_token)["refresh_token"] == grant.refresh_token
        assert _refresh_ok(sb, grant.app, grant.refresh_token)["refresh_token"] == grant.refresh_token
    # back to rotating: the kept value is still current and now rotates
    assert _refresh_ok(sb, grant.app, grant.refresh_token)["refresh_token"] != grant.refresh_token
    _assert_refresh_invalid(sb.refresh(grant.app, grant.refresh_token))


def test_s3_2_r5_refresh_returns_same_access_token_when_more_than_threshold_left(sb: Harness) -> None:
    grant = sb.connect()  # defaults: six hours left, threshold 3600 s
    body = _refresh_ok(sb, grant.app, grant.refresh_token)
    assert body["access_token"] == grant.access_token
    assert body["expires_at"] == grant.expires_at
    assert body["refresh_token"] != grant.refresh_token
    assert _ok(sb, body["access_token"])


def test_s3_2_r5_threshold_is_a_setting_b(sb: Harness) -> None:
    with sb.settings(access_token_lifetime=100, refresh_reuse_threshold=50):
        grant = sb.connect()
        body = _refresh_ok(sb, grant.app, grant.refresh_token)
        assert body["access_token"] == grant.access_token  # ~99 s left > 50 s
        with sb.settings(refresh_reuse_threshold=100):
            newer = _refresh_ok(sb, grant.app, body["refresh_token"])
    assert newer["access_token"] != grant.access_token  # ≤ 100 s left → a new one


def test_s3_2_r6_refresh_within_threshold_issues_new_token_both_work(sb: Harness) -> None:
    with sb.settings(access_token_lifetime=600, refresh_reuse_threshold=3600):
        grant = sb.connect()
        body = _refresh_ok(sb, grant.app, grant.refresh_token)
        again = _refresh_ok(sb, grant.app, body["refresh_token"])
    assert len({grant.access_token, body["access_token"], again["access_token"]}) == 3
    assert body["expires_at"] >= grant.expires_at
    for token in (grant.access_token, body["access_token"], again["access_token"]):
        assert _ok(sb, token)


def test_s3_2_r6_old_token_works_until_its_own_expiry_b(sb: Harness) -> None:
    with sb.settings(access_token_lifetime=3):
        grant = sb.connect()
        with sb.settings(access_token_lifetime=120):
            newer = _refresh_ok(sb, grant.app, grant.refresh_token)
        assert newer["access_token"] != grant.access_token
        assert _ok(sb, grant.access_token) and _ok(sb, newer["access_token"])
        _wait_expired(sb, grant.access_token)
    assert _ok(sb, newer["access_token"])  # the newer one is untouched by the older one's expiry


def test_s3_2_r6_refresh_after_expiry_issues_new_token_c(sb: Harness) -> None:
    with sb.settings(access_token_lifetime=1, refresh_reuse_threshold=0):
        grant = sb.connect()
        _wait_expired(sb, grant.access_token)
        with sb.settings(access_token_lifetime=120):
            body = _refresh_ok(sb, grant.app, grant.refresh_token)
    assert body["access_token"] != grant.access_token
    assert 100 < body["expires_in"] <= 120
    assert _ok(sb, body["access_token"]) and not _ok(sb, grant.access_token)


def test_s3_2_r7_deauthorize_invalidates_all_tokens_and_removes_app(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    with sb.browser() as b:
        grant = _grant_in(sb, b, app, athlete, ("read", "activity:read"))
        with sb.settings(refresh_reuse_threshold=SIX_HOURS):
            second = _refresh_ok(sb, app, grant.refresh_token)  # a second live access token, a rotated refresh
        assert second["access_token"] != grant.access_token and _ok(sb, grant.access_token)
        # auto prompt skips consent while the app is in the athlete's list...
        skipped = b.get(sb.authorize_url(app, "read,activity:read"))
        assert skipped.status_code == 302 and "code" in _params(skipped.headers["location"])
        response = sb.http.post("/oauth/deauthorize", params={"access_token": second["access_token"]})
        assert response.status_code == 200, response.text
        for token in (grant.access_token, second["access_token"]):
            assert_fault(sb.get(token, "/athlete"), 401, "access_token", "invalid")
        for refresh in (grant.refresh_token, second["refresh_token"]):
            _assert_refresh_invalid(sb.refresh(app, refresh))
        # ...and asks again once the app is removed from it
        again = b.get(sb.authorize_url(app, "read,activity:read"))
        assert again.status_code == 200 and 'name="request"' in again.text
        # consenting anew starts a fresh, working token family; the old tokens stay dead
        renewed = _grant_in(sb, b, app, athlete, ("read", "activity:read"))
    assert _ok(sb, renewed.access_token) and not _ok(sb, grant.access_token)
    _assert_refresh_invalid(sb.refresh(app, second["refresh_token"]))


# --- §4.4 authorization and token operations ----------------------------------------------------------------


def _assert_html_page(response: httpx.Response) -> None:
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.text.lstrip().lower().startswith("<!doctype html>")
    assert '<form method="post"' in response.text and "</html>" in response.text


def _authorize_page_flow(sb: Harness, mobile: bool) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    names = {a["id"]: f"{a['firstname']} {a['lastname']}" for a in sb.athletes()}
    url = sb.authorize_url(app, "read,activity:read_all", mobile=mobile, state="s1")
    assert url.startswith("/oauth/mobile/authorize?" if mobile else "/oauth/authorize?")
    with sb.browser() as b:
        sign_in = b.get(url)
        _assert_html_page(sign_in)
        assert 'name="athlete_id"' in sign_in.text and f'value="{athlete}"' in sign_in.text
        assert ('class="mobile"' in sign_in.text) == mobile
        consent = _consent_page(b, url, athlete)
        _assert_html_page(consent)
        assert ('class="mobile"' in consent.text) == mobile
        assert consent.headers.get("x-frame-options") == "DENY"  # no clickjacking of the Authorize button
        assert html.escape(names[athlete]) in consent.text
        assert re.findall(r'<input type="checkbox" name="scope" value="([^"]+)" checked>', consent.text) == [
            "read",
            "activity:read_all",
        ]
        assert 'value="accept"' in consent.text and 'value="deny"' in consent.text
        answer = _decide(b, _field(consent.text, "request"), scopes=["read", "activity:read_all"])
    assert answer.status_code in (302, 303)
    assert answer.headers["location"].startswith(REDIRECT_URI + "?")
    assert _params(answer.headers["location"])["state"] == "s1"
    assert sb.exchange(app, _params(answer.headers["location"])["code"]).status_code == 200


def test_s4_4_r1_web_authorize_is_a_real_html_page(sb: Harness) -> None:
    _authorize_page_flow(sb, mobile=False)


def test_s4_4_r2_mobile_authorize_is_a_real_html_page(sb: Harness) -> None:
    _authorize_page_flow(sb, mobile=True)


@pytest.mark.parametrize("path", ["/oauth/token", "/api/v3/oauth/token"])
@pytest.mark.parametrize("style", ["query", "form"])
def test_s4_4_r3_token_endpoint_paths_and_param_styles(sb: Harness, path: str, style: str) -> None:
    app = sb.new_app()

    def post(params: dict[str, Any]) -> httpx.Response:
        return sb.http.post(path, **({"params": params} if style == "query" else {"data": params}))

    exchanged = post({**app.creds(), "code": sb.code(app, sb.athlete_id()), "grant_type": "authorization_code"})
    assert exchanged.status_code == 200, exchanged.text
    assert exchanged.headers["content-type"].startswith("application/json")
    assert exchanged.headers.get("cache-control") == "no-store"
    body = exchanged.json()
    assert _ok(sb, body["access_token"])
    refreshed = post({**app.creds(), "refresh_token": body["refresh_token"], "grant_type": "refresh_token"})
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["refresh_token"] != body["refresh_token"]
    _assert_refresh_invalid(
        post({**app.creds(), "refresh_token": body["refresh_token"], "grant_type": "refresh_token"})
    )


def test_s4_4_r4_deauthorize_with_query_token_returns_revoked_token(sb: Harness) -> None:
    grant = sb.connect()
    response = sb.http.post("/oauth/deauthorize", params={"access_token": grant.access_token})
    assert response.status_code == 200, response.text
    assert response.json() == {"access_token": grant.access_token}
    assert_fault(sb.get(grant, "/athlete"), 401, "access_token", "invalid")
    # a second call with the now-revoked token, and one without a token, are refused
    assert_fault(sb.http.post("/oauth/deauthorize", params={"access_token": grant.access_token}), 401, "access_token")
    assert_fault(sb.http.post("/oauth/deauthorize"), 401, "access_token", "missing")


# --- §5.1 model --------------------------------------------------------------------------------------------


def test_s5_1_r1_integer_client_id_string_secret_code_flow(sb: Harness) -> None:
    created = sb.console.post("/apps", json={"name": "model app", "callback_domain": "localhost"}).json()
    assert isinstance(created["client_id"], int) and not isinstance(created["client_id"], bool)
    assert isinstance(created["client_secret"], str) and len(created["client_secret"]) >= 32
    app = App(created["client_id"], created["client_secret"])
    grant = sb.connect(("read",), app=app)
    assert grant.body["token_type"] == "Bearer" and _ok(sb, grant.access_token)


def test_s5_1_r2_athlete_deselects_scopes_granted_scope_is_fewer(sb: Harness) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        redirect = browser.consent(
            b,
            sb.authorize_url(app, ",".join(ALL_SCOPES)),
            sb.athlete_id(),
            untick=("activity:read", "activity:read_all", "profile:write"),
        )
    kept = {"read", "read_all", "profile:read_all", "activity:write"}
    assert set(redirect.params["scope"].split(",")) == kept
    response = sb.exchange(app, redirect.params["code"])
    assert set(response.json()["scope"].split(" ")) == kept
    token = response.json()["access_token"]
    assert_fault(sb.get(token, "/athlete/activities"), 401, "activity:read_permission", "missing")
    assert_fault(sb.api(token, "PUT", "/athlete", data={"weight": "70"}), 401, "profile:write_permission", "missing")
    assert sb.get(token, "/athlete").status_code == 200
    # the form cannot add a scope the app did not request (a tampered POST)
    with sb.browser() as b:
        page = _consent_page(b, sb.authorize_url(app, "read", prompt="force"), sb.athlete_id())
        answer = _decide(b, _field(page.text, "request"), scopes=["read", "activity:write", "profile:write"])
    assert _params(answer.headers["location"])["scope"] == "read"


def test_s5_1_r3_short_lived_bearer_tokens_refreshable(sb: Harness) -> None:
    grant = sb.connect(("read",))
    assert grant.body["token_type"] == "Bearer"
    assert 0 < grant.body["expires_in"] <= SIX_HOURS  # never a non-expiring token
    with sb.settings(refresh_reuse_threshold=SIX_HOURS):
        body = _refresh_ok(sb, grant.app, grant.refresh_token)
    assert body["access_token"] != grant.access_token and _ok(sb, body["access_token"])


def test_s5_1_r4_mobile_flow_gives_refresh_and_expiring_access_tokens(sb: Harness) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        redirect = browser.consent(b, sb.authorize_url(app, "read,activity:read", mobile=True), sb.athlete_id())
    body = sb.exchange(app, redirect.params["code"]).json()
    assert body["refresh_token"] and body["access_token"]
    assert 0 < body["expires_in"] <= SIX_HOURS and body["expires_at"] <= time.time() + SIX_HOURS + 1
    with sb.settings(refresh_reuse_threshold=SIX_HOURS):
        refreshed = _refresh_ok(sb, app, body["refresh_token"])
    assert _ok(sb, refreshed["access_token"])


# --- §5.2 scopes (light; the full operation × scope matrix is elsewhere) -------------------------------------


def test_s5_2_r1_read_grants_public_profile_and_segments(sb: Harness, owner: dict[str, Any]) -> None:
    read = sb.connect(("read",), athlete_id=owner["id"])
    me = sb.get(read, "/athlete")
    assert me.status_code == 200 and me.json()["id"] == owner["id"] and me.json()["resource_state"] == 2
    assert sb.get(read, f"/segments/{owner['public_segment']}").status_code == 200
    assert_fault(sb.get(read, "/athlete/activities"), 401, "activity:read_permission", "missing")
    without = sb.connect(("activity:read",), athlete_id=owner["id"])
    assert_fault(sb.get(without, "/athlete"), 401, "read_permission", "missing")
    assert_fault(sb.get(without, f"/segments/{owner['public_segment']}"), 401, "read_permission", "missing")


def test_s5_2_r2_read_all_grants_private_segments_and_implies_read(sb: Harness, owner: dict[str, Any]) -> None:
    private = f"/segments/{owner['private_segment']}"
    read = sb.connect(("read",), athlete_id=owner["id"])
    assert_fault(sb.get(read, private), 401, "read_all_permission", "missing")
    read_all = sb.connect(("read_all",), athlete_id=owner["id"])  # read_all alone: read is implied
    assert read_all.scope == "read_all"
    segment = sb.get(read_all, private)
    assert segment.status_code == 200 and segment.json()["private"] is True
    assert sb.get(read_all, "/athlete").status_code == 200
    assert sb.get(read_all, f"/segments/{owner['public_segment']}").status_code == 200


def test_s5_2_r3_profile_read_all_grants_detailed_profile_and_zones(sb: Harness, owner: dict[str, Any]) -> None:
    full = sb.connect(("read", "profile:read_all"), athlete_id=owner["id"])
    me = sb.get(full, "/athlete").json()
    assert me["resource_state"] == 3 and "weight" in me and "bikes" in me
    assert sb.get(full, "/athlete/zones").status_code == 200
    read = sb.connect(("read",), athlete_id=owner["id"])
    summary = sb.get(read, "/athlete").json()
    assert summary["resource_state"] == 2 and "weight" not in summary and "bikes" not in summary
    assert_fault(sb.get(read, "/athlete/zones"), 401, "profile:read_all_permission", "missing")


def test_s5_2_r4_profile_write_grants_weight_and_starring(
    sb: Harness, fresh_athlete: int, owner: dict[str, Any]
) -> None:
    segment = owner["public_segment"]
    read = sb.connect(("read",), athlete_id=fresh_athlete)
    assert_fault(sb.api(read, "PUT", "/athlete", data={"weight": "71.5"}), 401, "profile:write_permission", "missing")
    assert_fault(
        sb.api(read, "PUT", f"/segments/{segment}/starred", data={"starred": "true"}),
        401,
        "profile:write_permission",
        "missing",
    )
    write = sb.connect(("read", "read_all", "profile:write"), athlete_id=fresh_athlete)
    updated = sb.api(write, "PUT", "/athlete", data={"weight": "71.5"})
    assert updated.status_code == 200 and updated.json()["weight"] == 71.5
    starred = sb.api(write, "PUT", f"/segments/{segment}/starred", data={"starred": "true"})
    assert starred.status_code == 200 and starred.json()["starred"] is True
    unstarred = sb.api(write, "PUT", f"/segments/{segment}/starred", data={"starred": "false"})
    assert unstarred.status_code == 200 and unstarred.json()["starred"] is False


def test_s5_2_r5_activity_read_grants_non_private_activities(sb: Harness, owner: dict[str, Any]) -> None:
    grant = sb.connect(("activity:read",), athlete_id=owner["id"])
    listed = sb.get(grant, "/athlete/activities", params={"per_page": 200})
    assert listed.status_code == 200
    assert {a["id"] for a in listed.json()} == owner["visible"]
    assert sb.get(grant, f"/activities/{min(owner['visible'])}").status_code == 200
    assert_fault(sb.get(grant, f"/activities/{min(owner['only_me'])}"), 401, "activity:read_all_permission", "missing")


def test_s5_2_r6_activity_read_all_implies_activity_read_and_adds_only_you(sb: Harness, owner: dict[str, Any]) -> None:
    grant = sb.connect(("activity:read_all",), athlete_id=owner["id"])  # without activity:read
    assert grant.scope == "activity:read_all"
    listed = sb.get(grant, "/athlete/activities", params={"per_page": 200})
    assert listed.status_code == 200
    assert {a["id"] for a in listed.json()} == owner["visible"] | owner["only_me"]
    only_me = sb.get(grant, f"/activities/{min(owner['only_me'])}")
    assert only_me.status_code == 200 and only_me.json()["private"] is True


def test_s5_2_r7_activity_write_grants_create(sb: Harness, fresh_athlete: int) -> None:
    form = {
        "name": "Scope check",
        "sport_type": "Run",
        "start_date_local": "2026-01-02T07:00:00Z",
        "elapsed_time": "1800",
        "distance": "5000",
    }
    read = sb.connect(("activity:read",), athlete_id=fresh_athlete)
    assert_fault(sb.api(read, "POST", "/activities", data=form), 401, "activity:write_permission", "missing")
    write = sb.connect(("activity:write", "activity:read"), athlete_id=fresh_athlete)
    created = sb.api(write, "POST", "/activities", data=form)
    assert created.status_code == 201, created.text
    assert created.json()["manual"] is True and created.json()["name"] == "Scope check"
    assert sb.get(write, f"/activities/{created.json()['id']}").status_code == 200


# --- §5.3 authorization request ----------------------------------------------------------------------------


def _authorize(b: httpx.Client, params: dict[str, Any], mobile: bool = False) -> httpx.Response:
    return b.get("/oauth/mobile/authorize" if mobile else "/oauth/authorize", params=params)


def _base_params(app: App, **override: Any) -> dict[str, Any]:
    params = {"client_id": app.client_id, "redirect_uri": REDIRECT_URI, "response_type": "code", "scope": "read"}
    params.update(override)
    return {k: v for k, v in params.items() if v is not None}


@pytest.mark.parametrize("mobile", [False, True], ids=["web", "mobile"])
def test_s5_3_r1_client_id_unknown_malformed_or_missing_is_400(sb: Harness, mobile: bool) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        assert _authorize(b, _base_params(app), mobile).status_code == 200
        for client_id in (99_999_999, "abc", "-1", "1e3", "", None):
            response = _authorize(b, _base_params(app, client_id=client_id), mobile)
            assert "location" not in response.headers
            assert_fault(response, 400, "client_id")


def test_s5_3_r2_redirect_uri_must_be_in_callback_domain(sb: Harness) -> None:
    app = sb.new_app("example.com")
    accepted = (
        "https://example.com/cb",
        "http://example.com:8080/cb?x=1",
        "https://app.example.com/cb",
        "https://a.b.example.com/cb",
        "http://localhost/cb",
        "http://localhost:8765/cb",
        "http://127.0.0.1/cb",
        "http://127.0.0.1:9/cb",
    )
    refused = (
        "https://evil.com/cb",
        "https://example.com.evil.com/cb",
        "https://notexample.com/cb",
        "https://example.co/cb",
        "https://user@evil.com/cb",
        "https://example.com@evil.com/cb",
        "http://localhost.evil.com/cb",
        "/relative/cb",
        "javascript:alert(1)",
        "",
        None,
        # a registered host under a scheme that is not http(s) (the trust issue's redirect case)
        "javascript://example.com/%0Aalert(1)",
        "data://example.com/text/html,x",
        "ftp://example.com/cb",
        "ftp://localhost/cb",
    )
    with sb.browser() as b:
        for uri in accepted:
            assert _authorize(b, _base_params(app, redirect_uri=uri)).status_code == 200, uri
        for uri in refused:
            response = _authorize(b, _base_params(app, redirect_uri=uri))
            assert_fault(response, 400, "redirect_uri")


def test_s5_3_r2_subdomain_redirect_completes_b(sb: Harness) -> None:
    app = sb.new_app("example.com")
    uri = "https://app.example.com/oauth/back?keep=1"
    with sb.browser() as b:
        redirect = browser.consent(b, sb.authorize_url(app, "read", redirect_uri=uri), sb.athlete_id())
    assert redirect.url.startswith("https://app.example.com/oauth/back?")
    assert redirect.params["keep"] == "1" and redirect.params["code"]


def test_s5_3_r2_bad_redirect_never_redirects_signed_in_athlete_c(sb: Harness) -> None:
    app = sb.new_app("example.com")
    with sb.browser() as b:
        _consent_page(b, sb.authorize_url(app, "read", redirect_uri="https://example.com/cb"), sb.athlete_id())
        for prompt in ("auto", "force"):
            response = b.get(sb.authorize_url(app, "read", redirect_uri="https://evil.com/cb", prompt=prompt))
            assert "location" not in response.headers
            assert_fault(response, 400, "redirect_uri")


def test_s5_3_r2_unencoded_redirect_uri_survives_sign_in_d(sb: Harness) -> None:
    """The URL as the public docs write it (`redirect_uri=http://localhost/exchange_token`, not percent-encoded)."""
    app = sb.new_app()
    url = (
        f"/oauth/authorize?client_id={app.client_id}&response_type=code"
        f"&redirect_uri=http://localhost/exchange_token&approval_prompt=force&scope=read,activity:read"
    )
    with sb.browser() as b:
        redirect = browser.consent(b, url, sb.athlete_id())
    assert redirect.url.startswith("http://localhost/exchange_token?")
    assert sb.exchange(app, redirect.params["code"]).status_code == 200


def test_s5_3_r3_response_type_must_be_code(sb: Harness) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        for response_type in ("token", "CODE", "code token", "", None):
            assert_fault(_authorize(b, _base_params(app, response_type=response_type)), 400, "response_type")
        assert _authorize(b, _base_params(app, response_type="code")).status_code == 200


def test_s5_3_r4_force_always_shows_prompt(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    with sb.browser() as b:
        _grant_in(sb, b, app, athlete, ("read", "activity:read"))
        for _ in range(2):
            page = b.get(sb.authorize_url(app, "read,activity:read", prompt="force"))
            assert page.status_code == 200 and 'name="request"' in page.text
        assert_fault(b.get(sb.authorize_url(app, "read", prompt="sometimes")), 400, "approval_prompt")


def test_s5_3_r4_auto_skips_prompt_for_granted_scopes_b(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    with sb.browser() as b:
        # first time: auto still shows the prompt (nothing granted yet)
        first = browser.sign_in(b, sb.authorize_url(app, "read,activity:read", prompt="auto"), athlete)
        assert first.status_code == 200 and 'name="request"' in first.text
        _grant_in(sb, b, app, athlete, ("read", "activity:read"))
        for prompt in ("auto", None):  # default is auto
            for scope in ("read,activity:read", "activity:read"):
                skipped = b.get(sb.authorize_url(app, scope, prompt=prompt, state="st"))
                assert skipped.status_code in (302, 303), skipped.text[:200]
                params = _params(skipped.headers["location"])
                assert set(params) == {"code", "scope", "state"} and params["state"] == "st"
                assert set(params["scope"].split(",")) == set(scope.split(","))
        assert sb.exchange(app, params["code"]).status_code == 200
        # a scope beyond the granted ones asks again
        wider = b.get(sb.authorize_url(app, "read,activity:read,activity:write", prompt="auto"))
        assert wider.status_code == 200 and 'name="request"' in wider.text
    with sb.browser() as other:  # another browser (no session cookie) must sign in
        page = other.get(sb.authorize_url(app, "read,activity:read", prompt="auto"))
        assert page.status_code == 200 and 'name="athlete_id"' in page.text


def test_s5_3_r5_scope_comma_or_space_separated(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    expected = ["read", "activity:read_all", "profile:write"]
    base = f"/oauth/authorize?client_id={app.client_id}&response_type=code&redirect_uri=http%3A%2F%2Flocalhost%2Fcb"
    with sb.browser() as b:
        for raw in (
            "read,activity:read_all,profile:write",
            "read%20activity:read_all%20profile:write",
            "read+activity:read_all+profile:write",
            "read%2Cactivity%3Aread_all%2Cprofile%3Awrite",
            "read,%20activity:read_all,profile:write,read",
        ):
            page = _consent_page(b, f"{base}&approval_prompt=force&scope={raw}", athlete)
            assert _offered(page.text) == expected, raw
        answer = _decide(b, _field(page.text, "request"), scopes=expected)
    response = sb.exchange(app, _params(answer.headers["location"])["code"])
    assert sorted(response.json()["scope"].split(" ")) == sorted(expected)


def test_s5_3_r5_unknown_or_missing_scope_is_400_b(sb: Harness) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        for scope in ("read,bogus", "activity:delete", "READ", "read;activity:read", "", ",", None):
            assert_fault(_authorize(b, _base_params(app, scope=scope)), 400, "scope")


def test_s5_3_r6_state_returned_unchanged_on_accept_and_deny(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    for accept in (True, False):
        with sb.browser() as b:
            redirect = browser.consent(b, sb.authorize_url(app, "read", state=SPECIAL_STATE), athlete, accept=accept)
        assert redirect.params["state"] == SPECIAL_STATE
        assert ("code" in redirect.params) == accept
    with sb.browser() as b:
        redirect = browser.consent(b, sb.authorize_url(app, "read"), athlete)
    assert "state" not in redirect.params


def test_s5_3_r7_deny_redirects_access_denied(sb: Harness) -> None:
    app = sb.new_app()
    with sb.browser() as b:
        redirect = browser.consent(
            b, sb.authorize_url(app, "read,activity:read", state="x"), sb.athlete_id(), accept=False
        )
    assert redirect.url.startswith(REDIRECT_URI + "?")
    assert redirect.params == {"error": "access_denied", "state": "x"}
    assert query(sb, "SELECT 1 FROM grants WHERE app_id = ?", app.client_id) == []


def test_s5_3_r7_code_single_use_b(sb: Harness) -> None:
    app = sb.new_app()
    code = sb.code(app, sb.athlete_id())
    assert sb.exchange(app, code).status_code == 200
    for _ in range(2):
        body = assert_fault(sb.exchange(app, code), 400, "code", "invalid")
        assert body["errors"][0]["resource"] == "AuthorizationCode"


def test_s5_3_r7_replayed_code_revokes_its_tokens_c(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    code = sb.code(app, athlete)
    body = sb.exchange(app, code).json()
    other = sb.connect(("read",), athlete_id=athlete, app=app)  # a separate consent: a separate token family
    assert _ok(sb, body["access_token"])
    assert_fault(sb.exchange(app, code), 400, "code", "invalid")
    assert_fault(sb.get(body["access_token"], "/athlete"), 401, "access_token", "invalid")
    _assert_refresh_invalid(sb.refresh(app, body["refresh_token"]))
    assert _ok(sb, other.access_token)  # only what the replayed code issued is revoked


def test_s5_3_r7_code_expires_after_code_lifetime_d(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    with sb.settings(code_lifetime=1):
        fresh, stale = sb.code(app, athlete), sb.code(app, athlete)
        assert sb.exchange(app, fresh).status_code == 200  # within its lifetime
        expires_at = query(sb, "SELECT expires_at FROM codes WHERE hash = ?", _digest(stale))[0]["expires_at"]
        wait_until(lambda: time.time() > expires_at + 0.05, 5, "the code to pass its lifetime", interval=0.05)
        body = assert_fault(sb.exchange(app, stale), 400, "code", "invalid")
    assert body["errors"][0]["resource"] == "AuthorizationCode"


# --- §5.4 token exchange --------------------------------------------------------------------------------------


def test_s5_4_r1_token_type_bearer(sb: Harness) -> None:
    assert sb.connect(("read",)).body["token_type"] == "Bearer"


def test_s5_4_r2_access_token_authenticates(sb: Harness) -> None:
    grant = sb.connect(("read",))
    assert isinstance(grant.body["access_token"], str) and len(grant.access_token) >= 32
    assert sb.get(grant, "/athlete").json()["id"] == grant.athlete_id


def test_s5_4_r3_refresh_token_present_and_older_stops_working(sb: Harness) -> None:
    grant = sb.connect(("read",))
    assert isinstance(grant.body["refresh_token"], str) and len(grant.refresh_token) >= 32
    newer = _refresh_ok(sb, grant.app, grant.refresh_token)["refresh_token"]
    assert newer != grant.refresh_token
    _assert_refresh_invalid(sb.refresh(grant.app, grant.refresh_token))


def test_s5_4_r4_expires_at_epoch_seconds(sb: Harness) -> None:
    before = time.time()
    grant = sb.connect(("read",))
    expires_at = grant.body["expires_at"]
    assert isinstance(expires_at, int) and not isinstance(expires_at, bool)
    assert before + SIX_HOURS - 5 <= expires_at <= time.time() + SIX_HOURS + 1


def test_s5_4_r5_expires_in_six_hours_by_default(sb: Harness) -> None:
    body = sb.connect(("read",)).body
    assert isinstance(body["expires_in"], int) and SIX_HOURS - 5 <= body["expires_in"] <= SIX_HOURS
    assert abs(body["expires_at"] - (time.time() + body["expires_in"])) <= 2


def test_s5_4_r6_athlete_is_summary_without_private_keys(sb: Harness) -> None:
    grant = sb.connect()  # even with every scope, the exchange carries the summary form
    athlete = grant.body["athlete"]
    assert athlete["id"] == grant.athlete_id and athlete["resource_state"] == 2
    assert athlete["firstname"] and athlete["lastname"]
    private = {"home", "hr_zones", "ftp_history", "max_hr", "weight", "ftp", "bikes", "shoes", "email"}
    assert not private & set(athlete), private & set(athlete)
    refreshed = _refresh_ok(sb, grant.app, grant.refresh_token)
    assert "athlete" not in refreshed


def test_s5_4_r7_scope_space_delimited_may_be_fewer(sb: Harness) -> None:
    full = sb.connect()
    assert full.scope.split(" ") == list(ALL_SCOPES)
    fewer = sb.connect(untick=("read_all", "activity:write"))
    assert fewer.scope == "read profile:read_all profile:write activity:read activity:read_all"


def test_s5_4_r8_wrong_client_secret_is_401(sb: Harness) -> None:
    app = sb.new_app()
    code = sb.code(app, sb.athlete_id())
    data = {"client_id": app.client_id, "code": code, "grant_type": "authorization_code"}
    assert_fault(
        sb.http.post("/oauth/token", data={**data, "client_secret": app.client_secret + "x"}),
        401,
        "client_secret",
        "invalid",
    )
    assert_fault(sb.http.post("/oauth/token", data={**data, "client_secret": ""}), 400, "client_secret")
    assert_fault(
        sb.http.post("/oauth/token", data={**data, "client_id": "abc", "client_secret": app.client_secret}),
        400,
        "client_id",
    )
    assert sb.exchange(app, code).status_code == 200  # the refused attempts did not spend the code


def test_s5_4_r8_unknown_or_missing_grant_type_is_400_b(sb: Harness) -> None:
    app = sb.new_app()
    code = sb.code(app, sb.athlete_id())
    for grant_type in ("password", "client_credentials", "AUTHORIZATION_CODE", None):
        data = {**app.creds(), "code": code, **({"grant_type": grant_type} if grant_type else {})}
        assert_fault(sb.http.post("/oauth/token", data=data), 400, "grant_type")
    assert sb.exchange(app, code).status_code == 200


def test_s5_4_r8_code_bound_to_client_c(sb: Harness) -> None:
    app, other = sb.new_app(), sb.new_app()
    code = sb.code(app, sb.athlete_id())
    body = assert_fault(sb.exchange(other, code), 400, "code", "invalid")
    assert body["errors"][0]["resource"] == "AuthorizationCode"
    assert sb.exchange(app, code).status_code == 200


def test_s5_4_r8_code_bound_to_redirect_uri_d(sb: Harness) -> None:
    app = sb.new_app()
    code = sb.code(app, sb.athlete_id())
    exchange = {**app.creds(), "code": code, "grant_type": "authorization_code"}
    assert_fault(
        sb.http.post("/oauth/token", data={**exchange, "redirect_uri": "http://localhost:9999/other"}),
        400,
        "redirect_uri",
    )
    response = sb.http.post("/oauth/token", data={**exchange, "redirect_uri": REDIRECT_URI})
    assert response.status_code == 200, response.text


def test_s5_4_r8_missing_code_is_400_e(sb: Harness) -> None:
    app = sb.new_app()
    for code in (None, "", "0" * 40, "not-a-code"):
        data = {**app.creds(), "grant_type": "authorization_code", **({"code": code} if code is not None else {})}
        body = assert_fault(sb.http.post("/oauth/token", data=data), 400, "code")
        assert body["errors"][0]["resource"] == "AuthorizationCode"


# --- §5.5 refresh ---------------------------------------------------------------------------------------------


def test_s5_5_r1_refresh_params_checked(sb: Harness) -> None:
    grant = sb.connect(("read",))
    other = sb.new_app()
    base = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
    assert_fault(
        sb.http.post("/oauth/token", data={**grant.app.creds(), "grant_type": "refresh_token"}),
        400,
        "refresh_token",
        "missing",
    )
    assert_fault(
        sb.http.post("/oauth/token", data={**base, "client_id": grant.app.client_id, "client_secret": "wrong"}),
        401,
        "client_secret",
    )
    assert_fault(
        sb.http.post("/oauth/token", data={**base, "client_secret": grant.app.client_secret}), 400, "client_id"
    )
    _assert_refresh_invalid(sb.http.post("/oauth/token", data={**base, **other.creds()}))  # bound to its app
    assert _refresh_ok(sb, grant.app, grant.refresh_token)  # none of the refused calls spent it


def test_s5_5_r2_refresh_response_fields(sb: Harness) -> None:
    grant = sb.connect(("read",))
    body = _refresh_ok(sb, grant.app, grant.refresh_token)
    assert {"token_type", "access_token", "expires_at", "expires_in", "refresh_token"} <= set(body)
    assert body["token_type"] == "Bearer"
    assert all(isinstance(body[k], int) and not isinstance(body[k], bool) for k in ("expires_at", "expires_in"))
    assert all(isinstance(body[k], str) and body[k] for k in ("access_token", "refresh_token"))


def test_s5_5_r3_new_access_token_lasts_six_hours(sb: Harness) -> None:
    grant = sb.connect(("read",))
    with sb.settings(refresh_reuse_threshold=SIX_HOURS):  # force a new access token on refresh
        body = _refresh_ok(sb, grant.app, grant.refresh_token)
    assert body["access_token"] != grant.access_token
    assert SIX_HOURS - 5 <= body["expires_in"] <= SIX_HOURS
    assert abs(body["expires_at"] - (time.time() + SIX_HOURS)) <= 5


def test_s5_5_r4_spent_refresh_token_is_400_refresh_token_invalid(sb: Harness) -> None:
    grant = sb.connect(("read",))
    latest = _refresh_ok(sb, grant.app, grant.refresh_token)["refresh_token"]
    spent = sb.refresh(grant.app, grant.refresh_token)
    assert spent.status_code == 400
    assert spent.json() == {
        "message": "Bad Request",
        "errors": [{"resource": "RefreshToken", "field": "refresh_token", "code": "invalid"}],
    }
    assert _refresh_ok(sb, grant.app, latest)  # the latest one still works after the refused spent one
    _assert_refresh_invalid(sb.refresh(grant.app, "garbage"))


# --- §5.6 using a token -----------------------------------------------------------------------------------------


def test_s5_6_r1_bearer_header_works(sb: Harness) -> None:
    grant = sb.connect(("read",))
    for scheme in ("Bearer", "bearer"):
        response = sb.http.get("/api/v3/athlete", headers={"Authorization": f"{scheme} {grant.access_token}"})
        assert response.status_code == 200 and response.json()["id"] == grant.athlete_id


def test_s5_6_r1_access_token_query_works_b(sb: Harness) -> None:
    grant = sb.connect(("read",))
    response = sb.http.get("/api/v3/athlete", params={"access_token": grant.access_token})
    assert response.status_code == 200 and response.json()["id"] == grant.athlete_id


def test_s5_6_r1_missing_token_is_401_c(sb: Harness) -> None:
    assert_fault(sb.http.get("/api/v3/athlete"), 401, "access_token", "missing")
    assert_fault(sb.http.get("/api/v3/athlete", headers={"Authorization": "Bearer"}), 401, "access_token")
    grant = sb.connect(("read",))
    assert_fault(
        sb.http.get("/api/v3/athlete", headers={"Authorization": f"Basic {grant.access_token}"}), 401, "access_token"
    )


def test_s5_6_r1_garbage_token_is_401_athlete_access_token_d(sb: Harness) -> None:
    grant = sb.connect(("read",))
    for token in ("garbage", grant.access_token[:-1], grant.refresh_token, grant.access_token + "0"):
        response = sb.get(token, "/athlete")
        assert response.status_code == 401
        assert response.json()["errors"] == [{"resource": "Athlete", "field": "access_token", "code": "invalid"}]


# --- §5.7 deauthorization ------------------------------------------------------------------------------------


def test_s5_7_r1_deauthorize_with_query_access_token(sb: Harness) -> None:
    grant = sb.connect(("read",))
    response = sb.http.post("/oauth/deauthorize", params={"access_token": grant.access_token})
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert not _ok(sb, grant.access_token)
    assert query(sb, "SELECT revoked_at FROM grants WHERE app_id = ?", grant.app.client_id)[0]["revoked_at"]


def test_s5_7_r2_deauthorize_covers_every_family_but_not_other_apps(sb: Harness) -> None:
    app, other_app = sb.new_app(), sb.new_app()
    athlete, other_athlete = sb.athlete_id(premium=True, index=0), sb.athlete_id(premium=True, index=1)
    first = sb.connect(("read",), athlete_id=athlete, app=app)
    second = sb.connect(("read", "activity:read"), athlete_id=athlete, app=app)  # a second consent, second family
    rotated = _refresh_ok(sb, app, second.refresh_token)
    same_app_other_athlete = sb.connect(("read",), athlete_id=other_athlete, app=app)
    other_app_same_athlete = sb.connect(("read",), athlete_id=athlete, app=other_app)
    assert sb.http.post("/oauth/deauthorize", params={"access_token": first.access_token}).status_code == 200
    for token in (first.access_token, second.access_token, rotated["access_token"]):
        assert_fault(sb.get(token, "/athlete"), 401, "access_token", "invalid")
    for refresh in (first.refresh_token, rotated["refresh_token"]):
        _assert_refresh_invalid(sb.refresh(app, refresh))
    for survivor in (same_app_other_athlete, other_app_same_athlete):
        assert _ok(sb, survivor.access_token)
        assert _refresh_ok(sb, survivor.app, survivor.refresh_token)


def test_s5_7_r3_invalidated_tokens_get_401(sb: Harness, owner: dict[str, Any]) -> None:
    grant = sb.connect(athlete_id=owner["id"])
    sb.http.post("/oauth/deauthorize", params={"access_token": grant.access_token}).raise_for_status()
    for method, path in (
        ("GET", "/athlete"),
        ("GET", "/athlete/activities"),
        ("GET", "/athlete/zones"),
        ("GET", f"/segments/{owner['public_segment']}"),
        ("GET", "/segments/starred"),
    ):
        response = sb.api(grant, method, path)
        assert response.status_code == 401, (path, response.text)
        assert response.json()["errors"][0]["field"] == "access_token"


# --- plain tests ---------------------------------------------------------------------------------------------


def test_fifty_concurrent_refreshes_of_one_token_exactly_one_succeeds(sb: Harness) -> None:
    grant = sb.connect(("read",))
    data = {**grant.app.creds(), "grant_type": "refresh_token", "refresh_token": grant.refresh_token}

    async def storm() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(base_url=sb.server.base_url, timeout=30, limits=limits) as client:
            return await asyncio.gather(*(client.post("/oauth/token", data=data) for _ in range(50)))

    responses = asyncio.run(storm())
    winners = [r for r in responses if r.status_code == 200]
    assert len(winners) == 1, sorted(r.status_code for r in responses)
    for loser in responses:
        if loser is not winners[0]:
            _assert_refresh_invalid(loser)
    new_refresh = winners[0].json()["refresh_token"]
    assert new_refresh != grant.refresh_token
    family = query(sb, "SELECT family_id FROM refresh_tokens WHERE hash = ?", _digest(new_refresh))[0]["family_id"]
    current = query(sb, "SELECT hash FROM refresh_tokens WHERE family_id = ? AND current = 1", family)
    assert [r["hash"] for r in current] == [_digest(new_refresh)]  # exactly one current refresh token
    following = _refresh_ok(sb, grant.app, new_refresh)  # the winner's token works afterwards
    _assert_refresh_invalid(sb.refresh(grant.app, new_refresh))
    assert _ok(sb, following["access_token"]) and _ok(sb, winners[0].json()["access_token"])


def test_tokens_and_codes_are_stored_hashed(sb: Harness) -> None:
    app = sb.new_app()
    athlete = sb.athlete_id()
    with sb.browser() as b:
        grant = _grant_in(sb, b, app, athlete, ("read",))
        spent_code = query(sb, "SELECT hash FROM codes WHERE app_id = ?", app.client_id)[0]["hash"]
        unspent = browser.consent(b, sb.authorize_url(app, "read,activity:read", prompt="force"), athlete).params[
            "code"
        ]
        with sb.settings(refresh_reuse_threshold=SIX_HOURS):
            refreshed = _refresh_ok(sb, app, grant.refresh_token)
        pending = _consent_page(b, sb.authorize_url(app, "read", prompt="force"), athlete)
        session = next(c.value for c in b.cookies.jar if c.name == "sandbox_session")
    request_id = _field(pending.text, "request")
    secrets = {
        "client_secret": app.client_secret,
        "code": unspent,
        "access": grant.access_token,
        "refresh": grant.refresh_token,
        "access2": refreshed["access_token"],
        "refresh2": refreshed["refresh_token"],
        "consent_request": request_id,
        "session": session,
    }
    assert spent_code  # the exchanged code is there, as a digest
    tables = [r["name"] for r in query(sb, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    stored = sb.snapshot(tuple(tables))
    cells = [str(cell) for rows in stored.values() for row in rows for cell in row]
    for name, value in secrets.items():
        assert not any(value in cell for cell in cells), f"{name} stored in clear"
        assert _digest(value) in cells, f"{name} not stored as a digest"
    db = Path(sb.server.options.db)
    raw = b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())
    for name, value in secrets.items():
        assert value.encode() not in raw, f"{name} in the db file"


def test_secrets_never_in_urls_or_pages(sb: Harness) -> None:
    app = sb.new_app()
    url = sb.authorize_url(app, ",".join(ALL_SCOPES), state="st", prompt="force")
    assert app.client_secret not in url
    with sb.browser() as b:
        sign_in = b.get(url)
        consent = _consent_page(b, url, sb.athlete_id())
        answer = _decide(b, _field(consent.text, "request"), scopes=list(ALL_SCOPES))
    for page in (sign_in.text, consent.text):
        assert app.client_secret not in page
    location = answer.headers["location"]
    assert set(_params(location)) == {"code", "scope", "state"}
    body = sb.exchange(app, _params(location)["code"]).json()
    for value in (app.client_secret, body["access_token"], body["refresh_token"]):
        assert value not in location and value not in consent.text
    assert consent.headers.get("cache-control") == "no-store"


def test_sign_in_next_cannot_redirect_off_site(sb: Harness) -> None:
    athlete = sb.athlete_id()
    for next_url in (
        "https://evil.example/x",
        "//evil.example/oauth/authorize",
        "/\\evil.example",
        "/oauth//evil.example",
        "http://127.0.0.1/oauth/authorize",
        "/api/v3/athlete",
        "javascript:alert(1)",
        "",
        "oauth/authorize",
    ):
        with sb.browser() as b:
            response = b.post("/oauth/session", data={"athlete_id": str(athlete), "next": next_url})
            assert "location" not in response.headers, next_url
            assert_fault(response, 400, "next")
            assert not any(c.name == "sandbox_session" for c in b.cookies.jar)
    with sb.browser() as b:
        ok = b.post("/oauth/session", data={"athlete_id": str(athlete), "next": "/oauth/authorize?x=1"})
        assert ok.status_code == 303 and ok.headers["location"] == "/oauth/authorize?x=1"
        assert_fault(b.post("/oauth/session", data={"athlete_id": "1", "next": "/oauth/authorize"}), 400, "athlete_id")


def test_consent_request_is_single_use_and_bound_to_signed_in_athlete(sb: Harness) -> None:
    app = sb.new_app()
    athlete, intruder = sb.athlete_id(premium=True, index=0), sb.athlete_id(premium=True, index=1)
    url = sb.authorize_url(app, "read,activity:read", prompt="force")
    with sb.browser() as mine, sb.browser() as anonymous, sb.browser() as theirs:
        request_id = _field(_consent_page(mine, url, athlete).text, "request")
        _consent_page(theirs, url, intruder)  # the intruder is signed in as someone else
        for other in (anonymous, theirs):
            for accept in (True, False):
                response = _decide(other, request_id, accept=accept, scopes=["read", "activity:read"])
                assert "location" not in response.headers
                assert_fault(response, 400, "request")
        accepted = _decide(mine, request_id, scopes=["read", "activity:read"])  # still usable by its owner
        assert accepted.status_code in (302, 303) and "code" in _params(accepted.headers["location"])
        for accept in (True, False):  # and only once
            assert_fault(_decide(mine, request_id, accept=accept), 400, "request")
        denied_id = _field(_consent_page(mine, url, athlete).text, "request")
        assert _params(_decide(mine, denied_id, accept=False).headers["location"])["error"] == "access_denied"
        assert_fault(_decide(mine, denied_id), 400, "request")  # a denial spends it too
    body = sb.exchange(app, _params(accepted.headers["location"])["code"]).json()
    assert body["athlete"]["id"] == athlete
