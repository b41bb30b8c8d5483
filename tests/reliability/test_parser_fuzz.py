"""Parser fuzz (reference/reliability.md §5.3 A8, §6 R6): every metadata parser, fed arbitrary bytes
and mutations of a valid file written by a real table, through the real reader path.

Each example writes the fuzzed bytes into the real file of a real table (a per-test copy of a
warehouse built once per module), then reads it back as a fresh reader would: a new ``Catalog``,
the table's own managers (``snapshot_manager``, ``tags``, ``consumer_manager``, ``manifest_io``,
``index_entries``, ``deletion_vectors``...), and for the files a table read depends on, a whole
``table.read()``. The original bytes are put back after every example.

Oracle, per parser:
* the value equals what the valid file parses to, or
* a ``PaimonflowError`` subclass whose message names the file (``CorruptMetadataError`` mostly), or
* only where the mutated bytes are themselves a well-formed file (valid JSON object / decodable
  Avro) holding different values: a value that is self-consistent (it round-trips through the
  product's own writer) -- a parser cannot tell a changed commit user from a real one;
* hints (``LATEST``/``EARLIEST`` of snapshots and changelogs) never fail: the reader recovers to
  the true latest (and an earliest that exists);
* never another exception type (no bare KeyError/TypeError/ValueError/AvroError leaking), never a
  hang (a 20-second alarm around each read);
* the whole ``table.read()`` over a mutated snapshot, schema, manifest list, manifest, index
  manifest or deletion-vector file returns the valid rows or raises a ``PaimonflowError``.

Options parsing (``CoreOptions.from_map``, and options inside a real schema file) and the name
validator (``validate_name``) are fuzzed directly: a typed error naming the key/name, or a value
(for names: the name itself, a single safe path segment).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidNameError, InvalidOptionError, PaimonflowError
from paimonflow.core.meta.changelogs import ChangelogManager
from paimonflow.core.meta.consumers import Consumer
from paimonflow.core.meta.schema import TableSchema
from paimonflow.core.meta.snapshots import Snapshot
from paimonflow.core.names import NAME_KINDS, validate_name
from paimonflow.core.options.core import CoreOptions
from paimonflow.core.options.validate import KNOWN_KEYS

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])
DV, CL = "db.dv", "db.cl"


# ---------------------------------------------------------------------------------------------
# the golden warehouse: a deletion-vector table (tag, consumer) and a table with long-lived changelogs


def build_golden(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    t = catalog.create_table(DV, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"dt": ["a"] * 40 + ["b"] * 10, "id": list(range(50)), "v": ["a"] * 50}, schema=SCHEMA))
    t.compact(full=True)
    for i in range(3):
        t.write(pa.table({"dt": ["a", "b"], "id": [i, 40 + i], "v": [f"c{i}"] * 2}, schema=SCHEMA))
    t.compact(full=False)
    t.tags.create("t1", snapshot_id=2)
    t.consumer_manager.record("reader", 3)
    assert t.index_entries(t.latest_snapshot()), "the golden table must hold deletion vectors"
    earliest = Path(t.snapshot_manager.directory) / "EARLIEST"
    if not earliest.exists():  # nothing expired yet: give the hint a file to fuzz
        earliest.write_text("1", encoding="utf-8")
    c = catalog.create_table(CL, SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1", "changelog-producer": "input", "write-only": "true",
                                      "snapshot.num-retained.min": "2", "changelog.num-retained.min": "20"})
    for i in range(5):
        c.write(pa.table({"dt": ["a", "a"], "id": [i, 9], "v": [f"c{i}"] * 2}, schema=SCHEMA))
    c.expire_snapshots(older_than_millis=0)
    assert ChangelogManager(c.file_io, c.path).list_ids(), "the golden table must hold long-lived changelogs"


@pytest.fixture(scope="module")
def golden_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    warehouse = tmp_path_factory.mktemp("golden") / "warehouse"
    build_golden(warehouse)
    return warehouse


@pytest.fixture
def warehouse(golden_template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "warehouse"
    shutil.copytree(golden_template, copy)
    return copy


def table(warehouse: Path, identifier: str = DV):
    return Catalog(str(warehouse)).get_table(identifier)


def rows(t) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.read().to_pylist())


# ---------------------------------------------------------------------------------------------
# the parsers: where the file is, how a fresh reader reads it, and how to check a parsed value


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # "json", "hint", "avro", "binary"
    locate: Callable[[Path], Path]
    read: Callable[[Path], Any]
    full_read: bool = False  # a whole table.read() depends on the file
    round_trip: Callable[[Any], bool] | None = None  # self-consistency of a value parsed from a well-formed file
    identifier: str = DV


def _latest(warehouse: Path, identifier: str = DV):
    t = table(warehouse, identifier)
    return t, t.snapshot_manager.latest()


def _locate_snapshot(w: Path) -> Path:
    t = table(w)
    return Path(t.snapshot_manager.path(t.snapshot_manager.latest_id()))


def _read_snapshot(w: Path) -> Snapshot:
    t = table(w)
    return t.snapshot_manager.snapshot(max(t.snapshot_manager.list_ids()))


def _locate_manifest_list(w: Path) -> Path:
    t, s = _latest(w)
    return Path(t.manifest_io.manifest_dir) / s.base_manifest_list


def _locate_manifest(w: Path) -> Path:
    t, s = _latest(w)
    return Path(t.manifest_io.manifest_dir) / t.manifest_io.data_manifests(s)[0].file_name


def _locate_index_manifest(w: Path) -> Path:
    t, s = _latest(w)
    return Path(t.manifest_io.manifest_dir) / s.index_manifest


def _locate_dv_file(w: Path) -> Path:
    t, s = _latest(w)
    return Path(t.index_dir) / t.index_entries(s)[0].file.file_name


def _read_changelog(w: Path) -> Snapshot | None:
    t = table(w, CL)
    return ChangelogManager(t.file_io, t.path).try_changelog(2)


def _changelog_hints(w: Path) -> tuple[int | None, int | None]:
    t = table(w, CL)
    m = ChangelogManager(t.file_io, t.path)
    earliest, latest = m.earliest_id(), m.latest_id()
    ids = m.list_ids()
    assert latest == ids[-1], f"changelog LATEST recovered to {latest}, files {ids}"
    assert earliest in ids, f"changelog EARLIEST recovered to {earliest}, files {ids}"  # later: legal mid-expiry
    return ids[0], latest


def _snapshot_hints(w: Path) -> tuple[int | None, int | None]:
    t = table(w)
    sm = t.snapshot_manager
    ids = sm.list_ids()
    earliest, latest = sm.earliest_id(), sm.latest_id()
    assert latest == ids[-1] and t.latest_snapshot().id == ids[-1], f"LATEST recovered to {latest}, files {ids}"
    assert earliest in ids, f"EARLIEST recovered to {earliest}, files {ids}"  # a later one is a legal mid-expiry state
    return ids[0], latest


def _with_latest(read: Callable[[Any, Snapshot], Any]) -> Callable[[Path], Any]:
    def run(w: Path) -> Any:
        return read(*_latest(w))

    return run


def _snapshot_round_trip(value: Snapshot) -> bool:
    return Snapshot.from_json(value.to_json(), "<round trip>") == value


def _schema_round_trip(value: TableSchema) -> bool:
    return TableSchema.from_json(value.to_json(), "<round trip>") == value


TARGETS = {target.name: target for target in [
    Target("snapshot", "json", _locate_snapshot, _read_snapshot, full_read=True, round_trip=_snapshot_round_trip),
    Target("LATEST", "hint", lambda w: Path(table(w).snapshot_manager.directory) / "LATEST", _snapshot_hints),
    Target("EARLIEST", "hint", lambda w: Path(table(w).snapshot_manager.directory) / "EARLIEST", _snapshot_hints),
    Target("schema", "json", lambda w: Path(table(w).schema_manager.path(0)), lambda w: table(w).schema,
           full_read=True, round_trip=_schema_round_trip),
    Target("tag", "json", lambda w: Path(table(w).tag_manager.tag_path("t1")), lambda w: table(w).tags.get("t1"),
           round_trip=_snapshot_round_trip),
    Target("consumer", "json", lambda w: Path(table(w).consumer_manager.path("reader")),
           lambda w: table(w).consumer_manager.get("reader"),
           round_trip=lambda v: Consumer.from_json(v.to_json()) == v),
    Target("changelog", "json", lambda w: Path(ChangelogManager(table(w, CL).file_io, table(w, CL).path).path(2)),
           _read_changelog, round_trip=_snapshot_round_trip, identifier=CL),
    Target("changelog LATEST", "hint",
           lambda w: Path(ChangelogManager(table(w, CL).file_io, table(w, CL).path).directory) / "LATEST",
           _changelog_hints, identifier=CL),
    Target("changelog EARLIEST", "hint",
           lambda w: Path(ChangelogManager(table(w, CL).file_io, table(w, CL).path).directory) / "EARLIEST",
           _changelog_hints, identifier=CL),
    Target("manifest list", "avro", _locate_manifest_list,
           _with_latest(lambda t, s: t.manifest_io.data_manifests(s)), full_read=True),
    Target("manifest", "avro", _locate_manifest,
           _with_latest(lambda t, s: t.manifest_io.live_entries(s)), full_read=True),
    Target("index manifest", "avro", _locate_index_manifest,
           _with_latest(lambda t, s: t.index_entries(s)), full_read=True),
    Target("deletion vectors", "binary", _locate_dv_file,
           _with_latest(lambda t, s: t.deletion_vectors(s)), full_read=True),
]}


# ---------------------------------------------------------------------------------------------
# mutations


ODD_JSON = st.recursive(
    st.sampled_from([None, {}, [], True, False, 0, -1, 2**63, 2**64, -(2**63) - 1, 10**30, 1.5, "", "x", "../x",
                     "/etc/hostname", "snapshot-999", "\x00", "NaN"])
    | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
WHOLE_DOCS = st.sampled_from([b"", b"{}", b"null", b"[]", b'"snapshot"', b"1" + b"0" * 400, b"9" * 5000, b"NaN",
                              b"-Infinity", b"[" * 5000, b'{"a":' * 3000, b"\xef\xbb\xbf{}", bytes(range(256))])


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple, value: Any, drop: bool) -> Any:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def mutations(draw: st.DrawFn, original: bytes, kind: str) -> bytes:
    """Truncation at a random point, random byte flips, or (JSON) a value replaced by odd JSON /
    dropped / an unknown key added, or (Avro) records re-encoded under a schema with a field's type
    changed or the field dropped."""
    modes = ["truncate", "flip"]
    if kind in ("json", "hint"):
        modes += ["whole"]
    if kind == "json":
        modes += ["value", "value", "drop", "extra"]
    if kind == "avro":
        modes += ["avro type", "avro type", "avro drop"]
    mode = draw(st.sampled_from(modes))
    if mode == "truncate":
        return original[: draw(st.integers(0, max(0, len(original) - 1)))]
    if mode == "flip":
        out = bytearray(original)
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= draw(st.integers(1, 255))
        return bytes(out)
    if mode == "whole":
        return draw(WHOLE_DOCS)
    if kind == "json":
        doc = json.loads(original)
        paths = _paths(doc)
        if mode == "extra":
            doc[draw(st.text(min_size=1, max_size=8))] = draw(ODD_JSON)
        else:
            path = draw(st.sampled_from(paths))
            _replace(doc, path, draw(ODD_JSON), drop=mode == "drop")
        return json.dumps(doc).encode()
    return _avro_mutation(draw, original, drop=mode == "avro drop")


_AVRO_ODD = [("string", "../x"), ("string", ""), ("long", 2**63 - 1), ("long", -1), ("null", None),
             ("boolean", True), ({"type": "array", "items": "int"}, [1, 2]), ("bytes", b"\x00\xff"),
             ("double", 1e308), ({"type": "map", "values": "string"}, {"a": "b"})]


def _avro_fields(schema: Any, prefix: tuple = ()) -> list[tuple]:
    """Paths to every record field of an Avro schema (through unions and nested records)."""
    out = []
    if isinstance(schema, list):
        for branch in schema:
            out += _avro_fields(branch, prefix)
    elif isinstance(schema, dict) and schema.get("type") == "record":
        for f in schema["fields"]:
            out.append((*prefix, f["name"]))
            out += _avro_fields(f["type"], (*prefix, f["name"]))
    return out


def _schema_field(schema: Any, name: str) -> dict:
    if isinstance(schema, list):
        return next(_schema_field(b, name) for b in schema if isinstance(b, dict) and b.get("type") == "record")
    return next(f for f in schema["fields"] if f["name"] == name)


def _avro_mutation(draw: st.DrawFn, original: bytes, *, drop: bool) -> bytes:
    reader = fastavro.reader(io.BytesIO(original))
    schema = json.loads(json.dumps(reader.writer_schema))
    records = list(reader)
    path = draw(st.sampled_from(_avro_fields(schema)))
    new_type, value = draw(st.sampled_from(_AVRO_ODD))
    # change the field in the schema
    parent_schema: Any = schema
    for name in path[:-1]:
        parent_schema = _schema_field(parent_schema, name)["type"]
    if isinstance(parent_schema, list):
        parent_schema = next(b for b in parent_schema if isinstance(b, dict) and b.get("type") == "record")
    if drop:
        parent_schema["fields"] = [f for f in parent_schema["fields"] if f["name"] != path[-1]]
    else:
        field = next(f for f in parent_schema["fields"] if f["name"] == path[-1])
        field["type"] = new_type
        field.pop("default", None)
    # and in every record that has it
    for record in records:
        parent = record
        for name in path[:-1]:
            parent = parent.get(name) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            if drop:
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = value
        elif parent is None and len(path) > 1:
            continue
    out = io.BytesIO()
    try:
        fastavro.writer(out, fastavro.parse_schema(schema, _named_schemas={}), records, codec=reader.codec)
    except Exception:  # a None parent record (optional nested record) the new type cannot encode: flip instead
        return original[: len(original) // 2]
    return out.getvalue()


def _well_formed(kind: str, data: bytes) -> bool:
    """Whether the mutated bytes are a well-formed file of their kind (so a changed value may be legitimate)."""
    if kind == "json":
        try:
            return isinstance(json.loads(data.decode("utf-8")), dict)
        except (UnicodeDecodeError, ValueError):
            return False
    if kind == "avro":
        try:
            list(fastavro.reader(io.BytesIO(data)))
            return True
        except Exception:
            return False
    return False


# ---------------------------------------------------------------------------------------------
# the harness


class Hang(Exception):
    pass


@contextlib.contextmanager
def no_hang(seconds: int = 20) -> Iterator[None]:
    def alarm(signum, frame):
        raise Hang(f"a read took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    equal: int = 0
    typed: int = 0
    changed: int = 0


def check(target: Target, warehouse: Path, path: Path, original: bytes, data: bytes, baseline: Any,
          baseline_rows: list[tuple] | None, outcome: Outcome) -> None:
    path.write_bytes(data)
    try:
        with no_hang():
            try:
                value = target.read(warehouse)
            except PaimonflowError as exc:
                assert target.kind != "hint", f"{target.name} {data[:60]!r}: a hint must be recovered from, got {exc!r}"
                assert path.name in str(exc), f"{target.name}: {type(exc).__name__} does not name {path.name}: {exc}"
                outcome.typed += 1
            except Hang:
                raise
            except Exception as exc:
                raise AssertionError(f"{target.name} {data[:80]!r} leaked {type(exc).__name__}: {exc}") from exc
            else:
                if value == baseline:
                    outcome.equal += 1
                else:
                    assert target.kind != "hint"
                    assert _well_formed(target.kind, data), (
                        f"{target.name}: a malformed file ({data[:80]!r}) parsed to a different value {value!r}")
                    if target.round_trip is not None:
                        assert target.round_trip(value), f"{target.name}: {value!r} does not round-trip"
                    outcome.changed += 1
            if target.full_read:
                try:
                    got = rows(table(warehouse, target.identifier))
                except PaimonflowError:
                    pass
                except Hang:
                    raise
                except Exception as exc:
                    raise AssertionError(f"table.read() over a fuzzed {target.name} leaked "
                                         f"{type(exc).__name__}: {exc}") from exc
                else:
                    if value == baseline:  # the file means the same thing: so must the rows
                        assert got == baseline_rows, f"{target.name} parsed equal but the rows differ"
    finally:
        path.write_bytes(original)


FUZZ_SETTINGS = dict(deadline=None, database=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                            HealthCheck.data_too_large, HealthCheck.large_base_example])


def _prepare(warehouse: Path, target: Target) -> tuple[Path, bytes, Any, list[tuple] | None]:
    path = target.locate(warehouse)
    original = path.read_bytes()
    baseline = target.read(warehouse)
    baseline_rows = rows(table(warehouse, target.identifier)) if target.full_read else None
    return path, original, baseline, baseline_rows


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TARGETS))
def test_arbitrary_bytes_are_typed_errors_or_recovered(warehouse: Path, name: str, reliability) -> None:
    target = TARGETS[name]
    path, original, baseline, baseline_rows = _prepare(warehouse, target)
    outcome = Outcome()

    @settings(max_examples=reliability.scale(80, 1500), **FUZZ_SETTINGS)
    @given(data=st.binary(max_size=2048) | st.text(max_size=200).map(str.encode) | WHOLE_DOCS)
    def run(data: bytes) -> None:
        check(target, warehouse, path, original, data, baseline, baseline_rows, outcome)

    run()
    reliability.record(examples=outcome.equal + outcome.typed + outcome.changed, corruptions=outcome.typed)
    assert outcome.typed + outcome.equal > 0
    assert path.read_bytes() == original


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TARGETS))
def test_mutations_of_a_valid_file_are_typed_errors_or_mean_the_same(warehouse: Path, name: str,
                                                                     reliability) -> None:
    target = TARGETS[name]
    path, original, baseline, baseline_rows = _prepare(warehouse, target)
    outcome = Outcome()

    @settings(max_examples=reliability.scale(150, 2500), **FUZZ_SETTINGS)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        mutated = data.draw(mutations(original, target.kind))
        check(target, warehouse, path, original, mutated, baseline, baseline_rows, outcome)

    run()
    reliability.record(examples=outcome.equal + outcome.typed + outcome.changed, corruptions=outcome.typed)
    if target.kind == "hint":
        assert outcome.equal > 0 and outcome.typed == 0
    else:
        assert outcome.typed > 0, "no mutation was detected at all: the harness is not reaching the parser"
    assert path.read_bytes() == original


# ---------------------------------------------------------------------------------------------
# table options and the name validator


_OPTION_KEYS = st.sampled_from(sorted(KNOWN_KEYS)) | st.text(max_size=12)
_OPTION_VALUES = (st.sampled_from(["", "-1", "0", "1", "2", "true", "false", "yes", "1 h", "-5 mb", "9" * 40, "NaN",
                                   "1e3", "\x00", "input", "lookup", "deduplicate", "full", "truncate(3)", "UTC",
                                   "Mars/Olympus", "a,b", "10 years", "1 d 2 h"])
                  | st.text(max_size=12))


def test_table_options_parse_or_name_the_bad_key(reliability) -> None:
    """``CoreOptions.from_map`` on arbitrary maps: the options, or InvalidOptionError naming a key."""
    n = reliability.scale(300, 5000)
    seen = {"n": 0, "typed": 0}

    @settings(max_examples=n, **FUZZ_SETTINGS)
    @given(options=st.dictionaries(_OPTION_KEYS, _OPTION_VALUES, max_size=6))
    def run(options: dict[str, str]) -> None:
        seen["n"] += 1
        try:
            with no_hang():
                CoreOptions.from_map(options)
        except InvalidOptionError as exc:
            assert exc.key in options or exc.key in KNOWN_KEYS, exc
            seen["typed"] += 1
        except PaimonflowError:
            seen["typed"] += 1
        except Hang:
            raise
        except Exception as exc:
            raise AssertionError(f"options {options!r} leaked {type(exc).__name__}: {exc}") from exc

    run()
    reliability.record(examples=seen["n"], corruptions=seen["typed"])
    assert seen["typed"] > 0


@pytest.mark.slow
def test_options_inside_a_real_schema_file(warehouse: Path, reliability) -> None:
    """Options a schema file holds (whoever can write the schema directory steers every job, S5):
    opening the table gives the table or a typed error, never a leak."""
    t = table(warehouse)
    path = Path(t.schema_manager.path(0))
    original = path.read_bytes()
    counts = {"n": 0, "typed": 0}

    @settings(max_examples=reliability.scale(40, 1000), **FUZZ_SETTINGS)
    @given(options=st.dictionaries(_OPTION_KEYS, _OPTION_VALUES | ODD_JSON, max_size=4))
    def run(options: dict[str, Any]) -> None:
        doc = json.loads(original)
        doc["options"] = {**doc["options"], **options}
        path.write_bytes(json.dumps(doc).encode())
        counts["n"] += 1
        try:
            with no_hang():
                rows(table(warehouse))
        except PaimonflowError:
            counts["typed"] += 1
        except Hang:
            raise
        except Exception as exc:
            raise AssertionError(f"schema options {options!r} leaked {type(exc).__name__}: {exc}") from exc
        finally:
            path.write_bytes(original)

    run()
    reliability.record(examples=counts["n"], corruptions=counts["typed"])
    assert counts["typed"] > 0


NASTY_NAMES = ["../x", "..", ".", "a/../../b", "x\x00y", "/abs", "/etc/passwd", "C:\\x", "x/../../snapshot/snapshot-999",
               "snapshot-999", "a\\..\\b", "\u2215etc", "\uff0e\uff0e", "a\nb", " ", "tag-", "%2e%2e", "~", "-",
               "d" * 201, "\u00e9" * 101, "x\u200by", "\ufeffx"]


def _is_safe_segment(name: str) -> bool:
    return (bool(name) and name not in (".", "..") and not name.startswith(".")
            and not any(c in name for c in "/\\\x00") and os.path.basename(name) == name
            and len(name.encode()) <= 200)


def test_name_validator(reliability) -> None:
    counts = {"n": 0, "refused": 0}

    def one(kind: str, name: object) -> None:
        counts["n"] += 1
        try:
            with no_hang():
                got = validate_name(kind, name)
        except InvalidNameError as exc:
            counts["refused"] += 1
            assert exc.kind == kind and exc.name is name
            return
        except Hang:
            raise
        except Exception as exc:
            raise AssertionError(f"validate_name({kind!r}, {name!r}) leaked {type(exc).__name__}: {exc}") from exc
        assert got is name
        if kind != "column":  # column names never become paths
            assert isinstance(name, str) and _is_safe_segment(name), f"{kind} name {name!r} accepted"

    for kind in NAME_KINDS:
        for name in [*NASTY_NAMES, None, 3, b"x", ["x"]]:
            one(kind, name)

    @settings(max_examples=reliability.scale(500, 20000), **FUZZ_SETTINGS)
    @given(kind=st.sampled_from(NAME_KINDS),
           name=st.text(max_size=30) | st.sampled_from(NASTY_NAMES)
           | st.lists(st.sampled_from(["..", ".", "/", "\\", "\x00", "x", "snapshot-9", " ", "\u00e9"]),
                      max_size=6).map("".join)
           | st.binary(max_size=10) | st.integers() | st.none())
    def run(kind: str, name: object) -> None:
        one(kind, name)

    run()
    reliability.record(names=counts["n"])
    assert counts["refused"] > 0
