"""Property-based, through the table: for each merge engine, any sequence of writes (+I/+U, -U,
-D where the engine takes them; one batch per commit, several batches in one ``table.write``,
several ``writer.write`` calls in one commit, or one commit each), minor and full compactions
reads exactly as a plain dictionary model that folds the records one by one by Paimon's rules.
Each table is either unpartitioned with primary key ``k`` or partitioned by ``p`` with primary
key ``(p, k)``: merged on the trimmed key ``k``, where ``p`` must come through every merge as it
is, whatever the engine does to value fields.

Small files, a low sorted-run trigger and one or two buckets make the writer and the
compactions merge many partial windows of a key's history, so these machines also check that
every merged window (a writer batch, a universal compaction, a full compaction) leaves the same
answer as folding the whole history. Where Java Paimon's own answer depends on those windows the
generated histories stay out of that corner; each such place says why."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, ClassVar

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from paimonflow.core import Catalog

RETRACT = ("-U", "-D")
keys = st.integers(0, 15)
partitions = st.sampled_from(["x", "y"])
small_ints = st.none() | st.integers(-5, 5)
letters = st.none() | st.sampled_from(["a", "b", "c", "dd"])
Key = tuple[Any, ...]  # (k,) or (p, k)
Record = tuple[str, Key, tuple[Any, ...]]  # (row kind, primary key, value columns)


def key_field() -> pa.Field:
    return pa.field("k", pa.int32(), nullable=False)


class MergeEngineMachine(RuleBasedStateMachine):
    """One primary-key table with one merge engine, and ``model``: primary key -> value columns.

    A subclass gives the schema (``k`` and the value columns), the options, the value strategy,
    the row kinds its rules write and ``fold``, the engine's rule for one record."""

    SCHEMA: ClassVar[pa.Schema]
    OPTIONS: ClassVar[dict[str, str]]
    VALUES: ClassVar[st.SearchStrategy[tuple[Any, ...]]]
    KINDS: ClassVar[tuple[str, ...]] = ("+I", "+U")

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[Key, tuple[Any, ...]] = {}
        self.root = tempfile.mkdtemp(prefix="engine-model-")

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @initialize(partitioned=st.booleans())
    def create_table(self, partitioned: bool) -> None:
        catalog = Catalog(self.root)
        catalog.create_database("db")
        options = {"bucket": "2", "num-sorted-run.compaction-trigger": "2", "target-file-size": "1kb",
                   **self.OPTIONS}
        if partitioned:  # the partition field in the primary key: merged on the trimmed key k
            self.schema = pa.schema([pa.field("p", pa.string(), nullable=False), *self.SCHEMA])
            self.key_names, self.keys = ["p", "k"], st.tuples(partitions, keys)
            self.table = catalog.create_table("db.t", self.schema, primary_keys=self.key_names,
                                              partition_keys=["p"], options=options)
        else:
            self.schema, self.key_names, self.keys = self.SCHEMA, ["k"], st.tuples(keys)
            self.table = catalog.create_table("db.t", self.schema, primary_keys=["k"], options=options)

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """Apply one record to the model; return the values to write, or None to leave it out."""
        raise NotImplementedError

    # -- writing -------------------------------------------------------------------------------

    def _records(self, data: st.DataObject) -> list[Record]:
        drawn = data.draw(st.lists(st.tuples(st.sampled_from(self.KINDS), self.keys, self.VALUES), min_size=1,
                                   max_size=8))
        records = []
        for kind, key, values in drawn:  # folded in arrival order: the order of sequence numbers
            written = self.fold(kind, key, values)
            if written is not None:
                records.append((kind, key, written))
        return records

    def _arrow(self, records: list[Record]) -> pa.Table:
        rows = [(*key, *values) for _, key, values in records]
        return pa.table({name: [row[i] for row in rows] for i, name in enumerate(self.schema.names)},
                        schema=self.schema)

    @staticmethod
    def _kinds(records: list[Record]) -> pa.Array:
        return pa.array([kind for kind, _, _ in records], pa.string())

    def _write(self, records: list[Record]) -> None:
        if records:
            self.table.write(self._arrow(records), row_kinds=self._kinds(records))

    @rule(data=st.data())
    def write(self, data: st.DataObject) -> None:
        self._write(self._records(data))

    @rule(data=st.data(), how=st.sampled_from(["one table.write", "one commit", "a commit each"]))
    def write_batches(self, data: st.DataObject, how: str) -> None:
        batches = [b for b in (self._records(data) for _ in range(data.draw(st.integers(2, 4)))) if b]
        if not batches:
            return
        if how == "one table.write":  # an iterable of record batches; the writer folds them as one
            every = [r for b in batches for r in b]
            self.table.write([rb for b in batches for rb in self._arrow(b).to_batches()],
                             row_kinds=self._kinds(every))
        elif how == "one commit":
            with self.table.new_write() as writer:
                for b in batches:
                    writer.write(self._arrow(b), row_kinds=self._kinds(b))
                messages = writer.prepare_commit()
            self.table.new_commit().commit(messages)
        else:
            for b in batches:
                self._write(b)

    @rule(full=st.booleans())
    def compact(self, full: bool) -> None:
        self.table.compact(full=full)

    @invariant()
    def reads_like_the_model(self) -> None:
        got = sorted(self.table.read().to_pylist(), key=lambda row: tuple(row[n] for n in self.key_names))
        expected = [dict(zip(self.schema.names, (*key, *values), strict=True))
                    for key, values in sorted(self.model.items())]
        assert got == expected


