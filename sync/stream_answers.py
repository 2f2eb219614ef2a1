"""The service's stream answers into the samples' columns (warehouse/streams.SOURCE_SCHEMA): a chunk of answers at a
time by DuckDB's JSON reader (`framed`), and any answer that reader's rules do not take, one at a time the careful
way (`read`), which names what it cannot store.

Why DuckDB and a chunk at a time: a 4-hour ride's answer is ≈ 1 MB of numbers. Parsed a chunk at a time, DuckDB
(yyjson) reads the answers' values into typed lists in one query, each answer parsed once; the lists come out as
Arrow, the chunk's samples are one frame put together from them, and the checks run once over the chunk (Polars' JSON
reader and its checks an answer at a time took 1.4× the CPU of an earlier version of this, which parsed each answer
twice). It runs on the stream writer's framing thread (sync/streams.Writer), beside the fetching and the writing of
the chunk before.

The rules of the quick way, each checked for the whole chunk at once, any answer that fails one going the careful
way: the answer is an object keyed by type (`key_by_type=true`), every key a channel fitsync knows, each with a `data`
list of the JSON type its column takes (numbers; booleans for `moving`; [lat, lng] pairs of numbers), every channel of
one length, every value within its compact type (bound and decimals). DuckDB's transform is lenient ("3" becomes 3,
"a" NULL, true 1, an unknown channel nothing), so the answer's text is held to what the transform read: as many
quotes, `null`s and booleans as an answer of exactly this shape has, and no backslash (`_expected`; `tokens` counts
them as the answer arrives). Counting them costs a fraction of asking DuckDB for each answer's `json_structure`, which
parsed every answer a second time (≈ 30 % of reading a chunk).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from fitsync.warehouse import streams as stored
from fitsync.warehouse.streams import Answer

# Each channel's data in the column's JSON type, and the members the service adds beside it (read, so that every
# quote of a well-formed answer is accounted for: _expected).
_META = {"series_type": "VARCHAR", "resolution": "VARCHAR", "original_size": "DOUBLE"}
_TRANSFORM = json.dumps(
    {
        kind: {"data": [["DOUBLE"]] if kind == "latlng" else ["BOOLEAN" if kind == "moving" else "DOUBLE"], **_META}
        for kind in stored.STREAMS
    }
)
# A recording's seconds since its start never go back (nor a NULL between them): a time that went back and forward
# again would make each forward step's seconds again in the 1-s series (stream_mmp), without bound. A row with
# `sample` 0 begins an answer (the chunk's answers one after the other).
_IN_ORDER = ~((pl.col("time").forward_fill().diff() < 0) & (pl.col("sample") > 0)).any()
_FITS = [
    (
        (pl.col(c.column).min().fill_null(c.plausible.low) >= c.plausible.low)
        & (pl.col(c.column).max().fill_null(c.plausible.low) <= c.plausible.high)
        & (pl.col(c.column).round(c.scale or 0) == pl.col(c.column)).all()
        & ~pl.col(c.column).is_nan().any()  # max() passes over NaN, and NaN == NaN
        & (_IN_ORDER if c.column == "time" else True)
    ).alias(c.column)
    for c in stored.CHANNELS
    if c.plausible is not None
]


def framed(conn: duckdb.DuckDBPyConnection, answers: list[Answer]) -> list[Answer]:
    """The answers with every received one framed (its samples in `frame`, its status and problems set); `conn`: an
    in-memory DuckDB of the calling thread."""
    todo = [i for i, a in enumerate(answers) if a.status == stored.RECEIVED]
    if not todo:
        return answers
    out = list(answers)
    try:
        quick = _read_many(conn, [answers[i] for i in todo])
    except (duckdb.Error, RecursionError):  # an answer DuckDB's reader or the shape's text cannot take: all carefully
        quick = [None] * len(todo)
    for i, answer in zip(todo, quick, strict=True):
        out[i] = answer if answer is not None else careful(answers[i])
    return out


def _read_many(conn: duckdb.DuckDBPyConnection, received: list[Answer]) -> list[Answer | None]:
    """The answers the quick way's rules take, framed; None for the others."""
    conn.register("stream_answers", pa.table({"raw": pa.array([a.raw for a in received], pa.string())}))
    try:
        try:
            parsed = conn.execute(
                f"SELECT json_transform(raw, '{_TRANSFORM}') AS j FROM stream_answers"
            ).to_arrow_table()
        except duckdb.Error:  # an answer the reader refuses: NULL for it alone (try() costs the chunk ≈ 9 % more)
            parsed = conn.execute(
                f"SELECT try(json_transform(raw, '{_TRANSFORM}')) AS j FROM stream_answers"
            ).to_arrow_table()
    finally:
        conn.unregister("stream_answers")
    values = parsed["j"].combine_chunks()
    channels = {kind: values.field(kind) for kind in stored.STREAMS}
    lists = {kind: column.field("data") for kind, column in channels.items()}
    lengths = {kind: pc.list_value_length(column).to_pylist() for kind, column in lists.items()}
    taken: list[tuple[int, int, tuple[str, ...]]] = []  # (row, samples, channels) of each answer the rules take
    for row, answer in enumerate(received):
        kinds = tuple(k for k in stored.STREAMS if values[row].is_valid and channels[k][row].is_valid)
        sizes = {lengths[k][row] for k in kinds}
        if not kinds or None in sizes or len(sizes) != 1 or _counted(answer) != _expected(channels, kinds, row):
            continue
        if any((channels[k][row]["original_size"].as_py() or 0) > lengths[k][row] for k in kinds):
            continue  # fewer samples than the service counts: the careful way says so
        if "latlng" in kinds and not _pairs(lists["latlng"][row].values):
            continue
        taken.append((row, sizes.pop(), kinds))
    out: list[Answer | None] = [None] * len(received)
    frame = _chunk_frame(received, lists, taken)
    offset = 0
    for row, length, kinds in taken:
        answer = received[row]
        out[row] = Answer(
            answer.activity_id,
            answer.start,
            answer.fetched_us,
            stored.STORED,
            answer.raw,
            frame.slice(offset, length),
            kinds,
            (),
        )
        offset += length
    return _fitting(out)


