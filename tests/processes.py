"""Processes of the tests' real deployments (Airflow, Dagster): free ports, bounded waits, and
stopping a process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(what: str, probe: Callable[[], Any], *, timeout: float, every: float = 1.0,
              log: Callable[[], str] | None = None) -> Any:
    """``probe()`` until it returns something truthy; a bounded wait that names what it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}" +
                                 (f"\n{log()}" if log is not None else ""))
        time.sleep(every)


def stop_process(process: subprocess.Popen, *, grace: float = 30.0, sig: int = signal.SIGTERM) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    except ProcessLookupError:
        pass


def python_processes(*needles: str) -> list[str]:
    """Command lines (full width) of the Python processes whose arguments hold every needle: a
    spark-submitted job's driver, not its JVM."""
    listing = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines()
            if all(n in line for n in needles) and "java" not in line and "ps -ww" not in line]
