"""The vectorized Avro decoder against the row path (fastavro rows), the reference it must match.

``read_avro_table`` decodes flat files column-wise (``avro_decode``) and everything else, or
anything that decoder finds inconsistent, through ``fastavro.reader`` rows (``_read_avro_rows``).
For every file, the two must agree exactly: the same Arrow schema, the same values (floats bit
for bit), the same nulls, or, for damaged files, the same exception type.
"""

from __future__ import annotations

import io
import json
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, time
from decimal import Decimal
from typing import Any
from unittest import mock

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core.data import avro_decode, avro_encode
from paimonflow.core.data.avro_data import (
    NAMESPACE,
    RECORD_NAME,
    _read_avro_rows,
    _read_flat,
    _wire,
    _wire_type,
    _write_avro_rows,
    avro_schema,
    read_avro_table,
    write_avro_table,
)
from paimonflow.core.errors import DataError

from .test_avro_encode import flat_tables

MARKER = b"0123456789abcdef"
CODECS = ["none", "gzip", "zstd"]


def _bits(array: pa.Array) -> np.ndarray:
    """The valid values of a float array as integers (NaN payloads included)."""
    width = array.type.bit_width
    values = np.frombuffer(array.buffers()[1], f"<u{width // 8}", len(array), array.offset)
    return values[array.is_valid().to_numpy(zero_copy_only=False)]


def assert_same(new: pa.Table, old: pa.Table) -> None:
    """Equal schemas and values, floats compared bit for bit (NaN equal to the same NaN)."""
    assert new.schema.equals(old.schema, check_metadata=True), (new.schema, old.schema)
    assert new.num_rows == old.num_rows
    for name in old.column_names:
        a, b = new.column(name).combine_chunks(), old.column(name).combine_chunks()
        if pa.types.is_floating(b.type):
            assert a.is_null().equals(b.is_null()), name
            assert np.array_equal(_bits(a), _bits(b)), name
        else:
            assert a.equals(b), (name, a, b)


def _file(table: pa.Table, codec: str, sync_interval: int) -> bytes:
    """``table`` as the vectorized encoder writes it, in blocks of about ``sync_interval`` bytes."""
    schema = avro_schema(table.schema)
    plan = avro_encode.flat_record_plan(schema, [_wire_type(t) for t in table.schema.types])
    assert plan is not None
    records = avro_encode.encode_records(plan, [_wire(column.combine_chunks()) for column in table.columns])
    return avro_encode.container_file(fastavro.parse_schema(schema), records, codec=codec, sync_marker=MARKER,
                                      sync_interval=sync_interval)


@contextmanager
def _strategy(kind: str, chunk_bytes: int) -> Iterator[None]:
    """Force how records are found: ``in_step`` (every block in step), ``table`` with blocks
    followed in step, ``table_scalar`` (record by record), with chunks of ``chunk_bytes``."""
    in_step = 0 if kind == "in_step" else 1 << 40
    ratio = 1 << 40 if kind == "table" else 0
    with mock.patch.object(avro_decode, "_IN_STEP_BYTES_PER_RECORD", in_step), \
            mock.patch.object(avro_decode, "_FOLLOW_IN_STEP_RATIO", ratio), \
            mock.patch.object(avro_decode, "CHUNK_BYTES", chunk_bytes):
        yield


def _decoded(data: bytes) -> pa.Table:
    table = _read_flat(data)
    assert table is not None, "the vectorized decoder declined a well-formed flat file"
    return table


STRATEGIES = st.sampled_from(["in_step", "table", "table_scalar"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_tables(), st.sampled_from(CODECS), st.integers(1, 600), STRATEGIES, st.integers(1, 3000))
def test_flat_tables_decode_as_the_row_path_reads_them(table: pa.Table, codec: str, sync_interval: int,
                                                       strategy: str, chunk_bytes: int) -> None:
    data = _file(table, {"none": "null", "gzip": "deflate", "zstd": "zstandard"}[codec], sync_interval)
    with _strategy(strategy, chunk_bytes):
        new = _decoded(data)
    old = _read_avro_rows(io.BytesIO(data))
    assert_same(new, old)
    assert_same(read_avro_table(data), old)


def _row_file(table: pa.Table, codec: str, sync_interval: int) -> bytes:
    """``table`` as ``_write_avro_rows`` writes it (Python rows through ``fastavro.writer``), in
    blocks of about ``sync_interval`` bytes."""
    if sync_interval == avro_encode.DEFAULT_SYNC_INTERVAL:
        return _write_avro_rows(table, fastavro.parse_schema(avro_schema(table.schema)), codec, sync_marker=MARKER)
    wired = pa.table({name: pa.chunked_array([_wire(chunk) for chunk in column.chunks], _wire_type(column.type))
                      for name, column in zip(table.column_names, table.columns, strict=True)})
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(avro_schema(table.schema)),
                    [(f"{NAMESPACE}.{RECORD_NAME}", row) for row in wired.to_pylist()],
                    codec={"none": "null", "gzip": "deflate", "zstd": "zstandard"}[codec],
                    sync_interval=sync_interval, sync_marker=MARKER)
    return sink.getvalue()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_tables(), st.sampled_from(CODECS), st.sampled_from([1, 7, 50, 300, avro_encode.DEFAULT_SYNC_INTERVAL]))
