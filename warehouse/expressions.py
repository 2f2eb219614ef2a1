"""SQL expressions that read typed values out of stored JSON: the vocabulary of the column mappings."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

# A field read by the helpers below: `src->>'$.path'` (json_extract_string of one path).
FIELD_READ = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)->>'(\$[^']*)'")


# A member kept as JSON: `json_extract(src, '$.path')` (json_of).
JSON_READ = re.compile(r"json_extract\(([A-Za-z_][A-Za-z0-9_]*), '(\$[^']*)'\)")


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


# A read cast to a type json_transform can give directly: `TRY_CAST(src->>'$.path' AS TYPE)`.
TYPED_READ = re.compile(r"TRY_CAST\(([A-Za-z_][A-Za-z0-9_]*)->>'(\$[^']*)' AS (DOUBLE|BIGINT|INTEGER|BOOLEAN)\)")
# Cast target → (json_transform leaf, the expression of the leaf that gives the cast's value). A typed leaf skips the
# text and the cast (a third of a load's parse). Same values as TRY_CAST of the text, but for odd input: a boolean
# read as a number gives 1 or 0 (the cast: NULL), a number read as a boolean gives true or false (the cast: NULL), a
# fractional id is truncated (the cast rounds). INTEGER goes through DOUBLE and round() to round as the cast does.
# The document is kept whole (documents.py) and record() lists such a field among the activity's `issues`.
LEAVES = {
    "DOUBLE": ("DOUBLE", "{}"),
    "BIGINT": ("BIGINT", "{}"),
    "BOOLEAN": ("BOOLEAN", "{}"),
    "INTEGER": ("DOUBLE", "TRY_CAST(round({}) AS INTEGER)"),
}


# A read of a number: the only kind of column a plausible range (plausible.py) applies to.
NUMBER_READ = re.compile(r"TRY_CAST\(([A-Za-z_][A-Za-z0-9_]*)->>'(\$[^']*)' AS (DOUBLE|INTEGER)\)")
# The staged column marking a row with a refused value: true, NULL when it has none. The ranges are checked on the
# staged rows (loads._plausible: a few ms a batch, where conditions in the staging SQL took a third of its time); the
# names and values are read again, with `checked`, only for a batch with a refused value.
REJECTED = "rejected"


def _double_read(expr: str) -> tuple[str, str]:
    """(the same read as a double, the column's type) of a number read (NUMBER_READ)."""
    match = NUMBER_READ.fullmatch(expr)
    assert match, expr
    src, path, target = match.groups()
    return f"TRY_CAST({src}->>'{path}' AS DOUBLE)", target


def checked(expr: str, column: str, low: float, high: float) -> tuple[str, str]:
    """(a condition true where a number read's value lies outside [low, high] or is not finite, the text
    `column=value` there). The value is read as a double, so an overflow of the column's type is out of range, never
    NULL without a word."""
    number, _ = _double_read(expr)
    fits = f"({number} BETWEEN {low!r} AND {high!r})"
    return f"NOT coalesce({fits}, true)", f"CASE WHEN NOT {fits} THEN '{column}=' || {number} END"


def as_double(expr: str) -> str:
    """A number read staged as a (rounded, for an INTEGER) double: its range is checked before the cast to the
    column's type, so an overflow is caught, not cast to NULL."""
    number, target = _double_read(expr)
    return f"round({number})" if target == "INTEGER" else number


def refused_text(texts: list[str]) -> str:
    return f"concat_ws('; ', {', '.join(texts)})"


def rejects(column: str, rows: str = "excluded") -> str:
    """Whether a staged row's value of `column` may be a refused one: the row has one, and this value is NULL. The
    stored value is then kept (a value the answer really left out, in a row already refusing one, is kept too)."""
    return f"(coalesce({rows}.{REJECTED}, false) AND {rows}.{column} IS NULL)"


def leaf_types(exprs: Iterable[str], src: str) -> dict[str, str]:
    """The json_transform leaf of every path the expressions read from `src`: typed where every read of the path
    casts it to the same leaf, VARCHAR otherwise."""
    types: dict[str, str] = {}
    for expr in exprs:
        for s, path, target in TYPED_READ.findall(expr):
            if s == src:
                leaf = LEAVES[target][0]
                types[path] = leaf if types.get(path, leaf) == leaf else "VARCHAR"
        for s, path in FIELD_READ.findall(TYPED_READ.sub("", expr)):
            if s == src:
                types[path] = "VARCHAR"
    return types


def json_leaves(exprs: Iterable[str], src: str) -> set[str]:
    """The paths the expressions keep as JSON (json_of) from `src`: a JSON leaf of its transform gives that text (and
    NULL for an explicit null, where json_extract gives the JSON null)."""
    return {path for expr in exprs for s, path in JSON_READ.findall(expr) if s == src}


def parse_once(
    exprs: dict[str, str], source: str, staged: dict[str, tuple[str, dict[str, object]]] | None = None
) -> tuple[dict[str, str], str]:
    """The same columns, with every field of a document read in one parse.

    Each `src->>'$.path'` parses the whole document again: for ≈ 45 columns of a 24 KB activity that was ≈ 1.7 MB
    of DuckDB memory per activity in a load and most of its time. Here each read becomes a member of one struct per
    document, `src__fields = json_transform(src, structure)`: a typed leaf for a read cast to a type json_transform
    gives (LEAVES), a VARCHAR leaf (the text `->>` gives, NULL where the document has another shape) for the rest;
    one parse. `staged` names sources the source already carries transformed ({src: (column, its structure)}, see
    staging.py). A path that cannot join a structure (read both whole and inside) keeps its own read.
    """
    staged = staged or {}
    trees: dict[str, dict[str, object]] = {}
    wanted: dict[str, dict[str, str]] = {}

    def place(src: str, path: str) -> tuple[str, str] | None:
        """(SQL of the member, its leaf type) for a read of `path` from `src`."""
        if src in staged:
            column, tree = staged[src]
            leaf = leaf_at(tree, path)
            access = graft(tree, path, add=False, leaf=leaf) if leaf else None
            if access is None and (inside := within_json(tree, path)):  # read from a member kept as JSON
                return f"{column}{inside[0]}->>'${inside[1]}'", "VARCHAR"
        else:
            column, tree = f"{src}__fields", trees.setdefault(src, {})
            leaf = wanted.setdefault(src, leaf_types(exprs.values(), src)).get(path, "VARCHAR")
            access = graft(tree, path, leaf=leaf)
        return (f"{column}{access}", leaf) if access is not None and leaf else None

    def typed(match: re.Match[str]) -> str:
        src, path, target = match.groups()
        found = place(src, path)
        if found is None:
            return match.group(0)
        member, leaf = found
        return LEAVES[target][1].format(member) if leaf == LEAVES[target][0] else f"TRY_CAST({member} AS {target})"

    def text(match: re.Match[str]) -> str:
        found = place(match.group(1), match.group(2))
        return found[0] if found and found[1] == "VARCHAR" else match.group(0)

    def kept(match: re.Match[str]) -> str:
        src, path = match.groups()
        if src not in staged or leaf_at(staged[src][1], path) != "JSON":
            return match.group(0)
        column, tree = staged[src]
        return f"{column}{graft(tree, path, add=False, leaf='JSON')}"

    rewritten = {
        column: JSON_READ.sub(kept, FIELD_READ.sub(text, TYPED_READ.sub(typed, expr))) for column, expr in exprs.items()
    }
    for src, tree in trees.items():
        if tree:
            structure = json.dumps(tree, separators=(",", ":"))
            source = f"(SELECT *, json_transform({src}, '{structure}') AS {src}__fields FROM {source})"
    return rewritten, source


PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def graft(tree: dict[str, object], path: str, add: bool = True, leaf: str = "VARCHAR") -> str | None:
    """Add `path` ($.a.b[0]) to a json_transform structure as a leaf of type `leaf` (unless `add` is false: then it
    must be there already); the SQL that reads it from the transformed struct, or None when the structure reads that
    place another way."""
    found = list(PATH_STEP.finditer(path, 1))
    steps = [(m.group(1), m.group(2)) for m in found]
    if not path.startswith("$") or "".join(m.group(0) for m in found) != path[1:] or not steps or steps[0][0] is None:
        return None
    node: object = tree
    access = ""
    for depth, (key, index) in enumerate(steps):
        last = depth == len(steps) - 1
        want: object = leaf if last else ({} if steps[depth + 1][0] is not None else [])
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
        if type(child) is not type(want) or (last and child != leaf):
            return None
        node = child
    return access


def leaf_at(tree: dict[str, object], path: str) -> str | None:
    """The leaf type a structure has at `path` (None where it has none)."""
    node: object = tree
    for m in PATH_STEP.finditer(path, 1):
        key = m.group(1)
        if key is not None:
            node = node.get(key) if isinstance(node, dict) else None
        else:
            node = node[0] if isinstance(node, list) and node else None
    return node if isinstance(node, str) else None


def within_json(tree: dict[str, object], path: str) -> tuple[str, str] | None:
    """For a path below a JSON leaf of the structure ($.segment.id under "segment": "JSON"): (the SQL reading that
    leaf from the transformed struct, the rest of the path: `.id`); None otherwise."""
    node: object = tree
    access = ""
    for m in PATH_STEP.finditer(path, 1):
        if node == "JSON":
            return access, path[m.start() :]
        key = m.group(1)
        if key is None or not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
        access += f"['{key}']"
    return None
