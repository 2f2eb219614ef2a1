"""How a value refused as implausible (plausible.py) travels through a load: staged rows mark it, the load names it,
the merge keeps the stored value.

The ranges are checked on the staged rows (loads._plausible: a few ms a batch, where conditions in the staging SQL
took a third of its time); the names and values are read again, with `checked`, only for a batch with a refused
value.
"""

from __future__ import annotations

# The staged column marking a row with a refused value: true, NULL when it has none.
REJECTED = "rejected"


def checked(number: str, column: str, low: float, high: float) -> tuple[str, str]:
    """(a condition true where `number`, a column's value read as a double, lies outside [low, high] or is not finite;
    the text `column=value` there). Read as a double, an overflow of the column's type is out of range, never NULL
    without a word."""
    fits = f"({number} BETWEEN {low!r} AND {high!r})"
    return f"NOT coalesce({fits}, true)", f"CASE WHEN NOT {fits} THEN '{column}=' || {number} END"


def refused_text(texts: list[str]) -> str:
    return f"concat_ws('; ', {', '.join(texts)})"


def rejects(column: str, rows: str = "excluded") -> str:
    """Whether a staged row's value of `column` may be a refused one: the row has one, and this value is NULL. The
    stored value is then kept (a value the answer really left out, in a row already refusing one, is kept too)."""
    return f"(coalesce({rows}.{REJECTED}, false) AND {rows}.{column} IS NULL)"
