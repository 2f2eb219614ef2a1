"""`fitsync sync` does the run's first steps (profile, stats, zones, the listing, its summaries' load) before Dagster
loads, and the run adopts them: the same materializations, each call made once, the summaries queryable first."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from click.testing import CliRunner
from dagster import DagsterEventType, DagsterInstance

from fitsync.cli import sync as cli_sync
from fitsync.cli.main import main
from fitsync.resources.run import ENDPOINT_CALLS
from fitsync.sync import first_steps

from ..processes import run_fitsync, subprocess_env
from ..sandbox_harness import Harness, add_athlete, record
from .conftest import Connect, Home, record_many

# the PostgreSQL variants run with -m slow (tests/conftest.py)
pytestmark = pytest.mark.postgres_slow

FIRST = ("athlete", "athlete_stats", "athlete_zones", "activities", "activity_summaries")


def materializations(home: Home) -> tuple[float, dict[str, dict[str, Any]]]:
    """The CLI's one run: when it was created, and each asset's materialization metadata (plain values)."""
    with DagsterInstance.from_config(str(home.config.home / "dagster")) as instance:
        [run] = instance.get_run_records()
        found = {}
        for event in instance.all_logs(run.dagster_run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
            mat = event.asset_materialization
            assert mat is not None
            found[mat.asset_key.to_user_string()] = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
        return run.create_timestamp.timestamp(), found


def test_the_run_adopts_the_first_steps_each_call_made_once(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 5, oldest_days=20)
    home = connect(aid)
    before = sb.counters()["requests"]
    done = run_fitsync(["sync"], env=subprocess_env(home.config.home), timeout=300)
    assert done.returncode == 0, done.stderr
    calls = sb.counters()["requests"] - before

    created, found = materializations(home)
    assert set(FIRST) <= set(found)  # the asset graph shows them, in the run, as before
    by_endpoint: Counter[str] = Counter()
    for metadata in found.values():
        by_endpoint.update(metadata.get(ENDPOINT_CALLS) or {})
    assert sum(by_endpoint.values()) == calls  # every call counted once, by the step that made it
    assert (
        by_endpoint["GET /athlete"] == by_endpoint["GET /athletes/{id}/stats"] == by_endpoint["GET /athlete/zones"] == 1
    )
    assert by_endpoint["GET /athlete/activities"] == 1, by_endpoint  # one page for five: listed once, not again
    assert found["activities"]["listed"] == 5 and found["activities"]["mode"] == "full reconciliation"
    assert found["activity_summaries"]["rows_written"]["activities"] == 5
    # the listing came before the run existed
    [(fetched,)] = home.query("SELECT max(epoch(listed_at)) FROM activities")
    assert fetched < created
    assert home.query("SELECT count(*) FROM activities WHERE detail_fetched_at IS NOT NULL") == [(5,)]


def test_the_summaries_are_queryable_before_dagster_loads(
    sb: Harness, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid)
    seen: list[Any] = []
    load = cli_sync._dagster_instance

    def looked_first(config: Any) -> Any:  # what an analyst would read the moment Dagster is asked for
        seen.append(home.query("SELECT count(*), count(detail_fetched_at) FROM activities"))
        seen.append({run: list(steps) for run, steps in first_steps._done.items()})
        return load(config)

    monkeypatch.setattr(cli_sync, "_dagster_instance", looked_first)
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("FITSYNC_", "DAGSTER_"))}
    env["FITSYNC_HOME"] = str(home.config.home)
    result = CliRunner().invoke(main, ["sync"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    counts, pending = seen
    assert counts == [(4, 0)]  # the summaries, before any detail and before Dagster
    [(run_id, steps)] = pending.items()
    assert steps == list(FIRST)
    assert first_steps._done == {}  # adopted by the run (or forgotten), nothing left behind
    assert home.query("SELECT count(detail_fetched_at) FROM activities") == [(4,)]


def test_what_the_check_asked_is_not_asked_again(sb: Harness, connect: Connect) -> None:
    """A caught-up athlete with a new upload: the nothing-new check asks for the profile (and the listing, when the
    profile alone does not tell), finds them changed, and the first steps take those answers (sync/known_answers.py)."""
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=5)
    home = connect(aid, slow_refresh_hours=20)
    home.sync()
    home.sync()  # caught up: the second sync stored the digests the check compares with
    record(sb, aid, days_ago=0.01)
    before = sb.counters()["requests"]
    done = run_fitsync(["sync"], env=subprocess_env(home.config.home), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "changed: syncing" in done.stderr, done.stderr
    calls = sb.counters()["requests"] - before

    _, found = materializations(home)
    by_endpoint: Counter[str] = Counter()
    for metadata in found.values():
        by_endpoint.update(metadata.get(ENDPOINT_CALLS) or {})
    checked = calls - sum(by_endpoint.values())  # the check's calls: no step made them
    assert by_endpoint["GET /athlete"] == 0, by_endpoint  # the check's profile, taken
    assert checked + by_endpoint["GET /athlete/activities"] == 2, (checked, by_endpoint)  # the listing asked once
    assert by_endpoint["GET /activities/{id}"] == 1 and home.query("SELECT count(*) FROM activities") == [(4,)]
