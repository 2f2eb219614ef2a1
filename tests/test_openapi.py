"""The OpenAPI 3 description at /api/v3/openapi.json is true to what the server does (issue 2, item 9).

The document is fetched from the running sandbox and checked as an OpenAPI 3.0 document (a jsonschema of the
3.0 structure plus hand checks: references, path templates, security, 3.0-flavoured schemas). Then it is used
the way a generic tool would use it: requests are built from the document alone (servers, path templates,
parameter locations and styles, request-body media types), every operation of the table is called with all
its parameters, with only the required ones and only the documented scopes, every parameter with a bad value
and a value on each documented bound, and every answer is validated with jsonschema against the documented
schema of its status (OpenAPI `nullable` converted to JSON Schema), undocumented properties included.

| § | row | what the row says (short) | test |
|---|---|---|---|
| 2.2 | – | athlete summary and detailed forms, by scope | test_every_operation_answers_as_documented, test_reduced_scopes_still_match_the_document |
| 2.3 | – | gear summary | test_every_operation_answers_as_documented |
| 2.4 | – | activity stats | test_every_operation_answers_as_documented |
| 2.5 | – | zones with distribution buckets | test_every_operation_answers_as_documented |
| 2.6–2.8 | – | segment summary/detailed, explorer segment, map | test_every_operation_answers_as_documented, test_reduced_scopes_still_match_the_document |
| 2.9 | – | segment effort | test_every_operation_answers_as_documented |
| 2.10 | – | activity, splits, laps; laps and zones operations | test_every_operation_answers_as_documented, test_reduced_scopes_still_match_the_document |
| 2.11 | – | push subscription | test_every_operation_answers_as_documented |
| 4.1 | 1–2 | page, per_page defaults and bounds | test_every_declared_parameter_is_read_and_its_bounds_hold |
| 4.2 | 1–14 | operations, parameters, scopes, responses | test_operation_table_and_document_agree, test_every_operation_answers_as_documented, test_required_parameters_and_documented_scopes_suffice, test_documented_scopes_are_enforced |
| 4.3 | 1–9 | createActivity form fields | test_every_declared_parameter_is_read_and_its_bounds_hold |
| 4.4 | 1–4 | authorize pages, token, deauthorize | test_oauth_paths_answer_as_documented |
| 4.5 | 1–3 | push subscription operations | test_every_operation_answers_as_documented, test_documented_error_statuses_are_produced |
| 5.4–5.5 | – | token exchange and refresh responses | test_oauth_paths_answer_as_documented |
| 7 | 1 | every failure carries the Fault payload | test_documented_error_statuses_are_produced, test_every_operation_answers_429_as_documented, test_default_error_responses_are_faults |
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from fitsync.sandbox import browser as acting
from fitsync.sandbox.operations import OPERATIONS

from .sandbox_harness import ALL_SCOPES, REDIRECT_URI, Grant, Harness, Receiver

OPS = {op.operation_id: op for op in OPERATIONS}
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
CLIENT_CREDENTIALS = ("client_id", "client_secret")
UNKNOWN_ID = 9_000_000_000_000
RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Usage", "X-ReadRateLimit-Limit", "X-ReadRateLimit-Usage")


# --- the document, and OpenAPI 3.0 → JSON Schema ------------------------------------------------------------


@pytest.fixture(scope="module")
def doc(sb: Harness) -> dict[str, Any]:
    response = sb.http.get("/api/v3/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def to_json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema 2020-12: `nullable: true` adds null; OpenAPI-only keywords go."""
    if isinstance(node, list):
        return [to_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: to_json_schema(v) for k, v in node.items() if k not in ("nullable", "discriminator", "example", "xml")}
    if node.get("nullable") is True:
        if any(k in out for k in ("allOf", "anyOf", "oneOf", "$ref")) or "type" not in out:
            out = {"anyOf": [{"type": "null"}, out]}
        else:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
    return out


