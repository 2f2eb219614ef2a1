"""OpenAPI 3 description generated from the operation table, so it says what the server does."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources as pkg_resources
from typing import Any

from .api import Operation
from .faults import MESSAGES
from .params import Param
from .scopes import SCOPES
from .world_common import LEGACY_TYPES, SPORT_TYPES

PARAM_SCHEMAS: dict[str, dict[str, Any]] = {
    "int64": {"type": "integer", "format": "int64"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "string": {"type": "string"},
    "datetime": {"type": "string", "format": "date-time"},
    "bounds": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
    "enum": {"type": "string"},
}

# Which operations can answer 403 (the object is another athlete's) and 404 (no such object): the handlers decide.
# (getStats answers another athlete's id with 401, as the real service does: every token operation documents 401.)
NOT_OWNER = frozenset(
    {
        "getSegmentEffortById",
        "getActivityById",
        "updateActivityById",
        "getLapsByActivityId",
        "getZonesByActivityId",
        "getActivityStreams",
        "getSegmentEffortStreams",
    }
)
# Every operation that checks the owner looks the resource up first: an unknown id is a 404 there too.
NOT_FOUND = NOT_OWNER | frozenset(
    {
        "getSegmentById",
        "starSegment",
        "getEffortsBySegmentId",
        "deleteSubscription",
    }
)

# getLoggedInAthlete answers the detailed form with profile:read_all and the summary form otherwise (§4.2).
RESPONSE_SCHEMAS: dict[str, dict[str, Any]] = {
    "getLoggedInAthlete": {
        "oneOf": [
            {"$ref": "#/components/schemas/DetailedAthlete"},
            {
                "allOf": [
                    {"$ref": "#/components/schemas/SummaryAthlete"},
                    {"type": "object", "properties": {"resource_state": {"type": "integer", "enum": [2]}}},
                ]
            },
        ]
    },
}

# The public swagger's StreamSet (stream.json): each stream's samples and how they were sampled. Keyed by type by
# default; with key_by_type=false (and in the `real` flavour without it) a list of the same objects with `type`.
_STREAM_ITEMS: dict[str, dict[str, Any]] = {
    "time": {"type": "integer"},
    "distance": {"type": "number"},
    "latlng": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
    "altitude": {"type": "number"},
    "velocity_smooth": {"type": "number"},
    "heartrate": {"type": "integer"},
    "cadence": {"type": "integer"},
    "watts": {"type": "integer"},
    "temp": {"type": "integer"},
    "moving": {"type": "boolean"},
    "grade_smooth": {"type": "number"},
}


def _stream(kind: str, typed: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {"type": {"type": "string", "enum": [kind]}} if typed else {}
    properties |= {
        "data": {"type": "array", "items": _STREAM_ITEMS[kind]},
        "series_type": {"type": "string", "enum": ["distance", "time"]},
        "original_size": {"type": "integer", "minimum": 0},
        "resolution": {"type": "string", "enum": ["low", "medium", "high"]},
    }
    return {"type": "object", "required": list(properties), "properties": properties}


STREAM_SET: dict[str, Any] = {
    "oneOf": [
        {"type": "object", "properties": {k: _stream(k, False) for k in _STREAM_ITEMS}, "additionalProperties": False},
        {"type": "array", "items": {"oneOf": [_stream(k, True) for k in _STREAM_ITEMS]}},
    ]
}

RESPONSE_SCHEMAS["getActivityStreams"] = RESPONSE_SCHEMAS["getSegmentEffortStreams"] = STREAM_SET

RATE_HEADERS = {
    "X-RateLimit-Limit": 'Overall limits of the application: "<15-minute>,<daily>".',
    "X-RateLimit-Usage": 'Overall usage in the current windows: "<15-minute>,<daily>".',
    "X-ReadRateLimit-Limit": 'Read (non-upload) limits of the application: "<15-minute>,<daily>".',
    "X-ReadRateLimit-Usage": 'Read usage in the current windows: "<15-minute>,<daily>".',
}

SUCCESS = {200: "OK", 201: "Created", 204: "No Content"}


def _error_description(op: Operation, status: int) -> str:
    token = op.auth == "token"
    texts = {
        400: "a parameter is missing, malformed or out of range (`errors[0].field` names it)"
        + (
            "; the callback validation failed; or the application already has a subscription."
            if op.operation_id == "createSubscription"
            else "."
        ),
        401: (
            "missing, invalid, expired or revoked access token (`Athlete.access_token`), or a required scope "
            "missing (`AccessToken.<scope>_permission`, code `missing`)."
            if token
            else "unknown client_id or wrong client_secret."
        ),
        402: "a subscription-only operation and the athlete has no subscription (`Athlete.subscription`, `required`).",
        403: "the object belongs to another athlete.",
        404: "no such object"
        + (" (a private segment of another athlete is not found either)." if op.resource == "Segment" else "."),
        429: "over the application's limit (`Application`, field `read rate limit` or `overall rate limit`, "
        "code `exceeded`).",
    }
    return f"{MESSAGES[status]}: {texts[status]}"


def error_statuses(op: Operation) -> tuple[int, ...]:
    statuses = {401, 429}
    if op.params or op.auth == "client":
        statuses.add(400)
    if op.premium:
        statuses.add(402)
    if op.operation_id in NOT_OWNER:
        statuses.add(403)
    if op.operation_id in NOT_FOUND:
        statuses.add(404)
    return tuple(sorted(statuses))


@cache
def components() -> dict[str, Any]:
    return json.loads(pkg_resources.files(__package__).joinpath("openapi_schemas.json").read_text())


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _fault(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if headers:
        out["headers"] = headers
    out["content"] = {"application/json": {"schema": _ref("Fault")}}
    return out


def _rate_headers() -> dict[str, Any]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in RATE_HEADERS}


DEFAULT_ERROR = _fault("Any other failure (e.g. 405, 413 body too large, 5xx): the Fault payload.")


# Where the server's real rule is narrower or wider than the parameter's parsing limits.
SCHEMA_OVERRIDES: dict[str, dict[str, Any]] = {
    "sport_type": {"enum": sorted(SPORT_TYPES)},  # activity create/update refuse other values (400)
    "type": {"enum": sorted(LEGACY_TYPES)},
    "callback_url": {"maxLength": 255},  # §8: checked after parsing, 400 beyond it
    "client_secret": {"maxLength": None},  # any other value is simply a wrong secret (401)
}


def param_schema(p: Param) -> dict[str, Any]:
    schema = dict(PARAM_SCHEMAS[p.kind])
    if p.choices:
        schema["enum"] = list(p.choices)
    if p.minimum is not None:
        schema["minimum"] = p.minimum
    if p.maximum is not None:
        schema["maximum"] = p.maximum
    if p.default is not None:
        schema["default"] = p.default
    if p.kind == "string":
        schema["maxLength"] = p.max_length
    for key, value in SCHEMA_OVERRIDES.get(p.name, {}).items():
        if value is None:
            schema.pop(key, None)
        else:
            schema[key] = value
    return schema


def parameter_doc(p: Param) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": p.name, "in": p.where, "required": p.required or p.where == "path"}
    if p.description:
        doc["description"] = p.description
    if p.clamp_to is not None:
        doc["description"] = (doc.get("description", "") + f" Larger values are lowered to {p.clamp_to}.").strip()
    if p.kind == "bounds":
        doc["style"], doc["explode"] = "form", False  # one comma-separated value, not repeated parameters
    doc["schema"] = param_schema(p)
    return doc


CLIENT_PARAMS = (
    Param("client_id", "query", "int64", required=True, minimum=1, description="Application id."),
    Param("client_secret", "query", "string", required=True, max_length=200, description="Application secret."),
)


def operation_doc(op: Operation) -> dict[str, Any]:
    in_path_or_query = [p for p in op.params if p.where in ("path", "query")]
    in_body = [p for p in op.params if p.where in ("form", "body")]
    if op.auth == "client":
        # §4.5: client credentials travel with the form data of a POST, in the query otherwise.
        (in_body if in_body else in_path_or_query).extend(CLIENT_PARAMS)
    doc: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": list(op.tags),
        "parameters": [parameter_doc(p) for p in in_path_or_query],
    }
    if op.auth == "client":
        doc["security"] = []
    else:
        doc["security"] = [{"oauth": list(op.scopes)}, {"accessTokenQuery": []}]
    if in_body:
        body_schema: dict[str, Any] = {"type": "object"}
        required = [p.name for p in in_body if p.required]
        if required:
            body_schema["required"] = required
        body_schema["properties"] = {p.name: param_schema(p) for p in in_body}
        form = {
            "application/x-www-form-urlencoded": {"schema": body_schema},
            "multipart/form-data": {"schema": body_schema},
        }
        if op.auth == "client":
            content = form  # client credentials are read from the query or a form, not from JSON
        elif any(p.where == "body" for p in in_body):
            content = {"application/json": {"schema": body_schema}, **form}
        else:
            content = {**form, "application/json": {"schema": body_schema}}
        doc["requestBody"] = {
            "description": ("Form fields" if op.auth == "client" else "Form fields or a JSON object")
            + "; the fields may also be sent as query parameters.",
            "required": bool(required),
            "content": content,
        }
    responses: dict[str, Any] = {}
    rate = _rate_headers()
    if op.status == 204:
        responses["204"] = {"description": SUCCESS[204], "headers": rate}
    else:
        schema = RESPONSE_SCHEMAS.get(op.operation_id) or (_ref(op.response) if op.response else {"type": "object"})
        responses[str(op.status)] = {
            "description": SUCCESS.get(op.status, "Success"),
            "headers": rate,
            "content": {"application/json": {"schema": schema}},
        }
    for status in error_statuses(op):
        responses[str(status)] = _fault(_error_description(op, status), rate if status == 429 else None)
    responses["default"] = DEFAULT_ERROR
    doc["responses"] = responses
    return doc


def _query(name: str, schema: dict[str, Any], description: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "description": description, "schema": schema}


def oauth_paths(api_prefix: str, auth_prefix: str) -> dict[str, Any]:
    """§4.4: the authorization pages and the token/deauthorization endpoints, served under the auth prefix."""
    servers = [{"url": auth_prefix, "description": "The authorization address ({auth_url}/oauth)."}]
    authorize_params = [
        _query("client_id", {"type": "integer", "format": "int64", "minimum": 1}, "Application id.", True),
        _query(
            "redirect_uri",
            {"type": "string", "maxLength": 2048},
            "Inside the application's callback domain; localhost and 127.0.0.1 are accepted.",
            True,
        ),
        _query("response_type", {"type": "string", "enum": ["code"]}, "Must be `code`.", True),
        _query(
            "approval_prompt",
            {"type": "string", "enum": ["auto", "force"], "default": "auto"},
            "`force` always shows the consent page; `auto` skips it when the scopes were granted before.",
        ),
        _query("scope", {"type": "string"}, "Comma- or space-separated scope names.", True),
        _query("state", {"type": "string", "maxLength": 2048}, "Returned unchanged in the redirect."),
    ]

    def authorize(operation_id: str, summary: str) -> dict[str, Any]:
        return {
            "get": {
                "operationId": operation_id,
                "summary": summary,
                "tags": ["OAuth"],
                "security": [],
                "parameters": authorize_params,
                "responses": {
                    "200": {
                        "description": "The sign-in page (sandbox athlete picker) or the consent page; its forms "
                        "post back to this server and end in the redirect.",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    "302": {
                        "description": "Back to redirect_uri with `code` and `scope` (plus `state`), when the athlete "
                        "had granted these scopes before and approval_prompt is auto; after the consent "
                        "form: the same, or `error=access_denied`.",
                        "headers": {"Location": {"required": True, "schema": {"type": "string"}}},
                    },
                    "400": _fault(
                        "Bad Request: invalid client_id, redirect_uri, response_type, approval_prompt, scope "
                        "or state; nothing is shown to the athlete."
                    ),
                    "default": DEFAULT_ERROR,
                },
            }
        }

    token_query = [
        _query("client_id", {"type": "integer", "format": "int64"}, "Application id (or in the body)."),
        _query("client_secret", {"type": "string"}, "Application secret (or in the body)."),
        _query("grant_type", {"type": "string", "enum": ["authorization_code", "refresh_token"]}, "(or in the body)"),
        _query("code", {"type": "string"}, "For grant_type authorization_code (or in the body)."),
        _query("redirect_uri", {"type": "string"}, "Optional with authorization_code; must match (or in the body)."),
        _query("refresh_token", {"type": "string"}, "For grant_type refresh_token (or in the body)."),
    ]
    token_body = {"schema": _ref("TokenRequest")}
    token = {
        "post": {
            "operationId": "getToken",
            "summary": "Exchange an authorization code (§5.4) or refresh tokens (§5.5).",
            "tags": ["OAuth"],
            "security": [],
            "parameters": token_query,
            "requestBody": {
                "description": "The parameters as form fields or a JSON object (or all in the query).",
                "required": False,
                "content": {
                    "application/x-www-form-urlencoded": token_body,
                    "multipart/form-data": token_body,
                    "application/json": token_body,
                },
            },
            "responses": {
                "200": {
                    "description": "OK",
                    "headers": {
                        "Cache-Control": {"required": True, "schema": {"type": "string", "enum": ["no-store"]}}
                    },
                    "content": {"application/json": {"schema": _ref("TokenResponse")}},
                },
                "400": _fault(
                    "Bad Request: a missing or malformed parameter, an unknown grant_type, an invalid, spent or "
                    "expired code (`AuthorizationCode.code`), a redirect_uri that does not match, or a refresh "
                    "token that is not the current one (`RefreshToken.refresh_token`)."
                ),
                "401": _fault("Authorization Error: unknown client_id or wrong client_secret."),
                "default": DEFAULT_ERROR,
            },
        }
    }

    def deauthorize(operation_id: str, summary: str) -> dict[str, Any]:
        return {
            "post": {
                "operationId": operation_id,
                "summary": summary,
                "tags": ["OAuth"],
                "security": [{"oauth": []}, {"accessTokenQuery": []}],
                "responses": {
                    "200": {
                        "description": "OK: every access and refresh token of the athlete for the application is "
                        "invalid; subscribers get an athlete `authorized: false` event.",
                        "content": {"application/json": {"schema": _ref("DeauthorizeResponse")}},
                    },
                    "401": _fault("Authorization Error: missing, invalid, expired or revoked access token."),
                    "default": DEFAULT_ERROR,
                },
            }
        }

    paths = {
        "/authorize": authorize("authorize", "Web authorization page (§5.3)."),
        "/mobile/authorize": authorize("authorizeMobile", "Mobile authorization page (§5.3)."),
        "/token": token,
        "/deauthorize": deauthorize("deauthorize", "Revoke the application's access for the athlete (§5.7)."),
        "/revoke": deauthorize("revoke", "The newer address of deauthorize (same behaviour)."),
    }
    for path, item in paths.items():
        item["servers"] = servers
        if path == "/token":  # also reachable under the API prefix (§4.4)
            item["servers"] = servers + [{"url": f"{api_prefix}/oauth", "description": "{base_url}/api/v3/oauth"}]
    return paths


def document(operations: tuple[Operation, ...], api_prefix: str, auth_prefix: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = operation_doc(op)
    paths.update(oauth_paths(api_prefix, auth_prefix))
    tags = list(dict.fromkeys(tag for op in operations for tag in op.tags)) + ["OAuth"]
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Fitness Activity Service (fitsync sandbox)",
            "version": "3.0.0",
            "description": "Strava-v3-compatible API served by the fitsync sandbox. Resource operations take the "
            "access token as `Authorization: Bearer` or as an `access_token` query parameter; every "
            "answer of theirs that was charged to the application's rate budget carries the "
            "X-RateLimit-* and X-ReadRateLimit-* headers. Every non-success answer is a Fault. "
            "The OAuth paths live under the authorization address (per-path `servers`).",
        },
        "servers": [{"url": api_prefix}],
        "tags": [{"name": tag} for tag in tags],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "oauth": {
                    "type": "oauth2",
                    "description": "Access token as `Authorization: Bearer <token>`.",
                    "flows": {
                        "authorizationCode": {
                            "authorizationUrl": f"{auth_prefix}/authorize",
                            "tokenUrl": f"{auth_prefix}/token",
                            "refreshUrl": f"{auth_prefix}/token",
                            "scopes": dict(SCOPES),
                        }
                    },
                },
                "accessTokenQuery": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "access_token",
                    "description": "The access token as a query parameter (older clients).",
                },
            },
            "headers": {
                name: {"description": text, "required": True, "schema": {"type": "string", "pattern": r"^\d+,\d+$"}}
                for name, text in RATE_HEADERS.items()
            },
            "schemas": components(),
        },
    }
