"""What the documentation promises about installing and about storage, checked against the code.

* No file tells users to install paimonflow from a package index (it is not published there): the
  README shows installing from a clone and from the wheel ``make dist`` builds.
* ``docs/storage.md`` names every storage option the S3 backend accepts (its ``OPTION_KEYS``), the
  environment variables the code reads, and every field of the Dagster ``S3Storage`` config; every
  document that names an ``s3.`` option links to it, and the README does.
* Links between the documents lead to files and headings that exist.
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from paimonflow.core.fs.s3 import OPTION_KEYS
from paimonflow.jobs.location import STORAGE_OPTIONS_ENV

ROOT = Path(__file__).resolve().parent.parent
STORAGE_DOC = ROOT / "docs" / "storage.md"
TEXT_SUFFIXES = {".md", ".py", ".cfg", ".toml", ".txt", ".yaml", ".yml", ".ini", ".html", ".sh", ""}

# `pip install paimonflow`, `pip install 'paimonflow[spark]'`, `pip install -U "paimonflow"`, across a
# line break too; not a path such as dist/paimonflow-0.1.0-py3-none-any.whl
UNPUBLISHED_INSTALL = re.compile(r"""pip3?\s+install\s+(?:-\S+\s+)*['"]?paimonflow(?![\w.-])""")


@cache
def _project_files() -> tuple[Path, ...]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            check=True, capture_output=True, timeout=60).stdout.decode()
    return tuple(ROOT / name for name in listed.split("\0") if name)


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_pattern_finds_the_unpublished_install_forms() -> None:
    for text in ("pip install paimonflow", "pip install 'paimonflow[spark]'", 'pip install -U "paimonflow[s3]"',
                 "`pip install\n'paimonflow[lineage]'`", "pip3 install paimonflow==0.1.0"):
        assert UNPUBLISHED_INSTALL.search(text), text
    for text in ("pip install '.[spark]'", "pip install 'dist/paimonflow-0.1.0-py3-none-any.whl[spark]'",
                 "pip install -e '.[test]'", "pip install paimonflow-0.1.0-py3-none-any.whl"):
        assert not UNPUBLISHED_INSTALL.search(text), text


def test_nothing_installs_paimonflow_from_a_package_index() -> None:
    found = []
    for path in _project_files():
        if path.suffix not in TEXT_SUFFIXES or path == Path(__file__) or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        found += [f"{path.relative_to(ROOT)}: {m.group(0)!r}" for m in UNPUBLISHED_INSTALL.finditer(text)]
    assert not found, "paimonflow is not on a package index; show installing from a clone or the wheel:\n" + \
        "\n".join(found)


def test_the_readme_shows_installing_from_a_clone_and_from_the_wheel() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install '.[" in readme and "make dist" in readme
    assert re.search(r"pip install 'dist/paimonflow-[\d.]+-py3-none-any\.whl\[", readme)


def _dagster_s3_fields() -> list[str]:
    """The fields of ``S3Storage`` (operators/dagster/resources.py), read from the source: no Dagster import."""
    tree = ast.parse((ROOT / "operators" / "dagster" / "resources.py").read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "S3Storage"]
    return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            and s.target.id != "kind"]


@pytest.mark.parametrize("name", [*OPTION_KEYS, STORAGE_OPTIONS_ENV, "PAIMONFLOW_WAREHOUSE", "AWS_ACCESS_KEY_ID",
                                  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION",
                                  "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", *_dagster_s3_fields()])
def test_the_storage_document_names_every_option_and_variable(name: str) -> None:
    assert f"`{name}`" in STORAGE_DOC.read_text()


def test_every_option_has_a_row_with_its_meaning_and_default() -> None:
    rows = {cells[1].strip("` "): cells for line in STORAGE_DOC.read_text().splitlines()
            if line.startswith("| `s3.") and len(cells := line.split("|")) == 5}
    assert set(rows) == set(OPTION_KEYS)
    for key, cells in rows.items():
        assert cells[2].strip(), key  # a meaning; the alias row may leave its default to the row it repeats


def test_documents_naming_an_s3_option_link_the_storage_document() -> None:
    assert "(docs/storage.md)" in (ROOT / "README.md").read_text()
    for doc in _documents():
        if doc != STORAGE_DOC and "`s3." in doc.read_text():
            assert "storage.md" in doc.read_text(), doc.name


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than ``-`` dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            anchors.add(_anchor(line.lstrip("#")))
    return anchors


def test_links_between_documents_lead_somewhere() -> None:
    broken = []
    for doc in [*_documents(), ROOT / "BENCHMARKS.md"]:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            destination = (doc.parent / path).resolve() if path else doc
            if not destination.exists():
                broken.append(f"{doc.name}: {target} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken, broken
