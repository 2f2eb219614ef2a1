"""Columns read from one parse of their document: a json_transform structure built from the Column objects, and the
SQL reading each column out of the struct it gives.

Each `src->>'$.path'` parses the whole document again: for ≈ 45 columns of a 24 KB activity that was ≈ 1.7 MB of
DuckDB memory per activity in a load and most of its time. Here each read is a member of one struct per document,
`json_transform(src, structure)`: a typed leaf where every read of the path wants the same one (columns.LEAVES), a
VARCHAR leaf (the text `->>` gives, NULL where the document has another shape) for the rest; one parse.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from .columns import Column, Path, Read, json_path

Tree = dict[str, object]


def graft(tree: Tree, path: Path, leaf: str = "VARCHAR", add: bool = True) -> str | None:
    """Add `path` to a json_transform structure as a leaf of type `leaf` (unless `add` is false: then it must be there
    already); the SQL that reads it from the transformed struct, or None when the structure reads that place another
    way."""
    if not path or not isinstance(path[0], str):
        return None
    node: object = tree
    access = ""
    for depth, step in enumerate(path):
        last = depth == len(path) - 1
        want: object = leaf if last else ({} if isinstance(path[depth + 1], str) else [])
        if isinstance(step, str):
            if not isinstance(node, dict) or (step not in node and not add):
                return None
            child = node.setdefault(step, want)
            access += f"['{step}']"
        else:
            if not isinstance(node, list) or (not node and not add):
                return None
            if not node:
                node.append(want)
            child = node[0]
            access += f"[{step + 1}]"
        if type(child) is not type(want) or (last and child != leaf):
            return None
        node = child
    return access


def leaf_at(tree: Tree, path: Path) -> str | None:
    """The leaf type a structure has at `path` (None where it has none)."""
    node: object = tree
    for step in path:
        if isinstance(step, str):
            node = node.get(step) if isinstance(node, dict) else None
        else:
            node = node[0] if isinstance(node, list) and node else None
    return node if isinstance(node, str) else None


def within_json(tree: Tree, path: Path) -> tuple[str, Path] | None:
    """For a path below a JSON leaf of the structure (segment.id under "segment": "JSON"): (the SQL reading that leaf
    from the transformed struct, the rest of the path: (id,)); None otherwise."""
    node: object = tree
    access = ""
    for depth, step in enumerate(path):
        if node == "JSON":
            return access, path[depth:]
        if not isinstance(step, str) or not isinstance(node, dict) or step not in node:
            return None
        node = node[step]
        access += f"['{step}']"
    return None


def leaves(columns: Iterable[Column], src: str) -> dict[Path, str]:
    """The json_transform leaf of every field the columns read from `src`: typed where every read of the path wants the
    same leaf, VARCHAR otherwise."""
    found: dict[Path, str] = {}
    for column in columns:
        if column.field and column.src == src:
            found[column.path] = column.leaf if found.get(column.path, column.leaf) == column.leaf else "VARCHAR"
    return found


def structure_text(tree: Tree) -> str:
    return json.dumps(tree, separators=(",", ":"))


@dataclass
class Parsed:
    """A source column's documents parsed once, into the struct column `column` by the structure `tree`. A fixed tree is
    the one the batch was staged with (a read must find its place in it); otherwise each read adds its leaf."""

    column: str
    tree: Tree
    fixed: bool = True
    wanted: dict[Path, str] = field(default_factory=dict)  # the leaf of each path (a tree that grows)

    def member(self, path: Path) -> tuple[str, str] | None:
        """(SQL of the member holding `path`, its leaf type), or None where the structure reads it another way."""
        if self.fixed:
            leaf = leaf_at(self.tree, path)
            access = graft(self.tree, path, leaf, add=False) if leaf else None
            if access is None and (inside := within_json(self.tree, path)):  # read from a member kept as JSON
                return f"{self.column}{inside[0]}->>'{json_path(inside[1])}'", "VARCHAR"
        else:
            leaf = self.wanted.get(path, "VARCHAR")
            access = graft(self.tree, path, leaf)
        return (f"{self.column}{access}", leaf) if access is not None and leaf else None


class Reads:
    """The SQL of columns read over a source whose documents are each parsed once. `staged`: the sources the source
    carries parsed already ({src: Parsed}, staging.py); any other document a column reads is parsed by a transform
    of its own, which `source` wraps around the source. A read that cannot join a structure keeps its own read."""

    def __init__(self, columns: Iterable[Column], staged: dict[str, Parsed]) -> None:
        self.columns = tuple(columns)
        self.parsed = dict(staged)
        self.added: list[str] = []

    def read(self, column: Column) -> str:
        if not column.field and not (column.kind is Read.JSON and column.path):
            return column.plain()  # an expression of the source's columns, or a source's whole JSON
        parsed = self.parsed.get(column.src)
        if column.kind is Read.JSON:  # a JSON leaf where the staged structure keeps one (a member of a typed element)
            if parsed is None or not parsed.fixed or leaf_at(parsed.tree, column.path) != "JSON":
                return column.plain()
            return column.over(f"{parsed.column}{graft(parsed.tree, column.path, 'JSON', add=False)}", "JSON")
        if parsed is None:
            parsed = self.parsed[column.src] = Parsed(
                f"{column.src}__fields", {}, fixed=False, wanted=leaves(self.columns, column.src)
            )
            self.added.append(column.src)
        found = parsed.member(column.path)
        if found is None or (column.kind is not Read.VALUE and found[1] != "VARCHAR"):
            return column.plain()
        return column.over(*found)

    def source(self, source: str) -> str:
        """`source` with the transforms the reads so far added."""
        for src in self.added:
            if tree := self.parsed[src].tree:
                source = f"(SELECT *, json_transform({src}, '{structure_text(tree)}') AS {src}__fields FROM {source})"
        return source
