"""Partition paths: Java escaping, value rendering, parsing, grouping, and pypaimon 2.1.0 interop."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import textwrap
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core.data.partition import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    group_by_partition,
    java_double_to_string,
    java_float_to_string,
    parse_partition_path,
    partition_path,
    partition_spec,
    unescape_path_name,
)
from paimonflow.core.errors import DataError, UnsupportedError

UTC = dt.UTC

# ---------------------------------------------------------------------------------------------
# Escaping
# ---------------------------------------------------------------------------------------------

JAVA_ESCAPED = [chr(c) for c in range(0x20)] + list("\x7f\"#%'*/:=?\\{}[]^")


def test_escape_exactly_javas_characters():
    for c in map(chr, range(0x200)):
        expected = f"%{ord(c):02X}" if c in JAVA_ESCAPED else c
        assert escape_path_name(c) == expected, repr(c)
    assert escape_path_name("a b/c=d%e:f") == "a b%2Fc%3Dd%25e%3Af"
    assert escape_path_name("中文 é😀") == "中文 é😀"
    with pytest.raises(ValueError):
        escape_path_name("")


@given(st.text(min_size=1))
def test_unescape_inverts_escape(text):
    assert unescape_path_name(escape_path_name(text)) == text


def test_unescape_java_quirks():
    assert unescape_path_name("a%2") == "a%2"  # too short: kept
    assert unescape_path_name("%zz%41") == "%zzA"
    assert unescape_path_name("%-1") == "%-1"  # negative: kept
    assert unescape_path_name("%+A") == "\n"  # Integer.parseInt accepts a sign
    assert unescape_path_name("%-0x") == "\x00x"
    assert unescape_path_name("%４１") == "A"  # Character.digit takes Unicode digits
    assert unescape_path_name("100%") == "100%"


# ---------------------------------------------------------------------------------------------
# Value rendering
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.1, "0.1"),
        (1e-3, "0.001"),
        (1e-4, "1.0E-4"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (1e23, "1.0E23"),
        (5e-324, "4.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (2.0**60, "1.152921504606847E18"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_java_double_to_string(value, expected):
    assert java_double_to_string(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.1, "0.1"),
        (1.1, "1.1"),
        (3.4028235e38, "3.4028235E38"),
        (1.4e-45, "1.4E-45"),
        (16777216.0, "1.6777216E7"),
        (2.68873286e11, "2.6887329E11"),
        (0.33333334, "0.33333334"),
    ],
)
def test_java_float_to_string(value, expected):
    assert java_float_to_string(value) == expected


TS = dt.datetime(2024, 1, 2, 3, 4, 5, 123000)


@pytest.mark.parametrize(
    ("value", "arrow_type", "legacy_text", "cast_text"),
    [
        (True, pa.bool_(), "true", "true"),
        (-42, pa.int16(), "-42", "-42"),
        (2**63 - 1, pa.int64(), str(2**63 - 1), str(2**63 - 1)),
        (Decimal("1.5"), pa.decimal128(10, 2), "1.50", "1.50"),
        (Decimal("-0.0000001"), pa.decimal128(20, 8), "-0.00000010", "-0.00000010"),
        (
            Decimal("12345678901234567890.5"),
            pa.decimal128(38, 1),
            "12345678901234567890.5",
            "12345678901234567890.5",
        ),
        (dt.date(2024, 1, 2), pa.date32(), "19724", "2024-01-02"),
        (dt.date(1, 1, 1), pa.date32(), "-719162", "0001-01-01"),
        (dt.time(1, 2, 3), pa.time32("ms"), "3723000", "01:02:03.0"),
        (dt.time(1, 2, 3, 120000), pa.time32("ms"), "3723120", "01:02:03.12"),
        (dt.time(1, 2, 3, 120000), pa.time32("s"), "3723120", "01:02:03"),
        (TS, pa.timestamp("ms"), "2024-01-02T03:04:05.123", "2024-01-02 03:04:05.123"),
        (TS.replace(microsecond=0), pa.timestamp("ms"), "2024-01-02T03:04:05", "2024-01-02 03:04:05.000"),
        (TS.replace(second=0, microsecond=0), pa.timestamp("s"), "2024-01-02T03:04", "2024-01-02 03:04:00"),
        (
            TS.replace(microsecond=500000),
            pa.timestamp("s"),
            "2024-01-02T03:04:05.500",
            "2024-01-02 03:04:05.5",
        ),
        (
            TS.replace(microsecond=123456),
            pa.timestamp("us"),
            "2024-01-02T03:04:05.123456",
            "2024-01-02 03:04:05.123456",
        ),
        (
            TS.replace(microsecond=100000),
            pa.timestamp("us"),
            "2024-01-02T03:04:05.100",
            "2024-01-02 03:04:05.100000",
        ),
        (
            TS.replace(tzinfo=dt.timezone(dt.timedelta(hours=2))),
            pa.timestamp("ms", tz="UTC"),
            "2024-01-02T01:04:05.123",
            "2024-01-02 01:04:05.123",
        ),
        (1.5, pa.float32(), "1.5", "1.5"),
        ("x/y", pa.string(), "x/y", "x/y"),
    ],
)
def test_value_strings(value, arrow_type, legacy_text, cast_text):
    assert partition_spec(["k"], [value], [arrow_type]) == {"k": legacy_text}
    assert partition_spec(["k"], [value], [arrow_type], legacy=False) == {"k": cast_text}


def test_ltz_cast_uses_time_zone():
    zone = dt.timezone(dt.timedelta(hours=3))
    value = dt.datetime(2024, 1, 1, 23, 30, tzinfo=UTC)
    spec = partition_spec(["k"], [value], [pa.timestamp("us", tz="UTC")], legacy=False, time_zone=zone)
    assert spec == {"k": "2024-01-02 02:30:00.000000"}


def test_binary_partitions():
    assert partition_spec(["k"], [b"ab\xff"], [pa.binary()], legacy=False) == {"k": "ab\ufffd"}
    with pytest.raises(UnsupportedError):
        partition_spec(["k"], [b"ab"], [pa.binary()])


@pytest.mark.parametrize("blank", [None, "", " ", "\t\n", "\u2003", "\x1c", "\u2028"])
def test_default_name_for_null_and_java_whitespace(blank):
    assert partition_path(["dt"], [blank], [pa.string()]) == "dt=__DEFAULT_PARTITION__"
    assert partition_path(["dt"], [blank], [pa.string()], default_name="null_part") == "dt=null_part"


@pytest.mark.parametrize("not_blank", ["\u00a0", "\u2007", "\u202f", "\x85", " a "])
def test_java_non_whitespace_is_kept(not_blank):
    assert partition_spec(["dt"], [not_blank], [pa.string()]) == {"dt": not_blank}


def test_partition_path_shapes():
    assert partition_path([], [], []) == ""
    path = partition_path(["a=b", "c/d"], ["x y", 3], [pa.string(), pa.int32()])
    assert path == "a%3Db=x y/c%2Fd=3"
    with pytest.raises(DataError):
        partition_path(["k"], ["not a date"], [pa.date32()])
    with pytest.raises(DataError):
        partition_path(["k"], [dt.datetime(2024, 1, 1, tzinfo=UTC)], [pa.timestamp("ms")])


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

PARSE_TYPES: list[tuple[pa.DataType, st.SearchStrategy]] = [
    (pa.bool_(), st.booleans()),
    (pa.int8(), st.integers(-128, 127)),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.float32(), st.floats(width=32, allow_nan=False)),
    (pa.float64(), st.floats(allow_nan=False)),
    (pa.decimal128(12, 3), st.integers(-(10**12) + 1, 10**12 - 1).map(lambda u: Decimal(f"{u}E-3"))),
    (pa.string(), st.text(min_size=1).filter(lambda s: s.strip() and s != DEFAULT_PARTITION_NAME)),
    (pa.date32(), st.dates()),
    (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (pa.timestamp("us"), st.datetimes()),
    (
        pa.timestamp("ms", tz="UTC"),
        st.datetimes(timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0)),
    ),
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_parse_inverts_path(data, legacy):
    chosen = data.draw(st.lists(st.sampled_from(range(len(PARSE_TYPES))), min_size=1, max_size=4))
    types = [PARSE_TYPES[i][0] for i in chosen]
    values = tuple(data.draw(st.one_of(st.none(), PARSE_TYPES[i][1])) for i in chosen)
    keys = [f"k{i}" for i in range(len(types))]
    path = partition_path(keys, values, types, legacy=legacy)
    assert parse_partition_path(f"warehouse/db.db/t/{path}/", keys, types, legacy=legacy) == values


def test_parse_errors_and_forms():
    types = [pa.date32(), pa.time32("ms"), pa.timestamp("ms")]
    keys = ["d", "t", "ts"]
    parsed = parse_partition_path("d=2024-01-02/t=01%3A02/ts=2024-01-02", keys, types)
    assert parsed == (dt.date(2024, 1, 2), dt.time(1, 2), dt.datetime(2024, 1, 2))
    with pytest.raises(DataError):
        parse_partition_path("x=1", ["k"], [pa.int32()])
    with pytest.raises(DataError):
        parse_partition_path("k=abc", ["k"], [pa.int32()])
    with pytest.raises(DataError):
        parse_partition_path("k=1", ["a", "k"], [pa.int32(), pa.int32()])
    with pytest.raises(DataError):
        parse_partition_path("k=300", ["k"], [pa.int8()])
    assert parse_partition_path("k=yes", ["k"], [pa.bool_()]) == (True,)


# ---------------------------------------------------------------------------------------------
# Grouping a table by partition
# ---------------------------------------------------------------------------------------------


def _naive_groups(table: pa.Table, keys: list[str]) -> dict[tuple, list[int]]:
    groups: dict[tuple, list[int]] = {}
    for r, row in enumerate(table.select(keys).to_pylist()):
        groups.setdefault(tuple(row[k] for k in keys), []).append(r)
    return groups


def test_group_by_partition_matches_naive_grouping():
    rng = np.random.default_rng(11)
    rows = 5000
    table = pa.table(
        {
            "dt": pa.array(
                rng.choice(["2024-01-01", "2024-01-02", "", "x/y"], rows), mask=rng.random(rows) < 0.1
            ),
            "hr": pa.array(rng.integers(0, 3, rows, dtype=np.int32), mask=rng.random(rows) < 0.1),
            "v": pa.array(rng.standard_normal(rows)),
        }
    )
    chunked = pa.concat_tables([table.slice(0, 1234), table.slice(1234)])
    for candidate in (table, chunked):
        groups = group_by_partition(candidate, ["dt", "hr"])
        expected = _naive_groups(table, ["dt", "hr"])
        assert groups.values == list(expected)  # first-appearance order
        assert [g.tolist() for g in groups.row_indices] == list(expected.values())
        for g, indices in enumerate(groups.row_indices):
            assert (groups.group_ids[indices] == g).all()


def test_group_by_partition_edges():
    table = pa.table({"a": pa.array([1, 1, 2]), "b": pa.array(["x", "y", "x"])})
    whole = group_by_partition(table, [])
    assert whole.values == [()] and whole.row_indices[0].tolist() == [0, 1, 2]
    assert len(group_by_partition(table.slice(0, 0), ["a"])) == 0
    single = group_by_partition(table, ["b"])
    assert single.values == [("x",), ("y",)]
    with pytest.raises(Exception, match="not columns"):
        group_by_partition(table, ["zzz"])


def test_group_by_partition_many_keys_does_not_overflow():
    rows = 2000
    rng = np.random.default_rng(5)
    columns = {f"k{i}": pa.array(rng.integers(0, 1000, rows)) for i in range(8)}
    table = pa.table(columns)
    groups = group_by_partition(table, list(columns))
    assert groups.values == list(_naive_groups(table, list(columns)))


# ---------------------------------------------------------------------------------------------
# Interop with pypaimon 2.1.0 (one subprocess for the module)
# ---------------------------------------------------------------------------------------------

PYPAIMON_PYTHON = os.environ.get("PAIMONFLOW_PYPAIMON_PYTHON", "/work/main/.venv-pypaimon/bin/python")

_PYPAIMON_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.utils.file_store_path_factory import FileStorePathFactory

    work = sys.argv[1]
    spec = json.load(open(work + "/spec.json"))
    out = {}
    for name, case in spec.items():
        table = pa.ipc.open_file(work + "/" + name + ".arrow").read_all()
        rows = [tuple(r.values()) for r in table.to_pylist()]
        out[name] = {}
        for legacy in (True, False):
            factory = FileStorePathFactory(
                root="/tmp/t", partition_keys=case["keys"], default_part_value="__DEFAULT_PARTITION__",
                format_identifier="parquet", data_file_prefix="data-", changelog_file_prefix="changelog-",
                legacy_partition_name=legacy, file_suffix_include_compression=False, file_compression="zstd",
                partition_types=[AtomicType(t) for t in case["types"]])
            paths = []
            for row in rows:
                path = factory.relative_bucket_path(row, 0, canonical_partition=True)
                assert path.endswith("/bucket-0"), path
                paths.append(path[: -len("/bucket-0")])
            out[name][str(legacy)] = paths
    json.dump(out, open(work + "/out.json", "w"))
    """
)

