"""The end of `fitsync sync`: what each athlete's run did, as counted, its verdict, and the exit code that follows.

Counted means per asset whose table the rows are for: the details step fetches each activity's zones right after
its detail (sync/details.py), so those calls and zones show under activity_zones, not as details. A verdict is
"ok" only when nothing is left: "partial" when the rate budget left work for a later run, "left out" when part of
what the service sent stayed out of the warehouse, "failed" with the failed steps only; an athlete another process
or host is syncing is "busy", said on its own line and no reason for a non-zero exit (it is being synced).
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from fitsync.pipelines.sync_runner import SyncOutcome

# Exit codes (documented in `fitsync sync --help` and the README), worst first: the first verdict present decides.
EXIT_CODES = (("failed", 1), ("left out", 4), ("partial", 3))
STYLES = {"ok": "green", "nothing new": "green", "busy": "cyan", "partial": "yellow", "left out": "yellow"}

# Calls to an endpoint made by one step for another asset's table: counted under that asset.
ENDPOINT_ASSET = {"GET /activities/{id}/zones": "activity_zones"}
# Counted figures a step's metadata holds → the name shown; (step, figure) pairs that belong to another asset.
FIGURES = {
    "listed": "listed",
    "new": "new",
    "changed": "changed",
    "reconciled_deletions": "deleted",
    "fetched": "fetched",
    "not_found": "not_found",
    "remaining": "remaining",
    "queued": "queued",
    "starred": "starred",
    "efforts": "efforts",
    "segments": "segments",
    "batches": "batches",
    "implausible_rows": "implausible",
}
MOVED_FIGURES = {("activity_details", "zones_fetched"): ("activity_zones", "fetched")}
ONE_DOCUMENT = {"athlete", "athlete_stats", "athlete_zones"}  # one call, one document when not skipped
# {table: n} figures: their sum under this name, and each table's count (a load writes the profile, stats, zones and
# gear along with the activities: "rows=90" for 60 activities says nothing without them)
SUMMED = {"rows_written": "rows", "rows_left_out": "rows_left_out"}
CHECK = "nothing-new check"  # the two calls before a run (pipelines/nothing_new.py), a row of the table
SHOWN_AS = {
    "rows": "rows written (new or changed)",
    "rows_left_out": "rows left out",
    "implausible": "rows with implausible values (the values not stored)",
}


@dataclass
class AssetLine:
    asset: str
    calls: int = 0
    counted: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    endpoints: dict[str, int] = field(default_factory=dict)
    by_table: dict[str, dict[str, int]] = field(default_factory=dict)  # a SUMMED figure's count per table
    skipped: bool = False  # not due (its cadence) or not asked for: shown with --verbose only

    @property
    def did_something(self) -> bool:
        return bool(self.calls or any(self.counted.values()) or (self.notes and not self.skipped))


@dataclass
class AthleteSummary:
    athlete_id: int
    verdict: str
    calls: int = 0
    seconds: float | None = None
    assets: list[AssetLine] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)  # {"step", "error"}: the failed steps only
    lines: list[str] = field(default_factory=list)  # what the user is told beyond the table

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def nothing_new(athlete_id: int, calls: int, seconds: float, why: str) -> AthleteSummary:
    return AthleteSummary(athlete_id, "nothing new", calls, seconds, lines=[why])


def budget_spent(athlete_id: int, calls: int, seconds: float, until: float) -> AthleteSummary:
    """The budget is spent past --max-wait before anything could be asked: no run, work left for later (partial)."""
    when = time.strftime("%H:%M %Z", time.localtime(until))  # a log is read elsewhere, later: the zone with it
    return AthleteSummary(
        athlete_id,
        "partial",
        calls,
        seconds,
        lines=[
            f"athlete {athlete_id}: the rate budget is spent until {when}, longer than --max-wait: nothing done; "
            "run `fitsync sync` again then (or raise --max-wait to wait for it)"
        ],
    )


def unreachable(athlete_id: int, calls: int, seconds: float, message: str) -> AthleteSummary:
    """The service did not answer the check before any run: failed, no run started."""
    return refused_before_run(athlete_id, CHECK, f"{message} (no run was started)", calls, seconds)


def needs_reauth(athlete_id: int, reason: str | None, calls: int = 0, seconds: float | None = None) -> AthleteSummary:
    """An athlete whose refresh token the service refused (revoked, replaced; found before this sync or by its
    check): no run can sync it until the athlete grants access again, which only a person can do. Failed, and said
    on every sync until then."""
    why = f": {reason}" if reason else ""
    message = (
        f"needs re-authorization (the service refused its refresh token{why}), so no run was started: run "
        f"`fitsync connect` as athlete {athlete_id} (or `fitsync disconnect {athlete_id}` to stop syncing it)"
    )
    return refused_before_run(athlete_id, "tokens", message, calls, seconds)


def refused_before_run(
    athlete_id: int, step: str, message: str, calls: int = 0, seconds: float | None = None
) -> AthleteSummary:
    """Failed before a run: what stopped it (`step`) and the fix, said once."""
    return AthleteSummary(
        athlete_id,
        "failed",
        calls,
        seconds,
        failures=[{"step": step, "error": message}],
        lines=[f"athlete {athlete_id}: {message}"],
    )


def add_check(summary: AthleteSummary, calls: int, why: str) -> None:
    """The nothing-new check's calls before the run, counted in its own row: the total is every call of the sync."""
    if calls:
        summary.assets.insert(0, AssetLine(CHECK, calls, notes=[f"then a run: {why}"]))
        summary.calls += calls