def _pairs(points: pa.Array) -> bool:
    """Whether every point is a [lat, lng] pair."""
    return not points.null_count and not pc.any(pc.not_equal(pc.list_value_length(points), 2)).as_py()


def _chunk_frame(
    received: list[Answer], lists: dict[str, pa.Array], taken: list[tuple[int, int, tuple[str, ...]]]
) -> pl.DataFrame:
    """The samples of every answer taken, one after the other in SOURCE_SCHEMA: each column put together once for the
    chunk from the answers' Arrow slices (NULL where an answer lacks the channel), each answer's frame a slice of it.
    A frame built per answer cost the chunk ≈ 17 ms of 80 (13 answers, 17 columns each)."""
    ids = pl.DataFrame(
        {
            "activity_id": [received[row].activity_id for row, _, _ in taken],
            "fetched_us": [received[row].fetched_us for row, _, _ in taken],
            "n": [length for _, length, _ in taken],
        },
        schema={"activity_id": pl.Int64, "fetched_us": pl.Int64, "n": pl.Int64},
    )
    keys = ids.select(
        pl.col("activity_id").repeat_by("n").explode(),
        pl.col("fetched_us").repeat_by("n").explode(),
        pl.int_ranges(0, "n", dtype=pl.Int32).explode().alias("sample"),
    )
    columns: dict[str, pl.Series] = {}
    for channel in stored.CHANNELS:
        kind = stored.SOURCE_SCHEMA[channel.column]
        arrow_type = pa.bool_() if kind == pl.Boolean else pa.float64()
        pieces = []
        for row, length, kinds in taken:
            if channel.stream not in kinds:
                pieces.append(pa.nulls(length, arrow_type))
            elif channel.stream == "latlng":
                pieces.append(pc.list_element(lists["latlng"][row].values, 0 if channel.column == "lat" else 1))
            else:
                pieces.append(lists[channel.stream][row].values)
        columns[channel.column] = pl.Series(
            channel.column, pa.concat_arrays(pieces) if pieces else pa.nulls(0, arrow_type)
        )
    return keys.with_columns(**columns).select(list(stored.SOURCE_SCHEMA)).cast(pl.Schema(stored.SOURCE_SCHEMA))


