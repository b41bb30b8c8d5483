"""The randomized differential test against Apache Paimon's Java core (tests/interop/differential.py).

Fast tier (``make test``): a fixed, derandomized set of 3 cases per table kind. Long tier
(``make differential-long``, and ``make reliability-long``): 30 fresh random cases per kind;
``PAIMONFLOW_DIFFERENTIAL_CASES=N`` sets another number. Counts per
table kind are recorded through the reliability programme's ``reliability`` fixture.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidOptionError
from paimonflow.core.options.core import CoreOptions

from .differential import TableKind, all_table_kinds, cases, creation_errors, verdict
from .java_peer import JavaPeer, JavaPeerError

pytestmark = [pytest.mark.interop, pytest.mark.java, pytest.mark.slow]


def _accepted_by_us(kind: TableKind) -> bool:
    """Whether paimonflow creates the kind: the option rules table creation applies."""
    try:
        CoreOptions.from_map(kind.options(1)).check_combinations()
    except InvalidOptionError:
        return False
    return True


KINDS = all_table_kinds()
VALID_KINDS = [k for k in KINDS if _accepted_by_us(k)]


def test_both_engines_accept_and_refuse_the_same_table_kinds(java_peer: JavaPeer, tmp_path: Path) -> None:
    """Every combination of merge engine, sequence field, deletion vectors, changelog producer and
    delete handling is created by both engines or refused by both (Paimon's SchemaValidation)."""
    disagreements = []
    for i, kind in enumerate(KINDS):
        java_error, our_error = creation_errors(kind, java_peer, tmp_path / str(i))
        if (java_error is None) != (our_error is None):
            disagreements.append(f"{kind.name}: Java {java_error or 'accepts'}; ours {our_error or 'accepts'}")
    assert disagreements == []
    assert 20 <= len(VALID_KINDS) < len(KINDS)


def test_sequence_groups_with_remove_record_on_delete_are_refused_by_both(java_peer: JavaPeer, tmp_path) -> None:
    """Java refuses the combination when it builds the merge function (the first write), we at creation."""
    kind = TableKind("partial-update-groups", False, False, "none", "remove")
    schema = kind.schema()
    java_peer.create_table(tmp_path / "java", "db.t", schema, primary_keys=["p", "k"], partition_keys=["p"],
                           options=kind.options(1))
    java_peer.write(tmp_path / "java", "db.t", pa.Table.from_pylist(
        [{"p": "x", "k": 1, "a": 1, "c": None, "e": None, "g": 1}], schema=schema))
    with pytest.raises(JavaPeerError, match="conflicting behavior"):
        java_peer.run()
    catalog = Catalog(str(tmp_path / "ours"))
    catalog.create_database("db")
    with pytest.raises(InvalidOptionError, match="sequence groups"):
        catalog.create_table("db.t", schema, primary_keys=["p", "k"], partition_keys=["p"], options=kind.options(1))


@pytest.mark.parametrize("kind", VALID_KINDS, ids=[k.name for k in VALID_KINDS])
def test_random_operation_sequences_agree(kind: TableKind, java_peer: JavaPeer, reliability) -> None:
    """Both engines run the same random operations from scratch; both tables read by both engines
    agree at the latest snapshot, at an earlier write's snapshot, and in their changelogs."""
    examples = int(os.environ.get("PAIMONFLOW_DIFFERENTIAL_CASES", 0)) or reliability.scale(3, 30)
    counts = {"cases": 0, "agreed": 0, "set_aside": 0}
    rules: dict[str, int] = {}

    @settings(max_examples=examples, deadline=None, derandomize=not reliability.long, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(case=cases(kind))
    def check(case) -> None:
        workdir = Path(tempfile.mkdtemp(prefix="differential-"))
        try:
            result, detail = verdict(case, java_peer, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        counts["cases"] += 1
        if result == "differs":
            raise AssertionError("paimonflow and Java Paimon 0.9 disagree:\n" + detail)
        counts["agreed" if result == "agreed" else "set_aside"] += 1
        if result == "set aside":
            rules[detail] = rules.get(detail, 0) + 1

    try:
        check()
    finally:
        reliability.record(differential_cases=counts["cases"], differential_agreed=counts["agreed"],
                           differential_set_aside=counts["set_aside"],
                           **{f"set_aside: {name}": n for name, n in rules.items()})
    assert counts["cases"] >= min(examples, 1)
