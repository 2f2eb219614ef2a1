"""Shared fixtures: one real sandbox server on loopback for the session, and a harness to drive it."""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import signal
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, instance_for_test

from fitsync.pipelines.instance import KEPT_SQLITE
from fitsync.sandbox.server import SeedOptions, ServerOptions, ServerThread

from . import postgres_server as pg
from .sandbox_harness import Harness

SEED = SeedOptions(seed=7, athletes=4, activities_per_athlete=40)
# One full sync spends more than the default 100 reads / 15 min: tests that sync raise the limits meanwhile.
ROOMY_LIMITS = {
    "read_limit_short": 100_000,
    "read_limit_long": 1_000_000,
    "overall_limit_short": 100_000,
    "overall_limit_long": 1_000_000,
}


# The token-rotation soak's calls per process by default, what CI's slow run affords: on 2 idle cores about 1 minute
# of rotation on SQLite and 2.5 on PostgreSQL (a refresh a second). `--soak-calls` asks for a longer soak.
SOAK_CALLS = 1000


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak-calls",
        type=int,
        default=SOAK_CALLS,
        metavar="N",
        help=f"API calls per process in the token-rotation soak (pytest -m slow -k soak); {SOAK_CALLS} by default, "
        "what CI affords. Each call takes the state store's write lock twice, so the 8 processes make about 150 calls "
        "a second together on SQLite and 60 on PostgreSQL (2 idle cores): 5000 is a soak of about 5 and 12 minutes",
    )


# Where a test's files go when nobody chose (--basetemp): a memory-backed folder if the machine has one. The
# suite writes real SQLite and DuckDB files and Dagster commits an event log row per step event; on a disk each
# commit waits for fsync, which cost about a fifth of the suite's time. FITSYNC_TEST_TMP=disk keeps the default,
# and so does a small /dev/shm (containers often have 64 MiB): the suite's files reach about 1 GiB.
MEMORY_TMP = Path("/dev/shm")
MEMORY_TMP_NEEDS = 4 * 2**30


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores. The suite waits on sync processes, servers and rate windows (two
    workers kept 2 cores ≈ 55 % busy); on 2 cores, 3 workers ran it in 7:41 instead of 10:57."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or hasattr(config, "workerinput") or os.environ.get("FITSYNC_TEST_TMP") == "disk":
        return  # chosen already, or an xdist worker (it gets a folder under the controller's)
    if (
        MEMORY_TMP.is_dir()
        and os.access(MEMORY_TMP, os.W_OK)
        and shutil.disk_usage(MEMORY_TMP).free >= MEMORY_TMP_NEEDS
    ):
        config.option.basetemp = tempfile.mkdtemp(prefix="fitsync-tests-", dir=MEMORY_TMP)
        config.stash[_MADE_BASETEMP] = config.option.basetemp


