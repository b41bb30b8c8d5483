"""A job's Python driver stops when its parent goes: under spark-submit the driver is a child of
the SparkSubmit JVM, and a scheduler stopping the submission ends the JVM only. A pure-Python phase
(a commit being planned) would otherwise go on; jobs/cli.py watches its parent and turns its loss
into SIGTERM, which interrupts the job like a kill of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.processes import wait_for

# The parent (standing in for the JVM) starts the "driver": busy in pure Python inside the job's
# signal context, printing its pid; on interruption it prints what it caught and exits.
PARENT = textwrap.dedent("""\
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=open(sys.argv[2], "w"))
    time.sleep(600)
""")
DRIVER = textwrap.dedent("""\
    import os, sys, time
    from paimonflow.jobs.cli import _sigterm_interrupts
    print(os.getpid(), flush=True)
    try:
        with _sigterm_interrupts():
            while True:
                sum(range(10_000))  # pure Python, no Spark to fail first
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


def test_the_driver_is_interrupted_once_its_parent_is_gone(tmp_path):
    out = tmp_path / "driver.out"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, DRIVER, str(out)], start_new_session=True)
    try:
        pid = int(wait_for("the driver's pid", lambda: out.exists() and out.read_text().split("\n")[0].strip(),
                           timeout=60, every=0.1))
        os.kill(parent.pid, signal.SIGKILL)  # the JVM ends; the driver is orphaned
        parent.wait(timeout=30)
        wait_for("the orphaned driver to be interrupted", lambda: "interrupted" in out.read_text(), timeout=30,
                 every=0.2)
        stat = Path(f"/proc/{pid}/stat")
        wait_for("the driver to exit", lambda: not stat.exists() or stat.read_text().split()[2] == "Z",
                 timeout=30, every=0.2)
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
