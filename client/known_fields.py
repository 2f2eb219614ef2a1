"""The top-level fields fitsync knows for each kind of record; any other is kept raw and reported once.

`known_fields.json` is the union of the spec's fields (the sandbox's OpenAPI schemas), the public swagger's
response examples (tests/fixtures/real/), the reference client stravalib's models of the real service and what
public clients read from its laps (heart rate). A
field the service adds later is not an error: it stays in the raw JSON and is named once in `shape_reports`.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

KNOWN: dict[str, frozenset[str]] = {
    kind: frozenset(names)
    for kind, names in json.loads(files(__package__).joinpath("known_fields.json").read_text()).items()
}


def unknown_fields(kind: str, raw: Any) -> tuple[str, ...]:
    known = KNOWN.get(kind)
    if known is None or not isinstance(raw, dict):
        return ()
    return tuple(f"unknown field {name}" for name in sorted(set(raw) - known))