def pytest_unconfigure(config: pytest.Config) -> None:
    """Memory is not a disk: the folder goes when the run ends (failed tests' files too; re-run with
    FITSYNC_TEST_TMP=disk to keep them)."""
    made = config.stash.get(_MADE_BASETEMP, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


_MADE_BASETEMP = pytest.StashKey[str]()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture(autouse=True)
def _stop_signals_as_found() -> Iterator[None]:
    """Each test leaves the worker's SIGINT and SIGTERM as it found them (a child inherits an ignored signal), and
    says so where it did not."""
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    yield
    changed = [s for s in STOP_SIGNALS if signal.getsignal(s) != before[s]]
    for s in changed:
        handler = before[s]
        if handler is not None:  # None: a handler set outside Python, which cannot be put back from here
            signal.signal(s, handler)
    if changed:
        warnings.warn(f"the test changed the handlers of {[signal.Signals(s).name for s in changed]}", stacklevel=1)


@pytest.fixture(autouse=True)
def _dagster_home_as_found() -> Iterator[None]:
    """Each test leaves DAGSTER_HOME as it found it. Opening fitsync's instance sets it for the whole process, as a
    command wants (pipelines/instance.ensure_home); a test's, left behind, made every later test in that worker open
    the same Dagster home (one that named a PostgreSQL storage made the next instance fail)."""
    before = os.environ.get("DAGSTER_HOME")
    yield
    if before is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def _user_state_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where fitsync keeps a user's own files outside FITSYNC_HOME (the SQL prompt's history): the test run's, not
    the account's, for every process the tests start."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("user-state"))
    yield
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` tests run only on demand (`pytest -m slow`); each has a short version in the default run. A test
    marked `postgres_slow` runs on SQLite by default and on PostgreSQL with `-m slow` too (running every scenario
    twice would take the default run past its 10 minutes). One marked `sqlite_only` has no PostgreSQL variant: the
    state store is incidental to what it checks (what a summary says, a warehouse file, a question at the terminal),
    and the tests of what the store holds (tokens, the rate ledger, the inbox, progress, locks) run on both."""
    left_out = [item for item in items if "postgres" in item.keywords and item.get_closest_marker("sqlite_only")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = set(left_out)
        items[:] = [item for item in items if item not in dropped]
    for item in items:
        if "postgres" in item.keywords and item.get_closest_marker("postgres_slow"):
            item.add_marker(pytest.mark.slow)
    if "slow" in (config.getoption("markexpr") or ""):
        _longest_first(config, items)
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _longest_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each worker starts with one of the soaks, so that none starts one as the others finish. xdist gives each
    worker a contiguous share of the list (the others then take from its end), so the tests are dealt out longest
    first, one share per worker. A test's own timeout tells its length (0: bounded by the test, the soak); a
    PostgreSQL variant takes about twice its SQLite one."""

    def length(item: pytest.Item) -> tuple[float, bool]:
        marker = item.get_closest_marker("timeout")
        seconds = (float(marker.args[0]) or math.inf) if marker and marker.args else 0.0
        return (seconds, "postgres" in item.keywords)

    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    ordered = sorted(items, key=length, reverse=True)
    items[:] = [item for share in range(workers) for item in ordered[share::workers]]


@pytest.fixture(scope="session")
def sandbox_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    db = tmp_path_factory.mktemp("sandbox") / "sandbox.db"
    options = ServerOptions(
        db=str(db),
        port=0,
        seed=SeedOptions(
            SEED.seed, SEED.athletes, SEED.activities_per_athlete, dt.datetime.now(dt.UTC).replace(microsecond=0)
        ),
    )
    with ServerThread(options) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[pg.PostgresServer]:
    """A PostgreSQL server for the session (per xdist worker). Skipped only where no server binaries exist; where
    they do, a server that fails to start fails the tests."""
    found = pg.binaries()
    if found is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) on this machine: the PostgreSQL state store "
            "is not tested here"
        )
    server = pg.PostgresServer(found)
    yield server
    server.stop()


StateUrl = Callable[[], str]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def new_state_url(request: pytest.FixtureRequest) -> StateUrl:
    """Where each fitsync home of a test keeps its state: "" for the SQLite file in the home, else a fresh
    PostgreSQL database per call (per home), as separate installations would have."""
    if request.param == "sqlite":
        return lambda: ""
    server = request.getfixturevalue("postgres_server")
    return server.new_database


@pytest.fixture(scope="session")
def sb(sandbox_server: ServerThread) -> Iterator[Harness]:
    harness = Harness(sandbox_server)
    yield harness
    harness.http.close()
    harness.console.close()


@pytest.fixture
def roomy_limits(sb: Harness) -> Iterator[None]:
    with sb.settings(**ROOMY_LIMITS):
        yield


@pytest.fixture(params=["spec", "real"])
def flavor(request: pytest.FixtureRequest, sb: Harness) -> Iterator[str]:
    """The session sandbox answering as the spec says, then as the real service does (sandbox/flavors.py)."""
    with sb.settings(flavor=request.param):
        yield request.param


@pytest.fixture(params=["real", pytest.param("spec", marks=pytest.mark.slow)])
def e2e_flavor(request: pytest.FixtureRequest, sb: Harness) -> Iterator[str]:
    """For heavy end-to-end tests: the real service's answers. The spec's answers are what every other sync test
    gets; the spec variant of these runs with `-m slow`."""
    with sb.settings(flavor=request.param):
        yield request.param


@pytest.fixture
def persistent_instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    """A throw-away Dagster instance on files, DAGSTER_HOME meanwhile: what the processes a test starts share with it
    (the CLI's runs, the sensor's partitions), and what a schedule's context is built on. On the storage fitsync's
    commands use (pipelines/instance.py): Dagster's SQLite files, their connections kept open."""
    home = tmp_path / "dagster"
    home.mkdir()
    storage = {"module": KEPT_SQLITE[0], "class": KEPT_SQLITE[1], "config": {"base_dir": str(home)}}
    with instance_for_test(
        temp_dir=str(home), overrides={**NO_COMPUTE_LOGS, "storage": {"custom": storage}}
    ) as instance:
        yield instance


NO_COMPUTE_LOGS = {
    "compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager", "class": "NoOpComputeLogManager"}
}


@pytest.fixture
def dagster_instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    """A throw-away Dagster instance of the test's own, its runs and events in memory (Dagster's instance for tests):
    on SQLite files each event opens the run's database anew (an engine per event), a second per sync on 2 slow
    cores, spent hundreds of times a run of the suite. Shared with other processes: persistent_instance."""
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.ephemeral(tempdir=str(tmp_path / "dagster")) as instance:
        yield instance
