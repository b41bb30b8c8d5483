"""The ``paimonflow`` Spark data source on local[2]: batch and streaming reads and writes."""

from __future__ import annotations

import glob
import os
import pickle

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "dt": ["x", "x", "y", "y"]}, schema=SCHEMA))
    t.tags.create("first")
    t.write(pa.table({"id": [1, 5], "v": ["A", "e"], "dt": ["x", "y"]}, schema=SCHEMA))
    return t


def reader(spark, catalog):
    return spark.read.format("paimonflow").option("warehouse", catalog.warehouse)


def as_set(rows) -> set[tuple]:
    return {tuple(r) for r in rows}


def core_set(table, **kw) -> set[tuple]:
    return {(r["id"], r["v"], r["dt"]) for r in table.read(**kw).to_pylist()}


def test_batch_read_matches_the_core(spark, catalog, table):
    df = reader(spark, catalog).load("db.t")
    assert df.schema.names == ["id", "v", "dt"] and not df.schema["id"].nullable
    assert as_set(df.collect()) == core_set(table)


def test_small_splits_are_packed_into_as_many_partitions_as_the_session_runs_at_once(spark, catalog):
    t = catalog.create_table("db.many", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "8"})
    t.write(pa.table({"id": list(range(400)), "v": ["v"] * 400, "dt": [f"d{i % 5}" for i in range(400)]},
                     schema=SCHEMA))
    splits = len(t.plan())
    assert splits == 40
    packed = reader(spark, catalog).load("db.many")
    parallelism = spark.sparkContext.defaultParallelism
    assert packed.rdd.getNumPartitions() == parallelism  # 40 equal splits, each far below the target size
    assert as_set(packed.collect()) == core_set(t)
    # Paimon's split options, given on the read: a 1-byte target leaves every split alone
    alone = reader(spark, catalog).option("source.split.target-size", "1 b").load("db.many")
    assert alone.rdd.getNumPartitions() == splits
    assert as_set(alone.collect()) == core_set(t)
    with pytest.raises(Exception, match=r"source\.split\.target-size"):
        reader(spark, catalog).option("source.split.target-size", "lots").load("db.many").collect()


def test_projection_by_schema_or_columns_and_partition_pruning_by_option(spark, catalog, table):
    projected = reader(spark, catalog).schema("id long, dt string").load("db.t")
    assert as_set(projected.collect()) == {(r[0], r[2]) for r in core_set(table)}
    by_option = reader(spark, catalog).option("columns", "dt, id").load("db.t")
    assert by_option.columns == ["dt", "id"]
    assert as_set(by_option.collect()) == {(r[2], r[0]) for r in core_set(table)}
    only_x = reader(spark, catalog).option("partitions", "dt=x").load("db.t")
    assert as_set(only_x.collect()) == {r for r in core_set(table) if r[2] == "x"}
    either = reader(spark, catalog).option("partitions", "dt=x;dt=y").load("db.t")
    assert as_set(either.collect()) == core_set(table)
    # the option prunes the plan: only dt=x splits are read
    from paimonflow.jobs.datasource import PaimonflowReader
    from paimonflow.jobs.location import TableLocation

    whole = PaimonflowReader(TableLocation(catalog.warehouse, "db.t"), {}, projected.schema)
    pruned = PaimonflowReader(TableLocation(catalog.warehouse, "db.t"), {"partitions": "dt=x"}, projected.schema)
    planned = [len(pickle.loads(p.payload)) for p in pruned.partitions()]
    assert sum(planned) == len([s for s in table.plan() if s.partition == ("x",)]) < len(table.plan())
    assert sum(len(pickle.loads(p.payload)) for p in whole.partitions()) == len(table.plan())


def test_a_filtered_query_does_not_change_the_answer_of_a_later_query_on_the_same_dataframe(spark, catalog, table):
    """PySpark 4.3 keeps the plan of a query with pushable filters and runs it again for the next
    query of the same DataFrame without filters: a plan pruned by those filters lost rows."""
    df = reader(spark, catalog).load("db.t")
    everything = core_set(table)
    assert df.filter("dt = 'x'").count() == len([r for r in everything if r[2] == "x"]) < len(everything)
    assert df.count() == len(everything)
    assert as_set(df.collect()) == everything


