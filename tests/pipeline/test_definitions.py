"""The Dagster code location: definitions load (also through workspace.yaml), every asset is partitioned by
athlete and in its pool, the nightly schedule fans out one run per athlete, and the warehouse's asset checks pass
after a sync and fail on a corrupted warehouse."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    DynamicPartitionsDefinition,
    RunRequest,
    SkipReason,
    build_schedule_context,
)

from fitsync.cli import checks
from fitsync.client.config import Config
from fitsync.client.config_basics import ConfigError
from fitsync.pipelines.definitions import defs
from fitsync.pipelines.jobs import nightly_sync
from fitsync.resources.partitions import athletes_partitions
from fitsync.resources.run import API_POOL, DUCKDB_POOL
from fitsync.sync.cadence import REFRESH_TAG
from fitsync.warehouse import db

from .. import processes
from ..sandbox_harness import Harness
from .conftest import REPO, Connect, add_athlete, record_many, subprocess_env

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


FETCH = {
    "athlete",
    "athlete_stats",
    "athlete_zones",
    "activities",
    "activity_details",
    "activity_zones",
    "activity_streams",
    "starred_segments",
    "segments",
    "segment_effort_history",
}
LOADS = {"activity_summaries", "warehouse"}  # the DuckDB writers


def test_definitions_load_with_every_asset_partitioned_by_athlete_and_pooled() -> None:
    Definitions.validate_loadable(defs)
    every = {key.to_user_string(): a for a in defs.assets or [] for key in a.keys}  # type: ignore[union-attr]
    analysis = {n for n, a in every.items() if a.group_names_by_key[AssetKey(n)] == "analysis"}
    assert analysis == {"pr_progression", "zone_trends", "training_load", "performance", "volume", "report"}
    for name in analysis:  # they only read the warehouse: no pool, one partition per athlete too
        assert every[name].op.pool is None and every[name].partitions_def == athletes_partitions, name
    assets = {n: a for n, a in every.items() if n not in analysis}
    assert set(assets) == FETCH | LOADS
    for name, asset in assets.items():
        partitions = asset.partitions_def
        assert isinstance(partitions, DynamicPartitionsDefinition) and partitions.name == athletes_partitions.name, name
        assert asset.op.pool == (DUCKDB_POOL if name in LOADS else API_POOL), name
        assert asset.group_names_by_key[AssetKey(name)] == ("warehouse" if name in LOADS else "fetch")
    checks = {key.name for c in defs.asset_checks or [] for key in c.check_keys}  # type: ignore[union-attr]
    assert checks == {"unique_keys", "children_have_parents", "details_present"}
    job = defs.resolve_job_def("sync_athlete")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} == FETCH | LOADS
    assert defs.resolve_schedule_def("nightly_sync").job_name == "sync_athlete"
    # The daemon's runs execute as `fitsync sync` does, in the run's one process (no start-up per step).
    for name in ("sync_athlete", "webhook_refresh", "purge_athlete_job", "analyze_athlete"):
        assert defs.resolve_job_def(name).executor_def.name == "in_process", name


def test_workspace_yaml_loads_the_code_location(tmp_path: Path) -> None:
    """What `dagster dev -w workspace.yaml` loads."""
    result = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "definitions", "validate", "-w", str(REPO / "workspace.yaml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(tmp_path / "home", DAGSTER_HOME=str(tmp_path)),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "fitsync.pipelines.definitions" in result.stdout + result.stderr


def _evaluate(instance: DagsterInstance, when: dt.datetime) -> list[RunRequest] | SkipReason:
    context = build_schedule_context(instance=instance, scheduled_execution_time=when)
    return nightly_sync(context)  # type: ignore[no-any-return]


def test_nightly_schedule_fans_out_one_run_per_athlete_with_daily_run_keys(
    persistent_instance: DagsterInstance,
) -> None:
    tuesday = dt.datetime(2026, 3, 3, 3, 30, tzinfo=dt.UTC)
    skipped = _evaluate(persistent_instance, tuesday)
    assert isinstance(skipped, SkipReason) and "connect" in (skipped.skip_message or "")

    athletes = ["101", "202", "303"]
    persistent_instance.add_dynamic_partitions(athletes_partitions.name, athletes)
    requests = _evaluate(persistent_instance, tuesday)
    assert isinstance(requests, list) and all(isinstance(r, RunRequest) for r in requests)
    assert sorted(r.partition_key for r in requests) == athletes  # type: ignore[type-var]
    keys = [r.run_key for r in requests]
    assert len(set(keys)) == 3 and all(k and "2026-03-03" in k for k in keys)
    assert [r.run_key for r in _evaluate(persistent_instance, tuesday)] == keys  # the same tick again: same keys
    wednesday = _evaluate(persistent_instance, tuesday + dt.timedelta(days=1))
    assert isinstance(wednesday, list) and not {r.run_key for r in wednesday} & set(keys)
    assert all(r.run_config["ops"]["activities"]["config"]["full"] is False for r in requests)
    assert all(r.tags[REFRESH_TAG] == "all" for r in requests)  # stats, zones, starred: every night
    sunday = _evaluate(persistent_instance, dt.datetime(2026, 3, 8, 3, 30, tzinfo=dt.UTC))
    assert isinstance(sunday, list) and all(r.run_config["ops"]["activities"]["config"]["full"] for r in sunday)


def test_a_schedule_that_runs_twice_a_day_gets_new_run_keys_each_time(persistent_instance: DagsterInstance) -> None:
    persistent_instance.add_dynamic_partitions(athletes_partitions.name, ["101"])
    morning = _evaluate(persistent_instance, dt.datetime(2026, 3, 3, 3, 0, tzinfo=dt.UTC))
    evening = _evaluate(persistent_instance, dt.datetime(2026, 3, 3, 15, 0, tzinfo=dt.UTC))
    assert isinstance(morning, list) and isinstance(evening, list)
    assert morning[0].run_key != evening[0].run_key  # a key Dagster has seen would skip the evening's run for good


def test_the_nightly_schedule_follows_the_settings_when_the_code_location_loads(tmp_path: Path) -> None:
    script = (
        "from fitsync.pipelines.definitions import defs; s = defs.resolve_schedule_def('nightly_sync'); "
        "print(s.cron_schedule, s.execution_timezone, sep='|')"
    )

    def load(**settings: str) -> subprocess.CompletedProcess[str]:
        return processes.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            env=subprocess_env(tmp_path / "home", **settings),
        )

    assert load().stdout.strip() == "30 3 * * *|UTC"
    chosen = load(FITSYNC_NIGHTLY_SCHEDULE="0 22 * * 1-5", FITSYNC_NIGHTLY_TIMEZONE="America/Los_Angeles")
    assert chosen.stdout.strip() == "0 22 * * 1-5|America/Los_Angeles", chosen.stderr[-2000:]
    wrong = load(FITSYNC_NIGHTLY_SCHEDULE="every night at 3")
    said = "FITSYNC_NIGHTLY_SCHEDULE: nightly_schedule has an invalid value 'every night at 3': it should be a cron"
    assert wrong.returncode != 0 and said in wrong.stderr, wrong.stderr
    zone = load(FITSYNC_NIGHTLY_TIMEZONE="Mars/Olympus")
    assert zone.returncode != 0 and "FITSYNC_NIGHTLY_TIMEZONE: nightly_timezone has an invalid value" in zone.stderr
    # every command says so where the settings are read (`fitsync doctor` too), before Dagster loads it
    assert checks.nightly(Config(nightly_schedule="0 22 * * 1-5")).ok
    with pytest.raises(ConfigError, match="nightly_schedule has an invalid value 'every night at 3'"):
        Config(nightly_schedule="every night at 3")


def _check_results(instance: DagsterInstance) -> dict[str, bool]:
    run = instance.get_runs(limit=1)[0]
    out = {}
    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data  # type: ignore[union-attr]
        out[evaluation.check_name] = evaluation.passed
    return out


@pytest.mark.sqlite_only  # the state store is incidental: the warehouse's checks
def test_asset_checks_pass_after_a_sync_and_fail_on_a_corrupted_warehouse(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 4, oldest_days=10)
    home = connect(aid)
    home.sync()
    assert _check_results(home.instance) == {
        "unique_keys": True,
        "children_have_parents": True,
        "details_present": True,
        "values_plausible": True,
    }

    # An orphan lap, an activity that lost its detail, and a split twice: the child tables have no key index since
    # schema 12, so nothing but the check would tell.
    with db.writing(home.warehouse) as conn:
        conn.execute("INSERT INTO laps (lap_id, activity_id, raw) VALUES (1, 999999999, '{}')")
        conn.execute("UPDATE activities SET detail_fetched_at = NULL WHERE activity_id = ?", [ids[0]])
        conn.execute("INSERT INTO splits_metric SELECT * FROM splits_metric LIMIT 1")
    home.sync()  # checks failing do not fail the run
    assert _check_results(home.instance) == {
        "unique_keys": False,
        "children_have_parents": False,
        "details_present": False,
        "values_plausible": True,
    }


@pytest.mark.parametrize("pool", [API_POOL, DUCKDB_POOL])
def test_the_cli_instance_limits_the_pools(tmp_path: Path, pool: str) -> None:
    """`fitsync sync` runs on FITSYNC_HOME/dagster (DAGSTER_HOME unset) with DuckDB writers one at a time."""
    script = (
        "import sys; from pathlib import Path; from fitsync.pipelines import instance; "
        "i = instance.instance(Path(sys.argv[1])); print(i.root_directory); "
        "print(i.event_log_storage.get_concurrency_info(sys.argv[2]).slot_count)"
    )
    result = processes.run(
        [sys.executable, "-c", script, str(tmp_path), pool],
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    root, slots = result.stdout.split()
    assert Path(root) == tmp_path / "dagster" and (tmp_path / "dagster" / "dagster.yaml").exists()
    assert int(slots) == (1 if pool == DUCKDB_POOL else 4)


def test_dagster_definitions_validate_without_warnings(tmp_path: Path) -> None:
    """What `dagster dev` loads: the workspace and the shipped dagster.yaml (run tag limits included) validate, and
    loading the definitions with every warning shown prints no deprecation or beta warning."""
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text((REPO / "pipelines" / "dagster.yaml").read_text())
    env = {**subprocess_env(tmp_path / "home"), "DAGSTER_HOME": str(dagster_home)}
    dagster = Path(sys.executable).with_name("dagster")
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "All code locations passed validation" in done.stdout + done.stderr, done

    load = (
        "from fitsync.pipelines.definitions import defs\n"
        "repository = defs.get_repository_def()\n"
        "repository.get_all_jobs(); repository.sensor_defs; repository.schedule_defs"
    )
    loaded = subprocess.run(
        [sys.executable, "-W", "always", "-c", load], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr
    assert [line for line in loaded.stderr.splitlines() if "Warning" in line] == [], loaded.stderr


def test_schedules_and_sensors_run_by_default_and_analysis_follows_each_load() -> None:
    """`dagster dev` needs no switch flipped: the nightly schedule and both sensors start running; after a warehouse
    load of an athlete, the automation sensor's evaluation asks for that athlete's analysis assets."""
    from dagster import (
        AssetMaterialization,
        DefaultScheduleStatus,
        DefaultSensorStatus,
        evaluate_automation_conditions,
        instance_for_test,
    )

    repository = defs.get_repository_def()
    assert {s.name: s.default_status for s in repository.schedule_defs} == {
        "nightly_sync": DefaultScheduleStatus.RUNNING,
        "lake_maintenance": DefaultScheduleStatus.RUNNING,  # a no-op on a warehouse file
    }
    assert {s.name: s.default_status for s in repository.sensor_defs} == {
        "webhook_events": DefaultSensorStatus.RUNNING,
        "analysis_automation": DefaultSensorStatus.RUNNING,
    }

    analysis = {AssetKey(n) for n in ("pr_progression", "zone_trends", "training_load", "performance", "volume")}
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(athletes_partitions.name, ["7", "8"])
        first = evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0  # nothing loaded yet: nothing to analyse
        instance.report_runless_asset_event(AssetMaterialization(asset_key="warehouse", partition="7"))
        after_load = evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        for key in analysis:  # only the athlete that was loaded
            assert after_load.get_requested_partitions(key) == {"7"}, key


def test_pool_limits_follow_the_warehouse_and_an_operators_choice_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lake takes loads from several runs at once; a limit someone set by hand is not reset by the next command."""
    from fitsync.pipelines.instance import LAKE_POOL_LIMITS, instance

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))

    def slots() -> int:
        return instance(tmp_path, lake=lake).event_log_storage.get_concurrency_info(DUCKDB_POOL).slot_count

    lake = False
    assert slots() == 1
    lake = True
    assert slots() == LAKE_POOL_LIMITS[DUCKDB_POOL]  # was fitsync's file default: raised for the lake
    instance(tmp_path).event_log_storage.set_concurrency_slots(DUCKDB_POOL, 3)  # an operator's choice
    assert slots() == 3
    lake = False
    assert slots() == 3


def test_lake_maintenance_on_a_warehouse_file_does_nothing_and_says_so(tmp_path: Path) -> None:
    from dagster import DagsterEventType, instance_for_test

    from fitsync.client.config import Config
    from fitsync.pipelines.lake_maintenance import lake_maintenance_job
    from fitsync.pipelines.sync_runner import resources_for

    config = Config.load({}, home=tmp_path)
    with instance_for_test() as instance:
        result = lake_maintenance_job.execute_in_process(resources=resources_for(config), instance=instance)
        said = [
            e.message
            for e in instance.all_logs(result.run_id)
            if e.dagster_event is None or e.dagster_event.event_type != DagsterEventType.STEP_FAILURE
        ]
    assert result.success
    assert any("no lake to maintain" in (m or "") for m in said), said
    assert not (tmp_path / "warehouse.duckdb").exists()
