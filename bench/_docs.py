"""Write docs/performance.md from bench/results/*.json: `python -m bench._docs`.

The tables, commands, machine and targets come from the last run of each benchmark; the notes below say what
each figure means and, where a target is missed, why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .common import ORDER, REPO, RESULTS, markdown

TITLES = {
    "time-to-value": "Time to value under the real service's limits",
    "peer": "Summaries queryable: fitsync and strava-offline side by side",
    "fairness": "One app budget, many athletes: priority and turns",
    "api-calls": "API calls: backfill and incremental vs the minimum",
    "rate-budget": "Rate budget: share used, 429s, 1 and 4 processes",
    "many-hosts": "Many hosts on one PostgreSQL state store",
    "webhook-ack": "Webhook receiver: acknowledgement latency, nothing lost",
    "load": "Warehouse load: upsert throughput vs row-by-row",
    "query": "Trend queries at the 10-year scale",
    "coach": "A coach's warehouse: one athlete's reads among many",
    "streams": "Streams: load, bytes on disk, a season's power curve, memory",
    "demo": "`fitsync demo` and backfill memory",
    "freshness": "Freshness: athlete change → warehouse",
    "lake": "DuckLake: load, analysis views and maintenance against a DuckDB file",
}
NOTES_FILE = Path(__file__).with_name("_notes.md")


def notes() -> dict[str, str]:
    """Per-benchmark notes from bench/_notes.md: sections headed `## name`."""
    if not NOTES_FILE.exists():
        return {}
    out: dict[str, str] = {}
    name = None
    for line in NOTES_FILE.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            out[name] = ""
        elif name:
            out[name] += line + "\n"
    return {k: v.strip() for k, v in out.items()}


def _speed(machine: dict[str, Any]) -> str:
    """The run's speed reference, where it has one (bench/common.speed_reference)."""
    if "reference_python_ms" not in machine:
        return ""
    return f"; speed reference: Python {machine['reference_python_ms']} ms, DuckDB {machine['reference_duckdb_ms']} ms"


def _with_reference(results: dict[str, dict[str, Any]], names: list[str]) -> str:
    """Which of the recorded runs give a speed reference."""
    having = [n for n in names if "reference_python_ms" in results[n].get("machine", {})]
    if not having:
        return "; none of the runs below does"
    if len(having) == len(names):
        return "; every run below does"
    verb = "does" if len(having) == 1 else "do"
    return "; of the runs below, " + ", ".join(f"[{n}](#{n})" for n in having) + f" {verb}"


def main() -> None:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}
    names = [n for n in ORDER if n in results] + sorted(set(results) - set(ORDER))
    text = notes()
    newest = max(results.values(), key=lambda r: r["run_at"]) if results else {}
    machine = newest.get("machine", {})
    lines = [
        "# Performance",
        "",
        "Every claim fitsync makes about speed, API economy and reliability under load has a benchmark in `bench/`,",
        "run with one command, `python -m bench NAME` from the repository root (or `fitsync bench NAME`), with a",
        "baseline measured in the same run: machines are noisy, ratios hold better than absolute times. Each prints",
        "its tables and writes `.bench-out/NAME.json` (figures, parameters, machine, targets; `bench/results/`, which this page is made from, with `FITSYNC_BENCH_RECORD=1`). Options override",
        "the defaults (`python -m bench NAME --help`); `python -m bench all` runs them all in turn. This page is",
        "rebuilt from the JSON files with `python -m bench._docs` (notes in `bench/_notes.md`).",
        "",
        "Each benchmark's last recorded run names its machine and versions with its tables; the newest ran on "
        f"{machine.get('cpus')} CPUs ({machine.get('cpu')}), {machine.get('memory_gib')} GiB, "
        f"{machine.get('platform')}, Python {machine.get('python')}, DuckDB {machine.get('duckdb')}, "
        f"Polars {machine.get('polars')}. The 1-minute load average at the start of each run is given with its "
        "tables: other work on the machine slows absolute times, less so the ratios. So does the machine's own speed, "
        "which varies between runs on shared hosts: a run that records a speed reference gives with its tables two "
        "fixed single-thread workloads' times as it was saved (bench/common.speed_reference: a Python loop, a DuckDB "
        f"query; lower is faster){_with_reference(results, names)}.",
        "",
        "## Targets",
        "",
        "| benchmark | target | measured | met |",
        "|---|---|---|---|",
    ]
    for name in names:
        for t in results[name]["targets"]:
            lines.append(f"| [{name}](#{name}) | {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    if "summary" in text:
        lines += ["", text["summary"]]
    for name in names:
        r = results[name]
        lines += [
            "",
            f'<a id="{name}"></a>',
            f"## {TITLES.get(name, name)}",
            "",
            f"Command: `{r['command']}` — run {r['run_at']}, {r['seconds']} s, load average "
            f"{r['machine'].get('load_average_1m', (r['params'].get('load_average') or ['?'])[0])}; "
            f"{r['machine'].get('cpus')} CPUs ({r['machine'].get('cpu')}), DuckDB {r['machine'].get('duckdb')}, "
            f"Polars {r['machine'].get('polars')}{_speed(r['machine'])}.",
            "",
        ]
        if name in text:
            lines += [text[name], ""]
        lines.append(markdown(r["tables"]))
        lines += ["", "Targets:", ""]
        lines += [f"- {t['target']}: {t['measured']} — {'met' if t['met'] else '**not met**'}" for t in r["targets"]]
    path = REPO / "docs" / "performance.md"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
