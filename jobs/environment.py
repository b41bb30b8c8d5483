"""What the Spark jobs need from the machine: Java 17+ (Spark 4 runs on the JVM)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

HOW_TO_GET_JAVA = (
    "Spark needs Java 17 or newer. Install it with your package manager, e.g.\n"
    "  Debian/Ubuntu:  sudo apt-get install -y openjdk-17-jre-headless\n"
    "  macOS:          brew install openjdk@17\n"
    "then make sure `java` is on PATH or JAVA_HOME points at the JDK."
)


@dataclass(frozen=True, slots=True)
class JavaStatus:
    found: bool
    executable: str | None
    major_version: int | None
    detail: str

    @property
    def usable(self) -> bool:
        return self.found and (self.major_version or 0) >= 17


def detect_java() -> JavaStatus:
    """Find ``java`` (JAVA_HOME first, then PATH) and its major version, without raising."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    if found := shutil.which("java"):
        candidates.append(found)
    for exe in candidates:
        if not os.path.exists(exe):
            continue
        try:
            out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return JavaStatus(False, exe, None, f"{exe} could not run: {exc}")
        text = out.stderr + out.stdout
        m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
        major = None
        if m:
            major = int(m.group(2)) if m.group(1) == "1" and m.group(2) else int(m.group(1))
        first = text.strip().splitlines()[0] if text.strip() else "unknown version"
        return JavaStatus(True, exe, major, first)
    return JavaStatus(False, None, None, "no java on PATH and JAVA_HOME is not set")
