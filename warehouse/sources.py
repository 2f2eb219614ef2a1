"""Where a mapping's rows come from, as data: the batch itself, one row per element of one of its documents' arrays,
one row per distinct member of those elements, or a query of its own over the batch.

A load stages the batch (staging.py) with each document's arrays read out of its one parse: `arr__<path>` columns (or
typed members of `doc`), and `parent_id`, the document's id. The `sql` of a source is its plain form over the
`arr__<path>` columns; staging.Plan.source gives the form over the typed members where the batch has them.
"""

from __future__ import annotations

from dataclasses import dataclass

# The arrays of a batch document that mappings unnest.
ARRAY_PATHS = ("splits_metric", "laps", "segment_efforts", "zones")
# The source column holding each element of an unnested array.
ITEM = "item"


def array_column(path: str) -> str:
    return f"arr__{path}"


def listed_column(path: str) -> str:
    """The staged flag saying a document lists that array (its children are then replaced by what it lists)."""
    return f"listed__{path}"


def unnest_select(path: str) -> str:
    """Rows of (batch columns…, item, idx) for each element of an array, with its 1-based position."""
    assert path in ARRAY_PATHS, path
    arr = array_column(path)
    return f"SELECT *, unnest({arr}) AS {ITEM}, generate_subscripts({arr}, 1) AS idx FROM batch WHERE {arr} IS NOT NULL"


@dataclass(frozen=True)
class Rows:
    """Rows of an SQL query over the batch (the batch itself by default); `arrays`: those of the batch it unnests."""

    sql: str = "batch"
    arrays: tuple[str, ...] = ()


@dataclass(frozen=True)
class Elements:
    """One row per element of an array of the batch's documents: the batch's columns, `item` and `idx`."""

    array: str

    @property
    def arrays(self) -> tuple[str, ...]:
        return (self.array,)

    @property
    def sql(self) -> str:
        return f"({unnest_select(self.array)})"


@dataclass(frozen=True)
class Members:
    """One row per distinct id of a member of an array's elements (the segment inside each effort), that member's
    JSON in column `name`; the columns of such rows read the member and the batch's context, not the document."""

    array: str
    member: str
    name: str

    @property
    def arrays(self) -> tuple[str, ...]:
        return (self.array,)

    @property
    def sql(self) -> str:
        return (
            f"(SELECT DISTINCT ON ({self.name}->>'$.id') * FROM (SELECT *, json_extract({ITEM}, '$.{self.member}') "
            f"AS {self.name} FROM ({unnest_select(self.array)})))"
        )


Source = Rows | Elements | Members
BATCH = Rows()
