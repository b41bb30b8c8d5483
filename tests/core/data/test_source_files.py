"""Landed source files read into a table's columns (``core/data/source_files.py``): what the core
engine's writes (``paimonflow write``, the Airflow write operator on ``engine="core"``) refuse,
each in one typed line naming the file, every column that does not fit, the first bad value of
each and its record; and what they read, from a local folder or an S3 bucket."""

from __future__ import annotations

import json
from datetime import date, time
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from paimonflow.core.data.source_files import read_source_files
from paimonflow.core.errors import InvalidArgumentError, PaimonflowError, SchemaError, SourceError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64()),
                    ("day", pa.date32()), ("at", pa.time32("ms")), ("note", pa.string())])
HEADER = "id,qty,amount,day,at,note\n"


def refusal(path: Path | str, format: str = "csv", **kwargs) -> tuple[type, str]:
    with pytest.raises(PaimonflowError) as info:
        read_source_files(str(path), format, SCHEMA, **kwargs)
    assert "\n" not in str(info.value)
    return type(info.value), str(info.value)


def test_a_csv_file_is_refused_naming_every_bad_column_its_first_value_and_record(tmp_path):
    """pyarrow's own error names one column by position (``CSV column #1: Row #3: invalid value
    'lots'``); the line names every column holding a value its type cannot take, by name."""
    path = tmp_path / "orders.csv"
    path.write_text(HEADER + "1,2,1.5,2026-11-21,10:00:00,a\n2,many,2.5,2026-11-21,10:00:01,b\n\n"
                    "3,4,lots,2026-11-21,10:00:02,c\n4,five,more,2026-11-21,10:00:03,d\n")
    assert refusal(path) == (SchemaError, f"{path}: does not fit the table's columns: column 'qty' (INT) cannot hold "
                                          "'many' (record 2); column 'amount' (DOUBLE) cannot hold 'lots' (record 3)")


def test_a_json_file_is_refused_naming_every_bad_column_dates_and_times_included(tmp_path):
    path = tmp_path / "orders.json"
    rows = [{"id": 1, "qty": 2, "amount": 1.5, "day": "2026-11-21", "at": "10:00:00", "note": "a"},
            {"id": 2, "qty": "many", "day": "2026-13-01"}, {"id": 3, "amount": "lots", "at": "25:61"}]
    path.write_text("\n\n".join(json.dumps(r) for r in rows) + "\n")
    assert refusal(path, "json") == (
        SchemaError, f"{path}: does not fit the table's columns: column 'qty' (INT) cannot hold '\"many\"' (record 2); "
                     "column 'amount' (DOUBLE) cannot hold '\"lots\"' (record 3); column 'day' (DATE) cannot hold "
                     "'\"2026-13-01\"' (record 2); column 'at' (TIME(3)) cannot hold '\"25:61\"' (record 3)")
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"id": 2, "day": 20261121}) + "\n")
    assert refusal(path, "json") == (SchemaError, f"{path}: does not fit the table's columns: column 'day' (DATE) "
                                                  "cannot hold '20261121' (record 2)")  # no days since 1970 guessed
    path.write_text(json.dumps(rows[0]) + "\n" + '{"id": 2, "qty": \n')
    assert refusal(path, "json") == (SourceError, f"{path}: not a readable JSON file: record 2 ('{{\"id\": 2, "
                                                  "\"qty\": ') is not a JSON object")


