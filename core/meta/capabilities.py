"""The capability gate: which operations paimonflow may run on a table, decided once per open.

Paimon's writers keep adding features (postpone buckets, path directories, external paths, row
tracking, data evolution, file and global indexes, 64-bit deletion vectors...). A table is
described by the features its options use (:func:`features_of`); each feature lists the kinds of
operation this version does not implement for it (:data:`REFUSED`). Every entry point asks
:meth:`TableCapabilities.require` before it writes or deletes anything, and a refusal is one
:class:`~paimonflow.core.errors.UnsupportedFeatureError` naming the feature and the operation.

An option paimonflow does not know at all counts as unsupported for every operation that writes
or deletes files; the option registry's known keys (:mod:`paimonflow.core.options.validate`)
are the ones it stores and respects, or ignores knowing that ignoring them damages nothing, and
engines' run-time settings (``sink.*``, ``scan.*``, ``lookup.*``...) are harmless too.
The matrix (feature x operation) is rendered for docs/format.md by :func:`matrix_markdown`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from ..errors import UnsupportedFeatureError


class Operation(StrEnum):
    """The kinds of operation the gate decides, each named as a message says it."""

    READ = "read"
    WRITE = "write"
    COMPACT = "compaction"
    EXPIRE = "expiry"
    ORPHANS = "orphan removal"
    HISTORY = "tags, rollback and branches"


_ALL = frozenset(Operation)
_WRITES = frozenset({Operation.WRITE, Operation.COMPACT})
_CHANGES = _ALL - {Operation.READ}  # every operation that writes or deletes files


class Feature(StrEnum):
    """A table feature beyond what every operation implements (the value names it for users)."""

    POSTPONE_BUCKET = "postpone buckets (bucket = -2)"
    POSTPONE_MERGE_ON_READ = "postpone merge-on-read (postpone.merge-on-read)"
    PATH_DIRECTORY_OUTSIDE = "a data-file.path-directory outside the table"
    EXTERNAL_PATHS = "external data paths on another storage (data-file.external-paths)"
    ROW_TRACKING = "row tracking (row-tracking.enabled)"
    DATA_EVOLUTION = "data evolution (data-evolution.enabled)"
    FILE_INDEX = "file indexes other than bloom-filter and bitmap on plain columns (file-index.*)"
    BITMAP64 = "64-bit deletion vectors (deletion-vectors.bitmap64)"
    INDEX_IN_DATA_DIR = "index files in data directories (index-file-in-data-file-dir)"
    BLOB = "BLOB columns (blob-field)"
    COLUMN_TYPE = "a column type paimonflow does not implement"
    UNKNOWN_OPTION = "an option paimonflow does not know"


#: The operations paimonflow does not implement for each feature. Layout features whose paths
#: are known (postpone buckets live in ``bucket-postpone``, external files are named by their
#: manifest entry) keep expiry, orphan removal and history: those only delete what the
#: snapshots name, at the paths they name.
REFUSED: Mapping[Feature, frozenset[Operation]] = {
    Feature.POSTPONE_BUCKET: frozenset(),  # core/write/postpone.py, core/compact/postpone.py
    Feature.POSTPONE_MERGE_ON_READ: frozenset({Operation.READ, Operation.COMPACT}),
    Feature.PATH_DIRECTORY_OUTSIDE: _ALL,
    Feature.EXTERNAL_PATHS: _WRITES,
    Feature.ROW_TRACKING: frozenset(),
    Feature.DATA_EVOLUTION: frozenset({Operation.COMPACT}),
    Feature.FILE_INDEX: _WRITES,
    Feature.BITMAP64: frozenset(),  # core/meta/deletion_vector64.py
    Feature.INDEX_IN_DATA_DIR: _ALL,
    Feature.BLOB: _ALL,
    Feature.COLUMN_TYPE: _ALL,
    Feature.UNKNOWN_OPTION: _CHANGES,
}

#: Why each refusal stands, for the docs (what would go wrong).
REASONS: Mapping[Feature, str] = {
    Feature.POSTPONE_BUCKET: "implemented: writes land in bucket-postpone, batch reads skip it, a postpone "
                             "compaction assigns real buckets",
    Feature.POSTPONE_MERGE_ON_READ: "Paimon's batch reads then merge the postpone bucket's rows into the real "
                                    "buckets; paimonflow's reads (and the compaction, which reads through "
                                    "them) skip them",
    Feature.PATH_DIRECTORY_OUTSIDE: "data would live where paimonflow's layout cannot prove what is referenced",
    Feature.EXTERNAL_PATHS: "paimonflow writes a table through one storage backend, and the chosen paths are on "
                            "another (or the options are invalid)",
    Feature.ROW_TRACKING: "implemented: row ids assigned at commit (nextRowId), _ROW_ID and _SEQUENCE_NUMBER "
                          "readable, kept by compaction",
    Feature.DATA_EVOLUTION: "reads merge partial-column files by row id and writes add whole rows; Paimon's "
                            "data-evolution compaction (merging a row range's partial files, rewriting its "
                            "deletion vectors and global indexes) is not implemented",
    Feature.FILE_INDEX: "new and compacted files would lose their bsi, range-bitmap or map-key indexes",
    Feature.BITMAP64: "implemented: 64-bit vectors are read beside 32-bit ones and written when the option is set",
    Feature.INDEX_IN_DATA_DIR: "index files live in bucket directories, outside paimonflow's layout",
    Feature.BLOB: "BLOB data files are a format paimonflow does not implement",
    Feature.COLUMN_TYPE: "the table cannot be opened (BLOB, VECTOR, GEOMETRY...): refused when it is opened",
    Feature.UNKNOWN_OPTION: "what the option changes cannot be known",
}


def _true(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "").strip().lower() == "true"


def _is_inside(directory: str) -> bool:
    """A relative directory below the table (no scheme, no absolute path, no ``..``)."""
    if not directory.strip() or "://" in directory or directory.startswith("/"):
        return False
    return all(part not in ("", "..") for part in directory.strip().strip("/").split("/") if part != ".")


def _storage_family(path: str) -> str:
    from ..fs import scheme_of

    scheme = scheme_of(path)
    return {"": "local", "file": "local", "s3a": "s3"}.get(scheme, scheme)


def _foreign_external_paths(options: Mapping[str, str], table_path: str | None) -> str | None:
    """What shows external paths paimonflow cannot write (None when there are none or it can):
    invalid options, or a chosen path on another storage than the table's."""
    from ..errors import InvalidOptionError
    from .layout import ExternalPaths

    try:
        external = ExternalPaths.of(options)
    except InvalidOptionError as exc:
        return str(exc)
    if external is None:
        return None
    home = _storage_family(table_path or "")
    foreign = [root for root in external.roots if _storage_family(root) != home]
    return f"data-file.external-paths={','.join(foreign)}" if foreign else None


