"""`fitsync sync`'s summary says what the run did as counted: calls and rows per asset (the zones the details step
fetches under activity_zones), the failed steps alone when it failed, `--json`, `--quiet`; and who else holds an
athlete, on this host or another."""

from __future__ import annotations

import json
import socket

import pytest

from fitsync.client.runtime import FitsyncClient
from fitsync.state.store import AthleteBusy, held_elsewhere
from fitsync.sync import landing

from ..sandbox_harness import Harness
from .conftest import Connect, add_athlete, record_many
from .test_nothing_new import fitsync_sync

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


@pytest.mark.sqlite_only  # the state store is incidental: what the summary says
def test_the_summary_counts_each_assets_calls_and_rows_as_made(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 6, oldest_days=10)
    home = connect(aid, slow_refresh_hours=20)
    before = sb.counters()["requests"]
    done = fitsync_sync(home, "--json")
    assert done.returncode == 0, done.stderr
    [summary] = json.loads(done.stdout)["athletes"]
    assets = {a["asset"]: a for a in summary["assets"]}
    zoned = len(home.with_zones())
    assert 0 < zoned <= 6
    # the details step asked each activity's zones: counted where the zones go, not as details
    assert assets["activity_zones"]["calls"] == assets["activity_zones"]["counted"]["fetched"] == zoned
    assert assets["activity_zones"]["endpoints"] == {"GET /activities/{id}/zones": zoned}
    assert assets["activity_details"]["calls"] == assets["activity_details"]["counted"]["fetched"] == 6
    assert assets["activity_summaries"]["by_table"]["rows"]["activities"] == 6  # the sum's tables, in the JSON too
    assert summary["verdict"] == "ok" and summary["calls"] == sb.counters()["requests"] - before
    # --json is for scripts: as with --quiet, no progress and no tables on stderr when all went well
    assert f"athlete {aid}:" not in done.stderr and "┃" not in done.stderr, done.stderr
    # a later sync checks for anything new first: those calls are the sync's too, in a row of their own
    record_many(sb, aid, 1, oldest_days=1)
    before = sb.counters()["requests"]
    again = fitsync_sync(home, "--json")
    [summary] = json.loads(again.stdout)["athletes"]
    check = next(a for a in summary["assets"] if a["asset"] == "nothing-new check")
    assert check["calls"] in (1, 2) and check["notes"][0].startswith("then a run: the "), check
    assert summary["calls"] == sb.counters()["requests"] - before == sum(a["calls"] for a in summary["assets"])


def test_batches_an_earlier_run_fetched_are_said_where_they_are_loaded(sb: Harness, connect: Connect) -> None:
    """A run stopped between fetching and loading leaves its batches landed; the next run's first load takes them,
    and its rows were counted there without a word (details under "activity_summaries")."""
    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=5)
    home = connect(aid, slow_refresh_hours=20)
    with FitsyncClient(home.config) as client, client.store.transaction() as conn:
        landing.keep_unrecognized(conn, aid, "GET /athlete", "left by a run that stopped", {"x": 1})
    done = fitsync_sync(home, "--json")
    assert done.returncode == 0, done.stderr
    [summary] = json.loads(done.stdout)["athletes"]
    loads = {a["asset"]: a["notes"] for a in summary["assets"] if a["asset"] in ("activity_summaries", "warehouse")}
    assert "with 1 fetched batch(es) an earlier run did not load" in loads["activity_summaries"], loads
    assert not any("earlier run" in n for n in loads.get("warehouse", [])), loads  # this run's own, there


@pytest.mark.sqlite_only  # the state store is incidental: what the summary says
def test_a_failed_sync_lists_only_its_failures_and_quiet_says_only_them(sb: Harness, connect: Connect) -> None:
    aid = add_athlete(sb)
    record_many(sb, aid, 3, oldest_days=10)
    home = connect(aid, slow_refresh_hours=20)
    wrong = {"id": "x", "access_token": 5, "items": [1, 2]}
    with sb.settings(fault_answers={"GET /athletes/{id}/stats": {"body": wrong}}):
        failed = fitsync_sync(home)
        quiet = fitsync_sync(home, "--quiet", "--full")
        verbose = fitsync_sync(home, "--verbose", "--full")
    assert failed.returncode == 1, failed.stderr
    assert f"athlete {aid}: FAILED" in failed.stderr, failed.stderr
    # the failed step and its error on one line, once
    assert failed.stderr.count(f"athlete {aid}: athlete_stats: GET /athletes/{{id}}/stats answered") == 1, failed.stderr
    assert "athlete_stats" in failed.stderr and "activity_details" not in failed.stderr, failed.stderr
    assert quiet.returncode == 1, quiet.stderr
    assert "GET /athletes/{id}/stats answered" in quiet.stderr and "┃" not in quiet.stderr, quiet.stderr
    assert f"athlete {aid}: listing" not in quiet.stderr  # no progress either
    # --verbose adds what each asset did (as it does when all goes well), after the failure
    assert verbose.returncode == 1 and f"athlete {aid}: FAILED" in verbose.stderr, verbose.stderr
    table = verbose.stderr[verbose.stderr.index("what each asset did") :]
    # the title at the table's left edge, not centred over 240 columns of a log's width (~100 spaces before it)
    assert "\nwhat each asset did" in verbose.stderr, verbose.stderr
    assert "GET /athlete ×1" in table and "athlete_stats" in table, verbose.stderr

    fine = fitsync_sync(home, "--quiet")
    assert fine.returncode == 0 and "athlete" not in fine.stderr.replace("config.toml", ""), fine.stderr
    assert fine.stdout == ""  # a quiet sync that went well says nothing at all (cron mails only what needs attention)