def test_json_dates_and_times_are_read_from_iso_text(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('{"id": 1, "qty": 2, "amount": 1.5, "day": "2026-11-21", "at": "10:15:00.5", "note": "x"}\n'
                    '{"id": 2, "day": null}\n')
    got = read_source_files(str(path), "json", SCHEMA)
    assert got.schema.types == SCHEMA.types
    assert got.to_pylist() == [{"id": 1, "qty": 2, "amount": 1.5, "day": date(2026, 11, 21),
                                "at": time(10, 15, 0, 500000), "note": "x"},
                               {"id": 2, "qty": None, "amount": None, "day": None, "at": None, "note": None}]


def test_parquet_and_orc_columns_missing_unknown_or_of_another_type_are_one_line(tmp_path):
    odd = pa.table({"id": [1], "qty": ["2"], "amount": [1.0], "day": pa.array([0], pa.date32()),
                    "price": [2.0]})
    for name, write in (("odd.parquet", pq.write_table), ("odd.orc", orc.write_table)):
        write(odd, tmp_path / name)
        assert refusal(tmp_path / name, name.split(".")[1]) == (
            SchemaError, f"{tmp_path / name}: does not fit the table's columns: missing columns ['at', 'note']; "
                         "unknown columns ['price'] (the table's are ['id', 'qty', 'amount', 'day', 'at', 'note']); "
                         "column 'qty' holds string values but the table's type is INT; only lossless conversions "
                         "are written (cast the data first)")


def test_a_value_a_narrower_column_cannot_hold_is_named_with_its_record(tmp_path):
    table = pa.table({"id": [1, 2, 3], "qty": pa.array([1, 2**40, 2**41], pa.int64()), "amount": [1.0] * 3,
                      "day": pa.array([0] * 3, pa.date32()), "at": pa.array([0] * 3, pa.time32("ms")),
                      "note": ["a"] * 3})
    pq.write_table(table, tmp_path / "wide.parquet")
    assert refusal(tmp_path / "wide.parquet", "parquet") == (
        SchemaError, f"{tmp_path / 'wide.parquet'}: does not fit the table's columns: column 'qty' (INT) cannot hold "
                     "'1099511627776' (record 2)")


def test_a_folder_is_read_file_by_file_and_the_bad_file_is_named(tmp_path):
    folder = tmp_path / "landing"
    (folder / "hour=10").mkdir(parents=True)
    (folder / "a.csv").write_text(HEADER + "1,2,1.5,2026-11-21,10:00:00,a\n")
    (folder / "hour=10" / "b.csv").write_text(HEADER + "2,3,2.5,2026-11-22,11:00:00,b\n")
    (folder / "_SUCCESS").write_text("")
    (folder / ".a.csv.crc").write_text("not data")
    got = read_source_files(str(folder), "csv", SCHEMA)
    assert got.column("id").to_pylist() == [1, 2] and got.schema.types == SCHEMA.types
    (folder / "hour=10" / "c.csv").write_text(HEADER + "3,x,2.5,2026-11-22,11:00:00,c\n")
    assert refusal(folder) == (SchemaError, f"{folder}/hour=10/c.csv: does not fit the table's columns: column 'qty' "
                                            "(INT) cannot hold 'x' (record 1)")


def test_extra_columns_are_kept_when_named_and_refused_otherwise(tmp_path):
    path = tmp_path / "kinds.csv"
    path.write_text("id,qty,amount,day,at,note,op\n1,2,1.5,2026-11-21,10:00:00,a,-D\n")
    assert read_source_files(str(path), "csv", SCHEMA, extra_columns=["op"]).column("op").to_pylist() == ["-D"]
    assert refusal(path)[1].endswith("unknown columns ['op'] (the table's are ['id', 'qty', 'amount', 'day', 'at', "
                                     "'note'])")


def test_no_files_an_unreadable_file_and_an_unknown_format(tmp_path):
    assert refusal(tmp_path / "nothing") == (SourceError, f"no source files at {tmp_path / 'nothing'}: no such file "
                                                          "or directory")
    (tmp_path / "empty").mkdir()
    assert refusal(tmp_path / "empty") == (SourceError, f"no source files at {tmp_path / 'empty'}")
    (tmp_path / "text.parquet").write_text("not parquet")
    kind, message = refusal(tmp_path / "text.parquet", "parquet")
    assert kind is SourceError and message.startswith(f"{tmp_path / 'text.parquet'}: not a readable Parquet file: ")
    with pytest.raises(InvalidArgumentError, match="format must be one of parquet, orc, csv, json"):
        read_source_files(str(tmp_path), "avro", SCHEMA)


def test_files_in_an_s3_bucket_are_read_with_the_storage_options(s3_test_server, s3_bucket, s3_storage_options):
    client = s3_test_server.client()
    client.put_object(Bucket=s3_bucket, Key="landing/a.csv", Body=(HEADER + "1,2,1.5,2026-11-21,10:00:00,a\n").encode())
    client.put_object(Bucket=s3_bucket, Key="landing/b.csv", Body=(HEADER + "2,3,2.5,2026-11-21,10:00:00,b\n").encode())
    got = read_source_files(f"s3://{s3_bucket}/landing", "csv", SCHEMA, storage_options=s3_storage_options)
    assert got.column("id").to_pylist() == [1, 2]
    client.put_object(Bucket=s3_bucket, Key="landing/c.csv", Body=(HEADER + "3,3,lots,2026-11-21,10:00:00,c\n").encode())
    assert refusal(f"s3://{s3_bucket}/landing", storage_options=s3_storage_options) == (
        SchemaError, f"s3://{s3_bucket}/landing/c.csv: does not fit the table's columns: column 'amount' (DOUBLE) "
                     "cannot hold 'lots' (record 1)")
