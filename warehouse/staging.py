"""How a batch's documents are read: each parsed once, into one struct holding every field and array its bundle uses.

A load stages the batch as `batch`: the frame's columns, `doc = json_transform(raw, structure)` (a leaf for every
field the bundle's mappings read from the document, typed where every read wants one type, else VARCHAR; a list for
every array they unnest), the document's `parent_id` and one column `arr__<path>` per array kept as JSON texts. An
array whose elements are only read field by field (splits, laps) is transformed into a list of structs in that same
parse; one whose elements are also kept whole (efforts, zones) into a list of JSON texts in that same parse, each read
again by its own mapping. Each mapping's columns are then rendered as members of these structs (transform.Reads):
the values the reads give (columns.LEAVES says where odd input differs), one parse per document.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .columns import Column, Read, json_path
from .mappings import Mapping
from .refused import REJECTED, checked, refused_text
from .sources import ARRAY_PATHS, ITEM, Elements, Members, array_column, listed_column
from .transform import Parsed, Reads, Tree, graft, leaves, structure_text

# The column of a mapping's staged rows holding the whole document (mappings that keep documents).
DOCUMENT = "document"


def _typed_unnest(path: str) -> str:
    return (
        f"(SELECT *, unnest(doc['{path}']) AS {ITEM}__fields, generate_subscripts(doc['{path}'], "
        f"1) AS idx FROM batch WHERE doc['{path}'] IS NOT NULL)"
    )


@dataclass
class Plan:
    """How a bundle's documents are parsed: one transform (`doc`), arrays typed or kept as lists of JSON texts."""

    structure: Tree = field(default_factory=dict)
    arrays: tuple[str, ...] = ()
    typed: frozenset[str] = frozenset()
    texts: tuple[str, ...] = ()

    def source(self, mapping: Mapping) -> str:
        """The mapping's source; a plain unnest of a typed array unnests its structs, a member of its elements is
        read from the member's JSON leaf."""
        source = mapping.source
        if isinstance(source, Elements) and source.array in self.typed:
            return _typed_unnest(source.array)
        if isinstance(source, Members) and source.array in self.typed:
            # the document and its parse stay behind: DISTINCT ON carries every column it is given
            return (
                f"(SELECT DISTINCT ON ({source.name}->>'$.id') * FROM (SELECT * EXCLUDE (raw, doc, {ITEM}__fields), "
                f"{ITEM}__fields['{source.member}'] AS {source.name} FROM {_typed_unnest(source.array)}))"
            )
        return source.sql

    def staged(self, mapping: Mapping) -> dict[str, Parsed]:
        """The sources of this mapping already parsed: `raw` as `doc`, a typed array's `item` as `item__fields`."""
        known = {"raw": Parsed("doc", self.structure)}
        if isinstance(mapping.source, Elements) and mapping.source.array in self.typed:
            element = self.structure[mapping.source.array]
            assert isinstance(element, list)
            known[ITEM] = Parsed(f"{ITEM}__fields", element[0])
        return known


def _typed(users: list[Mapping], path: str) -> bool:
    """Whether an array's elements can be typed in the document's parse: every mapping unnesting it reads fields of
    its elements (or rows of one of their members), none keeps an element whole."""
    return all(isinstance(m.source, (Elements, Members)) for m in users) and not any(
        c.kind is Read.JSON and not c.path and c.src == ITEM
        for m in users
        if m.source == Elements(path)
        for c in m.columns
    )


