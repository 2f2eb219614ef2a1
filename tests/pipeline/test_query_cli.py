"""`fitsync query` as an analyst uses it, as a process on a real warehouse file: formats that round-trip, no silent
truncation, scripts with comments and several statements, the list of tables and views."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from fitsync.warehouse import db

from ..processes import Terminal, run_fitsync
from .conftest import REPO, subprocess_env

ROWS_SQL = (
    "SELECT i, i / 2 AS half, 'row ' || i AS label, DATE '2026-01-01' + CAST(i % 365 AS INTEGER) AS day "
    "FROM range(10000) t(i) ORDER BY i"
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("query-home")
    db.migrate(folder / "warehouse.duckdb")
    return folder


def query(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_fitsync(["query", *args], env=subprocess_env(home, COLUMNS="120"), input=stdin)


def expected() -> pl.DataFrame:
    return duckdb.connect().sql(ROWS_SQL).pl()


def test_a_10000_row_result_round_trips_as_csv_json_and_parquet(home: Path, tmp_path: Path) -> None:
    frame = expected()
    as_csv = query(home, ROWS_SQL, "--format", "csv", "-o", str(tmp_path / "out.csv"))
    assert as_csv.returncode == 0 and as_csv.stderr == "", as_csv.stderr  # from a script or cron: nothing said
    assert pl.read_csv(tmp_path / "out.csv", try_parse_dates=True).equals(frame)

    as_json = query(home, ROWS_SQL, "--format", "json")
    records = json.loads(as_json.stdout)
    assert as_json.stderr == "", as_json.stderr  # quiet in a pipe: no engine warnings
    assert len(records) == 10000 and records[1] == {"i": 1, "half": 0.5, "label": "row 1", "day": "2026-01-02"}

    as_parquet = query(home, ROWS_SQL, "--format", "parquet", "-o", str(tmp_path / "out.parquet"))
    assert as_parquet.returncode == 0, as_parquet.stderr
    assert pl.read_parquet(tmp_path / "out.parquet").equals(frame)

    refused = query(home, ROWS_SQL, "--format", "parquet")
    assert refused.returncode == 2 and "--output" in refused.stderr and "Traceback" not in refused.stderr


def test_an_export_takes_sql_as_written_with_its_semicolon_and_comments(home: Path, tmp_path: Path) -> None:
    """A statement as a .sql file ends it (`;`, a comment after it) exports as it shows: the last statement's result."""
    script = tmp_path / "export.sql"
    script.write_text("SELECT 1 AS a;\nSELECT 2 AS b, ';' AS c; -- the one exported\n")
    for args in (("-f", str(script)), ("SELECT 2 AS b, ';' AS c -- a trailing note",), ("SELECT 2 AS b, ';' AS c ;",)):
        ran = query(home, *args, "--format", "csv")
        assert ran.returncode == 0 and ran.stdout.splitlines() == ["b,c", "2,;"], (args, ran.stderr)
    written = query(home, "-f", str(script), "-o", str(tmp_path / "b.parquet"))
    assert written.returncode == 0 and pl.read_parquet(tmp_path / "b.parquet")["b"].to_list() == [2], written.stderr


def test_a_table_says_how_many_rows_it_does_not_show(home: Path) -> None:
    shown = query(home, ROWS_SQL)
    assert shown.returncode == 0, shown.stderr
    assert "row 199" in shown.stdout and "row 200 " not in shown.stdout
    assert "10,000 rows (200 shown): raise --limit" in shown.stdout and "--format csv" in shown.stdout
    assert "shown)" not in query(home, ROWS_SQL, "--limit", "10000").stdout


def test_every_table_ends_with_its_row_count_an_empty_one_too(home: Path) -> None:
    """As psql's "(0 rows)": an empty box alone read as a result that failed to show."""
    empty = query(home, "SELECT 1 AS a WHERE false")
    assert empty.returncode == 0 and empty.stdout.rstrip().endswith("0 rows"), empty.stdout
    three = query(home, "SELECT * FROM range(3)")
    assert three.stdout.rstrip().endswith("3 rows"), three.stdout


