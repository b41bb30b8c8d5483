"""paimonflow.jobs: the core's operations as PySpark jobs (one (partition, bucket) per task; the
driver commits once) and the ``paimonflow`` Spark data source. See docs/spark.md."""
