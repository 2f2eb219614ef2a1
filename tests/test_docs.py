"""The docs describe what the code does: every operation and every setting appears in docs/sandbox.md."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fitsync.sandbox.operations import OPERATIONS
from fitsync.sandbox.settings import Settings

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_sandbox_doc_lists_every_operation() -> None:
    text = (DOCS / "sandbox.md").read_text()
    for op in OPERATIONS:
        assert f"| `{op.method} {op.path}` | {op.operation_id} |" in text, op.operation_id


def test_sandbox_doc_lists_every_setting() -> None:
    text = (DOCS / "sandbox.md").read_text()
    for f in dataclasses.fields(Settings):
        assert f"`{f.name}`" in text, f.name
