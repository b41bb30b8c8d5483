"""Bad input: every kind gets a typed error naming the problem; nothing partial becomes visible.

Covered: wrong column types and names, null keys, bad row kinds and overwrite specs (writes);
unknown and invalid options, unknown key columns (create table); unknown columns, snapshots and
tags (reads); names such as ``../x`` for databases, tables, tags and commit users; truncated,
bit-flipped and odd-JSON metadata files of every family (snapshot, ``LATEST``, ``EARLIEST``,
schema, manifest list, manifest, tag).

Oracles (``reference/reliability.md`` §5.2): the error derives from ``PaimonflowError`` and names
the column, option or file; the snapshot list and the rows are unchanged afterwards; when the
error is known before any file is written, no file appears at all (I7); a corrupt metadata file
gives ``CorruptMetadataError`` or, for hints only, a correct recovery, never wrong rows (I5, I6).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog, col
from paimonflow.core.errors import (
    CorruptMetadataError,
    DatabaseNotFoundError,
    DataError,
    InvalidArgumentError,
    InvalidNameError,
    InvalidOptionError,
    PaimonflowError,
    SchemaError,
    SnapshotNotFoundError,
    TableAlreadyExistsError,
    TagNotFoundError,
)
from paimonflow.core.names import validate_name
from paimonflow.core.table import Table

DB = "shop"
PK_TABLE = f"{DB}.orders"
APPEND_TABLE = f"{DB}.events"

ORDERS = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("qty", pa.int32()),
    pa.field("amount", pa.float64()),
    pa.field("note", pa.string()),
])
EVENTS = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("tags", pa.list_(pa.string())),
])


# ---------------------------------------------------------------------------------------------
# helpers


def orders(ids: list[int], *, dt: str = "2026-11-21", amount: float = 1.5, note: str = "n") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "qty": [i % 7 for i in ids],
                     "amount": [amount * i for i in ids], "note": [f"{note}{i}" for i in ids]}, schema=ORDERS)


def events(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "kind": [f"k{i % 3}" for i in ids], "tags": [[f"t{i}"] for i in ids]}, schema=EVENTS)


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> content hash); directories as ``path/``."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out[os.path.normpath(os.path.join(rel, d)) + "/"] = ""
        for f in filenames:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                out[os.path.normpath(os.path.join(rel, f))] = hashlib.sha256(fh.read()).hexdigest()
    return out


@dataclass(frozen=True, slots=True)
class TableState:
    snapshot_ids: tuple[int, ...]
    rows: tuple[tuple[object, ...], ...]


def state_of(catalog: Catalog, identifier: str) -> TableState:
    """What a fresh reader sees: the snapshot ids and the rows of the latest snapshot (sorted)."""
    table = catalog.get_table(identifier)
    ids = tuple(table.system_table("snapshots").column("snapshot_id").to_pylist())
    rows = tuple(sorted(tuple(r.values()) for r in table.read().to_pylist()))
    return TableState(ids, rows)


def rows_of(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def assert_names(exc: BaseException, *words: str) -> None:
    message = str(exc)
    for word in words:
        assert word in message, f"{type(exc).__name__} message does not name {word!r}: {message}"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture
def catalog(warehouse: Path) -> Catalog:
    catalog = Catalog(str(warehouse))
    catalog.create_database(DB)
    pk = catalog.create_table(PK_TABLE, ORDERS, primary_keys=["dt", "id"], partition_keys=["dt"],
                              options={"bucket": "2"})
    pk.write(orders([1, 2, 3]))
    pk.write(orders([3, 4], dt="2026-11-22", amount=2.0))
    append = catalog.create_table(APPEND_TABLE, EVENTS)
    append.write(events([1, 2]))
    return catalog


# ---------------------------------------------------------------------------------------------
# writes: wrong column types or names, null keys, bad row kinds, bad overwrite specs


@dataclass(frozen=True, slots=True)
class BadWrite:
    name: str
    identifier: str
    data: Callable[[], object]
    error: type[PaimonflowError]
    names: tuple[str, ...]
    row_kinds: object = None
    overwrite: object = False
    files_written_first: bool = False  # the error is only known after data files exist


def _replace(table: pa.Table, name: str, array: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, array)


BAD_WRITES = [
    BadWrite("string into BIGINT", PK_TABLE,
             lambda: _replace(orders([7, 8]), "id", pa.array(["7", "abc"])), SchemaError, ("'id'",)),
    BadWrite("fraction into BIGINT", PK_TABLE,
             lambda: _replace(orders([7, 8]), "id", pa.array([7.0, 8.5])), SchemaError, ("'id'",)),
    BadWrite("overflow into INT", PK_TABLE,
             lambda: _replace(orders([7, 8]), "qty", pa.array([1, 2**40])), SchemaError, ("'qty'",)),
    BadWrite("text into DOUBLE", PK_TABLE,
             lambda: _replace(orders([7, 8]), "amount", pa.array(["1.5", "lots"])), SchemaError, ("'amount'",)),
    BadWrite("list into STRING", PK_TABLE,
             lambda: _replace(orders([7, 8]), "note", pa.array([["a"], ["b"]])), SchemaError, ("'note'",)),
    BadWrite("string into ARRAY<STRING>", APPEND_TABLE,
             lambda: _replace(events([7]), "tags", pa.array(["x"])), SchemaError, ("'tags'",)),
    BadWrite("missing column", PK_TABLE, lambda: orders([7]).drop_columns(["note"]), SchemaError, ("note",)),
    BadWrite("unknown column", PK_TABLE,
             lambda: orders([7]).append_column("bogus", pa.array([1])), SchemaError, ("bogus",)),
    BadWrite("misspelt column", PK_TABLE,
             lambda: orders([7]).rename_columns(["dt", "ID", "qty", "amount", "note"]), SchemaError, ("ID", "id")),
    BadWrite("duplicate column", PK_TABLE,
             lambda: orders([7]).append_column("id", pa.array([7])), SchemaError, ("id",)),
    BadWrite("null primary key", PK_TABLE,
             lambda: _replace(orders([7, 8]), "id", pa.array([7, None], pa.int64())), DataError, ("'id'",)),
    BadWrite("null partition key", PK_TABLE,
             lambda: _replace(orders([7, 8]), "dt", pa.array(["2026-11-21", None])), DataError, ("'dt'",)),
    BadWrite("null in NOT NULL column", APPEND_TABLE,
             lambda: _replace(events([7, 8]), "kind", pa.array([None, "x"], pa.string())), DataError, ("'kind'",)),
    BadWrite("one bad row among many", PK_TABLE,
             lambda: _replace(orders(list(range(100, 1100))), "id",
                              pa.array([*range(100, 1099), None], pa.int64())), DataError, ("'id'",)),
    BadWrite("unknown row kind", PK_TABLE, lambda: orders([7]), DataError, ("+X",), row_kinds="+X"),
    BadWrite("row kinds of the wrong length", PK_TABLE, lambda: orders([7, 8]), DataError, ("row_kinds",),
             row_kinds=["+I"]),
    BadWrite("retraction into an append table", APPEND_TABLE, lambda: events([1]), DataError, ("append",),
             row_kinds="-D"),
    BadWrite("batches of different schemas", APPEND_TABLE,
             lambda: [events([7]).to_batches()[0], _replace(events([8]), "id", pa.array(["8"])).to_batches()[0]],
             SchemaError, ("id",)),
    BadWrite("not a table: None", APPEND_TABLE, lambda: None, SchemaError, ("pyarrow",)),
    BadWrite("not a table: dicts", APPEND_TABLE, lambda: [{"id": 1, "kind": "a", "tags": []}], SchemaError,
             ("pyarrow",)),
    BadWrite("overwrite names a non-partition column", PK_TABLE, lambda: orders([7]), SchemaError, ("note",),
             overwrite={"note": "x"}, files_written_first=True),
    BadWrite("overwrite of one partition with rows of another", PK_TABLE,
             lambda: orders([7], dt="2026-11-23"), SchemaError, ("2026-11-22", "2026-11-23"),
             overwrite={"dt": "2026-11-22"}, files_written_first=True),
]


@pytest.mark.parametrize("case", BAD_WRITES, ids=[c.name for c in BAD_WRITES])
def test_bad_write_is_refused_and_leaves_the_table_unchanged(catalog: Catalog, warehouse: Path,
                                                             case: BadWrite) -> None:
    before_state = {i: state_of(catalog, i) for i in (PK_TABLE, APPEND_TABLE)}
    before_files = tree(warehouse)
    table = catalog.get_table(case.identifier)
    with pytest.raises(PaimonflowError) as info:
        table.write(case.data(), row_kinds=case.row_kinds, overwrite=case.overwrite)
    assert isinstance(info.value, case.error), f"{type(info.value).__name__}: {info.value}"
    assert_names(info.value, *case.names)
    assert {i: state_of(catalog, i) for i in (PK_TABLE, APPEND_TABLE)} == before_state
    # Known before any file is written: nothing appears, not even a directory. Known later: the
    # data files written first are removed (nothing references them); empty directories may stay.
    after_files = tree(warehouse)
    if case.files_written_first:
        after_files = {p: h for p, h in after_files.items() if not p.endswith("/")}
        before_files = {p: h for p, h in before_files.items() if not p.endswith("/")}
    assert after_files == before_files
    # The table still takes good writes afterwards.
    good = orders([9]) if case.identifier == PK_TABLE else events([9])
    assert table.write(good).snapshot_id == before_state[case.identifier].snapshot_ids[-1] + 1


def test_bad_commit_user_is_refused_before_anything_is_written(catalog: Catalog, warehouse: Path) -> None:
    before = tree(warehouse)
    for user in ["../x", "a/b", ".hidden", "x\x00", ""]:
        with pytest.raises(InvalidNameError) as info:
            catalog.get_table(PK_TABLE).write(orders([9]), commit_user=user, commit_identifier=1)
        assert info.value.kind == "commit user"
    assert tree(warehouse) == before


# ---------------------------------------------------------------------------------------------
# reads: unknown columns, snapshots, tags


@pytest.mark.parametrize("identifier", [PK_TABLE, APPEND_TABLE])
def test_unknown_read_column_is_named(catalog: Catalog, identifier: str) -> None:
    table = catalog.get_table(identifier)
    with pytest.raises(SchemaError) as info:
        table.read(columns=["id", "nope"])
    assert_names(info.value, "nope")
    with pytest.raises(SchemaError) as info:
        table.read(filter=col("nope") == 1)
    assert_names(info.value, "nope")


def test_unknown_read_column_is_named_on_an_empty_table(catalog: Catalog) -> None:
    table = catalog.create_table(f"{DB}.empty", EVENTS)
    with pytest.raises(SchemaError) as info:
        table.read(columns=["nope"])
    assert_names(info.value, "nope")
    with pytest.raises(SchemaError) as info:
        table.read(filter=col("nope") == 1)
    assert_names(info.value, "nope")


@pytest.mark.parametrize("snapshot_id", [0, -1, 3, 99])
def test_unknown_snapshot_is_a_typed_error(catalog: Catalog, snapshot_id: int) -> None:
    with pytest.raises(SnapshotNotFoundError) as info:
        catalog.get_table(PK_TABLE).read(snapshot_id=snapshot_id)
    assert_names(info.value, str(snapshot_id))


def test_unknown_tag_and_time_are_typed_errors(catalog: Catalog) -> None:
    table = catalog.get_table(PK_TABLE)
    with pytest.raises(TagNotFoundError) as info:
        table.read(tag="nope")
    assert_names(info.value, "nope")
    with pytest.raises(SnapshotNotFoundError):
        table.read(timestamp=0)


def test_conflicting_time_travel_arguments_are_a_paimonflow_error(catalog: Catalog) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        catalog.get_table(PK_TABLE).read(snapshot_id=1, tag="t")
    assert_names(info.value, "snapshot_id", "tag")


# ---------------------------------------------------------------------------------------------
# create table: unknown or invalid options, unknown key columns


@dataclass(frozen=True, slots=True)
class BadCreate:
    name: str
    error: type[PaimonflowError]
    names: tuple[str, ...]
    schema: pa.Schema = ORDERS
    primary_keys: tuple[str, ...] = ("dt", "id")
    partition_keys: tuple[str, ...] = ("dt",)
    options: tuple[tuple[str, object], ...] = (("bucket", "2"),)


BAD_CREATES = [
    BadCreate("misspelt option", InvalidOptionError, ("bukcet", "bucket"), options=(("bukcet", "2"),)),
    BadCreate("unknown option", InvalidOptionError, ("no.such.option",), options=(("no.such.option", "1"),)),
    BadCreate("bucket not a number", InvalidOptionError, ("bucket", "two"), options=(("bucket", "two"),)),
    BadCreate("bucket zero", InvalidOptionError, ("bucket",), options=(("bucket", "0"),)),
    BadCreate("file format", InvalidOptionError, ("file.format", "csv"),
              options=(("bucket", "2"), ("file.format", "csv"))),
    BadCreate("negative retries", InvalidOptionError, ("commit.max-retries",),
              options=(("bucket", "2"), ("commit.max-retries", "-1"))),
    BadCreate("retain no snapshot", InvalidOptionError, ("snapshot.num-retained.min",),
              options=(("bucket", "2"), ("snapshot.num-retained.min", "0"))),
    BadCreate("duration", InvalidOptionError, ("snapshot.time-retained", "forever"),
              options=(("bucket", "2"), ("snapshot.time-retained", "forever"))),
    BadCreate("merge engine", InvalidOptionError, ("merge-engine", "newest"),
              options=(("bucket", "2"), ("merge-engine", "newest"))),
    BadCreate("size", InvalidOptionError, ("target-file-size",),
              options=(("bucket", "2"), ("target-file-size", "-5 mb"))),
    BadCreate("option value not text", InvalidOptionError, ("bucket",), options=(("bucket", ["2"]),)),
    BadCreate("unknown primary key", SchemaError, ("nope",), primary_keys=("dt", "nope")),
    BadCreate("unknown partition key", SchemaError, ("nope",), partition_keys=("nope",), primary_keys=()),
    BadCreate("primary key without the partition key", SchemaError, ("dt",), primary_keys=("id",)),
    BadCreate("duplicate column", SchemaError, ("id",),
              schema=pa.schema([("dt", pa.string()), ("id", pa.int64()), ("id", pa.int32())])),
    BadCreate("unsupported column type", SchemaError, ("span",), primary_keys=(), partition_keys=(),
              options=(), schema=pa.schema([("id", pa.int64()), ("span", pa.duration("s"))])),
]


@pytest.mark.parametrize("case", BAD_CREATES, ids=[c.name for c in BAD_CREATES])
def test_bad_create_table_is_refused_and_creates_nothing(catalog: Catalog, warehouse: Path,
                                                         case: BadCreate) -> None:
    before = tree(warehouse)
    with pytest.raises(PaimonflowError) as info:
        catalog.create_table(f"{DB}.new", case.schema, primary_keys=list(case.primary_keys),
                             partition_keys=list(case.partition_keys), options=dict(case.options))
    # A type the format cannot hold may be reported as unsupported rather than as a schema error.
    assert isinstance(info.value, case.error) or (
        case.name == "unsupported column type" and isinstance(info.value, PaimonflowError)
    ), f"{type(info.value).__name__}: {info.value}"
    assert_names(info.value, *case.names)
    assert tree(warehouse) == before
    assert not catalog.table_exists(f"{DB}.new")


@pytest.mark.parametrize("bad_column", ["", " id", "a\x00b", "a\nb"])
def test_bad_column_names_are_refused(catalog: Catalog, warehouse: Path, bad_column: str) -> None:
    before = tree(warehouse)
    schema = pa.schema([("id", pa.int64()), (bad_column, pa.string())])
    with pytest.raises((InvalidNameError, SchemaError)):
        catalog.create_table(f"{DB}.new", schema)
    assert tree(warehouse) == before


@pytest.mark.parametrize("key", ["s3.access-key", "s3.secret-key", "s3.endpoint", "fs.s3a.secret.key"])
def test_storage_settings_are_refused_as_table_options(catalog: Catalog, warehouse: Path, key: str) -> None:
    """DESIGN §1.8 / reliability S6: endpoints and credentials never come from (or go into) table options."""
    before = tree(warehouse)
    with pytest.raises(InvalidOptionError) as info:
        catalog.create_table(f"{DB}.new", EVENTS, options={key: "canary-secret"})
    assert_names(info.value, key)
    assert "canary-secret" not in str(info.value) and "canary-secret" not in repr(info.value.args)
    assert tree(warehouse) == before


def test_existing_table_and_missing_database_are_typed(catalog: Catalog, warehouse: Path) -> None:
    before, state = tree(warehouse), state_of(catalog, PK_TABLE)
    with pytest.raises(TableAlreadyExistsError) as info:
        catalog.create_table(PK_TABLE, EVENTS)
    assert_names(info.value, PK_TABLE)
    with pytest.raises(DatabaseNotFoundError) as info2:
        catalog.create_table("nodb.t", EVENTS)
    assert_names(info2.value, "nodb")
    assert tree(warehouse) == before
    assert state_of(catalog, PK_TABLE) == state


# ---------------------------------------------------------------------------------------------
# names: ../x, a/b, .hidden, x\0 as database, table, tag, commit user


BAD_NAMES = ["../x", "..", ".", "a/b", ".hidden", "x\x00", "", "a\\b", "/abs", "x/../../y"]


def _name_operations(catalog: Catalog, name: str) -> list[tuple[str, Callable[[], object]]]:
    table = catalog.get_table(PK_TABLE)
    return [
        ("create_database", lambda: catalog.create_database(name)),
        ("drop_database", lambda: catalog.drop_database(name, cascade=True)),
        ("create_table db", lambda: catalog.create_table(f"{name}.t", EVENTS)),
        ("create_table table", lambda: catalog.create_table(f"{DB}.{name}", EVENTS)),
        ("get_table db", lambda: catalog.get_table(f"{name}.orders")),
        ("get_table table", lambda: catalog.get_table(f"{DB}.{name}")),
        ("drop_table", lambda: catalog.drop_table(f"{DB}.{name}")),
        ("list_tables", lambda: catalog.list_tables(name)),
        ("read tag", lambda: table.read(tag=name)),
        ("commit user", lambda: table.write(orders([50]), commit_user=name, commit_identifier=1)),
    ]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_bad_names_are_refused_and_touch_nothing(tmp_path: Path, catalog: Catalog, name: str) -> None:
    # The whole sandbox (warehouse and its parent) must stay byte for byte the same.
    before, state = tree(tmp_path), state_of(catalog, PK_TABLE)
    for operation, call in _name_operations(catalog, name):
        with pytest.raises(InvalidNameError) as info:
            call()
        assert info.value.name in (name, f"{name}.t", f"{name}.orders", f"{DB}.{name}"), (operation, info.value)
    assert tree(tmp_path) == before
    assert state_of(catalog, PK_TABLE) == state


_PATHY = st.sampled_from(["..", ".", "/", "\\", "\x00", "x", "db", ".db", "snapshot", "tag-", "~", "%2e", "\u2215",
                          "\uff0e", "\n", " ", ":", "*"])
FUZZ_NAMES = st.one_of(
    st.text(max_size=24),
    st.lists(_PATHY, min_size=1, max_size=8).map("".join),
    st.lists(st.sampled_from(["..", ".", "x", "", "snapshot"]), min_size=1, max_size=5).map("/".join),
    st.integers(min_value=240, max_value=270).map(lambda n: "d" * n),
    st.integers(min_value=60, max_value=140).map(lambda n: "\u00e9" * n),
)


@settings(max_examples=300, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=FUZZ_NAMES)
def test_fuzzed_names_never_create_anything_outside_the_warehouse(tmp_path: Path, name: str) -> None:
    sandbox = tmp_path / "sandbox"
    warehouse = sandbox / "warehouse"
    if not warehouse.exists():
        fresh = Catalog(str(warehouse))
        fresh.create_database(DB)
        fresh.create_table(PK_TABLE, ORDERS, primary_keys=["dt", "id"], partition_keys=["dt"],
                           options={"bucket": "2"}).write(orders([1]))
    catalog = Catalog(str(warehouse))
    outside_before = {p: h for p, h in tree(sandbox).items() if not p.startswith("warehouse")}
    try:
        valid = validate_name("database", name) == name
    except InvalidNameError:
        valid = False
    table = catalog.get_table(PK_TABLE)
    calls: list[Callable[[], object]] = [
        lambda: catalog.create_database(name, ignore_if_exists=True),
        lambda: catalog.create_table(f"{name}.t", EVENTS, ignore_if_exists=True),
        lambda: catalog.create_table(f"{DB}.{name}", EVENTS, ignore_if_exists=True),
        lambda: catalog.get_table(f"{DB}.{name}"),
        lambda: catalog.get_table(f"{name}.t"),
        lambda: table.read(tag=name),
    ]
    # Where the name would land if it were joined unchecked, outside the warehouse.
    root = os.path.realpath(warehouse)
    escapes = [] if "\x00" in name else [  # a NUL can never reach the file system
        p for p in (os.path.join(str(warehouse), name + ".db"), os.path.join(str(warehouse), DB + ".db", name))
        if not os.path.realpath(p).startswith(root + os.sep)]
    existed = {p: os.path.lexists(p) for p in escapes}
    warehouse_before = tree(warehouse)
    for call in calls:
        with contextlib.suppress(PaimonflowError):  # a typed refusal is fine; anything else fails
            call()
    after = tree(sandbox)
    assert {p: h for p, h in after.items() if not p.startswith("warehouse")} == outside_before
    for path, was_there in existed.items():
        assert os.path.lexists(path) == was_there, f"{name!r} touched {path}"
    created = sorted(set(tree(warehouse)) - set(warehouse_before))
    if not valid:
        assert not created, f"invalid name {name!r} created {created}"
    for path in created:
        top = path.split(os.sep, 1)[0].rstrip("/")
        assert top in (f"{name}.db", f"{DB}.db"), f"{name!r} created {path}"
        assert os.path.realpath(warehouse / path).startswith(root + os.sep)


# ---------------------------------------------------------------------------------------------
# corrupt metadata


def snapshot_json(table_dir: Path, snapshot_id: int) -> dict[str, object]:
    return json.loads((table_dir / "snapshot" / f"snapshot-{snapshot_id}").read_text(encoding="utf-8"))


def manifest_files_of_list(manifest_dir: Path, list_name: str) -> list[str]:
    with open(manifest_dir / list_name, "rb") as fh:
        return [r["_FILE_NAME"] for r in fastavro.reader(fh)]


@dataclass(frozen=True, slots=True)
class CorruptTable:
    warehouse: Path
    table_dir: Path
    expected: dict[int, list[tuple[object, ...]]]  # snapshot id -> rows
    tag: str
    tag_snapshot: int


def create_tag(table: Table, name: str, snapshot_id: int) -> None:
    if hasattr(table, "create_tag"):
        table.create_tag(name, snapshot_id=snapshot_id)
    else:  # the tag file is the snapshot's JSON (Paimon's format)
        source = Path(table.path) / "snapshot" / f"snapshot-{snapshot_id}"
        (Path(table.path) / "tag").mkdir(exist_ok=True)
        (Path(table.path) / "tag" / f"tag-{name}").write_bytes(source.read_bytes())


@pytest.fixture(scope="module")
def corrupt_table(tmp_path_factory: pytest.TempPathFactory) -> CorruptTable:
    warehouse = tmp_path_factory.mktemp("corrupt") / "warehouse"
    catalog = Catalog(str(warehouse))
    catalog.create_database(DB)
    table = catalog.create_table(PK_TABLE, ORDERS, primary_keys=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    table.write(orders([1, 2, 3]))
    table.write(orders([4, 5], dt="2026-11-22"))
    create_tag(table, "t2", 2)
    table.write(orders([1, 6], amount=9.0), row_kinds="+U")
    expected = {s: rows_of(table.read(snapshot_id=s)) for s in (1, 2, 3)}
    assert len(expected[1]) == 3 and len(expected[2]) == 5 and len(expected[3]) == 6
    table_dir = Path(table.path)
    if not (table_dir / "snapshot" / "EARLIEST").exists():
        (table_dir / "snapshot" / "EARLIEST").write_text("1", encoding="utf-8")
    return CorruptTable(warehouse, table_dir, expected, "t2", 2)


def _flip(data: bytes, seed: int) -> bytes:
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(8):
        i = rng.randrange(len(out))
        out[i] ^= rng.randrange(1, 256)
    return bytes(out)


def _json_mutation(key: str, value: object) -> Callable[[bytes], bytes]:
    def mutate(data: bytes) -> bytes:
        doc = json.loads(data)
        if value is _DROP:
            doc.pop(key, None)
        else:
            doc[key] = value
        return json.dumps(doc).encode()

    return mutate


_DROP = object()

GENERIC_MODES: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda d: b"",
    "first byte": lambda d: d[:1],
    "half": lambda d: d[: len(d) // 2],
    "all but the last byte": lambda d: d.rstrip()[:-1],
    "json {}": lambda d: b"{}",
    "json null": lambda d: b"null",
    "json []": lambda d: b"[]",
    "json string": lambda d: b'"snapshot"',
    "huge number": lambda d: b"1" + b"0" * 400,
    "NaN": lambda d: b"NaN",
    "binary garbage": lambda d: bytes(range(256)),
}
FLIP_SEEDS = [1, 2, 3, 4, 5]
SNAPSHOT_MUTATIONS: dict[str, Callable[[bytes], bytes]] = {
    "id missing": _json_mutation("id", _DROP),
    "id as text": _json_mutation("id", "three"),
    "schemaId missing": _json_mutation("schemaId", _DROP),
    "commitKind unknown": _json_mutation("commitKind", "EXPLODE"),
    "baseManifestList missing": _json_mutation("baseManifestList", _DROP),
    "baseManifestList a number": _json_mutation("baseManifestList", 7),
    "deltaManifestList escapes": _json_mutation("deltaManifestList", "../schema/schema-0"),
    "deltaManifestList absolute": _json_mutation("deltaManifestList", "/etc/hostname"),
}
SCHEMA_MUTATIONS: dict[str, Callable[[bytes], bytes]] = {
    "fields missing": _json_mutation("fields", _DROP),
    "fields not a list": _json_mutation("fields", "id BIGINT"),
    "field of unknown type": lambda d: json.dumps({**json.loads(d), "fields": [
        {**f, "type": "QUANTUM"} if f["name"] == "qty" else f for f in json.loads(d)["fields"]]}).encode(),
    "primaryKeys not a list": _json_mutation("primaryKeys", 5),
    "options not a map": _json_mutation("options", ["bucket", "2"]),
}


def _avro_mutation(change: Callable[[dict[str, object]], None]) -> Callable[[bytes], bytes]:
    """Decode an Avro file, change its first record, encode it again with the same schema and codec."""
    def mutate(data: bytes) -> bytes:
        reader = fastavro.reader(io.BytesIO(data))
        records = list(reader)
        change(records[0])
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(reader.writer_schema), records, codec=reader.codec)
        return out.getvalue()

    return mutate


def _set_nested(keys: tuple[str, ...], value: object) -> Callable[[dict[str, object]], None]:
    def change(record: dict[str, object]) -> None:
        for key in keys[:-1]:
            record = record[key]  # type: ignore[assignment]
        record[keys[-1]] = value

    return change


MANIFEST_LIST_MUTATIONS: dict[str, Callable[[bytes], bytes]] = {
    "manifest name escapes": _avro_mutation(_set_nested(("_FILE_NAME",), "../schema/schema-0")),
    "manifest name absolute": _avro_mutation(_set_nested(("_FILE_NAME",), "/etc/hostname")),
}
MANIFEST_MUTATIONS: dict[str, Callable[[bytes], bytes]] = {
    "data file name escapes": _avro_mutation(_set_nested(("_FILE", "_FILE_NAME"), "../../schema/schema-0")),
    "data file name absolute": _avro_mutation(_set_nested(("_FILE", "_FILE_NAME"), "/etc/hostname")),
    "unknown entry kind": _avro_mutation(_set_nested(("_KIND",), 7)),
}


def _modes(kind: str) -> list[tuple[str, Callable[[bytes], bytes], bool]]:
    """(mode, mutation, may_be_benign): a bit flip may hit bytes whose value does not matter."""
    modes = [(name, fn, False) for name, fn in GENERIC_MODES.items()]
    modes += [(f"flip {seed}", lambda d, s=seed: _flip(d, s), True) for seed in FLIP_SEEDS]
    if kind in ("snapshot latest", "snapshot first", "tag"):
        modes += [(name, fn, False) for name, fn in SNAPSHOT_MUTATIONS.items()]
    if kind == "schema":
        modes += [(name, fn, False) for name, fn in SCHEMA_MUTATIONS.items()]
    if kind in ("manifest list", "manifest"):
        modes = [m for m in modes if not m[0].startswith(("json", "huge", "NaN"))] + [
            ("json {}", GENERIC_MODES["json {}"], False)]
        mutations = MANIFEST_LIST_MUTATIONS if kind == "manifest list" else MANIFEST_MUTATIONS
        modes += [(name, fn, False) for name, fn in mutations.items()]
    return modes


def _target(ct: CorruptTable, kind: str) -> Path:
    snapshot_dir, manifest_dir = ct.table_dir / "snapshot", ct.table_dir / "manifest"
    latest = snapshot_json(ct.table_dir, 3)
    if kind == "snapshot latest":
        return snapshot_dir / "snapshot-3"
    if kind == "snapshot first":
        return snapshot_dir / "snapshot-1"
    if kind == "schema":
        return ct.table_dir / "schema" / "schema-0"
    if kind == "tag":
        return ct.table_dir / "tag" / f"tag-{ct.tag}"
    if kind == "manifest list":
        return manifest_dir / str(latest["deltaManifestList"])
    if kind == "manifest":
        return manifest_dir / manifest_files_of_list(manifest_dir, str(latest["deltaManifestList"]))[0]
    raise AssertionError(kind)


CORRUPT_KINDS = ["snapshot latest", "snapshot first", "schema", "tag", "manifest list", "manifest"]
CORRUPT_CASES = [(kind, mode, fn, benign) for kind in CORRUPT_KINDS for mode, fn, benign in _modes(kind)]


@pytest.fixture
def restore(corrupt_table: CorruptTable) -> Iterator[Callable[[Path], None]]:
    """Remember files before a test corrupts them; put them back afterwards and check nothing else moved."""
    before = tree(corrupt_table.warehouse)
    saved: dict[Path, bytes] = {}

    def remember(path: Path) -> None:
        saved.setdefault(path, path.read_bytes())

    yield remember
    for path, data in saved.items():
        path.write_bytes(data)
    after = tree(corrupt_table.warehouse)
    hints = {k for k in set(before) | set(after) if k.endswith(("LATEST", "EARLIEST"))}
    assert {k: v for k, v in after.items() if k not in hints} == {k: v for k, v in before.items() if k not in hints}


def _read_that_needs(ct: CorruptTable, kind: str) -> tuple[Callable[[], pa.Table], int]:
    """The read the corrupt file breaks, and the snapshot whose rows it would return."""
    def fresh() -> Table:
        return Catalog(str(ct.warehouse)).get_table(PK_TABLE)

    if kind == "snapshot first":
        return (lambda: fresh().read(snapshot_id=1)), 1
    if kind == "tag":
        return (lambda: fresh().read(tag=ct.tag)), ct.tag_snapshot
    return (lambda: fresh().read()), 3


def _reads_that_must_still_work(ct: CorruptTable, kind: str) -> list[tuple[Callable[[], pa.Table], int]]:
    def fresh() -> Table:
        return Catalog(str(ct.warehouse)).get_table(PK_TABLE)

    if kind == "snapshot latest":
        return [(lambda: fresh().read(snapshot_id=2), 2), (lambda: fresh().read(tag=ct.tag), 2)]
    if kind in ("snapshot first", "tag"):
        return [(lambda: fresh().read(), 3), (lambda: fresh().read(snapshot_id=2), 2)]
    if kind in ("manifest list", "manifest"):
        return [(lambda: fresh().read(snapshot_id=1), 1)]
    return []


@pytest.mark.parametrize(("kind", "mode", "mutate", "may_be_benign"), CORRUPT_CASES,
                         ids=[f"{k}-{m}" for k, m, _, _ in CORRUPT_CASES])
def test_corrupt_metadata_is_a_typed_error_never_wrong_rows(corrupt_table: CorruptTable,
                                                            restore: Callable[[Path], None], kind: str, mode: str,
                                                            mutate: Callable[[bytes], bytes],
                                                            may_be_benign: bool, reliability) -> None:
    reliability.record(corruptions=1)
    ct = corrupt_table
    target = _target(ct, kind)
    restore(target)
    original = target.read_bytes()
    corrupted = mutate(original)
    assert corrupted != original
    target.write_bytes(corrupted)

    read, snapshot_id = _read_that_needs(ct, kind)
    try:
        got = rows_of(read())
    except CorruptMetadataError as exc:
        assert_names(exc, target.name)
    else:
        assert may_be_benign, f"{kind} corrupted by {mode!r} was read without error"
        assert got == ct.expected[snapshot_id], f"{kind} corrupted by {mode!r} gave wrong rows"
    for other, other_id in _reads_that_must_still_work(ct, kind):
        assert rows_of(other()) == ct.expected[other_id]


HINT_VALUES = [b"", b"abc", b"-1", b"0", b"1", b"2", b"999", b"3\x00", b"1e3", b"\xff\xfe", b"9" * 40, b"{}"]


HINT_CASES = [(hint, value) for hint in ("LATEST", "EARLIEST") for value in HINT_VALUES
              # EARLIEST naming an existing later snapshot is a legal state (mid-expiry), not corruption.
              if not (hint == "EARLIEST" and value == b"2")]


@pytest.mark.parametrize(("hint", "value"), HINT_CASES, ids=[f"{h}-{v!r}" for h, v in HINT_CASES])
def test_corrupt_hints_are_recovered_from(corrupt_table: CorruptTable, restore: Callable[[Path], None],
                                          hint: str, value: bytes, reliability) -> None:
    reliability.record(corruptions=1)
    ct = corrupt_table
    path = ct.table_dir / "snapshot" / hint
    restore(path)
    path.write_bytes(value)
    table = Catalog(str(ct.warehouse)).get_table(PK_TABLE)
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == 3  # I5: never older, never a missing snapshot
    assert rows_of(table.read()) == ct.expected[3]
    for snapshot_id in (1, 2, 3):
        assert rows_of(table.read(snapshot_id=snapshot_id)) == ct.expected[snapshot_id]
    assert table.system_table("snapshots").column("snapshot_id").to_pylist() == [1, 2, 3]
    first = snapshot_json(ct.table_dir, 1)
    assert rows_of(table.read(timestamp=int(first["timeMillis"]))) == ct.expected[1]


@pytest.mark.parametrize("value", [b"", b"1", b"999", b"garbage"], ids=repr)
def test_next_commit_after_a_corrupt_latest_hint_takes_the_next_id(catalog: Catalog, warehouse: Path,
                                                                   value: bytes) -> None:
    table = catalog.get_table(PK_TABLE)
    snapshot_dir = Path(table.path) / "snapshot"
    kept = {p.name: p.read_bytes() for p in snapshot_dir.glob("snapshot-*")}
    (snapshot_dir / "LATEST").write_bytes(value)
    result = catalog.get_table(PK_TABLE).write(orders([77]))
    assert result.snapshot_id == 3
    assert {name: (snapshot_dir / name).read_bytes() for name in kept} == kept  # nothing overwritten
    assert (77,) in {(r[1],) for r in state_of(catalog, PK_TABLE).rows}


def test_commit_on_a_corrupt_latest_snapshot_fails_and_publishes_nothing(catalog: Catalog) -> None:
    table = catalog.get_table(PK_TABLE)
    snapshot_dir = Path(table.path) / "snapshot"
    (snapshot_dir / "snapshot-2").write_bytes(b'{"version": 3, "id": 2')
    with pytest.raises(CorruptMetadataError) as info:
        catalog.get_table(PK_TABLE).write(orders([77]))
    assert_names(info.value, "snapshot-2")
    assert sorted(p.name for p in snapshot_dir.glob("snapshot-*")) == ["snapshot-1", "snapshot-2"]