def plan(mappings: tuple[Mapping, ...]) -> Plan:
    """The parse of a bundle's documents: every field its mappings read (and the id), every array they unnest.

    An array a mapping unnests plainly, reading fields of its elements, is typed in the document's transform, each
    element a struct of the fields read. One whose elements a mapping keeps whole or reads another way is a list of
    JSON texts in that same transform (each element then parsed on its own: a few per document)."""
    structure: Tree = {}
    raw_leaves = leaves((c for m in mappings for c in m.columns), "raw")
    graft(structure, ("id",), raw_leaves.get(("id",), "VARCHAR"))
    arrays = tuple(p for p in ARRAY_PATHS if any(p in m.source.arrays for m in mappings))
    typed, texts = [], []
    for path in arrays:
        users = [m for m in mappings if path in m.source.arrays]
        if not _typed(users, path):
            structure[path] = ["JSON"]
            texts.append(path)
            continue
        columns = [c for m in users if m.source == Elements(path) for c in m.columns]
        members = {(m.source.member,) for m in users if isinstance(m.source, Members)}  # rows of a member of each
        # Members kept as JSON first (a read below one, the segment's id, then reads that JSON text: small).
        element: Tree = {}
        kept_json = members | {c.path for c in columns if c.kind is Read.JSON and c.src == ITEM}
        for read in sorted(kept_json, key=json_path):
            graft(element, read, "JSON")
        for read, leaf in leaves(columns, ITEM).items():
            graft(element, read, leaf)
        if element:
            structure[path] = [element]
            typed.append(path)
    for read, leaf in raw_leaves.items():
        graft(structure, read, leaf)
    return Plan(structure, arrays, frozenset(typed), tuple(texts))


def stage_sql(p: Plan) -> str:
    """`batch`: the registered frame, each document parsed once (`doc`), its id and its arrays of JSON texts.

    A document whose member of an array's name is missing, null or something else (an answer of an unknown shape)
    stages that array as NULL and its `listed__<array>` false: the children stored from that array are left as they
    are, since only a list says which children there are (an empty one: none)."""
    structure = structure_text(p.structure)
    arrays = "".join(f", doc['{a}'] AS {array_column(a)}" for a in p.texts)
    listed = "".join(f", doc['{a}'] IS NOT NULL AS {listed_column(a)}" for a in p.arrays)
    return (
        f"CREATE OR REPLACE TEMP TABLE batch AS SELECT *, TRY_CAST(doc['id'] AS BIGINT) AS parent_id{arrays}{listed} "
        f"FROM (SELECT *, json_transform(raw, '{structure}') AS doc FROM batch_input)"
    )


def _staged_read(reads: Reads, column: Column) -> str:
    """A number with a plausible range is staged as a (rounded, for an INTEGER) double: its range is checked before the
    cast to the column's type (loads._plausible), so an overflow is caught, not cast to NULL."""
    number = reads.read(column.as_double())
    return f"round({number})" if column.type == "INTEGER" else number


def select_sql(mapping: Mapping, p: Plan, refused: bool = False) -> str:
    """The mapping's rows for this batch (keys never NULL), every field of a document read in one parse; a column with
    a plausible range is staged as a double, checked and cast by loads._plausible. `refused`: instead, the key and the
    text of the refused values ("distance=1e+308; …") of each row that has any."""
    keys = " AND ".join(f"{k} IS NOT NULL" for k in mapping.key)
    if refused:
        key_columns = [c for c in mapping.columns if c.name in mapping.key]
        numbers = [c.as_double() for c in mapping.columns if c.name in mapping.checks]
        reads = Reads([*key_columns, *numbers], p.staged(mapping))
        select_keys = ", ".join(f"{reads.read(c)} AS {c.name}" for c in key_columns)
        found = [
            checked(reads.read(c), c.name, mapping.checks[c.name].low, mapping.checks[c.name].high) for c in numbers
        ]
        return (
            f"SELECT {select_keys}, {refused_text([t for _, t in found])} AS {REJECTED} "
            f"FROM {reads.source(p.source(mapping))} WHERE {keys} AND ({' OR '.join(c for c, _ in found)})"
        )
    columns = [c.as_double() if c.name in mapping.checks else c for c in mapping.columns]
    reads = Reads(columns, p.staged(mapping))
    select_list = ", ".join(
        f"{_staged_read(reads, c) if c.name in mapping.checks else reads.read(c)} AS {c.name}" for c in mapping.columns
    )
    if mapping.documents:  # the document itself rides along, for documents.write_new
        select_list += f", raw AS {DOCUMENT}"
    return f"SELECT {select_list} FROM {reads.source(p.source(mapping))} WHERE {keys}"
