"""Where the warehouse is: a DuckDB file (one host; the default, `<home>/warehouse.duckdb`) or a DuckLake, its catalog
in PostgreSQL and its data files in a folder every host reaches (many hosts loading, analysts on one truth).

Everything that opens the warehouse takes a `Warehouse` (or, for a file, its path), so a command, an asset and the
Python API open a lake exactly as they open a file. The catalog's connection string may carry a password: it is
never shown (`str()` masks it) and errors that might repeat it are scrubbed (`scrub`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LAKE_PREFIX = "ducklake:postgres:"
# The catalog's name inside DuckDB: the lake's tables are lake.main.<table>, and `USE lake` makes them unqualified.
LAKE_ALIAS = "lake"
# libpq's key=value form: a password value is masked wherever the string is shown.
_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]+:)[^@\s]+@")


class WarehouseError(Exception):
    """A warehouse that cannot be used as it is; the message says what to do (and carries no password)."""


@dataclass(frozen=True)
class Warehouse:
    """A file path, or `ducklake:postgres:<conninfo>` with the folder of its data files (`data_path`: needed when the
    lake is created; DuckLake records it in the catalog for every later host)."""

    target: str
    data_path: str = ""

    @classmethod
    def of(cls, where: Warehouse | Path | str) -> Warehouse:
        return where if isinstance(where, Warehouse) else cls(str(where))

    @property
    def is_lake(self) -> bool:
        return self.target.startswith(LAKE_PREFIX)

    @property
    def conninfo(self) -> str:
        """The catalog's PostgreSQL connection string (libpq key=value or a postgresql:// URL)."""
        return self.target[len(LAKE_PREFIX) :]

    @property
    def path(self) -> Path:
        """The file of a file warehouse."""
        if self.is_lake:
            raise ValueError("a lake has no warehouse file")
        return Path(self.target)

    @property
    def file(self) -> Path | None:
        """The file of a file warehouse, None for a lake (which has data files, not one file to name)."""
        return None if self.is_lake else Path(self.target)

    def __str__(self) -> str:
        return mask(self.target)


def mask(text: str) -> str:
    """The text with any PostgreSQL password in it replaced by ***."""
    return _URL_PASSWORD.sub(r"\1***@", _PASSWORD.sub(r"\1***", text))


def scrub(error: BaseException, warehouse: Warehouse) -> str:
    """An error's message without the catalog's connection string or password in it."""
    message = str(error)
    if warehouse.is_lake and warehouse.conninfo:
        message = message.replace(warehouse.conninfo, mask(warehouse.conninfo))
    return mask(message)
