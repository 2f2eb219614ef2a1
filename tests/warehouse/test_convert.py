"""A warehouse file written by DuckDB 2.0 (fitsync's DuckDB before the pin) is named with the command that converts
it, and the conversion keeps every row and the old file. The newer DuckDB comes from PyPI into a throwaway virtual
environment, as the conversion itself gets it: slow, run with `-m slow` (the refusals before it are quick)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from fitsync.warehouse import convert, db
from fitsync.warehouse.location import WarehouseError

# Run by DuckDB 2.0: fitsync's migrations as they were, and one audited deletion to carry over.
WRITE = """
import duckdb, sys
conn = duckdb.connect(sys.argv[1])
for statement in sys.argv[2].split(";\\n"):
    conn.execute(statement)
for script in sys.argv[3:]:
    conn.execute(open(script).read())
conn.execute("INSERT INTO deleted_activities (activity_id, athlete_id, deleted_at, reason, last_summary_raw) "
             "VALUES (7, 42, now(), 'webhook delete', '{\\\"id\\\": 7}')")
conn.execute(f"INSERT INTO schema_migrations (version, name) SELECT range, 'earlier' FROM range(1, {len(sys.argv) - 2})")
print(conn.execute("PRAGMA version").fetchall()[0][0])
"""


@pytest.mark.slow
def test_a_file_of_duckdb_2_is_named_then_converted(tmp_path: Path) -> None:
    environment = tmp_path / "duckdb2"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", convert.NEWER_DUCKDB], check=True, timeout=300)
    path = tmp_path / "warehouse.duckdb"
    folder = Path(db.__file__).parent / db.MIGRATIONS_PACKAGE
    scripts = sorted(str(p) for p in folder.glob("*.sql"))
    written = subprocess.run(
        [python, "-c", WRITE, str(path), ";\n".join(db.BOOKKEEPING), *scripts],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert written.stdout.startswith("v2."), written.stdout

    with pytest.raises(convert.NewerFile) as raised:
        db.migrate(path)
    assert convert.command_line(path) in str(raised.value) and "newer DuckDB" in str(raised.value)

    done = subprocess.run(
        [sys.executable, "-m", "fitsync.warehouse.convert", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "deleted_activities 1" in done.stdout, done.stdout
    with db.reading(path) as conn:
        assert conn.execute("SELECT activity_id, athlete_id, reason FROM deleted_activities").fetchall() == [
            (7, 42, "webhook delete")
        ]
        assert conn.execute("SELECT count(*) FROM analysis_settings").fetchall()[0][0] > 0
    [kept] = tmp_path.glob("warehouse.duckdb.*.bak")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".fitsync-convert")) == []
    assert db.migrate(path) == max(v for v, _, _ in db.migration_scripts())
    again = subprocess.run(  # converted already: refused, the kept file untouched
        [sys.executable, "-m", "fitsync.warehouse.convert", str(path)], capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 1 and "nothing to convert" in again.stderr and "Traceback" not in again.stderr
    shutil.copy(kept, path)  # the old file back in place, the kept one still there: converting would replace it
    refused = subprocess.run(
        [sys.executable, "-m", "fitsync.warehouse.convert", str(path)], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1 and "kept by an earlier conversion" in refused.stderr, refused.stderr
    assert (
        kept.stat().st_size > 0
        and "v2."
        in subprocess.run(
            [
                python,
                "-c",
                "import duckdb, sys; print(duckdb.connect(sys.argv[1], read_only=True).execute("
                "'PRAGMA version').fetchone()[0])",
                str(kept),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def test_a_file_this_duckdb_opens_or_cannot_read_is_not_converted(tmp_path: Path) -> None:
    """Converting a file twice replaced the original with the converted copy: a file this DuckDB opens is refused,
    and so is one that is no DuckDB file at all, before anything is touched."""
    path = tmp_path / "warehouse.duckdb"
    db.migrate(path)
    with pytest.raises(WarehouseError, match="nothing to convert"):
        convert.convert(path)
    other = tmp_path / "notes.duckdb"
    other.write_bytes(b"a file this DuckDB cannot open")
    with pytest.raises(WarehouseError, match="cannot be opened"):
        convert.convert(other)
    assert other.read_bytes() == b"a file this DuckDB cannot open" and sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.duckdb",
        "warehouse.duckdb",
        "warehouse.duckdb.documents",
    ]