# What an answer's text is mostly made of (numbers and punctuation), deleted before the counting: one pass over the
# text, then counts over what is left (≈ 6 % of a sandbox answer): 0.25 ms for a 630 KB answer instead of 1.4 ms.
# No letter is deleted: a number's exponent (e, E) is left, and no literal begins or ends so that, next to another
# or to an exponent, a true, false or null appears that was not there, so the text left holds exactly the quotes,
# backslashes and literals of the whole.
_NUMBERS_AND_PUNCTUATION = b"0123456789+-.,:[]{} \t\r\n"


def tokens(text: str | bytes) -> tuple[int, int, int, int]:
    """The quotes, `null`s, booleans and backslashes of an answer's text."""
    left = (text.encode() if isinstance(text, str) else text).translate(None, _NUMBERS_AND_PUNCTUATION)
    return left.count(b'"'), left.count(b"null"), left.count(b"true") + left.count(b"false"), left.count(b"\\")


def _counted(answer: Answer) -> tuple[int, int, int, int]:
    return answer.tokens if answer.tokens is not None else tokens(answer.raw or "")


def _expected(channels: dict[str, pa.StructArray], kinds: tuple[str, ...], row: int) -> tuple[int, int, int, int]:
    """What `tokens` finds in an answer of exactly the quick way's shape, read from its lenient transform: two quotes
    per key (a channel, its `data`, each member of _META it has) and per text value, a `null` per NULL value, a boolean
    per value of `moving`, and those a text value holds itself ("resolution": "null" must not stand for a NULL made of
    something else), and no backslash: a text value is read as it is written (an escape such as "\\null" holds a
    `null` its reading does not). The lenient transform reads "3" as 3, true as 1, 1 as true and an unknown channel
    as nothing; each of those leaves a quote, a boolean or a key unaccounted for, and the answer goes the careful
    way."""
    quotes = nulls = booleans = 0
    for kind in kinds:
        channel = channels[kind][row]
        quotes += 4
        for member, kind_of in _META.items():
            value = channel[member]
            if not value.is_valid:
                continue
            quotes += 2  # the member's name
            if kind_of == "VARCHAR":  # its text, quoted, and what that text holds
                _, in_text, booleans_in_text, _ = tokens(value.as_py())
                quotes, nulls, booleans = quotes + 2, nulls + in_text, booleans + booleans_in_text
        data = channel["data"].values
        nulls += data.null_count
        if kind == "latlng":
            nulls += pc.list_flatten(data).null_count
        elif kind == "moving":
            booleans += len(data) - data.null_count
    return quotes, nulls, booleans, 0


def _fitting(answers: list[Answer | None]) -> list[Answer | None]:
    """None in place of each answer with a value beyond its compact type (the careful way names it): one check over
    the chunk, and per activity only when that fails."""
    frames = [a.frame for a in answers if a is not None and a.frame is not None]
    if not frames:
        return answers
    every = pl.concat(frames, how="vertical", rechunk=False)
    if all(every.select(_FITS).row(0)):
        return answers
    by_activity = every.group_by("activity_id").agg(_FITS)
    failed = set(
        by_activity.filter(~pl.all_horizontal(c.column for c in stored.CHANNELS if c.plausible is not None))[
            "activity_id"
        ]
    )
    return [None if a is not None and a.activity_id in failed else a for a in answers]


# --- the careful way ----------------------------------------------------------------------------------------------


