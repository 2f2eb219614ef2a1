"""The column vocabulary (warehouse/columns.py) rendered into SQL and run on DuckDB: each kind of read gives the value
columns.LEAVES documents, odd input included; NOT NULL comes from the schema (warehouse/constraints.py)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from fitsync.warehouse import constraints, db, loads, mappings, staging
from fitsync.warehouse.columns import Column, coord, instant, kept, local, text, value, zone_name

ODD = mappings.Mapping(
    "odd_values",
    ("k",),
    (
        value("k", "BIGINT", at="id"),
        value("a_double", "DOUBLE"),
        value("an_integer", "INTEGER"),
        value("a_bigint", "BIGINT"),
        value("a_boolean", "BOOLEAN"),
        text("a_text"),
        text("a_text_or_empty", at="a_text", default="''"),
        instant("an_instant"),
        local("a_local"),
        zone_name("a_zone"),
        coord("a_lat", "latlng", 0),
        coord("a_lng", "latlng", 1),
        text("nested", at="deep.er"),
        kept("a_json", at="a_json"),
        kept("whole"),
    ),
)
NAMES = ODD.names

WELL_FORMED = {
    "id": 1,
    "a_double": 2.5,
    "an_integer": 12,
    "a_bigint": 7,
    "a_boolean": True,
    "a_text": "x",
    "an_instant": "2026-11-01T07:30:00Z",
    "a_local": "2026-11-01T07:30:00Z",
    "a_zone": "(GMT-08:00) America/Los_Angeles",
    "latlng": [51.5, -0.25],
    "deep": {"er": "down"},
    "a_json": {"b": [1]},
}
# Where a number, a boolean or an id belongs: the wrong kind of JSON value.
ODD_INPUT = {
    "id": 2,
    "a_double": "abc",
    "an_integer": True,
    "a_bigint": 2.5,
    "a_boolean": 2,
    "a_text": 5,
    "a_zone": "(GMT-08:00)",
    "latlng": "51.5,-0.25",
    "deep": "flat",
}
MISSING = {"id": 3}


def _read(documents: list[dict[str, Any]], one_parse: bool) -> dict[int, dict[str, Any]]:
    """The ODD mapping's rows for these documents: read as the loader reads them (one parse of each document, staging.py)
    or each column on its own (Column.plain)."""
    conn = duckdb.connect()
    conn.register("batch_input", loads.frame(documents, athlete_id=1).to_arrow())
    plan = staging.plan((ODD,))
    conn.execute(staging.stage_sql(plan))
    if one_parse:
        select = staging.select_sql(ODD, plan)
        assert "raw->>" not in select  # every field of the document from its one parse
    else:
        select = f"SELECT {', '.join(f'{c.plain()} AS {c.name}' for c in ODD.columns)} FROM batch"
    rows = conn.execute(f"SELECT {', '.join(NAMES)} FROM ({select})").fetchall()
    return {row[0]: dict(zip(NAMES, row)) for row in rows}


@pytest.mark.parametrize("one_parse", [True, False])
def test_each_kind_of_column_reads_its_value(one_parse: bool) -> None:
    row = _read([WELL_FORMED], one_parse)[1]
    assert row == {
        "k": 1,
        "a_double": 2.5,
        "an_integer": 12,
        "a_bigint": 7,
        "a_boolean": True,
        "a_text": "x",
        "a_text_or_empty": "x",
        "an_instant": dt.datetime(2026, 11, 1, 7, 30, tzinfo=dt.UTC),
        "a_local": dt.datetime(2026, 11, 1, 7, 30),  # the wall clock as sent: its Z is not UTC
        "a_zone": "America/Los_Angeles",
        "a_lat": 51.5,
        "a_lng": -0.25,
        "nested": "down",
        "a_json": '{"b":[1]}',
        "whole": json.dumps(WELL_FORMED, separators=(",", ":")),
    }


def test_odd_input_reads_as_columns_leaves_documents() -> None:
    """A typed leaf (the loader's one parse) and the cast of the field's text (Column.plain) agree except where
    columns.LEAVES says: a boolean read as a number, a number read as a boolean, an id half-way between integers."""
    loader, plain = _read([ODD_INPUT], one_parse=True)[2], _read([ODD_INPUT], one_parse=False)[2]
    assert loader["a_double"] is None and plain["a_double"] is None  # text where a number belongs
    assert (loader["an_integer"], plain["an_integer"]) == (1, None)  # a boolean where a number belongs
    assert (loader["a_boolean"], plain["a_boolean"]) == (True, None)  # a number where a boolean belongs
    assert (loader["a_bigint"], plain["a_bigint"]) == (2, 3)  # the leaf rounds half to even, the cast away from 0
    assert loader["a_text"] == plain["a_text"] == "5"  # a number where text belongs: its text
    assert loader["a_zone"] is None and plain["a_zone"] is None  # a "(GMT…)" label without a name: no zone name
    for column in ("a_lat", "a_lng", "nested"):  # another shape where an array or object belongs
        assert loader[column] is None and plain[column] is None, column


@pytest.mark.parametrize("one_parse", [True, False])
def test_a_zone_name_without_its_label_is_read(one_parse: bool) -> None:
    """The real service's label is "(GMT-08:00) America/Los_Angeles"; the name alone is read too (it was NULL)."""
    assert _read([{**WELL_FORMED, "a_zone": "Europe/Paris"}], one_parse)[1]["a_zone"] == "Europe/Paris"


@pytest.mark.parametrize("one_parse", [True, False])
def test_a_missing_field_reads_as_null_or_its_default(one_parse: bool) -> None:
    row = _read([MISSING], one_parse)[3]
    assert row["a_text_or_empty"] == ""
    assert json.loads(row["whole"]) == MISSING
    others = [c for c in NAMES if c not in ("k", "a_text_or_empty", "whole")]
    assert [row[c] for c in others] == [None] * len(others), row


def test_a_local_time_keeps_its_wall_clock_whatever_the_session_zone() -> None:
    """The service's local times end in Z, which is not UTC: the column holds the wall clock as sent."""
    column = local("start_date_local")
    conn = duckdb.connect()
    conn.execute("SET TimeZone = 'America/Los_Angeles'")
    raw = json.dumps({"start_date_local": "2026-06-30T23:45:00Z"})
    assert conn.execute(f"SELECT {column.plain()} FROM (SELECT ?::JSON AS raw)", [raw]).fetchall() == [
        (dt.datetime(2026, 6, 30, 23, 45),)
    ]
    assert (
        column.over("'2026-06-30T23:45:00Z'", "VARCHAR") == "TRY_CAST(rtrim('2026-06-30T23:45:00Z', 'Z') AS TIMESTAMP)"
    )


def test_a_column_is_data_rendered_never_parsed() -> None:
    """Each read is built from the Column's fields: the path, the type and the kind."""
    assert value("lap_id", "BIGINT", at="id", src="item") == Column("lap_id", ("id",), "BIGINT", src="item")
    assert coord("start_lat", "start_latlng", 0).plain() == "TRY_CAST(raw->>'$.start_latlng[0]' AS DOUBLE)"
    assert coord("start_lat", "start_latlng", 0).over("doc['start_latlng'][1]", "DOUBLE") == "doc['start_latlng'][1]"
    assert value("points", "INTEGER").over("m", "DOUBLE") == "TRY_CAST(round(m) AS INTEGER)"
    assert value("points", "INTEGER").over("m", "VARCHAR") == "TRY_CAST(m AS INTEGER)"
    assert kept("raw", src="item").plain() == "item" and kept("raw", at="body").plain() == "json_extract(raw, '$.body')"


def _migrated(tmp_path: Path, *later: str) -> Path:
    """A warehouse at the current schema, plus `later` statements as a later migration would run them."""
    path = tmp_path / "warehouse.duckdb"
    db.migrate(path)
    with db.writing(path) as conn:
        for statement in later:
            conn.execute(statement)
    return path


def test_not_null_columns_are_the_schemas(tmp_path: Path) -> None:
    """What a load requires is what the migrated warehouse declares NOT NULL, nothing kept by hand beside it."""
    with db.reading(_migrated(tmp_path)) as conn:
        schema = constraints.not_null(conn)
    assert constraints.migrated() == schema
    assert mappings.DETAIL_EFFORTS.required == ("activity_id", "athlete_id", "segment_id")
    assert mappings.ACTIVITY_SUMMARIES.required == ("athlete_id", "listed_at")
    for mapping in (v for v in vars(mappings).values() if isinstance(v, mappings.Mapping)):
        assert set(mapping.required) == schema.get(mapping.table, frozenset()) - set(mapping.key), mapping.table


def test_a_column_made_not_null_by_a_migration_is_enforced_without_being_listed(tmp_path: Path) -> None:
    """A later migration makes laps.name NOT NULL: a lap without a name is then left out and counted, its JSON kept in
    the document, and the batch loads; staged without that schema, the same batch fails on the constraint."""
    path = _migrated(tmp_path, "ALTER TABLE laps ALTER COLUMN name SET NOT NULL")
    laps = [{"id": 11, "lap_index": 1, "name": "out"}, {"id": 12, "lap_index": 2}]
    detail = {"id": 5, "name": "ride", "distance": 1000.0, "laps": laps, "splits_metric": [], "segment_efforts": []}
    batch = loads.frame([detail], athlete_id=1)
    with db.reading(path) as conn:
        schema = constraints.not_null(conn)
    assert "name" in mappings.LAPS.required_in(schema) and "name" not in mappings.LAPS.required
    with db.writing(path) as conn:
        with pytest.raises(duckdb.ConstraintException):
            loads.write(conn, loads.stage("activity_details", batch))
    staged = loads.stage("activity_details", batch, not_null=schema)
    assert staged.left_out == {"laps": 1}
    with db.writing(path) as conn:
        loads.write(conn, staged)
        assert conn.execute("SELECT lap_id, name FROM laps").fetchall() == [(11, "out")]
        kept_laps = conn.execute("SELECT raw->'$.laps' FROM activity_documents WHERE activity_id = 5").fetchall()
    assert json.loads(kept_laps[0][0]) == laps
