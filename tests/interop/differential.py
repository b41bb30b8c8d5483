"""A randomized differential test against Apache Paimon's Java core: one operation sequence run
from scratch by both engines, each resulting table read by both.

A *table kind* is merge engine × ``sequence.field`` × deletion vectors × changelog producer (and
the engine's delete handling). A *case* is a table kind, a bucket count and a short sequence of
steps: writes of a few rows with row kinds (small key space, nulls, a partition field inside the
primary key) and full or universal compactions. Java runs the steps into warehouse ``java``,
paimonflow into warehouse ``ours``; then both tables are read by both engines at the latest
snapshot, at the snapshot of an earlier write, and (with a changelog producer) as a changelog.
All four answers of each read must agree.

Where Java 0.9 itself is wrong (fixed upstream), a disagreement is set aside by a named rule
(:data:`JAVA_09_RULES`) that must recognise the case from its inputs alone; any other
disagreement fails the test.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from paimonflow.core import Catalog

from .java_peer import KIND_COLUMN, KIND_NAMES, JavaPeer

RETRACTIONS = ("-U", "-D")
PARTITIONS = ("x", "é")
KEYS = (0, 1, 2)
STRINGS = ("", "a b", "zz", "ü")

# -- table kinds ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableKind:
    engine: str  # deduplicate | partial-update | partial-update-groups | aggregation | first-row
    sequence_field: bool
    deletion_vectors: bool
    producer: str  # none | input | lookup | full-compaction
    deletes: str  # how the engine meets -U/-D: "accept" | "ignore" | "remove" (remove-record-on-delete)

    @property
    def name(self) -> str:
        parts = [self.engine, f"seq={'sq' if self.sequence_field else '-'}",
                 f"dv={'on' if self.deletion_vectors else 'off'}", f"changelog={self.producer}",
                 f"deletes={self.deletes}"]
        return ",".join(parts)

    @property
    def lookup(self) -> bool:
        """Compaction looks keys up in higher levels (Paimon's ForceUpLevel0 cases)."""
        return self.producer == "lookup" or self.deletion_vectors or self.engine == "first-row"

    def schema(self) -> pa.Schema:
        fields = [pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                  ("a", pa.int32()), ("c", pa.string()), ("e", pa.float64())]
        if self.sequence_field:
            fields.append(("sq", pa.int32()))
        if self.engine == "partial-update-groups":
            fields.append(("g", pa.int32()))
        return pa.schema(fields)

    def options(self, buckets: int) -> dict[str, str]:
        options = {"bucket": str(buckets), "changelog-producer": self.producer}
        engine = "partial-update" if self.engine == "partial-update-groups" else self.engine
        options["merge-engine"] = engine
        if self.sequence_field:
            options["sequence.field"] = "sq"
        if self.deletion_vectors:
            options["deletion-vectors.enabled"] = "true"
        if self.engine == "aggregation":
            options.update({"fields.a.aggregate-function": "sum", "fields.c.aggregate-function": "last_non_null_value",
                            "fields.e.aggregate-function": "max", "fields.e.ignore-retract": "true"})
            if self.deletes == "remove":
                options["aggregation.remove-record-on-delete"] = "true"
        if self.engine == "partial-update-groups":
            options["fields.g.sequence-group"] = "a,c"
        if self.deletes == "ignore":
            options["ignore-delete"] = "true"
        elif self.deletes == "remove" and engine == "partial-update":
            options["partial-update.remove-record-on-delete"] = "true"
        return options

    @property
    def kinds(self) -> tuple[str, ...]:
        """Row kinds a write may carry: every kind unless the engine refuses retractions."""
        refuses = self.engine in ("partial-update", "partial-update-groups", "first-row") and self.deletes == "accept"
        return ("+I", "+U") if refuses else ("+I", "+U", "-U", "-D")


def all_table_kinds() -> list[TableKind]:
    out = []
    for engine, seq, dv, producer in itertools.product(
            ("deduplicate", "partial-update", "partial-update-groups", "aggregation", "first-row"),
            (False, True), (False, True), ("none", "input", "lookup", "full-compaction")):
        if engine == "deduplicate":
            deletes = ("accept",)
        elif engine == "aggregation":
            # aggregation.remove-record-on-delete is newer than Java 0.9 (which ignores it): ours only
            deletes = ("accept",)
        elif engine == "first-row":
            deletes = ("accept", "ignore")
        else:
            deletes = ("accept", "ignore", "remove")
        out.extend(TableKind(engine, seq, dv, producer, d) for d in deletes
                   # Java refuses this one at the first write, we at creation (test_java_differential)
                   if not (engine == "partial-update-groups" and d == "remove"))
    return out


# -- cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    rows: tuple[dict[str, Any], ...]
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Compact:
    full: bool


@dataclass(frozen=True)
class Case:
    kind: TableKind
    buckets: int
    steps: tuple[Write | Compact, ...]
    earlier_write: int  # which write's snapshot the time-travel read uses

    def describe(self) -> str:
        lines = [f"{self.kind.name} buckets={self.buckets}"]
        for step in self.steps:
            if isinstance(step, Compact):
                lines.append(f"  compact(full={step.full})")
            else:
                lines.append("  write " + "; ".join(f"{k} {r}" for r, k in zip(step.rows, step.kinds, strict=True)))
        return "\n".join(lines)

    @property
    def writes(self) -> list[Write]:
        return [s for s in self.steps if isinstance(s, Write)]


@st.composite
def cases(draw, kind: TableKind) -> Case:
    def row():
        r = {"p": draw(st.sampled_from(PARTITIONS)), "k": draw(st.sampled_from(KEYS)),
             "a": draw(st.one_of(st.none(), st.integers(-5, 5))), "c": draw(st.one_of(st.none(), st.sampled_from(STRINGS))),
             "e": draw(st.one_of(st.none(), st.sampled_from([1.5, -2.25, 1e6])))}
        if kind.sequence_field:
            r["sq"] = draw(st.integers(0, 3))
        if kind.engine == "partial-update-groups":
            r["g"] = draw(st.sampled_from([None, 0, 1, 2, 3]))
        return r

    steps: list[Write | Compact] = []
    for _ in range(draw(st.integers(1, 6))):
        # compactions are what make a full-compaction changelog: more of them there
        if steps and draw(st.integers(0, 2 if kind.producer == "full-compaction" else 5)) == 0:
            steps.append(Compact(full=draw(st.booleans())))
            continue
        n = draw(st.integers(1, 4))
        rows = tuple(row() for _ in range(n))
        kinds = tuple(draw(st.sampled_from(kind.kinds)) for _ in range(n))
        steps.append(Write(rows, kinds))
    if not any(isinstance(s, Write) for s in steps):
        steps.insert(0, Write((row(),), ("+I",)))
    n_writes = sum(isinstance(s, Write) for s in steps)
    return Case(kind=kind, buckets=draw(st.sampled_from([1, 2])), steps=tuple(steps),
                earlier_write=draw(st.integers(0, n_writes - 1)))


# -- running both engines ---------------------------------------------------------------------


def creation_errors(kind: TableKind, peer: JavaPeer, workdir: Path) -> tuple[str | None, str | None]:
    """Whether each engine accepts the table kind: (Java's error, our error), None for accepted."""
    from paimonflow.core import PaimonflowError

    from .java_peer import JavaPeerError

    options = kind.options(1)
    peer.create_table(workdir / "java", "db.t", kind.schema(), primary_keys=["p", "k"], partition_keys=["p"],
                      options=options)
    try:
        peer.run()
        java_error = None
    except JavaPeerError as exc:
        java_error = exc.java_message.splitlines()[0]
    catalog = Catalog(str(workdir / "ours"))
    catalog.create_database("db")
    try:
        catalog.create_table("db.t", kind.schema(), primary_keys=["p", "k"], partition_keys=["p"], options=options)
        our_error = None
    except PaimonflowError as exc:
        our_error = str(exc)
    return java_error, our_error


@dataclass
class Outcome:
    """The four answers to each read: (table written by, read by) → rows."""

    latest: dict[tuple[str, str], list] = field(default_factory=dict)
    earlier: dict[tuple[str, str], list] = field(default_factory=dict)
    changelog: dict[tuple[str, str], dict] = field(default_factory=dict)

    def differing_keys(self) -> set[tuple]:
        """The (partition, key) pairs whose rows or changes are not the same in every answer."""
        keys: set[tuple] = set()
        for answers in (self.latest, self.earlier):
            per_answer = []
            for rows in answers.values():
                by_key: dict[tuple, list] = {}
                for row in rows:
                    by_key.setdefault((row[0], row[1]), []).append(row)
                per_answer.append(by_key)
            for key in set().union(*per_answer):
                if len({repr(a.get(key)) for a in per_answer}) > 1:
                    keys.add(key)
        per_answer = list(self.changelog.values())
        for key in set().union(*per_answer) if per_answer else ():
            if len({repr(a.get(key)) for a in per_answer}) > 1:
                keys.add(key)
        return keys

    def disagreements(self) -> list[str]:
        out = []
        for name, answers in (("latest", self.latest), ("earlier snapshot", self.earlier),
                              ("changelog", self.changelog)):
            if len({repr(v) for v in answers.values()}) > 1:
                shown = "\n".join(f"    table by {w}, read by {r}: {v}" for (w, r), v in answers.items())
                out.append(f"  {name} differs:\n{shown}")
        return out


def _canonical_rows(table: pa.Table, value_columns: list[str]) -> list[tuple]:
    rows = table.select(value_columns).to_pylist()
    return sorted((tuple(r[c] for c in value_columns) for r in rows), key=repr)


def _per_key(table: pa.Table, kinds: list[str], value_columns: list[str]) -> dict:
    """A changelog as each key's ordered list of (kind, values)."""
    out: dict[tuple, list] = {}
    for kind, row in zip(kinds, table.select(value_columns).to_pylist(), strict=True):
        out.setdefault((row["p"], row["k"]), []).append((kind, tuple(row[c] for c in value_columns)))
    return dict(sorted(out.items(), key=repr))


def run_case(case: Case, peer: JavaPeer, workdir: Path) -> Outcome:
    kind = case.kind
    schema = kind.schema()
    options = kind.options(case.buckets)
    identifier = "db.t"
    java_wh, our_wh = workdir / "java", workdir / "ours"
    peer.create_table(java_wh, identifier, schema, primary_keys=["p", "k"], partition_keys=["p"], options=options)
    for step in case.steps:
        if isinstance(step, Compact):
            peer.compact(java_wh, identifier, full=step.full)
        else:
            peer.write(java_wh, identifier, pa.Table.from_pylist(list(step.rows), schema=schema), kinds=step.kinds)
    peer.run()
    # the snapshot each write left (its APPEND, or the COMPACT its writer committed right after)
    java_after_write = [r["snapshot_id"] for r in peer.last_results if "snapshot_id" in r]

    catalog = Catalog(str(our_wh))
    catalog.create_database("db")
    ours = catalog.create_table(identifier, schema, primary_keys=["p", "k"], partition_keys=["p"], options=options)
    our_after_write = []
    for step in case.steps:
        if isinstance(step, Compact):
            ours.compact(full=step.full)
        else:
            ours.write(pa.Table.from_pylist(list(step.rows), schema=schema), row_kinds=list(step.kinds))
            our_after_write.append(ours.snapshot_manager.latest_id())
    ours = catalog.get_table(identifier)

    values = list(schema.names)
    outcome = Outcome()
    java_earlier = java_after_write[case.earlier_write]
    our_earlier = our_after_write[case.earlier_write]
    java_table = Catalog(str(java_wh)).get_table(identifier)
    reads = []
    for writer, wh, earlier in (("java", java_wh, java_earlier), ("ours", our_wh, our_earlier)):
        reads.append((writer, "latest", peer.read(wh, identifier)))
        if earlier is not None:
            reads.append((writer, "earlier", peer.read(wh, identifier, snapshot_id=earlier)))
        else:  # the write committed nothing (every row ignored): the table is still empty
            outcome.earlier[(writer, "java")] = []
        if kind.producer != "none":
            reads.append((writer, "changelog", peer.stream(
                wh, identifier, options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})))
    tables = peer.run()
    for writer, what, index in reads:
        table = tables[index]
        if what == "changelog":
            kinds = [KIND_NAMES[k] for k in table.column(KIND_COLUMN).to_pylist()]
            outcome.changelog[(writer, "java")] = _per_key(table, kinds, values)
        else:
            target = outcome.latest if what == "latest" else outcome.earlier
            target[(writer, "java")] = _canonical_rows(table, values)
    for writer, table, earlier in (("java", java_table, java_earlier), ("ours", ours, our_earlier)):
        outcome.latest[(writer, "ours")] = _canonical_rows(table.read(), values)
        outcome.earlier[(writer, "ours")] = (
            _canonical_rows(table.read(snapshot_id=earlier), values) if earlier is not None else [])
        if kind.producer != "none":
            latest = table.snapshot_manager.latest_id()
            if latest is None:
                outcome.changelog[(writer, "ours")] = {}
            else:
                changes = table.read_changes(0, latest, mode="changelog")
                outcome.changelog[(writer, "ours")] = _per_key(changes, changes.column("rowkind").to_pylist(), values)
    return outcome


