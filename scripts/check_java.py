"""Print whether Java (needed by Spark) is available, and how to get it if not. Exit 0 either way
unless --require is given."""

import importlib.util
import pathlib
import sys

spec = importlib.util.spec_from_file_location(
    "environment", pathlib.Path(__file__).resolve().parent.parent / "jobs" / "environment.py")
environment = importlib.util.module_from_spec(spec)
sys.modules["environment"] = environment
spec.loader.exec_module(environment)

status = environment.detect_java()
if status.usable:
    print(f"java: {status.detail} ({status.executable})")
    sys.exit(0)
print(f"java: not usable ({status.detail})")
print(environment.HOW_TO_GET_JAVA)
sys.exit(1 if "--require" in sys.argv else 0)