def test_files_of_the_row_writer_decode_alike(table: pa.Table, codec: str, sync_interval: int) -> None:
    data = _row_file(table, codec, sync_interval)
    assert_same(_decoded(data), _read_avro_rows(io.BytesIO(data)))


def test_extremes_and_unicode_in_many_blocks() -> None:
    n = 5000
    rng = np.random.default_rng(7)
    strings = ["", "é", "日本語テキスト", "\U0001f600" * 3, "a" * 300, "\x00"]
    table = pa.table({
        "i64": pa.array([-(2**63), 2**63 - 1, 0, -1, 1, 63, -64, 64, -65] * (n // 9) + [0] * (n % 9), pa.int64()),
        "i32": pa.array(rng.integers(-(2**31), 2**31, n), pa.int32()),
        "f32": pa.array(np.array([math.nan, math.inf, -math.inf, -0.0, 1.5] * (n // 5), np.float32)),
        "f64": pa.array([math.nan, math.inf, -math.inf, -0.0, 5e-324] * (n // 5)),
        "s": pa.array([None if i % 11 == 0 else strings[i % len(strings)] for i in range(n)]),
        "b": pa.array([bytes(range(i % 256))[: i % 40] for i in range(n)], pa.binary()),
        "dec": pa.array([Decimal(10**38 - 1), Decimal(-(10**38) + 1), Decimal(0), Decimal(-128), Decimal(255), None]
                        * (n // 6) + [None] * (n % 6), pa.decimal128(38, 0)),
        "ts": pa.array(rng.integers(-62_135_596_800_000_000, 253_402_300_799_999_999, n), pa.timestamp("us")),
        "lts": pa.array(rng.integers(-62_135_596_800_000, 253_402_300_799_999, n), pa.timestamp("ms", tz="UTC")),
        "d": pa.array(rng.integers(-719_162, 2_932_896, n).astype(np.int32)).cast(pa.date32()),
        "t": pa.array(rng.integers(0, 86_400_000, n).astype(np.int32)).cast(pa.time32("ms")),
        "flag": pa.array(rng.integers(0, 2, n).astype(bool)),
    })
    for codec in CODECS:
        for sync_interval in (50, 16_000, 10**9):
            data = _file(table, {"none": "null", "gzip": "deflate", "zstd": "zstandard"}[codec], sync_interval)
            for strategy in ("in_step", "table", "table_scalar"):
                with _strategy(strategy, 64 << 10):
                    assert_same(_decoded(data), _read_avro_rows(io.BytesIO(data)))


def _fastavro_file(schema: Any, records: list[Any], sync_interval: int = 64) -> bytes:
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(schema), records, sync_interval=sync_interval, sync_marker=MARKER)
    return sink.getvalue()


def test_other_flat_writer_schemas() -> None:
    """A bare record, ``[T, "null"]`` unions, time-micros and wrapped primitive types, as other
    writers (Java Avro, older paimonflow) produce them."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": ["int", "null"]},
        {"name": "b", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "c", "type": [{"type": "string", "avro.java.string": "String"}, "null"]},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 3}},
        {"name": "e", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
        {"name": "f", "type": {"type": "int"}},
    ]}
    records = [{"a": i if i % 3 else None, "b": time(i % 24, i % 60, 0, i), "c": None if i % 4 == 0 else f"x{i}",
                "d": Decimal(i - 50).scaleb(-3), "e": None if i % 5 == 0 else datetime(2000 + i % 20, 1, 1, 0, 0, i % 60),
                "f": -i} for i in range(100)]
    data = _fastavro_file(schema, records)
    assert_same(_decoded(data), _read_avro_rows(io.BytesIO(data)))


@pytest.mark.parametrize("field_type", [
    {"type": "enum", "name": "E", "symbols": ["A", "B"]},
    {"type": "fixed", "name": "F", "size": 2},
    {"type": "array", "items": "int"},
    {"type": "string", "logicalType": "uuid"},
    ["null", "int", "string"],
])
def test_files_that_are_not_flat_are_left_to_the_row_path(field_type: Any) -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": field_type}]}
    assert avro_decode.flat_read_plan(schema) is None
    assert avro_decode.flat_read_plan(["null", schema]) is None


@pytest.mark.parametrize(("field_type", "value"), [
    ("int", 2**40),  # out of int32: the row path fails converting it
    ({"type": "int", "logicalType": "date"}, 3_000_000),  # beyond year 9999
    ({"type": "int", "logicalType": "time-millis"}, -1),  # read as 00:00:00.999 by fastavro
    ({"type": "long", "logicalType": "timestamp-micros"}, 2**62),
    ({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 0}, (1000).to_bytes(2, "big")),
    ("string", b"\xed\xa0\x80"),  # a surrogate: not UTF-8
])
def test_values_the_row_path_reads_otherwise_go_through_it(field_type: Any, value: Any) -> None:
    """Written as the raw type, read under a schema the values do not fit: the decoder declines
    and ``read_avro_table`` raises (or reads) exactly what the row path does."""
    raw = field_type["type"] if isinstance(field_type, dict) else field_type
    raw = "bytes" if raw == "string" else raw
    written = _fastavro_file({"type": "record", "name": "r", "fields": [{"name": "a", "type": raw}]}, [{"a": value}])
    declared = {"type": "record", "name": "r", "fields": [{"name": "a", "type": field_type}]}
    data = _replace_schema(written, json.dumps(declared))
    assert _read_flat(data) is None
    _assert_same_outcome(data)


def _container(schema_json: str, blocks: list[tuple[int, bytes]]) -> bytes:
    """An uncompressed container file of ``blocks`` (record count, bytes) as given."""
    sink = io.BytesIO()
    sink.write(b"Obj\x01")
    fastavro.schemaless_writer(sink, {"type": "map", "values": "bytes"},
                               {"avro.schema": schema_json.encode(), "avro.codec": b"null"})
    sink.write(MARKER)
    for count, payload in blocks:
        fastavro.schemaless_writer(sink, "long", count)
        fastavro.schemaless_writer(sink, "long", len(payload))
        sink.write(payload)
        sink.write(MARKER)
    return sink.getvalue()


def _replace_schema(data: bytes, schema_json: str | None = None, count: int | None = None) -> bytes:
    """``data`` (uncompressed) with its header's ``avro.schema`` replaced and every block's
    record count set to ``count`` (the block bytes unchanged)."""
    reader = fastavro.block_reader(io.BytesIO(data))
    blocks = [(block.num_records if count is None else count, block.bytes_.getvalue()) for block in reader]
    return _container(schema_json or reader.metadata["avro.schema"], blocks)


def test_overlong_varints_read_as_the_row_path_reads_them() -> None:
    """Varints with redundant continuation bytes (valid Avro) decode to their value."""
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"},
                                                                   {"name": "s", "type": "string"}]})
    records = [b"\x81\x80\x00" + b"\x86\x00abc", b"\x80\x80\x80\x00" + b"\x80\x00", b"\x02\x02z"]
    data = _container(schema, [(3, b"".join(records)), (1, records[0])])
    table = _decoded(data)
    assert table.to_pylist() == [{"a": -1, "s": "abc"}, {"a": 0, "s": ""}, {"a": 1, "s": "z"}, {"a": -1, "s": "abc"}]
    assert_same(table, _read_avro_rows(io.BytesIO(data)))


@pytest.mark.parametrize("top", ["bare", "null_first", "null_last"])
def test_record_unions_either_way(top: str) -> None:
    record = {"type": "record", "name": "r", "fields": [{"name": "a", "type": ["null", "long"]}]}
    schema = record if top == "bare" else ["null", record] if top == "null_first" else [record, "null"]
    rows = [{"a": i if i % 2 else None} for i in range(50)]
    data = _fastavro_file(schema, rows if top == "bare" else [("r", row) for row in rows])
    assert_same(_decoded(data), _read_avro_rows(io.BytesIO(data)))


def test_a_null_row_raises_as_before() -> None:
    schema = ["null", {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}]
    data = _fastavro_file(schema, [{"a": 1}, None, {"a": 2}])
    assert _read_flat(data) is None
    with pytest.raises(DataError, match="null row"):
        read_avro_table(data)


def _outcome(read: Any, data: bytes) -> tuple[str, pa.Table | None]:
    try:
        return "ok", read(data)
    except Exception as exc:  # the type is what is compared
        return type(exc).__name__, None


def _assert_same_outcome(data: bytes) -> None:
    """``read_avro_table`` raises the row path's exception type, or reads its table."""
    new_kind, new = _outcome(read_avro_table, data)
    old_kind, old = _outcome(lambda d: _read_avro_rows(io.BytesIO(d)), data)
    assert new_kind == old_kind, (new_kind, old_kind)
    if new is not None and old is not None:
        assert_same(new, old)


def _sample_file(codec: str) -> bytes:
    n = 300
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([None if i % 7 == 0 else f"name-{i}-é" for i in range(n)]),
        "score": pa.array([i / 7 for i in range(n)]),
        "maybe": pa.array([None if i % 3 == 0 else i for i in range(n)], pa.int32()),
        "amount": pa.array([Decimal(i * 37 - 5000).scaleb(-2) for i in range(n)], pa.decimal128(9, 2)),
        "flag": pa.array([i % 2 == 0 for i in range(n)]),
        "at": pa.array([i * 1_000_003 for i in range(n)], pa.timestamp("us")),
    })
    return _file(table, {"none": "null", "gzip": "deflate", "zstd": "zstandard"}[codec], 700)


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_files_raise_as_before(codec: str) -> None:
    data = _sample_file(codec)
    for size in sorted({*range(0, 80), *range(0, len(data), max(1, len(data) // 150)), len(data) - 1}):
        _assert_same_outcome(data[:size])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CODECS), st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                                          min_size=1, max_size=4))
def test_damaged_files_raise_or_read_as_before(codec: str, flips: list[tuple[float, int]]) -> None:
    data = bytearray(_SAMPLES[codec])
    for where, value in flips:
        data[int(where * len(data))] = value
    _assert_same_outcome(bytes(data))


_SAMPLES = {codec: _sample_file(codec) for codec in CODECS}


def test_random_byte_damage_in_the_records() -> None:
    """Many single-byte changes inside the blocks of an uncompressed file (where they reach the
    decoder unchanged): never an unexpected exception, always the row path's outcome."""
    data = _SAMPLES["none"]
    body = data.index(MARKER) + len(MARKER)
    rng = random.Random(3)
    for _ in range(400):
        damaged = bytearray(data)
        damaged[rng.randrange(body, len(data))] = rng.randrange(256)
        _assert_same_outcome(bytes(damaged))


def test_empty_files_and_streams() -> None:
    table = pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    data = write_avro_table(table, "zstd", sync_marker=MARKER)
    assert_same(_decoded(data), _read_avro_rows(io.BytesIO(data)))
    full = pa.table({"a": pa.array([1, 2], pa.int64())})
    assert read_avro_table(io.BytesIO(write_avro_table(full, "none"))).equals(pa.table({"a": pa.array([1, 2])}))


def test_blocks_too_long_for_a_table_are_left_to_the_row_path() -> None:
    table = pa.table({"a": pa.array(range(3000), pa.int64()), "s": pa.array([str(i) for i in range(3000)])})
    data = _file(table, "null", 10**9)  # one block of 3000 short records: followed through a table
    with mock.patch.object(avro_decode, "_TABLE_MAX_BYTES", 1000):
        assert _read_flat(data) is None
        assert_same(read_avro_table(data), _read_avro_rows(io.BytesIO(data)))
    with mock.patch.object(avro_decode, "_TABLE_WINDOW", 77):  # windows that cut records
        assert_same(_decoded(data), _read_avro_rows(io.BytesIO(data)))


def test_blocks_without_their_bytes_are_left_to_the_row_path() -> None:
    """``Block.bytes_`` is not in fastavro's stubs: without it, files are still read (by rows)."""
    data = write_avro_table(pa.table({"a": pa.array([1, 2, 3], pa.int64())}), "zstd", sync_marker=MARKER)

    class Bare:
        num_records = 3

    with mock.patch("paimonflow.core.data.avro_data.fastavro.block_reader") as block_reader:
        block_reader.return_value.writer_schema = fastavro.block_reader(io.BytesIO(data)).writer_schema
        block_reader.return_value.__iter__.return_value = iter([Bare()])
        assert _read_flat(data) is None
    assert_same(read_avro_table(data), _read_avro_rows(io.BytesIO(data)))


@pytest.mark.parametrize("count", [0, 1, 299, 301, 10**15, -1])
def test_wrong_record_counts_raise_or_read_as_before(count: int) -> None:
    """A block count the bytes do not hold (a huge one must not be followed record by record)."""
    data = _replace_schema(_SAMPLES["none"], count=count)
    assert _read_flat(data) is None
    _assert_same_outcome(data)
