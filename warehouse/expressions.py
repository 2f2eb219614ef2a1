"""SQL expressions that read typed values out of stored JSON: the vocabulary of the column mappings."""

from __future__ import annotations

import json
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


def columns(src: str, spec: dict[str, str]) -> dict[str, str]:
    """Plain typed columns read from fields of the same name: {column: sql_type}."""
    return {name: val(name, sql_type, src) for name, sql_type in spec.items()}


def parse_once(exprs: dict[str, str], source: str,
               staged: dict[str, tuple[str, dict[str, object]]] | None = None) -> tuple[dict[str, str], str]:
    """The same columns, with every field of a document read in one parse.

    Each `src->>'$.path'` parses the whole document again: for ≈ 45 columns of a 24 KB activity that was ≈ 1.7 MB
    of DuckDB memory per activity in a load and most of its time. Here each read becomes a member of one struct per
    document, `src__fields = json_transform(src, structure)` with a VARCHAR leaf for every path read: the same
    values as `->>` (json_transform gives a VARCHAR the text `->>` gives, NULL where the document has another
    shape), one parse, and 4× faster than the list form of json_extract_string. `staged` names sources the source
    already carries transformed ({src: (column, its structure)}, see staging.py). A path that cannot join a
    structure (read both whole and inside) keeps its own read.
    """
    staged = staged or {}
    trees: dict[str, dict[str, object]] = {}

    def slot(match: re.Match[str]) -> str:
        src, path = match.group(1), match.group(2)
        if src in staged:
            column, tree = staged[src]
            access = graft(tree, path, add=False)
            return f"{column}{access}" if access is not None else match.group(0)
        access = graft(trees.setdefault(src, {}), path)
        return f"{src}__fields{access}" if access is not None else match.group(0)

    rewritten = {column: FIELD_READ.sub(slot, expr) for column, expr in exprs.items()}
    for src, tree in trees.items():
        if tree:
            structure = json.dumps(tree, separators=(",", ":"))
            source = f"(SELECT *, json_transform({src}, '{structure}') AS {src}__fields FROM {source})"
    return rewritten, source


PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def graft(tree: dict[str, object], path: str, add: bool = True) -> str | None:
    """Add `path` ($.a.b[0]) to a json_transform structure as a VARCHAR leaf (unless `add` is false: then it must
    be there already); the SQL that reads it from the transformed struct, or None when the structure reads that
    place another way."""
    found = list(PATH_STEP.finditer(path, 1))
    steps = [(m.group(1), m.group(2)) for m in found]
    if not path.startswith("$") or "".join(m.group(0) for m in found) != path[1:] or not steps or steps[0][0] is None:
        return None
    node: object = tree
    access = ""
    for depth, (key, index) in enumerate(steps):
        last = depth == len(steps) - 1
        want: object = "VARCHAR" if last else ({} if steps[depth + 1][0] is not None else [])
        if key is not None:
            if not isinstance(node, dict) or (key not in node and not add):
                return None
            child = node.setdefault(key, want)
            access += f"['{key}']"
        else:
            if not isinstance(node, list) or (not node and not add):
                return None
            if not node:
                node.append(want)
            child = node[0]
            access += f"[{int(index) + 1}]"
        if type(child) is not type(want) or (last and child != "VARCHAR"):
            return None
        node = child
    return access
