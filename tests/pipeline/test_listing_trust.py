"""A listing can be empty or short by mistake, and a date can be in the future: `--full` deletes only what a
complete, plausible listing lacks, and the incremental cursor never moves past now."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import materialize

from fitsync.assets.activities import activities
from fitsync.assets.athlete import athlete_stats
from fitsync.pipelines.sync_runner import resources_for, sync_athlete

from ..processes import run_fitsync
from ..sandbox_harness import Harness
from .conftest import (
    PROXY_404,
    ROUTE_404,
    Connect,
    Recorder,
    add_athlete,
    change,
    delete,
    record,
    record_many,
    subprocess_env,
)
from .test_sync import warehouse_ids

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


@pytest.mark.sqlite_only  # the state store is incidental: the listing's trust rules
def test_an_empty_full_listing_deletes_nothing_and_says_how_to_override(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 5, oldest_days=30)
    home = connect(aid)
    home.sync()
    with sb.settings(fault_empty_listing=True):  # an outage page, a proxy, a token silently scoped down
        outcome = home.sync(full=True, check=False)
        cli = run_fitsync(["sync", "--full"], env=subprocess_env(home.config.home))
    assert not outcome.success and "the service listed no activities while fitsync knows 5" in (outcome.error or "")
    assert warehouse_ids(home) == set(ids) and home.query("SELECT count(*) FROM deleted_activities") == [(0,)]
    assert home.needing("detail") == 0 and len(home.state("SELECT * FROM known_activities")) == 5
    assert cli.returncode == 1, cli.stderr
    assert "Nothing was deleted" in cli.stderr and f"fitsync sync --full --allow-shrink --athlete {aid}" in cli.stderr
    assert cli.stderr.count("the service listed no activities") == 1, cli.stderr  # said once, whole

    home.sync(full=True)  # the service answers again: nothing was lost, nothing to do
    assert warehouse_ids(home) == set(ids)


@pytest.mark.sqlite_only  # the state store is incidental: the listing's trust rules
def test_a_listing_that_shrinks_too_much_needs_allow_shrink(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 60, oldest_days=60)
    home = connect(aid)
    home.sync()
    for activity_id in ids[:52]:  # 52 of 60: more than a fifth, more than 50
        delete(sb, activity_id)
    outcome = home.sync(full=True, check=False)
    assert not outcome.success and "lacks 52 of the 60 activities" in (outcome.error or "")
    assert warehouse_ids(home) == set(ids)
    allowed = sync_athlete(home.config, aid, home.instance, full=True, allow_shrink=True)
    assert allowed.success and allowed.metadata["activities"]["reconciled_deletions"] == 52
    assert warehouse_ids(home) == set(ids[52:])
    assert home.query(
        "SELECT count(*) FROM deleted_activities WHERE reason = "
        "'missing in reconciliation, confirmed: the service answers 404'"
    ) == [(52,)]


def test_a_listing_quietly_short_of_a_few_deletes_only_what_the_service_confirms(
    sb: Harness, connect: Connect, recorder: Recorder
) -> None:
    """One activity in 15 missing (under the shrink guard, the stats too lenient to tell): each is asked for by id,
    as a webhook delete is; the ones the service still has stay, a real deletion goes."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 30, oldest_days=30)
    home = connect(aid)
    home.sync()
    gone = ids[3]
    delete(sb, gone)
    dropped = [i for i in ids if i % 15 == 0 and i != gone]
    recorder.clear()
    with sb.settings(fault_listing_drop_every=15):
        outcome = home.sync(full=True)
    meta = outcome.metadata["activities"]
    assert meta["reconciled_deletions"] == 1 and meta["missing_not_deleted"] == len(dropped)
    assert warehouse_ids(home) == set(ids) - {gone}
    assert home.query("SELECT activity_id, reason FROM deleted_activities") == [
        (gone, "missing in reconciliation, confirmed: the service answers 404")
    ]
    asked = {int(p.rsplit("/", 1)[1]) for p in recorder.details()}
    assert asked == {gone, *dropped}, "one call per missing activity, no more"
    assert {r[0] for r in home.state("SELECT activity_id FROM known_activities")} == set(ids) - {gone}

    home.sync(full=True)  # the listing is whole again: nothing more to do
    assert warehouse_ids(home) == set(ids) - {gone}


