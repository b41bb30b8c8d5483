"""OpenLineage facets of a finished paimonflow job, for the OpenLineage provider (it calls each
operator's ``get_openlineage_facets_on_complete`` after the task succeeded).

The table is a dataset in the namespace of its warehouse URI (``file:///data/lake``,
``s3://bucket/lake``; never credentials) named ``db.table``, with its schema, its storage (Paimon,
the file format) and its version (the snapshot the job committed or read). A committing job adds
output statistics (rows, files, bytes the commit added); a write names its source (files, a Spark
table, or its SQL as a job facet); an incremental read names the files it wrote. Only imported
when the OpenLineage provider is installed (``pip install 'paimonflow[lineage]'``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from paimonflow.core.errors import PaimonflowError


def namespace_of(uri: str) -> str:
    """A storage URI without credentials: ``file://`` + the absolute path for a local path."""
    parts = urlsplit(uri)
    if not parts.scheme or len(parts.scheme) == 1:  # a local path (or a Windows drive letter)
        return "file://" + os.path.abspath(uri).rstrip("/")
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def _file_dataset(path: str) -> tuple[str, str]:
    """OpenLineage's naming of a file location: ``file`` + the absolute path, or ``scheme://bucket`` + the key."""
    parts = urlsplit(path)
    if not parts.scheme or len(parts.scheme) == 1:
        return "file", os.path.abspath(path)
    return f"{parts.scheme}://{parts.hostname or ''}", parts.path.lstrip("/") or "/"


def _added(table: Any, snapshot_id: int | None) -> tuple[int, int] | None:
    """Files and bytes the snapshot's commit added (its delta's ADD entries)."""
    if snapshot_id is None:
        return None
    from paimonflow.core.meta.manifest import FileKind

    snapshot = table.snapshot_manager.snapshot(snapshot_id)
    added = [e.file for e in table.manifest_io.delta_entries(snapshot) if e.kind == FileKind.ADD]
    return len(added), sum(f.file_size for f in added)


def table_dataset(hook: Any, identifier: str, *, snapshot_id: int | None, output: bool,
                  result: Mapping[str, Any] | None = None) -> Any:
    """The table as an OpenLineage input or output dataset."""
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import (
        dataset_version_dataset,
        output_statistics_output_dataset,
        schema_dataset,
        storage_dataset,
    )

    table = hook.get_table(identifier)
    facets: dict[str, Any] = {
        "schema": schema_dataset.SchemaDatasetFacet(fields=[
            schema_dataset.SchemaDatasetFacetFields(name=f.name, type=str(f.type),
                                                    description=f.description or None)
            for f in table.schema.fields]),
        "storage": storage_dataset.StorageDatasetFacet(storageLayer="paimon",
                                                       fileFormat=str(table.options.file_format)),
    }
    if snapshot_id is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(snapshot_id))
    namespace = namespace_of(hook.warehouse)
    if not output:
        return InputDataset(namespace=namespace, name=identifier, facets=facets)
    statistics: dict[str, Any] = {}
    if result is not None and result.get("added_rows") is not None and not result.get("already_committed"):
        files_bytes = _added(table, snapshot_id)
        statistics["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=int(result["added_rows"]), fileCount=files_bytes[0] if files_bytes else None,
            size=files_bytes[1] if files_bytes else None)
    return OutputDataset(namespace=namespace, name=identifier, facets=facets, outputFacets=statistics)


def operator_lineage(operator: Any, hook: Any, result: Mapping[str, Any]) -> Any:
    """The ``OperatorLineage`` of a paimonflow operator that returned ``result``."""
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import output_statistics_output_dataset, sql_job

    job = operator.job
    snapshot_id = result.get("snapshot_id")
    identifier = operator.table
    inputs: list[Any] = []
    outputs: list[Any] = []
    job_facets: dict[str, Any] = {}
    try:
        if job == "read-changes":
            inputs.append(table_dataset(hook, identifier, snapshot_id=snapshot_id, output=False))
            namespace, name = _file_dataset(str(result.get("output") or operator.output_path))
            outputs.append(OutputDataset(namespace=namespace, name=name, outputFacets={
                "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                    rowCount=result.get("rows"))}))
        else:
            if job == "write":
                if operator.path:
                    namespace, name = _file_dataset(str(operator.path))
                    inputs.append(InputDataset(namespace=namespace, name=name))
                elif operator.source_table:
                    inputs.append(InputDataset(namespace="spark", name=str(operator.source_table)))
                if operator.sql:
                    job_facets["sql"] = sql_job.SQLJobFacet(query=str(operator.sql), dialect="spark")
            elif job == "compact":
                inputs.append(table_dataset(hook, identifier, snapshot_id=None, output=False))
            if snapshot_id is None:  # a job that committed nothing, or a metadata-only one: the table as it is
                snapshot_id = hook.get_table(identifier).snapshot_manager.latest_id()
                result = {}
            outputs.append(table_dataset(hook, identifier, snapshot_id=snapshot_id, output=True, result=result))
    except PaimonflowError as exc:  # lineage never fails a task that succeeded
        operator.log.warning("no OpenLineage facets for %s: %s", identifier, exc)
        return OperatorLineage()
    return OperatorLineage(inputs=inputs, outputs=outputs, job_facets=job_facets)