# -- known Java 0.9 defects (fixed upstream): a disagreement they explain is set aside ------------


Key = tuple  # (partition value, key)


def _rows_of(case: Case, key: Key) -> list[list[tuple[str, dict[str, Any]]]]:
    """The (kind, row) pairs of ``key`` in each write that has any."""
    out = []
    for w in case.writes:
        rows = [(kind, row) for row, kind in zip(w.rows, w.kinds, strict=True) if (row["p"], row["k"]) == key]
        if rows:
            out.append(rows)
    return out


def _starts_a_write_with_a_retraction(case: Case, key: Key) -> bool:
    return any(rows[0][0] in RETRACTIONS for rows in _rows_of(case, key))


def _partial_update_retraction_first(case: Case, key: Key) -> bool:
    engine, deletes = case.kind.engine, case.kind.deletes
    return ((engine == "partial-update" and deletes == "remove") or engine == "partial-update-groups") \
        and _starts_a_write_with_a_retraction(case, key)


def _null_group_sequence_with_values(case: Case, key: Key) -> bool:
    return case.kind.engine == "partial-update-groups" and any(
        row["g"] is None and (row["a"] is not None or row["c"] is not None)
        for rows in _rows_of(case, key) for _, row in rows)


def _late_record_on_a_lookup_table(case: Case, key: Key) -> bool:
    """A row whose sequence field is below one an earlier write gave the key."""
    if not (case.kind.lookup and case.kind.sequence_field):
        return False
    highest = None
    for rows in _rows_of(case, key):
        if highest is not None and any(row["sq"] is not None and row["sq"] < highest for _, row in rows):
            return True
        seen = [row["sq"] for _, row in rows if row["sq"] is not None]
        if seen:
            highest = max(seen) if highest is None else max(highest, *seen)
    return False