def from_outcome(outcome: SyncOutcome, athlete_id: int, seconds: float) -> AthleteSummary:
    """The athlete's run, counted per asset, with its verdict."""
    if outcome.busy:
        return AthleteSummary(athlete_id, "busy", seconds=seconds, lines=[outcome.busy])
    assets = _assets(outcome.metadata)
    summary = AthleteSummary(athlete_id, "ok", sum(a.calls for a in assets.values()), seconds, list(assets.values()))
    summary.failures = [{"step": step, "error": _unnamed(athlete_id, error)} for step, error in outcome.failures]
    unreported = (outcome.calls or 0) - summary.calls  # a failed step leaves no metadata: its calls, retries too
    if outcome.failures and unreported > 0:
        steps = ", ".join(dict.fromkeys(step for step, _ in outcome.failures))
        summary.assets.append(AssetLine(steps, unreported, notes=["failed: its calls, retries included"]))
        summary.calls += unreported
    if outcome.failures:  # the run's error line again, each step's message without the athlete its line names
        summary.lines.append(f"athlete {athlete_id}: " + _by_message(summary.failures))
    elif outcome.error:
        summary.lines.append(named_once(athlete_id, outcome.error))
    summary.lines += [named_once(athlete_id, line) for line in outcome.left_out()]
    early = outcome.stopped_early()
    if early:
        summary.lines.append(
            named_once(
                athlete_id,
                f"athlete {athlete_id}: stopped early, {early[0]}; `fitsync sync` continues where this stopped",
            )
        )
    summary.verdict = (
        "failed" if not outcome.success else "left out" if outcome.left_out() else "partial" if early else "ok"
    )
    return summary


def _unnamed(athlete_id: int, text: str) -> str:
    """A step's message without the "athlete N: " it may begin with (the line it goes in names the athlete)."""
    return text.removeprefix(f"athlete {athlete_id}: ")


def named_once(athlete_id: int, line: str) -> str:
    """The line beginning "athlete N: " and naming the athlete there only: the messages of steps and loads that it
    joins begin with it too ("athlete 7: activities: athlete 7: …" becomes "athlete 7: activities: …")."""
    who = f"athlete {athlete_id}"
    body = re.sub(rf"(?<=[:;,] ){re.escape(who)}: ", "", line.removeprefix(f"{who}: "))
    return body if body.startswith(f"{who} ") else f"{who}: {body}"


def _by_message(failures: list[dict[str, str]]) -> str:
    """One part per distinct message, naming the steps that failed with it (as the run's own error line)."""
    steps: dict[str, list[str]] = {}
    for failure in failures:
        steps.setdefault(failure["error"], []).append(failure["step"])
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in steps.items())


def _assets(metadata: dict[str, dict[str, Any]]) -> dict[str, AssetLine]:
    from fitsync.resources.run import ENDPOINT_CALLS  # after a run only: it imports Dagster

    lines = {asset: AssetLine(asset) for asset in sorted(metadata)}
    for asset, meta in sorted(metadata.items()):
        line = lines[asset]
        endpoints = {str(k): int(v) for k, v in (meta.get(ENDPOINT_CALLS) or {}).items()}
        moved = 0
        for name, calls in endpoints.items():
            if (owner := ENDPOINT_ASSET.get(name, asset)) != asset:
                target = lines.setdefault(owner, AssetLine(owner))
                target.calls += calls
                target.endpoints[name] = target.endpoints.get(name, 0) + calls
                moved += calls
            else:
                line.endpoints[name] = line.endpoints.get(name, 0) + calls
        line.calls += int(meta.get("api_calls") or 0) - moved
        for key, value in meta.items():
            if (asset, key) in MOVED_FIGURES:
                owner, shown = MOVED_FIGURES[(asset, key)]
                target = lines.setdefault(owner, AssetLine(owner))
                target.counted[shown] = target.counted.get(shown, 0) + int(value)
            elif key in FIGURES and isinstance(value, int) and not isinstance(value, bool):
                line.counted[FIGURES[key]] = line.counted.get(FIGURES[key], 0) + value
            elif key in SUMMED and isinstance(value, dict):
                line.counted[SUMMED[key]] = sum(int(n) for n in value.values())
                line.by_table[SUMMED[key]] = {str(t): int(n) for t, n in value.items() if int(n)}
        if asset in ONE_DOCUMENT and meta.get("skipped") is False:
            line.counted["fetched"] = 1
        line.skipped = meta.get("skipped") is True
        if line.skipped and not meta.get("notes"):
            line.notes.append("skipped")
        line.notes += [n.removeprefix("- ") for n in str(meta.get("notes") or "").splitlines() if n.strip()]
        if meta.get("mode"):  # and why a listing went all the way back (a log read the next morning asks)
            why = f" because {meta['full_because']}" if meta.get("full_because") else ""
            line.notes.insert(0, f"{meta['mode']}{why}")
    return dict(sorted(lines.items()))


