"""The docs describe what the code does: every operation and every setting appears in docs/sandbox.md."""

from __future__ import annotations

import dataclasses
import re
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


def test_conformance_doc_is_current_and_names_real_tests() -> None:
    from .conformance_table import defined_tests, named_tests, render

    text = (DOCS / "sandbox-conformance.md").read_text()
    assert text == render(), "regenerate: python -m tests.conformance_table > docs/sandbox-conformance.md"
    defined = defined_tests()
    named = {n for n in named_tests(text) if not n.endswith("_")}
    wildcard = {n.rstrip("*") for n in re.findall(r"`(test_[a-z0-9_]+)\*`", text)}
    assert named - defined - wildcard == set(), "the table names tests that do not exist"
    spec_rows = {n for n in defined if re.match(r"test_s\d+_\d+_r\d+_", n)}
    assert spec_rows - named == set(), "conformance tests missing from the table"


def test_real_service_doc_names_real_tests() -> None:
    """Each row of docs/real-service.md names the tests that show it: they must exist."""
    text = (DOCS / "real-service.md").read_text()
    named = set(re.findall(r"::(test_[a-z0-9_]+)", text))
    defined = {
        m
        for path in DOCS.parent.joinpath("tests").rglob("test_*.py")
        for m in re.findall(r"^def (test_[a-z0-9_]+)", path.read_text(), re.M)
    }
    assert len(named) > 25 and named - defined == set(), "the table names tests that do not exist"
