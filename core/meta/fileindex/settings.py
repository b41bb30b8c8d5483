"""Which file indexes a table's options ask for (Paimon's ``FileIndexOptions``), parsed once.

``file-index.<type>.columns`` lists the columns of each index type; ``file-index.<type>.<column>.
<option>`` sets an option of one column's index (``items`` and ``fpp`` of ``bloom-filter``,
``version`` and ``index-block-size`` of ``bitmap``). As in Paimon, keys of another shape (such as
``file-index.bloom-filter.fpp``) are not options of any index and change nothing.
``file-index.in-manifest-threshold`` (default 500 bytes): an index container up to that size is
embedded in the manifest entry, a larger one written as ``<data file>.index`` beside the data file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...data.types import DataField, DataType
from ...errors import InvalidOptionError
from ...options.parse import parse_memory_size
from .bitmap import BITMAP_ROOTS
from .bloom import DEFAULT_FPP, DEFAULT_ITEMS
from .hashing import BLOOM_ROOTS

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
THRESHOLD_KEY = "file-index.in-manifest-threshold"
READ_ENABLED_KEY = "file-index.read.enabled"
DEFAULT_THRESHOLD = 500
BLOOM_FILTER, BITMAP = "bloom-filter", "bitmap"
#: Index types paimonflow writes and reads, with the per-column options each understands.
SUPPORTED_TYPES: Mapping[str, frozenset[str]] = {
    BLOOM_FILTER: frozenset({"items", "fpp"}),
    BITMAP: frozenset({"version", "index-block-size"}),
}
_ROOTS = {BLOOM_FILTER: BLOOM_ROOTS, BITMAP: BITMAP_ROOTS}


def _declared(options: Mapping[str, str]) -> dict[str, list[str]]:
    """index type -> declared columns (in option order)."""
    found: dict[str, list[str]] = {}
    for key, value in options.items():
        if key.startswith(PREFIX) and key.endswith(COLUMNS_SUFFIX) and value.strip():
            index_type = key[len(PREFIX):-len(COLUMNS_SUFFIX)]
            found[index_type] = [c.strip() for c in value.split(",")]
    return found


def file_index_read_enabled(options: Mapping[str, str]) -> bool:
    """``file-index.read.enabled`` (default true): whether reads skip files by their indexes."""
    return options.get(READ_ENABLED_KEY, "true").strip().lower() != "false"


def unsupported_file_index_options(options: Mapping[str, str]) -> list[str]:
    """What in ``options`` asks for a file index paimonflow does not write (an index type other
    than bloom-filter and bitmap, a map-key column ``m[k]``, a bitmap version other than 1 or 2,
    an empty column name), as ``key=value`` texts; empty when every declared index is written."""
    out = []
    for index_type, columns in _declared(options).items():
        key = f"{PREFIX}{index_type}{COLUMNS_SUFFIX}"
        if index_type not in SUPPORTED_TYPES or any(not c or "[" in c for c in columns):
            out.append(f"{key}={options[key]}")
    version_keys = [k for k in options if k.startswith(PREFIX + BITMAP + ".") and k.endswith(".version")]
    out.extend(f"{k}={options[k]}" for k in version_keys if options[k].strip() not in ("1", "2"))
    return sorted(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnIndex:
    """One index of one column: its type and options (``items``/``fpp`` for bloom filters)."""

    column: str
    index_type: str
    data_type: DataType
    items: int = DEFAULT_ITEMS
    fpp: float = DEFAULT_FPP


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexSettings:
    """The file indexes of new data files and where their bytes go."""

    indexes: tuple[ColumnIndex, ...]
    in_manifest_threshold: int = DEFAULT_THRESHOLD
    read_enabled: bool = True

    @property
    def enabled(self) -> bool:
        return bool(self.indexes)

    @classmethod
    def from_options(cls, options: Mapping[str, str], fields: Sequence[DataField]) -> FileIndexSettings:
        """Parse ``options`` against the table's columns. Raises :class:`InvalidOptionError` for a
        column that does not exist, a column type the index cannot hold, or a bad option value
        (call :func:`unsupported_file_index_options` first: the gate refuses the rest)."""
        by_name = {f.name: f for f in fields}
        threshold_text = options.get(THRESHOLD_KEY)
        try:
            threshold = DEFAULT_THRESHOLD if threshold_text is None else parse_memory_size(threshold_text)
        except (ValueError, InvalidOptionError) as exc:
            raise InvalidOptionError(THRESHOLD_KEY, threshold_text, "not a memory size") from exc
        read_enabled = file_index_read_enabled(options)
        indexes = []
        for index_type, columns in _declared(options).items():
            if index_type not in SUPPORTED_TYPES:
                continue
            key = f"{PREFIX}{index_type}{COLUMNS_SUFFIX}"
            for column in dict.fromkeys(columns):
                field = by_name.get(column)
                if field is None:
                    raise InvalidOptionError(key, options[key], f"column {column!r} does not exist")
                if field.type.root not in _ROOTS[index_type]:
                    raise InvalidOptionError(key, options[key], f"a {index_type} index cannot hold "
                                             f"{field.type.root} column {column!r}")
                items, fpp = _column_options(options, index_type, column)
                indexes.append(ColumnIndex(column=column, index_type=index_type, data_type=field.type,
                                           items=items, fpp=fpp))
        return cls(indexes=tuple(indexes), in_manifest_threshold=threshold, read_enabled=read_enabled)


def _column_options(options: Mapping[str, str], index_type: str, column: str) -> tuple[int, float]:
    """``(items, fpp)`` of one column's bloom filter (Paimon's defaults for other index types)."""
    items, fpp = DEFAULT_ITEMS, DEFAULT_FPP
    if index_type != BLOOM_FILTER:
        return items, fpp
    items_key, fpp_key = f"{PREFIX}{index_type}.{column}.items", f"{PREFIX}{index_type}.{column}.fpp"
    if items_key in options:
        try:
            items = int(options[items_key])
        except ValueError:
            raise InvalidOptionError(items_key, options[items_key], "not an integer") from None
        if items <= 0:
            raise InvalidOptionError(items_key, options[items_key], "must be positive")
    if fpp_key in options:
        try:
            fpp = float(options[fpp_key])
        except ValueError:
            raise InvalidOptionError(fpp_key, options[fpp_key], "not a number") from None
        if not 0.0 < fpp < 1.0:
            raise InvalidOptionError(fpp_key, options[fpp_key], "must be between 0 and 1 (exclusive)")
    return items, fpp
