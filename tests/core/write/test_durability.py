"""Every data file a commit names is durable before the snapshot is published: files stored
whole are written to a fsynced temp file and renamed, and files streamed row group by row group
(the k-way merge of spilled runs) are synced once closed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core.fs import LocalFileIO


class SyncRecordingFileIO(LocalFileIO):
    """The local file system, recording which paths were synced after a streamed write."""

    def __init__(self) -> None:
        super().__init__()
        self.synced: list[str] = []

    def sync(self, path: str) -> None:
        super().sync(path)
        self.synced.append(path.rsplit("/", 1)[-1])


def test_streamed_data_files_are_synced_before_the_commit(tmp_path):
    fileio = SyncRecordingFileIO()
    catalog = Catalog(str(tmp_path / "wh"), file_io=fileio)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = catalog.create_table("db.t", schema, primary_keys=["id"],
                                 options={"bucket": "1", "write-buffer-size": "1 mb", "write-only": "true"})
    rng = np.random.default_rng(5)
    batches = [pa.table({"id": rng.integers(0, 200_000, 50_000), "v": ["x" * 20] * 50_000}, schema=schema)
               for _ in range(6)]
    with table.new_write() as writer:
        writer.write(iter(b for t in batches for b in t.to_batches()))
        assert writer.spilled_runs > 0, "the buffer spilled: the flush streams the merged runs"
        messages = writer.prepare_commit()
    named = {f.file_name for m in messages for f in m.new_files}
    assert named and named <= set(fileio.synced)
    table.new_commit().commit(messages)
    assert table.read().num_rows == len(np.unique(np.concatenate([t.column("id").to_numpy() for t in batches])))
