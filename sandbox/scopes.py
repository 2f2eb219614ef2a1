"""OAuth scopes (spec §5.2): the names, what each implies, and how a request string is parsed."""

from __future__ import annotations

import re

SCOPES: dict[str, str] = {
    "read": "public segments, public routes, public profile data, public posts, public events, club feeds, leaderboards",
    "read_all": "private routes, private segments, private events",
    "profile:read_all": "all profile information, even when profile visibility is Followers or Only You",
    "profile:write": "update weight and FTP; star and unstar segments",
    "activity:read": "activities visible to Everyone and Followers, without privacy-zone data",
    "activity:read_all": "activity:read plus privacy-zone data and activities visible to Only You",
    "activity:write": "create manual activities and uploads; edit activities visible to the app according to its read level",
}

IMPLIES: dict[str, frozenset[str]] = {
    "read_all": frozenset({"read"}),
    "profile:read_all": frozenset({"read"}),
    "activity:read_all": frozenset({"activity:read"}),
}


def parse(text: str | None) -> list[str] | None:
    """Split a comma- or space-separated scope string; None if it names an unknown scope."""
    names = [n for n in re.split(r"[,\s]+", text or "") if n]
    if any(n not in SCOPES for n in names):
        return None
    return list(dict.fromkeys(names))


def effective(granted: str | list[str]) -> frozenset[str]:
    names = granted.split() if isinstance(granted, str) else granted
    out = set(names)
    for name in names:
        out |= IMPLIES.get(name, frozenset())
    return frozenset(out)


def render(names: list[str]) -> str:
    """Granted scopes as the token response shows them: space-delimited, in the canonical order."""
    return " ".join(n for n in SCOPES if n in names)
