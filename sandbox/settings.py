"""Tunable behaviour of the sandbox: the spec's defaults, shortened by tests where they need time to pass."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Settings:
    # Tokens (spec §3.2, §8)
    access_token_lifetime: int = 6 * 3600
    refresh_reuse_threshold: int = 3600
    code_lifetime: int = 600
    rotate_refresh_tokens: bool = True
    # Rate limits per application (real-service notes): "15-minute,daily"
    overall_limit_short: int = 200
    overall_limit_long: int = 2000
    read_limit_short: int = 100
    read_limit_long: int = 1000
    short_window: int = 900
    long_window: int = 86400
    # Push delivery (spec §6.3)
    callback_timeout: float = 2.0
    delivery_attempts: int = 3
    retry_delays: list[float] = field(default_factory=lambda: [60.0, 300.0])
    # Request limits
    max_body_bytes: int = 1_048_576
    # Fault injection (applies to /api/v3 and /oauth; never to /sandbox)
    fault_latency_ms: float = 0.0
    fault_latency_jitter_ms: float = 0.0
    fault_error_rate: float = 0.0
    fault_drop_rate: float = 0.0
    # The next N requests whose "METHOD /path" starts with fault_lost_response_match (empty: any) are handled, their
    # effects committed, and then their answers lost: the connection drops mid-body. Counts down to 0.
    fault_lost_responses: int = 0
    fault_lost_response_match: str = ""
    # The activity listing answers `[]` while true: an outage page, a proxy, a token silently scoped down
    fault_empty_listing: bool = False
    # The activity listing leaves out every activity whose id is divisible by this (0: none): a listing cut short
    # by a cache or a proxy while the athlete's stats still count them
    fault_listing_drop_every: int = 0
    # Answers of a broken server or proxy, by operation ("GET /athletes/{id}/stats", as in the OpenAPI document):
    # {"body": JSON} answers that instead; {"merge": {...}} merges members into the answer (into each element of a
    # list); {"invalid_utf8": true} puts a byte that is not UTF-8 into the answer's first "name"; {"depth": N} wraps
    # the answer's first element (or the answer) N arrays deep; {"text": "<html>…", "status": 404, "media_type":
    # "text/html", "headers": {…}} answers as another server (a proxy's page, a redirect)
    fault_answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Answer shapes: "spec" (the spec) or "real" (the real service where it differs; sandbox/flavors.py)
    flavor: str = "spec"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def updated(self, changes: dict[str, Any]) -> Settings:
        """Return a copy with `changes` applied, type-checked against the field types."""
        known = {f.name: f for f in fields(self)}
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(unknown)} (docs/sandbox.md lists every setting)")
        current = self.to_json()
        for name, value in changes.items():
            current[name] = _coerce(name, known[name].type, value)
        return Settings(**current)

    @classmethod
    def from_json(cls, text: str | None) -> Settings:
        return cls().updated(json.loads(text)) if text else cls()


# String settings with a fixed set of values.
CHOICES = {"flavor": ("spec", "real")}
_TYPES = {"int": int, "float": float, "bool": bool, "list[float]": list, "str": str, "dict[str, dict[str, Any]]": dict}
FAULT_ANSWER_KEYS = {"body", "merge", "invalid_utf8", "depth", "text", "status", "media_type", "headers"}


def _coerce(name: str, type_name: Any, value: Any) -> Any:
    kind = _TYPES[str(type_name)]
    if name in CHOICES:
        if value in CHOICES[name]:
            return value
        raise ValueError(f"setting {name} must be one of {', '.join(CHOICES[name])}")
    if kind is str:
        if isinstance(value, str) and len(value) <= 200:
            return value
        raise ValueError(f"setting {name} must be a string of at most 200 characters")
    if kind is dict:
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, dict) and set(v) <= FAULT_ANSWER_KEYS for k, v in value.items()
        ):
            return value
        raise ValueError(
            f'setting {name} must map "METHOD /path" to an object with {", ".join(sorted(FAULT_ANSWER_KEYS))}'
        )
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ValueError(f"setting {name} must be true or false")
    if kind is list:
        if isinstance(value, list) and all(isinstance(v, (int, float)) and v >= 0 for v in value):
            return [float(v) for v in value]
        raise ValueError(f"setting {name} must be a list of non-negative numbers")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"setting {name} must be a number")
    if value < 0:
        raise ValueError(f"setting {name} must not be negative")
    if name.endswith("_rate") and value > 1:  # a probability: fault_error_rate=7 would be every request, unsaid
        raise ValueError(f"setting {name} is a share of requests: from 0 to 1")
    if kind is int and value != int(value):
        raise ValueError(f"setting {name} must be a whole number")
    return kind(value)
