"""Where a CSV source of the write job does not parse: the Spark side of
:mod:`paimonflow.core.data.csv_records`.

The job reads CSV in ``FAILFAST`` mode, and Spark then fails with the first malformed record's
parsed values (the bad ones as nulls) and the first bad value's Java exception: no column name,
no line, nothing about the other records. After that failure the job reads the source once more
in ``PERMISSIVE`` mode, with the same parser, schema and options, keeping each malformed record's
raw text, its file and its record number in that file (blank lines are no records, as Spark
skips them), and names every column holding a value its type cannot take.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import TYPE_CHECKING

from paimonflow.core.data.csv_records import BadRecord, BadValue

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from .write import WriteSource

CORRUPT = "__paimonflow_corrupt_record"
FILE, BLOCK, POSITION, RECORD = "__paimonflow_file", "__paimonflow_block", "__paimonflow_position", "__paimonflow_record"
#: malformed records looked at: the first ones, files in path order
LIMIT = 1000


def csv_source_problems(spark, source: WriteSource, schema: StructType,
                        type_names: Mapping[str, str]) -> tuple[list[BadValue], list[BadRecord]]:
    """Each column of ``schema`` (the CSV's header, with the table's types) holding a value its
    type cannot take, with the first such value, and the records whose field count differs from
    the header's. ``type_names`` names the table's types in Paimon's notation."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    options = {k.lower(): v for k, v in (source.read_options or {}).items()}
    reader = spark.read.format("csv").option("header", "true")
    for key, value in (source.read_options or {}).items():
        reader = reader.option(key, value)
    rows = (reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
            .schema(StructType([*schema.fields, StructField(CORRUPT, StringType(), True)])).load(source.path)
            .select("*", F.col("_metadata.file_path").alias(FILE), F.col("_metadata.file_block_start").alias(BLOCK),
                    F.monotonically_increasing_id().alias(POSITION)))
    # within a file, a record's split and its position in the split order the records
    numbered = rows.withColumn(RECORD, F.row_number().over(Window.partitionBy(FILE).orderBy(BLOCK, POSITION)))
    malformed = numbered.where(F.col(CORRUPT).isNotNull()).orderBy(FILE, RECORD).limit(LIMIT).collect()
    delimiter = options.get("sep") or options.get("delimiter") or ","
    quotechar, escapechar = options.get("quote") or '"', options.get("escape", "\\") or None
    null = options.get("nullvalue", "")
    first: dict[str, BadValue] = {}
    records: list[BadRecord] = []
    for row in malformed:
        tokens = next(csv.reader([row[CORRUPT]], delimiter=delimiter, quotechar=quotechar, escapechar=escapechar), [])
        if len(tokens) != len(schema.fields):
            records.append(BadRecord(record=row[RECORD], fields=len(tokens), expected=len(schema.fields),
                                     text=row[CORRUPT], file=row[FILE]))
            continue
        for field, token in zip(schema.fields, tokens, strict=True):
            if (field.name not in first and row[field.name] is None and token != null
                    and not isinstance(field.dataType, StringType)):
                first[field.name] = BadValue(column=field.name, type_name=type_names[field.name],
                                             value=token, record=row[RECORD], file=row[FILE])
    return [first[f.name] for f in schema.fields if f.name in first], records
