"""What the jobs ask of a session, on a classic session and on Spark Connect alike."""

from __future__ import annotations

from .splits import DEFAULT_PARALLELISM


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master_of(spark) -> str:
    """The master URL ``spark`` runs on."""
    return str(spark.conf.get("spark.master"))


def default_parallelism(spark) -> int:
    """How many tasks the session runs at once by default: ``spark.sql.leafNodeDefaultParallelism``
    or ``spark.default.parallelism`` when set, else the SparkContext's (a classic session), else
    the data source's default (a Connect client cannot ask)."""
    for key in ("spark.sql.leafNodeDefaultParallelism", "spark.default.parallelism"):
        value = spark.conf.get(key, None)
        if value:
            return int(value)
    if is_connect(spark):
        return DEFAULT_PARALLELISM
    return int(spark.sparkContext.defaultParallelism)


def observation(spark, name: str):
    """A new ``Observation`` (metrics Spark gathers while an action runs) of ``spark``'s kind,
    classic or Connect."""
    if is_connect(spark):
        from pyspark.sql.connect import observation
    else:
        from pyspark.sql import observation  # type: ignore[no-redef]
    return observation.Observation(name)