def test_a_script_with_comments_and_several_statements_shows_each_result(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "report.sql"
    script.write_text("-- volume by sport\nSELECT 1 AS first_result;\n/* and then */ SELECT 2 AS second_result;\n")
    ran = query(home, "-f", str(script))
    assert ran.returncode == 0, ran.stderr
    assert "first_result" in ran.stdout and "second_result" in ran.stdout
    assert "second_result" in query(home, "-f", "-", stdin=script.read_text()).stdout
    commented = query(home, "-- a leading comment\nSELECT 42 AS answer")
    assert commented.returncode == 0 and "42" in commented.stdout, commented.stderr
    broken = query(home, "SELECT 1; SELEKT 2")
    assert broken.returncode == 1 and "Parser Error" in broken.stderr and "Traceback" not in broken.stderr


def test_list_names_the_tables_and_views(home: Path) -> None:
    listed = query(home, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "activities" in listed.stdout and "table" in listed.stdout and "view" in listed.stdout
    assert "One row per activity" in listed.stdout  # each with what it holds

    described = query(home, "--describe", "pmc", "--format", "csv")
    assert described.returncode == 0, described.stderr
    rows = {line.split(",")[0]: line for line in described.stdout.splitlines()[1:]}
    assert {"ctl", "atl", "tsb"} <= set(rows) and all(line.split(",", 2)[2] for line in rows.values()), rows
    unknown = query(home, "--describe", "no_such'view")
    assert unknown.returncode == 2 and "fitsync query --list" in unknown.stderr and "Traceback" not in unknown.stderr
    assert "Did you mean" not in unknown.stderr, unknown.stderr  # nothing close: no guess

    typo = query(home, "--describe", "activitis")
    assert typo.returncode == 2 and 'Did you mean "activities"?' in typo.stderr, typo.stderr
    assert "fitsync query --list" in typo.stderr and "Traceback" not in typo.stderr


def test_a_query_loads_no_dataframe_library(home: Path) -> None:
    """`fitsync query` starts fast: DuckDB writes the exports itself, so neither Polars nor Dagster is imported."""
    probe = (
        "import sys; from fitsync.cli.main import main\n"
        "sys.argv = ['fitsync', 'query', 'SELECT 1 AS one', '--format', 'csv']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('polars', 'dagster', 'altair', 'fitsync.sandbox') if m in sys.modules))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=subprocess_env(home), capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["one", "1", "[]"], ran.stdout


WIDE_SQL = "SELECT " + ", ".join(f"i * {n} AS measure_{n:02d}" for n in range(40)) + " FROM range(3) t(i)"


def test_a_wide_result_elides_columns_and_counts_them_instead_of_squeezing(home: Path) -> None:
    shown = query(home, WIDE_SQL)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(map(len, lines)) <= 120, "the box fits the screen"
    headers = [part.strip() for part in lines[1].split("┃") if part.strip()]
    assert headers[0] == "measure_00" and headers[-1] == "measure_39", "the first and last columns, whole"
    assert "…" in lines[2] and all(h.startswith("measure_") and len(h) == 10 for h in headers), headers
    assert f"40 columns ({len(headers)} shown)" in shown.stdout and "--mode line" in shown.stdout
    row = next(line for line in lines if line.startswith("│") and "78" in line)  # i = 2: measure_39 = 78
    cells = row.split("│")[1:-1]
    assert cells[1] == " " * (len(cells[1]) - 2) + "2 " and cells[-1].endswith(" 78 "), "numbers right-aligned"

    as_lines = query(home, WIDE_SQL, "--mode", "line")
    assert as_lines.returncode == 0, as_lines.stderr
    assert all(f"measure_{n:02d} = {2 * n}" in as_lines.stdout for n in range(40)), as_lines.stdout[-400:]


def test_an_sql_error_keeps_duckdbs_hints_and_caret(home: Path) -> None:
    wrong = query(home, "SELECT * FROM activitiez")
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert 'Did you mean "activities"' in wrong.stderr and "LINE 1: SELECT * FROM activitiez" in wrong.stderr
    assert re.search(r"LINE 1: SELECT \* FROM activitiez\n +\^", wrong.stderr), wrong.stderr  # the caret
    # a name DuckDB cannot place also points at the warehouse's own list (its guess may be a system table)
    unplaced = query(home, "SELECT * FROM sequences")
    assert unplaced.returncode == 1 and "`fitsync query --list`" in unplaced.stderr, unplaced.stderr
    # an export's error points at the SQL as typed, not at the COPY it is wrapped in
    exported = query(home, "--format", "csv", "SELECT nosuch FROM activities")
    assert exported.returncode == 1 and exported.stdout == "", exported.stderr
    line = "LINE 1: SELECT nosuch FROM activities"
    assert re.search(rf"{line}\n {{{len('LINE 1: SELECT ')}}}\^", exported.stderr), exported.stderr


def test_an_error_in_a_scripts_later_statement_names_the_scripts_line(home: Path, tmp_path: Path) -> None:
    """DuckDB counts LINE from the statement's start; a script's reader looks for the line in the file."""
    script = tmp_path / "report.sql"
    script.write_text("-- first\nSELECT 1 AS one;\n" + "\n" * 5 + "-- second\nSELECT\n  nosuch\nFROM activities;\n")
    wrong = query(home, "-f", str(script))
    assert wrong.returncode == 1 and "statement 2:" in wrong.stderr, wrong.stderr
    line = "LINE 10:   nosuch"  # the file's line 10 (its statement's line 9: the caret moves one to the right)
    assert script.read_text().splitlines()[9] == "  nosuch"
    assert re.search(rf"{line}\n {{{len('LINE 10:   ')}}}\^", wrong.stderr), wrong.stderr  # the caret under it
    exported = query(home, "-f", str(script), "--format", "csv")  # the last statement exported: the same line
    assert exported.returncode == 1 and re.search(rf"{line}\n {{{len('LINE 10:   ')}}}\^", exported.stderr)


def test_query_with_no_sql_at_a_terminal_is_an_sql_prompt(home: Path) -> None:
    term = Terminal(home, "query")
    try:
        term.wait_for("fitsync> ")
        term.type("SELECT 41 + 1\n")
        term.wait_for("...> ")  # a statement runs over lines until its ';'
        term.type("AS answer;\n")
        term.wait_for("42")
        term.type("SELECT * FROM activitiez;\n")
        shown = term.wait_for('Did you mean "activities"')  # an error is shown and the prompt goes on
        term.type("SELECT 'still here' AS s;\n")
        term.wait_for("fitsync> ", times=4)  # the prompt after the third statement's result
        assert "still here" in term.seen.decode(errors="replace")
        term.type("\x1b[A\x1b[A\x1b[A\n")  # up three times: the first statement, whole, though typed on two lines
        term.wait_for("fitsync> ", times=5)
        assert term.seen.count(b"42") == 2, term.seen.decode(errors="replace")
        term.type("\x04")  # Ctrl-D leaves
        assert term.close() == 0
    finally:
        term.process.kill()
    assert "answer" in shown and "Traceback" not in term.seen.decode(errors="replace")


def test_the_sql_prompts_history_is_kept_for_the_next_session(home: Path, tmp_path: Path) -> None:
    """As the DuckDB shell keeps ~/.duckdb_history: in the user's state folder, not in FITSYNC_HOME."""
    env = subprocess_env(home, COLUMNS="100", XDG_STATE_HOME=str(tmp_path / "state"))
    before = sorted(p.name for p in home.iterdir())
    first = Terminal(home, "query", env=env)
    try:
        first.wait_for("fitsync> ")
        first.type("SELECT 6 * 7 AS remembered;\n")
        first.wait_for("42")
        first.type(".quit\n")
        assert first.close() == 0
    finally:
        first.process.kill()
    second = Terminal(home, "query", env=env)
    try:
        second.wait_for("fitsync> ")
        second.type("\x1b[A\x1b[A\n")  # up twice (past its .quit): the last session's statement
        shown = second.wait_for("42")
        second.wait_for("fitsync> ", times=2)
        second.type("\x04")
        assert second.close() == 0, shown
    finally:
        second.process.kill()
    assert (tmp_path / "state" / "fitsync" / "sql_history").exists()
    assert sorted(p.name for p in home.iterdir()) == before  # nothing written in the home


def test_the_sql_prompts_mode_switches_between_a_table_and_lines(home: Path) -> None:
    """As the DuckDB shell's `.mode`: `.mode line` at the prompt, not only `--mode line` when starting it."""
    term = Terminal(home, "query")
    try:
        term.wait_for("fitsync> ")
        term.type(".mode line\n")
        term.wait_for("fitsync> ", times=2)
        term.type("SELECT 7 AS seven, 'x' AS ex;\n")
        term.wait_for("\x1b[0m = 7")  # `seven = 7`, its name in bold
        term.type(".mode\n")
        term.wait_for("line (.mode box or .mode line changes it)")
        term.type(".mode csv\n")
        term.wait_for(".mode csv: not a mode here; choose box or line")
        term.type(".mode box\n")
        term.type("SELECT 8 AS eight;\n")
        seen = term.wait_for("eight", times=2)  # typed, then its column's header
        seen = term.wait_for("└")  # a box again
        term.type(".quit\n")
        assert term.close() == 0, seen
    finally:
        term.process.kill()
    assert "unknown command" not in seen, seen


def test_the_sql_prompt_answers_tables_help_and_quit(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`.tables` is longer than the terminal and is not paged: a pager took the next lines typed as its commands."""
    monkeypatch.delenv("PAGER", raising=False)
    monkeypatch.delenv("MANPAGER", raising=False)
    term = Terminal(home, "query")
    try:
        term.wait_for("fitsync> ")
        term.type(".tables\n")
        term.wait_for("One row per activity")  # as --list: each table with what it holds
        term.wait_for("fitsync> ", times=2)  # the prompt again, not a pager
        term.type("SELECT * FROM activitie;\n")
        term.wait_for("`.tables` lists the warehouse's tables")  # the prompt's own way, not `fitsync query --list`
        term.type("help\n")
        term.wait_for("Ctrl-C drops")
        term.type(".help\n")
        term.wait_for("Ctrl-C drops", times=2)
        term.type(".schema activities\n")
        term.wait_for("unknown command, .help lists them")
        term.type("SELECT 'prompt goes on' AS s;\n")
        term.wait_for("prompt goes on", times=2)  # typed, then shown
        seen = term.wait_for("fitsync> ", times=7)
        assert "...> " not in seen, "no command became the first line of a statement"
        term.type(".quit\n")
        assert term.close() == 0
    finally:
        term.process.kill()
    assert "Traceback" not in term.seen.decode(errors="replace")


def test_the_output_files_extension_chooses_the_format(home: Path, tmp_path: Path) -> None:
    for name in ("out.csv", "out.json", "out.parquet"):
        ran = query(home, "SELECT 1 AS a, 'x' AS b", "-o", str(tmp_path / name))
        assert ran.returncode == 0 and ran.stdout == ran.stderr == "", (name, ran.stdout, ran.stderr)
    assert (tmp_path / "out.csv").read_text() == "a,b\n1,x\n"
    assert json.loads((tmp_path / "out.json").read_text()) == [{"a": 1, "b": "x"}]
    assert pl.read_parquet(tmp_path / "out.parquet").to_dicts() == [{"a": 1, "b": "x"}]

    unknown = query(home, "SELECT 1 AS a", "-o", str(tmp_path / "out.txt"))
    assert unknown.returncode == 2 and "--format" in unknown.stderr and "out.txt" in unknown.stderr, unknown.stderr
    assert not (tmp_path / "out.txt").exists() and unknown.stdout == ""
    told = query(home, "SELECT 1 AS a", "-o", str(tmp_path / "out.txt"), "--format", "csv")
    assert told.returncode == 0 and (tmp_path / "out.txt").read_text() == "a\n1\n", told.stderr
    as_table = query(home, "SELECT 1 AS a", "-o", str(tmp_path / "t.csv"), "--format", "table")
    assert as_table.returncode == 2 and "--output" in as_table.stderr and not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("SELECT 1 AS a", "--limit", "-1"), "--limit"),
        (("SELECT 1 AS a", "--limit", "0"), "--limit"),
        (("SELECT 1 AS a", "--mode", "line", "--format", "csv"), "--mode"),
        (("SELECT 1 AS a", "--mode", "box", "--format", "json"), "--mode"),
        (("SELECT 1 AS a", "--format", "csv", "-o", "out.parquet"), "'out.parquet' names parquet, --format says csv"),
        (("SELECT 1 AS a", "--list"), "--list"),
    ],
)
def test_options_that_cannot_go_together_are_usage_errors(home: Path, args: tuple[str, ...], said: str) -> None:
    refused = query(home, *args)
    assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and "TypeError" not in refused.stderr and refused.stdout == ""


def test_an_output_in_a_folder_that_is_not_there_is_a_usage_error(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "out.csv"
    refused = query(home, "SELECT 1 AS a", "-o", str(missing))
    assert refused.returncode == 2 and f"the folder {missing.parent} does not exist" in refused.stderr, refused.stderr
    assert "IO Error" not in refused.stderr and not missing.parent.exists()


def test_an_output_that_cannot_be_written_says_why(home: Path) -> None:
    """A full disk (/dev/full stands for one): the file and the system's reason, not DuckDB's IO Error."""
    full = query(home, ROWS_SQL, "--format", "csv", "-o", "/dev/full")
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
    assert "could not write /dev/full (No space left on device): free space there" in full.stderr, full.stderr
    assert "IO Error" not in full.stderr


def test_output_dash_is_standard_output(home: Path) -> None:
    shown = query(home, "SELECT 42 AS a", "-o", "-")
    assert shown.returncode == 0 and shown.stdout.splitlines() == ["a", "42"], shown.stdout + shown.stderr


def test_an_empty_json_result_is_an_empty_array(home: Path, tmp_path: Path) -> None:
    shown = query(home, "SELECT 1 AS a WHERE false", "--format", "json")
    assert shown.returncode == 0 and shown.stdout == "[]\n", repr(shown.stdout)
    written = query(home, "SELECT 1 AS a WHERE false", "-o", str(tmp_path / "none.json"))
    assert written.returncode == 0 and json.loads((tmp_path / "none.json").read_text()) == []


def test_sql_as_an_argument_and_with_f_is_a_usage_error(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "r.sql"
    script.write_text("SELECT 2 AS from_file;\n")
    both = query(home, "SELECT 1 AS from_argument", "-f", str(script))
    assert both.returncode == 2 and "not both" in both.stderr and both.stdout == "", both.stderr


def test_sql_on_stdin_is_read_as_the_shells_read_it(home: Path, tmp_path: Path) -> None:
    piped = query(home, "--format", "csv", stdin="SELECT 1 AS one;")
    assert piped.returncode == 0 and piped.stdout == "one\n1\n", piped.stderr
    read = query(home, "-f", "-", "--format", "csv", stdin="SELECT 1 AS one")
    assert read.returncode == 0 and read.stdout == "one\n1\n", read.stderr
    script = tmp_path / "r.sql"
    script.write_text("SELECT 2 AS two")
    with script.open() as redirected:  # `fitsync query < r.sql`
        done = subprocess.run(
            [sys.executable, "-m", "fitsync.cli.main", "query", "--format", "csv"],
            cwd=REPO,
            stdin=redirected,
            env=subprocess_env(home),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0 and done.stdout == "two\n2\n", done.stderr
    nothing = subprocess.run(
        [sys.executable, "-m", "fitsync.cli.main", "query"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        env=subprocess_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert nothing.returncode == 2 and "on stdin" in nothing.stderr and "--list" in nothing.stderr, nothing.stderr


def test_one_row_is_one_row(home: Path, tmp_path: Path) -> None:
    cut = query(home, "SELECT * FROM range(2) t(i) ORDER BY i", "--limit", "1")
    assert "2 rows (1 shown)" in cut.stdout, cut.stdout
    several = query(home, "SELECT 1 AS a; SELECT 2 AS b")
    assert several.stdout.count("\n1 row\n") == 2 and "1 rows" not in several.stdout, several.stdout
    # what an export wrote is said at a terminal only (a script or cron hears nothing when all went well)
    term = Terminal(home, "query", "SELECT 1 AS a", "-o", str(tmp_path / "one.csv"))
    try:
        shown = term.wait_for(f"1 row → {tmp_path / 'one.csv'}")
        assert term.close() == 0, shown
    finally:
        term.process.kill()


@pytest.mark.parametrize("args", [("--format", "csv"), ("--mode", "line", "--limit", "200000")])
def test_a_reader_that_goes_away_ends_the_query_quietly(home: Path, args: tuple[str, ...]) -> None:
    """`fitsync query … | head -1`: no error when head has read enough; the status of a process that SIGPIPE
    ended (141), as sqlite3 and duckdb give."""
    process = subprocess.Popen(
        [sys.executable, "-m", "fitsync.cli.main", "query", "SELECT * FROM range(200000) t(i)", *args],
        cwd=REPO,
        env=subprocess_env(home, COLUMNS="120"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # head -1 has what it wants
        errors = process.stderr.read().decode()
        assert process.wait(timeout=60) == 141, errors
    finally:
        process.kill()
    assert first.strip() in (b"i", b"i = 0") and errors == "", errors


def test_booleans_are_written_as_duckdb_writes_them(home: Path) -> None:
    sql = "SELECT true AS yes, false AS no, [true, NULL] AS some, {'ok': false} AS nested"
    boxed = query(home, sql)
    assert boxed.returncode == 0, boxed.stderr
    row = next(line for line in boxed.stdout.splitlines() if line.startswith("│"))
    assert [cell.strip() for cell in row.split("│")[1:-1]] == ["true", "false", "[true, NULL]", "{'ok': false}"]
    lined = query(home, sql, "--mode", "line")
    assert "yes = true" in lined.stdout and "no = false" in lined.stdout and "True" not in lined.stdout


def test_maps_read_as_maps_not_as_structs(home: Path) -> None:
    """DuckDB hands MAP and STRUCT values alike to Python (dicts): the column's type tells them apart."""
    sql = "SELECT MAP(['a', 'b'], [1, 2]) AS m, {'k': MAP([1], [true])} AS s, [MAP(['x'], [NULL])] AS l"
    boxed = query(home, sql)
    assert boxed.returncode == 0, boxed.stderr
    row = next(line for line in boxed.stdout.splitlines() if line.startswith("│"))
    assert [cell.strip() for cell in row.split("│")[1:-1]] == ["{a: 1, b: 2}", "{'k': {1: true}}", "[{x: NULL}]"]
    lined = query(home, sql, "--mode", "line")
    assert "m = {a: 1, b: 2}" in lined.stdout, lined.stdout


def test_a_query_waiting_for_a_writer_says_so_and_runs_once_it_is_gone(tmp_path: Path) -> None:
    """Another process writing the warehouse (a sync's load) holds its lock: the query waited 10–13 s in silence."""
    db.migrate(tmp_path / "warehouse.duckdb")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
         "sys.stdin.read()", str(tmp_path / "warehouse.duckdb")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waiting = subprocess.Popen(
            [sys.executable, "-m", "fitsync.cli.main", "query", "SELECT 42 AS answer"],
            cwd=REPO,
            env=subprocess_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert waiting.stderr is not None
        said = waiting.stderr.readline()  # blocks until the notice (2 s into the wait) or the process's end
        assert said.startswith("Waiting: the warehouse ") and f"being written by process {holder.pid} (" in said, said
        with pytest.raises(db.WarehouseBusy) as busy:  # a reader that waited its whole timeout: one line to act on
            with db.reading(tmp_path / "warehouse.duckdb", timeout=0.5):
                pass
        assert f"stayed locked by process {holder.pid} (" in str(busy.value) and "run this again" in str(busy.value)
        assert "See also" not in str(busy.value) and "IO Error" not in str(busy.value)
    finally:
        holder.communicate("")  # closes its stdin: the writer ends and lets go
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and "42" in out, err


def _left_by_an_older_fitsync(path: Path) -> None:
    """A view as an older fitsync defined it, and its record of the views' checksum."""
    db.migrate(path)
    with db.writing(path) as conn:
        conn.execute("CREATE OR REPLACE VIEW eddington AS SELECT 1 AS stale")
        conn.execute("UPDATE schema_views SET checksum = 'from an older fitsync'")


def test_after_an_upgrade_a_query_reads_this_fitsyncs_views(tmp_path: Path) -> None:
    """A view changed by an upgrade (no migration of tables): `fitsync query` answered from the view the last sync
    left, as the older version computed it, until the next sync; it now brings the views up to date first."""
    _left_by_an_older_fitsync(tmp_path / "warehouse.duckdb")
    answered = query(tmp_path, "SELECT * FROM eddington", "--format", "csv")
    assert answered.returncode == 0 and answered.stderr == "", answered.stderr
    assert answered.stdout.splitlines()[0].startswith("athlete_id,sport_family,unit,eddington")
    assert db.schema_current(tmp_path / "warehouse.duckdb")


def test_a_warehouse_this_user_may_only_read_is_queried_as_it_is_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bringing older views up to date needs a write; where it fails (a file this user may only read: root, who runs
    these tests, may write any) the query answers from the views as they are, and says so. In process: the write
    refused as DuckDB refuses it."""
    import contextlib
    from collections.abc import Iterator

    from click.testing import CliRunner

    from fitsync.cli.main import main

    _left_by_an_older_fitsync(tmp_path / "warehouse.duckdb")

    @contextlib.contextmanager
    def refused(*args: object, **kwargs: object) -> Iterator[None]:
        raise duckdb.IOException('IO Error: Cannot open file "warehouse.duckdb": Permission denied')
        yield

    monkeypatch.setattr(db, "writing", refused)
    result = CliRunner().invoke(
        main, ["query", "SELECT * FROM eddington", "--format", "csv"], env={"FITSYNC_HOME": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["stale", "1"]
    assert "could not be brought up to date (IO Error: Cannot open file" in result.stderr
    assert "until `fitsync sync` runs" in result.stderr