class Schemas:
    """Validators for the document's schemas, resolving `#/components/schemas/...` against the document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.components = {"schemas": to_json_schema(doc["components"]["schemas"])}

    def validator(self, openapi_schema: dict[str, Any]) -> Draft202012Validator:
        return Draft202012Validator({**to_json_schema(openapi_schema), "components": self.components})

    def errors(self, openapi_schema: dict[str, Any], value: Any) -> list[str]:
        found = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
            for e in self.validator(openapi_schema).iter_errors(value)
        ]
        if not found:
            found = [f"undocumented property {p}" for p in self.undocumented(to_json_schema(openapi_schema), value)]
        return found

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.components["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def _applicable(self, schema: dict[str, Any], value: Any) -> Iterator[dict[str, Any]]:
        """The schema and every subschema that applies to `value` (allOf always; anyOf/oneOf when valid)."""
        schema = self._resolve(schema)
        yield schema
        for sub in schema.get("allOf", []):
            yield from self._applicable(sub, value)
        for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
            if Draft202012Validator({**sub, "components": self.components}).is_valid(value):
                yield from self._applicable(sub, value)

    def undocumented(self, schema: dict[str, Any], value: Any, path: str = "$") -> list[str]:
        """Properties sent that no applicable schema declares (additionalProperties: documented maps aside)."""
        out: list[str] = []
        applicable = list(self._applicable(schema, value))
        if isinstance(value, dict):
            for key, item in value.items():
                subs = [s["properties"][key] for s in applicable if key in s.get("properties", {})]
                subs += [
                    s["additionalProperties"] for s in applicable if isinstance(s.get("additionalProperties"), dict)
                ]
                if not subs:
                    out.append(f"{path}.{key}")
                for sub in subs:
                    out += self.undocumented(sub, item, f"{path}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                for sub in [s["items"] for s in applicable if "items" in s]:
                    out += self.undocumented(sub, item, f"{path}[{i}]")
        return sorted(set(out))


@pytest.fixture(scope="module")
def schemas(doc: dict[str, Any]) -> Schemas:
    return Schemas(doc)


def documented_response(doc: dict[str, Any], path: str, method: str, status: int) -> dict[str, Any]:
    responses = doc["paths"][path][method]["responses"]
    assert str(status) in responses or "default" in responses, (
        f"{method.upper()} {path} answered {status}: undocumented"
    )
    return responses.get(str(status)) or responses["default"]


def assert_documented(
    doc: dict[str, Any], schemas: Schemas, path: str, method: str, response: httpx.Response, status: int | None = None
) -> Any:
    """The answer has a documented status, its documented headers and media type, and a body of its schema."""
    if status is not None:
        assert response.status_code == status, f"{method.upper()} {path}: {response.status_code} {response.text[:300]}"
    documented = documented_response(doc, path, method, response.status_code)
    for name, header in documented.get("headers", {}).items():
        if "$ref" in header:
            header = doc["components"]["headers"][header["$ref"].rsplit("/", 1)[1]]
        if header.get("required") or name in RATE_HEADERS:
            assert name in response.headers, f"{method.upper()} {path} {response.status_code}: no {name} header"
            assert schemas.validator(header["schema"]).is_valid(response.headers[name]), (name, response.headers[name])
    content = documented.get("content")
    if not content:
        assert response.content == b"", f"{method.upper()} {path} {response.status_code} has an undocumented body"
        return None
    media = response.headers["content-type"].split(";")[0].strip()
    assert media in content, f"{method.upper()} {path} {response.status_code}: {media} not among {list(content)}"
    if media != "application/json":
        return response.text
    body = response.json()
    errors = schemas.errors(content[media]["schema"], body)
    assert not errors, f"{method.upper()} {path} {response.status_code} does not match its schema: {errors[:8]}"
    return body


# --- requests built from the document alone ----------------------------------------------------------------


def _form_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_form_value(v) for v in value)
    return str(value)


def operation_of(doc: dict[str, Any], operation_id: str) -> tuple[str, str, dict[str, Any]]:
    for path, item in doc["paths"].items():
        for method in METHODS:
            if item.get(method, {}).get("operationId") == operation_id:
                return path, method, item[method]
    raise AssertionError(f"{operation_id} is not in the document")


def declared(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every parameter of an operation by name: {"in", "required", "schema"} (request-body fields as "body")."""
    out = {
        p["name"]: {"in": p["in"], "required": p.get("required", False), "schema": p["schema"], "doc": p}
        for p in operation.get("parameters", [])
    }
    body = operation.get("requestBody")
    if body:
        schema = next(iter(body["content"].values()))["schema"]
        for name, prop in schema.get("properties", {}).items():
            out[name] = {"in": "body", "required": name in schema.get("required", []), "schema": prop}
    return out


def call(
    sb: Harness,
    doc: dict[str, Any],
    operation_id: str,
    values: dict[str, Any],
    grant: Grant | None = None,
    *,
    media: str | None = None,
    token_in_query: bool = False,
) -> httpx.Response:
    """Send `values` where the document says each parameter goes; the token as its security schemes say."""
    path, method, operation = operation_of(doc, operation_id)
    params = declared(operation)
    unknown = set(values) - set(params)
    assert not unknown, f"{operation_id}: {unknown} are not declared"
    url_path, query, body = path, {}, {}
    for name, value in values.items():
        where = params[name]["in"]
        if where == "path":
            url_path = url_path.replace("{" + name + "}", _form_value(value))
        elif where == "query":
            query[name] = _form_value(value)  # explode=false arrays are comma-separated; the only array is bounds
        else:
            body[name] = value
    headers: dict[str, str] = {}
    if grant is not None:
        if token_in_query:
            query["access_token"] = grant.access_token
        else:
            headers["Authorization"] = f"Bearer {grant.access_token}"
    kwargs: dict[str, Any] = {"params": query, "headers": headers}
    if body or (operation.get("requestBody", {}).get("required")):
        media = media or next(iter(operation["requestBody"]["content"]))
        if media == "application/json":
            kwargs["json"] = body
        elif media == "multipart/form-data":
            kwargs["files"] = {k: (None, _form_value(v)) for k, v in body.items()}
        else:
            kwargs["data"] = {k: _form_value(v) for k, v in body.items()}
    return sb.http.request(method.upper(), doc["servers"][0]["url"] + url_path, **kwargs)


# --- the world the calls use -----------------------------------------------------------------------------------


@dataclass
class World:
    athlete: int  # premium, created for this module: what the tests change is theirs alone
    activity: int  # with segment efforts, laps and zones
    effort: int
    segment: int  # public, with an effort of `athlete`
    gear: str
    other_athlete: int  # not premium
    other_activity: int
    other_effort: int
    private_segment_of_another: int
    receiver: Receiver


def _record_until(sb: Harness, athlete_id: int, grant: Grant, want: Any, attempts: int = 12) -> dict[str, Any]:
    for _ in range(attempts):
        activity_id = sb.console.post(
            f"/athletes/{athlete_id}/activities", json={"sport_type": "Ride", "distance": 40_000}
        ).json()["id"]
        detail = sb.get(grant, f"/activities/{activity_id}").json()
        if want(detail):
            return detail
    raise AssertionError("no recorded ride had what the tests need")


@pytest.fixture(scope="module")
def world(sb: Harness) -> Iterator[World]:
    mine = sb.console.post("/athletes", json={"premium": True}).json()["id"]
    other = sb.console.post("/athletes", json={"premium": False}).json()["id"]
    grant, other_grant = sb.connect(athlete_id=mine), sb.connect(athlete_id=other)

    def rich(a: dict[str, Any]) -> bool:
        # zones need heart rate or a power meter: the sandbox leaves heart rate off 4 % of recordings, and a new
        # athlete who is not a cyclist (3 in 10) has no power meter
        sensed = bool(a["has_heartrate"] or a["device_watts"])
        return bool(a["laps"]) and sensed and any(not e["segment"]["private"] for e in a["segment_efforts"])

    activity = _record_until(sb, mine, grant, rich)
    assert sb.get(grant, f"/activities/{activity['id']}/zones").json(), "a device ride has zones"
    effort = next(e for e in activity["segment_efforts"] if not e["segment"]["private"])
    starred = sb.api(grant, "PUT", f"/segments/{effort['segment']['id']}/starred", data={"starred": "true"})
    assert starred.status_code == 200, "the starred listing must not be empty"
    other_activity = _record_until(sb, other, other_grant, lambda a: bool(a["segment_efforts"]))
    bikes = sb.get(grant, "/athlete").json()["bikes"]
    conn = sqlite3.connect(f"file:{sb.server.options.db}?mode=ro", uri=True)
    try:
        private = conn.execute(
            "SELECT id FROM segments WHERE private = 1 AND owner_id NOT IN (?, ?) LIMIT 1", (mine, other)
        ).fetchone()
    finally:
        conn.close()
    assert private is not None, "the seeded world has a private segment"
    with Receiver() as receiver:
        yield World(
            mine,
            activity["id"],
            effort["id"],
            effort["segment"]["id"],
            bikes[0]["id"] if bikes else "none",
            other,
            other_activity["id"],
            other_activity["segment_efforts"][0]["id"],
            private[0],
            receiver,
        )