def test_a_dataframe_and_its_views_read_the_table_as_it_is_at_each_action(spark, catalog, table):
    """Rows added to planned buckets and to buckets the plan never saw (a new partition), a
    compaction, then an overwrite: every action on the same DataFrame and views reads exactly the
    latest snapshot (each bucket by one task), a pinned read stays where it was."""
    df = reader(spark, catalog).load("db.t")
    df.createOrReplaceTempView("fresh_df")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW fresh_sql USING paimonflow OPTIONS (warehouse '{catalog.warehouse}', "
              "path 'db.t')")
    pinned = reader(spark, catalog).option("snapshot-id", "2").load("db.t")
    at_two = core_set(table, snapshot_id=2)
    assert as_set(df.collect()) == core_set(table)

    def check() -> None:
        now = core_set(catalog.get_table("db.t"))
        assert as_set(df.collect()) == now
        assert as_set(spark.sql("SELECT * FROM fresh_df").collect()) == now
        assert as_set(spark.sql("SELECT * FROM fresh_sql").collect()) == now
        assert as_set(pinned.collect()) == at_two

    days = [f"d{i}" for i in range(12)]
    catalog.get_table("db.t").write(pa.table({"id": list(range(100, 124)), "v": ["n"] * 24, "dt": days * 2},
                                             schema=SCHEMA))
    check()
    catalog.get_table("db.t").compact(full=True)
    check()
    catalog.get_table("db.t").write(pa.table({"id": [1], "v": ["only"], "dt": ["x"]}, schema=SCHEMA), overwrite=True)
    check()
    spark.sql("INSERT INTO fresh_sql VALUES (7, 'mine', 'y')")
    check()


def test_a_dataframe_follows_an_options_change_and_refuses_a_column_change_in_one_line(spark, catalog, table):
    """An options-only change makes a new schema with the same columns: a planned DataFrame reads
    on (it once refused as if its columns had changed); a new column is one typed line."""
    from paimonflow.core.meta.schema_changes import AddColumn, SetOption

    df = reader(spark, catalog).load("db.t")
    assert as_set(df.collect()) == core_set(table)
    t = catalog.get_table("db.t")
    t.alter([SetOption("snapshot.num-retained.min", "20")])
    catalog.get_table("db.t").write(pa.table({"id": [9], "v": ["new"], "dt": ["x"]}, schema=SCHEMA))
    assert as_set(df.collect()) == core_set(catalog.get_table("db.t"))
    t = catalog.get_table("db.t")
    t.alter([AddColumn("note", pa.string())])
    catalog.get_table("db.t").write(pa.table({"id": [10], "v": ["w"], "dt": ["y"], "note": ["n"]}))
    with pytest.raises(Exception, match=r"SchemaError: the schema of table 'db.t' changed .* load it again"):
        df.collect()


@pytest.mark.parametrize(("option", "message"), [
    ("dt=x,v=a", r"\['v'\], which are not partition columns"),
    ("dt", r"must be k=v"),
])
def test_a_bad_partitions_option_is_one_typed_line(spark, catalog, table, option, message):
    with pytest.raises(Exception, match=message) as raised:
        reader(spark, catalog).option("partitions", option).load("db.t").collect()
    assert "Traceback" not in str(raised.value)


def test_a_stream_refuses_the_partitions_option_rather_than_ignore_it(spark, catalog, table):
    stream = (spark.readStream.format("paimonflow").option("warehouse", catalog.warehouse)
              .option("partitions", "dt=x").load("db.t").writeStream.format("memory").queryName("never").start())
    try:
        with pytest.raises(Exception, match="the partitions option is for batch reads"):
            stream.processAllAvailable()
    finally:
        stream.stop()


def test_a_bad_columns_option_names_the_columns(spark, catalog, table):
    with pytest.raises(Exception, match=r"the columns option names \['nope'\]") as raised:
        reader(spark, catalog).option("columns", "id,nope").load("db.t")
    assert "Traceback" not in str(raised.value)


def test_time_travel_by_snapshot_tag_and_timestamp(spark, catalog, table):
    first = core_set(table, snapshot_id=1)
    assert as_set(reader(spark, catalog).option("snapshot-id", "1").load("db.t").collect()) == first
    assert as_set(reader(spark, catalog).option("tag", "first").load("db.t").collect()) == first
    millis = table.snapshot_manager.snapshot(1).time_millis
    assert as_set(reader(spark, catalog).option("scan.timestamp-millis", str(millis)).load("db.t").collect()) == first


def test_time_travel_reads_the_columns_the_snapshot_was_committed_under(spark, catalog, table):
    from paimonflow.core.meta.schema_changes import AddColumn

    table.alter([AddColumn("extra", pa.int32())])
    now = catalog.get_table("db.t")
    now.write(pa.table({"id": [7], "v": ["g"], "dt": ["x"], "extra": pa.array([70], pa.int32())}))
    latest = reader(spark, catalog).load("db.t")
    assert "extra" in latest.columns
    old = reader(spark, catalog).option("snapshot-id", "1").load("db.t")
    assert old.columns == ["id", "v", "dt"] and as_set(old.collect()) == core_set(table, snapshot_id=1)