def careful(answer: Answer) -> Answer:
    """A received answer read by Python's JSON parser and checked channel by channel."""
    try:
        body = json.loads(answer.raw or "")
    except (ValueError, RecursionError) as error:
        problem = f"an answer that is not JSON ({str(error)[:160]}; kept raw)"
        return Answer(
            answer.activity_id, answer.start, answer.fetched_us, stored.KEPT_RAW, answer.raw, problems=(problem,)
        )
    return read(answer.activity_id, answer.start, answer.fetched_us, body, raw=answer.raw, elapsed_s=answer.elapsed_s)


def _frame(activity_id: int, fetched_us: int, length: int, columns: dict[str, pl.Series]) -> pl.DataFrame:
    """The samples in SOURCE_SCHEMA: the channels read, NULL for the others."""
    return pl.DataFrame(
        {
            "activity_id": pl.repeat(activity_id, length, dtype=pl.Int64, eager=True),
            "fetched_us": pl.repeat(fetched_us, length, dtype=pl.Int64, eager=True),
            "sample": pl.int_range(0, length, dtype=pl.Int32, eager=True),
            **{
                name: columns[name].cast(kind) if name in columns else pl.repeat(None, length, dtype=kind, eager=True)
                for name, kind in stored.SOURCE_SCHEMA.items()
                if name not in ("activity_id", "fetched_us", "sample")
            },
        },
        schema=stored.SOURCE_SCHEMA,
    )


def read(
    activity_id: int, start: Any, fetched_us: int, body: Any, raw: str | None = None, elapsed_s: int | None = None
) -> Answer:
    """The answer's channels in their columns; what cannot be stored, named in `problems`. `raw`: the answer's text as
    received (else the body written out again); `elapsed_s`: the activity's elapsed time (_short)."""
    raw = raw if raw is not None else json.dumps(body, separators=(",", ":"))
    found, problems = _by_type(body)
    if found is None:
        return Answer(activity_id, start, fetched_us, stored.KEPT_RAW, raw, problems=tuple(problems))
    if not found:
        problem = "an empty answer for an activity with a recording (asked again on a later run)"
        return Answer(activity_id, start, fetched_us, stored.NO_STREAMS, raw, problems=(problem,))
    if short := _short(found, body, elapsed_s):
        return Answer(activity_id, start, fetched_us, stored.SHORT, raw, problems=(short,))
    sizes = {k: len(v) for k, v in found.items()}
    length = sizes["time"] if "time" in sizes else Counter(sizes.values()).most_common(1)[0][0]
    columns: dict[str, pl.Series] = {}
    kept: list[str] = []
    for kind, data in found.items():
        if kind not in stored.STREAMS:
            problems.append(f"a channel fitsync does not know: {kind!r} (kept raw)")
            continue
        if len(data) != length:
            problems.append(f"channel {kind!r} has {len(data)} samples, the others {length} (kept raw)")
            continue
        try:
            checked, notes = _checked(kind, data)
        except (TypeError, ValueError, pl.exceptions.PolarsError) as error:
            problems.append(f"channel {kind!r}: {str(error).splitlines()[0][:160]} (kept raw)")
            continue
        columns.update(checked)
        problems.extend(f"{note} (kept raw)" for note in notes)
        kept.append(kind)
    frame = _frame(activity_id, fetched_us, length, columns)
    status = stored.STORED if not problems else stored.PART_STORED if kept else stored.KEPT_RAW
    return Answer(
        activity_id,
        start,
        fetched_us,
        status,
        raw,
        frame if kept else None,
        tuple(k for k in stored.STREAMS if k in kept),
        tuple(problems),
    )


def _by_type(body: Any) -> tuple[dict[str, list[Any]] | None, list[str]]:
    """{type: data} from either shape (keyed by type; or the list, each with its `type`), or None for another."""
    if isinstance(body, dict) and all(isinstance(s, dict) and isinstance(s.get("data"), list) for s in body.values()):
        return {str(k): v["data"] for k, v in body.items()}, []
    if isinstance(body, list) and all(
        isinstance(s, dict) and isinstance(s.get("type"), str) and isinstance(s.get("data"), list) for s in body
    ):
        return {s["type"]: s["data"] for s in body}, []
    return None, [f"an answer of a shape fitsync does not know ({type(body).__name__}; kept raw)"]


