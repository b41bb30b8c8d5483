"""A FileIO wrapper that injects storage faults, for the reliability programme (docs/reliability.md).

Test-only, the analogue of Paimon's ``FailingFileIO``. Every storage call, including the Parquet
streams pyarrow opens through ``arrow_filesystem()``, is one numbered *operation* of a kind:

* ``read``: ``read_bytes``, ``open_input``, ``exists``, ``status``, ``list_dir``, pyarrow
  file info and input streams;
* ``write``: ``write_bytes``, ``create_if_absent``, ``delete``, ``rename``, ``mkdirs`` and
  pyarrow output streams.

A :class:`FaultPlan` decides, per operation, what happens:

* ``before``: raise :class:`InjectedFault` (a ``StorageError``) without calling the real store,
  so nothing happened;
* ``after``: let the real operation complete, then raise: the write *landed* but the caller sees
  an error. For ``create_if_absent`` the error is ``StorageOutcomeUnknownError``, the ambiguous
  outcome of a snapshot publish (Iceberg's "commit succeeded but state unknown");
* ``kill-before`` / ``kill-after``: SIGKILL this process before or after the operation (a crash
  at exactly that step).

A plan's ``hook`` sees every operation just before it runs: tests use it to put another actor's
step at an exact point of an operation (a deterministic interleaving, no storage mock).

Plans are seeded or deterministic, so every failure is reproducible from its printed plan.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.fs as pafs

from paimonflow.core.errors import StorageError
from paimonflow.core.fs import FileIO, FileStatus, StorageOutcomeUnknownError

READ, WRITE = "read", "write"
WRITE_FAULTS = ("before", "after", "kill-before", "kill-after")


class InjectedFault(StorageError):
    """A storage failure this wrapper made up."""


class InjectedOutcomeUnknown(StorageOutcomeUnknownError):
    """A made-up ambiguous outcome: the write landed, the caller is told it may not have."""


@dataclass(frozen=True, slots=True)
class Operation:
    index: int
    kind: str  # READ or WRITE
    name: str  # the FileIO method ("arrow.open_output_stream" for pyarrow streams)
    path: str


@dataclass
class FaultPlan:
    """Which operations fail, and how.

    ``at``: ``{operation index: fault}`` (a deterministic plan, e.g. "the 7th operation fails
    after landing"). ``probability``/``seed``/``max_faults``: random faults (``before`` or
    ``after`` for writes, ``before`` for reads) until ``max_faults`` were injected. ``only_kinds``
    limits random faults to ``read`` or ``write`` operations.
    """

    at: dict[int, str] = field(default_factory=dict)
    probability: float = 0.0
    seed: int = 0
    max_faults: int = 0
    only_kinds: tuple[str, ...] = (READ, WRITE)
    #: called with every operation before it runs (and before any fault): a deterministic
    #: interleaving point, e.g. another process's tag deletion between two steps of an expiry
    hook: Callable[[Operation], None] | None = None

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def fault_for(self, op: Operation, injected: int) -> str | None:
        if op.index in self.at:
            return self.at[op.index]
        if self.probability and injected < self.max_faults and op.kind in self.only_kinds \
                and self._rng.random() < self.probability:
            return "before" if op.kind == READ else self._rng.choice(("before", "after"))
        return None


class FaultyFileIO:
    """Wraps a real FileIO; numbers every operation and injects the faults its plan asks for.

    ``operations`` records every operation (for enumerating the steps of a job); ``faults`` the
    ones that failed. Thread-safe: operations are numbered under a lock.
    """

    def __init__(self, inner: FileIO, plan: FaultPlan | None = None) -> None:
        self.inner = inner
        self.plan = plan or FaultPlan()
        self.operations: list[Operation] = []
        self.faults: list[tuple[Operation, str]] = []
        self._lock = threading.Lock()
        self._arrow: tuple[pafs.FileSystem, Callable[[str], str]] | None = None

    def __repr__(self) -> str:
        return f"FaultyFileIO({self.inner!r}, {len(self.faults)} faults)"

    # -- the mechanism -------------------------------------------------------------------------

    def _run(self, kind: str, name: str, path: str, call: Callable[[], Any]) -> Any:
        with self._lock:
            op = Operation(len(self.operations), kind, name, path)
            self.operations.append(op)
            fault = self.plan.fault_for(op, len(self.faults))
            if fault is not None:
                self.faults.append((op, fault))
        if self.plan.hook is not None:
            self.plan.hook(op)
        if fault == "kill-before":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "before":
            raise InjectedFault(f"injected failure before {name} of {path} (operation {op.index})")
        result = call()
        if fault == "kill-after":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "after":
            if kind == READ:  # a read that "happened" but whose answer was lost
                raise InjectedFault(f"injected failure after {name} of {path} (operation {op.index})")
            error = InjectedOutcomeUnknown if name == "create_if_absent" else InjectedFault
            raise error(f"injected failure after {name} of {path} landed (operation {op.index})")
        return result

    # -- FileIO --------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        return self._run(READ, "read_bytes", path, lambda: self.inner.read_bytes(path))

    def open_input(self, path: str) -> BinaryIO:
        return self._run(READ, "open_input", path, lambda: self.inner.open_input(path))

    def exists(self, path: str) -> bool:
        return self._run(READ, "exists", path, lambda: self.inner.exists(path))

    def status(self, path: str) -> FileStatus:
        return self._run(READ, "status", path, lambda: self.inner.status(path))

    def list_dir(self, path: str) -> list[FileStatus]:
        return self._run(READ, "list_dir", path, lambda: self.inner.list_dir(path))

    def list_files(self, path: str, prefix: str) -> list[FileStatus]:
        return self._run(READ, "list_files", path, lambda: self.inner.list_files(path, prefix))

    def list_hidden(self, path: str, prefix: str) -> list[FileStatus]:
        return self._run(READ, "list_hidden", path, lambda: self.inner.list_hidden(path, prefix))

    def write_bytes(self, path: str, data: bytes) -> None:
        return self._run(WRITE, "write_bytes", path, lambda: self.inner.write_bytes(path, data))

    def create_if_absent(self, path: str, data: bytes) -> bool:
        return self._run(WRITE, "create_if_absent", path, lambda: self.inner.create_if_absent(path, data))

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        return self._run(WRITE, "delete", path, lambda: self.inner.delete(path, recursive=recursive))

    def rename(self, src: str, dst: str) -> None:
        return self._run(WRITE, "rename", dst, lambda: self.inner.rename(src, dst))

    def mkdirs(self, path: str) -> None:
        return self._run(WRITE, "mkdirs", path, lambda: self.inner.mkdirs(path))

    def arrow_filesystem(self) -> tuple[pafs.FileSystem, Callable[[str], str]]:
        if self._arrow is None:
            inner_fs, to_path = self.inner.arrow_filesystem()
            self._arrow = (pafs.PyFileSystem(_FaultyArrowHandler(self, inner_fs)), to_path)
        return self._arrow


class _FaultyArrowHandler(pafs.FileSystemHandler):
    """pyarrow's side of the wrapper: data files written and read through pyarrow fail too."""

    def __init__(self, owner: FaultyFileIO, inner: pafs.FileSystem) -> None:
        self._owner, self._fs = owner, inner

    def get_type_name(self) -> str:
        return "faulty+" + self._fs.type_name

    def equals(self, other: Any) -> bool:
        return isinstance(other, _FaultyArrowHandler) and other._fs.equals(self._fs)

    def normalize_path(self, path: str) -> str:
        return self._fs.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self._owner._run(READ, "arrow.get_file_info", ",".join(paths), lambda: self._fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self._owner._run(READ, "arrow.get_file_info", selector.base_dir,
                                lambda: self._fs.get_file_info(selector))

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self._owner._run(READ, "arrow.open_input_stream", path, lambda: self._fs.open_input_stream(path))

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self._owner._run(READ, "arrow.open_input_file", path, lambda: self._fs.open_input_file(path))

    def open_output_stream(self, path: str, metadata: dict[str, str] | None = None) -> pa.NativeFile:
        # "before": nothing is created; "after": the (empty) file exists, the writer never gets it.
        return self._owner._run(WRITE, "arrow.open_output_stream", path,
                                lambda: self._fs.open_output_stream(path, metadata=metadata))

    def open_append_stream(self, path: str, metadata: dict[str, str] | None = None) -> pa.NativeFile:
        return self._owner._run(WRITE, "arrow.open_append_stream", path,
                                lambda: self._fs.open_append_stream(path, metadata=metadata))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._owner._run(WRITE, "arrow.create_dir", path, lambda: self._fs.create_dir(path, recursive=recursive))

    def delete_dir(self, path: str) -> None:
        self._owner._run(WRITE, "arrow.delete_dir", path, lambda: self._fs.delete_dir(path))

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._owner._run(WRITE, "arrow.delete_dir_contents", path,
                         lambda: self._fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok))

    def delete_root_dir_contents(self) -> None:
        raise InjectedFault("the fault-injecting test filesystem never deletes a root directory")

    def delete_file(self, path: str) -> None:
        self._owner._run(WRITE, "arrow.delete_file", path, lambda: self._fs.delete_file(path))

    def move(self, src: str, dest: str) -> None:
        self._owner._run(WRITE, "arrow.move", dest, lambda: self._fs.move(src, dest))

    def copy_file(self, src: str, dest: str) -> None:
        self._owner._run(WRITE, "arrow.copy_file", dest, lambda: self._fs.copy_file(src, dest))