def test_a_table_by_its_directory_and_through_sql(spark, catalog, table, tmp_path):
    path = table.path  # <warehouse>/db.db/t, as Apache Paimon's connector takes it
    assert as_set(spark.read.format("paimonflow").load(path).collect()) == core_set(table)
    spark.createDataFrame([(6, "f", "x")], "id long, v string, dt string").write.format("paimonflow") \
        .mode("append").save(path)
    assert (6, "f", "x") in core_set(catalog.get_table("db.t"))
    spark.sql(f"CREATE TEMPORARY VIEW paimonflow_sql_v USING paimonflow OPTIONS (path '{path}')")
    spark.sql(f"CREATE TEMPORARY VIEW paimonflow_sql_first USING paimonflow OPTIONS (path '{path}', tag 'first')")
    spark.sql(f"CREATE TABLE paimonflow_sql_t USING paimonflow OPTIONS (path '{path}')")
    try:
        spark.sql("INSERT INTO paimonflow_sql_v VALUES (8, 'h', 'y')")
        got = as_set(spark.sql("SELECT id, v, dt FROM paimonflow_sql_v").collect())
        assert got == core_set(catalog.get_table("db.t")) and (8, "h", "y") in got
        filtered = spark.sql("SELECT id FROM paimonflow_sql_v WHERE dt = 'y' AND id > 3").collect()
        assert {r.id for r in filtered} == {r[0] for r in got if r[2] == "y" and r[0] > 3}
        assert as_set(spark.sql("SELECT * FROM paimonflow_sql_first").collect()) == core_set(table, tag="first")
        # a catalog table of a Python data source: Spark hands its reader and writer no options
        for statement in ("SELECT * FROM paimonflow_sql_t", "INSERT INTO paimonflow_sql_t VALUES (9, 'i', 'y')"):
            with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
                spark.sql(statement).collect()
        assert (9, "i", "y") not in core_set(catalog.get_table("db.t"))
    finally:
        for view in ("paimonflow_sql_v", "paimonflow_sql_first"):
            spark.sql(f"DROP VIEW IF EXISTS {view}")
        spark.sql("DROP TABLE IF EXISTS paimonflow_sql_t")
    with pytest.raises(Exception, match="not a table directory"):
        spark.read.format("paimonflow").load(str(tmp_path)).collect()


def test_append_upsert_and_overwrite_writes(spark, catalog, table):
    rows = spark.createDataFrame([(2, "B", "x"), (9, "i", "z")], "id long, v string, dt string")
    rows.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.t")
    t = catalog.get_table("db.t")
    assert (2, "B", "x") in core_set(t) and (9, "i", "z") in core_set(t)
    # deletes through a row-kind column
    gone = spark.createDataFrame([(9, None, "z", "-D")], "id long, v string, dt string, kind string")
    gone.write.format("paimonflow").option("warehouse", catalog.warehouse).option("rowkind-column", "kind") \
        .mode("append").save("db.t")
    assert all(r[0] != 9 for r in core_set(catalog.get_table("db.t")))
    # dynamic overwrite replaces the partitions present (dt=y)
    y = spark.createDataFrame([(7, "g", "y")], "id long, v string, dt string")
    y.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("overwrite").save("db.t")
    now = core_set(catalog.get_table("db.t"))
    assert {r for r in now if r[2] == "y"} == {(7, "g", "y")} and any(r[2] == "x" for r in now)
    # static overwrite of one partition
    x = spark.createDataFrame([(8, "h", "x")], "id long, v string, dt string")
    x.write.format("paimonflow").option("warehouse", catalog.warehouse).option("overwrite-partition", "dt=x") \
        .mode("overwrite").save("db.t")
    now = core_set(catalog.get_table("db.t"))
    assert {r for r in now if r[2] == "x"} == {(8, "h", "x")} and {r for r in now if r[2] == "y"} == {(7, "g", "y")}


