"""Property-based: any sequence of writes, deletes, overwrites, truncates and compactions (full
and universal) leaves a table that reads, at every snapshot, exactly as a plain dictionary model
says."""

from __future__ import annotations

import shutil
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from paimonflow.core import Catalog

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])
keys = st.integers(0, 30)
parts = st.sampled_from(["x", "y", "z"])
rows = st.lists(st.tuples(keys, parts, st.one_of(st.none(), st.text(max_size=12))), min_size=1, max_size=25)


class PrimaryKeyTable(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="pkmodel-")
        catalog = Catalog(self.root)
        catalog.create_database("db")
        self.table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                                          options={"bucket": "3", "manifest.merge-min-count": "3",
                                                   "target-file-size": "2kb",
                                                   "num-sorted-run.compaction-trigger": "3"})
        self.model: dict[tuple[int, str], str | None] = {}
        self.history: list[dict] = [{}]  # model after snapshot i (index 0 = empty table)

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _commit(self, result) -> None:
        if result.snapshot_id is not None:
            # a writer that compacts commits an APPEND and then a COMPACT snapshot; both read alike
            assert result.snapshot_id in (len(self.history), len(self.history) + 1)
            while len(self.history) <= result.snapshot_id:
                self.history.append(dict(self.model))

    def _batch(self, data):
        return pa.table({"k": [r[0] for r in data], "p": [r[1] for r in data], "v": [r[2] for r in data]}, schema=SCHEMA)

    @rule(data=rows)
    def upsert(self, data):
        result = self.table.write(self._batch(data))
        for k, p, v in data:
            self.model[(k, p)] = v
        self._commit(result)

    @rule(data=rows)
    def delete(self, data):
        result = self.table.write(self._batch(data), row_kinds="-D")
        for k, p, _ in data:
            self.model.pop((k, p), None)
        self._commit(result)

    @rule(data=rows, kinds=st.lists(st.sampled_from(["+I", "-U", "+U", "-D"]), min_size=25, max_size=25))
    def mixed(self, data, kinds):
        kinds = kinds[: len(data)]
        result = self.table.write(self._batch(data), row_kinds=pa.array(kinds))
        for (k, p, v), kind in zip(data, kinds, strict=True):
            if kind in ("-U", "-D"):
                self.model.pop((k, p), None)
            else:
                self.model[(k, p)] = v
        self._commit(result)

    @rule(data=rows, part=parts)
    def overwrite_partition(self, data, part):
        data = [(k, part, v) for k, _, v in data]
        result = self.table.write(self._batch(data), overwrite={"p": part})
        self.model = {key: v for key, v in self.model.items() if key[1] != part}
        for k, p, v in data:
            self.model[(k, p)] = v
        self._commit(result)

    @precondition(lambda self: len(self.history) > 1)
    @rule()
    def truncate(self):
        result = self.table.truncate()
        self.model = {}
        self._commit(result)

    @rule(full=st.booleans())
    def compact(self, full):
        result = self.table.compact(full=full)
        if result.snapshot_id is not None:
            assert self.table.latest_snapshot().commit_kind.value == "COMPACT"
            self._commit(result)  # a compaction changes no row

    @invariant()
    def reads_like_the_model(self):
        got = {(r["k"], r["p"]): r["v"] for r in self.table.read().to_pylist()}
        assert got == self.model
        assert self.table.read().num_rows == len(self.model)  # no duplicate keys

    @invariant()
    def every_snapshot_reads_like_its_model(self):
        ids = self.table.snapshot_manager.list_ids()
        assert ids == list(range(1, len(self.history)))
        for sid in ids[-3:]:
            got = {(r["k"], r["p"]): r["v"] for r in self.table.read(snapshot_id=sid).to_pylist()}
            assert got == self.history[sid]


PrimaryKeyTable.TestCase.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                                             suppress_health_check=[HealthCheck.too_slow])
test_primary_key_table_matches_model = PrimaryKeyTable.TestCase
