"""The vectorized Avro encoder against fastavro, the reference it must match byte for byte.

The strongest check is whole-file equality: given the same sync marker, ``write_avro_table``
(vectorized for flat tables) must produce exactly the file the row path (``fastavro.writer`` over
Python rows) produces, for every codec. On top of that, files decode (``fastavro.reader``,
``read_avro_table``) to the table's values, and the record bytes equal ``schemaless_writer``'s.
"""

from __future__ import annotations

import io
import math
from datetime import UTC
from decimal import Decimal
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core.data import avro_encode
from paimonflow.core.data.avro_data import (
    NAMESPACE,
    RECORD_NAME,
    _wire,
    _write_avro_rows,
    avro_schema,
    read_avro_table,
    write_avro_table,
)

MARKER = b"0123456789abcdef"
INT64 = st.integers(-(2**63), 2**63 - 1)


def _ints(bits: int) -> st.SearchStrategy[int]:
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    return st.integers(-bound, bound).map(lambda unscaled: Decimal(f"{unscaled}E-{scale}"))  # exact


# Temporal values as the integers Arrow stores, within what Python's datetime (and so
# fastavro.reader and read_avro_table) can represent: years 1 to 9999 in every time zone.
SECONDS = st.integers(-62_135_596_800 + 86_400, 253_402_300_799 - 86_400)  # a day in: any zone fits
DAYS = st.integers(-719_162, 2_932_896)

# (arrow type, strategy of Python values pa.array accepts for it; temporal ones as integers)
COLUMN_KINDS: list[tuple[pa.DataType, st.SearchStrategy[Any]]] = [
    (pa.int8(), _ints(8)),
    (pa.int16(), _ints(16)),
    (pa.int32(), _ints(32)),
    (pa.int64(), INT64 | st.sampled_from([-(2**63), 2**63 - 1, -1, 0, 63, -64, 64, -65])),
    (pa.float32(), st.floats(width=32) | st.sampled_from([math.nan, math.inf, -math.inf, -0.0])),
    (pa.float64(), st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 5e-324])),
    (pa.bool_(), st.booleans()),
    (pa.string(), st.text(max_size=40)),
    (pa.large_string(), st.text(max_size=300)),
    (pa.binary(), st.binary(max_size=300)),
    (pa.large_binary(), st.binary(max_size=40)),
    (pa.date32(), DAYS),
    (pa.time32("ms"), st.integers(0, 86_399_999)),
    (pa.time32("s"), st.integers(0, 86_399)),
    (pa.time64("us"), st.integers(0, 86_399_999).map(lambda ms: ms * 1000)),
    (pa.timestamp("s"), SECONDS),
    (pa.timestamp("ms"), st.builds(lambda s, ms: s * 1000 + ms, SECONDS, st.integers(0, 999))),
    (pa.timestamp("us"), st.builds(lambda s, us: s * 1_000_000 + us, SECONDS, st.integers(0, 999_999))),
    (pa.timestamp("us", tz="UTC"), st.builds(lambda s, us: s * 1_000_000 + us, SECONDS, st.integers(0, 999_999))),
    (pa.timestamp("ms", tz="Asia/Tokyo"), st.builds(lambda s, ms: s * 1000 + ms, SECONDS, st.integers(0, 999))),
    (pa.decimal128(10, 2), _decimals(10, 2)),
    (pa.decimal128(38, 0), _decimals(38, 0) | st.sampled_from([Decimal(10**38 - 1), Decimal(-(10**38) + 1),
                                                               Decimal(-(2**63)), Decimal(-128), Decimal(-129),
                                                               Decimal(255), Decimal(0)])),
    (pa.decimal128(38, 10), _decimals(38, 10)),
    (pa.decimal128(1, 0), _decimals(1, 0)),
]


def _int_type(t: pa.DataType) -> pa.DataType:
    return pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()


def _array(values: list[Any], t: pa.DataType) -> pa.Array:
    return pa.array(values, _int_type(t)).cast(t) if pa.types.is_temporal(t) else pa.array(values, t)