def features_of(options: Mapping[str, str], table_path: str | None = None) -> dict[Feature, str]:
    """The gated features ``options`` (a table's raw options) use, each with what a message should
    add to the feature's name (the options or values that show it; empty when the name says all).
    ``table_path`` (the table's directory) tells whether external data paths share its storage."""
    from ..options.validate import is_harmless_option

    found: dict[Feature, str] = {}
    if options.get("bucket", "").strip() == "-2":
        found[Feature.POSTPONE_BUCKET] = ""
        if _true(options, "postpone.merge-on-read"):
            found[Feature.POSTPONE_MERGE_ON_READ] = ""
    directory = options.get("data-file.path-directory")
    if directory is not None and not _is_inside(directory):
        found[Feature.PATH_DIRECTORY_OUTSIDE] = f"data-file.path-directory={directory}"
    foreign = _foreign_external_paths(options, table_path)
    if foreign is not None:
        found[Feature.EXTERNAL_PATHS] = foreign
    if _true(options, "row-tracking.enabled"):
        found[Feature.ROW_TRACKING] = ""
    if _true(options, "data-evolution.enabled"):
        found[Feature.DATA_EVOLUTION] = ""
    from .fileindex import unsupported_file_index_options

    unwritable = unsupported_file_index_options(options)  # bloom-filter and bitmap are written
    if unwritable:
        found[Feature.FILE_INDEX] = ", ".join(unwritable)
    if _true(options, "deletion-vectors.bitmap64"):
        found[Feature.BITMAP64] = ""
    if _true(options, "index-file-in-data-file-dir"):
        found[Feature.INDEX_IN_DATA_DIR] = ""
    if options.get("blob-field", "").strip():
        found[Feature.BLOB] = f"blob-field={options['blob-field']}"
    unknown = sorted(k for k in options if not is_harmless_option(k))
    if unknown:
        found[Feature.UNKNOWN_OPTION] = ", ".join(repr(k) for k in unknown)
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class TableCapabilities:
    """What paimonflow may do with one table, from the features its options use."""

    table: str
    features: Mapping[Feature, str]

    @classmethod
    def of(cls, table: str, options: Mapping[str, str], table_path: str | None = None) -> TableCapabilities:
        return cls(table=table, features=features_of(options, table_path))

    def refused(self, operation: Operation) -> list[tuple[Feature, str]]:
        """The features (with what shows them) that refuse ``operation``."""
        return [(f, shown) for f, shown in self.features.items() if operation in REFUSED[f]]

    def allows(self, operation: Operation) -> bool:
        return not self.refused(operation)

    def require(self, operation: Operation) -> None:
        """Raise :class:`UnsupportedFeatureError` if any feature refuses ``operation``."""
        refused = self.refused(operation)
        if refused:
            feature, shown = refused[0]
            raise UnsupportedFeatureError(table=self.table, feature=feature.value, operation=operation.value,
                                          detail=shown)


