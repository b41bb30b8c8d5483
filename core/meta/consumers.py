"""Consumers (``consumer/consumer-<id>``): how far each streaming reader has got.

A consumer file holds ``{"nextSnapshot": N}``, the first snapshot its reader has not consumed yet.
Snapshot and changelog expiry must keep every snapshot from the smallest ``nextSnapshot`` on
(:meth:`ConsumerManager.min_next_snapshot`). Consumers nobody has updated for
``consumer.expiration-time`` are dropped by :meth:`ConsumerManager.expire`, judged by the file's
modification time, as Paimon does.

The file is byte-for-byte what Java Paimon writes (Jackson's default pretty printer,
``JsonSerdeUtil.toJson``): ``{\\n  "nextSnapshot" : 5\\n}``. Readers (ours, Java's ``Consumer.fromJson``,
pypaimon's ``Consumer.from_json``) ignore other fields.

Ids given to this module are validated with :func:`~paimonflow.core.names.validate_name`; files
found by listing are taken as they are (Java allows ids we would refuse, and expiry must still see
them).
"""

from __future__ import annotations

import builtins
import re
import time
from dataclasses import dataclass

from ..errors import CorruptMetadataError, FileNotFoundStorageError, InvalidArgumentError
from ..fs import FileStatus, join
from ..names import validate_name
from .layout import branch_root
from .metafile import load_object

CONSUMER_PREFIX = "consumer-"
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Consumer:
    """One reader's progress: ``next_snapshot`` is the first snapshot it still needs."""

    next_snapshot: int

    def to_json(self) -> bytes:
        """The file content Java Paimon writes for this consumer (UTF-8, no trailing newline)."""
        return f'{{\n  "nextSnapshot" : {self.next_snapshot}\n}}'.encode()

    @classmethod
    def from_json(cls, data: bytes, path: str = "<consumer>") -> Consumer:
        """Parse a consumer file; unknown fields are ignored (as Java's ``@JsonIgnoreProperties``).

        Raises CorruptMetadataError(path, reason) if it is not a JSON object with an integer
        ``nextSnapshot`` in Java's ``long`` range.
        """
        doc = load_object(data, path)
        if "nextSnapshot" not in doc:
            raise CorruptMetadataError(path, "required field 'nextSnapshot' is missing")
        value = doc["nextSnapshot"]
        if isinstance(value, bool) or not isinstance(value, int) or not -_LONG_MAX - 1 <= value <= _LONG_MAX:
            raise CorruptMetadataError(path, f"field 'nextSnapshot' must be a 64-bit integer, found {value!r}")
        return cls(next_snapshot=value)


def _check_next_snapshot(next_snapshot: object) -> int:
    if isinstance(next_snapshot, bool) or not isinstance(next_snapshot, int):
        raise InvalidArgumentError(f"next_snapshot must be an integer, got {next_snapshot!r}")
    if not 0 <= next_snapshot <= _LONG_MAX:
        raise InvalidArgumentError(f"next_snapshot must be between 0 and 2**63 - 1, got {next_snapshot}")
    return next_snapshot


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidArgumentError(f"{what} is not a valid regular expression: {pattern!r} ({exc})") from None


