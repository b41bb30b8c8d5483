"""Values and data files: Paimon's types and their Arrow mapping (:mod:`.types`), the BinaryRow
encoding (:mod:`.binary_row`), partition paths (:mod:`.partition`), the bucket hash (:mod:`.bucket`),
key ordering (:mod:`.keys`) and the data-file formats with their statistics (:mod:`.data_file`,
:mod:`.avro_data`). Pure functions over Arrow; nothing here knows about snapshots.
"""

from .binary_row import deserialize_row, serialize_row
from .bucket import bucket_ids
from .partition import partition_path
from .types import DataField, DataType, TypeRoot, from_arrow, parse_type_text, to_arrow

__all__ = [
    "DataField",
    "DataType",
    "TypeRoot",
    "bucket_ids",
    "deserialize_row",
    "from_arrow",
    "parse_type_text",
    "partition_path",
    "serialize_row",
    "to_arrow",
]
