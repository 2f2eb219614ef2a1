"""`fitsync thresholds` as a process on a real warehouse file: an athlete's FTP, LTHR and threshold pace by date, set
(the load views take them from that date), listed, removed with the command that sets them again; values no person
has refused before anything is written; `fitsync query`, which only reads, says where they are set."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import duckdb
import pytest

from fitsync.warehouse import db

from ..processes import run_fitsync
from .conftest import subprocess_env

ATHLETE = 7


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A warehouse holding one athlete, whose profile FTP (184 W) fitsync first saw on 2025-06-01, and a ride with
    device power on 2025-03-10."""
    path = tmp_path / "warehouse.duckdb"
    db.migrate(path)
    with db.writing(path) as conn:
        conn.execute(
            "INSERT INTO athletes (athlete_id, firstname, lastname, synced_at, raw) VALUES (?, 'A', 'B', now(), '{}')",
            [ATHLETE],
        )
        conn.execute("INSERT INTO athlete_snapshots VALUES (?, DATE '2025-06-01', 184, 70, now())", [ATHLETE])
        conn.execute(
            """INSERT INTO activities (activity_id, athlete_id, name, sport_type, type, start_date, start_date_local,
                   moving_time, elapsed_time, device_watts, weighted_average_watts, listed_at, summary_raw)
               VALUES (1, ?, 'ride', 'Ride', 'Ride', TIMESTAMPTZ '2025-03-10 08:00:00+00', TIMESTAMP '2025-03-10 09:00:00',
                   3600, 3600, true, 250, now(), '{}')""",
            [ATHLETE],
        )
    return tmp_path