def full_values(world: World, operation_id: str, grant: Grant) -> dict[str, Any]:
    """A valid value for every declared parameter of the operation."""
    creds = grant.app.creds()
    now = int(time.time())
    values: dict[str, dict[str, Any]] = {
        "getStats": {"id": world.athlete},
        "getLoggedInAthlete": {},
        "updateLoggedInAthlete": {"weight": 71.5},
        "getLoggedInAthleteZones": {},
        "getLoggedInAthleteStarredSegments": {"page": 1, "per_page": 5},
        "exploreSegments": {"bounds": [-90, -180, 90, 180], "activity_type": "riding", "min_cat": 0, "max_cat": 5},
        "getSegmentById": {"id": world.segment},
        "starSegment": {"id": world.segment, "starred": True},
        "getEffortsBySegmentId": {
            "segment_id": world.segment,
            "start_date_local": "2000-01-01T00:00:00Z",
            "end_date_local": "2100-01-01T00:00:00Z",
            "page": 1,
            "per_page": 30,
        },
        "getSegmentEffortById": {"id": world.effort},
        "createActivity": {
            "name": "OpenAPI check",
            "type": "Ride",
            "sport_type": "Ride",
            "start_date_local": "2024-05-01T07:30:00Z",
            "elapsed_time": 3600,
            "description": "made by test_openapi",
            "distance": 25_000.5,
            "trainer": 0,
            "commute": 1,
        },
        "getActivityById": {"id": world.activity, "include_all_efforts": True},
        "updateActivityById": {
            "id": world.activity,
            "name": "Renamed by test_openapi",
            "type": "Ride",
            "sport_type": "Ride",
            "description": "described",
            "trainer": False,
            "commute": False,
            "hide_from_home": False,
            "gear_id": world.gear,
        },
        "getLoggedInAthleteActivities": {"before": now + 86_400, "after": 0, "page": 1, "per_page": 10},
        "getLapsByActivityId": {"id": world.activity},
        "getZonesByActivityId": {"id": world.activity},
        "getActivityStreams": {"id": world.activity, "keys": "time,distance,heartrate,watts", "key_by_type": True},
        "getSegmentEffortStreams": {"id": world.effort, "keys": "time,distance,latlng,moving", "key_by_type": False},
        "createSubscription": {"callback_url": "", "verify_token": "", **creds},  # filled in by `prepared`
        "listSubscriptions": creds,
        "deleteSubscription": {"id": 0, **creds},  # filled in by `prepared`
    }
    return dict(values[operation_id])


