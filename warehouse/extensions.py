"""DuckDB extensions loaded from the Python packages that carry them, never downloaded.

DuckDB fetches an extension from its repository on the internet the first time it is asked for one; an air-gapped
host (and these machines) cannot. PyPI's `duckdb-extension-<name>` packages hold the built extension for one DuckDB
release, installed with fitsync like any dependency: loading it from the package's file needs no network, and a
DuckDB whose release does not match is said so by name instead of failing on a download.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import duckdb


@dataclass(frozen=True)
class Extension:
    name: str  # DuckDB's name for it: the file is <name>.duckdb_extension
    package: str  # the Python package carrying the file

    @property
    def distribution(self) -> str:
        return self.package.replace("_", "-")


DUCKLAKE = Extension("ducklake", "duckdb_extension_ducklake")
POSTGRES = Extension("postgres_scanner", "duckdb_extension_postgres_scanner")
# What a lake whose catalog is in PostgreSQL needs, in the order they load.
LAKE = (POSTGRES, DUCKLAKE)


class ExtensionMissing(RuntimeError):
    """The extension's package is not installed, or carries no build for this DuckDB."""


def file(extension: Extension) -> Path:
    """The extension's file for the running DuckDB release."""
    spec = importlib.util.find_spec(extension.package)
    if spec is None or spec.origin is None:
        raise ExtensionMissing(
            f"DuckDB's {extension.name} extension is not installed: `pip install "
            f"{extension.distribution}=={duckdb.__version__}` (or reinstall fitsync)"
        )
    release = f"v{duckdb.__version__}"
    found = Path(spec.origin).parent / "extensions" / release / f"{extension.name}.duckdb_extension"
    if not found.is_file():
        raise ExtensionMissing(
            f"the installed {extension.distribution} has no build for DuckDB {duckdb.__version__}: "
            f"`pip install {extension.distribution}=={duckdb.__version__}`"
        )
    return found


def load(conn: duckdb.DuckDBPyConnection, *wanted: Extension) -> None:
    """Load each extension into the connection from its package's file."""
    for extension in wanted:
        path = str(file(extension)).replace("'", "''")
        conn.execute(f"LOAD '{path}'")
