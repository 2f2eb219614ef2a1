"""One headless sync in a process of its own, for the kill tests.

    python -m tests.pipeline.sync_worker FITSYNC_HOME ATHLETE_ID [--full]

The home's config.toml says where the service is; the Dagster instance is the CLI's (FITSYNC_HOME/dagster).
Every API request is appended to FITSYNC_HOME/requests.log with an unbuffered write *before* it is sent, so the
test can count the calls of a process it killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

REQUEST_LOG = "requests.log"


def log_requests(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    original = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        if request.headers.get("user-agent") == "fitsync":
            os.write(fd, f"{request.method} {request.url.path}\n".encode())
        return original(self, request, **kwargs)

    httpx.Client.send = send  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    home, athlete_id = Path(argv[0]), int(argv[1])
    log_requests(home / REQUEST_LOG)
    from fitsync.client.config import Config
    from fitsync.pipelines import instance
    from fitsync.pipelines.sync_runner import sync_athlete

    config = Config.load(home=home)
    outcome = sync_athlete(config, athlete_id, instance.instance(home), full="--full" in argv)
    print(json.dumps({"success": outcome.success, "api_calls": outcome.api_calls()}), flush=True)
    return 0 if outcome.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