def subscribe(sb: Harness, doc: dict[str, Any], world: World, grant: Grant) -> int:
    hook = world.receiver.hook()
    response = call(
        sb,
        doc,
        "createSubscription",
        {"callback_url": hook.url, "verify_token": hook.verify_token, **grant.app.creds()},
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def unsubscribe(sb: Harness, grant: Grant) -> None:
    for sub in sb.http.get("/api/v3/push_subscriptions", params=grant.app.creds()).json():
        sb.http.delete(f"/api/v3/push_subscriptions/{sub['id']}", params=grant.app.creds())


def prepared(
    sb: Harness, doc: dict[str, Any], world: World, operation_id: str, grant: Grant, values: dict[str, Any]
) -> dict[str, Any]:
    """Fill in what needs state first: a callback for createSubscription, a subscription to list or delete."""
    if operation_id == "createSubscription":
        unsubscribe(sb, grant)
        hook = world.receiver.hook()
        values.update(callback_url=hook.url, verify_token=hook.verify_token)
    if operation_id in ("deleteSubscription", "listSubscriptions"):
        unsubscribe(sb, grant)
        subscription_id = subscribe(sb, doc, world, grant)
        if "id" in values:
            values["id"] = subscription_id
    return values


@pytest.fixture
def grant(sb: Harness, world: World) -> Grant:
    """All scopes, the module's premium athlete, a fresh application (so a fresh rate budget)."""
    return sb.connect(athlete_id=world.athlete)


OPERATION_IDS = [op.operation_id for op in OPERATIONS]


# --- the document as an OpenAPI 3.0 document ------------------------------------------------------------------

_STR = {"type": "string"}
_SCHEMA_KEYWORDS = {
    "title": _STR,
    "multipleOf": {"type": "number", "exclusiveMinimum": 0},
    "maximum": {"type": "number"},
    "exclusiveMaximum": {"type": "boolean"},
    "minimum": {"type": "number"},
    "exclusiveMinimum": {"type": "boolean"},
    "maxLength": {"type": "integer", "minimum": 0},
    "minLength": {"type": "integer", "minimum": 0},
    "pattern": _STR,
    "maxItems": {"type": "integer", "minimum": 0},
    "minItems": {"type": "integer", "minimum": 0},
    "uniqueItems": {"type": "boolean"},
    "maxProperties": {"type": "integer"},
    "minProperties": {"type": "integer"},
    "required": {"type": "array", "items": _STR, "minItems": 1, "uniqueItems": True},
    "enum": {"type": "array", "minItems": 1},
    "type": {"enum": ["array", "boolean", "integer", "number", "object", "string"]},  # 3.0: one name, no "null"
    "allOf": {"type": "array", "items": {"$ref": "#/$defs/schema"}, "minItems": 1},
    "oneOf": {"type": "array", "items": {"$ref": "#/$defs/schema"}, "minItems": 1},
    "anyOf": {"type": "array", "items": {"$ref": "#/$defs/schema"}, "minItems": 1},
    "not": {"$ref": "#/$defs/schema"},
    "items": {"$ref": "#/$defs/schema"},
    "properties": {"type": "object", "additionalProperties": {"$ref": "#/$defs/schema"}},
    "additionalProperties": {"anyOf": [{"type": "boolean"}, {"$ref": "#/$defs/schema"}]},
    "description": _STR,
    "format": _STR,
    "default": {},
    "nullable": {"type": "boolean"},
    "discriminator": {
        "type": "object",
        "required": ["propertyName"],
        "properties": {"propertyName": _STR, "mapping": {"type": "object", "additionalProperties": _STR}},
        "additionalProperties": False,
    },
    "readOnly": {"type": "boolean"},
    "writeOnly": {"type": "boolean"},
    "example": {},
    "deprecated": {"type": "boolean"},
}
_SERVER = {
    "type": "object",
    "required": ["url"],
    "properties": {"url": _STR, "description": _STR},
    "additionalProperties": False,
}
OPENAPI_3_0 = {
    "$defs": {
        "ref": {"type": "object", "required": ["$ref"], "properties": {"$ref": _STR}, "additionalProperties": False},
        "schema": {
            "oneOf": [
                {"$ref": "#/$defs/ref"},
                {
                    "type": "object",
                    "properties": _SCHEMA_KEYWORDS,
                    "additionalProperties": False,
                    "not": {"required": ["$ref"]},  # 3.0 ignores whatever stands beside a $ref
                    # 3.0: an array schema must say what its items are
                    "if": {"properties": {"type": {"const": "array"}}, "required": ["type"]},
                    "then": {"required": ["items"]},
                },
            ]
        },
        "media": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"schema": {"$ref": "#/$defs/schema"}},
                "additionalProperties": False,
            },
        },
        "parameter": {
            "type": "object",
            "required": ["name", "in", "schema"],
            "additionalProperties": False,
            "properties": {
                "name": _STR,
                "in": {"enum": ["query", "header", "path", "cookie"]},
                "description": _STR,
                "required": {"type": "boolean"},
                "deprecated": {"type": "boolean"},
                "style": {
                    "enum": ["matrix", "label", "form", "simple", "spaceDelimited", "pipeDelimited", "deepObject"]
                },
                "explode": {"type": "boolean"},
                "schema": {"$ref": "#/$defs/schema"},
            },
            "if": {"properties": {"in": {"const": "path"}}},
            "then": {"required": ["required"], "properties": {"required": {"const": True}}},
        },
        "header": {
            "oneOf": [
                {"$ref": "#/$defs/ref"},
                {
                    "type": "object",
                    "required": ["schema"],
                    "additionalProperties": False,
                    "properties": {
                        "description": _STR,
                        "required": {"type": "boolean"},
                        "schema": {"$ref": "#/$defs/schema"},
                    },
                },
            ]
        },
        "response": {
            "type": "object",
            "required": ["description"],
            "additionalProperties": False,
            "properties": {
                "description": _STR,
                "content": {"$ref": "#/$defs/media"},
                "headers": {"type": "object", "additionalProperties": {"$ref": "#/$defs/header"}},
            },
        },
        "operation": {
            "type": "object",
            "required": ["responses", "operationId"],
            "additionalProperties": False,
            "properties": {
                "tags": {"type": "array", "items": _STR},
                "summary": _STR,
                "description": _STR,
                "operationId": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9]*$"},
                "parameters": {"type": "array", "items": {"$ref": "#/$defs/parameter"}},
                "requestBody": {
                    "type": "object",
                    "required": ["content"],
                    "additionalProperties": False,
                    "properties": {
                        "description": _STR,
                        "required": {"type": "boolean"},
                        "content": {"$ref": "#/$defs/media"},
                    },
                },
                "responses": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"$ref": "#/$defs/response"},
                    "propertyNames": {"pattern": "^([1-5]([0-9][0-9]|XX)|default)$"},
                },
                "security": {
                    "type": "array",
                    "items": {"type": "object", "additionalProperties": {"type": "array", "items": _STR}},
                },
                "servers": {"type": "array", "items": _SERVER},
                "deprecated": {"type": "boolean"},
            },
        },
        "pathItem": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": False,
            "properties": {
                "summary": _STR,
                "description": _STR,
                "servers": {"type": "array", "items": _SERVER},
                **{m: {"$ref": "#/$defs/operation"} for m in METHODS},
            },
        },
        "securityScheme": {
            "type": "object",
            "required": ["type"],
            "oneOf": [
                {
                    "properties": {"type": {"const": "apiKey"}, "in": {"enum": ["query", "header", "cookie"]}},
                    "required": ["name", "in"],
                },
                {"properties": {"type": {"const": "http"}}, "required": ["scheme"]},
                {
                    "properties": {
                        "type": {"const": "oauth2"},
                        "flows": {
                            "type": "object",
                            "properties": {
                                "authorizationCode": {
                                    "type": "object",
                                    "required": ["authorizationUrl", "tokenUrl", "scopes"],
                                }
                            },
                        },
                    },
                    "required": ["flows"],
                },
                {"properties": {"type": {"const": "openIdConnect"}}, "required": ["openIdConnectUrl"]},
            ],
        },
    },
    "type": "object",
    "required": ["openapi", "info", "paths"],
    "additionalProperties": False,
    "properties": {
        "openapi": {"type": "string", "pattern": r"^3\.0\.\d+$"},
        "info": {
            "type": "object",
            "required": ["title", "version"],
            "properties": {"title": _STR, "version": _STR, "description": _STR},
        },
        "servers": {"type": "array", "minItems": 1, "items": _SERVER},
        "tags": {"type": "array", "items": {"type": "object", "required": ["name"]}},
        "paths": {
            "type": "object",
            "propertyNames": {"pattern": "^/"},
            "additionalProperties": {"$ref": "#/$defs/pathItem"},
        },
        "components": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "schemas": {"type": "object", "additionalProperties": {"$ref": "#/$defs/schema"}},
                "headers": {"type": "object", "additionalProperties": {"$ref": "#/$defs/header"}},
                "securitySchemes": {"type": "object", "additionalProperties": {"$ref": "#/$defs/securityScheme"}},
            },
        },
    },
}