@pytest.mark.sqlite_only  # the state store is incidental: what the summary says
def test_a_failed_steps_calls_are_counted_retries_included(sb: Harness, connect: Connect) -> None:
    """Every answer a 500: the failed steps leave no metadata, and the summary said "5 calls" of 15 made (the check's
    alone), the failed steps in no row. The run's calls are counted in its process, the failed steps' in a row."""
    aid = add_athlete(sb)
    record_many(sb, aid, 2, oldest_days=10)
    home = connect(aid, slow_refresh_hours=20, max_retries=2)
    with sb.settings(fault_error_rate=1.0):
        before = sb.counters()["requests"]
        failed = fitsync_sync(home, "--full", "--json")
        made = sb.counters()["requests"] - before
    assert failed.returncode == 1, failed.stderr
    [summary] = json.loads(failed.stdout)["athletes"]
    assert summary["verdict"] == "failed" and summary["calls"] == made > 0, (summary, made)
    assert summary["calls"] == sum(a["calls"] for a in summary["assets"]), summary["assets"]
    row = next(a for a in summary["assets"] if a["notes"] == ["failed: its calls, retries included"])
    assert row["calls"] > 0 and set(row["asset"].split(", ")) <= {f["step"] for f in summary["failures"]}, row
    # the last line names what to do next, and the service's error reads as it was sent ("Server", not "Server.")
    assert "`fitsync sync` continues where this stopped" in failed.stderr and "`fitsync doctor`" in failed.stderr
    assert "(Server: injected fault)" in failed.stdout and "Server.:" not in failed.stdout + failed.stderr


def test_an_athlete_held_elsewhere_names_the_host_or_the_local_process() -> None:
    assert held_elsewhere(AthleteBusy(7, "process db-worker-2:4711")) == (
        "athlete 7 is being synced on host db-worker-2 (process 4711): skipped here, it continues there"
    )
    here = f"process {socket.gethostname()}:4711"  # PostgreSQL's holder on this host
    assert "by process 4711 on this host" in held_elsewhere(AthleteBusy(7, here))
    assert "by process 99 on this host" in held_elsewhere(AthleteBusy(7, "process 99"))  # the SQLite lock file


def test_assets_not_due_show_only_with_verbose() -> None:
    """A step skipped by its cadence did nothing: the default table leaves it out, --verbose shows why."""
    from fitsync.cli import sync_summary

    assets = sync_summary._assets(
        {
            "athlete_stats": {"skipped": True, "notes": "- not due: refreshed 2.0 h ago, every 20 h", "api_calls": 0},
            "activities": {"api_calls": 1, "listed": 3, "new": 0},
        }
    )
    assert not assets["athlete_stats"].did_something and assets["athlete_stats"].notes
    assert assets["activities"].did_something


def test_rows_written_name_their_tables() -> None:
    """A load writes the profile, stats, zones and gear along with the activities: the table says which rows its
    sum counts (a bare "rows=79" for 60 activities explains nothing)."""
    import io

    from rich.console import Console

    from fitsync.cli import sync_summary

    written = {"athletes": 1, "athlete_snapshots": 0, "gear": 4, "athlete_stats_totals": 9, "athlete_zones": 5}
    assets = sync_summary._assets(
        {"activity_summaries": {"batches": 4, "rows_written": {**written, "activities": 60}, "rows_left_out": {}}}
    )
    out = Console(file=io.StringIO(), width=240)
    sync_summary.render(out, sync_summary.AthleteSummary(7, "ok", 0, 1.0, list(assets.values())), verbose=False)
    shown = out.file.getvalue()
    assert (
        "batches=4; rows written (new or changed)=79: activities 60, athlete_stats_totals 9, athlete_zones 5, gear 4, "
        "athletes 1" in shown
    ), shown
    assert "rows=" not in shown and "athlete_snapshots" not in shown


