"""A fitsync process for the multi-process tests: `python worker.py '{"athlete_id": …, "calls": …}'`.

Configured by FITSYNC_* variables like any fitsync process. Prints "ready" once built, waits for a line on
stdin (so all workers start together), makes `calls` API calls for the athlete and prints one JSON report.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient


def main() -> None:
    job = json.loads(sys.argv[1])
    athlete_id = job["athlete_id"]
    statuses: Counter[str] = Counter()
    read_usage: list[int] = []  # short-window read usage the service reported on each answer

    def seen(response) -> None:  # type: ignore[no-untyped-def]
        statuses[
            f"{response.request.method} {response.request.url.path.rsplit('/', 1)[-1]} {response.status_code}"
        ] += 1
        usage = response.headers.get("X-ReadRateLimit-Usage")
        if usage:
            read_usage.append(int(usage.split(",")[0]))

    with FitsyncClient(Config.load()) as client:
        client.transport.http.event_hooks["response"].append(seen)
        api = client.athlete(athlete_id)
        print("ready", flush=True)
        sys.stdin.readline()
        started, ok, failures = time.time(), 0, []
        for _ in range(job["calls"]):
            try:
                athlete = api.athlete()
                if athlete.id != athlete_id:
                    raise AssertionError(f"wrong athlete {athlete.id}")
                ok += 1
            except Exception as error:  # noqa: BLE001 (every failure is reported, not raised)
                failures.append(f"{type(error).__name__}: {error}"[:300])
        finished = time.time()
    print(
        json.dumps(
            {
                "ok": ok,
                "failures": failures,
                "statuses": statuses,
                "max_read_usage": max(read_usage, default=0),
                "started": started,
                "finished": finished,
            }
        )
    )


if __name__ == "__main__":
    main()
