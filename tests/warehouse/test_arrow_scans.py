"""What DuckDB scans of Arrow data fitsync hands it print: nothing. Arrow's scanner (Acero) warns on stderr for every
buffer it finds poorly aligned, which cut through a sync's progress display dozens of times (warehouse/db.py)."""

from __future__ import annotations

import subprocess
import sys

# A table whose int64 buffer starts at an odd address, scanned with a filter as the loads scan staged batches.
SCAN = """
import pyarrow as pa
from fitsync.warehouse import db

misaligned = pa.Array.from_buffers(pa.int64(), 1000, [None, pa.py_buffer(bytes(8001))[1:]])
conn = db.duckdb.connect()
conn.register("t", pa.table({"a": misaligned, "b": pa.array(range(1000))}))
print(conn.execute("SELECT count(*) FROM t WHERE b > 5").fetchall()[0][0])
"""


def test_a_scan_of_a_poorly_aligned_arrow_buffer_prints_nothing_on_stderr() -> None:
    scanned = subprocess.run([sys.executable, "-c", SCAN], capture_output=True, text=True, timeout=60)
    assert scanned.returncode == 0 and scanned.stdout.strip() == "994", scanned.stderr
    assert scanned.stderr == ""
