"""OpenAPI 3 description generated from the operation table, so it says what the server does."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources as pkg_resources
from typing import Any

from .api import Operation
from .faults import MESSAGES
from .params import Param

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

ERROR_STATUSES = {
    "token": (400, 401, 403, 404, 429),
    "client": (400, 401, 404, 429),
}


@cache
def components() -> dict[str, Any]:
    return json.loads(pkg_resources.files(__package__).joinpath("openapi_schemas.json").read_text())


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
    return schema


def operation_doc(op: Operation) -> dict[str, Any]:
    in_path_or_query = [p for p in op.params if p.where in ("path", "query")]
    in_body = [p for p in op.params if p.where in ("form", "body")]
    doc: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": list(op.tags),
        "parameters": [
            {"name": p.name, "in": p.where, "required": p.required or p.where == "path",
             "description": p.description, "schema": param_schema(p)}
            for p in in_path_or_query
        ],
    }
    if op.auth == "client":
        doc["security"] = []
        doc["parameters"] += [
            {"name": "client_id", "in": "query", "required": True, "schema": {"type": "integer", "format": "int64"}},
            {"name": "client_secret", "in": "query", "required": True, "schema": {"type": "string"}},
        ]
    else:
        doc["security"] = [{"oauth": list(op.scopes)}, {"accessTokenQuery": list(op.scopes)}]
    if in_body:
        body_schema = {
            "type": "object",
            "properties": {p.name: param_schema(p) for p in in_body},
            "required": [p.name for p in in_body if p.required],
        }
        content = {"application/x-www-form-urlencoded": {"schema": body_schema},
                   "multipart/form-data": {"schema": body_schema}}
        if any(p.where == "body" for p in in_body):
            content["application/json"] = {"schema": body_schema}
        doc["requestBody"] = {"required": any(p.required for p in in_body), "content": content}
    responses: dict[str, Any] = {}
    if op.status == 204:
        responses["204"] = {"description": "No Content"}
    else:
        schema = {"$ref": f"#/components/schemas/{op.response}"} if op.response else {"type": "object"}
        responses[str(op.status)] = {"description": "Success", "content": {"application/json": {"schema": schema}}}
    statuses = ERROR_STATUSES[op.auth] + ((402,) if op.premium else ())
    for status in sorted(statuses):
        responses[str(status)] = {"description": MESSAGES[status],
                                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Fault"}}}}
    doc["responses"] = responses
    return doc


def document(operations: tuple[Operation, ...], api_prefix: str, auth_prefix: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = operation_doc(op)
    return {
        "openapi": "3.0.3",
        "info": {"title": "Fitness Activity Service (fitsync sandbox)", "version": "3.0.0",
                 "description": "Strava-v3-compatible API served by the fitsync sandbox."},
        "servers": [{"url": api_prefix}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "oauth": {"type": "oauth2", "flows": {"authorizationCode": {
                    "authorizationUrl": f"{auth_prefix}/authorize", "tokenUrl": f"{auth_prefix}/token",
                    "refreshUrl": f"{auth_prefix}/token",
                    "scopes": {name: name for name in
                               ("read", "read_all", "profile:read_all", "profile:write", "activity:read",
                                "activity:read_all", "activity:write")}}}},
                "accessTokenQuery": {"type": "apiKey", "in": "query", "name": "access_token"},
            },
            "schemas": components(),
        },
    }
