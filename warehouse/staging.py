"""How a batch's documents are read: each parsed once, into one struct holding every field and array its bundle uses.

A load stages the batch as `batch`: the frame's columns, `doc = json_transform(raw, structure)` (a leaf for every
field the bundle's mappings read from the document, typed where every read casts it to one type, else VARCHAR; a
list for every array they unnest), the document's `parent_id` and one column `arr__<path>` per array. An array whose
elements are only read field by field (splits, laps) is transformed into a list of structs in that same parse; one
whose elements are also kept whole (efforts, zones) into a list of JSON texts in that same parse, each read again by
its own mapping. The mappings' `src->>'$.path'` reads are then rewritten into members of these structs
(expressions.parse_once): the values the reads give (expressions.LEAVES says where odd input differs), one parse
per document.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .expressions import (
    FIELD_READ,
    JSON_READ,
    REJECTED,
    as_double,
    checked,
    graft,
    json_leaves,
    leaf_types,
    parse_once,
    refused_text,
)
from .mappings import ARRAY_PATHS, MEMBER_ROWS, Mapping, array_column, unnest_source

ITEM = "item"
# The column of a mapping's staged rows holding the whole document (mappings that keep documents).
DOCUMENT = "document"
BARE_ITEM = re.compile(r"\bitem\b")


@dataclass
class Plan:
    """How a bundle's documents are parsed: one transform (`doc`), arrays typed or kept as lists of JSON texts."""

    structure: dict[str, object] = field(default_factory=dict)
    arrays: tuple[str, ...] = ()
    typed: frozenset[str] = frozenset()
    texts: tuple[str, ...] = ()

    def source(self, mapping: Mapping) -> str:
        """The mapping's source; a plain unnest of a typed array unnests its structs, a member of its elements is
        read from the member's JSON leaf."""
        for path in self.typed:
            typed = (
                f"(SELECT *, unnest(doc['{path}']) AS item__fields, generate_subscripts(doc['{path}'], "
                f"1) AS idx FROM batch WHERE doc['{path}'] IS NOT NULL)"
            )
            if mapping.source == unnest_source(path):
                return typed
            if MEMBER_ROWS.get(mapping.source, ("",))[0] == path:
                _, member, column = MEMBER_ROWS[mapping.source]
                # the document and its parse stay behind: DISTINCT ON carries every column it is given
                return (
                    f"(SELECT DISTINCT ON ({column}->>'$.id') * FROM (SELECT * EXCLUDE (raw, doc, item__fields), "
                    f"item__fields['{member}'] AS {column} FROM {typed}))"
                )
        return mapping.source

    def staged(self, mapping: Mapping) -> dict[str, tuple[str, dict[str, object]]]:
        """The sources of this mapping already parsed: `raw` as `doc`, a typed array's `item` as `item__fields`."""
        known: dict[str, tuple[str, dict[str, object]]] = {"raw": ("doc", self.structure)}
        for path in self.typed:
            if mapping.source == unnest_source(path):
                element = self.structure[path]
                assert isinstance(element, list)
                known[ITEM] = ("item__fields", element[0])
        return known


