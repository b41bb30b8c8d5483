"""What ``make dist`` builds, installed the way a user installs it.

``make dist`` runs in a copy of the repository's own files (``git ls-files``: nothing ignored, no
``build/`` left over from another build), with this interpreter as the venv's Python. The wheel
must hold every file of the package folders under the names ``setup.cfg`` maps them to, the entry
points ``setup.cfg`` declares and ``setup.py``'s ``pyspark_paimonflow.pth``. Then a fresh venv
(``python -m venv``) gets the wheel with its core dependencies only (no extra), its Python names
itself ``PYSPARK_PYTHON``, and the installed ``paimonflow`` command runs end to end from a folder
outside the repository; the sdist is installed over it and must give the same files.

The fast tests check that the ``dagster`` extra carries what ``dagster dev`` needs.
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SETUP = configparser.ConfigParser(interpolation=None)
SETUP.read(ROOT / "setup.cfg")


def _package_dirs() -> dict[str, str]:
    """setup.cfg's ``package_dir``: folder -> import name (``jobs/autoload`` -> ``pyspark_paimonflow``)."""
    pairs = (line.split("=", 1) for line in SETUP["options"]["package_dir"].strip().splitlines())
    return {folder.strip(): name.strip() for name, folder in pairs}


def _entry_points(parser: configparser.ConfigParser) -> dict[str, dict[str, str]]:
    return {group: {name: value.strip() for name, value in parser[group].items()} for group in parser.sections()}


def _declared_entry_points() -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keep names' case
    parser.read_string("\n".join(f"[{group.strip()}]\n{SETUP['options.entry_points'][group]}" for group in
                                 SETUP["options.entry_points"]))
    return _entry_points(parser)


