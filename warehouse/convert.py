"""A warehouse file written by a newer DuckDB, made readable by this one.

fitsync pins the DuckDB release its lake extensions are built for (pyproject.toml). A file written by a newer release
(DuckDB 2.0, which fitsync used before) cannot be opened by an older one, and DuckDB has no downgrade. The tables
go through Parquet instead: the newer DuckDB, installed by pip into a throwaway virtual environment, copies each table
out; a new file made by this fitsync's migrations takes them back by column name. The old file is kept beside it,
renamed, and the documents' Parquet files stay where they are (Parquet is read by every release).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

import duckdb

from . import db
from .location import WarehouseError

# What DuckDB says when it meets a file of a newer storage version (its words, spelling included).
NEWER_FILE = "created with an newer version of DuckDB"
# The release that wrote fitsync's files before the pin.
NEWER_DUCKDB = "duckdb==2.0.1"
# Run by the newer DuckDB: every table of the file to one Parquet file each; prints the tables and their rows.
EXPORT = """
import duckdb, json, sys
source, folder = sys.argv[1], sys.argv[2]
conn = duckdb.connect(source, read_only=True)
tables = [r[0] for r in conn.execute(
    "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'"
).fetchall()]
counts = {}
for table in tables:
    target = f"{folder}/{table}.parquet".replace("'", "''")
    conn.execute(f'COPY "{table}" TO \\'{target}\\' (FORMAT parquet)')
    counts[table] = conn.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0]
print(json.dumps(counts))
"""


class NewerFile(WarehouseError):
    """The warehouse file was written by a newer DuckDB than this fitsync's."""


def is_newer_file(error: BaseException) -> bool:
    return NEWER_FILE in str(error)


def convert(path: Path, newer: str = NEWER_DUCKDB) -> tuple[dict[str, int], list[str]]:
    """Rewrite the file at `path` for this DuckDB; returns rows per table taken over, and the tables and columns
    this fitsync's warehouse has no place for (in the kept file only). The old file is kept as
    `<path>.<newer>.bak`. `newer` is what pip installs for the export (a version, or a wheel's path offline).

    The new file is built beside the old one and takes its place only once whole: a conversion stopped at any point
    leaves the old file at `path` or at the kept name, never an empty warehouse in its place. A kept file is never
    overwritten, and a file this DuckDB opens is not converted."""
    path = path.resolve()
    kept = path.with_name(f"{path.name}.{newer.replace('==', '-').replace('/', '_')}.bak")
    if _opens(path):
        raise WarehouseError(f"{path} opens with this DuckDB ({duckdb.__version__}): there is nothing to convert")
    if kept.exists():
        raise WarehouseError(
            f"{kept} exists, kept by an earlier conversion (it may be the only copy of the old warehouse): move it "
            "aside, then convert again"
        )
    with tempfile.TemporaryDirectory(prefix=".fitsync-convert-", dir=path.parent) as scratch:
        folder = Path(scratch)
        environment = folder / "venv"
        venv.create(environment, with_pip=True)
        python = environment / "bin" / "python"
        subprocess.run([python, "-m", "pip", "install", "-q", newer], check=True, capture_output=True, text=True)
        exported = subprocess.run(
            [python, "-c", EXPORT, str(path), str(folder)], check=True, capture_output=True, text=True
        )
        counts: dict[str, int] = json.loads(exported.stdout)
        fresh = folder / path.name  # its documents views follow the file when it moves (documents.py)
        db.migrate(fresh)
        with db.writing(fresh) as conn:
            taken, dropped = _take_back(conn, folder, counts)
        path.rename(kept)
        wal = path.with_name(path.name + ".wal")
        if wal.exists():
            wal.rename(kept.with_name(kept.name + ".wal"))
        fresh.rename(path)
        db.migrate(path)  # its views read the documents beside it now, before the scratch folder goes
    return taken, dropped


def _opens(path: Path) -> bool:
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.Error as error:
        if is_newer_file(error):
            return False
        raise WarehouseError(f"{path} cannot be opened ({error})") from None
    return True


def _take_back(
    conn: duckdb.DuckDBPyConnection, folder: Path, counts: dict[str, int]
) -> tuple[dict[str, int], list[str]]:
    """Each exported table's rows into the new file's table of that name, by column name, in one transaction; the
    rows a migration inserted (the analysis settings) give way to the exported ones. Also what has no place."""
    tables = {
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
    }

    dropped = [f"table {t} ({counts[t]:,} rows)" for t in sorted(set(counts) - tables)]

    def work() -> dict[str, int]:
        taken: dict[str, int] = {}
        for table in sorted(set(counts) & tables):
            source = str(folder / f"{table}.parquet").replace("'", "''")
            ours = {r[0] for r in conn.execute(f'DESCRIBE "{table}"').fetchall()}
            theirs = [r[0] for r in conn.execute(f"DESCRIBE SELECT * FROM read_parquet('{source}')").fetchall()]
            dropped.extend(f"column {table}.{c}" for c in theirs if c not in ours)
            columns = ", ".join(f'"{c}"' for c in theirs if c in ours)
            conn.execute(f'DELETE FROM "{table}"')
            conn.execute(f"INSERT INTO \"{table}\" ({columns}) SELECT {columns} FROM read_parquet('{source}')")
            taken[table] = conn.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0]
        return taken

    return db.transaction(conn, work), dropped


def command_line(path: Path) -> str:
    """The command that converts the file."""
    return f"{sys.executable} -m fitsync.warehouse.convert {path}"


if __name__ == "__main__":
    target = Path(sys.argv[1])
    try:
        moved, dropped = convert(target, *(sys.argv[2:3]))
    except WarehouseError as refused:
        sys.exit(f"not converted: {refused}")
    print(f"converted {target}: " + ", ".join(f"{table} {rows:,}" for table, rows in sorted(moved.items())))
    if dropped:
        print("not taken over (no place in this fitsync's warehouse; still in the kept file): " + ", ".join(dropped))
