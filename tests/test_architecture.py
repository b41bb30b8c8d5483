"""The package's shape, checked from the source (docs/architecture.md).

Every ``import`` counts, function-local ones included; imports under ``if TYPE_CHECKING:`` do not
(they never run). The checks: no import cycle anywhere in ``paimonflow``; no private name imported
from another module; each layer of ``core/`` imports only the layers below it (and its own
package); ``read/`` and ``write/`` never import each other; ``core/`` imports no engine or
scheduler; Airflow and Dagster code never import each other; ``jobs/`` never imports the
integrations.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "jobs", "operators", "sensors", "plugins", "dags_examples")

# core's layers, lowest first: a module may import a lower layer, or its own package
CORE_LAYERS = (
    ("errors", "names", "predicate", "faults"),
    ("fs",),
    ("data",),
    ("merge",),
    ("options",),
    ("meta",),
    ("read", "write"),
    ("maintenance",),
    ("compact",),
    ("table", "catalog", ""),
    ("cli",),
)
FRAMEWORKS = {"airflow": ("airflow",), "dagster": ("dagster", "dagster_pipes", "dagster_spark")}
ENGINES = ("pyspark", "airflow", "dagster", "dagster_pipes", "py4j")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. paimonflow.core.meta.snapshots
    target: str  # the imported module (a name imported from a package counts as the package)
    name: str | None  # the name imported from it (None for ``import x``)
    line: int


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(["paimonflow", *parts]), is_package


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@cache
def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)[0]] = path
    return found


@cache
def imports() -> tuple[Import, ...]:
    out = []
    for name, path in modules().items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            if isinstance(node, ast.Import):
                out.extend(Import(name, alias.name, None, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    whole = f"{target}.{alias.name}"
                    if whole in modules():
                        out.append(Import(name, whole, None, node.lineno))
                    else:
                        out.append(Import(name, target, alias.name, node.lineno))
    return tuple(out)


def _internal(imp: Import) -> bool:
    return imp.target.startswith("paimonflow.") and imp.target != imp.source


def _cycles() -> Iterator[list[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for imp in imports():
        if _internal(imp) and imp.target in graph:
            graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0

    def visit(v: str) -> Iterator[list[str]]:  # Tarjan's strongly connected components
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                yield sorted(component)

    for v in sorted(graph):
        if v not in index:
            yield from visit(v)


def _core_layer(module: str) -> tuple[int, str]:
    """(rank, package) of a ``paimonflow.core`` module."""
    rest = module.removeprefix("paimonflow.core").lstrip(".")
    first = rest.split(".", 1)[0]
    for rank, names in enumerate(CORE_LAYERS):
        if first in names:
            package = first if (ROOT / "core" / first).is_dir() else ""
            return rank, package
    raise AssertionError(f"{module} is in no layer of core/: add it to CORE_LAYERS and docs/architecture.md")


def test_the_checks_see_every_module_and_import() -> None:
    assert "paimonflow.core.table" in modules()
    assert any(i.source == "paimonflow.core.table" and i.target.startswith("paimonflow.core.meta") for i in imports())


def test_no_import_cycle() -> None:
    cycles = list(_cycles())
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_is_imported_from_another_module() -> None:
    bad = sorted(f"{i.source}:{i.line} imports {i.target}.{i.name}" for i in imports()
                 if _internal(i) and i.name is not None and i.name.startswith("_") and i.name != "__version__")
    assert bad == [], "\n".join(bad)


def test_core_layers_import_only_downwards() -> None:
    bad = []
    for imp in imports():
        if not (imp.source.startswith("paimonflow.core") and _internal(imp)):
            continue
        if not imp.target.startswith("paimonflow.core"):
            bad.append(f"{imp.source}:{imp.line} imports {imp.target} (outside core)")
            continue
        (rank, package), (target_rank, target_package) = _core_layer(imp.source), _core_layer(imp.target)
        if package and package == target_package:
            continue  # within one package (the root modules of a floor may import each other too)
        if target_rank > rank or (target_rank == rank and (package or target_package)):
            bad.append(f"{imp.source}:{imp.line} imports {imp.target}")
    assert bad == [], "imports against the layers of core/:\n" + "\n".join(sorted(bad))


def test_core_imports_no_engine_or_scheduler() -> None:
    bad = sorted(f"{i.source}:{i.line} imports {i.target}" for i in imports()
                 if i.source.startswith("paimonflow.core") and i.target.split(".")[0] in ENGINES)
    assert bad == [], "\n".join(bad)


def _framework(module: str) -> str | None:
    parts = module.split(".")
    for framework in FRAMEWORKS:
        if framework in parts[2:]:
            return framework
    return None


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_airflow_and_dagster_code_never_import_each_other(framework: str) -> None:
    other = next(f for f in FRAMEWORKS if f != framework)
    bad = []
    for imp in imports():
        if _framework(imp.source) != framework:
            continue
        if imp.target.split(".")[0] in FRAMEWORKS[other] or _framework(imp.target) == other:
            bad.append(f"{imp.source}:{imp.line} imports {imp.target}")
    assert bad == [], "\n".join(sorted(bad))


def test_jobs_never_import_the_integrations() -> None:
    bad = sorted(f"{i.source}:{i.line} imports {i.target}" for i in imports()
                 if i.source.startswith("paimonflow.jobs")
                 and i.target.split(".")[:2] in (["paimonflow", p] for p in ("operators", "sensors", "plugins")))
    assert bad == [], "\n".join(bad)


def test_framework_free_modules_import_no_framework() -> None:
    free = [m for m in modules() if m.startswith(("paimonflow.sensors", "paimonflow.plugins"))
            and _framework(m) is None]
    bad = sorted(f"{i.source}:{i.line} imports {i.target}" for i in imports() if i.source in free
                 and (i.target.split(".")[0] in ("airflow", "dagster") or _framework(i.target) is not None))
    assert bad == [], "\n".join(bad)
