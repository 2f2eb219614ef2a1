"""A query result on screen the way the DuckDB shell shows it: what does not fit is elided and counted, never
squeezed unreadable; numbers right-aligned; NULL said; a line mode for rows too wide for any screen."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# Widest a column asks to be when the screen is short (its header if longer); spare room widens it again.
NATURAL_CAP = 24
# What one column costs beside its text: a space each side and its border.
BORDER = 3
NUMERIC = re.compile(r"^(U?(TINY|SMALL|HUGE|BIG)?INT(EGER)?|U?HUGEINT|FLOAT|DOUBLE|REAL|DECIMAL.*|INTEGER)$")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    full: int  # widest of name, type and the values shown

    @property
    def numeric(self) -> bool:
        return bool(NUMERIC.match(self.type.upper()))

    @property
    def wanted(self) -> int:
        """The width a column asks for when the screen is short (longer values end in "…")."""
        return min(self.full, max(NATURAL_CAP, len(self.name)))


def cell(value: Any, kind: Any = None) -> Text:
    return Text("NULL", style="dim") if value is None else Text(text(value, kind))


def text(value: Any, kind: Any = None) -> str:
    """A value as the DuckDB shell writes it: booleans `true`/`false`, also inside lists and structs. DuckDB hands a
    MAP to Python as a dict, like a STRUCT: `kind` (the column's DuckDB type) tells them apart, so a map reads
    `{key: value, …}` and a struct `{'field': value, …}`."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(text(v, _child(kind, "child")) for v in value) + "]"
    if isinstance(value, dict) and _id(kind) == "map":
        key, item = _child(kind, "key"), _child(kind, "value")
        return "{" + ", ".join(f"{text(k, key)}: {text(v, item)}" for k, v in value.items()) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"'{k}': " + text(v, _child(kind, str(k))) for k, v in value.items()) + "}"
    return str(value)


def _id(kind: Any) -> str | None:
    """The DuckDB type's kind ("map", "struct", "list", …); None for a type given as text or not at all."""
    return getattr(kind, "id", None)


def _child(kind: Any, name: str) -> Any:
    """The type of a nested type's part: a list's or array's `child`, a map's `key` and `value`, a struct's field."""
    try:
        return dict(kind.children).get(name) if _id(kind) in ("list", "array", "map", "struct") else None
    except (AttributeError, TypeError, ValueError):
        return None


def describe(description: Sequence[Sequence[Any]], rows: Sequence[Sequence[Any]]) -> list[Column]:
    columns = []
    for i, d in enumerate(description):
        name, kind = str(d[0]), str(d[1]).lower()
        columns.append(Column(name, kind, max([len(name), len(kind), *(len(cell(r[i], d[1])) for r in rows)])))
    return columns


def layout(columns: Sequence[Column], width: int) -> dict[int, int]:
    """{column index: width} for the columns that fit the screen, taken from both ends inwards as the DuckDB shell
    does (the first and last columns are usually the keys and the newest additions); the room left over widens the
    shown columns towards their full width, left to right."""
    room = width - 1  # the left border
    if sum(c.full + BORDER for c in columns) <= room:
        return {i: c.full for i, c in enumerate(columns)}
    if sum(c.wanted + BORDER for c in columns) <= room:
        shown = list(range(len(columns)))
    else:
        room -= 1 + BORDER  # the "…" column standing for the columns not shown
        shown, left, right, from_left, blocked = [], 0, len(columns) - 1, True, 0
        while left <= right and blocked < 2:  # until neither end's next column fits
            index = left if from_left else right
            fits = columns[index].wanted + BORDER <= room - sum(columns[i].wanted + BORDER for i in shown)
            if fits or not shown:
                shown.append(index)
                left, right = (left + 1, right) if from_left else (left, right - 1)
                blocked = 0
            else:
                blocked += 1
            from_left = not from_left
        shown.sort()
    widths = {i: columns[i].wanted for i in shown}
    spare = room - sum(w + BORDER for w in widths.values())
    for i in shown:
        extra = max(0, min(spare, columns[i].full - widths[i]))
        widths[i] += extra
        spare -= extra
    return widths


def show_table(
    console: Console, description: Sequence[Sequence[Any]], rows: Sequence[Sequence[Any]], wrap: bool = False
) -> str | None:
    """Print the rows as a box (text wrapped instead of cut with `wrap`); answers the note on elided columns, if any."""
    columns = describe(description, rows)
    widths = layout(columns, console.width)
    shown = sorted(widths)
    gap = next((p for p, (a, b) in enumerate(zip(shown, shown[1:])) if b != a + 1), None)
    table = Table(show_lines=False, header_style="bold")
    for position, index in enumerate(shown):
        column = columns[index]
        folds = wrap and not column.numeric
        table.add_column(
            Text.assemble(column.name, "\n", (column.type, "dim")),
            justify="right" if column.numeric else "left",
            width=widths[index],
            no_wrap=not folds,
            overflow="fold" if folds else "ellipsis",
        )
        if position == gap:
            table.add_column("…", width=1, no_wrap=True)
    for row in rows:
        cells = [cell(row[i], description[i][1]) for i in shown]
        if gap is not None:
            cells.insert(gap + 1, Text("…", style="dim"))
        table.add_row(*cells)
    console.print(table)
    if len(shown) < len(columns):
        return f"{len(columns)} columns ({len(shown)} shown): --mode line shows every column of each row"
    return None


def show_lines(console: Console, description: Sequence[Sequence[Any]], rows: Sequence[Sequence[Any]]) -> None:
    """Each row as `column = value` lines, a blank line between rows: for rows wider than any screen."""
    names = [str(d[0]) for d in description]
    width = max(map(len, names), default=0)
    for number, row in enumerate(rows):
        if number:
            console.print()
        for name, d, value in zip(names, description, row):
            console.print(Text.assemble((name.rjust(width), "bold"), " = ", cell(value, d[1])), soft_wrap=True)