def fitsync(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(["thresholds", *args], env=subprocess_env(home))


def table(home: Path, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def test_set_list_and_remove_an_athlete_s_thresholds(home: Path) -> None:
    done = fitsync(home, "set", "--from", "2025-01-01", "--ftp", "250", "--note", "ramp test")
    assert done.returncode == 0, done.stderr
    assert f"athlete {ATHLETE}: from 2025-01-01: FTP 250 W (ramp test)" in done.stdout  # the only athlete: no --athlete
    # said: 36 % above the profile's, and what that does to a load (a typo would change every load after its date)
    assert "FTP 250 W is 36% above the profile's 184 W: a ride's power load on it is -46% against" in done.stderr
    # the load views take it from that date until the profile's FTP fitsync saw later, which is said with the
    # command that keeps 250 W after it (an FTP set for the seasons before the first sync must not override today's)
    assert table(home, "SELECT ftp, source FROM ftp_timeline ORDER BY valid_from") == [
        (250.0, "history"),
        (184.0, "profile"),
    ]
    assert table(home, "SELECT ftp_source, round(power_load) FROM activity_load") == [("history", 100.0)]
    keep = f"fitsync thresholds set --athlete {ATHLETE} --from 2025-06-01 --ftp 250"
    assert "FTP 250 W applies until 2025-06-01: from that day the profile's 184 W does" in done.stderr, done.stderr
    assert keep in done.stderr
    kept = run_fitsync(shlex.split(keep)[1:], env=subprocess_env(home))
    assert kept.returncode == 0 and "applies until" not in kept.stderr, kept.stderr
    assert table(home, "SELECT ftp, source FROM ftp_timeline ORDER BY valid_from") == [
        (250.0, "history"),
        (250.0, "history"),
    ]
    assert fitsync(home, "remove", "--from", "2025-06-01").returncode == 0

    again = fitsync(home, "set", "--from", "2025-01-01", "--lthr", "168", "--pace", "4:30")
    assert again.returncode == 0, again.stderr
    assert "FTP 250 W, LTHR 168 bpm, threshold pace 4:30 /km (ramp test) (was: FTP 250 W (ramp test))" in again.stdout
    assert table(home, "SELECT lthr, threshold_pace_s_per_km FROM analysis_thresholds") == [(168.0, 270.0)]

    listed = fitsync(home, "--athlete", str(ATHLETE))  # `list`, the default
    assert listed.returncode == 0 and "from 2025-01-01: FTP 250 W, LTHR 168 bpm" in listed.stdout, listed.stderr
    assert "FTP in force now: 184 W (the profile, from 2025-06-01)" in listed.stdout
    # a change the profile shows later does end it
    with db.writing(home / "warehouse.duckdb") as conn:
        conn.execute("INSERT INTO athlete_snapshots VALUES (?, DATE '2025-09-01', 190, 70, now())", [ATHLETE])
    assert "FTP in force now: 190 W (the profile, from 2025-09-01)" in fitsync(home, "list").stdout
    # a value no rider has (a typo of 19 for 190) is said, and not used
    with db.writing(home / "warehouse.duckdb") as conn:
        conn.execute("UPDATE athlete_snapshots SET ftp = 19 WHERE snapshot_date = DATE '2025-09-01'")
    typo = fitsync(home, "list").stdout
    assert "FTP in force now: 184 W (the profile, from 2025-06-01)" in typo, typo
    assert f"athlete {ATHLETE}: the profile's FTP of 19 W (seen 2025-09-01) is outside 50–600 W: not used" in typo
    with db.writing(home / "warehouse.duckdb") as conn:
        conn.execute("DELETE FROM athlete_snapshots WHERE snapshot_date = DATE '2025-09-01'")

    removed = fitsync(home, "remove", "--from", "2025-01-01")
    assert removed.returncode == 0, removed.stderr
    assert table(home, "SELECT count(*) FROM analysis_ftp_history") == [(0,)]
    assert table(home, "SELECT count(*) FROM analysis_thresholds") == [(0,)]
    # what was removed is said with the command that sets it again, which does
    command = removed.stdout.split("To set them again: fitsync thresholds ", 1)[1].strip()
    assert command == f"set --athlete {ATHLETE} --from 2025-01-01 --ftp 250 --lthr 168 --pace 4:30 --note 'ramp test'"
    restored = run_fitsync(["thresholds", *shlex.split(command)], env=subprocess_env(home))
    assert restored.returncode == 0, restored.stderr
    assert table(home, "SELECT ftp, note FROM analysis_ftp_history") == [(250.0, "ramp test")]

    # a note given later is the date's note, in both tables; a pace keeps its tenths when set again
    noted = fitsync(home, "set", "--from", "2025-01-01", "--pace", "4:30.5", "--note", "lab")
    assert "FTP 250 W, LTHR 168 bpm, threshold pace 4:30.5 /km (lab)" in noted.stdout, noted.stdout + noted.stderr
    assert table(home, "SELECT note FROM analysis_ftp_history UNION ALL SELECT note FROM analysis_thresholds") == [
        ("lab",),
        ("lab",),
    ]
    again = fitsync(home, "remove", "--from", "2025-01-01")
    assert "--pace 4:30.5 --note lab" in again.stdout, again.stdout

    gone = fitsync(home, "remove", "--from", "2024-01-01")
    assert gone.returncode == 1 and "has no thresholds from 2024-01-01" in gone.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        (["--ftp", "2500"], "FTP 2500 W is outside 50 W to 600 W"),
        (["--lthr", "40"], "LTHR 40 bpm is outside 100 bpm to 220 bpm"),
        (["--pace", "4:75"], "'4:75' is not a pace per km"),
        (["--pace", "0:45"], "threshold pace 0:45 /km is outside 2:30 /km to 12:00 /km"),
        (["--pace", "nan"], "'nan' is not a pace per km"),
        (["--ftp", "inf"], "FTP must be a number"),
        (["--ftp", "250", "--from", "2999-01-01"], "2999-01-01 is after today"),
        ([], "give at least one of --ftp, --lthr and --pace"),
        (["--ftp", "250", "--athlete", "8"], "athlete 8 has no activities in the warehouse"),
        (["--pace", "4.30"], "'4.30' is not a pace per km: did you mean 4:30?"),
        (["--ftp", "250", "--athlete", "Marianne"], "'Marianne' is not an athlete id"),
    ],
    ids=[
        "ftp-in-kilojoules",
        "lthr-too-low",
        "pace-not-a-pace",
        "pace-too-fast",
        "pace-nan",
        "ftp-infinite",
        "date-in-the-future",
        "nothing-to-set",
        "not-in-warehouse",
        "pace-in-minutes-with-a-dot",
        "athlete-by-name",
    ],
)
def test_a_value_no_person_has_is_refused_and_nothing_is_written(home: Path, args: list[str], says: str) -> None:
    done = fitsync(home, "set", "--from", "2025-01-01", *args)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert table(
        home, "SELECT count(*) FROM analysis_ftp_history UNION ALL SELECT count(*) FROM analysis_thresholds"
    ) == [
        (0,),
        (0,),
    ]


def test_query_says_it_only_reads_and_where_thresholds_are_set(home: Path) -> None:
    done = run_fitsync(
        ["query", "INSERT INTO analysis_ftp_history VALUES (7, DATE '2025-01-01', 250, NULL)"],
        env=subprocess_env(home),
    )
    assert done.returncode == 1 and "`fitsync thresholds set`" in done.stderr, done.stderr
