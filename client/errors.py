"""What can go wrong talking to the service, as exceptions that say what to do (and never carry secrets)."""

from __future__ import annotations

import re
from typing import Any

# A server's text can echo the request it refused (a proxy's error page, a token endpoint's 400 quoting its form):
# what looks like a credential is masked before the text reaches a message, a log or Dagster's run history.
_NAMES = r"(?:client_secret|refresh_token|access_token|verify_token|password|code)"
_CREDENTIAL = re.compile(  # a form's `name=value` (not `status_code=`), a JSON or Python member's `"name": "value"`
    rf"(?i)((?<![\w.-]){_NAMES}=|[\"']{_NAMES}[\"']\s*:\s*[\"']?)[^\s&\"',;}}]+"
)
# A bearer header, or a run of 32+ token characters (the service's tokens are 40 hex digits) that is not a UUID (a
# request id worth quoting to support).
_LONG_TOKEN = re.compile(
    r"(?i)\b(?:bearer\s+\S+|(?![0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)[0-9a-z_\-]{32,})"
)
MESSAGE_CHARS = 300  # a server's message is quoted up to this many characters


def masked(text: str) -> str:
    """A server's text as fitsync may repeat it: credentials and token-like runs masked, at most MESSAGE_CHARS."""
    text = _LONG_TOKEN.sub("***", _CREDENTIAL.sub(r"\1***", text))
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + "…"


def first_error(fault: object) -> dict[str, Any]:
    """The first entry of a Fault's `errors`, or {} when the payload has none of that shape (an HTML page, a list)."""
    errors = fault.get("errors") if isinstance(fault, dict) else None
    return errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}


def is_fault(fault: object) -> bool:
    """Whether an error answer is the service's own error payload (a message and a list of errors), not a proxy's
    or a load balancer's page: only the service's word counts as proof (a 404 that deletes data)."""
    return isinstance(fault, dict) and isinstance(fault.get("message"), str) and isinstance(fault.get("errors"), list)


class FitsyncError(Exception):
    pass


class ApiError(FitsyncError):
    """A non-success answer; `fault` is the service's error payload."""

    def __init__(self, status: int, method: str, path: str, fault: dict[str, Any] | None = None) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.fault = fault or {}
        first = first_error(self.fault)
        self.resource, self.field, self.code = first.get("resource"), first.get("field"), first.get("code")
        if is_fault(self.fault):
            detail = masked(str(self.fault["message"]))
            if self.resource or self.field:
                detail += f" ({masked(_named(self.resource, self.field))}: {masked(str(self.code))})"
        else:
            detail = NOT_A_FAULT
        super().__init__(f"{method} {path} → {status} {detail}")


# An error answer that is not the service's error payload: said so, since it proves nothing the service decided.
NOT_A_FAULT = "(not the service's error payload: a proxy's or a gateway's page? check base_url)"


class Redirected(ApiError):
    """A 3xx: fitsync follows no redirect (the athlete's token would go with it), and its body is never data."""

    def __init__(self, status: int, method: str, path: str, location: str) -> None:
        super().__init__(status, method, path)
        self.location = location

    def __str__(self) -> str:
        from urllib.parse import urlsplit

        where = urlsplit(self.location).netloc or "the same host"
        return (
            f"{self.method} {self.path} → {self.status}: a redirect to {where}, which fitsync does not follow (the "
            "athlete's token would go with it): is base_url the service's API root?"
        )


class NotTheService(FitsyncError):
    """A success status with a body that is not JSON (a proxy's or a portal's page)."""


class NotFound(ApiError):
    """The service's own 404 (its error payload): a proxy's page is an ApiError, never proof that something is gone."""

    def about(self, resource: str) -> bool:
        """Whether the 404 names `resource` (Activity): a 404 naming the request's path is a wrong address, not an
        object that is gone."""
        return str(self.resource or "").lower() == resource.lower()


class Forbidden(ApiError):
    pass


class ApplicationInactive(Forbidden):
    """The real service refuses every request of an application whose owner has no active subscription."""

    def __str__(self) -> str:
        return (
            f"{self.method} {self.path} → 403: the service says this application is inactive (it refuses every "
            "request until the account that owns the app has an active subscription and the app is reactivated "
            "in the service's API settings)"
        )


class PaymentRequired(ApiError):
    """The operation needs a subscription the athlete does not have."""


class MissingScope(ApiError):
    """The athlete did not grant the permission this operation needs."""

    @property
    def scope(self) -> str:
        return (self.field or "").removesuffix("_permission")


class ReauthorizationRequired(FitsyncError):
    """The athlete's refresh token is no longer valid: only a new consent helps."""

    def __init__(self, athlete_id: int, reason: str) -> None:
        self.athlete_id = athlete_id
        self.reason = reason
        super().__init__(f"athlete {athlete_id} must authorize fitsync again ({reason}): run `fitsync connect`")


class NotConnected(FitsyncError):
    def __init__(self, athlete_id: int) -> None:
        self.athlete_id = athlete_id
        super().__init__(f"athlete {athlete_id} is not connected: run `fitsync connect`")


class OAuthError(FitsyncError):
    pass


def for_status(status: int, fault: dict[str, Any] | None) -> type[ApiError]:
    """The exception class for an answer; a 401 naming a `*_permission` field is a missing scope."""
    if not is_fault(fault):  # a page of another server: nothing the service said
        return ApiError
    first = first_error(fault)
    field = first.get("field", "")
    if status == 401 and isinstance(field, str) and field.endswith("_permission"):
        return MissingScope
    if status == 403 and (first.get("resource"), field, first.get("code")) == ("Application", "Status", "Inactive"):
        return ApplicationInactive
    return {402: PaymentRequired, 403: Forbidden, 404: NotFound}.get(status, ApiError)


def _named(resource: object, field: object) -> str:
    """`Activity.name`, or the one the error gives ("Server", not "Server.")."""
    return ".".join(str(part) for part in (resource, field) if part)


def json_object(response: Any) -> dict[str, Any] | None:
    """An answer's JSON object, None when it is not JSON or not an object (a page, a list)."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def fault_summary(response: Any) -> str:
    """The service's error payload in one line (credentials it may echo masked), or the bare status."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if not is_fault(body):
        return f"HTTP {response.status_code} {NOT_A_FAULT}"
    error = first_error(body)
    named = _named(error.get("resource"), error.get("field"))
    return f"{masked(str(body['message']))} ({masked(named)}: {masked(str(error.get('code')))})"