#: the columns Paimon's compaction of a row-tracking table stores after the table's own
ROW_TRACKING_COLUMNS = ("_ROW_ID", "_SEQUENCE_NUMBER")


def holds_partial_columns(f) -> bool:
    """Whether data file ``f`` holds only some columns (data evolution's ``write_cols``); a
    row-tracking compaction's file names every column, then ``_ROW_ID`` and ``_SEQUENCE_NUMBER``
    (readers check the rest against the file's schema)."""
    return f.write_cols is not None and tuple(f.write_cols[-2:]) != ROW_TRACKING_COLUMNS


def require_file_metadata(table: str, files, operation: Operation) -> None:
    """Refuse ``operation`` over data files whose metadata uses a feature it does not implement,
    whatever the options say now (an option can be removed after files were written with it):
    partial-column files (``write_cols``, data evolution) for compaction (reads of a table that no
    longer says data evolution refuse them file by file), row ids (``first_row_id``, row
    tracking) for the operations row tracking refuses (none)."""
    for f in files:
        if holds_partial_columns(f) and operation in REFUSED[Feature.DATA_EVOLUTION]:
            raise UnsupportedFeatureError(table=table, feature=Feature.DATA_EVOLUTION.value,
                                          operation=operation.value, detail=f"file {f.file_name} holds only "
                                          f"columns {list(f.write_cols)}")
        if f.first_row_id is not None and operation in REFUSED[Feature.ROW_TRACKING]:
            raise UnsupportedFeatureError(table=table, feature=Feature.ROW_TRACKING.value,
                                          operation=operation.value,
                                          detail=f"file {f.file_name} carries row ids")


def matrix_markdown() -> str:
    """The feature x operation matrix as a Markdown table (for docs/format.md)."""
    operations = list(Operation)
    lines = ["| feature | " + " | ".join(op.value for op in operations) + " | why |",
             "|---|" + "---|" * len(operations) + "---|"]
    for feature in Feature:
        cells = ["refused" if op in REFUSED[feature] else "yes" for op in operations]
        lines.append(f"| {feature.value} | " + " | ".join(cells) + f" | {REASONS[feature]} |")
    return "\n".join(lines)
