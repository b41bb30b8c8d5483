"""The merge-engine settings of a primary-key table, parsed once from its options."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..merge import spec_from_options
from .core import CoreOptions

if TYPE_CHECKING:
    from ..meta.schema import TableSchema


def merge_spec_for(schema: TableSchema, options: CoreOptions, *, keep_deletes: bool):
    """The merge-engine spec of a primary-key table, or None for ``deduplicate`` (which the
    writer and the reader do with their own faster key-only path)."""
    if options.merge_engine.value == "deduplicate":
        return None
    return spec_from_options(schema.options, keep_deletes=keep_deletes)