def _walk(node: Any, path: str = "#") -> Iterator[tuple[str, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}/{i}")


def _pointer(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), f"{ref}: only local references are expected"
    node: Any = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def test_document_is_structurally_valid_openapi_3_0(doc: dict[str, Any]) -> None:
    errors = sorted(Draft202012Validator(OPENAPI_3_0).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:10]]


OPTIONAL_PROPERTIES = {
    ("TokenResponse", "scope"),
    ("TokenResponse", "athlete"),
    ("AuthorizationCodeGrant", "redirect_uri"),
    ("PolylineMap", "polyline"),
    ("PolylineMap", "summary_polyline"),
    # heart rate on splits and laps (a sensor's), grade-adjusted speed (runs, `real` flavour)
    ("Lap", "average_heartrate"),
    ("Lap", "max_heartrate"),
    ("Split", "average_heartrate"),
    ("Split", "average_grade_adjusted_speed"),
}


def test_every_reference_resolves_and_every_schema_is_valid(doc: dict[str, Any], schemas: Schemas) -> None:
    refs = [(where, node["$ref"]) for where, node in _walk(doc) if isinstance(node, dict) and "$ref" in node]
    assert refs, "the document uses references"
    for where, ref in refs:
        target = _pointer(doc, ref)
        assert isinstance(target, dict), f"{where}: {ref} is not an object"
    for name, mapping_ref in doc["components"]["schemas"]["TokenRequest"]["discriminator"]["mapping"].items():
        target = _pointer(doc, mapping_ref)
        assert name in target["properties"]["grant_type"]["enum"] and "grant_type" in target["required"]
    used = {ref.rsplit("/", 1)[1] for _, ref in refs if ref.startswith("#/components/schemas/")}
    assert set(doc["components"]["schemas"]) == used, f"unused schemas: {set(doc['components']['schemas']) - used}"
    for name, schema in doc["components"]["schemas"].items():
        Draft202012Validator.check_schema(to_json_schema(schema))  # a valid JSON Schema once converted
        for prop in schema.get("properties", {}):  # the server always sends a field, or the schema says when
            assert prop in schema.get("required", []) or (name, prop) in OPTIONAL_PROPERTIES, f"{name}.{prop}"
    # every parameter default and enum value satisfies its own schema
    for _, node in _walk(doc["paths"]):
        if isinstance(node, dict) and "schema" in node and "in" in node:
            validator = schemas.validator(node["schema"])
            values = [node["schema"]["default"]] if "default" in node["schema"] else []
            for value in values + node["schema"].get("enum", []):
                assert validator.is_valid(value), (node["name"], value)