class ConsumerManager:
    """The consumers of one branch of a table (``<table>/consumer/`` or ``<table>/branch/branch-<b>/consumer/``).

    Writes are plain overwrites through ``FileIO.write_bytes``, which never exposes a partial file
    (local disk: temp file + rename; S3: one PUT). Deletes are idempotent.
    """

    def __init__(self, file_io, table_path: str, branch: str = "main") -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.directory = join(branch_root(table_path, branch), "consumer")

    def path(self, consumer_id: str) -> str:
        """The file of ``consumer_id``. Raises InvalidNameError for an id that is not a safe name."""
        return join(self.directory, f"{CONSUMER_PREFIX}{validate_name('consumer', consumer_id)}")

    # -- reading -----------------------------------------------------------------------------

    def get(self, consumer_id: str) -> Consumer | None:
        """The consumer, or None if there is none. Raises CorruptMetadataError if its file is bad."""
        path = self.path(consumer_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundStorageError:
            return None
        return Consumer.from_json(data, path)

    def _files(self) -> builtins.list[tuple[str, FileStatus]]:
        """(id, status) of every consumer file, sorted by id; hidden/temp files and directories skipped."""
        out = []
        for status in self.file_io.list_dir(self.directory):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if not status.is_dir and name.startswith(CONSUMER_PREFIX) and len(name) > len(CONSUMER_PREFIX):
                out.append((name[len(CONSUMER_PREFIX):], status))
        return sorted(out, key=lambda item: item[0])

    def ids(self) -> builtins.list[str]:
        """Ids of all consumer files, sorted (Java's ``listAllIds``); files are not read."""
        return [consumer_id for consumer_id, _ in self._files()]

    def min_next_snapshot(self) -> int | None:
        """The smallest ``nextSnapshot`` of all consumers (None if there are none).

        Expiry must keep every snapshot with an id at or above this. A corrupt consumer file raises
        CorruptMetadataError rather than being skipped, so expiry never deletes what it protects.
        """
        values = [consumer.next_snapshot for consumer in self.list().values()]
        return min(values) if values else None

    # -- writing -----------------------------------------------------------------------------

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Create or overwrite ``consumer_id`` with ``next_snapshot`` (a reader's checkpoint).

        Idempotent; readers see the old or the new content, never a partial file. Raises
        InvalidNameError for a bad id, InvalidArgumentError unless ``0 <= next_snapshot < 2**63``.
        """
        path = self.path(consumer_id)
        consumer = Consumer(next_snapshot=_check_next_snapshot(next_snapshot))
        self.file_io.write_bytes(path, consumer.to_json())

    def reset(self, consumer_id: str, next_snapshot: int | None) -> None:
        """The ``reset_consumer`` procedure: set the consumer to ``next_snapshot``, or delete it if None.

        Does not check that the snapshot exists (neither does Paimon's ``ConsumerManager``).
        """
        if next_snapshot is None:
            self.delete(consumer_id)
        else:
            self.record(consumer_id, next_snapshot)

    def delete(self, consumer_id: str) -> bool:
        """Delete ``consumer_id``; False if it did not exist. Idempotent."""
        return self.file_io.delete(self.path(consumer_id))

    def expire(self, older_than_millis: int, now_millis: int | None = None, *,
               dry_run: bool = False) -> builtins.list[str]:
        """Delete consumers whose file was last modified before ``now_millis - older_than_millis``.

        ``older_than_millis`` is ``consumer.expiration-time``; ``now_millis`` defaults to the wall
        clock. Like Paimon, a file modified exactly at the cut-off is kept. Each candidate is
        re-checked just before deletion, so a consumer recorded meanwhile survives. Returns the ids
        deleted (or, with ``dry_run``, that would be), sorted. Idempotent.
        """
        if isinstance(older_than_millis, bool) or not isinstance(older_than_millis, int) or older_than_millis < 0:
            raise InvalidArgumentError(f"older_than_millis must be a non-negative integer, got {older_than_millis!r}")
        now = int(time.time() * 1000) if now_millis is None else now_millis
        cutoff = now - older_than_millis
        expired = []
        for consumer_id, status in self._files():
            if status.modification_time_millis >= cutoff:
                continue
            if not dry_run:
                try:
                    if self.file_io.status(status.path).modification_time_millis >= cutoff:
                        continue  # recorded again since the listing
                except FileNotFoundStorageError:
                    continue
                if not self.file_io.delete(status.path):
                    continue
            expired.append(consumer_id)
        return expired

    def clear(self, pattern_including: str, pattern_excluding: str | None = None) -> builtins.list[str]:
        """The ``clear_consumers`` procedure: delete consumers whose id matches ``pattern_including``
        and not ``pattern_excluding``.

        Patterns are regular expressions matched against the **whole** id (Java's
        ``Matcher.matches()``; pypaimon 2.1.0 matches a prefix instead), so ``clear(".*")`` deletes
        all and ``clear("job")`` only ``job``. Returns the ids deleted, sorted. Raises
        InvalidArgumentError for a bad pattern.
        """
        including = _compile(pattern_including, "pattern_including")
        excluding = _compile(pattern_excluding, "pattern_excluding") if pattern_excluding is not None else None
        cleared = []
        for consumer_id, status in self._files():
            wanted = including.fullmatch(consumer_id) and not (excluding and excluding.fullmatch(consumer_id))
            if wanted and self.file_io.delete(status.path):
                cleared.append(consumer_id)
        return cleared

    def list(self) -> dict[str, Consumer]:
        """Every consumer by id (Java's ``consumers()``). Files that vanish meanwhile are skipped;
        a corrupt one raises CorruptMetadataError."""
        consumers = {}
        for consumer_id, status in self._files():
            try:
                data = self.file_io.read_bytes(status.path)
            except FileNotFoundStorageError:
                continue
            consumers[consumer_id] = Consumer.from_json(data, status.path)
        return consumers