def _project_files() -> list[str]:
    """The repository's own files: tracked or new, never ignored ones."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            check=True, capture_output=True, timeout=60).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and (ROOT / name).is_file())


def _expected_wheel_files(files: list[str]) -> set[str]:
    """Where each file of a package folder lands in the wheel (the longest mapped folder wins)."""
    folders = sorted(_package_dirs().items(), key=lambda item: -len(item[0]))
    expected = set()
    for name in files:
        for folder, package in folders:
            if name.startswith(folder + "/"):
                expected.add(package.replace(".", "/") + name[len(folder):])
                break
    return expected


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path
    project_files: list[str]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    source = tmp_path_factory.mktemp("source")
    files = _project_files()
    for name in files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    # -o venv: this interpreter's venv is the one to build with (make would otherwise set up .venv)
    proc = subprocess.run(["make", "-o", "venv", "dist", f"PY={sys.executable}"], cwd=source, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels, sdists = sorted((source / "dist").glob("*.whl")), sorted((source / "dist").glob("*.tar.gz"))
    version = SETUP["metadata"]["version"]
    assert [p.name for p in wheels] == [f"paimonflow-{version}-py3-none-any.whl"]
    assert [p.name for p in sdists] == [f"paimonflow-{version}.tar.gz"]
    return Built(wheel=wheels[0], sdist=sdists[0], project_files=files)


@pytest.mark.slow
def test_the_wheel_holds_every_module_data_file_and_entry_point(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = wheel.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        entry_points.optionxform = str
        entry_points.read_string(wheel.read(f"{info}/entry_points.txt").decode())
        requirements = [Requirement(line.split(":", 1)[1].strip()) for line in
                        wheel.read(f"{info}/METADATA").decode().splitlines() if line.startswith("Requires-Dist:")]
    shipped = {n for n in names if not n.startswith(info + "/")}
    # and setup.py's pyspark_paimonflow.pth: the venv's Python is the one Spark looks data sources up with
    expected = _expected_wheel_files(built.project_files) | {"pyspark_paimonflow.pth"}
    assert shipped == expected, {"missing": sorted(expected - shipped), "unexpected": sorted(shipped - expected)}
    # what the code loads from beside itself, and the module PySpark discovers by its name
    for name in ("paimonflow/plugins/templates/table_health.html", "paimonflow/dags_examples/dg.toml",
                 "paimonflow/dags_examples/.airflowignore", "paimonflow/dags_examples/dagster_defs/returns/defs.yaml",
                 "paimonflow/core/py.typed", "pyspark_paimonflow/__init__.py"):
        assert name in shipped
    assert _entry_points(entry_points) == _declared_entry_points()
    assert entry_points["console_scripts"]["paimonflow"] == "paimonflow.core.cli:main"
    assert {"apache_airflow_provider", "airflow.plugins", "dagster_dg_cli.registry_modules"} <= set(entry_points)
    dagster = {r.name for r in requirements if r.marker is not None and r.marker.evaluate({"extra": "dagster"})
               and not r.marker.evaluate({"extra": ""})}
    assert {"dagster", "dagster-webserver", "dagster-dg-cli"} <= dagster


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _installed_files(python: Path, cwd: Path, env: dict[str, str]) -> set[str]:
    program = ("import json, importlib.metadata as m; d = m.distribution('paimonflow'); "
               "print(json.dumps(sorted(str(f) for f in d.files if not str(f).startswith(('..', 'paimonflow-')))))")
    return set(json.loads(_run([str(python), "-c", program], cwd, env).stdout))


@pytest.mark.slow
def test_the_installed_wheel_runs_the_cli_and_the_sdist_installs(built: Built, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = tmp_path / "work"  # outside the repository: nothing can be imported from the checkout
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
           and not k.startswith(("PAIMONFLOW_", "PYSPARK_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], work, env)
    python, cli = venv / "bin" / "python", venv / "bin" / "paimonflow"
    _run([str(python), "-m", "pip", "install", "--quiet", str(built.wheel)], work, env, timeout=600)

    # installed, not found in the checkout; pyspark_paimonflow is located, not imported (it needs PySpark)
    where = _run([str(python), "-c", "import importlib.util as u, paimonflow.core; print(paimonflow.core.__file__); "
                  "print(u.find_spec('pyspark_paimonflow').origin)"], work, env).stdout.split()
    assert all(path.startswith(str(venv)) for path in where), where
    info = _run([str(python), "-c", "from importlib.metadata import entry_points as e; "
                 "(p,) = e(group='apache_airflow_provider', name='provider_info'); print(p.load()()['package-name'])"],
                work, env)
    assert info.stdout.strip() == "paimonflow"
    # started by its path, the venv's Python is the Python of the Spark it starts, unless one is named
    spark_python = "import os; print(os.environ.get('PYSPARK_PYTHON'))"
    assert _run([str(python), "-c", spark_python], work, env).stdout.strip() == str(python)
    named = {**env, "PYSPARK_PYTHON": "/opt/python/bin/python3"}
    assert _run([str(python), "-c", spark_python], work, named).stdout.strip() == "/opt/python/bin/python3"

    help_text = _run([str(cli), "--help"], work, env).stdout
    for verb in ("create-database", "create-table", "write", "read"):
        assert verb in help_text
    warehouse = str(work / "warehouse")
    _run([str(cli), "create-database", "shop", "-w", warehouse], work, env)
    _run([str(cli), "create-table", "shop.orders", "-w", warehouse, "-c", "id:BIGINT NOT NULL",
          "-c", "customer:STRING", "-c", "amount:DOUBLE", "-k", "id", "-o", "bucket=1"], work, env)
    pq.write_table(pa.table({"id": [1, 2, 3], "customer": ["ada", "grace", "linus"], "amount": [12.5, 7.25, 3.0]}),
                   work / "orders.parquet")
    written = json.loads(_run([str(cli), "--json", "write", "shop.orders", "-w", warehouse, "orders.parquet"],
                              work, env).stdout)
    assert written["snapshot_id"] == 1 and written["added_rows"] == 3
    shown = _run([str(cli), "read", "shop.orders", "-w", warehouse], work, env).stdout
    assert all(value in shown for value in ("ada", "grace", "linus", "12.5", "7.25"))
    _run([str(cli), "read", "shop.orders", "-w", warehouse, "--output", "out.parquet"], work, env)
    rows = pq.read_table(work / "out.parquet").sort_by("id").to_pylist()
    assert rows == [{"id": 1, "customer": "ada", "amount": 12.5}, {"id": 2, "customer": "grace", "amount": 7.25},
                    {"id": 3, "customer": "linus", "amount": 3.0}]

    from_wheel = _installed_files(python, work, env)
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(built.sdist)],
         work, env, timeout=600)
    assert _installed_files(python, work, env) == from_wheel
    assert "create-table" in _run([str(cli), "--help"], work, env).stdout


# -- the dagster extra ---------------------------------------------------------------------------


def _extra_requirements(extra: str) -> list[Requirement]:
    return [r for r in map(Requirement, metadata.requires("paimonflow") or [])
            if r.marker is not None and r.marker.evaluate({"extra": extra}) and not r.marker.evaluate({"extra": ""})]


def test_the_dagster_extra_brings_the_webserver_and_the_dg_cli() -> None:
    """``dagster dev`` refuses to start without dagster-webserver; ``dg`` is the dg CLI."""
    names = {r.name for r in _extra_requirements("dagster")}
    assert {"dagster", "dagster-webserver", "dagster-dg-cli"} <= names
    pins = {str(r.specifier) for r in _extra_requirements("dagster")}
    assert len(pins) == 1, pins  # the Dagster packages move together


@pytest.mark.dagster
def test_dagster_dev_and_dg_dev_start_in_this_environment() -> None:
    for requirement in _extra_requirements("dagster"):
        assert metadata.version(requirement.name) in requirement.specifier, requirement
    proc = subprocess.run([sys.executable, "-m", "dagster", "dev", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "dagster-webserver" in proc.stdout, proc.stderr[-2000:]
    proc = subprocess.run([sys.executable, "-m", "dagster_webserver", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dg = ("import sys; from importlib.metadata import entry_points; (ep,) = entry_points(group='console_scripts', "
          "name='dg'); sys.argv[0] = 'dg'; sys.exit(ep.load()())")
    proc = subprocess.run([sys.executable, "-c", dg, "dev", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "dg dev" in proc.stdout, proc.stderr[-2000:]


def test_every_shipped_folder_is_a_declared_package() -> None:
    """setuptools (69 and later) warns "Package would be ignored" on every install for a folder that
    Python could import (any folder with an identifier's name inside a package) whose files are
    shipped but which is not in ``packages``: each such folder is declared."""
    declared = {line.strip() for line in SETUP["options"]["packages"].splitlines()
                if line.strip() and not line.strip().startswith("#")}
    missing = []
    roots = {ROOT / folder for folder in _package_dirs()}
    for folder, name in _package_dirs().items():
        for directory, subdirs, files in os.walk(ROOT / folder):
            # (a folder mapped to a package of its own, jobs/autoload, is that package)
            subdirs[:] = [d for d in subdirs if d.isidentifier() and Path(directory, d) not in roots]
            relative = Path(directory).relative_to(ROOT / folder)
            dotted = ".".join([name, *relative.parts])
            shipped = [f for f in files if not f.endswith((".pyc", ".pyo"))]
            if shipped and all(part.isidentifier() for part in relative.parts) and dotted not in declared:
                missing.append(dotted)
    assert not missing, f"folders with files that setuptools sees as undeclared packages: {missing}"