@pytest.mark.sqlite_only  # the state store is incidental: what counts as proof
@pytest.mark.parametrize(
    "answer",
    [
        {"status": 404, "text": PROXY_404, "media_type": "text/html"},  # a proxy's page
        {"status": 404, "body": ROUTE_404},  # the service's 404, but for the request's path, not the activity
    ],
    ids=["html", "route"],
)
def test_a_404_that_is_not_the_services_word_on_the_activity_deletes_nothing(
    sb: Harness, connect: Connect, answer: dict[str, Any]
) -> None:
    """A listing quietly short, and each activity it lacks answered with a 404 that is not the service's answer about
    that activity: no proof, nothing deleted, each counted as not deleted."""
    aid = add_athlete(sb)
    ids = record_many(sb, aid, 30, oldest_days=30)
    home = connect(aid)
    home.sync()
    dropped = [i for i in ids if i % 15 == 0]
    with sb.settings(fault_listing_drop_every=15, fault_answers={"GET /activities/{id}": answer}):
        outcome = home.sync(full=True, check=False)
    assert warehouse_ids(home) == set(ids)
    assert home.query("SELECT count(*) FROM deleted_activities") == [(0,)]
    assert outcome.metadata["activities"]["missing_not_deleted"] == len(dropped)

    new = record_many(sb, aid, 2, oldest_days=1)  # their details answered so: the run fails, nothing is taken as gone
    with sb.settings(fault_answers={"GET /activities/{id}": answer}):
        outcome = home.sync(check=False)
    assert not outcome.success and warehouse_ids(home) == set(ids) | set(new)
    assert home.query("SELECT count(*) FROM deleted_activities") == [(0,)] and home.needing("detail") == 2


def test_a_future_dated_activity_does_not_move_the_cursor_past_now(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    future = record(sb, aid, days_ago=-365)  # next year: a clock error or a hand-typed date
    home = connect(aid)
    home.sync()
    assert future in warehouse_ids(home)  # loaded all the same
    later = record(sb, aid, days_ago=0.1)  # uploaded after the first sync, dated now
    home.sync()
    assert later in warehouse_ids(home), "an upload after a future-dated activity is found incrementally"
    change(sb, future, name="Still next year")
    home.sync()
    assert home.query("SELECT name FROM activities WHERE activity_id = ?", future) == [("Still next year",)]


@pytest.mark.sqlite_only  # the state store is incidental: the listing's trust rules
def test_an_import_backdated_beyond_the_overlap_is_found_without_full(sb: Harness, connect: Connect) -> None:
    """250 activities uploaded today with start dates a year back: no incremental listing shows them, the athlete's
    stats count them, so the listing goes all the way back by itself. Ordinary new uploads stay incremental.
    (The listing step and the stats it runs after are materialized alone: the 500 detail and zone calls that
    follow are what every other sync test covers.)"""
    aid = add_athlete(sb)
    recent = [record(sb, aid, days_ago=10 - i, sport_type="Run", visibility="everyone") for i in range(5)]
    home = connect(aid)
    home.sync()
    recent.append(record(sb, aid, days_ago=0.5, sport_type="Ride", visibility="everyone"))
    recent.append(record(sb, aid, days_ago=0.4, sport_type="Walk", visibility="everyone"))  # not in the stats
    ordinary = home.sync()
    assert ordinary.metadata["activities"]["mode"] == "incremental" and ordinary.metadata["activities"]["new"] == 2

    def list_activities() -> dict[str, Any]:
        result = materialize(
            [athlete_stats, activities],
            partition_key=str(aid),
            instance=home.instance,
            resources=resources_for(home.config),
        )
        assert result.success
        [mat] = [m for m in result.asset_materializations_for_node("activities")]
        return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}

    imported = [record(sb, aid, days_ago=365 + i / 10, sport_type="Run", visibility="everyone") for i in range(250)]
    meta = list_activities()
    assert meta["mode"] == "full reconciliation" and "stats count 250 more activities" in meta["full_because"], meta
    assert meta["new"] == 250 and meta["reconciled_deletions"] == 0
    known = {r[0] for r in home.state("SELECT activity_id FROM known_activities")}
    assert known == set(recent) | set(imported)
    assert home.needing("detail") == 250  # queued for their details, like any new activity

    assert list_activities()["mode"] == "incremental"  # the gap is closed


@pytest.mark.sqlite_only  # the state store is incidental: the listing's trust rules
def test_a_full_listing_the_stats_contradict_deletes_nothing(sb: Harness, connect: Connect) -> None:
    """A listing short by about half (fewer than the shrink guard's 50) while the athlete's stats still count every
    activity: the stats are believed, nothing is deleted, the message says why and how to override."""
    aid = add_athlete(sb)
    ids = [record(sb, aid, days_ago=30 - i, sport_type="Run", visibility="everyone") for i in range(30)]
    home = connect(aid)
    home.sync()
    with sb.settings(fault_listing_drop_every=2):
        outcome = home.sync(full=True, check=False)
    assert not outcome.success
    assert "the athlete's stats still count" in (outcome.error or "") and "--allow-shrink" in (outcome.error or "")
    assert warehouse_ids(home) == set(ids) and home.query("SELECT count(*) FROM deleted_activities") == [(0,)]

    delete(sb, ids[0])  # a real deletion: the stats drop with it, so it goes through
    assert home.sync(full=True).metadata["activities"]["reconciled_deletions"] == 1
    assert warehouse_ids(home) == set(ids[1:])
