"""The mappings' vocabulary: each warehouse column as data — the field it reads, its type and how the value is read.

A Column is rendered into SQL, never parsed back: `plain()` reads its field on its own (`src->>'$.path'`, the meaning
of the column, which the tests compare against); `over()` reads it from a member of the one parse of its document
(transform.py, staging.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

# A place in a JSON document: member names and array indexes (0-based), ("start_latlng", 0).
Path = tuple[str | int, ...]


class Read(enum.Enum):
    """How a column's value is read."""

    VALUE = "value"  # the field as the column's type: a typed leaf of the document's parse (LEAVES)
    TEXT = "text"  # the field's text
    INSTANT = "instant"  # an ISO 8601 instant → TIMESTAMPTZ
    LOCAL = "local"  # a local wall-clock time: the service writes a trailing Z that is NOT UTC; dropped → TIMESTAMP
    ZONE = "zone"  # the IANA name out of a label like "(GMT-08:00) America/Los_Angeles", or the name alone
    JSON = "json"  # the member kept as JSON (with no path: the source's whole JSON)
    SQL = "sql"  # an SQL expression over the source's own columns (context, constants): never a document's field


# Reads of a field's text: the SQL over that text.
TEXT_READS = {
    Read.TEXT: "{}",
    Read.INSTANT: "TRY_CAST({} AS TIMESTAMPTZ)",
    Read.LOCAL: "TRY_CAST(rtrim({}, 'Z') AS TIMESTAMP)",
    Read.ZONE: "NULLIF(regexp_extract({}, '^(?:\\([^)]*\\)\\s*)?([^()\\s][^()]*)$', 1), '')",  # or a bare name
}

# A VALUE's type → (its json_transform leaf, the SQL over the leaf giving the value). A typed leaf skips the text and
# the cast (a third of a load's parse). Same values as TRY_CAST of the text, but for odd input: a boolean read as a
# number gives 1 or 0 (the cast: NULL), a number read as a boolean gives true or false (the cast: NULL but for 0 and
# 1), a fractional id is rounded half to even (2.5 → 2; the cast rounds half away from zero: 3). INTEGER goes through
# DOUBLE and round() to round as the cast does. The document is kept whole (documents.py) and record() lists such a
# field among the activity's `issues`.
LEAVES = {
    "DOUBLE": ("DOUBLE", "{}"),
    "BIGINT": ("BIGINT", "{}"),
    "BOOLEAN": ("BOOLEAN", "{}"),
    "INTEGER": ("DOUBLE", "TRY_CAST(round({}) AS INTEGER)"),
}
# The types a plausible range (plausible.py) applies to.
NUMBERS = ("DOUBLE", "INTEGER")


def json_path(path: Path) -> str:
    """`$.map.polyline`, `$.start_latlng[0]`."""
    return "$" + "".join(f".{step}" if isinstance(step, str) else f"[{step}]" for step in path)


@dataclass(frozen=True)
class Column:
    """One warehouse column: read from `path` of the JSON in the source's column `src`, as `kind` says."""

    name: str
    path: Path = ()
    type: str = "VARCHAR"
    kind: Read = Read.VALUE
    src: str = "raw"
    sql: str = ""  # Read.SQL: the expression
    default: str = ""  # SQL standing in for a missing value

    def __post_init__(self) -> None:
        if self.kind is Read.VALUE and self.type not in LEAVES:
            raise ValueError(f"{self.name}: a value is one of {', '.join(LEAVES)} (text is Read.TEXT), not {self.type}")
        if (self.kind is Read.SQL) != bool(self.sql):
            raise ValueError(f"{self.name}: an SQL expression is given exactly for Read.SQL")

    @property
    def leaf(self) -> str:
        """The json_transform leaf this read wants its field as."""
        if self.kind is Read.VALUE:
            return LEAVES[self.type][0]
        return "JSON" if self.kind is Read.JSON else "VARCHAR"

    @property
    def field(self) -> bool:
        """Whether it reads a field of a document (what a parse of the document can give)."""
        return self.kind not in (Read.SQL, Read.JSON)

    @property
    def number(self) -> bool:
        """Whether it reads a number: the only kind of column a plausible range applies to."""
        return self.kind is Read.VALUE and self.type in NUMBERS

    def as_double(self) -> Column:
        """The same field read as a double (a number's range is checked before the cast to its type)."""
        return replace(self, type="DOUBLE")

    def plain(self) -> str:
        """The read on its own: the field's text (`->>`, a parse of the document per read), cast."""
        if self.kind is Read.SQL:
            return self.sql
        if self.kind is Read.JSON:
            return f"json_extract({self.src}, '{json_path(self.path)}')" if self.path else self.src
        field = f"{self.src}->>'{json_path(self.path)}'"
        return self._default(f"TRY_CAST({field} AS {self.type})" if self.kind is Read.VALUE else self._text(field))

    def over(self, member: str, leaf: str) -> str:
        """The read from `member`, the field as a json_transform leaf of type `leaf` (VARCHAR: its text)."""
        if self.kind is Read.JSON:
            return member
        if self.kind is not Read.VALUE:
            return self._default(self._text(member))
        want, read = LEAVES[self.type]
        return self._default(read.format(member) if leaf == want else f"TRY_CAST({member} AS {self.type})")

    def _text(self, text: str) -> str:
        return TEXT_READS[self.kind].format(text)

    def _default(self, read: str) -> str:
        return f"coalesce({read}, {self.default})" if self.default else read


def steps(path: str) -> Path:
    return tuple(path.split(".")) if path else ()


def value(name: str, sql_type: str, at: str = "", src: str = "raw") -> Column:
    """The field `at` (default: the column's name) as `sql_type`."""
    kind = Read.TEXT if sql_type == "VARCHAR" else Read.VALUE
    return Column(name, steps(at or name), sql_type, kind, src)


def fields(src: str, spec: dict[str, str]) -> tuple[Column, ...]:
    """Columns read from fields of the same name: {column: sql_type}."""
    return tuple(value(name, sql_type, src=src) for name, sql_type in spec.items())


def text(name: str, at: str = "", src: str = "raw", default: str = "") -> Column:
    return Column(name, steps(at or name), "VARCHAR", Read.TEXT, src, default=default)


def instant(name: str, at: str = "", src: str = "raw") -> Column:
    return Column(name, steps(at or name), "TIMESTAMPTZ", Read.INSTANT, src)


def local(name: str, at: str = "", src: str = "raw") -> Column:
    """A local wall-clock time: the trailing Z the service writes is not UTC, so it is dropped."""
    return Column(name, steps(at or name), "TIMESTAMP", Read.LOCAL, src)


def zone_name(name: str, at: str = "", src: str = "raw") -> Column:
    """The IANA name from a label like "(GMT-08:00) America/Los_Angeles"."""
    return Column(name, steps(at or name), "VARCHAR", Read.ZONE, src)


def coord(name: str, at: str, index: int, src: str = "raw") -> Column:
    """One coordinate of a [lat, lng] pair."""
    return Column(name, (*steps(at), index), "DOUBLE", Read.VALUE, src)


def kept(name: str, at: str = "", src: str = "raw") -> Column:
    """The member `at` kept as JSON; without `at`, the source's whole JSON."""
    return Column(name, steps(at), "JSON", Read.JSON, src)


def sql(name: str, expression: str) -> Column:
    """A value of the source's own columns (the batch's context, a constant): no document's field."""
    return Column(name, kind=Read.SQL, sql=expression)
