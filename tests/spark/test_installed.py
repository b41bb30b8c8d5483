"""An installed paimonflow in a SparkSession nobody configured: a Python program that builds
``SparkSession.builder.master(...).getOrCreate()`` with no registration call and no setting reads
and writes ``format("paimonflow")``. PySpark finds ``pyspark_paimonflow`` by itself.

Three installs, from a copy of the repository's files:

- the wheel, in a plain directory on ``PYTHONPATH`` (the layout ``pip install`` gives), with
  ``PYSPARK_PYTHON`` naming this interpreter;
- the wheel, in a fresh venv whose Python runs the program itself (``venv/bin/python app.py``, as
  cron, a scheduler or an IDE do): the venv is not on ``PATH`` and no ``PYSPARK_*`` variable is set,
  so nothing but the installed package tells Spark which Python looks data sources up;
- the copy itself with ``pip install -e`` (the README's install for working on the code), the same way.

The venvs borrow PySpark and paimonflow's dependencies from this interpreter's environment: a
``.pth`` file puts a folder of links to its site-packages, paimonflow's own files left out, on the
venv's path (installing PySpark into each venv would cost minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
path = sys.argv[1]
rows = spark.read.format("paimonflow").load(path).filter("id > 1").collect()
spark.createDataFrame([(9, "nine")], "id long, v string").write.format("paimonflow").mode("append").save(path)
print(json.dumps({"pushdown": spark.conf.get("spark.sql.python.filterPushdown.enabled"),
                  "rows": sorted([r.id, r.v] for r in rows)}))
"""


def _copy_source(target: Path) -> Path:
    """The repository's files without what a build or a run leaves (a build writes into its source tree)."""
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "spark-warehouse", "*.egg-info", "__pycache__", "node_modules"))
    return target


def _pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"pip {' '.join(args)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = _copy_source(tmp_path_factory.mktemp("wheel-source") / "paimonflow")
    wheels = tmp_path_factory.mktemp("wheels")
    _pip("wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source))
    return next(wheels.glob("paimonflow-*.whl"))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """A warehouse with one primary-key table, ``db.t``, holding ids 1, 2 and 3."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2, 3], "v": ["one", "two", "three"]}))
    return catalog


def _run_program(python: Path | str, catalog: Catalog, env: dict[str, str], cwd: Path) -> None:
    """Run PROGRAM as ``python app.py <directory of db.t>`` and check what it read and wrote."""
    (cwd / "app.py").write_text(PROGRAM)
    proc = subprocess.run([str(python), "app.py", catalog.get_table("db.t").path], capture_output=True, text=True,
                          env=env, timeout=600, cwd=cwd)
    error = proc.stderr.rfind("Traceback (most recent call last)")  # its head, not the JVM's stack below it
    assert proc.returncode == 0, proc.stderr[error:][:3000] if error >= 0 else proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"pushdown": "false", "rows": [[2, "two"], [3, "three"]]}  # the setting is off: read without it
    assert sorted(catalog.get_table("db.t").read().column("id").to_pylist()) == [1, 2, 3, 9]


def test_any_session_finds_the_installed_data_source(wheel: Path, tmp_path: Path, catalog: Catalog) -> None:
    site = tmp_path / "site"
    _pip("install", "--quiet", "--no-deps", "--target", str(site), str(wheel))
    assert (site / "pyspark_paimonflow" / "__init__.py").exists()
    env = {**os.environ, "PYTHONPATH": str(site), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    _run_program(sys.executable, catalog, env, tmp_path)


# -- a venv's Python run by its path, the venv not on PATH ------------------------------------------


def _is_paimonflows(name: str) -> bool:
    """paimonflow's own entries of a site-packages folder (an editable install's finder and .pth too)."""
    return "paimonflow" in name.lower()


def _venv(where: Path) -> Path:
    """A fresh venv without pip whose Python also finds this environment's packages, except
    paimonflow's: a folder of links to them, named by a ``.pth`` file (whose lines only extend
    ``sys.path``: the ``.pth`` files of this environment are not run there). Returns its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True,
                   timeout=120)
    python = where / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           check=True, capture_output=True, text=True, timeout=60)
    borrowed = where / "borrowed"
    borrowed.mkdir()
    for folder in dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib")):
        for entry in Path(folder).iterdir():
            if not _is_paimonflows(entry.name) and not (borrowed / entry.name).exists():
                (borrowed / entry.name).symlink_to(entry)
    (Path(probe.stdout.strip()) / "borrowed-dependencies.pth").write_text(f"{borrowed}\n")
    return python


def _plain_env(venv: Path) -> dict[str, str]:
    """This process's environment as cron or a scheduler gives it to ``venv/bin/python``: no
    ``PYSPARK_*`` variable, no active venv, and a ``PATH`` without the venv's folder or this
    interpreter's. Fails if the ``python3`` that ``PATH`` still gives knows paimonflow: Spark
    would find the data source through it, and the test would prove nothing."""
    hidden = {(venv / "bin").resolve(), Path(sys.executable).parent.resolve()}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYSPARK_") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(folder for folder in os.environ.get("PATH", "").split(os.pathsep)
                                  if folder and Path(folder).resolve() not in hidden)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    python3 = shutil.which("python3", path=env["PATH"])
    if python3 is not None:
        probe = subprocess.run([python3, "-c", "import pyspark_paimonflow"], capture_output=True, env=env, timeout=60)
        assert probe.returncode != 0, f"{python3} on PATH imports pyspark_paimonflow"
    return env


def test_the_venv_python_run_by_its_path_finds_the_data_source(wheel: Path, tmp_path: Path,
                                                                catalog: Catalog) -> None:
    venv = tmp_path / "venv"
    python = _venv(venv)
    _pip("--python", str(python), "install", "--quiet", "--no-deps", str(wheel))
    _run_program(python, catalog, _plain_env(venv), tmp_path)


def test_an_editable_install_is_found_the_same_way(tmp_path: Path, catalog: Catalog) -> None:
    source = _copy_source(tmp_path / "paimonflow")
    venv = tmp_path / "venv"
    python = _venv(venv)
    # the venv's Python builds (PEP 660) with the setuptools and wheel it borrows
    _pip("--python", str(python), "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(source))
    env = _plain_env(venv)
    where = subprocess.run([str(python), "-c", "import paimonflow.jobs.datasource as d; print(d.__file__)"],
                           capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    assert where.stdout.strip() == str(source / "jobs" / "datasource.py"), where.stderr  # editable: the copy's code
    _run_program(python, catalog, env, tmp_path)
