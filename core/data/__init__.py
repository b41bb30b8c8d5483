"""Values and data files: Paimon's types and their Arrow mapping (:mod:`.types`), the BinaryRow
encoding (:mod:`.binary_row`), partition paths (:mod:`.partition`), the bucket hash (:mod:`.bucket`),
key ordering (:mod:`.keys`) and the data-file formats with their statistics (:mod:`.data_file`,
:mod:`.avro_data`). Pure functions over Arrow; nothing here knows about snapshots.
"""
