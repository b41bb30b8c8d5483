"""Installed as the top-level package ``pyspark_paimonflow``: PySpark 4 registers the
``DefaultSource`` of every installed ``pyspark_*`` module in each session it starts, so
``spark.read.format("paimonflow")`` works with no registration call (see docs/spark.md)."""

from paimonflow.jobs.datasource import PaimonflowDataSource as DefaultSource

__all__ = ["DefaultSource"]
