"""Builds docs/sandbox-conformance.md from the conformance test modules' docstring tables.

`python -m tests.conformance_table > docs/sandbox-conformance.md` rewrites it; test_docs checks it is current.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MODULES = (
    "test_conformance_oauth.py",
    "test_conformance_resources.py",
    "test_conformance_events.py",
    "test_conformance_limits.py",
    # fitsync's own side of the webhook rows: receiver, sensor, end to end
    "webhooks/test_receiver.py",
    "webhooks/test_sensor.py",
    "webhooks/test_end_to_end.py",
    "webhooks/test_crash.py",
)
HEADER = """# Sandbox conformance: each row of the spec's tables and the test that covers it

Generated from the conformance test modules (`python -m tests.conformance_table > docs/sandbox-conformance.md`);
`tests/test_docs.py` fails when it is out of date. Row numbers are the 1-based data rows of each section's
table; for prose sections, the statements in order. Beside these, `tests/test_scope_matrix.py` checks every
operation against every scope set, `tests/test_malformed_input.py` sweeps malformed input, `tests/test_openapi.py`
validates real responses against the OpenAPI document, and `tests/test_push.py` covers the event rules in-process.
"""


def table_of(module: str) -> tuple[str, str]:
    doc = ast.get_docstring(ast.parse((TESTS / module).read_text())) or ""
    title = doc.splitlines()[0]
    rows = [line for line in doc.splitlines() if line.startswith("|")]
    return title, "\n".join(rows)


def render() -> str:
    parts = [HEADER]
    for module in MODULES:
        title, table = table_of(module)
        parts.append(f"## {title}\n\n`tests/{module}`\n\n{table}\n")
    return "\n".join(parts)


def named_tests(text: str) -> set[str]:
    """Test function names mentioned in the text (module file names like test_docs.py excluded)."""
    return set(re.findall(r"\btest_[a-z0-9_]+\b(?!\.py)", text))


def defined_tests() -> set[str]:
    names: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        names |= {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
    return names


if __name__ == "__main__":
    print(render(), end="")