def plan(mappings: tuple[Mapping, ...]) -> Plan:
    """The parse of a bundle's documents: every field its mappings read (and the id), every array they unnest.

    An array a mapping unnests plainly, reading fields of its elements, is typed in the document's transform, each
    element a struct of the fields read. One whose elements a mapping keeps whole or reads another way is a list of
    JSON texts in that same transform (each element then parsed on its own: a few per document)."""
    structure: dict[str, object] = {}
    raw_leaves = leaf_types((e for m in mappings for e in m.columns.values()), "raw")
    graft(structure, "$.id", leaf=raw_leaves.get("$.id", "VARCHAR"))
    arrays = tuple(p for p in ARRAY_PATHS if any(array_column(p) in m.source for m in mappings))
    typed, texts = [], []
    for path in arrays:
        users = [m for m in mappings if array_column(path) in m.source]
        plain = [m for m in users if m.source == unnest_source(path)]
        member_users = [m for m in users if m.source in MEMBER_ROWS]  # rows of a member of this array's elements
        members = {MEMBER_ROWS[m.source][1] for m in member_users}
        exprs = [e for m in plain for e in m.columns.values()]
        if len(plain) + len(member_users) < len(users) or any(
            BARE_ITEM.search(JSON_READ.sub("", FIELD_READ.sub("", e))) for e in exprs
        ):
            structure[path] = ["JSON"]
            texts.append(path)
            continue
        # Members kept as JSON first (a read below one, the segment's id, then reads that JSON text: small).
        element: dict[str, object] = {}
        for read in sorted({f"$.{m}" for m in members} | json_leaves(exprs, ITEM)):
            graft(element, read, leaf="JSON")
        for read, leaf in leaf_types(exprs, ITEM).items():
            graft(element, read, leaf=leaf)
        if element:
            structure[path] = [element]
            typed.append(path)
    for read, leaf in raw_leaves.items():
        graft(structure, read, leaf=leaf)
    return Plan(structure, arrays, frozenset(typed), tuple(texts))


def stage_sql(p: Plan) -> str:
    """`batch`: the registered frame, each document parsed once (`doc`), its id and its arrays of JSON texts.

    A document whose member of an array's name is something else (an answer of an unknown shape) stages that array
    as NULL and is flagged `odd_arrays`: the children stored for it are left as they are, since an odd answer is no
    proof they are gone. The check parses the document again only for the rare document without that array."""
    structure = json.dumps(p.structure, separators=(",", ":"))
    arrays = "".join(f", doc['{a}'] AS {array_column(a)}" for a in p.texts)
    odd = (
        " OR ".join(
            f"(CASE WHEN doc['{a}'] IS NULL THEN coalesce(json_type(raw, '$.{a}') <> 'NULL', false) ELSE false END)"
            for a in p.arrays
        )
        or "false"
    )
    return (
        f"CREATE OR REPLACE TEMP TABLE batch AS SELECT *, TRY_CAST(doc['id'] AS BIGINT) AS parent_id{arrays}, "
        f"{odd} AS odd_arrays FROM (SELECT *, json_transform(raw, '{structure}') AS doc FROM batch_input)"
    )


def select_sql(mapping: Mapping, p: Plan, refused: bool = False) -> str:
    """The mapping's rows for this batch (keys never NULL), every field of a document read in one parse; a column with
    a plausible range is staged as a double, checked and cast by loads._plausible. `refused`: instead, the key and the
    text of the refused values ("distance=1e+308; …") of each row that has any."""
    exprs = dict(mapping.columns)
    if refused:
        found = [checked(exprs[column], column, bounds.low, bounds.high) for column, bounds in mapping.checks.items()]
        exprs = {
            **{k: exprs[k] for k in mapping.key},
            REJECTED: refused_text([t for _, t in found]),
            "any_refused": " OR ".join(c for c, _ in found),
        }
    else:
        exprs.update({column: as_double(exprs[column]) for column in mapping.checks})
    columns, source = parse_once(exprs, p.source(mapping), p.staged(mapping))
    if refused:
        keys = " AND ".join(f"{k} IS NOT NULL" for k in mapping.key)
        return (
            f"SELECT {', '.join(f'{columns[k]} AS {k}' for k in mapping.key)}, {columns[REJECTED]} AS {REJECTED} "
            f"FROM {source} WHERE {keys} AND ({columns['any_refused']})"
        )
    select_list = ", ".join(f"{expr} AS {col}" for col, expr in columns.items())
    if mapping.documents:  # the document itself rides along, for documents.write_new
        select_list += f", raw AS {DOCUMENT}"
    return f"SELECT {select_list} FROM {source} WHERE " + " AND ".join(f"{k} IS NOT NULL" for k in mapping.key)
