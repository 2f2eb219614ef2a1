"""SQL expressions that read typed values out of stored JSON: the vocabulary of the column mappings."""

from __future__ import annotations

import re

# A field read by the helpers below: `src->>'$.path'` (json_extract_string of one path).
FIELD_READ = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)->>'(\$[^']*)'")


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


def without(paths: tuple[str, ...], src: str = "raw") -> str:
    """The document without these top-level members (a JSON merge patch with null removes them)."""
    patch = "{" + ",".join(f'"{p}":null' for p in paths) + "}"
    return f"json_merge_patch({src}, '{patch}')"


def columns(src: str, spec: dict[str, str]) -> dict[str, str]:
    """Plain typed columns read from fields of the same name: {column: sql_type}."""
    return {name: val(name, sql_type, src) for name, sql_type in spec.items()}


def parse_once(exprs: dict[str, str], source: str) -> tuple[dict[str, str], str]:
    """The same columns, with every field of a document read in one parse.

    Each `src->>'$.path'` parses the whole document again: for ≈ 45 columns of a 24 KB activity that was ≈ 1.7 MB
    of DuckDB memory per activity in a load and most of its time. Here the source gains one column per document,
    `src__fields = json_extract_string(src, [every path read])`, and each read becomes `src__fields[i]`: same
    values (the list form is the same function), one parse.
    """
    paths: dict[str, list[str]] = {}

    def slot(match: re.Match[str]) -> str:
        src, path = match.group(1), match.group(2)
        wanted = paths.setdefault(src, [])
        if path not in wanted:
            wanted.append(path)
        return f"{src}__fields[{wanted.index(path) + 1}]"

    rewritten = {column: FIELD_READ.sub(slot, expr) for column, expr in exprs.items()}
    for src, wanted in paths.items():
        listed = ", ".join(f"'{p}'" for p in wanted)
        source = f"(SELECT *, json_extract_string({src}, [{listed}]) AS {src}__fields FROM {source})"
    return rewritten, source
