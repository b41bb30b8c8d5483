"""Runs one piped write op in process (what a run worker does); SIGINT is the run's termination."""
import json
import os
import sys

import dagster as dg

from paimonflow.operators.dagster import PaimonResource, SparkResource, paimon_job_op

warehouse, source = sys.argv[1], sys.argv[2]
write = paimon_job_op("write", "db.t", name="write_t", path=source)


@dg.job
def terminated():
    write()


spark = SparkResource(master="local[1]", submit=True,
                      spark_submit=os.path.join(os.path.dirname(sys.executable), "spark-submit"))
with dg.DagsterInstance.ephemeral() as instance:
    result = terminated.execute_in_process(resources={"paimon": PaimonResource(warehouse=warehouse), "spark": spark},
                                           instance=instance, raise_on_error=False)
    print(json.dumps({"success": result.success,
                      "logs": [e.user_message for e in instance.all_logs(result.run_id)]}))
