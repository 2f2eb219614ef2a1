"""Typed operations of the Fitness Activity Service for one athlete, and push-subscription management.

Paging iterators ask for 200 items a page and stop at a short page. A 401 for an expired or revoked
access token is answered once by a refresh (unless another process already did it).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import httpx

from . import athlete_zones, errors
from .known_fields import unknown_fields
from .rate_governor import Lane
from .records import Record, UnexpectedShape, record, records, shape_problem, wrong_member
from .secret import Secret
from .tokens import TokenManager
from .transport import Budget, Transport

PAGE_SIZE = 200
# (endpoint, object id, problems) → None: what the client met and does not know, reported once (shape_reports.py).
Reporter = Callable[[str, Any, tuple[str, ...]], object]


def _epoch(value: dt.datetime | int | None) -> int | None:
    return value if value is None or isinstance(value, int) else int(value.timestamp())


class BearerToken(httpx.Auth):
    """The athlete's access token as the request leaves, after any wait for the rate budget: read before a wait of
    minutes (or, with several hosts, while another host refreshes it) it could expire on the way.

    `token` was read (and refreshed if due) before the wait: valid for at least refresh_margin then, it is sent as
    it is while less than half the margin has passed, so a call that did not wait reads the store once."""

    def __init__(self, tokens: TokenManager, athlete_id: int, token: Secret) -> None:
        self.tokens, self.athlete_id = tokens, athlete_id
        self._token, self._read_at = token, time.monotonic()
        self.sent: Secret | None = None  # the token the last attempt carried

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if time.monotonic() - self._read_at >= self.tokens.config.refresh_margin / 2:
            self._token, self._read_at = self.tokens.access_token(self.athlete_id), time.monotonic()
        self.sent = self._token
        request.headers["Authorization"] = f"Bearer {self.sent.reveal()}"
        yield request


class AthleteApi:
    def __init__(
        self,
        base_url: str,
        transport: Transport,
        tokens: TokenManager,
        athlete_id: int,
        *,
        bulk: bool = False,
        max_wait: float | None = None,
        reporter: Reporter | None = None,
        priority: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.reporter = reporter
        self.transport = transport
        self.tokens = tokens
        self.athlete_id = athlete_id
        self.bulk = bulk
        self.max_wait = max_wait
        # the governor's priority class (rate_governor.CLASSES); athletes of one class take turns
        self.lane = Lane(priority or ("incremental" if bulk else "interactive"), athlete_id)

    # plumbing -------------------------------------------------------------------------------------

    def call(self, method: str, path: str, *, budget: Budget = "read", idempotent: bool = True, **kwargs: Any) -> Any:
        response = self._answered(method, path, budget, idempotent, kwargs)
        return None if response.status_code == 204 else self._decoded(response, f"{method} {_template(path)}")

    def body(self, method: str, path: str, *, budget: Budget = "read", idempotent: bool = True, **kwargs: Any) -> bytes:
        """The answer's bytes as they came, for a caller that parses them itself and keeps them as received (streams:
        ≈ 1 MB of JSON a long ride, parsed straight into columns)."""
        return self._answered(method, path, budget, idempotent, kwargs).content

    def _answered(
        self, method: str, path: str, budget: Budget, idempotent: bool, kwargs: dict[str, Any]
    ) -> httpx.Response:
        """A successful answer (a refused token refreshed once); a 4xx/5xx raises its error."""
        # read (and refreshed, if due) before the slot is reserved; read again only if the wait was long
        auth = BearerToken(self.tokens, self.athlete_id, self.tokens.access_token(self.athlete_id))
        response = self._send(method, path, auth, budget, idempotent, kwargs)
        if response.status_code == 401 and _is_token_error(response):
            token = self.tokens.refresh(self.athlete_id, rejected=auth.sent)
            response = self._send(
                method, path, BearerToken(self.tokens, self.athlete_id, token), budget, idempotent, kwargs
            )
        if 300 <= response.status_code < 400:
            raise errors.Redirected(response.status_code, method, path, response.headers.get("location", ""))
        if response.status_code >= 400:
            fault = errors.json_object(response)
            raise errors.for_status(response.status_code, fault)(response.status_code, method, path, fault)
        return response

    def _decoded(self, response: httpx.Response, endpoint: str) -> Any:
        """The answer's JSON. A byte that is not UTF-8 (a proxy mangling a name) is replaced (U+FFFD) and reported,
        so one bad character never fails a listing; a body nested deeper than the parser goes, or that is not JSON,
        is an UnexpectedShape carrying its start, kept raw by the caller."""
        try:
            return json.loads(response.content)
        except UnicodeDecodeError:
            if self.reporter is not None:
                self.reporter(endpoint, None, ("bytes that are not UTF-8, replaced with U+FFFD",))
            try:
                return json.loads(response.content.decode("utf-8", errors="replace"))
            except ValueError as error:
                raise UnexpectedShape(
                    endpoint, "answer", _start(response), f"an answer that is not JSON ({error})"
                ) from None
        except RecursionError:
            raise UnexpectedShape(
                endpoint, "answer", _start(response), "an answer nested deeper than the JSON parser goes"
            ) from None
        except ValueError as error:
            raise UnexpectedShape(
                endpoint, "answer", _start(response), f"an answer that is not JSON ({error})"
            ) from None

    def _send(
        self, method: str, path: str, auth: BearerToken, budget: Budget, idempotent: bool, kwargs: dict[str, Any]
    ) -> httpx.Response:
        return self.transport.request(
            method,
            self.base_url + path,
            budget=budget,
            bulk=self.bulk,
            idempotent=idempotent,
            max_wait=self.max_wait,
            lane=self.lane,
            auth=auth,
            **kwargs,
        )

    def one(self, kind: str, endpoint: str, body: Any) -> Record:
        """The body as a record; what does not match expectations is reported under `endpoint` (kept raw). A body that
        is not a `kind` at all (records.SHAPES) raises UnexpectedShape carrying it."""
        if problem := shape_problem(kind, body):
            raise UnexpectedShape(endpoint, kind, body, problem)
        return self._record(kind, endpoint, body)

    def _record(self, kind: str, endpoint: str, body: Any) -> Record:
        checked = record(kind, body)
        if self.reporter is not None:
            problems = checked.issues + unknown_fields(kind, checked.raw)
            if problems:
                self.reporter(endpoint, checked.id, problems)
        return checked

    def many(self, kind: str, endpoint: str, body: Any) -> list[Record]:
        """A list body as records; any other shape raises UnexpectedShape carrying the body."""
        if not isinstance(body, list):
            raise UnexpectedShape(endpoint, kind, body)
        return [self._record(kind, endpoint, item) for item in body]  # an odd element is flagged, never the whole page

    def pages(
        self, kind: str, path: str, params: dict[str, Any], per_page: int = PAGE_SIZE, endpoint: str | None = None
    ) -> Iterator[Record]:
        page = 1
        while True:
            body = self.call("GET", path, params={**params, "page": page, "per_page": per_page})
            batch = self.many(kind, endpoint or f"GET {path}", body)
            yield from batch
            if len(batch) < per_page:
                return
            page += 1

    # athlete --------------------------------------------------------------------------------------

    def athlete(self) -> Record:
        return self.one("athlete", "GET /athlete", self.call("GET", "/athlete"))

    def stats(self) -> Record:
        return self.one("stats", "GET /athletes/{id}/stats", self.call("GET", f"/athletes/{self.athlete_id}/stats"))

    def zones(self) -> athlete_zones.AthleteZones:
        """Heart-rate and power zones, from the spec's array or the real service's object (athlete_zones.py)."""
        zones = athlete_zones.read(self.call("GET", "/athlete/zones"))
        if zones.problems and self.reporter is not None:
            self.reporter("GET /athlete/zones", None, zones.problems)
        return zones

    # activities -----------------------------------------------------------------------------------

    def activities(
        self,
        *,
        before: dt.datetime | int | None = None,
        after: dt.datetime | int | None = None,
        per_page: int = PAGE_SIZE,
    ) -> Iterator[Record]:
        """Summaries; newest first, or oldest first when only `after` is given (the service's rule)."""
        params = {k: v for k, v in (("before", _epoch(before)), ("after", _epoch(after))) if v is not None}
        return self.pages("activity", "/athlete/activities", params, per_page)

    def activity(self, activity_id: int, include_all_efforts: bool = True) -> Record:
        return self.one(
            "activity",
            "GET /activities/{id}",
            self.call(
                "GET", f"/activities/{activity_id}", params={"include_all_efforts": str(include_all_efforts).lower()}
            ),
        )

    def laps(self, activity_id: int) -> list[Record]:
        return self.many("lap", "GET /activities/{id}/laps", self.call("GET", f"/activities/{activity_id}/laps"))

    def activity_zones(self, activity_id: int) -> list[Record]:
        body = self.call("GET", f"/activities/{activity_id}/zones")
        zones = self.many("zone", "GET /activities/{id}/zones", body)
        # the activity's zones are replaced whole: a bucket read as NULL, or a zone without its type (left out by the
        # load), would replace what was right
        odd = next((f"zone {i + 1}: {', '.join(z.issues)}" for i, z in enumerate(zones) if z.issues), None)
        if problem := wrong_member(body) or odd:
            raise UnexpectedShape("GET /activities/{id}/zones", "zone", body, problem)
        return zones

    def create_activity(
        self,
        *,
        name: str,
        sport_type: str,
        start_date_local: dt.datetime,
        elapsed_time: int,
        description: str | None = None,
        distance: float | None = None,
        trainer: bool = False,
        commute: bool = False,
    ) -> Record:
        """Not retried once it may have reached the service: a repeat would create a duplicate."""
        form = {
            "name": name,
            "sport_type": sport_type,
            "elapsed_time": elapsed_time,
            "start_date_local": start_date_local.replace(tzinfo=None).isoformat(timespec="seconds") + "Z",
            "trainer": int(trainer),
            "commute": int(commute),
        }
        if description is not None:
            form["description"] = description
        if distance is not None:
            form["distance"] = distance
        return record("activity", self.call("POST", "/activities", budget="overall", idempotent=False, data=form))

    def update_activity(self, activity_id: int, **fields: Any) -> Record:
        return record("activity", self.call("PUT", f"/activities/{activity_id}", json=fields))

    # segments -------------------------------------------------------------------------------------

    def segment(self, segment_id: int) -> Record:
        return self.one("segment", "GET /segments/{id}", self.call("GET", f"/segments/{segment_id}"))

    def starred_segments(self, per_page: int = PAGE_SIZE) -> Iterator[Record]:
        return self.pages("segment", "/segments/starred", {}, per_page)

    def star_segment(self, segment_id: int, starred: bool) -> Record:
        return record(
            "segment", self.call("PUT", f"/segments/{segment_id}/starred", data={"starred": str(starred).lower()})
        )

    def segment_efforts(
        self,
        segment_id: int,
        *,
        start_local: dt.datetime | None = None,
        end_local: dt.datetime | None = None,
        per_page: int = PAGE_SIZE,
    ) -> Iterator[Record]:
        params: dict[str, Any] = {"segment_id": segment_id}
        if start_local is not None:
            params["start_date_local"] = start_local.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
        if end_local is not None:
            params["end_date_local"] = end_local.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
        return self.pages("effort", "/segment_efforts", params, per_page)

    def segment_effort(self, effort_id: int) -> Record:
        return self.one("effort", "GET /segment_efforts/{id}", self.call("GET", f"/segment_efforts/{effort_id}"))

    def explore_segments(
        self,
        bounds: tuple[float, float, float, float],
        *,
        activity_type: str | None = None,
        min_cat: int | None = None,
        max_cat: int | None = None,
    ) -> list[Record]:
        params: dict[str, Any] = {"bounds": ",".join(str(b) for b in bounds)}
        params.update(
            {
                k: v
                for k, v in (("activity_type", activity_type), ("min_cat", min_cat), ("max_cat", max_cat))
                if v is not None
            }
        )
        return records("segment", self.call("GET", "/segments/explore", params=params)["segments"])


class PushSubscriptions:
    """The application's one push subscription (client credentials, sent in the body, never the URL)."""

    def __init__(self, base_url: str, transport: Transport, client_id: int, client_secret: str) -> None:
        self.url = base_url.rstrip("/") + "/push_subscriptions"
        self.transport = transport
        self._creds: dict[str, int | str] = {"client_id": client_id, "client_secret": client_secret}

    def create(self, callback_url: str, verify_token: str) -> int:
        response = self.transport.request(
            "POST",
            self.url,
            idempotent=False,
            data={**self._creds, "callback_url": callback_url, "verify_token": verify_token},
        )
        created = self._checked(response, "POST")
        if not isinstance(created, dict) or not isinstance(created.get("id"), int):
            raise errors.NotTheService(
                f"POST /push_subscriptions answered {errors.masked(json.dumps(created, default=str))[:80]}, not a "
                "subscription id"
            )
        return int(created["id"])

    def view(self) -> list[Record]:
        response = self.transport.request(
            "GET",
            self.url,
            content=httpx.QueryParams(self._creds).__str__().encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        try:
            return records("subscription", self._checked(response, "GET"))
        except UnexpectedShape as error:
            raise errors.NotTheService(str(error)) from None

    def delete(self, subscription_id: int) -> None:
        response = self.transport.request("DELETE", f"{self.url}/{subscription_id}", data=self._creds)
        self._checked(response, "DELETE")

    def _checked(self, response: httpx.Response, method: str) -> Any:
        if 300 <= response.status_code < 400:
            raise errors.Redirected(
                response.status_code, method, "/push_subscriptions", response.headers.get("location", "")
            )
        if response.status_code >= 400:
            fault = errors.json_object(response)
            raise errors.for_status(response.status_code, fault)(
                response.status_code, method, "/push_subscriptions", fault
            )
        if response.status_code == 204:
            return None
        try:
            return response.json()
        except ValueError:
            raise errors.NotTheService(
                f"{method} /push_subscriptions → {response.status_code} with an answer that is not JSON "
                f"({response.headers.get('content-type') or 'no content type'}): is base_url the service's API root?"
            ) from None


def _template(path: str) -> str:
    """/activities/123/zones → /activities/{id}/zones: endpoints are named by their operation, not an object."""
    return "/".join("{id}" if part.isdigit() else part for part in path.split("/"))


def _start(response: httpx.Response, chars: int = 65_536) -> str:
    """The start of an answer that cannot be read, as text, to keep raw."""
    return response.content[:chars].decode("utf-8", errors="replace")


def _is_token_error(response: httpx.Response) -> bool:
    return errors.first_error(errors.json_object(response)).get("field") == "access_token"