def _removed_by_a_delete(case: Case, key: Key) -> bool:
    return case.kind.engine == "partial-update" and case.kind.deletes == "remove" and any(
        kind == "-D" for rows in _rows_of(case, key) for kind, _ in rows)


def _aggregation_retraction_first(case: Case, key: Key) -> bool:
    return case.kind.engine == "aggregation" and _starts_a_write_with_a_retraction(case, key)


@dataclass(frozen=True)
class KnownJavaDefect:
    """A Java 0.9 defect (fixed or changed upstream) and the keys of a case it can affect."""

    name: str
    reference: str
    affects: Callable[[Case, Key], bool]
    java_errors: tuple[str, ...] = ()  # Java exceptions it raises, for cases Java cannot finish


JAVA_09_RULES: tuple[KnownJavaDefect, ...] = (
    KnownJavaDefect(
        "partial-update merge starting with a retraction",
        "Java 0.9's PartialUpdateMergeFunction throws a NullPointerException or writes null key fields "
        "when the first record of a merge is -U/-D under partial-update.remove-record-on-delete or a "
        "sequence group; fixed upstream (apache/paimon#4247, #4344/#4345: PartialUpdateMergeFunction "
        "keeps the retraction's key fields and emits a DELETE row)",
        _partial_update_retraction_first, ("java.lang.NullPointerException",
                                            "java.util.concurrent.ExecutionException",
                                            # Java reading back the null it wrote into a key column
                                            "org.apache.paimon.shade.org.apache.parquet.io.ParquetDecodingException")),
    KnownJavaDefect(
        "single record passed through unmerged (null sequence group)",
        "Paimon's ReducerMergeFunctionWrapper returns a key's only record without calling the merge "
        "function, so a lone record whose sequence group is null keeps the group's fields while two "
        "records of the key drop them: Java's answer depends on how records meet in merges; "
        "paimonflow merges every key the same way",
        _null_group_sequence_with_values),
    KnownJavaDefect(
        "aggregation of a key whose merge starts with a retraction",
        "Java 0.9 passes a lone -U/-D through unmerged in sort-merge reads (ReducerMergeFunctionWrapper: "
        "the key disappears) but its lookup/deletion-vector compaction turns it into an insert "
        "(LookupChangelogMergeFunctionWrapper, changed upstream), so its answer depends on when it "
        "compacted; paimonflow keeps a lone retraction a retraction on every path",
        _aggregation_retraction_first),
    KnownJavaDefect(
        "lookup compaction ties and reads stale",
        "Java 0.9's lookup compaction gives a key's merged row the sequence number of the record that "
        "wins by sequence.field; after a late record (lower sequence field) the merged row and the "
        "older higher-level row tie, and Java's reader may keep the stale one (its lowest-level pick "
        "was fixed upstream: LookupMergeFunction / KeyValueBuffer)",
        _late_record_on_a_lookup_table),
    KnownJavaDefect(
        "partial-update remove-record-on-delete swallows the -D",
        "Java 0.9's PartialUpdateMergeFunction.getResult returns null for a merge ending in -D under "
        "remove-record-on-delete, so the delete never reaches a file and the old row stays; fixed "
        "upstream (apache/paimon#4344/#4345: a DELETE row is emitted; the NullPointerException of a "
        "record after the -D: apache/paimon#4247)",
        _removed_by_a_delete, ("java.lang.NullPointerException", "java.util.concurrent.ExecutionException")),
)


