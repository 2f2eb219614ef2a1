"""The service's error payload (Fault) and the exception every handler raises to produce one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

MESSAGES = {
    400: "Bad Request",
    401: "Authorization Error",
    402: "Payment Required",
    403: "Forbidden",
    404: "Record Not Found",
    405: "Method Not Allowed",
    413: "Request Entity Too Large",
    415: "Unsupported Media Type",
    429: "Rate Limit Exceeded",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass
class ApiError(Exception):
    status: int
    resource: str = ""
    field: str = ""
    code: str = "invalid"
    message: str | None = None
    extra_errors: list[dict[str, str]] = dataclasses.field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        errors = [{"resource": self.resource, "field": self.field, "code": self.code}, *self.extra_errors]
        return {"message": self.message or MESSAGES.get(self.status, "Error"), "errors": errors}

    def __str__(self) -> str:
        return f"{self.status} {self.resource}.{self.field} {self.code}"


def bad_request(resource: str, field_name: str, code: str = "invalid") -> ApiError:
    return ApiError(400, resource, field_name, code)


def not_found(resource: str, field_name: str = "id") -> ApiError:
    return ApiError(404, resource, field_name, "invalid")


def forbidden(resource: str, field_name: str = "id") -> ApiError:
    return ApiError(403, resource, field_name, "forbidden")


def missing_scope(scope: str) -> ApiError:
    return ApiError(401, "AccessToken", f"{scope}_permission", "missing")


def invalid_token() -> ApiError:
    return ApiError(401, "Athlete", "access_token", "invalid")


def subscription_required() -> ApiError:
    return ApiError(402, "Athlete", "subscription", "required")


def rate_limited(budget: str) -> ApiError:
    return ApiError(429, "Application", f"{budget} rate limit", "exceeded")
