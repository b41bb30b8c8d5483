"""Writers that share buckets (Spark tasks) interleave sequence numbers and never collide; the
compaction plan/run/commit pieces a distributed job uses give what ``Table.compact`` gives."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.compact.dedicated import commit_compaction, plan_compaction, run_compaction_task
from paimonflow.core.errors import InvalidArgumentError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def table(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"})


def test_parallel_writers_of_one_bucket_never_share_a_sequence_number(table):
    messages = []
    for task in range(3):  # three tasks, each writing every key once, committed together
        with table.new_write(sequence_stride=3, sequence_offset=task) as w:
            w.write(pa.table({"id": list(range(10)), "v": [f"t{task}"] * 10}, schema=SCHEMA))
            messages += w.prepare_commit()
    table.new_commit().commit(messages)
    import glob

    import pyarrow.parquet as pq

    total = 0
    for bucket in (0, 1):  # sequence numbers are per bucket
        numbers = []
        for path in glob.glob(f"{table.path}/bucket-{bucket}/*.parquet"):
            numbers += pq.read_table(path, columns=["_SEQUENCE_NUMBER"]).column(0).to_pylist()
        assert len(numbers) == len(set(numbers))
        assert sorted(n % 3 for n in numbers) == sorted([0, 1, 2] * (len(numbers) // 3))  # task p: p mod 3
        total += len(numbers)
    assert total == 30
    # a later writer continues above every task's numbers
    table.write(pa.table({"id": [1], "v": ["later"]}, schema=SCHEMA))
    got = {r["id"]: r["v"] for r in table.read().to_pylist()}
    assert got[1] == "later" and set(got.values()) - {"later"} == {"t2"}  # highest offset numbers last


def test_bad_stride_is_refused(table):
    with pytest.raises(InvalidArgumentError):
        table.new_write(sequence_stride=2, sequence_offset=2)


def test_plan_run_commit_equals_compact(table):
    for i in range(4):
        table.write(pa.table({"id": [i, i + 10], "v": [f"w{i}"] * 2}, schema=SCHEMA))
    before = table.read().sort_by("id")
    plan = plan_compaction(table, full=True, commit_user="job", commit_identifier=7)
    assert len(plan.tasks) == 2 and plan.done is None
    tasks = [pickle.loads(pickle.dumps(t)) for t in plan.tasks]  # as shipped to executors
    messages = [pickle.loads(pickle.dumps(run_compaction_task(table, t))) for t in tasks]
    result = commit_compaction(table, plan, messages)
    assert result.snapshot_id == 5 and result.files_read == sum(len(t.split.files) for t in plan.tasks)
    assert table.read().sort_by("id").equals(before)
    again = plan_compaction(table, full=True, commit_user="job", commit_identifier=7)
    assert again.done is not None and again.done.already_committed and again.done.snapshot_id == 5