def test_tasks_sharing_buckets_keep_the_last_row_per_key_consistent(spark, catalog):
    t = catalog.create_table("db.many", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    df = spark.range(0, 400, numPartitions=4).selectExpr("id % 50 as id", "cast(id as string) as v", "'p' as dt")
    df.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.many")
    got = catalog.get_table("db.many").read()
    # task p holds ids 100p..100p+99; within a task the later row wins, across tasks the one with
    # the higher (interleaved) sequence numbers: deterministic, and the same for every reader
    assert {r["id"]: r["v"] for r in got.to_pylist()} == {k: str(350 + k) for k in range(50)}
    import pyarrow.parquet as pq

    numbers = [n for p in glob.glob(os.path.join(t.path, "dt=p", "bucket-0", "*.parquet"))
               for n in pq.read_table(p, columns=["_SEQUENCE_NUMBER"]).column(0).to_pylist()]
    assert len(numbers) == len(set(numbers)) == 200  # 4 tasks x 50 keys, no number shared


def test_dynamic_bucket_tables_are_refused_with_a_pointer_to_the_write_job(spark, catalog):
    catalog.create_table("db.dyn", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1"})
    rows = spark.createDataFrame([(1, "a", "x")], "id long, v string, dt string")
    with pytest.raises(Exception, match=r"paimonflow\.jobs\.write"):
        rows.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.dyn")


def test_columns_of_types_the_table_refuses_fail_before_any_task_writes(spark, catalog, table):
    """The core's rule of lossless conversions, checked on the DataFrame's schema: numbers into
    the STRING partition key are refused (they would make partition dt=20261120); a long into the
    table's INT column is written when every value fits."""
    before = table.snapshot_manager.latest_id()
    rows = spark.createDataFrame([(6, "f", 20261120)], "id long, v string, dt long")
    with pytest.raises(Exception, match=r"SchemaError: column 'dt' holds int64 values but the table's type is STRING"):
        rows.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.t")
    assert catalog.get_table("db.t").snapshot_manager.latest_id() == before
    catalog.create_table("db.narrow", pa.schema([pa.field("id", pa.int32(), nullable=False),
                                                  ("v", pa.string())]))
    fits = spark.createDataFrame([(7, "g")], "id long, v string")
    fits.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.narrow")
    assert catalog.get_table("db.narrow").read().to_pylist() == [{"id": 7, "v": "g"}]
    overflow = spark.createDataFrame([(2**40, "h")], "id long, v string")
    with pytest.raises(Exception, match=r"column 'id' holds int64 values that the table's type INT cannot hold"):
        overflow.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.narrow")
    assert catalog.get_table("db.narrow").read().num_rows == 1


def test_streaming_read_picks_up_three_commits_and_records_consumer_progress(spark, catalog, table, tmp_path):
    query = (spark.readStream.format("paimonflow").option("warehouse", catalog.warehouse)
             .option("scan.mode", "latest").option("consumer-id", "spark-reader").option("with-rowkind", "true")
             .load("db.t").writeStream.format("memory").queryName("changes").outputMode("append").start())
    try:
        query.processAllAvailable()
        assert spark.sql("select * from changes").count() == 0  # 'latest': only new commits
        for i in range(3):
            table.write(pa.table({"id": [100 + i], "v": [f"n{i}"], "dt": ["x"]}, schema=SCHEMA))
            query.processAllAvailable()
        got = {(r["rowkind"], r["id"]) for r in spark.sql("select * from changes").collect()}
        assert got == {("+I", 100), ("+I", 101), ("+I", 102)}
    finally:
        query.stop()
    # Spark commits a micro-batch's offsets when the next batch starts: the consumer may lag by
    # one batch (it then protects one snapshot too many), never run ahead of what was processed
    latest = table.snapshot_manager.latest_id()
    assert latest <= table.consumer_manager.get("spark-reader").next_snapshot <= latest + 1


def test_streaming_write_commits_once_per_micro_batch(spark, catalog, table, tmp_path):
    target = catalog.create_table("db.copy", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                  options={"bucket": "2"})
    checkpoint = str(tmp_path / "cp")
    stream = (spark.readStream.format("paimonflow").option("warehouse", catalog.warehouse).load("db.t")
              .writeStream.format("paimonflow").option("warehouse", catalog.warehouse)
              .option("checkpointLocation", checkpoint).start("db.copy"))
    try:
        stream.processAllAvailable()
        table.write(pa.table({"id": [50], "v": ["new"], "dt": ["y"]}, schema=SCHEMA))
        stream.processAllAvailable()
    finally:
        stream.stop()
    target = catalog.get_table("db.copy")
    assert core_set(target) == core_set(catalog.get_table("db.t"))
    users = {s.commit_user for s in target.snapshot_manager.snapshots()}
    identifiers = [s.commit_identifier for s in target.snapshot_manager.snapshots()]
    assert len(users) == 1 and identifiers == sorted(set(identifiers))  # one commit per batch id


def test_a_replayed_micro_batch_commits_nothing(spark, catalog, table, tmp_path):
    """Spark replays the last micro-batch after a crash between commit and checkpoint: the
    batch id is the commit identifier, so the replay adds no rows and leaves no files."""
    import pickle

    from paimonflow.jobs.datasource import PaimonflowCommitMessage, PaimonflowStreamWriter
    from paimonflow.jobs.location import TableLocation

    writer = PaimonflowStreamWriter(TableLocation(catalog.warehouse, "db.t"),
                                    {"checkpointlocation": str(tmp_path / "cp")}, False)
    batch = pa.table({"id": [60], "v": ["once"], "dt": ["x"]}, schema=SCHEMA)

    def attempt():
        t = catalog.get_table("db.t")
        with t.new_write(compact=False) as w:
            w.write(batch)
            return PaimonflowCommitMessage(pickle.dumps(w.prepare_commit()))

    before = len(glob.glob(os.path.join(table.path, "dt=x", "*", "*.parquet")))
    writer.commit([attempt()], batchId=7)
    latest = catalog.get_table("db.t").snapshot_manager.latest_id()
    writer.commit([attempt()], batchId=7)  # the replay
    t = catalog.get_table("db.t")
    assert t.snapshot_manager.latest_id() == latest
    assert sorted(r["v"] for r in t.read().to_pylist() if r["id"] == 60) == ["once"]
    assert len(glob.glob(os.path.join(table.path, "dt=x", "*", "*.parquet"))) == before + 1


def test_tables_the_gate_refuses_fail_on_the_driver_in_one_typed_line(spark, catalog, table, tmp_path):
    """The capability gate through the data source: a batch write, a batch read and a streaming
    read of tables paimonflow does not implement fail before Spark runs a task, naming the error,
    the feature and the operation; no file changes."""
    import json

    from tests.files import tree

    def with_option(key: str, value: str) -> None:
        schema_file = os.path.join(table.path, "schema", f"schema-{table.schema.id}")
        with open(schema_file) as f:
            doc = json.load(f)
        doc["options"][key] = value
        with open(schema_file, "w") as f:
            json.dump(doc, f)

    with_option("data-file.external-paths", "s3://elsewhere/ext")  # read, but neither written nor compacted
    with_option("data-file.external-paths.strategy", "round-robin")
    before = tree(tmp_path)
    rows = spark.createDataFrame([(9, "z", "x")], "id long, v string, dt string")
    with pytest.raises(Exception, match=r"UnsupportedFeatureError: table db\.t uses external data paths .* for write"):
        rows.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.t")
    assert tree(tmp_path) == before
    assert reader(spark, catalog).load("db.t").count() == 5
    with_option("data-file.path-directory", "/elsewhere")  # not even read
    before = tree(tmp_path)
    with pytest.raises(Exception, match=r"UnsupportedFeatureError: table db\.t uses a data-file.path-directory .* read"):
        reader(spark, catalog).load("db.t").collect()
    with pytest.raises(Exception, match=r"UnsupportedFeatureError: table db\.t uses a data-file.path-directory .* read"):
        spark.readStream.format("paimonflow").option("warehouse", catalog.warehouse).load("db.t") \
            .writeStream.format("memory").queryName("refused").start().processAllAvailable()
    assert tree(tmp_path) == before


def test_the_columns_option_reads_row_ids_of_a_row_tracking_table(spark, catalog):
    """As Paimon's Spark connector exposes them: ``_ROW_ID`` and ``_SEQUENCE_NUMBER``."""
    t = catalog.create_table("db.tracked", SCHEMA, partition_keys=["dt"],
                             options={"row-tracking.enabled": "true", "bucket": "-1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["x", "y"]}, schema=SCHEMA))
    t.write(pa.table({"id": [3], "v": ["c"], "dt": ["x"]}, schema=SCHEMA))
    got = reader(spark, catalog).option("columns", "id,_ROW_ID,_SEQUENCE_NUMBER").load("db.tracked").collect()
    assert as_set(got) == {(1, 0, 1), (2, 1, 1), (3, 2, 2)}
    rows = spark.createDataFrame([(4, "d", "y")], "id long, v string, dt string")
    rows.write.format("paimonflow").option("warehouse", catalog.warehouse).mode("append").save("db.tracked")
    got = reader(spark, catalog).option("columns", "id,_ROW_ID").load("db.tracked").collect()
    assert as_set(got) == {(1, 0), (2, 1), (3, 2), (4, 3)}