def test_a_log_gets_a_line_per_asset_a_terminal_a_table_and_nothing_done_no_empty_table() -> None:
    """Off a terminal (cron's mail) each asset is a line as long as what it says: a table padded every row to its
    widest, 200 characters and more, each wrapped into three in an 80-column reader."""
    import io

    from rich.console import Console

    from fitsync.cli import sync_summary

    assets = sync_summary._assets(
        {
            "activities": {"api_calls": 2, "listed": 60, "new": 60},
            "activity_summaries": {"batches": 1, "rows_written": {"activities": 60, "gear": 4}, "rows_left_out": {}},
            "activity_details": {"api_calls": 1, "fetched": 1, "remaining": 59, "notes": "- a note of some length"},
        }
    )
    summary = sync_summary.AthleteSummary(7, "ok", 3, 1.0, list(assets.values()))
    log = Console(file=io.StringIO(), width=240)
    sync_summary.render(log, summary, verbose=False)
    lines = log.file.getvalue().splitlines()
    assert "  activities: 2 calls; listed=60, new=60" in lines, lines
    assert "  activity_details: 1 call; fetched=1, remaining=59; a note of some length" in lines, lines
    assert max(map(len, lines)) < 100 and not any(c in log.file.getvalue() for c in "┃│━"), lines
    screen = Console(file=io.StringIO(), width=120, force_terminal=True)
    sync_summary.render(screen, summary, verbose=False)
    assert "┏" in screen.file.getvalue() and "asset" in screen.file.getvalue()
    idle = sync_summary.AthleteSummary(7, "partial", 0, 1.0, [])  # nothing any asset did: a title, no empty table
    empty = Console(file=io.StringIO(), width=120, force_terminal=True)
    sync_summary.render(empty, idle, verbose=False)
    assert "asset" not in empty.file.getvalue(), empty.file.getvalue()


def test_a_listing_that_went_all_the_way_back_says_why() -> None:
    from fitsync.cli import sync_summary

    why = "the stats count 3 more activities than fitsync knows"
    assets = sync_summary._assets({"activities": {"api_calls": 9, "mode": "full reconciliation", "full_because": why}})
    assert assets["activities"].notes[0] == f"full reconciliation because {why}"
    assert sync_summary._assets({"activities": {"mode": "incremental", "full_because": ""}})["activities"].notes == [
        "incremental"
    ]


def test_a_note_several_assets_share_is_said_once() -> None:
    """The spent budget each step met in turn was the same note six times over."""
    import io

    from rich.console import Console

    from fitsync.cli import sync_summary

    spent = "- rate budget spent until 13:45 (15-minute window): the rest waits for the next run"
    assets = sync_summary._assets(
        {
            "activity_details": {"api_calls": 7, "fetched": 7, "remaining": 40, "notes": spent},
            "activity_zones": {"api_calls": 0, "fetched": 0, "remaining": 47, "notes": spent},
            "segments": {"api_calls": 0, "fetched": 0, "queued": 9, "notes": spent},
            "activities": {"api_calls": 1, "listed": 47, "new": 47},
        }
    )
    out = Console(file=io.StringIO(), width=240)
    sync_summary.render(out, sync_summary.AthleteSummary(7, "partial", 8, 1.0, list(assets.values())), verbose=False)
    shown = out.file.getvalue()
    note = spent.removeprefix("- ")
    assert shown.count(note) == 1 and "activity_details, activity_zones, segments: " + note in shown, shown
    # a log's lines end where their text does: the verdict was a table's title, padded to the table's width
    assert shown.splitlines()[0] == "athlete 7: PARTIAL (8 calls in 1.0 s)", shown
    assert not [line for line in shown.splitlines() if line.endswith(" ")], shown


def test_each_line_names_the_athlete_once() -> None:
    """Step and load messages that begin with "athlete N: " themselves (a listing refused, rows left out) are joined
    into lines that already name the athlete: each line says "athlete N" once, the JSON's step errors not at all."""
    import io

    from rich.console import Console

    from fitsync.cli import sync_summary
    from fitsync.pipelines.sync_runner import LEFT_OUT, SyncOutcome

    refused = "athlete 7: the listing lacks 40 activities: nothing was deleted"
    failed = SyncOutcome(
        7,
        False,
        {},
        f"athlete 7: activities: {refused}; activity_details: boom",
        failures=(("activities", refused), ("activity_details", "boom")),
    )
    summary = sync_summary.from_outcome(failed, 7, 1.0)
    assert summary.lines == [
        "athlete 7: activities: the listing lacks 40 activities: nothing was deleted; activity_details: boom"
    ]
    assert [f["error"] for f in summary.failures] == ["the listing lacks 40 activities: nothing was deleted", "boom"]
    out = Console(file=io.StringIO(), width=300)
    sync_summary.render(out, summary, verbose=False)
    assert all(line.count("athlete 7") <= 1 for line in out.file.getvalue().splitlines()), out.file.getvalue()

    left = SyncOutcome(7, True, {"activity_details": {LEFT_OUT: "- athlete 7: 2 activities rows left out\n- odd"}})
    assert sync_summary.from_outcome(left, 7, 1.0).lines == [
        "athlete 7: 2 activities rows left out",
        "athlete 7: odd",
    ]
    assert sync_summary.named_once(7, "athlete 7 is being synced elsewhere") == "athlete 7 is being synced elsewhere"
