"""The one HTTP transport of fitsync: timeouts, bounded retries with backoff and jitter, the rate budget.

Every request the project sends goes through `Transport.request`. Connection errors, timeouts and 5xx are
retried (exponential backoff with jitter, bounded); other 4xx never are; a create that may have reached
the service is never blindly repeated. A 429 is not an error: the usage is recorded and the request waits
for the next window.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from . import deadline_backend, stop_request
from .errors import FitsyncError, first_error
from .rate_governor import Lane, RateGovernor

log = logging.getLogger(__name__)

Budget = Literal["read", "overall"]
MAX_RATE_LIMITED = 50
# Errors raised before the request left this machine: always safe to retry.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Every transport's calls in this process: a run's steps each have a client of their own, and a step that failed
# reports none (no metadata), so `fitsync sync` counts its in-process run's calls here.
_process_calls = [0]
_process_lock = threading.Lock()


def calls_in_process() -> int:
    """Requests sent by every transport of this process so far (as `Transport.calls` counts them)."""
    with _process_lock:
        return _process_calls[0]


def _count(n: int) -> None:
    with _process_lock:
        _process_calls[0] += n


MAYBE_SENT = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


class UncertainOutcome(FitsyncError):
    """A non-idempotent request (a create) failed in a way that leaves unknown whether it took effect."""


class ResponseTooLarge(FitsyncError):
    """An answer larger than `max_response_bytes`: a broken or hostile server; not retried."""


class DeadlineExceeded(FitsyncError):
    """An answer not read whole within the deadline (a server dripping its body); not retried."""


class ServiceUnresponsive(FitsyncError):
    """The service left a request unanswered after every retry: the calls after it, for a while, are not sent (a
    hung service must not hold a sync for each of its endpoints in turn)."""


class ServerError(Exception):
    """A 5xx answer, raised so the retry policy sees it; the last one is returned to the caller."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        super().__init__(f"{response.request.method} {response.request.url.path} → {response.status_code}")


