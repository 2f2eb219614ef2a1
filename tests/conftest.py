"""Shared fixtures: one real sandbox server on loopback for the session, and a harness to drive it."""

from __future__ import annotations

import datetime as dt
from typing import Iterator

import pytest

from fitsync.sandbox.server import SeedOptions, ServerOptions, ServerThread

from .sandbox_harness import Harness

SEED = SeedOptions(seed=7, athletes=4, activities_per_athlete=40)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` tests run only on demand (`pytest -m slow`); each has a short version in the default run."""
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sandbox_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    db = tmp_path_factory.mktemp("sandbox") / "sandbox.db"
    options = ServerOptions(db=str(db), port=0, seed=SeedOptions(SEED.seed, SEED.athletes, SEED.activities_per_athlete,
                                                                  dt.datetime.now(dt.timezone.utc).replace(microsecond=0)))
    with ServerThread(options) as server:
        yield server


@pytest.fixture(scope="session")
def sb(sandbox_server: ServerThread) -> Iterator[Harness]:
    harness = Harness(sandbox_server)
    yield harness
    harness.http.close()
    harness.console.close()
