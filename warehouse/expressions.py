"""SQL expressions that read typed values out of stored JSON: the vocabulary of the column mappings."""

from __future__ import annotations


def val(path: str, sql_type: str, src: str = "raw") -> str:
    return f"TRY_CAST({src}->>'$.{path}' AS {sql_type})"


def text(path: str, src: str = "raw") -> str:
    return f"{src}->>'$.{path}'"


def instant(path: str, src: str = "raw") -> str:
    return f"TRY_CAST({src}->>'$.{path}' AS TIMESTAMPTZ)"


def local(path: str, src: str = "raw") -> str:
    """The service writes local wall-clock times with a trailing Z; it is not UTC, so drop it."""
    return f"TRY_CAST(rtrim({src}->>'$.{path}', 'Z') AS TIMESTAMP)"


def zone_name(path: str, src: str = "raw") -> str:
    """IANA name from a label like "(GMT-08:00) America/Los_Angeles"."""
    return f"NULLIF(regexp_extract({src}->>'$.{path}', '\\)\\s*(.+)$', 1), '')"


def coord(path: str, index: int, src: str = "raw") -> str:
    return f"TRY_CAST({src}->>'$.{path}[{index}]' AS DOUBLE)"


def json_of(path: str, src: str = "raw") -> str:
    return f"json_extract({src}, '$.{path}')"


def columns(src: str, spec: dict[str, str]) -> dict[str, str]:
    """Plain typed columns read from fields of the same name: {column: sql_type}."""
    return {name: val(name, sql_type, src) for name, sql_type in spec.items()}
