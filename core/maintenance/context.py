"""What maintenance and compaction need of a table beyond its metadata: its read path (plans and
split readers) and its write path (writers and committers). :class:`TableOps` extends
:class:`~paimonflow.core.meta.context.TableMeta`; :class:`paimonflow.core.table.Table` satisfies
both, and the type checker holds every maintenance and compaction function to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..meta.context import TableMeta

if TYPE_CHECKING:
    from ..meta.snapshots import Snapshot
    from ..predicate import Predicate
    from ..read.scan import Split, SplitReader
    from ..write.commit import CommitResult, TableCommit
    from ..write.table_write import TableWrite


class TableOps(TableMeta, Protocol):
    """A table branch's metadata plus its read and write paths."""

    def plan(self, *, filter: Predicate | None = ..., snapshot_id: int | None = ...,
             read_optimized: bool = ..., all_levels: bool = ...) -> list[Split]: ...

    def split_reader(self) -> SplitReader: ...

    def new_write(self, *, spill_dir: str | None = ..., overwrite: bool = ..., sequence_stride: int = ...,
                  sequence_offset: int = ..., compact: bool = ..., commit_user: str | None = ...,
                  postpone_buckets: int | None = ...) -> TableWrite: ...

    def new_commit(self, commit_user: str | None = ..., *,
                   clock: Callable[[], float] | None = ...) -> TableCommit: ...

    def index_files_of(self, snapshot: Snapshot | None, index_type: str) -> dict[Any, Any]: ...

    def drop_partitions(self, partitions: Sequence[Mapping[str, object]], *,
                        commit_user: str | None = ...) -> CommitResult: ...
