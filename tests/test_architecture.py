"""The package map of docs/DESIGN.md, checked: no import cycles and no upward imports.

Every ``import`` statement in ``workbench/`` and ``workbench_app/`` counts, including those inside
functions (an import placed inside a function to dodge a cycle is still a cycle). A module may
import modules of its own layer's package and of lower layers; packages that share a layer are
independent of each other. The foundation modules at the top of ``workbench/`` may import each
other as long as that adds no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Lowest layer first. A module belongs to the longest package prefix listed here.
LAYERS: list[tuple[str, ...]] = [
    ("workbench.types", "workbench.jsonl", "workbench.formatting", "workbench.failures", "workbench.text",
     "workbench.config", "workbench.tasks", "workbench"),
    ("workbench.stats", "workbench.judges", "workbench.store"),
    ("workbench.metrics",),
    ("workbench.calibration",),
    ("workbench.scoring",),
    ("workbench.batch",),
    ("workbench.reports",),
    ("workbench.demo",),
    ("workbench.cli",),
    ("workbench_app",),
]
FOUNDATION = LAYERS[0]


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the two packages."""
    found = {}
    for package in ("workbench", "workbench_app"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that module ``name`` imports anywhere in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                targets.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return {t for t in targets if t in known and t != name}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imported_modules(name, path, set(files)) for name, path in files.items()}


def layer_of(module: str) -> tuple[int, str]:
    """(layer index, owning package) of ``module``: the longest matching prefix in :data:`LAYERS`."""
    best = None
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and (best is None or len(package) > len(best[1])):
                best = (index, package)
    assert best is not None, f"{module} is in no layer of LAYERS: add it to the map (and docs/DESIGN.md)"
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycles():
    assert cycles(import_graph()) == []


def test_no_module_imports_upward_or_sideways_across_packages():
    wrong = []
    for module, targets in sorted(import_graph().items()):
        level, package = layer_of(module)
        for target in sorted(targets):
            target_level, target_package = layer_of(target)
            if target_level > level or (target_level == level and target_package != package and level > 0):
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_nothing_under_workbench_imports_streamlit():
    users = [name for name, path in module_files().items()
             if name.startswith("workbench.") and "streamlit" in {
                 (n.module or "").split(".")[0] if isinstance(n, ast.ImportFrom) else a.name.split(".")[0]
                 for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(n, (ast.Import, ast.ImportFrom))
                 for a in (n.names if isinstance(n, ast.Import) else [n])}]
    assert users == []


def test_the_checks_catch_a_cycle_and_an_upward_import():
    graph = {"workbench.a": {"workbench.b"}, "workbench.b": {"workbench.a"}, "workbench.c": set()}
    assert cycles(graph) == [["workbench.a", "workbench.b"]]
    assert layer_of("workbench.metrics.faithfulness")[0] < layer_of("workbench.scoring.pipeline")[0]
    assert layer_of("workbench.scoring.pipeline")[1] == "workbench.scoring"
