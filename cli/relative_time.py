"""Times as a person reads them at a glance: "3 h ago", "in 12 min", with the local clock time when that helps.

The JSON outputs keep ISO 8601 in UTC, for scripts; the tables show this.
"""

from __future__ import annotations

import datetime as dt
import time

# (below this many seconds, divide by, unit)
STEPS = ((90, 1, "s"), (90 * 60, 60, "min"), (48 * 3600, 3600, "h"), (float("inf"), 86400, "d"))


def ago(when: str | float, now: float | None = None) -> str:
    """`when` (ISO 8601 or epoch seconds) relative to now: "just now", "5 min ago", "in 3 h"; past a day, with the
    local date and time too ("3 d ago, Mon 24 Nov 06:50")."""
    moment = dt.datetime.fromisoformat(when).timestamp() if isinstance(when, str) else float(when)
    delta = (time.time() if now is None else now) - moment
    if abs(delta) < 5:
        return "just now"
    span = abs(delta)
    _, unit_seconds, unit = next(step for step in STEPS if span < step[0])
    amount = f"{span / unit_seconds:.0f} {unit}"
    text = f"{amount} ago" if delta > 0 else f"in {amount}"
    if span >= 86400:
        text += ", " + time.strftime("%a %d %b %H:%M", time.localtime(moment))
    return text


def iso(epoch: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC, for the JSON outputs (None stays None)."""
    return None if epoch is None else dt.datetime.fromtimestamp(float(epoch), dt.UTC).isoformat(timespec="seconds")
