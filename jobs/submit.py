"""The file to hand to ``spark-submit``: ``spark-submit [spark options] <this file> <job> [job options]``.

``python -c "import paimonflow.jobs.submit as s; print(s.__file__)"`` prints its path once
paimonflow is installed; on a cluster ship the wheel with ``--py-files`` (see docs/spark.md).
"""

from paimonflow.jobs.cli import main

if __name__ == "__main__":
    main()
