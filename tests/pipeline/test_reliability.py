"""Reliability (issue 7): a sync through a flaky service ends with the same warehouse as a sync through a good one.

The sandbox injects 10% 5xx answers, 5% dropped connections and latency spikes; the client's retries, the
resumable queues and the idempotent loads must make that invisible in the result. The default run is short;
`pytest -m slow` runs the long version.
"""

from __future__ import annotations

import pytest

from ..sandbox_harness import Harness
from .conftest import Connect, add_athlete, dump, duplicate_keys, record_many

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow

FLAKY = {"fault_error_rate": 0.10, "fault_drop_rate": 0.05, "fault_latency_ms": 2, "fault_latency_jitter_ms": 40}


def sync_through_faults(sb: Harness, connect: Connect, activities: int) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, activities, oldest_days=200)
    good = connect(aid, name="good", max_retries=8)
    flaky = connect(aid, name="flaky", max_retries=8)
    assert good.sync().success
    before = sb.counters()
    with sb.settings(**FLAKY):
        outcome = flaky.sync(check=False)
    after = sb.counters()
    injected = sum(after.get(k, 0) - before.get(k, 0) for k in ("injected_errors", "injected_drops"))
    assert injected > 0, "the faults were not exercised"
    assert outcome.success, outcome.error
    assert not any(duplicate_keys(flaky.warehouse).values())
    assert dump(flaky.warehouse) == dump(good.warehouse)  # dump leaves out when-fetched columns


def test_flaky_service_same_warehouse(sb: Harness, connect: Connect) -> None:
    sync_through_faults(sb, connect, activities=24)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_flaky_service_same_warehouse_long(sb: Harness, connect: Connect) -> None:
    sync_through_faults(sb, connect, activities=400)
