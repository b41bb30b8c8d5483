"""A Paimon table: the public face for writing, reading, time travel and inspection."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import cache, cached_property, partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .data.binary_row import deserialize_row, serialize_row
from .data.conversion import bind_predicate, field_types
from .errors import (
    BranchNotFoundError,
    CommitOutcomeUnknownError,
    InvalidArgumentError,
    InvalidOptionError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
    UnsupportedError,
    note_files_removed,
)
from .fs import FileIO, join
from .meta.capabilities import Operation, TableCapabilities, require_file_metadata
from .meta.consumers import ConsumerManager
from .meta.context import TableMeta
from .meta.layout import MAIN_BRANCH
from .meta.manifest_io import ManifestIO
from .meta.schema import TableSchema
from .meta.schema_manager import SchemaManager
from .meta.snapshots import CommitKind, Snapshot, SnapshotManager
from .meta.tags import TagManager
from .names import validate_name
from .options.core import CoreOptions
from .options.registry import MergeEngine
from .predicate import Predicate
from .read.evolution import schema_for_time_travel
from .read.lazy_scan import TableScan
from .read.scan import ScanPlanner, Split, SplitReader
from .write.commit import BATCH_COMMIT_IDENTIFIER, CommitResult, OverwriteSpec, TableCommit, new_commit_user
from .write.signals import signals_deferred
from .write.table_write import TableWrite


class Table:
    """One table of a warehouse, seen through one branch (``main`` unless opened as ``db.t$branch_b``).

    Obtain it from :class:`~paimonflow.core.catalog.Catalog`. The object holds the schema it was
    opened with; ``refresh()`` returns a new object after schema changes by others.
    """

    def __init__(self, *, file_io: FileIO, path: str, identifier: str, schema: TableSchema,
                 branch: str = MAIN_BRANCH) -> None:
        self.file_io, self.path, self.identifier, self.schema = file_io, path, identifier, schema
        self.branch = validate_name("branch", branch)
        # Snapshots, schemas, tags and consumers are per branch; data files, manifests, index and
        # statistics files of every branch live in the table's own directories.
        self.schema_manager = SchemaManager(file_io, path, branch)
        try:
            self.options = CoreOptions.from_map(schema.options)
        except InvalidOptionError as exc:  # a bad option in a schema file: say which file holds it
            raise InvalidOptionError(exc.key, exc.value,
                                     f"{exc.reason} (in {self.schema_manager.path(schema.id)})") from None
        self.snapshot_manager = SnapshotManager(file_io, path, branch)
        self.tag_manager = TagManager(file_io, path, branch)
        self.consumer_manager = ConsumerManager(file_io, path, branch)
        self.manifest_io = ManifestIO(file_io=file_io, table_path=path, schema=schema, options=self.options)
        #: what paimonflow may do with this table (the capability gate, decided once per open)
        self.capabilities = TableCapabilities.of(identifier, schema.options, path)

    def __repr__(self) -> str:
        branch = "" if self.branch == MAIN_BRANCH else f", branch={self.branch!r}"
        return f"Table({self.identifier!r}, path={self.path!r}, schema_id={self.schema.id}{branch})"

    # -- facts -------------------------------------------------------------------------------

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return tuple(self.schema.primary_keys)

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return tuple(self.schema.partition_keys)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    def refresh(self) -> Table:
        """This table with its latest schema. Raises :class:`TableNotFoundError` (or
        :class:`BranchNotFoundError`) if it has been dropped (or its branch deleted) since."""
        schema = self.schema_manager.latest()
        if schema is None:
            if self.branch == MAIN_BRANCH:
                raise TableNotFoundError(f"table {self.identifier!r} no longer exists")
            raise BranchNotFoundError(f"branch {self.branch!r} of table {self.identifier!r} no longer exists")
        return Table(file_io=self.file_io, path=self.path, identifier=self.identifier, schema=schema,
                     branch=self.branch)

    # -- branches ----------------------------------------------------------------------------

    @property
    def branches(self):
        """Branch operations: create (empty or from a tag), delete, list, fast-forward
        (:class:`~paimonflow.core.maintenance.branches.BranchManager`)."""
        from .maintenance.branches import BranchManager

        return BranchManager(self)

    def switch_to_branch(self, branch: str) -> Table:
        """The same table seen through ``branch`` (``"main"`` for the main branch): its own
        snapshots, schemas, tags and consumers; reads and writes go to that branch."""
        from .maintenance.branches import open_branch

        return open_branch(self, branch)

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def _schema_by_id(self, schema_id: int) -> TableSchema:
        return self._schema_cache(schema_id)

    @cached_property
    def _schema_cache(self):
        @cache
        def load(schema_id: int) -> TableSchema:
            return self.schema if schema_id == self.schema.id else self.schema_manager.schema(schema_id)

        return load

    # -- writing -----------------------------------------------------------------------------

    def new_write(self, *, spill_dir: str | None = None, overwrite: bool = False, sequence_stride: int = 1,
                  sequence_offset: int = 0, compact: bool = True, commit_user: str | None = None,
                  postpone_buckets: int | None = None, file_token: str | None = None) -> TableWrite:
        """A writer producing commit messages (for distributed writers: one per task).

        It starts from the latest snapshot: sequence numbers continue there, and a writer that
        compacts (not ``write-only``) knows the bucket files it may compact. ``spill_dir`` is
        the local directory for spilled sorted runs (default: the system temp directory).
        A writer for an ``overwrite`` commit starts from nothing and never compacts.
        ``sequence_stride``/``sequence_offset``: writer ``p`` of ``n`` parallel writers that may
        share buckets (Spark tasks) passes ``n``/``p`` so their sequence numbers never collide;
        such writers pass ``compact=False`` too (two writers must never compact one bucket).
        A postpone-bucket table's writer (``bucket = -2``) writes every row to the postpone bucket
        and never compacts; ``commit_user`` (the committer's) names its files as Paimon's.
        ``postpone_buckets`` makes instead a writer of that many real buckets of a postpone-bucket
        table, that compacts (the postpone compaction's: :mod:`paimonflow.core.compact.postpone`).
        ``file_token`` (16 hex digits) marks every file name of the writer as one of a job's
        (:mod:`paimonflow.core.write.writer_token`), so its driver can find them without messages.
        """
        from .write.postpone import is_postpone, real_bucket_options

        self.capabilities.require(Operation.WRITE)
        latest = self.snapshot_manager.latest()
        options = self.options
        if postpone_buckets is not None:
            options = real_bucket_options(options, postpone_buckets)
        # unaware-bucket append writers, overwrite writers and postpone writers never compact
        compacting = ((bool(self.primary_keys) or options.bucket > 0) and not overwrite and compact
                      and not is_postpone(options))
        start = SnapshotStart(self, latest, overwrite=overwrite)
        return TableWrite(file_io=self.file_io, table_path=self.path, schema=self.schema, options=options,
                          start=start, compactor_factory=start.compactor if compacting else None,
                          spill_dir=spill_dir, sequence_stride=sequence_stride, sequence_offset=sequence_offset,
                          commit_user=commit_user, file_token=file_token)

    def new_commit(self, commit_user: str | None = None, *, clock: Callable[[], float] | None = None) -> TableCommit:
        """A committer for messages of :meth:`new_write` (one per job, on the driver).

        Each of its commits that creates a snapshot then runs the table's maintenance (tags,
        expiry; :mod:`paimonflow.core.maintenance.post_commit`) unless the table is ``write-only``. ``clock``
        (seconds, default ``time.time``) stamps snapshots and drives that maintenance.
        """
        from .maintenance.post_commit import maintain_after_commit

        self.capabilities.require(Operation.WRITE)
        user = validate_name("commit user", commit_user) if commit_user is not None else new_commit_user(
            self.options.commit_user_prefix)
        now = clock or time.time
        return TableCommit(file_io=self.file_io, table_path=self.path, schema=self.schema, options=self.options,
                           snapshot_manager=self.snapshot_manager, manifest_io=self.manifest_io, commit_user=user,
                           clock=now, after_commit=lambda _: maintain_after_commit(self, clock=now))

    def write(self, data, *, overwrite: bool | Mapping[str, object] | Predicate = False, row_kinds=None,
              commit_user: str | None = None, commit_identifier: int | None = None,
              schema_mode: str = "strict") -> CommitResult:
        """Write ``data`` as one commit: a pyarrow Table, RecordBatch or RecordBatchReader, an
        iterable of batches, a pandas DataFrame (its index left out) or a polars DataFrame or
        LazyFrame. Columns are matched by name; each is converted to the table's type only where
        no value changes (integer widening, or narrowing when every value fits; decimal scale
        up; timestamp precision up...: :mod:`paimonflow.core.data.conversion` has the table).
        Anything else (numbers into strings, strings into numbers, a value that does not fit)
        raises one :class:`~paimonflow.core.errors.SchemaError` naming every offending column
        with its type and the table's, and nothing is written.

        ``overwrite=True`` replaces the partitions present in ``data`` (``dynamic-partition-overwrite``,
        the default) or the whole table; ``overwrite={"dt": "2026-11-21"}`` replaces that partition.
        ``row_kinds`` gives each row's kind (``"+I"``, ``"-U"``, ``"+U"``, ``"-D"``; one string or one
        per row) for primary-key tables; ``rowkind.field`` does the same from a column.
        ``overwrite=col("dt").between("2026-11-01", "2026-11-07")`` replaces every partition whose
        values satisfy the predicate (on partition columns only), and ``data`` must lie within it.
        With ``commit_user`` and ``commit_identifier`` the commit is exactly-once: repeating it
        commits nothing and reports the existing snapshot.

        On any exception before the commit (``KeyboardInterrupt`` and the command line's SIGTERM
        included) the writer stops between files and batches and deletes every file it wrote
        (:meth:`TableWrite.abort`), then the exception goes on. SIGINT and SIGTERM arriving during
        the commit are held back until it has ended (:func:`~paimonflow.core.write.signals.signals_deferred`,
        in the main thread): the commit lands or fails on its own, and the interrupt is raised
        after it. When the commit failed, its files are deleted only if storage shows it did not
        land (never after ``CommitOutcomeUnknownError``); after it landed nothing is deleted.

        ``schema_mode="merge"`` evolves the schema from the data first (new nullable columns
        added, safe widenings applied, the table's nullable columns the data lacks written as
        null; anything else refused in one line with nothing changed:
        :mod:`paimonflow.core.write.evolve`). The data is checked against the new schema before
        it is committed; :meth:`refresh` gives the table with it.
        """
        from .write.evolve import SCHEMA_MODES

        if schema_mode not in SCHEMA_MODES:
            raise InvalidArgumentError(f"schema_mode must be one of {', '.join(SCHEMA_MODES)}, not {schema_mode!r}")
        if schema_mode == "merge":
            return self._write_merging_schema(data, overwrite=overwrite, row_kinds=row_kinds,
                                              commit_user=commit_user, commit_identifier=commit_identifier)
        self.capabilities.require(Operation.WRITE)
        spec = self.overwrite_spec(overwrite)  # checked before any file is written
        if spec is not None and self.options.bucket == -1 and self.primary_keys \
                and not set(self.partition_keys) <= set(self.primary_keys):
            raise UnsupportedError("overwrite of a cross-partition upsert table is not supported yet")
        committer = self.new_commit(commit_user)
        identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
        existing = committer.already_committed(identifier)
        if existing is not None:
            return committer.commit([], commit_identifier=identifier)
        before = self.snapshot_manager.latest_id() or 0
        writer = self.new_write(overwrite=spec is not None, commit_user=committer.commit_user)
        messages = None
        try:
            messages = writer.write_all(data, row_kinds=row_kinds)
            writer.close()
            with signals_deferred():  # never cut in half: an interrupt comes once it has landed or failed
                result = committer.commit(messages, commit_identifier=identifier, overwrite=spec)
        except CommitOutcomeUnknownError:
            raise  # the snapshot may reference these files: never delete them
        except BaseException as exc:  # Ctrl-C and SIGTERM (Interrupted) included
            if messages is None or self.known_not_committed(committer.commit_user, identifier, after=before):
                note_files_removed(exc, writer.abort(include_prepared=True))
            raise
        finally:
            writer.close()
        from .maintenance.post_commit import after_batch_write

        return after_batch_write(self, result)  # tag.automatic-creation=batch

    def _write_merging_schema(self, data, *, overwrite, row_kinds, commit_user: str | None,
                              commit_identifier: int | None) -> CommitResult:
        from .data.conversion import field_types
        from .write.conform import conform, to_arrow_table
        from .write.evolve import merge_changes, merged_schema, with_missing_columns_as_null

        self.capabilities.require(Operation.WRITE)
        frame = to_arrow_table(data)
        table: Table = self
        already = commit_identifier is not None and commit_user is not None and \
            self.new_commit(commit_user).already_committed(int(commit_identifier)) is not None
        changes = [] if already else merge_changes(self.schema, frame.schema, identifier=self.identifier)
        if changes:
            new = merged_schema(self.schema, changes)
            self.overwrite_spec(overwrite)  # a bad overwrite is refused before the schema changes
            # the values must fit the new schema (types, nulls in NOT NULL columns) before it is committed
            conform(with_missing_columns_as_null(frame, new.arrow_schema()), new.arrow_schema(),
                    list(new.primary_keys), table_types=field_types(new.fields))
            table = self.alter(changes)
        return table.write(with_missing_columns_as_null(frame, table.arrow_schema), overwrite=overwrite,
                           row_kinds=row_kinds, commit_user=commit_user, commit_identifier=commit_identifier)

    def committed_snapshot(self, commit_user: str, commit_identifier: int, *, after: int = 0,
                           kinds: Sequence[CommitKind] = (CommitKind.APPEND, CommitKind.OVERWRITE)) -> Snapshot | None:
        """The snapshot of one of ``kinds`` committed by ``commit_user`` with ``commit_identifier``
        after snapshot ``after``, or None: how a writer interrupted around its commit learns
        whether it landed."""
        for kind in kinds:
            found = self.snapshot_manager.find_by_commit(commit_user, commit_identifier, kind, after + 1)
            if found is not None:
                return found
        return None

    def known_not_committed(self, commit_user: str, commit_identifier: int, *, after: int,
                            kinds: Sequence[CommitKind] = (CommitKind.APPEND, CommitKind.OVERWRITE)) -> bool:
        """True only when storage shows no such commit after snapshot ``after`` (a failed lookup
        is not knowing: False). Only then may a failed writer delete the files of its messages."""
        return self.snapshot_manager.known_not_committed(commit_user, commit_identifier, tuple(kinds), after=after)

    def delta_stats(self, snapshot_id: int):
        """Rows, files and bytes snapshot ``snapshot_id``'s commit added and deleted
        (:class:`~paimonflow.core.meta.manifest_io.DeltaStats`)."""
        return self.manifest_io.delta_stats(self.snapshot_manager.snapshot(snapshot_id))

    def overwrite_spec(self, overwrite: bool | Mapping[str, object] | Predicate) -> OverwriteSpec | None:
        """What a commit with ``overwrite`` replaces: None (append), the whole table or the
        partitions the rows touch (``True``, as ``dynamic-partition-overwrite`` says), a static
        partition spec (checked against the partition keys), or the partitions a predicate on the
        partition columns selects. For engines that commit themselves."""
        if overwrite is False or overwrite is None:
            return None
        if overwrite is True:
            return OverwriteSpec(dynamic=self.options.dynamic_partition_overwrite and bool(self.partition_keys))
        if isinstance(overwrite, Predicate):
            outside = sorted(overwrite.fields() - set(self.partition_keys))
            if outside:
                from .errors import SchemaError

                raise SchemaError(f"an overwrite predicate may only name partition columns; {outside} are not "
                                  f"(partition keys are {list(self.partition_keys)})")
            return OverwriteSpec(where=self.bind(overwrite))
        unknown = [k for k in overwrite if k not in self.partition_keys]
        if unknown:
            from .errors import SchemaError

            raise SchemaError(f"overwrite partition spec names non-partition columns {unknown}; "
                              f"partition keys are {list(self.partition_keys)}")
        self._check_partition_values(overwrite)
        return OverwriteSpec(static=dict(overwrite))

    def _check_partition_values(self, spec: Mapping[str, object]) -> None:
        """A partition spec's values fit their columns' types: text (as a command line gives it,
        compared as Paimon renders the partition) or a value of the column's own type; an int for
        a STRING column is a type error, not a spec that matches no partition."""
        import pyarrow as pa

        from .data.conversion import field_types
        from .errors import SchemaError

        types = field_types(self.schema.fields)
        for key, value in spec.items():
            if value is None or isinstance(value, str):
                continue
            arrow_type = self.arrow_schema.field(key).type
            try:
                if isinstance(value, bool) and not pa.types.is_boolean(arrow_type):
                    raise TypeError
                pa.array([value], type=arrow_type)
            except (TypeError, ValueError, pa.ArrowException):
                raise SchemaError(f"overwrite partition value {key}={value!r} ({type(value).__name__}) does not fit "
                                  f"column {key!r} of type {types[key]}: give a value of that type or its text") from None

    def truncate(self, *, commit_user: str | None = None, commit_identifier: int | None = None) -> CommitResult:
        """Delete every row (an OVERWRITE snapshot with no new files); exactly-once with a commit identity."""
        self.capabilities.require(Operation.WRITE)
        identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
        return self.new_commit(commit_user).commit([], commit_identifier=identifier, overwrite=OverwriteSpec())

    def delete(self, where: Predicate, *, commit_user: str | None = None,
               commit_identifier: int | None = None) -> CommitResult | None:
        """Delete the rows ``where`` selects, as one commit of ``-D`` rows (Paimon's row-level
        DELETE on a primary-key table): the matching rows are read (pruned by partitions and
        statistics, then filtered exactly) and written back as deletions. Only for primary-key
        tables whose merge engine removes a row on ``-D`` (``deduplicate``); others are refused
        in one line, as are append tables (use an overwrite of their partitions). None when no
        row matches (nothing is committed)."""
        from .errors import UnsupportedError

        self.capabilities.require(Operation.WRITE)
        if not self.primary_keys:
            raise UnsupportedError(f"table {self.identifier} has no primary key: rows of an append table cannot be "
                                   "deleted one by one; overwrite their partitions instead")
        engine = str(self.options.merge_engine)
        if engine != "deduplicate":
            raise UnsupportedError(f"table {self.identifier} has merge-engine '{engine}': a delete of rows is "
                                   "supported for 'deduplicate' tables")
        matching = self.read(filter=where)
        if matching.num_rows == 0:
            return None
        return self.write(matching, row_kinds="-D", commit_user=commit_user, commit_identifier=commit_identifier)

    def drop_partitions(self, partitions: Sequence[Mapping[str, object]], *, commit_user: str | None = None) -> CommitResult:
        """Delete whole partitions in one OVERWRITE snapshot (Paimon's ``dropPartitions``)."""
        if not partitions:
            raise InvalidArgumentError("no partitions given")
        return self.new_commit(commit_user).commit(
            [], overwrite=OverwriteSpec(drop=tuple(dict(spec) for spec in partitions)))

    def compact(self, *, full: bool = True, partitions: Sequence[Mapping[str, object]] | None = None,
                buckets: Sequence[int] | None = None, commit_user: str | None = None,
                commit_identifier: int | None = None):
        """Dedicated compaction of the chosen partitions/buckets as one COMPACT snapshot.

        ``full=True`` makes every bucket one sorted run at the top level; ``full=False`` runs
        Paimon's universal compaction once per bucket (primary-key tables): it compacts only the
        buckets whose sorted runs call for it, upgrading large non-overlapping files without
        rewriting them. Returns a :class:`~paimonflow.core.compact.dedicated.CompactionResult`.
        Exactly-once with a commit identity, like :meth:`write`. On a postpone-bucket table
        (``bucket = -2``) this is Paimon's postpone compaction instead (``full`` does not apply;
        partitions and buckets are refused): :mod:`paimonflow.core.compact.postpone`.
        """
        from .compact.dedicated import full_compaction, minor_compaction
        from .maintenance.post_commit import forced_maintenance
        from .write.postpone import is_postpone

        run = full_compaction if full else minor_compaction
        if buckets is not None and not is_postpone(self.options):
            self._check_buckets(buckets)
        if is_postpone(self.options):  # Paimon's compaction of a postpone table assigns buckets
            from .compact.postpone import postpone_compaction as run
        with forced_maintenance():  # a dedicated compaction maintains even write-only tables, as in Paimon
            return run(self, partitions=partitions, buckets=buckets, commit_user=commit_user,
                       commit_identifier=commit_identifier)

    def _check_buckets(self, buckets: Sequence[int]) -> None:
        """Buckets a caller named must exist: a bucket beyond the ``bucket`` option (and beyond
        every bucket a live file is in, for tables whose bucket count was changed) is an error,
        not a compaction that silently does nothing."""
        bad = sorted({repr(b) for b in buckets if isinstance(b, bool) or not isinstance(b, int) or b < 0})
        if bad:
            raise InvalidArgumentError(f"buckets are numbers from 0, not {', '.join(bad)}")
        count = self.options.bucket if self.options.bucket > 0 else (1 if not self.primary_keys else 0)
        beyond = sorted({b for b in buckets if count and b >= count})
        if not beyond:
            return
        latest = self.snapshot_manager.latest()
        live = {e.bucket for e in self.manifest_io.live_entries(latest)} if latest is not None else set()
        missing = [b for b in beyond if b not in live]
        if missing:
            what = f"'bucket' is {self.options.bucket}" if self.options.bucket > 0 else "it has no buckets but 0"
            raise InvalidArgumentError(f"table {self.identifier} has no bucket {missing[0]}: {what} "
                                       f"(buckets 0 to {count - 1})")

    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         older_than_millis: int | None = None, max_deletes: int | None = None,
                         dry_run: bool = False, clock=None, progress=None):
        """Expire old snapshots by the table's ``snapshot.*`` options (each overridable); returns
        an :class:`~paimonflow.core.maintenance.expire.ExpireResult`. ``dry_run`` plans without deleting.
        Tags and consumers protect what they reference. Safe to rerun after a crash."""
        import time

        from .maintenance.expire import expire_snapshots

        return expire_snapshots(self, retain_min=retain_min, retain_max=retain_max,
                                older_than_millis=older_than_millis, max_deletes=max_deletes, dry_run=dry_run,
                                clock=clock or time.time, progress=progress)

    def expire_changelogs(self, *, retain_min: int | None = None, retain_max: int | None = None,
                          older_than_millis: int | None = None, max_deletes: int | None = None,
                          delete_all: bool = False, dry_run: bool = False, clock=None):
        """Expire long-lived changelogs (``changelog/changelog-N``) by the ``changelog.*`` options,
        each overridable; ``delete_all`` removes every changelog of a table no longer decoupled
        (:func:`~paimonflow.core.maintenance.changelog_expire.expire_changelogs`)."""
        import time

        from .maintenance.changelog_expire import expire_changelogs

        return expire_changelogs(self, retain_min=retain_min, retain_max=retain_max,
                                 older_than_millis=older_than_millis, max_deletes=max_deletes,
                                 delete_all=delete_all, dry_run=dry_run, clock=clock or time.time)

    def remove_orphan_files(self, *, older_than_millis: int | None = None, dry_run: bool = False, clock=None,
                            min_older_than_millis: int = 0):
        """Delete files no snapshot or tag references, older than ``older_than_millis`` (default
        1 day); ``dry_run`` lists them; a window below ``min_older_than_millis`` is refused
        (:func:`~paimonflow.core.maintenance.orphans.remove_orphan_files`)."""
        import time

        from .maintenance.orphans import DEFAULT_OLDER_THAN_MILLIS, remove_orphan_files

        return remove_orphan_files(self, older_than_millis=DEFAULT_OLDER_THAN_MILLIS if older_than_millis is None
                                   else older_than_millis, dry_run=dry_run, clock=clock or time.time,
                                   min_older_than_millis=min_older_than_millis)

    def read_changes(self, start_snapshot: int, end_snapshot: int, *, mode: str = "auto",
                     columns: Sequence[str] | None = None) -> pa.Table:
        """Rows that changed after ``start_snapshot`` up to ``end_snapshot``, with a ``rowkind``
        column (+I/-U/+U/-D); ``mode`` auto, changelog, delta or diff (:mod:`paimonflow.core.read.incremental`)."""
        from .read.incremental import read_changes

        return read_changes(self, start_snapshot, end_snapshot, mode=mode, columns=columns)

    def expire_partitions(self, *, expiration_millis: int | None = None, dry_run: bool = False, clock=None,
                          commit_user: str | None = None):
        """Drop partitions older than ``partition.expiration-time`` by their values (or update
        time); see :mod:`paimonflow.core.maintenance.partition_expire`."""
        import time

        from .maintenance.partition_expire import expire_partitions

        return expire_partitions(self, expiration_millis=expiration_millis, dry_run=dry_run,
                                 clock=clock or time.time, commit_user=commit_user)

    def analyze(self, columns: Sequence[str] | None = None, *, commit_user: str | None = None):
        """Compute table statistics and commit them as an ANALYZE snapshot (:mod:`paimonflow.core.maintenance.statistics`)."""
        from .maintenance.statistics import analyze

        return analyze(self, columns, commit_user=commit_user)

    @property
    def tags(self):
        """Tag operations: create (from an id, the latest snapshot or a time), replace, rename,
        delete (freeing files of expired snapshots), list, expire (:class:`~paimonflow.core.maintenance.tags.Tags`)."""
        from .maintenance.tags import Tags

        return Tags(self)

    def run_auto_tag(self, *, clock: Callable[[], float] | None = None):
        """Create the automatic tags that are due now, as commits do (Paimon's
        ``trigger_tag_automatic_creation``): ``tag.automatic-creation`` ``process-time`` or
        ``watermark`` tag the periods that ended, ``batch`` (re)creates the batch tag, ``none``
        does nothing; ``tag.num-retained-max`` is applied. Creates no snapshot; idempotent.
        Returns an :class:`~paimonflow.core.maintenance.auto_tag.AutoTagResult`."""
        from .maintenance.auto_tag import run_auto_tag

        return run_auto_tag(self, clock=clock or time.time)

    def rollback(self, *, snapshot_id: int | None = None, tag: str | None = None,
                 timestamp_millis: int | None = None):
        """Roll back to a snapshot, a tag or a time; later snapshots and tags go and their ids are
        reused by the next commits (:func:`~paimonflow.core.maintenance.rollback.rollback`)."""
        from .maintenance.rollback import rollback

        return rollback(self, snapshot_id=snapshot_id, tag=tag, timestamp_millis=timestamp_millis)

    def compact_manifest(self, *, commit_user: str | None = None) -> CommitResult:
        """Merge every data manifest into one fully compacted base (a COMPACT snapshot that
        changes no rows); ``snapshot_id`` is None when there was nothing to merge."""
        return self.new_commit(commit_user).compact_manifest()

    # -- reading -----------------------------------------------------------------------------

    def resolve_snapshot(self, *, snapshot_id: int | None = None, tag: str | None = None,
                         timestamp: int | datetime | None = None) -> Snapshot | None:
        """The snapshot a read should use: latest by default, else by id, tag or time (at or before)."""
        given = sum(x is not None for x in (snapshot_id, tag, timestamp))
        if given > 1:
            raise InvalidArgumentError("give at most one of snapshot_id, tag and timestamp")
        if snapshot_id is not None:
            return self.snapshot_manager.snapshot(int(snapshot_id))
        if tag is not None:
            validate_name("tag", tag)
            try:
                return self.tag_manager.get(tag)
            except SnapshotNotFoundError as exc:
                raise TagNotFoundError(f"table {self.identifier} has no tag {tag!r}") from exc
        if timestamp is not None:
            millis = int(timestamp.timestamp() * 1000) if isinstance(timestamp, datetime) else int(timestamp)
            found = self.snapshot_manager.snapshot_at_or_before_time(millis)
            if found is None:
                at = datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="milliseconds")
                raise SnapshotNotFoundError(f"table {self.identifier} has no snapshot at or before {at}")
            return found
        return self.snapshot_manager.latest()

    def plan(self, *, filter: Predicate | None = None, snapshot_id: int | None = None, tag: str | None = None,
             timestamp: int | datetime | None = None, read_optimized: bool = False,
             all_levels: bool = False) -> list[Split]:
        """The splits a read of the chosen snapshot would read, after pruning by ``filter``.

        Tables with deletion vectors read only files above level 0 (each with its deletion
        vector), and so do first-row tables (as Paimon's batch scans: a key's first row is
        compacted up before it counts; a ``write-only`` writer's rows appear once a compaction
        moved them up); ``read_optimized`` reads only what needs no merging (primary-key tables without
        deletion vectors: the top level). ``all_levels`` plans every live file (compaction).
        Splits are planned for this table's schema (``filter`` names its columns), whatever
        schema the snapshot was committed under: they are what compaction, incremental reads
        and engines read with the table's columns. :meth:`read` and :meth:`to_batches` time
        travel with the snapshot's own schema.
        """
        self.capabilities.require(Operation.READ)
        snapshot = self.resolve_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        return self._plan_snapshot(snapshot, self.schema, self.options, filter=self.bind(filter),
                                   read_optimized=read_optimized, all_levels=all_levels)

    def bind(self, predicate: Predicate | None, schema: TableSchema | None = None) -> Predicate | None:
        """``predicate`` with its values converted exactly to the types of ``schema``'s columns
        (default: this table's), as every read, scan and overwrite does; raises
        :class:`~paimonflow.core.errors.SchemaError` naming the column, its type and the value's
        for a value that does not convert (:func:`~paimonflow.core.data.conversion.bind_predicate`).
        For engines that check a filter before they plan."""
        if predicate is None:
            return None
        schema = schema or self.schema
        return bind_predicate(predicate, schema.arrow_schema(), field_types(schema.fields))

    def _plan_snapshot(self, snapshot: Snapshot | None, schema: TableSchema, options: CoreOptions, *,
                       filter: Predicate | None, read_optimized: bool = False,
                       all_levels: bool = False) -> list[Split]:
        """:meth:`plan` of a resolved snapshot for a read with ``schema`` and ``options``."""
        if snapshot is None:
            return []
        entries = self.manifest_io.live_entries(snapshot, partition_filter=filter)
        require_file_metadata(self.identifier, (e.file for e in entries), Operation.READ)
        level_filter = None
        if not all_levels and schema.primary_keys:
            if options.deletion_vectors or options.merge_engine is MergeEngine.FIRST_ROW:
                # Paimon's batchScanSkipLevel0: these tables' levels above 0 need no merging
                level_filter = _above_level_0
            elif read_optimized:
                top = options.num_levels - 1
                level_filter = lambda level: level == top  # noqa: E731
        planner = ScanPlanner(table_path=self.path, schema=schema, options=options, schemas=self._schema_by_id,
                              file_io=self.file_io)
        splits = planner.plan(entries, filter, level_filter=level_filter)
        if options.deletion_vectors and splits:
            vectors = self.deletion_vectors(snapshot, [(s.partition, s.bucket) for s in splits])
            splits = [replace(s, deletion_vectors=vectors.get((s.partition, s.bucket), {})) for s in splits]
        return splits

    def index_entries(self, snapshot: Snapshot | None):
        """The live index files (deletion vectors, hash index) of ``snapshot``."""
        if snapshot is None or not snapshot.index_manifest:
            return []
        return self.index_manifest.read(snapshot.index_manifest)

    def deletion_vectors(self, snapshot: Snapshot | None, buckets=None) -> dict:
        """``{(partition values, bucket): {data file name: BitMap}}`` of ``snapshot``; with
        ``buckets`` (a collection of (partition values, bucket)), only the deletion-vector files
        of those buckets are read."""
        from .meta.index_files import DELETION_VECTORS, read_dv_file

        partition_types = [self.arrow_schema.field(k).type for k in self.partition_keys]
        wanted = None if buckets is None else {(tuple(p), b) for p, b in buckets}
        out: dict = {}
        for e in self.index_entries(snapshot):
            if e.file.index_type != DELETION_VECTORS:
                continue
            key = (tuple(deserialize_row(e.partition, partition_types)), e.bucket)
            if wanted is None or key in wanted:
                out.setdefault(key, {}).update(read_dv_file(self.file_io, self.index_dir, e.file))
        return out

    def index_files_of(self, snapshot: Snapshot | None, index_type: str) -> dict:
        """``{(partition values, bucket): [IndexFileMeta]}`` of one index type."""
        partition_types = [self.arrow_schema.field(k).type for k in self.partition_keys]
        out: dict = {}
        for e in self.index_entries(snapshot):
            if e.file.index_type == index_type:
                key = (tuple(deserialize_row(e.partition, partition_types)), e.bucket)
                out.setdefault(key, []).append(e.file)
        return out

    @cached_property
    def index_dir(self) -> str:
        return join(self.path, "index")

    @cached_property
    def index_manifest(self):
        from .meta.index_files import IndexManifest

        return IndexManifest(self.file_io, self.manifest_io.manifest_dir, compression=self.options.manifest_compression)

    def split_reader(self, schema: TableSchema | None = None, options: CoreOptions | None = None) -> SplitReader:
        """A reader of :meth:`plan`'s splits producing ``schema``'s columns (default: this
        table's); engines that hand splits to workers read each with it."""
        self.capabilities.require(Operation.READ)
        schema, options = schema or self.schema, options or self.options
        options.require_supported_for_read()
        return SplitReader(file_io=self.file_io, table_path=self.path, schema=schema, options=options,
                           schemas=self._schema_by_id)

    def read_schema(self, *, snapshot_id: int | None = None, tag: str | None = None,
                    timestamp: int | datetime | None = None) -> TableSchema:
        """The schema whose columns :meth:`read` returns for the same arguments: this table's
        schema for the latest snapshot, and for time travel (by id, tag or time) the schema the
        chosen snapshot was committed under, as in Paimon (its columns, with the table's current
        options). Raises like :meth:`resolve_snapshot`."""
        snapshot = self.resolve_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        return self._time_travel(snapshot, travelling=_travels(snapshot_id, tag, timestamp))[0]

    def _time_travel(self, snapshot: Snapshot | None, *, travelling: bool) -> tuple[TableSchema, CoreOptions]:
        """The schema and options a read of ``snapshot`` uses (see :meth:`read_schema`)."""
        if snapshot is None or not travelling or snapshot.schema_id == self.schema.id:
            return self.schema, self.options
        schema = schema_for_time_travel(self._schema_by_id(snapshot.schema_id), self.schema)
        return schema, CoreOptions.from_map(schema.options)

    def read(self, *, columns: Sequence[str] | None = None, filter: Predicate | None = None,
             snapshot_id: int | None = None, tag: str | None = None,
             timestamp: int | datetime | None = None, read_optimized: bool = False) -> pa.Table:
        """Rows of the latest snapshot (or the one chosen by id, tag or time) as a pyarrow Table.

        The latest snapshot is read with this table's schema. Time travel reads a snapshot with
        the schema it was committed under, as Paimon does (:meth:`read_schema`): columns added
        since are absent, renamed ones have their old name, dropped ones are back; ``columns``
        and ``filter`` name that schema's columns. ``read_optimized`` (Paimon's ``$ro``) reads
        only files that need no merging: for a primary-key table without deletion vectors the
        top level, as of its last full compaction.
        """
        snapshot = self.resolve_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        schema, options = self._time_travel(snapshot, travelling=_travels(snapshot_id, tag, timestamp))
        reader = self.split_reader(schema, options)
        filter = self.bind(filter, schema)
        splits = self._plan_snapshot(snapshot, schema, options, filter=filter, read_optimized=read_optimized)
        return reader.read(splits, columns=columns, predicate=filter, merge=not read_optimized)

    def to_batches(self, *, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                   snapshot_id: int | None = None, tag: str | None = None,
                   timestamp: int | datetime | None = None) -> Iterator[pa.RecordBatch]:
        """The same rows as :meth:`read` (same schema rules), streamed split by split (memory
        bounded by one split)."""
        snapshot = self.resolve_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        schema, options = self._time_travel(snapshot, travelling=_travels(snapshot_id, tag, timestamp))
        reader = self.split_reader(schema, options)
        filter = self.bind(filter, schema)
        splits = self._plan_snapshot(snapshot, schema, options, filter=filter)
        return reader.read_batches(splits, columns=columns, predicate=filter)

    def scan(self, *, columns: Sequence[str] | None = None, filter: Predicate | None = None,
             snapshot_id: int | None = None, tag: str | None = None,
             timestamp: int | datetime | None = None) -> TableScan:
        """A lazy scan of the same rows as :meth:`read` (same schema rules): nothing is read until
        it is consumed, by this engine or another (DuckDB, Polars, pandas, pyarrow; see
        :mod:`paimonflow.core.read.lazy_scan`). The snapshot is chosen now and held; unknown
        columns and a filter that does not fit the columns fail now."""
        snapshot = self.resolve_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        schema, options = self._time_travel(snapshot, travelling=_travels(snapshot_id, tag, timestamp))

        planner = partial(self._plan_snapshot, snapshot, schema, options)  # picklable (Polars)
        return TableScan(self, snapshot, schema, options, columns=columns, filter=filter, planner=planner,
                         schemas=self._schema_by_id)

    # -- schema ------------------------------------------------------------------------------

    def alter(self, changes) -> Table:
        """Apply schema changes (add/drop/rename columns, widen types, set/remove options). A new
        schema file is a change of the table: the capability gate refuses it where writes are
        refused (a feature paimonflow does not implement, an option it does not know)."""
        from .meta.schema_changes import SetOption
        from .options.validate import validate_user_options

        self.capabilities.require(Operation.WRITE)

        for change in changes:
            if isinstance(change, SetOption):
                validate_user_options({change.key: change.value})
        new_schema = self.schema_manager.commit_changes(list(changes))
        return Table(file_io=self.file_io, path=self.path, identifier=self.identifier, schema=new_schema,
                     branch=self.branch)

    # -- system tables -----------------------------------------------------------------------

    def system_table(self, name: str) -> pa.Table:
        """``snapshots``, ``schemas``, ``options``, ``files``, ``manifests``, ``tags``, ``index_files``
        and ``read_optimized`` (alias ``ro``) as Arrow tables."""
        from .read import system_tables

        return system_tables.load(self, name)


