"""Bucket function: vectorized murmur vs a scalar reference, Java mod semantics, pypaimon interop."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import textwrap
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core.data.binary_row import serialize_row_no_prefix
from paimonflow.core.data.bucket import (
    bucket_ids,
    buckets_of_hashes,
    hash_codes,
    murmur_hash_bytes,
    murmur_hash_words,
)
from paimonflow.core.errors import UnsupportedError


def reference_murmur(data: bytes, seed: int = 42) -> int:
    """MurmurHash3 x86_32 over whole 4-byte little-endian words, Java's hashBytesByWords."""
    h = seed
    for (word,) in struct.iter_unpack("<I", data):
        k = (word * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def java_bucket(hash_code: int, n: int) -> int:
    """Java ``Math.abs(h % n)``: the remainder truncates toward zero, so it equals ``abs(h) % n``."""
    return abs(hash_code) % n


@pytest.mark.parametrize(
    ("data", "seed", "expected"),
    [
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"\0\0\0\0", 0, 0x2362F9DE),
        (b"aaaa", 0x9747B28C, 0x5A97808A),
        (b"abcd", 0x9747B28C, 0xF0478627),
    ],
)
def test_reference_murmur_matches_published_vectors(data, seed, expected):
    """Published MurmurHash3 x86_32 test vectors (inputs without a tail)."""
    assert reference_murmur(data, seed) & 0xFFFFFFFF == expected


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: b * 4), min_size=1, max_size=40), st.binary(max_size=8))
def test_murmur_hash_words_matches_reference(rows, lead):
    buffer = np.frombuffer(lead + b"".join(rows), dtype=np.uint8)
    offsets = np.cumsum([len(lead)] + [len(r) for r in rows])
    assert murmur_hash_words(buffer, offsets).tolist() == [reference_murmur(r) for r in rows]


def test_murmur_uniform_rows_and_single():
    rng = np.random.default_rng(3)
    buffer = rng.integers(0, 256, 24 * 1000, dtype=np.uint8)
    offsets = np.arange(1001) * 24
    expected = [reference_murmur(buffer[i * 24 : (i + 1) * 24].tobytes()) for i in range(1000)]
    assert murmur_hash_words(buffer, offsets).tolist() == expected
    assert murmur_hash_bytes(buffer[:24].tobytes()) == expected[0]
    assert murmur_hash_words(buffer, np.array([0])).tolist() == []
    with pytest.raises(ValueError):
        murmur_hash_words(buffer, np.array([0, 6]))


def test_java_abs_mod_semantics():
    hashes = np.array([-7, 7, -(2**31), 2**31 - 1, 0, -1], dtype=np.int32)
    assert buckets_of_hashes(hashes, 3).tolist() == [1, 1, 2, 1, 0, 1]
    assert buckets_of_hashes(hashes, 1).tolist() == [0] * 6
    with pytest.raises(ValueError):
        bucket_ids([pa.array([1])], 0)


def test_pk_table_placement_from_reference():
    """pypaimon.md §4.2: pk_t with bucket=2 puts ids 1, 2, 4, 5 in bucket 0 and 3 in bucket 1."""
    assert bucket_ids([pa.array([1, 2, 3, 4, 5], pa.int64())], 2).tolist() == [0, 0, 1, 0, 0]


def test_unsupported_key_type():
    with pytest.raises(UnsupportedError):
        bucket_ids([pa.array([[1]])], 4)