def run_settings(machine: type[MergeEngineMachine], **overrides: Any) -> None:
    machine.TestCase.settings = settings(**{"max_examples": 25, "stateful_step_count": 12, "deadline": None,
                                            "suppress_health_check": [HealthCheck.too_slow], **overrides})


# -- deduplicate -----------------------------------------------------------------------------


class Deduplicate(MergeEngineMachine):
    """The newest record of a key wins; -U and -D remove the key (``ignore-delete``: skipped)."""

    SCHEMA = pa.schema([key_field(), ("v", pa.string()), ("w", pa.int64())])
    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "deduplicate"}
    VALUES = st.tuples(letters, small_ints)
    KINDS = ("+I", "+U", "+I", "-U", "-D")

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if kind in RETRACT:
            if self.OPTIONS.get("ignore-delete") != "true":
                self.model.pop(key, None)
        else:
            self.model[key] = values
        return values


class DeduplicateIgnoreDelete(Deduplicate):
    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "deduplicate", "ignore-delete": "true", "bucket": "1",
                                         "num-sorted-run.compaction-trigger": "3"}


# -- first-row -------------------------------------------------------------------------------


class FirstRow(MergeEngineMachine):
    """The oldest record of a key wins. Paimon refuses -U/-D unless ``ignore-delete`` skips them,
    so only +I/+U are written here (the refusal: ``merge/test_merge_engines.py``)."""

    SCHEMA = pa.schema([key_field(), ("v", pa.string()), ("w", pa.int64())])
    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "first-row"}
    VALUES = st.tuples(letters, small_ints)

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if kind not in RETRACT:
            self.model.setdefault(key, values)
        return values


class FirstRowIgnoreDelete(FirstRow):
    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "first-row", "ignore-delete": "true", "bucket": "1"}
    KINDS = ("+I", "+U", "+I", "-U", "-D")


# -- partial-update --------------------------------------------------------------------------


class PartialUpdate(MergeEngineMachine):
    """Every value column takes the key's newest non-null value; a key exists once inserted.
    Without sequence groups or ``remove-record-on-delete`` Paimon refuses -U/-D, so only +I/+U
    are written here."""

    SCHEMA = pa.schema([key_field(), ("a", pa.int64()), ("b", pa.string()), ("c", pa.int64())])
    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "partial-update"}
    VALUES = st.tuples(small_ints, letters, small_ints)

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        old = self.model.get(key, (None,) * len(values))
        self.model[key] = tuple(old_value if new is None else new for old_value, new in zip(old, values, strict=True))
        return values


