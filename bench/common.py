"""What the benchmarks share: a sandbox with an app and connected athletes, configs for fitsync processes,
figures (percentiles, memory), the machine's description, and the output (a rich table and a JSON file)."""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import json
import math
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.sandbox.server import SeedOptions, ServerOptions, ServerThread

# The benchmarks in the order `all` runs them and docs/performance.md shows them (others follow).
ORDER = [
    "time-to-value",
    "peer",
    "fairness",
    "api-calls",
    "rate-budget",
    "many-hosts",
    "webhook-ack",
    "load",
    "query",
    "coach",
    "lake",
    "streams",
    "demo",
    "freshness",
]
RESULTS = Path(__file__).resolve().parent / "results"  # tracked: the figures docs/performance.md shows
SCRATCH = Path(__file__).resolve().parents[1] / ".bench-out"  # untracked: where an ordinary run writes


def results_dir() -> Path:
    """A run rewrites the tracked figures only when asked (FITSYNC_BENCH_RECORD=1, when refreshing the docs)."""
    return RESULTS if os.environ.get("FITSYNC_BENCH_RECORD") == "1" else SCRATCH


REPO = Path(__file__).resolve().parent.parent
# A budget no benchmark reaches unless it means to (the defaults are 100 reads per 15 minutes).
GENEROUS_LIMITS = {
    "read_limit_short": 1_000_000,
    "read_limit_long": 10_000_000,
    "overall_limit_short": 1_000_000,
    "overall_limit_long": 10_000_000,
}


def scratch_folder(prefix: str, parent: Path | None = None) -> Path:
    """A new temporary folder, removed when the benchmark's process exits: its homes, warehouses and sandboxes take
    tens of megabytes to gigabytes each, and a benchmark that stops early must not leave them behind either."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


out = Console(width=None if sys.stdout.isatty() else 150)


# ---------------------------------------------------------------------------------------------- sandbox


@dataclass
class Sandbox:
    """A sandbox on a free loopback port, with the console (test hooks) at hand."""

    server: ServerThread
    console: httpx.Client
    stack: ExitStack = field(default_factory=ExitStack)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def api_url(self) -> str:
        return self.server.api_url

    def settings(self, **changes: Any) -> dict[str, Any]:
        response = self.console.put("/settings", json=changes)
        response.raise_for_status()
        return response.json()

    def counters(self) -> dict[str, int]:
        return self.console.get("/counters").json()

    def reset_counters(self) -> None:
        self.console.delete("/counters").raise_for_status()

    def athletes(self) -> list[dict[str, Any]]:
        return self.console.get("/athletes").json()

    def new_app(self, name: str = "fitsync bench") -> dict[str, Any]:
        response = self.console.post("/apps", json={"name": name, "callback_domain": "localhost"})
        response.raise_for_status()
        return response.json()

    def config(self, home: Path, app: dict[str, Any], **overrides: Any) -> Config:
        return Config.load(
            {},
            home=home,
            base_url=self.api_url,
            auth_url=self.base_url,
            client_id=app["client_id"],
            client_secret=Secret(app["client_secret"]),
            **overrides,
        )

    def connected_home(self, athlete_id: int, prefix: str) -> Config:
        """A fresh FITSYNC_HOME (temporary folder) with its own app, the athlete connected to it."""
        config = self.config(scratch_folder(prefix), self.new_app())
        self.connect(config, athlete_id)
        return config

    def connect(self, config: Config, athlete_id: int) -> int:
        """The athlete consents on the sandbox's OAuth pages; fitsync exchanges the code and stores the tokens."""
        from fitsync.cli.demo import connect_athlete

        with FitsyncClient(config) as client:
            return connect_athlete(config, client, self.base_url, athlete_id)

    def close(self) -> None:
        self.console.close()
        self.server.stop()


def start_sandbox(
    athletes: int = 1,
    activities: int = 40,
    *,
    seed: int = 42,
    db: str = ":memory:",
    settings: dict[str, Any] | None = None,
) -> Sandbox:
    options = ServerOptions(
        db=db,
        port=0,
        settings={**GENEROUS_LIMITS, **(settings or {})},
        seed=SeedOptions(seed=seed, athletes=athletes, activities_per_athlete=activities),
    )
    server = ServerThread(options).start()
    console = httpx.Client(
        base_url=server.base_url + "/sandbox", timeout=60, headers={"X-Sandbox-Console-Key": server.console_key}
    )
    return Sandbox(server, console)


def clean_env() -> dict[str, str]:
    """This process's environment without any FITSYNC_* or DAGSTER_HOME (a child must not use someone's home)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FITSYNC_", "DAGSTER_HOME"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def env_for(config: Config, **extra: str) -> dict[str, str]:
    """FITSYNC_* variables that make a fitsync process use `config` (nothing inherited from the caller)."""
    env = clean_env()
    env.update(config.environment(), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def quiet_dagster() -> None:
    import logging
    import warnings

    logging.getLogger("dagster").setLevel(logging.WARNING)
    logging.disable(logging.INFO)  # the sensor's context logger prints each tick otherwise
    warnings.filterwarnings("ignore")


# ---------------------------------------------------------------------------------------------- figures


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def mib(kib: float) -> float:
    return kib / 1024


def rss_mib(pid: int) -> float | None:
    """Current resident memory of a process (Linux), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024
    except (OSError, StopIteration, ValueError):
        return None