class Transport:
    def __init__(
        self,
        governor: RateGovernor | None,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff_initial: float = 0.2,
        backoff_max: float = 10.0,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = stop_request.sleep,
        max_response_bytes: int = 64 * 1024 * 1024,
        deadline: float = 120.0,
        quiet_seconds: float = 300.0,
    ) -> None:
        self.governor = governor
        # After a request the service left unanswered (every retry timed out or could not connect), the next calls
        # within quiet_seconds fail at once with the reason: the athlete's sync ends in one request's retries.
        self.quiet_seconds = quiet_seconds
        self._quiet_until, self._quiet_reason = 0.0, ""
        self._quiet_cause: BaseException | None = None
        self.max_response_bytes = max_response_bytes
        self.deadline = deadline
        self.http = http or httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            headers={"User-Agent": "fitsync"},
            transport=deadline_backend.transport(),
        )
        self.max_retries = max_retries
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.sleep = sleep
        self.calls = 0  # requests sent (a connection refused is none), retries included: the figure runs report

    def close(self) -> None:
        self.http.close()

    def request(
        self,
        method: str,
        url: str,
        *,
        budget: Budget | None = "read",
        bulk: bool = False,
        idempotent: bool = True,
        max_wait: float | None = None,
        lane: Lane | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """Send with retries; returns the final response (any status but 429 and exhausted 5xx raise)."""
        if time.monotonic() < self._quiet_until:
            # from the error that began the quiet: a step failing on this says the same cause as the step that met it
            raise ServiceUnresponsive(
                f"not sent: {self._quiet_reason}; run it again when the service answers"
            ) from self._quiet_cause
        for attempt in range(MAX_RATE_LIMITED):
            try:
                response = self._with_retries(method, url, budget, bulk, idempotent, max_wait, kwargs, lane)
            except NOT_SENT + MAYBE_SENT + (DeadlineExceeded,) as error:
                self._quiet_until, self._quiet_cause = time.monotonic() + self.quiet_seconds, error
                self._quiet_reason = (
                    f"the service left {method} {url_path(url)} unanswered "
                    f"({type(error).__name__} after {self.max_retries} tries)"
                )
                raise
            if response.status_code != 429:
                return response
            log.warning(
                "429 on %s %s (%s budget): waiting for the next window",
                method,
                url_path(url),
                _refused_budget(response),
            )
            if self.governor is None or budget is None:  # no ledger to wait on: back off instead
                self.sleep(min(self.backoff_max, self.backoff_initial * 2**attempt))
        raise RuntimeError(f"{method} {url_path(url)} was rate limited {MAX_RATE_LIMITED} times in a row")

    def _with_retries(
        self,
        method: str,
        url: str,
        budget: Budget | None,
        bulk: bool,
        idempotent: bool,
        max_wait: float | None,
        kwargs: dict[str, Any],
        lane: Lane | None = None,
    ) -> httpx.Response:
        retryable = NOT_SENT + (MAYBE_SENT + (ServerError,) if idempotent else ())
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries),
            wait=wait_exponential_jitter(multiplier=self.backoff_initial, max=self.backoff_max),
            retry=retry_if_exception(lambda e: isinstance(e, retryable)),
            before_sleep=lambda state: _log_retry(method, url, state, lane),
            sleep=self.sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._send_once(method, url, budget, bulk, max_wait, kwargs, lane)
        except ServerError as error:
            return error.response
        except MAYBE_SENT as error:
            if idempotent:
                raise
            raise UncertainOutcome(
                f"{method} {url_path(url)}: the connection failed after the request may have "
                f"reached the service ({type(error).__name__}); it was not repeated — check "
                "whether it took effect before trying again"
            ) from error
        raise AssertionError("unreachable")

    def _send_once(
        self,
        method: str,
        url: str,
        budget: Budget | None,
        bulk: bool,
        max_wait: float | None,
        kwargs: dict[str, Any],
        lane: Lane | None = None,
    ) -> httpx.Response:
        stop_request.checkpoint()
        if self.governor is not None and budget is not None:
            self.governor.reserve(budget == "read", bulk=bulk, max_wait=max_wait, lane=lane)
        sent_at = time.time()
        self.calls += 1
        _count(1)
        where, started = f"{method} {url_path(url)}", time.monotonic()
        try:
            with deadline_backend.within(self.deadline):  # status line, headers and body
                built = {k: v for k, v in kwargs.items() if k != "auth"}  # auth applies as it is sent (api.BearerToken)
                response = self._bounded(
                    self.http.send(self.http.build_request(method, url, **built), stream=True, auth=kwargs.get("auth"))
                )
        except NOT_SENT:  # it never reached the service: not one of the calls a run reports ("5 calls" of none)
            self.calls -= 1
            _count(-1)
            raise
        except httpx.ReadTimeout:
            if time.monotonic() - started < self.deadline:
                raise  # an ordinary read timeout: retried
            raise DeadlineExceeded(
                f"{where}: the answer was not read whole within {self.deadline:.0f} s "
                "(response_deadline); stopped reading it"
            ) from None
        if self.governor is not None and budget is not None:
            # After a 429 the refused budget is spent for the window the request was sent in (not a later one).
            refused = _refused_budget(response) if response.status_code == 429 else None
            self.governor.observe(response.headers, sent_at=sent_at, refused_budget=refused)
        if response.status_code >= 500:
            raise ServerError(response)
        return response

    def _bounded(self, streamed: httpx.Response) -> httpx.Response:
        """The answer read whole, within `max_response_bytes` (decoded) and `deadline` seconds of reading."""
        where = f"{streamed.request.method} {streamed.request.url.path}"
        try:
            declared = streamed.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_response_bytes:
                raise ResponseTooLarge(
                    f"{where}: the answer announces {int(declared):,} bytes, more than the "
                    f"{self.max_response_bytes:,} fitsync accepts (max_response_bytes)"
                )
            body, ends = bytearray(), time.monotonic() + self.deadline
            for chunk in streamed.iter_bytes():
                body += chunk
                if len(body) > self.max_response_bytes:
                    raise ResponseTooLarge(
                        f"{where}: the answer grew past {self.max_response_bytes:,} bytes "
                        "(max_response_bytes); stopped reading it"
                    )
                if time.monotonic() > ends:
                    raise DeadlineExceeded(
                        f"{where}: the answer was not read whole within {self.deadline:.0f} s "
                        "(response_deadline); stopped reading it"
                    )
        finally:
            streamed.close()
        # Decoded already: the copy must not claim an encoding or a length it no longer has.
        headers = [
            (k, v)
            for k, v in streamed.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            streamed.status_code,
            headers=headers,
            content=bytes(body),
            request=streamed.request,
            extensions=streamed.extensions,
        )


def url_path(url: str) -> str:
    """The path only: what logs and errors show of a URL."""
    return httpx.URL(url).path


def _refused_budget(response: httpx.Response) -> str:
    try:
        field = first_error(response.json()).get("field")
    except ValueError:
        return "read"
    return "overall" if "overall" in str(field) else "read"


def _log_retry(method: str, url: str, state: RetryCallState, lane: Lane | None = None) -> None:
    error = state.outcome.exception() if state.outcome else None
    pause = state.next_action.sleep if state.next_action else 0.0
    whose = f"athlete {lane.athlete_id}: " if lane is not None and lane.athlete_id is not None else ""
    log.warning(
        "%sretrying %s %s after %s (attempt %d) in %.1f s",
        whose,
        method,
        url_path(url),
        type(error).__name__,
        state.attempt_number,
        pause,
    )