TRICKY_STRINGS = [
    "plain",
    "with space",
    " leading and trailing ",
    "a/b",
    "a=b",
    "100%",
    "%2F",
    "12:30",
    "quote\"s'",
    "#?*",
    "{}[]^",
    "back\\slash",
    "ctl\x01\x1f\x7f",
    "tab\there",
    "new\nline",
    "é中文😀",
    "ß",
    ".",
    "..",
    "",
    " ",
    "\t",
    None,
    DEFAULT_PARTITION_NAME,
]

FLOATS = [0.1, 1e10, 1.5, -2.25, 1e-5, 123456.7, 0.0, -0.0, 1e-3, 9999999.0, 1e7, 1 / 3, 2.0**70, None]

INTEROP_CASES: dict[str, tuple[list[str], list[str], list[pa.DataType], list[list[object]]]] = {
    "strings": (["dt"], ["STRING"], [pa.string()], [[s] for s in TRICKY_STRINGS]),
    "keys_escaped": (
        ["a b", "k=1", "k/x:"],
        ["STRING", "INT", "BIGINT"],
        [pa.string(), pa.int32(), pa.int64()],
        [["v/1", 1, -(2**63)], [None, None, None], ["", -7, 2**63 - 1]],
    ),
    "scalars": (
        ["b", "t", "s", "d", "d38"],
        ["BOOLEAN", "TINYINT", "SMALLINT", "DECIMAL(10, 2)", "DECIMAL(38, 10)"],
        [pa.bool_(), pa.int8(), pa.int16(), pa.decimal128(10, 2), pa.decimal128(38, 10)],
        [
            [True, -128, 32767, Decimal("1.50"), Decimal("1234567890123456789012345678.0123456789")],
            [False, 0, -1, Decimal("-0.01"), Decimal("-0.0000000001")],
            [None, None, None, None, None],
            [True, 5, 0, Decimal("0.00"), Decimal("0E-10")],
        ],
    ),
    "temporal": (
        ["dt", "tm0", "tm3", "ts0", "ts3", "ts6", "ltz3", "ltz6"],
        [
            "DATE",
            "TIME(0)",
            "TIME(3)",
            "TIMESTAMP(0)",
            "TIMESTAMP(3)",
            "TIMESTAMP(6)",
            "TIMESTAMP(3) WITH LOCAL TIME ZONE",
            "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        ],
        [
            pa.date32(),
            pa.time32("s"),
            pa.time32("ms"),
            pa.timestamp("s"),
            pa.timestamp("ms"),
            pa.timestamp("us"),
            pa.timestamp("ms", tz="UTC"),
            pa.timestamp("us", tz="UTC"),
        ],
        [
            [
                dt.date(2024, 1, 2),
                dt.time(1, 2, 3),
                dt.time(1, 2, 3, 120000),
                dt.datetime(2024, 1, 2, 3, 4, 5),
                dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
                dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
                dt.datetime(2024, 1, 2, 3, 4, 5, 100000, tzinfo=UTC),
                dt.datetime(2024, 1, 2, 3, 4, 5, 100, tzinfo=UTC),
            ],
            [
                dt.date(1900, 12, 31),
                dt.time(0, 0),
                dt.time(23, 59, 59, 999000),
                dt.datetime(1969, 12, 31, 23, 59),
                dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
                dt.datetime(2000, 1, 1, 0, 0, 0, 1000),
                dt.datetime(2024, 1, 2, 3, 4, tzinfo=UTC),
                dt.datetime(1950, 6, 1, 12, 0, 0, 120000, tzinfo=UTC),
            ],
            [None] * 8,
            [
                dt.date(1, 1, 1),
                dt.time(12, 0, 0, 5000),
                dt.time(12, 0, 0, 5000),
                dt.datetime(9999, 12, 31, 23, 59, 59),
                dt.datetime(2024, 2, 29, 0, 0, 0, 1000),
                dt.datetime(2024, 2, 29),
                dt.datetime(1970, 1, 1, tzinfo=UTC),
                dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
            ],
        ],
    ),
    "floats": (
        ["f", "d"],
        ["FLOAT", "DOUBLE"],
        [pa.float32(), pa.float64()],
        [[f, f] for f in FLOATS] + [[3.4028235e38, 5e-324], [1.4e-45, 1.7976931348623157e308]],
    ),
}


def _interop_table(case: str) -> pa.Table:
    keys, _, types, rows = INTEROP_CASES[case]
    return pa.table([pa.array([row[i] for row in rows], t) for i, t in enumerate(types)], names=keys)


def _interop_rows(case: str) -> list[tuple]:
    """The rows as arrow holds them (e.g. a TIME(0) column drops sub-second parts)."""
    return [tuple(row.values()) for row in _interop_table(case).to_pylist()]


@pytest.fixture(scope="module")
def interop(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not Path(PYPAIMON_PYTHON).exists():
        pytest.skip(f"pypaimon interpreter {PYPAIMON_PYTHON} not found")
    work = tmp_path_factory.mktemp("partition_interop")
    spec = {}
    for name, (keys, type_names, _, _) in INTEROP_CASES.items():
        table = _interop_table(name)
        with pa.ipc.new_file(work / f"{name}.arrow", table.schema) as writer:
            writer.write_table(table)
        spec[name] = {"keys": keys, "types": type_names}
    (work / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "TZ": "UTC"}  # pypaimon casts TIMESTAMP_LTZ in the local zone
    done = subprocess.run(
        [PYPAIMON_PYTHON, "-c", _PYPAIMON_SCRIPT, str(work)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((work / "out.json").read_text())


@pytest.mark.interop
@pytest.mark.parametrize("case", list(INTEROP_CASES))
@pytest.mark.parametrize("legacy", [True, False])
def test_same_paths_as_pypaimon(interop, case, legacy):
    keys, _, types, _ = INTEROP_CASES[case]
    theirs = interop[case][str(legacy)]
    ours = [partition_path(keys, row, types, legacy=legacy) for row in _interop_rows(case)]
    assert ours == theirs
    for path in ours:
        parsed = parse_partition_path(path, keys, types, legacy=legacy)
        rendered = partition_path(keys, parsed, types, legacy=legacy)
        assert rendered == path  # parsing a path and rendering it again is stable


@pytest.mark.interop
def test_grouped_table_paths_match_pypaimon(interop):
    keys, _, types, rows = INTEROP_CASES["temporal"]
    table = _interop_table("temporal")
    table = pa.concat_tables([table, table.slice(1, 2)])  # repeated partitions
    groups = group_by_partition(table, keys)
    assert len(groups) == len(rows)
    paths = [partition_path(keys, values, types) for values in groups.values]
    assert paths == interop["temporal"]["True"]
    assert groups.row_indices[1].tolist() == [1, 4]


def test_partition_codes_and_rows_in_two_halves_match_one_pass(monkeypatch):
    """With a pool, long key columns are dictionary-encoded half by half and the rows of each code
    sorted half by half; codes, their first-appearance order, their values and the rows are those
    of one pass (values new in the second half, nulls and values in both halves included)."""
    from concurrent.futures import ThreadPoolExecutor

    from paimonflow.core.data import partition
    from paimonflow.core.data.partition import partition_codes, rows_by_code

    monkeypatch.setattr(partition, "_SPLIT_ROWS", 16)
    rng = np.random.default_rng(4)
    rows = 4001
    first = rng.choice(["a", "b", ""], rows // 2)
    second = rng.choice(["c", "a", "d"], rows - rows // 2)
    table = pa.table({
        "dt": pa.array(np.concatenate([first, second]), mask=rng.random(rows) < 0.05),
        "hr": pa.array(rng.integers(0, 3, rows, dtype=np.int32), mask=rng.random(rows) < 0.05),
    })
    with ThreadPoolExecutor(2) as pool:
        for keys in (["dt"], ["dt", "hr"], ["hr"]):
            split_codes, split_values = partition_codes(table, keys, pool=pool)
            whole = group_by_partition(table, keys)
            assert split_values == whole.values == list(_naive_groups(table, keys))
            assert split_codes.tolist() == whole.group_ids.tolist()
            present, split_rows = rows_by_code(split_codes, len(split_values), pool=pool)
            assert present == list(range(len(whole.values)))
            assert [g.tolist() for g in split_rows] == [g.tolist() for g in whole.row_indices]


def test_rows_by_code_with_few_of_many_possible_codes():
    """Codes of (partition, bucket) slots can range over far more values than there are rows:
    only the codes that occur are counted (no array as long as every possible code)."""
    from concurrent.futures import ThreadPoolExecutor

    from paimonflow.core.data.partition import rows_by_code

    rng = np.random.default_rng(8)
    codes = rng.choice(np.array([3, 10**9, 7 * 10**11, 5]), 200_000)
    expected = {int(c): np.flatnonzero(codes == c).tolist() for c in np.unique(codes)}
    with ThreadPoolExecutor(2) as pool:
        for executor in (None, pool):
            present, rows = rows_by_code(codes, 10**12, pool=executor)
            assert present == sorted(expected)
            assert [r.tolist() for r in rows] == [expected[c] for c in present]