def exit_code(summaries: list[AthleteSummary]) -> int:
    verdicts = {s.verdict for s in summaries}
    return next((code for verdict, code in EXIT_CODES if verdict in verdicts), 0)


def render(out: Console, summary: AthleteSummary, *, verbose: bool) -> None:
    """The athlete's table: the failed steps when it failed, else what each asset did (those that did nothing only
    with --verbose), then its lines."""
    style = STYLES.get(summary.verdict, "red")
    if summary.verdict in ("nothing new", "busy"):
        for line in summary.lines:
            out.print(Text(line, style=style if summary.verdict == "busy" else ""), soft_wrap=True)
        return
    verdict = summary.verdict if summary.verdict == "ok" else summary.verdict.upper()
    title = Text(f"athlete {summary.athlete_id}: {verdict}", style=style)
    if summary.calls or summary.seconds is not None:  # a failure before any call or run has no figures to give
        seconds = f" in {summary.seconds:.1f} s" if summary.seconds is not None else ""
        title.append(f" ({summary.calls} call{'' if summary.calls == 1 else 's'}{seconds})", style="")
    if summary.verdict == "failed":
        _failures(out, summary, title)
        if verbose and summary.assets:  # and what each step did before it, as for any other run
            _print_assets(out, summary, Text("what each asset did"), verbose)
    else:
        _print_assets(out, summary, title, verbose)
    for line in summary.lines[1:] if summary.verdict == "failed" else summary.lines:
        out.print(Text(line, style="yellow"), soft_wrap=True)


def _print_assets(out: Console, summary: AthleteSummary, title: Text, verbose: bool) -> None:
    """What each asset did: calls, figures, notes (those that did nothing only with --verbose). A note several assets
    share (the spent budget each step met in turn) is said once, under the table, naming them."""
    shown = [a for a in summary.assets if verbose or a.did_something]
    sharing: dict[str, list[str]] = {}
    for asset in shown:
        for note in dict.fromkeys(asset.notes):
            sharing.setdefault(note, []).append(asset.asset)
    shared = {note: names for note, names in sharing.items() if len(names) > 1}
    out.print(title, soft_wrap=True)  # a line of its own: a table's title is padded to the table's width
    rows = []
    for asset in shown:
        notes = "; ".join(n if n not in shared else "see below" for n in dict.fromkeys(asset.notes))
        if verbose and asset.endpoints:
            notes += ("; " if notes else "") + ", ".join(f"{e} ×{n}" for e, n in sorted(asset.endpoints.items()))
        rows.append((asset.asset, str(asset.calls), _counted(asset, verbose), notes))
    if rows and out.is_terminal:
        table = Table()
        table.add_column("asset")
        table.add_column("calls", justify="right")
        table.add_column("counted")
        table.add_column("notes")
        for row in rows:
            table.add_row(*row)
        out.print(table)
    for name, calls, counted, notes in rows if not out.is_terminal else ():
        # a log (cron's mail, a pager): a line per asset, as long as what it says; a table pads every row to its
        # widest (200 characters and more), which wraps each row into three in an 80-column mail
        said = [f"{calls} call{'' if calls == '1' else 's'}", counted, notes]
        out.print(Text(f"  {name}: {'; '.join(part for part in said if part)}"), soft_wrap=True)
    for note, names in shared.items():  # whole: a line of its own is never cut to a cell's width
        out.print(Text(f"{', '.join(names)}: {note}"), soft_wrap=True)


def _counted(asset: AssetLine, verbose: bool) -> str:
    """The asset's figures, `name=n`; a per-table figure with its tables, largest first: `rows written (new or
    changed)=81: activities 60, athlete_stats_totals 9, …`."""
    parts = []
    for name, value in asset.counted.items():
        if not (value or verbose):
            continue
        tables = sorted(asset.by_table.get(name, {}).items(), key=lambda t: (-t[1], t[0]))
        detail = f": {', '.join(f'{t} {n}' for t, n in tables)}" if tables else ""
        parts.append(f"{SHOWN_AS.get(name, name)}={value}{detail}")
    return "; ".join(parts) if any(asset.by_table.values()) else ", ".join(parts)


def _failures(out: Console, summary: AthleteSummary, title: Text) -> None:
    """The title, then the run's error (lines[0]): one line per distinct error naming the steps that failed with it,
    whole (the command it names is copied from it, so never wrapped in a table cell), and said once."""
    out.print(title, soft_wrap=True)
    for line in summary.lines[:1]:
        out.print(Text(line, style="red"), soft_wrap=True)