KEY_TYPES = [
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    (pa.string(), st.text(max_size=30)),
    (pa.float64(), st.floats(allow_nan=False)),
    (pa.decimal128(24, 4), st.integers(-(10**24) + 1, 10**24 - 1).map(lambda u: Decimal(f"{u}E-4"))),
    (pa.binary(), st.binary(max_size=20)),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_bucket_ids_match_scalar_path(data):
    chosen = data.draw(st.lists(st.sampled_from(range(len(KEY_TYPES))), min_size=1, max_size=3))
    types = [KEY_TYPES[i][0] for i in chosen]
    rows = data.draw(
        st.lists(st.tuples(*[st.one_of(st.none(), KEY_TYPES[i][1]) for i in chosen]), min_size=1, max_size=20)
    )
    columns = [pa.array([r[i] for r in rows], t) for i, t in enumerate(types)]
    expected = [reference_murmur(serialize_row_no_prefix(list(r), types)) for r in rows]
    assert hash_codes(columns).tolist() == expected
    for n in (1, 3, 16):
        assert bucket_ids(columns, n).tolist() == [java_bucket(h, n) for h in expected]


def test_mixed_row_lengths_are_grouped():
    values = ["", "short", "exactly8", "a much longer string than eight", None, "é" * 20, "x" * 9]
    column = pa.array(values * 50)
    expected = [reference_murmur(serialize_row_no_prefix([v], [pa.string()])) for v in values * 50]
    assert hash_codes([column]).tolist() == expected
    chunked = pa.chunked_array([values, values[::-1]])
    assert hash_codes([chunked]).tolist() == [
        reference_murmur(serialize_row_no_prefix([v], [pa.string()])) for v in values + values[::-1]
    ]


# ---------------------------------------------------------------------------------------------
# Interop with pypaimon 2.1.0 (one subprocess for the module)
# ---------------------------------------------------------------------------------------------

PYPAIMON_PYTHON = os.environ.get("PAIMONFLOW_PYPAIMON_PYTHON", "/work/main/.venv-pypaimon/bin/python")
BUCKET_COUNTS = [1, 2, 3, 4, 7, 16, 128]
ROWS = 1500

_PYPAIMON_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.write.row_key_extractor import RowKeyExtractor, _bucket_from_hash

    work = sys.argv[1]
    spec = json.load(open(work + "/spec.json"))
    out = {}
    for name, types in spec["combos"].items():
        table = pa.ipc.open_file(work + "/" + name + ".arrow").read_all()
        fields = [DataField(i, "k%d" % i, AtomicType(t)) for i, t in enumerate(types)]
        columns = [c.to_pylist() for c in table.columns]
        hashes = [RowKeyExtractor._binary_row_hash_code(tuple(c[r] for c in columns), fields)
                  for r in range(table.num_rows)]
        out[name] = {"hashes": hashes,
                     "buckets": {str(n): [_bucket_from_hash(h, n) for h in hashes] for n in spec["counts"]}}
    json.dump(out, open(work + "/out.json", "w"))
    """
)


def _key_combos(rows: int, seed: int = 7) -> dict[str, tuple[list[str], pa.Table]]:
    rng = np.random.default_rng(seed)
    picker = random.Random(seed)
    alphabet = np.array(list("abcdefXYZ0123 -_/é中😀ß"))

    def mask(nulls: bool = True) -> np.ndarray | None:
        return rng.random(rows) < 0.05 if nulls else None

    def strings() -> pa.Array:
        return pa.array(["".join(rng.choice(alphabet, n)) for n in rng.integers(0, 31, rows)], mask=mask())

    def bigints() -> pa.Array:
        return pa.array(rng.integers(-(2**63), 2**63 - 1, rows, dtype=np.int64), mask=mask())

    def decimals(p: int, s: int, nulls: bool = True) -> pa.Array:
        values = []
        for _ in range(rows):
            digits = picker.randint(1, p)
            values.append(
                Decimal(f"{picker.randrange(10 ** (digits - 1), 10**digits) * picker.choice((-1, 1))}E-{s}")
            )
        return pa.array(values, pa.decimal128(p, s), mask=mask(nulls))

    micros = rng.integers(-2_208_988_800_000_000, 4_102_444_800_000_000, rows)
    small = rng.integers(-5, 5, rows)  # repeated keys too
    combos = {
        "bigint": (["BIGINT"], [bigints()]),
        "bigint_small": (["BIGINT"], [pa.array(small, pa.int64(), mask=mask())]),
        "string": (["STRING"], [strings()]),
        "int_string": (["INT", "STRING"], [pa.array(small.astype(np.int32), mask=mask()), strings()]),
        "bigint_double_string": (
            ["BIGINT", "DOUBLE", "STRING"],
            [bigints(), pa.array(rng.standard_normal(rows) * 1e6, mask=mask()), strings()],
        ),
        "date": (
            ["DATE"],
            [pa.array(rng.integers(-30_000, 60_000, rows).astype(np.int32), pa.date32(), mask=mask())],
        ),
        "decimal_compact": (["DECIMAL(12, 2)"], [decimals(12, 2)]),
        "decimal_wide": (["DECIMAL(30, 5)"], [decimals(30, 5, nulls=False)]),
        "timestamp3": (["TIMESTAMP(3)"], [pa.array(micros // 1000, pa.timestamp("ms"), mask=mask())]),
        "timestamp6": (["TIMESTAMP(6)"], [pa.array(micros, pa.timestamp("us"))]),
        "ltz3_string": (
            ["TIMESTAMP(3) WITH LOCAL TIME ZONE", "STRING"],
            [pa.array(micros // 1000, pa.timestamp("ms", tz="UTC"), mask=mask()), strings()],
        ),
        "bool_smallint_bytes": (
            ["BOOLEAN", "SMALLINT", "BYTES"],
            [
                pa.array(rng.random(rows) < 0.5, mask=mask()),
                pa.array(small.astype(np.int16), mask=mask()),
                pa.array([bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in rng.integers(0, 20, rows)]),
            ],
        ),
    }
    return {
        name: (types, pa.table(arrays, names=[f"k{i}" for i in range(len(arrays))]))
        for name, (types, arrays) in combos.items()
    }


@pytest.fixture(scope="module")
def interop(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not Path(PYPAIMON_PYTHON).exists():
        pytest.skip(f"pypaimon interpreter {PYPAIMON_PYTHON} not found")
    work = tmp_path_factory.mktemp("bucket_interop")
    combos = _key_combos(ROWS)
    for name, (_, table) in combos.items():
        with pa.ipc.new_file(work / f"{name}.arrow", table.schema) as writer:
            writer.write_table(table)
    spec = {"combos": {name: types for name, (types, _) in combos.items()}, "counts": BUCKET_COUNTS}
    (work / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [PYPAIMON_PYTHON, "-c", _PYPAIMON_SCRIPT, str(work)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {"combos": combos, "pypaimon": json.loads((work / "out.json").read_text())}


@pytest.mark.interop
@pytest.mark.parametrize(
    "combo",
    [
        "bigint",
        "bigint_small",
        "string",
        "int_string",
        "bigint_double_string",
        "date",
        "decimal_compact",
        "decimal_wide",
        "timestamp3",
        "timestamp6",
        "ltz3_string",
        "bool_smallint_bytes",
    ],
)
def test_same_buckets_as_pypaimon(interop, combo):
    _, table = interop["combos"][combo]
    theirs = interop["pypaimon"][combo]
    hashes = hash_codes(table.columns)
    assert (hashes.astype(np.int64) & 0xFFFFFFFF).tolist() == theirs["hashes"]
    for n in BUCKET_COUNTS:
        assert bucket_ids(table.columns, n).tolist() == theirs["buckets"][str(n)], f"{n} buckets"


def test_null_wide_key_hashes_java_layout():
    """A null DECIMAL(p > 18) key hashes Java's layout (16 reserved bytes), unlike pypaimon."""
    column = pa.array([None], pa.decimal128(30, 2))
    row = serialize_row_no_prefix([None], [pa.decimal128(30, 2)])
    assert len(row) == 32
    assert hash_codes([column]).tolist() == [reference_murmur(row)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fixed_width_rows_hash_word_by_word_like_row_buffers(data):
    """hash_codes hashes fixed-width keys column by column (no row buffer): the same hashes as
    the BinaryRow bytes serialize_columns lays out, nulls and two-word headers included."""
    from paimonflow.core.data.binary_row import hashable_rows, serialize_columns
    from paimonflow.core.data.bucket import _hash_encoded

    rows = data.draw(st.integers(1, 50))
    arity = data.draw(st.sampled_from([1, 2, 3, 57, 60]))
    kinds = [pa.int64(), pa.int32(), pa.int16(), pa.int8(), pa.float64(), pa.float32(), pa.bool_(), pa.date32()]
    columns = []
    for _ in range(arity):
        arrow_type = data.draw(st.sampled_from(kinds))
        values = data.draw(st.lists(st.integers(-100, 100) | st.none(), min_size=rows, max_size=rows))
        if pa.types.is_boolean(arrow_type):
            values = [None if v is None else v > 0 for v in values]
        elif pa.types.is_floating(arrow_type):
            values = [None if v is None else v / 7 for v in values]
        columns.append(pa.array(values, arrow_type))
    assert isinstance(hashable_rows(columns), list)  # the word-by-word path
    assert hash_codes(columns).tolist() == _hash_encoded(serialize_columns(columns)).tolist()


def test_variable_width_keys_hash_their_serialized_rows():
    from paimonflow.core.data.binary_row import EncodedRows, hashable_rows, serialize_columns

    columns = [pa.array(["a much longer string than seven bytes", "x"]), pa.array([1, 2])]
    rows = hashable_rows(columns)
    assert isinstance(rows, EncodedRows)
    expected = serialize_columns(columns)
    assert rows.buffer.tobytes() == expected.buffer.tobytes() and rows.offsets.tolist() == expected.offsets.tolist()
