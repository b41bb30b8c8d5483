"""``df.write.format("paimonflow").save()`` without ``.mode(...)``: what PySpark 4.3 does with the
save modes a Python data source cannot be told about.

Spark's ``DataFrameWriter.saveCommand`` (the classic writer, which a Spark Connect server runs
too) refuses ``ErrorIfExists`` (the default) and ``Ignore`` for any ``TableProvider`` that is not
``SupportsCatalogOptions`` and supports batch writes, which every Python data source is: the JVM
raises ``UNSUPPORTED_DATA_SOURCE_SAVE_MODE`` before it creates the data source, so no paimonflow
code runs and none could map those modes onto an append or a no-op (the Python API's ``writer``
receives only ``overwrite: bool``). This test pins that, so that a PySpark that starts passing the
mode on is noticed; docs/spark.md gives the alternatives.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from tests.files import tree


@pytest.mark.parametrize(("mode", "named"), [(None, "ErrorIfExists"), ("error", "ErrorIfExists"),
                                             ("errorifexists", "ErrorIfExists"), ("ignore", "Ignore")])
def test_spark_refuses_the_default_and_ignore_save_modes_before_paimonflow_runs(spark, tmp_path, mode, named):
    from pyspark.errors import AnalysisException

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    before = tree(tmp_path / "wh")
    df = spark.createDataFrame([(1, "a")], "id bigint not null, v string")
    writer = df.write.format("paimonflow").option("warehouse", catalog.warehouse)
    with pytest.raises(AnalysisException) as refused:
        (writer if mode is None else writer.mode(mode)).save("db.t")
    assert refused.value.getCondition() == "UNSUPPORTED_DATA_SOURCE_SAVE_MODE"
    assert str(refused.value).startswith(f'[UNSUPPORTED_DATA_SOURCE_SAVE_MODE] The data source "paimonflow" cannot '
                                         f'be written in the "{named}" mode. Please use either the "Append" or '
                                         '"Overwrite" mode instead.')
    assert tree(tmp_path / "wh") == before  # nothing written
    writer.mode("append").save("db.t")  # the documented way
    assert catalog.get_table("db.t").read().to_pylist() == [{"id": 1, "v": "a"}]
