"""Per-athlete tokens: stored encrypted, refreshed before expiry under a cross-process lock, never lost.

The service rotates refresh tokens: the old one dies the moment a new one is issued. So a refresh runs
inside an IMMEDIATE transaction on the state store (one refresher at a time across all processes),
re-reads the stored token first (another process may have refreshed already), and commits the new
refresh token before anyone uses the new access token.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fitsync.state import athletes as athlete_rows
from fitsync.state.store import Connection, StateStore

from .crypto import TokenCipher
from .errors import NotConnected, OAuthError, ReauthorizationRequired, fault_summary, json_object
from .secret import Secret
from .transport import Transport, UncertainOutcome

if TYPE_CHECKING:
    from .config import Config

# Said in a refusal of the refresh token that fitsync's own lost answer caused, not the athlete (no revocation).
LOST_ROTATION = "was lost in transit after the service had rotated the refresh token"
log = logging.getLogger(__name__)

# The longest an access token is taken to live, whatever an answer says (the service's last 6 h), and how long one
# whose expiry cannot be read is: either only means an earlier refresh, and a token refused before then is refreshed
# on its 401 as any other.
LONGEST_LIFE = 6 * 3600
UNREAD_LIFE = 3600


@dataclass(frozen=True)
class TokenAnswer:
    """What a token answer gave, each part on its own: a rotated refresh token is saved even when the rest is odd
    (the old one is dead the moment the service issued it), and an odd expiry only brings the next refresh nearer."""

    access_token: str | None
    refresh_token: str | None
    expires_at: int
    odd: tuple[str, ...] = ()

    @classmethod
    def read(cls, body: object, now: float) -> TokenAnswer:
        fields = body if isinstance(body, dict) else {}
        access, refresh = (fields.get(k) for k in ("access_token", "refresh_token"))
        access = access if isinstance(access, str) and access else None
        refresh = refresh if isinstance(refresh, str) and refresh else None
        odd = [f"no {k}" for k, v in (("access_token", access), ("refresh_token", refresh)) if v is None]
        expires_at = _expiry(fields.get("expires_at"), fields.get("expires_in"), now)
        if expires_at is None:
            odd.append(f"an expires_at that is not a time ({str(fields.get('expires_at'))[:40]!r})")
            expires_at = int(now) + UNREAD_LIFE
        return cls(access, refresh, expires_at, tuple(odd))


def _expiry(expires_at: object, expires_in: object, now: float) -> int | None:
    """The expiry as epoch seconds, no later than LONGEST_LIFE from now; None when neither member gives one."""
    for value, base in ((expires_at, 0.0), (expires_in, now)):
        try:
            seconds = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
        except ValueError:
            seconds = None
        if seconds is not None and seconds == seconds and abs(seconds) != float("inf") and base + seconds > now:
            return int(min(base + seconds, now + LONGEST_LIFE))  # a time already past is no expiry: not read
    return None


@dataclass(frozen=True)
class AthleteRecord:
    athlete_id: int
    firstname: str | None
    lastname: str | None
    scopes: str
    status: str
    status_reason: str | None
    access_expires_at: int | None

    @property
    def name(self) -> str:
        return " ".join(x for x in (self.firstname, self.lastname) if x) or str(self.athlete_id)


class TokenManager:
    def __init__(self, config: Config, store: StateStore, cipher: TokenCipher, transport: Transport) -> None:
        self.config = config
        self.store = store
        self.cipher = cipher
        self.transport = transport

    # storing a grant ------------------------------------------------------------------------------

    def save_grant(self, body: dict[str, Any], scopes: str) -> AthleteRecord:
        """Store what a code exchange returned (tokens encrypted); a reconnect replaces the old grant."""
        athlete = body.get("athlete") or {}
        if not isinstance(athlete, dict) or not isinstance(athlete.get("id"), int):
            raise OAuthError("the token response carries no athlete id")
        answer = TokenAnswer.read(body, time.time())
        if answer.access_token is None or answer.refresh_token is None:
            raise OAuthError(f"the token response carries {' and '.join(answer.odd[:2])}: run `fitsync connect` again")
        with self.store.transaction() as conn:
            self.cipher.require_current(conn)  # the key the other processes read with (not rotated meanwhile)
            athlete_rows.save_grant(
                conn,
                athlete["id"],
                athlete.get("firstname"),
                athlete.get("lastname"),
                scopes,
                self.cipher.encrypt(answer.access_token),
                answer.expires_at,
                self.cipher.encrypt(answer.refresh_token),
            )
        record = self.athlete(athlete["id"])
        assert record is not None
        return record

    def athlete(self, athlete_id: int) -> AthleteRecord | None:
        row = athlete_rows.record(self.store, athlete_id)
        return AthleteRecord(**row) if row else None

    def athletes(self) -> list[AthleteRecord]:
        return [AthleteRecord(**r) for r in athlete_rows.records(self.store)]

    def forget(self, athlete_id: int) -> None:
        with self.store.transaction() as conn:
            athlete_rows.forget(conn, athlete_id)

    # using tokens ---------------------------------------------------------------------------------

    def access_token(self, athlete_id: int) -> Secret:
        """A token valid for at least the safety margin; refreshed first if not."""
        with self.store.reading() as conn:
            row = self._row(conn, athlete_id)
        if row["access_expires_at"] - time.time() > self.config.refresh_margin:
            return self.cipher.decrypt(row["access_token"])
        return self.refresh(athlete_id)

    def refresh(self, athlete_id: int, rejected: Secret | None = None) -> Secret:
        """Refresh under the cross-process lock; `rejected` is a token the service just answered 401 to."""
        with self.store.transaction() as conn:
            # A new refresh token is written with this process's key: refuse before the call if the key was rotated.
            self.cipher.require_current(conn)
            row = self._row(conn, athlete_id)
            current = self.cipher.decrypt(row["access_token"])
            still_good = row["access_expires_at"] - time.time() > self.config.refresh_margin
            if still_good and (rejected is None or current != rejected):
                return current  # someone else refreshed while we waited for the lock
            body = self._refresh_call(self.cipher.decrypt(row["refresh_token"]))
            if isinstance(body, str):
                athlete_rows.needs_reauth(conn, athlete_id, body)
            elif body.access_token or body.refresh_token:  # what came is kept, the rest as it was
                athlete_rows.save_tokens(
                    conn,
                    athlete_id,
                    self.cipher.encrypt(body.access_token) if body.access_token else row["access_token"],
                    body.expires_at if body.access_token else 0,
                    self.cipher.encrypt(body.refresh_token) if body.refresh_token else row["refresh_token"],
                )
        if isinstance(body, str):  # the service refused the refresh token: whoever catches the error says it
            log.info("athlete %s needs re-authorization: %s", athlete_id, body)
            raise ReauthorizationRequired(athlete_id, body)
        if body.odd:
            log.warning("athlete %s: the token endpoint answered with %s", athlete_id, ", ".join(body.odd))
        if body.access_token is None:
            kept = "its new refresh token is saved" if body.refresh_token else "nothing in it could be saved"
            raise OAuthError(
                f"the token endpoint answered athlete {athlete_id}'s refresh without an access token ({kept}); "
                "run `fitsync sync` again"
            )
        # Committed: the new refresh token is on disk before the new access token is used.
        return Secret(body.access_token)

    def _refresh_call(self, refresh_token: Secret) -> TokenAnswer | str:
        """The token response, or the reason the service refused this refresh token."""
        client_id, client_secret = self.config.require_app()
        form = {
            "client_id": client_id,
            "client_secret": client_secret,
            "grant_type": "refresh_token",
            "refresh_token": refresh_token.reveal(),
        }

        def post(idempotent: bool) -> Any:
            return self.transport.request("POST", self.config.token_url, budget=None, idempotent=idempotent, data=form)

        lost = False
        try:
            response = post(idempotent=False)
        except UncertainOutcome:
            # The connection failed after the request may have reached the service. Asking again with the same
            # token tells: accepted if the first never took effect; refused if the service rotated it and only
            # the answer was lost (the new token is then gone for good: spec §3.2, N is invalid at once).
            lost = True
            response = post(idempotent=True)
        else:
            if response.status_code >= 500:  # a failing service: the usual retries, with backoff
                response = post(idempotent=True)
        reason = fault_summary(response)
        if lost and response.status_code == 400 and "RefreshToken." in reason:
            reason += f"; the answer to fitsync's previous refresh {LOST_ROTATION}"
        if response.status_code == 200:
            body = json_object(response)
            if body is None:  # a page, not a token answer: what the service may have rotated never reached us
                raise OAuthError(
                    "the token endpoint answered 200 with something that is not a token answer "
                    f"({response.headers.get('content-type') or 'no content type'}): is auth_url the service's?"
                )
            return TokenAnswer.read(body, time.time())
        if response.status_code == 400 and "RefreshToken." in reason:
            return reason
        if response.status_code == 401:
            raise OAuthError(
                f"the service rejected fitsync's application credentials ({reason}): "
                "check FITSYNC_CLIENT_ID and FITSYNC_CLIENT_SECRET"
            )
        raise OAuthError(f"token refresh failed with {response.status_code}: {reason}")

    def _row(self, conn: Connection, athlete_id: int) -> Any:
        row = athlete_rows.tokens(conn, athlete_id)
        if row is None or row["status"] == "disconnected" or row["access_token"] is None:
            raise NotConnected(athlete_id)
        if row["status"] == "needs_reauth":
            raise ReauthorizationRequired(athlete_id, row["status_reason"] or "refresh token rejected")
        return row
