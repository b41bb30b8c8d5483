"""The capability gate: each gated feature refuses exactly its operations, in one typed line,
before any file is written or deleted; every entry point of the core goes through it."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from paimonflow.core import AddColumn, Catalog, col
from paimonflow.core.errors import UnsupportedFeatureError
from paimonflow.core.meta.capabilities import (
    REFUSED,
    Feature,
    Operation,
    TableCapabilities,
    features_of,
    matrix_markdown,
)
from tests.files import tree

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.mark.parametrize(("options", "feature"), [
    ({"bucket": "-2"}, Feature.POSTPONE_BUCKET),
    ({"data-file.path-directory": "/elsewhere"}, Feature.PATH_DIRECTORY_OUTSIDE),
    ({"data-file.path-directory": "../up"}, Feature.PATH_DIRECTORY_OUTSIDE),
    ({"data-file.path-directory": "s3://b/x"}, Feature.PATH_DIRECTORY_OUTSIDE),
    ({"data-file.external-paths": "s3://b/ext", "data-file.external-paths.strategy": "round-robin"},
     Feature.EXTERNAL_PATHS),
    ({"data-file.external-paths": "ext", "data-file.external-paths.strategy": "round-robin"}, Feature.EXTERNAL_PATHS),
    ({"row-tracking.enabled": "true"}, Feature.ROW_TRACKING),
    ({"data-evolution.enabled": "true"}, Feature.DATA_EVOLUTION),
    ({"file-index.bsi.columns": "v"}, Feature.FILE_INDEX),
    ({"file-index.range-bitmap.columns": "v"}, Feature.FILE_INDEX),
    ({"file-index.bitmap.columns": "m[k]"}, Feature.FILE_INDEX),
    ({"deletion-vectors.bitmap64": "TRUE"}, Feature.BITMAP64),
    ({"index-file-in-data-file-dir": "true"}, Feature.INDEX_IN_DATA_DIR),
    ({"blob-field": "b"}, Feature.BLOB),
    ({"some.future-option": "x"}, Feature.UNKNOWN_OPTION),
])
def test_each_feature_is_found_and_refuses_its_operations(options, feature):
    caps = TableCapabilities.of("db.t", options)
    assert set(caps.features) == {feature}
    for operation in Operation:
        if operation in REFUSED[feature]:
            with pytest.raises(UnsupportedFeatureError) as info:
                caps.require(operation)
            message = str(info.value)
            assert "\n" not in message and feature.value in message and operation.value in message
            assert info.value.feature == feature.value and info.value.operation == operation.value
        else:
            caps.require(operation)


def test_plain_and_known_options_are_no_feature():
    assert features_of({"bucket": "4", "merge-engine": "partial-update", "data-file.path-directory": "data",
                        "row-tracking.enabled": "false", "file-index.bloom-filter.columns": "",
                        "file-index.bitmap.columns": "v", "file-index.bloom-filter.v.fpp": "0.01",
                        "file-index.in-manifest-threshold": "1 kb",
                        "postpone.default-bucket-num": "4", "fields.v.aggregate-function": "sum"}) == {}


def test_engine_run_time_settings_are_harmless_but_still_checked_when_a_user_sets_them():
    from paimonflow.core.errors import InvalidOptionError
    from paimonflow.core.options.validate import validate_user_options

    assert features_of({"sink.parallelism": "4", "lookup.cache-rows": "10", "scan.infer-parallelism": "x"}) == {}
    with pytest.raises(InvalidOptionError, match="unknown option"):
        validate_user_options({"sink.parallelism": "4"})


def test_unknown_options_refuse_every_change_but_not_reads():
    caps = TableCapabilities.of("db.t", {"frobnicate": "1"})
    assert caps.allows(Operation.READ)
    assert not any(caps.allows(op) for op in Operation if op is not Operation.READ)


def test_matrix_lists_every_feature_and_operation():
    text = matrix_markdown()
    assert all(f.value in text for f in Feature) and all(op.value in text for op in Operation)
    assert len(text.splitlines()) == len(Feature) + 2


def _with_options(tmp_path, options: dict[str, str]):
    """A written table whose schema file then gets ``options`` (as another writer would leave it)."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.tags.create("t1")
    schema_file = os.path.join(t.path, "schema", "schema-0")
    with open(schema_file) as f:
        doc = json.load(f)
    doc["options"].update(options)
    with open(schema_file, "w") as f:
        json.dump(doc, f)
    return catalog.get_table("db.t")