class PartialUpdateRemoveOnDelete(PartialUpdate):
    """``partial-update.remove-record-on-delete``: -D removes the whole row; a later insert starts
    from an empty row.

    Java's answer depends on merge windows in two places, which the histories avoid:
    * a re-insert after a -D: a window ``[-D, +I(partial)]`` merges to a plain +I that no longer
      hides the older row, so the first insert after a delete writes every column;
    * -U: ignored when it is alone in its window (the reducer passes one record through), but a
      window of only -U records merges to a -D. -U is not written here; a lone -U is checked by
      ``test_remove_record_on_delete_ignores_a_lone_update_before``.
    """

    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "partial-update",
                                         "partial-update.remove-record-on-delete": "true",
                                         "num-sorted-run.compaction-trigger": "3"}
    KINDS = ("+I", "+U", "+I", "-D")

    def __init__(self) -> None:
        super().__init__()
        self.rewrite_whole: set[Key] = set()  # deleted keys whose next insert must set every column

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if kind == "-D":
            if key in self.model:
                del self.model[key]
                self.rewrite_whole.add(key)
            return values
        if key in self.rewrite_whole:
            self.rewrite_whole.discard(key)
            values = tuple(fill if v is None else v for v, fill in zip(values, (0, "z", 0), strict=True))
        return super().fold(kind, key, values)


class PartialUpdateSequenceGroup(MergeEngineMachine):
    """``fields.g.sequence-group=a,b`` (Java ``PartialUpdateMergeFunction``):

    * +I/+U: ``x`` takes the newest non-null value; when the record's ``g`` is null the group is
      skipped, otherwise if the row's ``g`` is null or ``g_new >= g_row`` then ``a``, ``b`` and
      ``g`` all take the record's values, nulls included;
    * -U/-D: when ``g`` is not null and wins the same comparison, ``g`` takes the record's value
      and ``a``, ``b`` become null; ``x`` is untouched and the key stays;
    * a key exists once a +I/+U met it.

    Two corners where Java's answer depends on the merge windows stay out of the histories:
    * a retraction of a key never inserted merges to -D, which a full compaction drops together
      with the ``g`` it carried, so later inserts would compare against nothing: retractions
      here only meet inserted keys;
    * a record alone in its window passes the reducer unchanged, so a record with a null ``g``
      but a non-null ``a``/``b`` shows those values until a merge skips them: a record with a
      null ``g`` carries null ``a`` and ``b`` here (an update of ``x`` only).
    """

    SCHEMA = pa.schema([key_field(), ("a", pa.int64()), ("b", pa.string()), ("g", pa.int32()), ("x", pa.int64())])
    OPTIONS: ClassVar[dict[str, str]] = {"merge-engine": "partial-update", "fields.g.sequence-group": "a,b"}
    VALUES = st.tuples(small_ints, letters, st.integers(0, 3), small_ints) | st.tuples(
        st.none(), st.none(), st.none(), small_ints)
    KINDS = ("+I", "+U", "+I", "-U", "-D")

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        new_a, new_b, new_g, new_x = values
        if kind in RETRACT and key not in self.model:
            return None
        a, b, g, x = self.model.get(key, (None, None, None, None))
        wins = new_g is not None and (g is None or new_g >= g)
        if kind in RETRACT:
            if wins:
                a, b, g = None, None, new_g
        else:
            if wins:
                a, b, g = new_a, new_b, new_g
            if new_x is not None:
                x = new_x
        self.model[key] = (a, b, g, x)
        return values


# -- aggregation -----------------------------------------------------------------------------


