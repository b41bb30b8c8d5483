"""The file to hand to ``spark-submit``: ``spark-submit [spark options] <this file> <job> [job options]``,
and the one builder of that command, :func:`submit_command`.

``python -c "import paimonflow.jobs.submit as s; print(s.__file__)"`` prints its path once
paimonflow is installed; on a cluster, ship an environment packed with the wheel, or install the
wheel on every node (``--py-files`` carries no dependencies: see docs/spark.md, "On a cluster").

Both integrations submit through :func:`submit_command`: the Airflow operators hand its
application and arguments to the Airflow Spark provider's ``SparkSubmitHook`` (which adds the
Spark connection's options), the Dagster ``SparkResource`` runs :meth:`SubmitCommand.argv`.
Storage options, credentials included, travel in the ``PAIMONFLOW_STORAGE_OPTIONS`` environment
variable of :attr:`SubmitCommand.env`, never on argv, where ``ps`` and a scheduler's log of the
command would show them (reliability S9).

A driver-only job (:data:`~paimonflow.jobs.registry.DRIVER_ONLY_JOBS`: tags, expiries, rollback,
branches, consumers, analyze) runs no Spark task, so its command asks for no executors
(:data:`NO_EXECUTORS_CONF`); without that a standalone master gives the application every free
core of the cluster for as long as the driver lives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from paimonflow.jobs.cli import main
from paimonflow.jobs.location import STORAGE_OPTIONS_ENV, TableLocation
from paimonflow.jobs.registry import DRIVER_ONLY_JOBS, cli_arguments

APPLICATION = __file__  # the application file spark-submit runs

NO_EXECUTORS_CONF: Mapping[str, str] = MappingProxyType({
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",  # no external shuffle service needed
    "spark.dynamicAllocation.minExecutors": "0",
    "spark.dynamicAllocation.initialExecutors": "0",
})
"""The Spark settings of a driver-only job's command: an application that starts with no executor
and asks for one only if a task is ever pending (none is, for these jobs), on a standalone master,
YARN and Kubernetes alike. ``spark.cores.max=0`` and ``spark.executor.instances=0`` would say it
more directly, but spark-submit refuses both ("must be a positive number"). A
``spark.executor.instances`` set elsewhere (``spark-defaults.conf``) still starts that many
executors: Spark starts the larger of it and ``initialExecutors``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitCommand:
    """One paimonflow job as a ``spark-submit`` application.

    ``application_args`` never holds a storage option; ``env`` holds them (empty when the table's
    storage needs none) and must be added to the environment of the ``spark-submit`` process."""

    application: str = APPLICATION
    application_args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    conf: Mapping[str, str] = field(default_factory=dict)  # Spark settings the job asks for

    def spark_conf(self, conf: Mapping[str, str] | None = None) -> dict[str, str]:
        """The Spark settings to submit with: the job's own (:attr:`conf`), then the caller's
        ``conf``, which wins key by key (a caller that sets
        ``spark.dynamicAllocation.enabled=false`` gets its executors, even for a driver-only job)."""
        return {**self.conf, **(conf or {})}

    def argv(self, *, spark_submit: str = "spark-submit", master: str | None = None,
             conf: Mapping[str, str] | None = None, name: str | None = None) -> list[str]:
        """The whole command as an argument list (never a shell string):
        ``spark_submit [--master m] [--name n] [--conf k=v ...] <application> <application_args>``,
        the settings being :meth:`spark_conf` of ``conf``."""
        command = [spark_submit]
        if master:
            command += ["--master", master]
        if name:
            command += ["--name", name]
        for key, value in self.spark_conf(conf).items():
            command += ["--conf", f"{key}={value}"]
        return [*command, self.application, *self.application_args]


def submit_command(job: str, location: TableLocation, arguments: Mapping[str, Any], *,
                   result_file: str | None) -> SubmitCommand:
    """The command running ``job`` on ``location`` with ``arguments`` (the keyword arguments
    :func:`paimonflow.jobs.registry.run_job` takes), writing its JSON result to ``result_file``:
    ``--result-file <result_file> <job> -w <warehouse> -t <table> [job options]``, and the table's
    storage options as one JSON object in ``PAIMONFLOW_STORAGE_OPTIONS``. Pure: starts nothing.
    ``result_file=None``: the result comes back another way (Dagster Pipes, jobs/pipes.py).
    A driver-only job's command carries :data:`NO_EXECUTORS_CONF` as its :attr:`SubmitCommand.conf`."""
    args = (*(("--result-file", result_file) if result_file else ()), job, "-w", location.warehouse, "-t", location.identifier,
            *cli_arguments(arguments))
    storage = dict(location.storage_options)
    return SubmitCommand(application_args=args, env={STORAGE_OPTIONS_ENV: json.dumps(storage)} if storage else {},
                         conf=dict(NO_EXECUTORS_CONF) if job in DRIVER_ONLY_JOBS else {})


__all__ = ["APPLICATION", "NO_EXECUTORS_CONF", "SubmitCommand", "submit_command"]

if __name__ == "__main__":
    main()
