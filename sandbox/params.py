"""Declared request parameters and their parsing: one table drives validation and the OpenAPI document."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .faults import bad_request

Location = Literal["path", "query", "form", "body"]
Kind = Literal["int64", "integer", "number", "boolean", "string", "datetime", "bounds", "enum"]

INT64_MAX = 2**63 - 1
MIN_YEAR, MAX_YEAR = 1900, 9000


@dataclass(frozen=True)
class Param:
    name: str
    where: Location
    kind: Kind
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    clamp_to: int | None = None  # larger values are lowered to this instead of refused
    choices: tuple[str, ...] = ()
    max_length: int = 10_000
    description: str = ""


def parse_all(
    params: tuple[Param, ...], sources: Mapping[Location, Mapping[str, Any]], resource: str
) -> dict[str, Any]:
    """Every declared parameter, converted; the first bad one is a 400 naming it."""
    values: dict[str, Any] = {}
    for p in params:
        raw = _lookup(p, sources)
        if raw is None or raw == "":
            if p.required:
                raise bad_request(resource, p.name, "missing")
            values[p.name] = p.default
            continue
        values[p.name] = convert(p, raw, resource)
    return values


def _lookup(p: Param, sources: Mapping[Location, Mapping[str, Any]]) -> Any:
    # Form and JSON bodies are interchangeable for body/form parameters; real clients send either.
    order: tuple[Location, ...] = ("form", "body", "query") if p.where in ("form", "body") else (p.where,)
    for where in order:
        source = sources.get(where) or {}
        if p.name in source:
            return source[p.name]
    return None


def convert(p: Param, raw: Any, resource: str) -> Any:
    try:
        value = _CONVERTERS[p.kind](p, raw)
    except (TypeError, ValueError, OverflowError):
        raise bad_request(resource, p.name) from None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if p.minimum is not None and value < p.minimum:
            raise bad_request(resource, p.name)
        if p.clamp_to is not None and value > p.clamp_to:
            value = p.clamp_to
        if p.maximum is not None and value > p.maximum:
            raise bad_request(resource, p.name)
    return value


def _integer(p: Param, raw: Any) -> int:
    if isinstance(raw, bool) or isinstance(raw, float):
        raise ValueError
    text = str(raw).strip()
    if not text.isascii() or not text.lstrip("-").isdigit() or len(text) > 20:
        raise ValueError
    value = int(text)
    if abs(value) > INT64_MAX:
        raise ValueError
    return value


def _number(p: Param, raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError
    value = float(str(raw).strip()) if not isinstance(raw, (int, float)) else float(raw)
    if not math.isfinite(value) or abs(value) > 1e12:
        raise ValueError
    return value


def _boolean(p: Param, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError


def _string(p: Param, raw: Any) -> str:
    if not isinstance(raw, str) or len(raw) > p.max_length or "\x00" in raw:
        raise ValueError
    return raw


def _datetime(p: Param, raw: Any) -> dt.datetime:
    text = _string(p, raw).strip()
    if len(text) < 10:
        raise ValueError
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if not MIN_YEAR <= value.year <= MAX_YEAR:  # far dates overflow once moved into a time zone
        raise ValueError
    return value


def _bounds(p: Param, raw: Any) -> tuple[float, float, float, float]:
    parts = raw if isinstance(raw, list) else str(raw).split(",")
    if len(parts) != 4:
        raise ValueError
    sw_lat, sw_lng, ne_lat, ne_lng = (_number(p, x) for x in parts)
    if not (-90 <= sw_lat <= ne_lat <= 90 and -180 <= sw_lng <= 180 and -180 <= ne_lng <= 180):
        raise ValueError
    return sw_lat, sw_lng, ne_lat, ne_lng


def _enum(p: Param, raw: Any) -> str:
    text = _string(p, raw)
    if text not in p.choices:
        raise ValueError
    return text


_CONVERTERS = {
    "int64": _integer,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "string": _string,
    "datetime": _datetime,
    "bounds": _bounds,
    "enum": _enum,
}

PAGE = Param("page", "query", "integer", default=1, minimum=1, maximum=1_000_000, description="Page number.")
PER_PAGE = Param(
    "per_page", "query", "integer", default=30, minimum=1, clamp_to=200, description="Items per page (at most 200)."
)
