"""The one exception tree of paimonflow.

Every error paimonflow raises on purpose derives from :class:`PaimonflowError`. Subclasses carry
what a caller needs to react (a path, a name, an option key) and chain the original cause.
"""

from __future__ import annotations


class PaimonflowError(Exception):
    """Base of every error raised by paimonflow."""


class InvalidNameError(PaimonflowError, ValueError):
    """A user-supplied name (database, table, tag, branch, consumer, column...) is not allowed."""

    def __init__(self, kind: str, name: object, reason: str) -> None:
        self.kind, self.name, self.reason = kind, name, reason
        super().__init__(f"invalid {kind} name {name!r}: {reason}")


class InvalidArgumentError(PaimonflowError, ValueError):
    """An API call got arguments that do not fit together (e.g. a snapshot id and a tag)."""


class InvalidOptionError(PaimonflowError, ValueError):
    """A table option is unknown, malformed or out of range."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key, self.value, self.reason = key, value, reason
        super().__init__(f"table option {key!r}={value!r}: {reason}")


class SchemaError(PaimonflowError, ValueError):
    """A schema is invalid, or data does not match the table's schema."""


class SchemaChangeError(SchemaError):
    """A schema evolution step is not allowed (unknown column, unsafe type change, key column...)."""


class DataError(PaimonflowError, ValueError):
    """Rows violate the table's rules (null primary key, bad row kind...)."""


class CatalogError(PaimonflowError):
    """Base for catalog errors."""


class DatabaseNotFoundError(CatalogError, LookupError):
    pass


class DatabaseAlreadyExistsError(CatalogError):
    pass


class DatabaseNotEmptyError(CatalogError):
    pass


class WarehouseNotFoundError(CatalogError, LookupError):
    """The warehouse a command names does not exist."""


class TableNotFoundError(CatalogError, LookupError):
    pass


class TableAlreadyExistsError(CatalogError):
    pass


class SnapshotNotFoundError(PaimonflowError, LookupError):
    """The snapshot, tag or timestamp asked for does not exist (or has expired)."""


class TagAlreadyExistsError(PaimonflowError):
    """A tag of that name exists already."""


class TagNotFoundError(SnapshotNotFoundError):
    pass


class BranchNotFoundError(CatalogError, LookupError):
    """The named branch of a table does not exist."""


class BranchAlreadyExistsError(CatalogError):
    """A branch of that name exists (and was created from another source)."""


class CorruptMetadataError(PaimonflowError):
    """A metadata file cannot be parsed: truncated, bit-flipped, or not what its name says."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"corrupt metadata file {path}: {reason}")


class StorageError(PaimonflowError, OSError):
    """The storage backend failed (I/O error, permission, network)."""


class FileNotFoundStorageError(StorageError, FileNotFoundError):
    """A file that should exist does not."""


class CommitError(PaimonflowError):
    """Base for commit failures."""


class CommitConflictError(CommitError):
    """Another writer changed what this commit depends on; the commit was not made. Safe to replan."""


class CommitRetriesExhaustedError(CommitError):
    """Lost the race for the next snapshot id more often than ``commit.max-retries`` allows."""


class CommitOutcomeUnknownError(CommitError):
    """The snapshot may or may not have landed. Never clean up: retry with the same commit identity."""


class MaintenanceConflictError(PaimonflowError):
    """A concurrent maintenance operation (expiry, tag deletion) changed what this one depends
    on; this one changed nothing. Safe to retry."""


class TagTargetExpiringError(MaintenanceConflictError, SnapshotNotFoundError):
    """The snapshot a new tag would hold is being expired (or is gone): the tag was not created,
    nothing is left behind. Retry, on a newer snapshot (the default, the latest, always is)."""


class UnsupportedError(PaimonflowError):
    """A feature of the format that this version of paimonflow does not handle. (Not a
    ``NotImplementedError``: PySpark's data source API takes one raised while planning for "this
    method is not implemented" and drops it.)"""


class UnsupportedFeatureError(UnsupportedError):
    """The table uses a feature this version of paimonflow does not implement for the operation
    asked (the capability gate, :mod:`paimonflow.core.meta.capabilities`). Raised before any
    file is written or deleted: nothing changed."""

    def __init__(self, *, table: str, feature: str, operation: str, detail: str = "") -> None:
        self.table, self.feature, self.operation = table, feature, operation
        more = f" ({detail})" if detail else ""
        super().__init__(f"table {table} uses {feature}{more}, which paimonflow does not support for "
                         f"{operation}; nothing was changed")
        self.detail = detail

    def __reduce__(self):  # picklable across processes (Spark tasks, multiprocessing)
        return _unsupported_feature, (self.table, self.feature, self.operation, self.detail)


def _unsupported_feature(table: str, feature: str, operation: str, detail: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(table=table, feature=feature, operation=operation, detail=detail)


class StorageOutcomeUnknownError(StorageError):
    """A write may or may not have landed (timeout, lost response, server error).

    Never clean up after it: re-read what is there (a commit looks for its own identity) or retry
    with the same payload.
    """


class InvalidStorageOptionError(PaimonflowError, ValueError):
    """A storage option (``s3.*``) is unknown or malformed. The message never shows the value."""


class UnknownSystemTableError(PaimonflowError, LookupError):
    """No system table of that name."""


class ReferencesUnreadableError(PaimonflowError):
    """What a snapshot, tag or changelog needs cannot be read completely (a metadata file is
    missing or unreadable), so nothing can be proven unneeded."""


class OrphanCleanAbortedError(PaimonflowError):
    """Some snapshot or tag could not be read, so no file can be proven unreferenced."""


class SourceError(PaimonflowError):
    """An input cannot be read: a missing or unreadable file, an unknown Spark table, a query Spark refuses."""


class SparkUnavailableError(PaimonflowError):
    """PySpark or Java is missing, or too old (raised by ``paimonflow.jobs``)."""


class WriteAbortedError(PaimonflowError):
    """The writer was aborted (an interrupt, a failure elsewhere): it starts no new file, and
    every file it wrote and did not hand to a commit is deleted."""


class Interrupted(KeyboardInterrupt):
    """A signal stopped the work: raised in the main thread by the command lines' SIGINT and
    SIGTERM handlers. A :class:`KeyboardInterrupt` (not a :class:`PaimonflowError`), so whatever
    cleans up after Ctrl-C cleans up after SIGTERM too. ``files_removed`` counts the files the
    interrupted write created and deleted on the way out."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.files_removed = 0
        self.outcome_known = False  # whether the command found out if its commit landed
        self.committed_snapshot: int | None = None  # the snapshot, when it had landed

    @property
    def signal_name(self) -> str:
        return str(self.args[0])

    @property
    def exit_code(self) -> int:
        """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


def note_files_removed(exc: BaseException, count: int) -> None:
    """Add ``count`` to the files removed on the way out of the write ``exc`` stopped, kept on
    ``exc`` (an :class:`Interrupted`, or the error a library made of the interrupt: Py4J turns a
    signal inside its call into a network error); :func:`files_removed` reads it back."""
    import contextlib

    with contextlib.suppress(AttributeError, TypeError):  # an exception type that takes no attribute
        exc.files_removed = files_removed(exc) + count  # type: ignore[attr-defined]


def files_removed(exc: BaseException) -> int:
    """The files removed on the way out of the write ``exc`` stopped (0 when none was noted)."""
    return int(getattr(exc, "files_removed", 0))
