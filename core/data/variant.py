"""VARIANT columns: which tables may hold them.

A VARIANT value is stored as Paimon writes it to Parquet (``ParquetSchemaConverter``): a group of
two required binaries, ``value`` then ``metadata``, without the Parquet variant annotation and
unshredded; paimonflow carries both binaries as they are (Arrow
``struct<value: binary not null, metadata: binary not null>``, as pypaimon 2.1.0 does) and never
decodes them. Java Paimon writes VARIANT only to Parquet (its ORC writer refuses the type), so a
table with a VARIANT column anywhere must keep its data and changelog files in Parquet; VARIANT
values have no order and no hash, so no key, partition or bucket key is VARIANT (checked with the
other key rules by :func:`paimonflow.core.meta.schema.validate_table_schema`).
Shredded files (``typed_value`` fields, Paimon's ``variant.shreddingSchema``) are not written, and
reading one is refused (:func:`require_unshredded`): its ``value`` lacks what was shredded out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa

from ..errors import SchemaError, UnsupportedError
from .types import DataField, DataType, TypeRoot

#: Options whose file format must be Parquet when a column is VARIANT (their default is Parquet;
#: ``changelog-file.format`` falls back to ``file.format``).
_FORMAT_OPTIONS = ("file.format", "changelog-file.format")


def holds_variant(t: DataType) -> bool:
    """Whether ``t`` is VARIANT or nests one (in an ARRAY, MAP, MULTISET or ROW)."""
    return t.root is TypeRoot.VARIANT or any(holds_variant(child) for child in t.children())


def check_variant_columns(fields: Iterable[DataField], options: Mapping[str, str]) -> None:
    """Raise :class:`SchemaError` when a table with a VARIANT column keeps files in another format
    than Parquet. (Shredding options are unknown to paimonflow: the capability gate refuses every
    change to a table that sets them, and reads refuse shredded files, see
    :func:`require_unshredded`.)"""
    variant = [f.name for f in fields if holds_variant(f.type)]
    if not variant:
        return
    for key in _FORMAT_OPTIONS:
        value = options.get(key, "parquet").strip().lower()
        if value != "parquet":
            raise SchemaError(f"VARIANT columns {variant} need Parquet files, but {key} is {value!r} "
                              "(Paimon writes VARIANT only to Parquet)")


_UNSHREDDED = frozenset({"value", "metadata"})


def require_unshredded(column: str, t: DataType, stored: pa.DataType) -> None:
    """Raise :class:`UnsupportedError` if the file column ``column`` of type ``t``, stored as Arrow
    type ``stored``, holds a shredded VARIANT anywhere: a group with fields beyond ``value`` and
    ``metadata`` (``typed_value``), whose ``value`` lacks what was shredded out of it. Types that
    do not match are left for the read's own type check."""
    if t.root is TypeRoot.VARIANT:
        if pa.types.is_struct(stored) and {f.name for f in stored} != _UNSHREDDED:
            raise UnsupportedError(f"column {column!r} holds shredded VARIANT values (fields "
                                   f"{[f.name for f in stored]}), which paimonflow does not read")
        return
    if t.root is TypeRoot.ROW and pa.types.is_struct(stored):
        by_name = {f.name: f.type for f in stored}
        for f in t.fields or ():
            if f.name in by_name:
                require_unshredded(column, f.type, by_name[f.name])
    elif t.element is not None and (pa.types.is_list(stored) or pa.types.is_large_list(stored)):
        require_unshredded(column, t.element, stored.value_type)
    elif t.key is not None and t.value is not None and pa.types.is_map(stored):
        require_unshredded(column, t.key, stored.key_type)
        require_unshredded(column, t.value, stored.item_type)
