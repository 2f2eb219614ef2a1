"""Answers as a broken server or proxy sends them (the `fault_answers` setting): what fitsync must never take for data.

Each is keyed by operation ("GET /athletes/{id}/stats") and says what to do to the right answer: replace it (`body`),
merge members into it or into each of its elements (`merge`: absurd numbers), put a byte that is not UTF-8 into its
first "name" (`invalid_utf8`), or wrap its first element in `depth` arrays (deeper than any parser recurses); or
answer as another server would: `text` instead of JSON, with `status`, `media_type` and `headers` (a proxy's HTML 404,
a redirect elsewhere).
"""

from __future__ import annotations

import json
from typing import Any


def _merged(body: Any, members: dict[str, Any]) -> Any:
    if isinstance(body, list):
        return [{**item, **members} if isinstance(item, dict) else item for item in body]
    return {**body, **members} if isinstance(body, dict) else body


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def broken(answer: Any, fault: dict[str, Any]) -> bytes:
    if "text" in fault:
        return str(fault["text"]).encode()
    body = fault["body"] if "body" in fault else answer
    if "merge" in fault:
        body = _merged(body, fault["merge"])
    depth = int(fault.get("depth") or 0)
    if isinstance(body, list) and body:
        items = [_text(item) for item in body]
        items[0] = "[" * depth + items[0] + "]" * depth  # built as text: the sandbox's own json would recurse too
        text = "[" + ",".join(items) + "]"
    else:
        text = "[" * depth + _text(body) + "]" * depth
    data = text.encode()
    if fault.get("invalid_utf8"):
        data = data.replace(b'"name":"', b'"name":"\xff', 1)
    return data
