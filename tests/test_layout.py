"""Each concern has its own package, and no package imports one above it (issue 17): the layering is data here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# package → the fitsync packages it may import. The state store, the warehouse and the sandbox stand alone; the
# service client keeps its tokens and budget in the state store; the command line sits on top of everything.
ALLOWED: dict[str, set[str]] = {
    "state": set(),
    "client": {"state"},
    "warehouse": set(),
    "sandbox": set(),
    "webhooks": {"client", "state"},
    "sync": {"client", "state", "warehouse"},
    "resources": {"client", "state", "warehouse", "sync"},
    "assets": {"client", "state", "warehouse", "webhooks", "sync", "resources"},
    "pipelines": {"client", "state", "warehouse", "webhooks", "sync", "resources", "assets"},
    "cli": {"client", "state", "warehouse", "webhooks", "sync", "resources", "assets", "pipelines", "sandbox"},
}


def imported_packages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        found.update(n.split(".")[1] for n in names if n.startswith("fitsync.") and n.count(".") >= 1)
    return found


def test_every_package_imports_only_the_packages_below_it() -> None:
    wrong = {}
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            extra = imported_packages(path) - allowed - {package}
            if extra:
                wrong[str(path.relative_to(ROOT))] = sorted(extra)
    assert not wrong, f"imports from a package above (or beside) this one: {wrong}"


def test_each_package_docstring_says_what_it_may_import_as_the_layering_does() -> None:
    """A newcomer reads the rule in the package's own docstring: its "May import:" line is this table's row."""
    wrong = {}
    for package, allowed in ALLOWED.items():
        doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text())) or ""
        line = next((part for part in doc.split("\n\n") if part.startswith("May import:")), "")
        said = line.removeprefix("May import:").strip().rstrip(".")
        names = set() if said == "nothing of fitsync" else {n.split(" (")[0].strip() for n in said.split(",")}
        if not line or names != allowed:
            wrong[package] = line or "no 'May import:' paragraph"
    assert not wrong, wrong


def test_every_package_of_the_distribution_is_in_the_layering() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    packages = {
        line.split('"')[1].split(".")[1]
        for line in text.split("package-dir = {", 1)[1].split("}", 1)[0].split(",")
        if '"fitsync.' in line and "migrations" not in line
    }
    assert packages == set(ALLOWED)


def test_every_module_in_assets_defines_dagster_assets() -> None:
    """assets/ holds asset definitions only: the sync's logic is in sync/, what the assets run with in resources/."""
    import importlib

    from dagster import AssetsDefinition

    empty = []
    for path in sorted((ROOT / "assets").glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"fitsync.assets.{path.stem}")
        if not any(isinstance(value, AssetsDefinition) for value in vars(module).values()):
            empty.append(path.name)
    assert empty == []