class Aggregation(MergeEngineMachine):
    """``s`` sum (retracts: -U/-D subtract), ``m`` max, ``n`` last_non_null_value and ``l`` listagg,
    those three with ``ignore-retract``. Nulls leave every accumulator as it is.

    The result of an aggregation merge is always +I, so a key whose history is only retractions
    exists or not depending on the merge windows (one record passes through as -U and is not
    read; two merge to +I): retractions here only meet inserted keys. ``last_non_null_value``
    retraction is window-dependent for the same reason, so it ignores retractions here.
    """

    SCHEMA = pa.schema([key_field(), ("s", pa.int64()), ("m", pa.int64()), ("n", pa.int64()), ("l", pa.string())])
    OPTIONS: ClassVar[dict[str, str]] = {
        "merge-engine": "aggregation", "bucket": "1",
        "fields.s.aggregate-function": "sum",
        "fields.m.aggregate-function": "max", "fields.m.ignore-retract": "true",
        "fields.n.aggregate-function": "last_non_null_value", "fields.n.ignore-retract": "true",
        "fields.l.aggregate-function": "listagg", "fields.l.ignore-retract": "true"}
    VALUES = st.tuples(small_ints, small_ints, small_ints, letters)
    KINDS = ("+I", "+U", "+I", "-U", "-D")

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        new_s, new_m, new_n, new_l = values
        if kind in RETRACT:
            if key not in self.model:
                return None
            s, m, n, lst = self.model[key]
            if new_s is not None:
                s = -new_s if s is None else s - new_s
            self.model[key] = (s, m, n, lst)
            return values
        s, m, n, lst = self.model.get(key, (None, None, None, None))
        if new_s is not None:
            s = new_s if s is None else s + new_s
        if new_m is not None:
            m = new_m if m is None else max(m, new_m)
        if new_n is not None:
            n = new_n
        if new_l is not None:
            lst = new_l if lst is None else f"{lst},{new_l}"
        self.model[key] = (s, m, n, lst)
        return values


class AggregationTwoBuckets(Aggregation):
    OPTIONS: ClassVar[dict[str, str]] = {**Aggregation.OPTIONS, "bucket": "2",
                                         "num-sorted-run.compaction-trigger": "3"}


class AggregationRemoveOnDelete(Aggregation):
    """``aggregation.remove-record-on-delete``: -D removes the key instead of retracting; -U still
    retracts.

    A key once deleted is not written again: a window ``[-D, +I]`` merges to a plain +I (Java
    folds the insert onto the -D's values) which no longer hides the key's older rows, so what a
    re-insert reads depends on the merge windows, in Java as here.
    """

    OPTIONS: ClassVar[dict[str, str]] = {**Aggregation.OPTIONS, "aggregation.remove-record-on-delete": "true"}

    def __init__(self) -> None:
        super().__init__()
        self.deleted: set[Key] = set()

    def fold(self, kind: str, key: Key, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if key in self.deleted:
            return None
        if kind == "-D":
            self.model.pop(key, None)
            self.deleted.add(key)
            return values
        return super().fold(kind, key, values)


for _machine in (Deduplicate, DeduplicateIgnoreDelete, FirstRow, FirstRowIgnoreDelete, PartialUpdate,
                 PartialUpdateRemoveOnDelete, PartialUpdateSequenceGroup, Aggregation, AggregationTwoBuckets,
                 AggregationRemoveOnDelete):
    run_settings(_machine)

test_deduplicate = Deduplicate.TestCase
test_deduplicate_ignore_delete = DeduplicateIgnoreDelete.TestCase
test_first_row = FirstRow.TestCase
test_first_row_ignore_delete = FirstRowIgnoreDelete.TestCase
test_partial_update = PartialUpdate.TestCase
test_partial_update_remove_record_on_delete = PartialUpdateRemoveOnDelete.TestCase
test_partial_update_sequence_group = PartialUpdateSequenceGroup.TestCase
test_aggregation = Aggregation.TestCase
test_aggregation_two_buckets = AggregationTwoBuckets.TestCase
test_aggregation_remove_record_on_delete = AggregationRemoveOnDelete.TestCase


def test_remove_record_on_delete_ignores_a_lone_update_before(tmp_path) -> None:
    """Only -D removes the row under ``remove-record-on-delete``; a -U alone in its commit passes
    the writer's reducer unchanged in Java and is ignored when read."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", PartialUpdateRemoveOnDelete.SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "merge-engine": "partial-update",
                                          "partial-update.remove-record-on-delete": "true"})
    rows = pa.table({"k": [1], "a": [1], "b": ["x"], "c": [1]}, schema=PartialUpdateRemoveOnDelete.SCHEMA)
    table.write(rows)
    table.write(rows, row_kinds="-U")
    assert table.read().to_pylist() == [{"k": 1, "a": 1, "b": "x", "c": 1}]
