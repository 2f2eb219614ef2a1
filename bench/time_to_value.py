"""time-to-value: what a user feels under the real service's default limits, time-scaled.

The sandbox keeps the real ceilings (read 100 per 15 minutes and 1,000 a day; overall 200 and 2,000) but its
windows are shrunk by `--scale` (150: the 15-minute window lasts 6 s, the day 576 s). One athlete of the seeded
world with N activities connects; `fitsync sync` runs as the nightly schedule runs it: it starts at 03:30 UTC
(scaled) and waits through 15-minute windows (`--max-wait` = 15 minutes, scaled) until the daily ceiling ends
it, then the next night's run continues. Meanwhile the warehouse is read from this process to time:

- summaries: every listed activity queryable (volume, YTD, Eddington, the calendar, a first PMC are right then);
- last 30 days: every activity of the last 30 days has its detail and, when it can have zones, its zones;
- backfill: every detail and zone distribution fetched.

Each as real-service time and the app's calls spent (the sandbox's request counter). Real-service time counts
the rate waits (which the sync prints, off a terminal, one line each) × scale and the rest of the run (start-up,
fetching, loading: the machine's own speed) as it is; nights are a day apart.
"Before" is fitsync before issue 15 (details oldest first, zones for every activity after every detail, the
warehouse written when the run ends), modelled from the same nightly budget: which night's run makes the call
that completes the milestone. Minimum: listing pages + one detail per activity + one zones call per activity
with heart rate, a power meter, or a run over GPS (pace zones).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import subprocess
import sys
import threading
import time
from typing import Any

import click
import httpx

from . import common
from .common import table, target

REAL_LIMITS = {"read_limit_short": 100, "read_limit_long": 1000, "overall_limit_short": 200, "overall_limit_long": 2000}
PAGE = 200
RECENT_DAYS = 30
# The line `fitsync sync` prints when the step after the listing starts (cli/sync_phases.PHASES).
SUMMARIES_STEP = "loading the summaries"


def real_time(seconds: float | None) -> str:
    """Real-service time, the way a person reads it."""
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


WAIT_LINE = re.compile(r"waiting (?:(\d+) h )?(?:(\d+) m )?(?:(\d+) s )?for the")


def wait_seconds(line: str) -> float | None:
    """The length of a rate wait from the line `fitsync sync` prints for it (sync_progress.duration)."""
    m = WAIT_LINE.search(line)
    if not m or not any(m.groups()):
        return None
    h, mins, secs = (int(x or 0) for x in m.groups())
    return h * 3600 + mins * 60 + secs


def _listing(api_url: str, token: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        page = 1
        while True:
            batch = http.get("/athlete/activities", params={"page": page, "per_page": PAGE}).json()
            out += batch
            if len(batch) < PAGE:
                return out
            page += 1


@click.command()
@click.option("--activities", "n", default=1500, show_default=True, help="Activities in the athlete's history.")
@click.option(
    "--scale",
    default=150,
    show_default=True,
    help="Real seconds per benchmark second (900 and 86400 must divide by it).",
)
@click.option(
    "--start-hour",
    default=3.5,
    show_default=True,
    help="UTC hour (real-service time) at which each night's run starts; negative: the first at once.",
)
@click.option("--max-nights", default=4, show_default=True, help="Nights to run before giving up on the backfill.")
def main(n: int, scale: int, start_hour: float, max_nights: int) -> None:
    """Time until summaries, the last 30 days and the whole backfill are in the warehouse, real limits."""
    from fitsync.client.runtime import FitsyncClient
    from fitsync.sync.progress import may_have_zones, start_ts
    from fitsync.warehouse import db

    if 900 % scale or 86400 % scale:
        raise click.BadParameter("900 and 86400 must divide by it", param_hint="--scale")
    started = time.monotonic()
    short, long = 900 // scale, 86400 // scale
    sb = common.start_sandbox(
        athletes=1, activities=n, settings={**REAL_LIMITS, "short_window": short, "long_window": long}
    )
    try:
        aid = sb.athletes()[0]["id"]
        # What the data is, read with an app of its own (rate limits are per app): never counted below.
        inspect = sb.connected_home(aid, "bench-ttv-inspect-")
        with FitsyncClient(inspect) as client:
            token = client.tokens.access_token(aid).reveal()
        listed = _listing(sb.api_url, token)
        starred_count = len(
            httpx.get(
                f"{sb.api_url}/segments/starred",
                params={"per_page": PAGE},
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            ).json()
        )
        config = sb.connected_home(aid, "bench-ttv-").replace(short_window=short, long_window=long)
        home = config.home
        now = time.time()
        zoned = {s["id"] for s in listed if may_have_zones(s)}
        recent = {s["id"] for s in listed if (start_ts(s) or 0) >= now - RECENT_DAYS * 86400}
        power = sum(1 for s in listed if s.get("device_watts"))
        hr = sum(1 for s in listed if s.get("has_heartrate"))
        pages = len(listed) // PAGE + 1
        minimum = {
            "summaries": pages,
            "recent": pages + len(recent) + len(recent & zoned),
            "backfill": pages + len(listed) + len(zoned),
        }

        env = common.env_for(config, FITSYNC_SLOW_REFRESH_HOURS="0")  # as the nightly schedule: refresh everything
        seen: dict[str, tuple[float, int]] = {}  # milestone → (real-service seconds since the first start, calls)
        nights: list[dict[str, Any]] = []
        waits: list[tuple[float, float]] = []  # (bench start, bench seconds) of each rate wait the sync printed
        night_starts: list[float] = []
        listing_done: dict[str, float] = {}  # when the sync said it was loading the summaries
        summaries_after_listing: list[float] = []

        def real(now: float) -> float:
            """Real-service seconds since the first night started: whole days for the nights before this one,
            then this night's time with its rate waits scaled up."""
            start = night_starts[-1]
            waited = sum(max(0.0, min(now, s + d) - max(start, s)) for s, d in waits)
            return (len(night_starts) - 1) * 86400 + (now - start - waited) + waited * scale

        def calls() -> int:
            return sb.counters().get("requests", 0)

        def look() -> None:
            try:
                with db.reading(home / "warehouse.duckdb", timeout=0.5) as conn:
                    if not conn.execute(
                        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'activities'"
                    ).fetchone()[0]:
                        return
                    have = conn.execute("SELECT count(*) FROM activities").fetchone()[0]
                    done = {
                        r[0]
                        for r in conn.execute(
                            "SELECT a.activity_id FROM activities a WHERE a.detail_loaded AND (NOT (a.has_heartrate "
                            "IS DISTINCT FROM false OR a.device_watts) OR EXISTS (SELECT 1 FROM activity_zones z "
                            "WHERE z.activity_id = a.activity_id))"
                        ).fetchall()
                    }
            except Exception:  # the loader holds the file: look again in a moment
                return
            at = real(time.monotonic())
            if have >= len(listed) and "summaries" not in seen:
                seen["summaries"] = (at, calls())
                if "at" in listing_done:
                    summaries_after_listing.append(time.monotonic() - listing_done["at"])
            if recent <= done:
                seen.setdefault("recent", (at, calls()))
            if done >= {s["id"] for s in listed}:
                seen.setdefault("backfill", (at, calls()))

        sb.reset_counters()
        for night in range(1, max_nights + 1):
            phase = start_hour * 3600 / scale
            wait = 0.0 if start_hour < 0 and night == 1 else (phase % long - time.time() % long) % long
            common.out.print(f"[dim]night {night}: waiting {wait:.0f} s for 03:30 (scaled)…[/]")
            time.sleep(wait)
            t_start = time.monotonic()
            night_starts.append(t_start)
            before = calls()
            proc = subprocess.Popen(
                [sys.executable, "-m", "fitsync.cli.main", "sync", "--max-wait", str(short)],
                env=env,
                cwd=common.REPO,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            lines: list[str] = []

            def read_waits(stream: Any = proc.stderr, into: list[str] = lines) -> None:
                for line in stream:
                    into.append(line)
                    if (seconds := wait_seconds(line)) is not None:
                        waits.append((time.monotonic(), float(seconds)))
                    if SUMMARIES_STEP in line:  # the listing is done: its last page has arrived
                        listing_done.setdefault("at", time.monotonic())

            reader = threading.Thread(target=read_waits, daemon=True)
            reader.start()
            while proc.poll() is None:
                look()
                # often until the summaries are in (their delay after the listing is measured to ~0.05 s)
                time.sleep(0.2 if "summaries" in seen else 0.05)
            reader.join(timeout=10)
            look()
            err = "".join(lines)
            if proc.returncode not in (0, 3):
                raise RuntimeError(f"fitsync sync failed ({proc.returncode}): {err[-2000:]}")
            nights.append(
                {
                    "night": night,
                    "calls": calls() - before,
                    "exit": proc.returncode,
                    "run_real_hours": round(real(time.monotonic()) % 86400 / 3600, 2),
                    "bench_seconds": round(time.monotonic() - t_start, 1),
                }
            )
            if "backfill" in seen:
                break
        # The next night's sync finishes what the budget left (effort histories, segments), then a sync with
        # nothing new runs as a user or cron would start it: stats, zones, starred segments and efforts on their
        # daily cadence. The last night may have spent its day's budget: both run the next day.
        wait = (start_hour * 3600 / scale % long - time.time() % long) % long
        common.out.print(f"[dim]the next night: waiting {wait:.0f} s for 03:30 (scaled)…[/]")
        time.sleep(wait)

        def sync_to_the_end(sync_env: dict[str, str], what: str) -> tuple[float, int]:
            """`fitsync sync` run whole: (wall seconds, calls)."""
            before, t0 = calls(), time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "fitsync.cli.main", "sync"],
                check=False,
                env=sync_env,
                cwd=common.REPO,
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise RuntimeError(f"{what} did not finish ({done.returncode}): {done.stderr[-2000:]}")
            return time.monotonic() - t0, calls() - before

        _, next_night_calls = sync_to_the_end(env, "the next night's sync")
        seconds, spent = sync_to_the_end(common.env_for(config), "the sync with nothing new")
        no_change = {"seconds": seconds, "calls": spent, "next_night_calls": next_night_calls}
    finally:
        sb.close()

    # "Before", modelled: the same nights, each able to spend what this run's first night spent.
    per_night = nights[0]["calls"] if nights else 0
    old_backfill_calls = pages + 2 * len(listed)
    day = 86400

    def night_of(call_index: int) -> int:
        return math.ceil(call_index / per_night) if per_night else 0

    def old_time(call_index: int) -> float:
        """The old warehouse was written when a night's run ended: the night's run end, in real time from the
        first start (nights are a day apart; a run ends when its share of the day's budget is spent)."""
        k = night_of(call_index)
        return (k - 1) * day + nights[0]["run_real_hours"] * 3600

    old = {
        "summaries": old_time(pages + 5),
        "recent": old_time(old_backfill_calls + 5),
        "backfill": old_time(old_backfill_calls + 5),
    }
    old_calls = {"summaries": pages, "recent": old_backfill_calls, "backfill": old_backfill_calls}
    labels = {
        "summaries": "summaries queryable (volume, YTD, Eddington, PMC)",
        "recent": f"last {RECENT_DAYS} days complete ({len(recent)} activities)",
        "backfill": f"whole backfill ({len(listed)} activities)",
    }
    rows = []
    for key, label in labels.items():
        at, spent = seen.get(key, (None, None))
        rows.append([label, real_time(at), spent, real_time(old[key]), old_calls[key], minimum[key]])
    after_listing = summaries_after_listing[0] if summaries_after_listing else None
    rows.append(
        [
            "summaries queryable after the last listing page",
            "—" if after_listing is None else f"{after_listing:.2f} s",
            0,
            real_time(old["summaries"]),
            "—",
            0,
        ]
    )  # before: when the night's run ended
    # before issue 15 a sync re-pulled the profile, stats, zones, starred segments and every starred segment's
    # efforts (one page each), then listed one page
    old_no_change = 4 + starred_count + 1
    rows.append(
        [
            "sync with nothing new (start-up included)",
            f"{no_change['seconds']:.1f} s",
            no_change["calls"],
            "—",
            old_no_change,
            2,
        ]
    )
    main_table = table(
        f"Time to value under the real limits (time-scaled ×{scale}): one athlete, {len(listed)} activities",
        ["milestone", "fitsync: real-service time", "calls", "before issue 15 (modelled)", "calls", "minimum calls"],
        rows,
        caption=f"{hr} activities with heart rate, {power} with device power, {len(zoned)} that can have zones. "
        "Nights start at 03:30 UTC; a night's run waits through 15-minute windows until the daily ceiling. "
        "Calls include the profile, stats, zones and starred segments.",
    )
    night_table = table(
        "Nights",
        ["night", "calls", "exit code", "run length (real hours)", "bench seconds"],
        [[x["night"], x["calls"], x["exit"], x["run_real_hours"], x["bench_seconds"]] for x in nights]
        + [
            [
                f"{len(nights) + 1} (the next night: daily refreshes, what the budget left)",
                no_change["next_night_calls"],
                0,
                "—",
                "—",
            ]
        ],
    )
    summaries_at = seen.get("summaries", (math.inf, 0))[0]
    recent_at = seen.get("recent", (math.inf, 0))[0]
    targets = [
        target("first answers within the first 15-minute window", real_time(summaries_at), summaries_at <= 900),
        target(
            "summaries queryable within 2 s after the last listing page",
            "—" if after_listing is None else f"{after_listing:.2f} s",
            after_listing is not None and after_listing <= 2.0,
        ),
        target("last 30 days complete within the first 15-minute window", real_time(recent_at), recent_at <= 900),
        target("a sync with nothing new costs ≤ 2 calls", str(no_change["calls"]), no_change["calls"] <= 2),
        target(
            "a sync with nothing new takes ≤ 2 s, start-up included",
            f"{no_change['seconds']:.1f} s",
            no_change["seconds"] <= 2.0,
        ),
    ]
    common.save(
        "time-to-value",
        params={"activities": n, "scale": scale, "start_hour": start_hour, "limits": REAL_LIMITS},
        tables=[main_table, night_table],
        targets=targets,
        data={
            "seen": seen,
            "nights": nights,
            "minimum": minimum,
            "old": old,
            "no_change": no_change,
            "summaries_after_listing": after_listing,
            "run_at": dt.datetime.now(dt.UTC).isoformat(),
        },
        started=started,
    )


if __name__ == "__main__":
    main()