@st.composite
def flat_tables(draw: st.DrawFn) -> pa.Table:
    """A table of handled columns (any nullability, chunked and sliced), 0 to 40 rows."""
    kinds = draw(st.lists(st.sampled_from(range(len(COLUMN_KINDS))), min_size=1, max_size=8))
    n = draw(st.integers(0, 40))
    fields, columns = [], []
    for i, kind in enumerate(kinds):
        t, values = COLUMN_KINDS[kind]
        nullable = draw(st.booleans())
        array = _array(draw(st.lists(values | st.none() if nullable else values, min_size=n + 2, max_size=n + 2)), t)
        array = array.slice(1, n)  # offsets into its buffers
        split = draw(st.integers(0, n))
        fields.append(pa.field(f"c{i}", t, nullable))
        columns.append(pa.chunked_array([array.slice(0, split), array.slice(split)], t))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _normal(value: Any) -> Any:
    """Values compared with NaN equal to NaN (records and lists of them)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _as_fastavro_reads(value: Any, t: pa.DataType) -> Any:
    """A table value as fastavro.reader returns it from the column's Avro type: ``timestamp-*``
    as an aware UTC datetime, ``local-timestamp-*`` as the naive UTC wall clock."""
    if value is None or not pa.types.is_timestamp(t):
        return value
    return value.astimezone(UTC).replace(tzinfo=None) if t.tz else value.replace(tzinfo=UTC)


def _old_file(table: pa.Table, codec: str) -> bytes:
    return _write_avro_rows(table, fastavro.parse_schema(avro_schema(table.schema)), codec, sync_marker=MARKER)


def _expected_read(table: pa.Table, read: pa.Table) -> pa.Table:
    """``table`` with the Arrow types ``read_avro_table`` gives its Avro types."""
    return pa.Table.from_arrays([column.cast(f.type) for column, f in zip(table.columns, read.schema, strict=True)],
                                names=table.column_names)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_tables())
def test_flat_tables_are_byte_identical_to_fastavro_and_read_back(table: pa.Table) -> None:
    plan = avro_encode.flat_record_plan(avro_schema(table.schema), [_wire(pa.array([], t)).type
                                                                   for t in table.schema.types])
    assert plan is not None  # every generated table goes through the vectorized encoder
    new = write_avro_table(table, "none", sync_marker=MARKER)
    old = _old_file(table, "none")
    assert new == old

    records = list(fastavro.reader(io.BytesIO(new)))
    assert _normal(records) == _normal(list(fastavro.reader(io.BytesIO(old))))
    types = dict(zip(table.column_names, table.schema.types, strict=True))
    expected = [{name: _as_fastavro_reads(value, types[name]) for name, value in row.items()}
                for row in table.to_pylist()]
    assert _normal(records) == _normal(expected)

    read = read_avro_table(new)
    assert _normal(read.to_pylist()) == _normal(_expected_read(table, read).to_pylist())


def _all_types(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.2
    words = ["", "a", "héllo", "日本語テキスト", "x" * 200, "\U0001f600"]
    return pa.table({
        "id": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
        "i32": pa.array(rng.integers(-(2**31), 2**31, n).astype(np.int32), mask=nulls),
        "i8": pa.array(rng.integers(-128, 128, n).astype(np.int8)),
        "f32": pa.array(rng.standard_normal(n).astype(np.float32), mask=nulls),
        "f64": pa.array(rng.standard_normal(n) * 1e300),
        "flag": pa.array(rng.random(n) < 0.5, mask=nulls),
        "name": pa.array([words[i] for i in rng.integers(0, len(words), n)], mask=nulls),
        "blob": pa.array([bytes(rng.integers(0, 256, k, dtype=np.uint8)) for k in rng.integers(0, 20, n)],
                         pa.large_binary()),
        "price": pa.array([Decimal(int(v)).scaleb(-4) for v in rng.integers(-(10**12), 10**12, n)],
                          pa.decimal128(18, 4), mask=nulls),
        "day": pa.array(rng.integers(-50_000, 50_000, n).astype(np.int32), pa.date32()),
        "at": pa.array(rng.integers(0, 86_400_000, n).astype(np.int32), pa.time32("ms"), mask=nulls),
        "ts": pa.array(rng.integers(-(10**15), 10**15, n), pa.timestamp("us")),
        "ltz": pa.array(rng.integers(-(10**12), 10**12, n), pa.timestamp("ms", tz="UTC"), mask=nulls),
    })


def test_record_bytes_equal_schemaless_writer() -> None:
    table = _all_types(500)
    schema = avro_schema(table.schema)
    parsed = fastavro.parse_schema(schema)
    columns = [_wire(column.combine_chunks()) for column in table.columns]
    plan = avro_encode.flat_record_plan(schema, [c.type for c in columns])
    assert plan is not None
    encoded = avro_encode.encode_records(plan, columns, chunk_bytes=4096)  # many slices
    expected, ends = io.BytesIO(), []
    for row in pa.table(columns, names=table.column_names).to_pylist():
        fastavro.schemaless_writer(expected, parsed, (f"{NAMESPACE}.{RECORD_NAME}", row))
        ends.append(expected.tell())
    assert encoded.payload.tobytes() == expected.getvalue()
    assert encoded.row_ends.tolist() == ends


CODECS = ["none", "gzip", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_is_byte_identical_and_round_trips(codec: str) -> None:
    table = _all_types(3000)  # several 16 kB blocks
    new = write_avro_table(table, codec, sync_marker=MARKER)
    assert new == _old_file(table, codec)
    reader = fastavro.reader(io.BytesIO(new))
    assert reader.metadata["avro.codec"] == {"none": "null", "gzip": "deflate", "zstd": "zstandard"}[codec]
    assert len(list(fastavro.block_reader(io.BytesIO(new)))) > 1
    read = read_avro_table(new)
    assert read.equals(_expected_read(table, read))


@pytest.mark.parametrize("codec", ["snappy", "lz4"])
def test_a_codec_needing_an_optional_library_behaves_as_the_row_path(codec: str) -> None:
    """snappy and lz4 need libraries paimonflow does not install: both paths then fail with
    fastavro's same "install ..." line; where the library is installed, both write the same bytes."""
    table = _all_types(10)
    try:
        old = _old_file(table, codec)
    except ValueError as exc:
        assert "install" in str(exc)
        with pytest.raises(ValueError) as new_error:
            write_avro_table(table, codec, sync_marker=MARKER)
        assert str(new_error.value) == str(exc)
    else:
        assert write_avro_table(table, codec, sync_marker=MARKER) == old


