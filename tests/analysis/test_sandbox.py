"""Over a warehouse the real pipeline built from the session sandbox (the seeded premium cyclist, synced through
OAuth and the sync runner): every view returns rows and equals its Polars function, the numbers tie back to the
tables, and the Dagster analysis assets materialize with previews, Parquet snapshots and the report."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, instance_for_test, materialize
from polars.testing import assert_frame_equal

from fitsync.assets import analysis as analysis_assets
from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret
from fitsync.pipelines.sync_runner import resources_for, sync_athlete
from fitsync.resources.partitions import athletes_partitions
from fitsync.warehouse import analysis, db

from ..conftest import ROOMY_LIMITS
from ..sandbox_harness import Harness, save_grant
from .test_metrics import read, recurrence


@dataclass
class Synced:
    path: Path
    athlete_id: int
    instance: DagsterInstance
    config: Config


@pytest.fixture(scope="module")
def synced(sb: Harness, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synced]:
    home = tmp_path_factory.mktemp("analysis-sandbox")
    athlete = sb.athlete_id(premium=True, index=0)  # the seeded cyclist: power, zones, segments (one private)
    app = sb.new_app()
    config = Config.load(
        {},
        home=home,
        base_url=sb.server.api_url,
        auth_url=sb.server.base_url,
        client_id=app.client_id,
        client_secret=Secret(app.client_secret),
        boundary_guard=0.05,
    )
    (home / "dagster").mkdir()
    with instance_for_test(temp_dir=str(home / "dagster")) as instance:
        with sb.settings(**ROOMY_LIMITS):
            with FitsyncClient(config) as client:
                save_grant(sb, client, app, athlete)
            outcome = sync_athlete(config, athlete, instance)
        assert outcome.success, outcome.metadata
        yield Synced(home / "warehouse.duckdb", athlete, instance, config)


# what a synced sandbox athlete has none of: an implausible FTP, a session twice, a date ahead of its receipt
HAS_NONE = ("profile_ftp_unused", "duplicate_activities", "future_activities")


def test_every_view_returns_rows(synced: Synced) -> None:
    """Every view has rows on a synced sandbox athlete, decoupling too: splits and laps carry heart rate."""
    for name in analysis.ANALYSES:
        if name == "athlete_zone_history" or name in HAS_NONE or name in analysis.FROM_STREAMS:
            continue  # one zone snapshot: checked below; the streams' views: below and test_streams_analysis.py
        frame = read(synced.path, name, synced.athlete_id)
        assert frame.height > 0, name
    # the recent rides' streams came with the sync (streams = recent): their power curve is there
    with db.reading(synced.path) as conn:
        [(powered,)] = conn.execute(
            "SELECT count(DISTINCT activity_id) FROM activity_streams WHERE athlete_id = ? AND watts IS NOT NULL",
            [synced.athlete_id],
        ).fetchall()
    assert read(synced.path, "season_power_curve", synced.athlete_id).height > 0 or not powered
    history = read(synced.path, "athlete_zone_history", synced.athlete_id)
    assert history["version"].unique().to_list() == [1] and history["valid_to"].null_count() == history.height


def test_the_numbers_tie_back_to_the_tables(synced: Synced) -> None:
    aid = synced.athlete_id
    with db.reading(synced.path) as conn:
        activities, seconds, efforts, km = conn.execute(
            "SELECT (SELECT count(*) FROM activities WHERE athlete_id = $1), "
            "(SELECT sum(seconds) FROM activity_zone_buckets b JOIN activities a USING (activity_id) "
            " WHERE a.athlete_id = $1), "
            "(SELECT count(*) FROM segment_efforts WHERE athlete_id = $1 AND NOT coalesce(hidden, false)), "
            "(SELECT sum(distance) FROM activities WHERE athlete_id = $1)",
            [aid],
        ).fetchall()[0]
    assert read(synced.path, "activity_calendar", aid).height == activities
    assert read(synced.path, "zone_time_weekly", aid)["seconds"].sum() == seconds
    assert read(synced.path, "segment_effort_progression", aid).height == efforts
    assert read(synced.path, "volume_yearly", aid)["distance_m"].sum() == pytest.approx(km)
    pmc = read(synced.path, "pmc", aid)
    ctl = recurrence(pmc["load"].to_list(), 42)
    assert max(abs(a - b) for a, b in zip(pmc["ctl"].to_list(), ctl)) < 1e-6
    load = read(synced.path, "activity_load", aid)
    assert set(load["load_source"]) >= {"power"}  # the cyclist has device power and an FTP
    summary = read(synced.path, "segment_pr_summary", aid)
    best = read(synced.path, "segment_effort_progression", aid).group_by("segment_id").agg(pl.col("elapsed_time").min())
    assert dict(summary.select("segment_id", "current_pr_s").iter_rows()) == dict(best.iter_rows())


def test_dagster_assets_materialize_with_previews_and_snapshots(synced: Synced) -> None:
    synced.instance.add_dynamic_partitions(athletes_partitions.name, [str(synced.athlete_id)])
    result = materialize(
        [
            analysis_assets.pr_progression,
            analysis_assets.zone_trends,
            analysis_assets.training_load,
            analysis_assets.performance,
            analysis_assets.volume,
            analysis_assets.report,
        ],
        partition_key=str(synced.athlete_id),
        instance=synced.instance,
        resources=resources_for(synced.config),
    )
    assert result.success
    metadata = {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    assert set(metadata) == {"pr_progression", "zone_trends", "training_load", "performance", "volume", "report"}
    snapshotted = {name for m in metadata.values() if "rows" in m for name in m["rows"].value}
    # every view but the building blocks (calendar, as-of dates, per-bucket zone time)
    assert snapshotted == set(analysis.ANALYSES) - {
        "activity_calendar",
        "athlete_as_of",
        "activity_zone_seconds",
    } - set(analysis.FROM_STREAMS)  # per-second views are read where they are, never snapshotted
    assert "| season | cp_watts | w_prime_kj |" in metadata["performance"]["preview"].value
    assert "| segment_name | attempts |" in metadata["pr_progression"]["preview"].value
    assert "| date | load | ctl | atl | tsb | form_band |" in metadata["training_load"]["preview"].value
    folder = Path(metadata["training_load"]["folder"].value)
    assert_frame_equal(pl.read_parquet(folder / "pmc.parquet"), analysis.view(synced.path, "pmc", synced.athlete_id))
    html = Path(metadata["report"]["path"].value)
    assert html.exists() and html.parent.name == str(synced.athlete_id)
    summary = metadata["report"]["summary"].value
    assert summary.startswith("### ") and "**Form**: CTL" in summary
    assert not math.isnan(float(summary.split("CTL ")[1].split(" ")[0]))
