"""The boundary guard never exceeds a tenth of the window: a 1 s guard on a 2 s window must not wait forever."""

from __future__ import annotations

from pathlib import Path

from fitsync.client.rate_governor import RateGovernor
from fitsync.state.store import StateStore


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert len(self.slept) < 50, f"still waiting after {self.slept}"  # the old code slept forever
        self.slept.append(seconds)
        self.now += seconds


def test_a_long_guard_on_a_short_window_still_moves_to_the_next_window(tmp_path: Path) -> None:
    clock = FakeClock(1_000.0)
    governor = RateGovernor(
        StateStore(tmp_path / "state.db"), short_window=2, boundary_guard=1.0, clock=clock, sleep=clock.sleep
    )
    governor.observe(
        {
            "X-RateLimit-Limit": "100,1000",
            "X-RateLimit-Usage": "0,0",
            "X-ReadRateLimit-Limit": "3,1000",
            "X-ReadRateLimit-Usage": "0,0",
        }
    )
    windows = set()
    for _ in range(9):  # three windows' worth of the budget
        governor.reserve()
        windows.add(int(clock.now // 2))
    assert len(windows) == 3
    assert max(clock.slept) <= 2 + 0.2  # never more than to the next boundary plus the capped guard
