"""SQL written once with SQLite's `?` placeholders, made psycopg's by a tokenizer that knows where SQL text is.

A placeholder is a `?` in SQL text only: one inside a string literal, a quoted identifier, a dollar-quoted string
or a comment stays as it is. psycopg reads `%` anywhere in a statement given parameters (literals included), so
every `%` is doubled. Tested with a `'?'` literal in tests/client/test_state_store.py.
"""

from __future__ import annotations

import functools
import re

# Each alternative is one token; the first that matches at a position wins. Quoted text and comments are kept whole.
_TOKEN = re.compile(
    r"""
      (?P<quoted> '(?:[^']|'')*'              # a string literal ('' is a quote inside it)
                | "(?:[^"]|"")*"              # a quoted identifier
                | \$(?P<tag>[A-Za-z_]\w*|)\$.*?\$(?P=tag)\$  # a dollar-quoted string
                | --[^\n]*                    # a comment to the end of the line
                | /\*.*?\*/ )                 # a block comment
    | (?P<open> ['"] | /\* )                  # an opening that never closes
    | (?P<mark> \? )
    | (?P<percent> % )
    """,
    re.VERBOSE | re.DOTALL,
)


@functools.lru_cache(maxsize=1024)
def to_psycopg(sql: str) -> str:
    """`sql` with its `?` placeholders as psycopg's `%s` and every `%` doubled."""

    def token(match: re.Match[str]) -> str:
        if match["open"]:
            raise ValueError(f"unterminated quote or comment at offset {match.start()} of a state-store statement")
        if match["mark"]:
            return "%s"
        return match.group(0).replace("%", "%%")

    return _TOKEN.sub(token, sql)