def _above_level_0(level: int) -> bool:
    return level > 0


def _travels(snapshot_id: int | None, tag: str | None, timestamp: int | datetime | None) -> bool:
    """True if a read names its snapshot (time travel) instead of reading the latest."""
    return snapshot_id is not None or tag is not None or timestamp is not None


class SnapshotStart:
    """What a writer of ``table`` continues from: ``snapshot`` (None: an empty table), read lazily
    and once (a :class:`~paimonflow.core.write.start.WriteStart`). An ``overwrite`` writer starts
    from no files, sequence numbers or hash index (what it writes replaces them), but still routes
    cross-partition upserts by the keys that exist."""

    def __init__(self, table: Table, snapshot: Snapshot | None, *, overwrite: bool) -> None:
        self._table, self._snapshot, self._overwrite = table, snapshot, overwrite
        self._partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
        self._live: dict[tuple[bytes, int], list] = {}  # the live files of each bucket restored so far
        self._vector_files: dict | None = None
        self._hash_files: dict | None = None

    def restore(self, buckets) -> None:
        """Read the live files of ``buckets`` (partition values, bucket) not restored yet, in one
        pass over the manifests that may hold them (pruned by partition statistics, bucket range
        and block index): a writer reads the metadata of what it writes, not of the whole table."""
        if self._overwrite or self._snapshot is None:
            return
        wanted: dict[bytes, set[int]] = {}
        for values, bucket in buckets:
            key = (serialize_row(list(values), self._partition_types), bucket)
            if key not in self._live:
                wanted.setdefault(key[0], set()).add(bucket)
        if not wanted:
            return
        for partition, ids in wanted.items():
            for bucket in ids:
                self._live[(partition, bucket)] = []
        for e in self._table.manifest_io.live_entries(self._snapshot, buckets=wanted):
            self._live[(e.partition, e.bucket)].append(e.file)

    def files(self, partition: tuple[object, ...], bucket: int) -> list:
        if self._overwrite or self._snapshot is None:
            return []
        self.restore([(partition, bucket)])
        return self._live[(serialize_row(list(partition), self._partition_types), bucket)]

    def next_sequence(self, partition: tuple[object, ...], bucket: int) -> int:
        return max((f.max_sequence_number for f in self.files(partition, bucket)), default=-1) + 1

    def deletion_vectors(self, partition: tuple[object, ...], bucket: int):
        from .meta.index_files import DELETION_VECTORS, read_dv_file

        if self._vector_files is None:  # the index manifest, read once: metadata of every index file
            self._vector_files = self._table.index_files_of(self._snapshot, DELETION_VECTORS)
        files = self._vector_files.get((tuple(partition), bucket), [])
        vectors: dict = {}
        for meta in files:  # only this bucket's vector files
            vectors.update(read_dv_file(self._table.file_io, self._table.index_dir, meta))
        return vectors, files

    def hash_index(self, partition: tuple[object, ...]) -> dict:
        from .meta.index_files import HASH, read_hash_file

        if self._overwrite:
            return {}
        if self._hash_files is None:
            self._hash_files = self._table.index_files_of(self._snapshot, HASH)
        out = {}
        for (values, bucket), metas in self._hash_files.items():
            if values == tuple(partition):
                hashes = [read_hash_file(self._table.file_io, self._table.index_dir, m) for m in metas]
                out[bucket] = (np.concatenate(hashes) if hashes else np.zeros(0, np.int32), metas)
        return out

    def keys(self) -> pa.Table | None:
        if self._snapshot is None:
            return None
        table = self._table
        return table.split_reader().read(table.plan(snapshot_id=self._snapshot.id), columns=list(
            dict.fromkeys([*table.primary_keys, *table.partition_keys])))

    def compactor(self, writer: TableWrite):
        """The compactor of ``writer``'s buckets: merge-tree for primary-key tables, else append."""
        if not self._table.primary_keys:
            from .compact.append_rewrite import AppendCompactor

            return AppendCompactor(self._table, writer=writer)
        from .compact.merge_tree import BucketCompactor

        return BucketCompactor(self._table, writer=writer)


if TYPE_CHECKING:  # the type checker holds Table to the collaborators the layers below receive
    from .maintenance.context import TableOps

    def _collaborators(table: Table) -> TableMeta:
        return table

    def _operations(table: Table) -> TableOps:
        return table