# A small launcher between the benchmark and the measured command. Linux keeps a process's peak RSS across
# exec, and subprocess starts children with vfork, so a command started straight from this process reports at
# least this process's own peak (after the `load` benchmark: 2.8 GiB for every child). The launcher is small;
# it forks the command (a fresh peak), reports its pid, reaps it with wait4 and reports its ru_maxrss.
_LAUNCHER = """
import json, os, sys
report = sys.argv[1]
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
with open(report + ".pid.partial", "w") as fh:  # renamed whole: the benchmark never reads a pid half written
    fh.write(str(pid))
os.rename(report + ".pid.partial", report + ".pid")
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as fh:
    json.dump({"status": status, "maxrss_kib": usage.ru_maxrss}, fh)
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""


def run_measured(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 900.0,
    capture: bool = True,
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run a command in a child process; its wall time and peak RSS (the kernel's ru_maxrss for the command,
    from wait4 in a small launcher: see _LAUNCHER). `on_start` gets the command's pid."""
    work = scratch_folder("bench-measured-")
    report = work / "rusage.json"
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(report), *argv],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
        text=True,
    )
    chunks: list[str] = []
    reader = None
    if capture:
        assert proc.stdout is not None
        reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()
    if on_start is not None:
        pid_file = Path(str(report) + ".pid")
        while not pid_file.exists() and proc.poll() is None:
            time.sleep(0.005)
        if pid_file.exists():
            on_start(int(pid_file.read_text()))
    try:
        proc.wait(timeout=max(0.0, started + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()  # the launcher; then the command, whose pid it reported
        if Path(str(report) + ".pid").exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(Path(str(report) + ".pid").read_text()), signal.SIGKILL)
        proc.wait()
    seconds = time.monotonic() - started
    if reader is not None:
        reader.join(timeout=10)
    usage = json.loads(report.read_text()) if report.exists() else {"maxrss_kib": float("nan")}
    shutil.rmtree(work, ignore_errors=True)
    return {
        "seconds": seconds,
        "maxrss_mib": mib(usage["maxrss_kib"]),
        "returncode": proc.returncode,
        "output": "".join(chunks),
    }


# ---------------------------------------------------------------------------------------------- output


def machine() -> dict[str, Any]:
    import duckdb
    import polars

    mem = None
    try:
        with open("/proc/meminfo") as fh:
            mem = round(int(fh.readline().split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": mem,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "polars": polars.__version__,
        **speed_reference(),
    }


def speed_reference() -> dict[str, float]:
    """Two fixed single-thread workloads timed as the run is saved (best of 3, ms: lower is faster): the same
    machine's speed varies between runs (≈ 1.5× on shared hosts), which a recorded figure alone does not show."""
    import duckdb

    def best(work: Callable[[], object]) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        return round(min(times) * 1000, 1)

    def python_loop() -> int:
        total = 0
        for i in range(2_000_000):
            total += i
        return total

    with duckdb.connect(config={"threads": 1}) as conn:
        query = "SELECT sum(hash(i) % 1000) FROM range(10000000) t(i)"
        return {
            "reference_python_ms": best(python_loop),
            "reference_duckdb_ms": best(lambda: conn.execute(query).fetchall()),
        }


def command_line(name: str) -> str:
    """How this benchmark was started, as someone would type it again."""
    args = sys.argv[1:]
    args = args[args.index(name) + 1 :] if name in args else []  # `all` runs each with its defaults
    return "python -m bench " + " ".join([name, *map(shlex.quote, args)])


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None
) -> dict[str, Any]:
    """Print a table and return it as data (for the JSON file and docs)."""
    rows = [[_cell(v) for v in row] for row in rows]
    t = Table(title=title, caption=caption, title_justify="left")
    for i, column in enumerate(columns):
        t.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*row)
    out.print(t)
    return {"title": title, "columns": list(columns), "rows": rows, "caption": caption}


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(tables: Sequence[dict[str, Any]]) -> str:
    """The tables as GitHub Markdown (docs/performance.md is written from these)."""
    parts = []
    for t in tables:
        lines = [
            f"**{t['title']}**",
            "",
            "| " + " | ".join(t["columns"]) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(t["columns"]) - 1)) + "|",
        ]
        lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in t["rows"]]
        if t.get("caption"):
            lines += ["", t["caption"]]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def save(
    name: str,
    *,
    params: dict[str, Any],
    tables: Sequence[dict[str, Any]],
    targets: Sequence[dict[str, Any]],
    data: dict[str, Any],
    started: float,
) -> Path:
    """<results>/<name>.json: what was run, on what, the figures, the targets and whether each is met."""
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for target in targets:
        mark = "[green]met[/]" if target["met"] else "[red]NOT met[/]"
        out.print(f"target: {target['target']} → {target['measured']}: {mark}")
    payload = {
        "benchmark": name,
        "command": command_line(name),
        "run_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 1),
        "machine": machine(),
        "params": params,
        "targets": list(targets),
        "tables": list(tables),
        "data": data,
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    out.print(f"[dim]{path.relative_to(REPO)} · {payload['seconds']} s[/]")
    return path


def target(text: str, measured: str, met: bool) -> dict[str, Any]:
    return {"target": text, "measured": measured, "met": bool(met)}
