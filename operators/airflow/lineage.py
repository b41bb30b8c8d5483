"""OpenLineage facets of a finished paimonflow job, for the OpenLineage provider (it calls each
operator's ``get_openlineage_facets_on_complete`` after the task succeeded).

The table is a dataset in the namespace of its warehouse URI (``file:///data/lake``,
``s3://bucket/lake``; never credentials) named ``db.table``, with its schema, its storage (Paimon,
the file format) and its version (the snapshot the job committed or read). A committing job adds
output statistics (rows, files, bytes its snapshot added, read from the snapshot's delta); a write names its source (files, a Spark
table, or its SQL as a job facet); an incremental read names the files it wrote. Only imported
when the OpenLineage provider is installed (paimonflow's ``lineage`` extra)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from paimonflow.core.errors import PaimonflowError


def _local(parts) -> bool:
    return not parts.scheme or len(parts.scheme) == 1  # no scheme (or a Windows drive letter)


def namespace_of(uri: str) -> str:
    """A storage URI without credentials: ``file://`` + the absolute path for a local path."""
    parts = urlsplit(uri)
    if _local(parts):
        return "file://" + os.path.abspath(uri).rstrip("/")
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def _file_dataset(path: str) -> tuple[str, str]:
    """OpenLineage's naming of a file location: ``file`` + the absolute path, or ``scheme://bucket`` + the key."""
    parts = urlsplit(path)
    if _local(parts):
        return "file", os.path.abspath(path)
    return f"{parts.scheme}://{parts.hostname or ''}", parts.path.lstrip("/") or "/"


def table_dataset(table: Any, namespace: str, *, snapshot_id: int | None, output: bool,
                  committed: bool = False) -> Any:
    """The (opened) table as an OpenLineage input or output dataset in ``namespace``;
    ``committed``: the job committed ``snapshot_id`` (its output statistics are added)."""
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import (
        dataset_version_dataset,
        output_statistics_output_dataset,
        schema_dataset,
        storage_dataset,
    )

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
    if not output:
        return InputDataset(namespace=namespace, name=table.identifier, facets=facets)
    statistics: dict[str, Any] = {}
    if committed and snapshot_id is not None:
        stats = table.delta_stats(snapshot_id)  # what the commit added, whichever engine made it
        rows, files, size = stats.added_rows, stats.added_files, stats.added_bytes
        statistics["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=rows, fileCount=files, size=size)
    return OutputDataset(namespace=namespace, name=table.identifier, facets=facets, outputFacets=statistics)


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
        table, warehouse = hook.get_table(identifier), namespace_of(hook.warehouse)  # opened once
        if job == "read-changes":
            inputs.append(table_dataset(table, warehouse, snapshot_id=snapshot_id, output=False))
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
                inputs.append(table_dataset(table, warehouse, snapshot_id=None, output=False))
            # a job's own snapshot id is its commit only for committing jobs (an expiry reports its
            # earliest snapshot): any other job, and one that committed nothing, shows the table as it is
            committed = operator.commits and snapshot_id is not None and not result.get("already_committed")
            if not (operator.commits and snapshot_id is not None):
                snapshot_id = table.snapshot_manager.latest_id()
            outputs.append(table_dataset(table, warehouse, snapshot_id=snapshot_id, output=True, committed=committed))
    except PaimonflowError as exc:  # lineage never fails a task that succeeded
        operator.log.warning("no OpenLineage facets for %s: %s", identifier, exc)
        return OperatorLineage()
    return OperatorLineage(inputs=inputs, outputs=outputs, job_facets=job_facets)
