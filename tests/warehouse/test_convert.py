"""A warehouse file written by DuckDB 2.0 (fitsync's DuckDB before the pin) is named with the command that converts
it, and the conversion keeps every row and the old file. The newer DuckDB comes from PyPI into a throwaway virtual
environment, as the conversion itself gets it: slow, run with `-m slow`."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from fitsync.warehouse import convert, db

pytestmark = pytest.mark.slow

# Run by DuckDB 2.0: fitsync's migrations as they were, and one audited deletion to carry over.
WRITE = """
import duckdb, sys
conn = duckdb.connect(sys.argv[1])
for statement in sys.argv[2].split(";\\n"):
    conn.execute(statement)
for script in sys.argv[3:]:
    conn.execute(open(script).read())
conn.execute("INSERT INTO deleted_activities VALUES (7, 42, now(), 'webhook delete', '{\\\"id\\\": 7}')")
conn.execute(f"INSERT INTO schema_migrations (version, name) SELECT range, 'earlier' FROM range(1, {len(sys.argv) - 2})")
print(conn.execute("PRAGMA version").fetchall()[0][0])
"""


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
    assert list(tmp_path.glob("warehouse.duckdb.*.bak")), sorted(p.name for p in tmp_path.iterdir())
    assert db.migrate(path) == max(v for v, _, _ in db.migration_scripts())
