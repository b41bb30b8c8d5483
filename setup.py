"""The project is declared in setup.cfg; this file adds what lets a SparkSession nobody configured
find the ``paimonflow`` data source (docs/spark.md, "Any session knows it"), for a wheel and for an
editable install alike.

PySpark registers the ``DefaultSource`` of every module named ``pyspark_*`` that
``pkgutil.iter_modules()`` lists, in a Python worker started with ``PYSPARK_DRIVER_PYTHON``, else
``PYSPARK_PYTHON``, else ``python3`` from ``PATH``. So:

- ``pyspark_paimonflow.pth``, at the root of site-packages: a Python started from this environment
  names itself ``PYSPARK_PYTHON`` when neither variable is set and no Spark launcher
  (``spark-submit``, the ``pyspark`` shell) started it, so ``venv/bin/python app.py`` (cron, a
  scheduler, an IDE) looks data sources up with this environment even when ``PATH`` leads elsewhere.
- in an editable install, ``pyspark_paimonflow/__init__.py`` in site-packages, a copy of
  ``jobs/autoload/__init__.py``: setuptools' editable finder imports ``pyspark_paimonflow`` but
  ``pkgutil.iter_modules()`` only lists what lies in a folder on ``sys.path``. The copy re-exports
  the data source of the checkout, so everything it imports stays editable.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH_NAME = "pyspark_paimonflow.pth"
# One line, run by site.py at every start of the environment's Python: a few dictionary look-ups.
PTH_TEXT = (
    "import os, sys; 'PYSPARK_PYTHON' in os.environ or 'PYSPARK_DRIVER_PYTHON' in os.environ"
    " or 'PYSPARK_GATEWAY_PORT' in os.environ or not sys.executable"
    " or os.environ.setdefault('PYSPARK_PYTHON', sys.executable)\n"
)
AUTOLOAD = "pyspark_paimonflow"


class BuildPyWithPth(build_py):
    """``build_py`` that also puts ``pyspark_paimonflow.pth`` beside the packages of the wheel."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):  # an editable wheel gets it from EditableWheelWithPth
            Path(self.build_lib).mkdir(parents=True, exist_ok=True)
            Path(self.build_lib, PTH_NAME).write_text(PTH_TEXT, encoding="utf-8")


class _AlsoForPySpark:
    """An editable-install strategy of setuptools, plus the ``.pth`` and a listable ``pyspark_paimonflow``."""

    def __init__(self, strategy, autoload_source: Path) -> None:
        self.strategy = strategy
        self.autoload_source = autoload_source

    def __enter__(self):
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self.strategy.__exit__(*exc_info)

    def __call__(self, wheel, files, mapping) -> None:
        self.strategy(wheel, files, mapping)
        wheel.writestr(PTH_NAME, PTH_TEXT.encode())
        wheel.writestr(f"{AUTOLOAD}/__init__.py", self.autoload_source.read_bytes())


class EditableWheelWithPth(editable_wheel):
    """``pip install -e``'s wheel (PEP 660) with what :class:`_AlsoForPySpark` adds. Hooks
    ``_select_strategy``, where setuptools hands out the wheel being written (its editable installs
    have had it since 64; checked with 65 and 84)."""

    def run(self) -> None:
        if not hasattr(editable_wheel, "_select_strategy"):
            warnings.warn(f"this setuptools has no editable_wheel._select_strategy: the editable install lacks "
                          f"{PTH_NAME} and a listable {AUTOLOAD}: set PYSPARK_PYTHON and call "
                          f"paimonflow.jobs.session.register(spark), or install the wheel",
                          stacklevel=1)
        super().run()

    def _select_strategy(self, name, tag, build_lib):
        strategy = super()._select_strategy(name, tag, build_lib)
        source = Path(self.project_dir, self.distribution.package_dir[AUTOLOAD], "__init__.py")
        return _AlsoForPySpark(strategy, source)


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
