"""Named crash points for fault-injection tests.

``crash_point("expire:after-data-files")`` kills the process with SIGKILL when the environment
variable ``PAIMONFLOW_CRASH_AT`` names that point; otherwise it does nothing. Tests use it to
prove that a job killed at any step leaves a readable table and that a rerun finishes the job.
"""

from __future__ import annotations

import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("PAIMONFLOW_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