def test_path_templates_and_path_parameters_agree(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        in_template = set(re.findall(r"\{([^}]+)\}", path))
        for method in METHODS:
            if method not in item:
                continue
            operation = item[method]
            names = [(p["name"], p["in"]) for p in operation.get("parameters", [])]
            assert len(names) == len(set(names)), f"{method} {path}: a parameter is declared twice"
            path_params = {n for n, where in names if where == "path"}
            assert path_params == in_template, (
                f"{method.upper()} {path}: path parameters {path_params} vs {in_template}"
            )
            assert any(s.startswith("2") for s in operation["responses"]), f"{method.upper()} {path}: no success"


def test_operation_ids_are_unique_and_security_is_declared(doc: dict[str, Any]) -> None:
    ids = [item[m]["operationId"] for item in doc["paths"].values() for m in METHODS if m in item]
    assert len(ids) == len(set(ids))
    schemes = doc["components"]["securitySchemes"]
    oauth_scopes = set(schemes["oauth"]["flows"]["authorizationCode"]["scopes"])
    assert oauth_scopes == set(ALL_SCOPES)
    for item in doc["paths"].values():
        for method in METHODS:
            for requirement in item.get(method, {}).get("security", []):
                for name, scopes in requirement.items():
                    assert name in schemes
                    if schemes[name]["type"] == "oauth2":
                        assert set(scopes) <= oauth_scopes
                    else:
                        assert scopes == [], "OpenAPI 3.0: scopes only for oauth2 schemes"


def test_operation_table_and_document_agree(doc: dict[str, Any]) -> None:
    api_operations = {
        (path, method)
        for path, item in doc["paths"].items()
        if "servers" not in item
        for method in METHODS
        if method in item
    }
    assert api_operations == {(op.path, op.method.lower()) for op in OPERATIONS}
    for op in OPERATIONS:
        path, method, operation = operation_of(doc, op.operation_id)
        assert (path, method) == (op.path, op.method.lower())
        params = declared(operation)
        expected = {p.name for p in op.params} | (set(CLIENT_CREDENTIALS) if op.auth == "client" else set())
        assert set(params) == expected, op.operation_id
        for p in op.params:
            assert params[p.name]["in"] == ("body" if p.where in ("form", "body") else p.where), (
                op.operation_id,
                p.name,
            )
            assert params[p.name]["required"] == (p.required or p.where == "path"), (op.operation_id, p.name)
        success = str(op.status)
        assert success in operation["responses"], op.operation_id
        if op.auth == "token":
            assert {s for req in operation["security"] for s in req.get("oauth", [])} == set(op.scopes)
        else:
            assert operation["security"] == []
        assert ("402" in operation["responses"]) == op.premium, op.operation_id
    # the OAuth paths live under the authorization address
    oauth = {path for path, item in doc["paths"].items() if "servers" in item}
    assert oauth == {"/authorize", "/mobile/authorize", "/token", "/deauthorize", "/revoke"}


# --- every operation, called the way the document says -----------------------------------------------------------


@pytest.mark.parametrize("operation_id", OPERATION_IDS)
def test_every_operation_answers_as_documented(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World, grant: Grant, operation_id: str
) -> None:
    """All declared parameters with valid values, in every documented request media type → the documented answer."""
    op = OPS[operation_id]
    path, method, operation = operation_of(doc, operation_id)
    media_types = list(operation.get("requestBody", {}).get("content", {})) or [None]
    assert set(full_values(world, operation_id, grant)) == set(declared(operation)), "a value for every parameter"
    try:
        for media in media_types:
            values = prepared(sb, doc, world, operation_id, grant, full_values(world, operation_id, grant))
            response = call(sb, doc, operation_id, values, None if op.auth == "client" else grant, media=media)
            body = assert_documented(doc, schemas, path, method, response, op.status)
            if operation_id in (
                "getLoggedInAthleteActivities",
                "getLoggedInAthleteStarredSegments",
                "getEffortsBySegmentId",
                "getLapsByActivityId",
                "getZonesByActivityId",
                "getActivityStreams",
                "getSegmentEffortStreams",
                "listSubscriptions",
                "exploreSegments",
                "getLoggedInAthleteZones",
            ):
                assert body, f"{operation_id}: an empty answer would validate vacuously"
    finally:
        if op.auth == "client":
            unsubscribe(sb, grant)


@pytest.mark.parametrize("operation_id", OPERATION_IDS)
def test_required_parameters_and_documented_scopes_suffice(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World, operation_id: str
) -> None:
    """Only the declared required parameters, a grant of only the documented scopes → success: nothing is hidden."""
    op = OPS[operation_id]
    path, method, operation = operation_of(doc, operation_id)
    scopes = tuple(s for req in operation["security"] for s in req.get("oauth", []))
    grant = sb.connect(scopes=scopes or ("read",), athlete_id=world.athlete)
    assert grant.scope.split() == [s for s in ALL_SCOPES if s in (scopes or ("read",))]
    required = {name for name, p in declared(operation).items() if p["required"]}
    values = {k: v for k, v in full_values(world, operation_id, grant).items() if k in required}
    try:
        values = prepared(sb, doc, world, operation_id, grant, values)
        response = call(sb, doc, operation_id, values, None if op.auth == "client" else grant)
        assert_documented(doc, schemas, path, method, response, op.status)
    finally:
        if op.auth == "client":
            unsubscribe(sb, grant)


def _bad_value(schema: dict[str, Any]) -> Any:
    if schema.get("type") in ("integer", "number"):
        return "abc"
    if schema.get("type") == "boolean":
        return "maybe"
    if schema.get("type") == "array":
        return [1, 2, 3]
    if schema.get("format") == "date-time":
        return "yesterday"
    if "enum" in schema:
        return "not-one-of-them"
    return "x" * (schema["maxLength"] + 1)


FREE_TEXT = ("name", "description")  # strings with no rule but their length


def _step(schema: dict[str, Any]) -> float:
    return 1 if schema.get("type") == "integer" else 0.01


@pytest.mark.parametrize("operation_id", OPERATION_IDS)
def test_every_declared_parameter_is_read_and_its_bounds_hold(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World, grant: Grant, operation_id: str
) -> None:
    """A bad value, a missing required value, a value past a documented bound → 400 naming that parameter (so the
    server reads every parameter the document declares); a value on the bound is not refused."""
    op = OPS[operation_id]
    path, method, operation = operation_of(doc, operation_id)
    params = declared(operation)

    def refused(name: str, values: dict[str, Any], code: str | None = None) -> bool:
        response = call(sb, doc, operation_id, values, None if op.auth == "client" else grant)
        if response.status_code != 400:
            return False
        body = assert_documented(doc, schemas, path, method, response, 400)
        return body["errors"][0]["field"] == name and (code is None or body["errors"][0]["code"] == code)

    full = prepared(sb, doc, world, operation_id, grant, full_values(world, operation_id, grant))
    try:
        check_parameters(sb, doc, op.operation_id, params, full, refused)
    finally:
        if op.auth == "client":
            unsubscribe(sb, grant)


def check_parameters(
    sb: Harness,
    doc: dict[str, Any],
    operation_id: str,
    params: dict[str, dict[str, Any]],
    full: dict[str, Any],
    refused: Any,
) -> None:
    before = sb.snapshot(("athletes", "activities", "stars", "subscriptions"))
    for name, p in params.items():
        schema = p["schema"]
        if name == "client_secret":
            continue  # a wrong secret is a 401, checked in test_documented_error_statuses_are_produced
        assert refused(name, {**full, name: _bad_value(schema)}), f"{operation_id}: a bad {name} is not refused"
        if p["required"] and p["in"] != "path":
            assert refused(name, {k: v for k, v in full.items() if k != name}, "missing"), (
                f"{operation_id}: {name} is declared required but may be left out"
            )
        if "minimum" in schema:
            assert refused(name, {**full, name: schema["minimum"] - _step(schema)}), f"{operation_id}: {name} minimum"
        if "maximum" in schema:
            assert refused(name, {**full, name: schema["maximum"] + _step(schema)}), f"{operation_id}: {name} maximum"
    assert sb.snapshot(("athletes", "activities", "stars", "subscriptions")) == before, (
        "a refused request changed state"
    )
    # values on the documented bounds are accepted (they may fail later for other reasons, never on that field)
    for name, p in params.items():
        for bound in ("minimum", "maximum"):
            if bound in p["schema"] and name != "id":
                assert not refused(name, {**full, name: p["schema"][bound]}), f"{operation_id}: {name}={bound} refused"
        if name in FREE_TEXT:
            text = "x" * p["schema"]["maxLength"]
            assert not refused(name, {**full, name: text}), f"{operation_id}: {name} of maxLength refused"


def test_reduced_scopes_still_match_the_document(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World
) -> None:
    """The summary athlete (no profile:read_all), privacy-zone cuts (no activity:read_all) and segments without
    read_all are forms the document describes too."""
    grant = sb.connect(scopes=("read", "activity:read"), athlete_id=world.athlete)
    athlete = assert_documented(doc, schemas, "/athlete", "get", sb.get(grant, "/athlete"), 200)
    assert athlete["resource_state"] == 2 and "weight" not in athlete
    activities = assert_documented(
        doc, schemas, "/athlete/activities", "get", sb.get(grant, "/athlete/activities", params={"per_page": 200}), 200
    )
    assert any(a["start_latlng"] == [] for a in activities), "rides start at home: inside the privacy zone"
    assert_documented(doc, schemas, "/activities/{id}", "get", sb.get(grant, f"/activities/{world.activity}"), 200)
    segment = assert_documented(doc, schemas, "/segments/{id}", "get", sb.get(grant, f"/segments/{world.segment}"), 200)
    assert segment["athlete_segment_stats"] is None
    full = sb.connect(athlete_id=world.athlete)
    detailed = assert_documented(doc, schemas, "/athlete", "get", sb.get(full, "/athlete"), 200)
    assert detailed["resource_state"] == 3 and "weight" in detailed
    # the console-recorded and API-created activities (manual, many nulls) are described too
    created = call(
        sb,
        doc,
        "createActivity",
        {"name": "Bare", "sport_type": "Yoga", "start_date_local": "2024-01-02T08:00:00Z", "elapsed_time": 1800},
        full,
    )
    manual = assert_documented(doc, schemas, "/activities", "post", created, 201)
    assert manual["manual"] is True and manual["external_id"] is None and manual["map"]["polyline"] is None


def test_schema_validation_is_not_vacuous(sb: Harness, schemas: Schemas, world: World, grant: Grant) -> None:
    """The converted schemas do reject what the server must not send."""
    activity = sb.get(grant, f"/activities/{world.activity}").json()
    schema = {"$ref": "#/components/schemas/DetailedActivity"}
    assert schemas.errors(schema, activity) == []
    assert schemas.errors(schema, {k: v for k, v in activity.items() if k != "calories"})  # required
    assert schemas.errors(schema, {**activity, "distance": None})  # not nullable
    assert schemas.errors(schema, {**activity, "resource_state": 2})  # the detailed form is 3
    assert schemas.errors(schema, {**activity, "laps": [{"id": 1}]})  # nested schemas apply
    assert schemas.errors(schema, {**activity, "surprise": 1}) == ["undocumented property $.surprise"]
    assert schemas.errors(schema, {**activity, "gear": None, "description": None}) == []  # nullable ones
    assert schemas.errors({"$ref": "#/components/schemas/Fault"}, {"message": "x", "errors": [{"resource": "A"}]})


# --- errors ---------------------------------------------------------------------------------------------------------

ID_KINDS = {
    "getStats": ("id", "athlete"),
    "getSegmentById": ("id", "segment"),
    "starSegment": ("id", "segment"),
    "getEffortsBySegmentId": ("segment_id", "segment"),
    "getSegmentEffortById": ("id", "effort"),
    "getActivityById": ("id", "activity"),
    "updateActivityById": ("id", "activity"),
    "getLapsByActivityId": ("id", "activity"),
    "getZonesByActivityId": ("id", "activity"),
    "getActivityStreams": ("id", "activity"),
    "getSegmentEffortStreams": ("id", "effort"),
    "deleteSubscription": ("id", "subscription"),
}


@pytest.mark.parametrize("operation_id", OPERATION_IDS)
def test_documented_error_statuses_are_produced(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World, grant: Grant, operation_id: str
) -> None:
    """Each documented error status (429 aside) is produced, as a Fault; unknown and other athletes' ids get a
    documented status."""
    op = OPS[operation_id]
    path, method, operation = operation_of(doc, operation_id)
    documented = {int(s) for s in operation["responses"] if s[0] == "4"} - {429}
    params = declared(operation)
    assert (operation_id in ID_KINDS) == any(n in ("id", "segment_id") for n in params), "update ID_KINDS"
    full = prepared(sb, doc, world, operation_id, grant, full_values(world, operation_id, grant))
    token = None if op.auth == "client" else grant
    produced: dict[int, httpx.Response] = {}

    def send(values: dict[str, Any], with_grant: Grant | None = token) -> None:
        response = call(sb, doc, operation_id, values, with_grant)
        assert_documented(doc, schemas, path, method, response)  # documented status, body of its schema
        assert response.status_code >= 400, f"{operation_id}: {values} succeeded"
        produced.setdefault(response.status_code, response)

    try:
        if op.auth == "token":
            send(full, None)  # no token at all
        else:
            send({**full, "client_secret": "wrong"})
            send({**full, "client_id": "abc"})
        if params:
            name = next(iter(params))
            send({**full, name: _bad_value(params[name]["schema"])})
        if op.premium:
            send(full, sb.connect(athlete_id=world.other_athlete))
        if operation_id in ID_KINDS:
            name, kind = ID_KINDS[operation_id]
            send({**full, name: UNKNOWN_ID})
            if kind == "subscription":
                other = sb.connect(athlete_id=world.athlete)
                theirs = subscribe(sb, doc, world, other)
                try:
                    send({**full, name: theirs})
                finally:
                    unsubscribe(sb, other)
            else:
                send(
                    {
                        **full,
                        name: {
                            "athlete": world.other_athlete,
                            "segment": world.private_segment_of_another,
                            "effort": world.other_effort,
                            "activity": world.other_activity,
                        }[kind],
                    }
                )
    finally:
        if op.auth == "client":
            unsubscribe(sb, grant)
    assert set(produced) == documented, f"{operation_id}: produced {sorted(produced)}, documented {sorted(documented)}"
    unauthorized = produced[401].json()["errors"][0]
    assert unauthorized["field"] == ("client_secret" if op.auth == "client" else "access_token")


def test_documented_scopes_are_enforced(sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World) -> None:
    """For each scope an operation documents, a grant without it (nor a scope implying it) gets 401 naming it."""
    implied_by = {"read": ("read_all", "profile:read_all"), "activity:read": ("activity:read_all",)}
    grants: dict[str, Grant] = {}
    for op in OPERATIONS:
        path, method, operation = operation_of(doc, op.operation_id)
        for scope in {s for req in operation["security"] for s in req.get("oauth", [])}:
            if scope not in grants:
                without = tuple(s for s in ALL_SCOPES if s != scope and s not in implied_by.get(scope, ()))
                grants[scope] = sb.connect(scopes=without, athlete_id=world.athlete)
            response = call(sb, doc, op.operation_id, full_values(world, op.operation_id, grants[scope]), grants[scope])
            body = assert_documented(doc, schemas, path, method, response, 401)
            assert body["errors"][0] == {"resource": "AccessToken", "field": f"{scope}_permission", "code": "missing"}


def test_every_operation_answers_429_as_documented(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World, grant: Grant
) -> None:
    for op in OPERATIONS:
        assert "429" in operation_of(doc, op.operation_id)[2]["responses"]
    with sb.settings(overall_limit_short=0):
        for op in OPERATIONS:
            path, method, _ = operation_of(doc, op.operation_id)
            values = full_values(world, op.operation_id, grant)
            if op.operation_id == "createSubscription":
                values.update(callback_url="http://127.0.0.1/never-called", verify_token="t")
            response = call(sb, doc, op.operation_id, values, None if op.auth == "client" else grant)
            body = assert_documented(doc, schemas, path, method, response, 429)  # rate headers included
            assert body["errors"][0]["field"] == "overall rate limit"


def test_default_error_responses_are_faults(sb: Harness, doc: dict[str, Any], schemas: Schemas, grant: Grant) -> None:
    """What no operation lists (405, 413) is still the documented default: a Fault."""
    assert all("default" in item[m]["responses"] for item in doc["paths"].values() for m in METHODS if m in item)
    not_allowed = sb.api(grant, "PATCH", "/athlete")
    assert not_allowed.status_code == 405
    assert_documented(doc, schemas, "/athlete", "get", not_allowed)
    too_large = sb.api(
        grant,
        "PUT",
        "/athlete",
        content=b"weight=" + b"7" * 1_100_000,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert too_large.status_code == 413
    assert_documented(doc, schemas, "/athlete", "put", too_large)


# --- the OAuth paths ------------------------------------------------------------------------------------------------


def _urls(sb: Harness, doc: dict[str, Any], path: str) -> list[str]:
    return [sb.server.base_url + server["url"] + path for server in doc["paths"][path]["servers"]]


def test_oauth_paths_answer_as_documented(sb: Harness, doc: dict[str, Any], schemas: Schemas, world: World) -> None:
    app = sb.new_app()
    token_urls = _urls(sb, doc, "/token")
    assert len(token_urls) == 2 and token_urls[1].endswith("/api/v3/oauth/token")
    creds = app.creds()

    def token(url: str, values: dict[str, Any], media: str) -> dict[str, Any]:
        if media == "query":
            response = sb.http.post(url, params=values)
        elif media == "application/json":
            response = sb.http.post(url, json=values)
        elif media == "multipart/form-data":
            response = sb.http.post(url, files={k: (None, str(v)) for k, v in values.items()})
        else:
            response = sb.http.post(url, data=values)
        return assert_documented(doc, schemas, "/token", "post", response, 200)

    media_types = list(doc["paths"]["/token"]["post"]["requestBody"]["content"]) + ["query"]
    assert {p["name"] for p in doc["paths"]["/token"]["post"]["parameters"]} == {
        "client_id",
        "client_secret",
        "grant_type",
        "code",
        "redirect_uri",
        "refresh_token",
    }
    refresh_token = ""
    for i, media in enumerate(media_types):  # only the required fields of each grant, in each way of sending them
        code = sb.code(app, world.athlete)
        exchanged = token(token_urls[i % 2], {**creds, "grant_type": "authorization_code", "code": code}, media)
        assert exchanged["athlete"]["id"] == world.athlete and exchanged["scope"]
        refreshed = token(
            token_urls[(i + 1) % 2],
            {**creds, "grant_type": "refresh_token", "refresh_token": exchanged["refresh_token"]},
            media,
        )
        assert "athlete" not in refreshed
        refresh_token = refreshed["refresh_token"]
    code = sb.code(app, world.athlete)
    with_redirect = token(
        token_urls[0],
        {**creds, "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        "application/x-www-form-urlencoded",
    )
    bad = sb.http.post(token_urls[0], data={**creds, "grant_type": "password"})
    assert_documented(doc, schemas, "/token", "post", bad, 400)
    wrong = sb.http.post(
        token_urls[0],
        data={**creds, "client_secret": "wrong", "grant_type": "refresh_token", "refresh_token": refresh_token},
    )
    assert_documented(doc, schemas, "/token", "post", wrong, 401)

    # authorization pages: a page for a fresh browser, a Fault for a bad request, a redirect once granted
    query = {"client_id": app.client_id, "redirect_uri": REDIRECT_URI, "response_type": "code", "scope": "read"}
    for path in ("/authorize", "/mobile/authorize"):
        declared_names = {p["name"] for p in doc["paths"][path]["get"]["parameters"] if p["required"]}
        assert declared_names == set(query)
        with sb.browser() as browser:
            page = browser.get(_urls(sb, doc, path)[0], params=query)
            assert "<form" in assert_documented(doc, schemas, path, "get", page, 200)
            bad_request = browser.get(_urls(sb, doc, path)[0], params={**query, "response_type": "token"})
            assert_documented(doc, schemas, path, "get", bad_request, 400)
    with sb.browser() as browser:
        acting.consent(browser, sb.authorize_url(app, "read"), world.athlete)
        again = browser.get(_urls(sb, doc, "/authorize")[0], params={**query, "approval_prompt": "auto", "state": "s1"})
        assert_documented(doc, schemas, "/authorize", "get", again, 302)
        assert again.headers["location"].startswith(REDIRECT_URI) and "state=s1" in again.headers["location"]

    # deauthorization, at both addresses, with the token as either documented security scheme
    for path, in_query in (("/deauthorize", False), ("/revoke", True)):
        access = token(
            token_urls[0],
            {**creds, "grant_type": "authorization_code", "code": sb.code(app, world.athlete)},
            "application/x-www-form-urlencoded",
        )["access_token"]
        url = _urls(sb, doc, path)[0]
        response = (
            sb.http.post(url, params={"access_token": access})
            if in_query
            else sb.http.post(url, headers={"Authorization": f"Bearer {access}"})
        )
        assert assert_documented(doc, schemas, path, "post", response, 200) == {"access_token": access}
        assert_documented(doc, schemas, path, "post", sb.http.post(url, params={"access_token": access}), 401)
    assert with_redirect["access_token"]


def test_access_token_query_scheme_is_accepted(
    sb: Harness, doc: dict[str, Any], schemas: Schemas, grant: Grant
) -> None:
    """The document offers `access_token` in the query as an alternative to the Bearer header."""
    assert doc["components"]["securitySchemes"]["accessTokenQuery"] == {
        "type": "apiKey",
        "in": "query",
        "name": "access_token",
        "description": doc["components"]["securitySchemes"]["accessTokenQuery"]["description"],
    }
    response = call(sb, doc, "getLoggedInAthlete", {}, grant, token_in_query=True)
    assert_documented(doc, schemas, "/athlete", "get", response, 200)
    assert dt.datetime.fromisoformat(response.json()["created_at"].replace("Z", "+00:00"))