def test_block_bounds_follow_fastavro() -> None:
    ends = np.cumsum(np.full(10, 7000))
    assert avro_encode.block_bounds(ends, 16_000) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert avro_encode.block_bounds(np.array([16_000, 16_001]), 16_000) == [(0, 1), (1, 2)]
    assert avro_encode.block_bounds(np.array([], np.int64)) == []


def test_empty_table_is_a_header_only_file() -> None:
    table = _all_types(10).slice(0, 0)
    new = write_avro_table(table, "zstd", sync_marker=MARKER)
    assert new == _old_file(table, "zstd")
    assert read_avro_table(new).num_rows == 0


def test_signalling_nan_float_is_written_quiet_as_fastavro_does() -> None:
    bits = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0x7F800000], np.uint32)
    table = pa.table({"f": pa.array(bits.view(np.float32))})
    new = write_avro_table(table, "none", sync_marker=MARKER)
    assert new == _old_file(table, "none")


def test_null_slots_with_string_bytes_are_skipped() -> None:
    # offsets give the null slot 3 bytes ("bad"), which must not be written
    validity = pa.py_buffer(bytes([0b101]))
    offsets = pa.py_buffer(np.array([0, 2, 5, 7], np.int32).tobytes())
    strings = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, pa.py_buffer(b"hibadok")])
    table = pa.table({"s": strings})
    new = write_avro_table(table, "none", sync_marker=MARKER)
    assert new == _old_file(table, "none")
    assert read_avro_table(new).column("s").to_pylist() == ["hi", None, "ok"]


def test_nested_tables_use_the_row_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def unused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the vectorized encoder must not be used")

    monkeypatch.setattr(avro_encode, "encode_records", unused)
    table = pa.table({"id": [1, 2], "tags": [["a"], None], "m": pa.array([[(1, "x")], []], pa.map_(pa.int32(),
                                                                                                 pa.string()))})
    assert read_avro_table(write_avro_table(table, "zstd")).to_pylist() == [
        {"id": 1, "tags": ["a"], "m": [(1, "x")]}, {"id": 2, "tags": None, "m": []}]


def test_values_the_row_path_rejects_are_still_rejected() -> None:
    not_null = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    with pytest.raises((TypeError, ValueError)):  # a null in a NOT NULL column
        write_avro_table(pa.table({"id": [1, None]}).cast(not_null, safe=False), "none")
    wide = pa.array([Decimal("12345.67")], pa.decimal128(7, 2)).view(pa.decimal128(5, 2))
    with pytest.raises(ValueError, match="precision"):
        write_avro_table(pa.table({"d": wide}), "none")
    bad_utf8 = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], np.int32).tobytes()),
                                                      pa.py_buffer(b"\xff\xfe")])
    with pytest.raises(Exception) as new:
        write_avro_table(pa.table({"s": bad_utf8}), "none")
    with pytest.raises(Exception) as old:
        _old_file(pa.table({"s": bad_utf8}), "none")
    assert type(new.value) is type(old.value)
