"""The scopes fitsync asks for, and what data is missing when the athlete unticked one."""

from __future__ import annotations

import re

NEEDED: dict[str, str] = {
    "read": "public profile, public segments and leaderboards",
    "read_all": "private segments and your own stats on segments (PR times, effort counts)",
    "profile:read_all": "the full profile: weight, FTP, gear, and heart-rate and power zones",
    "activity:read_all": "activities (Only You ones too), with laps, splits, segment efforts and zones",
}


# Every scope the service knows (the spec's operations and authorization page): asking for another is a typo.
KNOWN = (
    "read",
    "read_all",
    "profile:read_all",
    "profile:write",
    "activity:read",
    "activity:read_all",
    "activity:write",
)


def parse(granted: str) -> set[str]:
    names = {n for n in re.split(r"[,\s]+", granted or "") if n}
    if "activity:read_all" in names:
        names.add("activity:read")
    if "read_all" in names or "profile:read_all" in names:
        names.add("read")
    return names


def missing_report(granted: str, wanted: list[str] | None = None) -> list[str]:
    """One line per needed scope the athlete did not grant, saying what will be missing."""
    names = parse(granted)
    lines = []
    for scope in wanted or list(NEEDED):
        if scope in names:
            continue
        if scope == "activity:read_all" and "activity:read" in names:
            lines.append("activity:read_all not granted: Only You activities will be missing (others are synced)")
        else:
            lines.append(f"{scope} not granted: missing {NEEDED.get(scope, scope)}")
    return lines