def explain(case: Case, keys: set[Key] | None, java_error: str | None = None) -> KnownJavaDefect | None:
    """The known Java 0.9 defect that explains every differing key of ``case`` (or, when Java
    failed, the defect that raises ``java_error`` on a key of the case); None if there is none."""
    all_keys = {(row["p"], row["k"]) for w in case.writes for row in w.rows}

    def affects(rule: KnownJavaDefect, key: Key) -> bool:
        # a row whose key fields read null (Java wrote null keys) can be any key of the case
        if any(part is None for part in key):
            return any(rule.affects(case, k) for k in all_keys)
        return rule.affects(case, key)

    for rule in JAVA_09_RULES:
        if java_error is not None:
            if java_error in rule.java_errors and any(rule.affects(case, k) for k in all_keys):
                return rule
        elif keys and all(affects(rule, k) for k in keys):
            return rule
    # keys explained by different rules
    if java_error is None and keys and all(any(affects(r, k) for r in JAVA_09_RULES) for k in keys):
        return next(r for r in JAVA_09_RULES if any(affects(r, k) for k in keys))
    return None


def verdict(case: Case, peer: JavaPeer, workdir: Path) -> tuple[str, str]:
    """Run ``case`` on both engines: ("agreed", ""), ("set aside", rule name) when a known Java 0.9
    defect explains a disagreement or a Java failure, or ("differs", the report)."""
    from .java_peer import JavaPeerError

    try:
        outcome = run_case(case, peer, workdir)
    except JavaPeerError as exc:
        problems = [f"  Java failed: {exc.error_type}: {exc.java_message}"]
        rule = explain(case, None, java_error=exc.error_type)
    else:
        problems = outcome.disagreements()
        if not problems:
            return "agreed", ""
        rule = explain(case, outcome.differing_keys())
    if rule is not None:
        return "set aside", rule.name
    return "differs", case.describe() + "\n" + "\n".join(problems)
