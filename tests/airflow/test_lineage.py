"""The OpenLineage naming of tables and files (``operators/airflow/lineage.py``); the emitted events
themselves are checked in the real deployment (``test_deployment.py``)."""

from __future__ import annotations

import os

import pytest

from paimonflow.operators.airflow.lineage import _file_dataset, namespace_of


@pytest.mark.parametrize(("uri", "namespace"), [
    ("/data/lake/", "file:///data/lake"),
    ("s3://bucket/lake", "s3://bucket/lake"),
    ("s3://AKIAFAKE:fake-secret@bucket/lake/", "s3://bucket/lake"),  # credentials never in a namespace
    ("hdfs://namenode:8020/warehouse", "hdfs://namenode:8020/warehouse"),
    ("oss://bucket/wh?token=abc#x", "oss://bucket/wh"),
])
def test_a_warehouse_uri_is_its_namespace_without_credentials(uri: str, namespace: str) -> None:
    assert namespace_of(uri) == namespace


def test_a_relative_path_is_made_absolute() -> None:
    assert namespace_of("lake") == "file://" + os.path.abspath("lake")


@pytest.mark.parametrize(("path", "dataset"), [
    ("/landing/2026-11-26T13", ("file", "/landing/2026-11-26T13")),
    ("s3://bucket/landing/day", ("s3://bucket", "landing/day")),
    ("s3://key:secret@bucket/landing", ("s3://bucket", "landing")),
])
def test_files_are_named_as_openlineage_names_them(path: str, dataset: tuple[str, str]) -> None:
    assert _file_dataset(path) == dataset
