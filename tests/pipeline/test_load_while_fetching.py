"""What a sync fetched is queryable while the sync still waits for the rate budget: the details step loads what it
landed before a long wait (sync/load_landed.WhileFetching), not only the warehouse step at the run's end."""

from __future__ import annotations

import subprocess
import threading

import pytest

from ..processes import popen
from ..sandbox_harness import Harness, record_with_efforts, wait_until
from .conftest import REPO, Connect, add_athlete, record
from .test_cli import FITSYNC, env_for

WINDOW = 60  # seconds: a wait far longer than the 20 s the details may take to be queryable
LIMIT = 50  # reads per window: the profile, stats, zones, listing and starred segments (≈ 23 here), the last
# 30 days' details and zones (8), then older ones until the budget (less its 10 % bulk reserve) is spent


@pytest.mark.slow
def test_the_last_30_days_are_queryable_while_the_sync_waits_for_the_next_window(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    # one with a segment effort, whose table is checked below (1 in 6 of the sandbox's rides visits no segment)
    recent = [record(sb, aid, days_ago=d) for d in (20, 12, 6)] + [record_with_efforts(sb, aid, days_ago=2)]
    older = [record(sb, aid, days_ago=60 + 5 * i) for i in range(60)]  # more than the window holds
    with sb.settings(short_window=WINDOW, read_limit_short=LIMIT):
        home = connect(aid, short_window=WINDOW, boundary_guard=0.05)
        env = {**env_for(home), "FITSYNC_RATE_SHORT_WINDOW": str(WINDOW)}
        process = popen(
            [*FITSYNC, "sync"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(process.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
        reader.start()
        try:
            wait_until(
                lambda: process.poll() is None and any("waiting" in line for line in lines),
                90,
                "the sync waiting for the next read window",
                interval=0.05,
            )

            def recent_loaded() -> bool:
                if not home.warehouse.exists():
                    return False
                ready = home.query(
                    "SELECT count(*) FROM activities WHERE athlete_id = ? AND detail_loaded "
                    f"AND activity_id IN ({', '.join(map(str, recent))})",
                    aid,
                )
                return ready == [(len(recent),)]

            wait_until(recent_loaded, 20, "the last 30 days' details in the warehouse", interval=0.2)
            assert process.poll() is None and any("waiting" in line for line in lines)  # still waiting
            ids = ", ".join(map(str, recent))
            zones_due = home.with_zones(recent)  # fitsync's rule: heart rate, a power meter, or a run over GPS
            with_zones = home.query(f"SELECT DISTINCT activity_id FROM activity_zones WHERE activity_id IN ({ids})")
            efforts_sent = home.query(
                "SELECT sum(json_array_length(raw -> 'segment_efforts')) FROM activity_documents "
                f"WHERE activity_id IN ({ids})"
            )
            efforts_stored = home.query(f"SELECT count(*) FROM segment_efforts WHERE activity_id IN ({ids})")
            older_pending = home.needing("detail")
        finally:
            process.kill()
            process.wait()
    assert zones_due and {r[0] for r in with_zones} == zones_due
    assert efforts_sent[0][0] and efforts_stored == efforts_sent  # every effort of each detail in its table
    assert 0 < older_pending <= len(older)  # the older ones wait for the next window
