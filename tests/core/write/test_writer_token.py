"""A job's token in its writers' file names (``core/write/writer_token.py``): the driver of an
interrupted Spark write finds exactly the files its tasks wrote, in every partition and bucket,
and nothing another writer wrote."""

from __future__ import annotations

import uuid

import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core.write.writer_token import files_of_token, mark, new_token, writer_id

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def _rows(ids, dt):
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def test_the_tokens_files_are_found_and_no_others(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "4", "file-index.bloom-filter.columns": "v",
                                          "file-index.in-manifest-threshold": "1 b"})
    table.write(_rows(list(range(100)), "a"))  # committed by another writer
    token = new_token()
    written = []
    for task in range(2):  # two tasks of one job, one uncommitted file set each
        writer = table.new_write(file_token=token, compact=False, sequence_stride=2, sequence_offset=task)
        writer.write(_rows(list(range(task, 400, 2)), "a" if task else "b"))
        written += [f.file_name for message in writer.prepare_commit() for f in message.all_written_files()]
        writer.close()
    found = files_of_token(table, token)
    names = {path.rsplit("/", 1)[-1] for path in found}
    assert len(written) >= 2 and set(written) <= names  # each data file of the job (and any index file)
    assert all(mark(token) in path.rsplit("/", 1)[-1] for path in found)
    assert not set(found) & {str(p) for p in (tmp_path / "wh").rglob("*") if "data-" in p.name
                             and mark(token) not in p.name}
    assert files_of_token(table, new_token()) == []


def test_a_tokens_writer_id_is_a_uuid_that_begins_with_it():
    token = new_token()
    ids = {writer_id(token) for _ in range(50)}
    assert len(ids) == 50 and all(str(uuid.UUID(i)) == i and i.startswith(mark(token)) for i in ids)
    assert not writer_id(None).startswith(mark(token))