ENTRY_POINTS = {
    Operation.READ: [lambda t: t.read(), lambda t: t.plan(), lambda t: list(t.to_batches())],
    Operation.WRITE: [lambda t: t.write(pa.table({"id": [9], "v": ["z"]}, schema=SCHEMA)), lambda t: t.truncate(),
                      lambda t: t.new_write(), lambda t: t.new_commit(),
                      lambda t: t.write(pa.table({"id": [9], "note": ["z"]}), schema_mode="merge"),
                      lambda t: t.alter([AddColumn("note", pa.string())]), lambda t: t.delete(col("id") == 1)],
    Operation.COMPACT: [lambda t: t.compact(full=True), lambda t: t.compact(full=False)],
    Operation.EXPIRE: [lambda t: t.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0),
                       lambda t: t.expire_changelogs(retain_min=1, retain_max=1, older_than_millis=0)],
    Operation.ORPHANS: [lambda t: t.remove_orphan_files(older_than_millis=0)],
    Operation.HISTORY: [lambda t: t.tags.create("t2"), lambda t: t.tags.delete("t1"), lambda t: t.rollback(tag="t1"),
                        lambda t: t.branches.create("b1"), lambda t: t.run_auto_tag()],
}


@pytest.mark.parametrize("operation", list(Operation))
def test_every_entry_point_refuses_before_changing_a_file(tmp_path, operation):
    t = _with_options(tmp_path, {"a.future-option": "on"} if operation is not Operation.READ
                      else {"data-file.path-directory": "/elsewhere"})
    before = tree(tmp_path)
    for call in ENTRY_POINTS[operation]:
        with pytest.raises(UnsupportedFeatureError, match=operation.value):
            call(t)
    assert tree(tmp_path) == before


def test_files_with_partial_columns_are_refused_by_reads_whatever_the_options(tmp_path):
    """An option can be removed after data-evolution files were written: the file metadata counts
    (compaction refuses partial-column files; reads merge them by row id, or refuse them when the
    table no longer says data evolution: tests/core/write/test_row_tracking.py)."""
    from dataclasses import replace

    from paimonflow.core.meta.capabilities import require_file_metadata

    t = _with_options(tmp_path, {})
    files = [s for split in t.plan() for s in split.files]
    require_file_metadata("db.t", files, Operation.READ)
    partial = [replace(files[0], write_cols=("v",))]
    require_file_metadata("db.t", partial, Operation.READ)
    with pytest.raises(UnsupportedFeatureError, match="holds only columns"):
        require_file_metadata("db.t", partial, Operation.COMPACT)
    tracked = [replace(files[0], first_row_id=0)]  # row tracking is implemented for every operation
    require_file_metadata("db.t", tracked, Operation.READ)
    require_file_metadata("db.t", tracked, Operation.COMPACT)
    # what Paimon's row-tracking compaction writes: every column, then _ROW_ID and _SEQUENCE_NUMBER
    compacted = [replace(files[0], first_row_id=None, write_cols=("id", "v", "_ROW_ID", "_SEQUENCE_NUMBER"))]
    require_file_metadata("db.t", compacted, Operation.READ)
    require_file_metadata("db.t", compacted, Operation.COMPACT)


def test_the_docs_show_the_capability_matrix():
    """docs/format.md's capability matrix is this module's (``PAIMONFLOW_UPDATE_DOCS=1`` rewrites it)."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[3] / "docs" / "format.md"
    begin = "<!-- capability matrix: generated from core/meta/capabilities.py by tests/core/meta/test_capabilities.py -->"
    end = "<!-- end of the capability matrix -->"
    text = doc.read_text()
    current = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, re.S)
    assert current is not None, f"docs/format.md has no {begin!r} section"
    wanted = matrix_markdown() + "\n"
    if os.environ.get("PAIMONFLOW_UPDATE_DOCS") == "1":
        doc.write_text(text[:current.start(1)] + wanted + text[current.end(1):])
        return
    assert current.group(1) == wanted, "docs/format.md's capability matrix is stale: rerun with PAIMONFLOW_UPDATE_DOCS=1"


def test_a_commit_refuses_to_carry_an_index_kind_it_does_not_maintain(tmp_path):
    """A global index (btree, bitmap... over row ids) next to deletion vectors would go stale under
    a commit that changes index files: refused before anything is published."""
    from dataclasses import replace

    from paimonflow.core.meta.index_files import IndexFileMeta

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.compact(full=True)
    t.write(pa.table({"id": [1], "v": ["c"]}, schema=SCHEMA))
    latest = t.snapshot_manager.latest()
    entries = t.index_manifest.read(latest.index_manifest)
    btree = replace(entries[0], file=IndexFileMeta(index_type="btree", file_name="index-btree-0", file_size=1,
                                                  row_count=2))
    name = t.index_manifest.write([*entries, btree])
    with open(t.snapshot_manager.path(latest.id)) as f:
        doc = json.load(f)
    doc["indexManifest"] = name
    with open(t.snapshot_manager.path(latest.id), "w") as f:
        json.dump(doc, f)
    t = catalog.get_table("db.t")
    before = tree(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match="index files of type btree"):
        t.compact(full=True)
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if "/snapshot/" in k} == {k: v for k, v in before.items() if "/snapshot/" in k}
