"""What can go wrong talking to the service, as exceptions that say what to do (and never carry secrets)."""

from __future__ import annotations

from typing import Any


class FitsyncError(Exception):
    pass


class ApiError(FitsyncError):
    """A non-success answer; `fault` is the service's error payload."""

    def __init__(self, status: int, method: str, path: str, fault: dict[str, Any] | None = None) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.fault = fault or {}
        errors = self.fault.get("errors") or [{}]
        first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
        self.resource, self.field, self.code = first.get("resource"), first.get("field"), first.get("code")
        detail = f"{self.fault.get('message', 'error')}"
        if self.resource or self.field:
            detail += f" ({_named(self.resource, self.field)}: {self.code})"
        super().__init__(f"{method} {path} → {status} {detail}")


class NotFound(ApiError):
    pass


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
    errors = (fault or {}).get("errors") or []
    field = errors[0].get("field", "") if errors and isinstance(errors[0], dict) else ""
    if status == 401 and isinstance(field, str) and field.endswith("_permission"):
        return MissingScope
    if status == 403 and (errors[0].get("resource"), field, errors[0].get("code")) == (
        "Application",
        "Status",
        "Inactive",
    ):
        return ApplicationInactive
    return {402: PaymentRequired, 403: Forbidden, 404: NotFound}.get(status, ApiError)


def _named(resource: object, field: object) -> str:
    """`Activity.name`, or the one the error gives ("Server", not "Server.")."""
    return ".".join(str(part) for part in (resource, field) if part)


def fault_summary(response: Any) -> str:
    """The service's error payload in one line (it never contains secrets), or the bare status."""
    try:
        body = response.json()
        error = (body.get("errors") or [{}])[0]
        return f"{body.get('message')} ({_named(error.get('resource'), error.get('field'))}: {error.get('code')})"
    except (ValueError, AttributeError, IndexError, TypeError, KeyError):
        return f"HTTP {response.status_code}"