# An answer with fewer samples than the service counts is cut short when its time also ends before this share of the
# activity's elapsed time; the service's own downsampling (`resolution` "high" keeps ≈ 10,000 of a long recording's
# samples) spans the whole activity.
SPAN_SHARE = 0.9


def _short(found: dict[str, list[Any]], body: Any, elapsed_s: int | None) -> str | None:
    """What says the answer was cut short: every channel holds fewer samples than its `original_size`, and the samples
    end well before the activity does; or None (one channel shorter than the others is that channel's problem, named
    by read(); without the activity's elapsed time nothing is judged)."""
    streams = body.values() if isinstance(body, dict) else body
    counted = [
        (len(stream["data"]), size)
        for stream in streams
        if isinstance(size := stream.get("original_size"), (int, float)) and not isinstance(size, bool)
    ]
    times = found.get("time") or []
    last = times[-1] if times and isinstance(times[-1], (int, float)) and not isinstance(times[-1], bool) else None
    if not counted or any(length >= size for length, size in counted) or not elapsed_s or last is None:
        return None
    if last >= SPAN_SHARE * elapsed_s:
        return None
    length, size = max(counted)
    return (
        f"{length} samples of the {size:g} the service counts (original_size), ending at {last:g} s of a "
        f"{elapsed_s:,} s activity: nothing stored, asked again on a later run"
    )


def _checked(kind: str, data: list[Any]) -> tuple[dict[str, pl.Series], list[str]]:
    """The source columns of one channel, checked against its compact type (ValueError names what does not fit), and
    what was left out of them: a value outside its channel's range is NULL there (a GPS glitch of 4,000 km/h in one
    sample costs that sample, not the ride's speed), named, and kept in the raw answer. A time outside it refuses the
    channel: the samples' seconds depend on every one of them."""
    if kind == "latlng":
        if not all(isinstance(p, list) and len(p) == 2 for p in data):
            raise ValueError("points that are not [lat, lng] pairs")
        lat, lng = zip(*data) if data else ((), ())
        (lats, lat_note), (lngs, lng_note) = _numbers("lat", lat), _numbers("lng", lng)
        off = lats.is_null() | lngs.is_null()  # a point half known is no point
        notes = [f"channel 'latlng': {n}" for n in (lat_note, lng_note) if n]
        return {"lat": lats.set(off, None), "lng": lngs.set(off, None)}, notes
    channel = next(c for c in stored.CHANNELS if c.stream == kind)
    if channel.stored == "BOOLEAN":
        return {kind: pl.Series(kind, data, dtype=pl.Boolean, strict=True)}, []
    series, note = _numbers(channel.column, data)
    if kind == "time" and note:
        raise ValueError(note)
    if kind == "time" and bool((series.drop_nulls().diff() < 0).any()):
        raise ValueError("times that go back (a recording's seconds since its start only grow)")
    return {channel.column: series}, [f"channel {kind!r}: {note}"] if note else []


def _numbers(column: str, data: Any) -> tuple[pl.Series, str | None]:
    """The values as doubles, those outside the column's range NULL, and what says so (or None)."""
    channel = next(c for c in stored.CHANNELS if c.column == column)
    if any(isinstance(v, bool) for v in data):
        raise ValueError("values that are not numbers")
    series = pl.Series(column, data, dtype=pl.Float64, strict=True)
    if bool(series.is_nan().any()):
        raise ValueError("values that are not numbers (NaN)")
    note, plausible = None, channel.plausible
    if plausible is not None:
        outside = series.is_not_null() & ~series.is_between(plausible.low, plausible.high)
        if bool(outside.any()):
            odd = series.filter(outside)
            note = (
                f"{len(odd):,} values outside {plausible.text()} ({plausible.why}) left out: "
                f"{float(odd.min()):g} … {float(odd.max()):g}"  # type: ignore[arg-type]
            )
            series = series.set(outside, None)
    if channel.scale is not None and not bool((series.round(channel.scale) == series).all()):
        raise ValueError(f"values with more than {channel.scale} decimals")
    return series, note
