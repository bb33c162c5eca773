"""The packages' import graph: no cycles, and the one-way rule of DESIGN.md.

Built from the source with `ast` (nothing is imported): an edge for every `import` / `from ...
import` anywhere in a module, function bodies and `if TYPE_CHECKING:` blocks included (a late or
type-only import is still a cycle, only hidden). The rules: `synthesis`, `statewise`, `training`
and `eval` import `stateguard`; `training` may import `synthesis` (the data flows that way) and
`eval` may import `statewise` (its benchmark), otherwise they never import each other;
`stateguard` imports none of them. Inside `stateguard`, the subpackages do not loop either, and
`stateguard.artifacts` (the formats) imports nothing outside itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("stateguard", "synthesis", "statewise", "training", "eval")


# Edges between two non-ground packages that the data flow allows (DESIGN.md's layout).
ALLOWED_ACROSS = {("eval", "statewise"), ("training", "synthesis")}


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for file in sorted((root / pkg).rglob("*.py")):
            parts = list(file.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = file
    return out


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    modules = _modules(root, packages)

    def owner(name: str) -> str | None:  # the repo module a dotted name lives in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, file in modules.items():
        is_pkg = file.name == "__init__.py"
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package upwards
                    package = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in node.names]
            for name in names:
                target = owner(name)
                if target is not None and target != module:
                    graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def real() -> dict[str, set[str]]:
    """The repository's graph, built once for the module (a parse of every module, seconds each
    time): the tests below only read it."""
    return import_graph()


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_late_and_type_checking_imports(tmp_path: Path, real: dict[str, set[str]]) -> None:
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.b import B\n"
    )
    (pkg / "b.py").write_text("def f():\n    from toy import c\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph(tmp_path, ("toy",))
    assert graph["toy.a"] == {"toy.b"} and graph["toy.b"] == {"toy.c"} and graph["toy.c"] == {"toy.a"}
    assert cycles(graph) == [["toy.a", "toy.b", "toy.c"]]
    assert "synthesis.replay" in real["synthesis.worker_faults"]
    assert "stateguard.tools" in real["stateguard.verification.verifier"]  # a late import


def test_no_import_cycles_in_the_packages(real: dict[str, set[str]]) -> None:
    assert cycles(real) == []


def test_dependencies_run_one_way(real: dict[str, set[str]]) -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in real.items()
        for target in targets
        if (top := module.split(".")[0]) != (other := target.split(".")[0])
        and (top == "stateguard" or other != "stateguard")
        and (top, other) not in ALLOWED_ACROSS
    )
    assert wrong == []


def test_statewise_is_a_top_level_package_that_stateguard_never_imports(real: dict[str, set[str]]) -> None:
    graph = real
    assert "stateguard.store" in graph["statewise.store"]
    assert not any(name.startswith("stateguard.statewise") for name in graph)
    assert not [
        f"{m} -> {t}"
        for m, ts in graph.items()
        if m.startswith("stateguard")
        for t in ts
        if t.startswith("statewise")
    ]
    assert any(
        t.startswith("statewise")
        for m, ts in graph.items()
        if m.startswith("eval.benchmarks.statewise")
        for t in ts
    )


def _package(module: str) -> str:
    """`stateguard.x.y` -> `stateguard.x`; a top-level module of stateguard is its own unit."""
    return ".".join(module.split(".")[:2])


def test_stateguard_subpackages_do_not_loop(real: dict[str, set[str]]) -> None:
    graph: dict[str, set[str]] = {}
    for module, targets in real.items():
        if module.startswith("stateguard."):
            graph.setdefault(_package(module), set()).update(
                _package(t)
                for t in targets
                if t.startswith("stateguard.") and _package(t) != _package(module)
            )
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    assert cycles(graph) == []


def _out_of_artifacts(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith("stateguard.artifacts")
        for t in targets
        if not t.startswith("stateguard.artifacts")
    )


def test_artifacts_is_a_leaf(real: dict[str, set[str]]) -> None:
    """The formats import nothing of the repository outside `stateguard.artifacts` (not even the
    runtime's models: the state model and the hints are defined in artifacts, and the runtime's
    `stateguard.state` / `stateguard.hints` / `stateguard.records` name them from there)."""
    assert _out_of_artifacts(real) == []


def test_the_leaf_rule_rejects_an_import_of_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "stateguard" / "artifacts").mkdir(parents=True)
    (tmp_path / "stateguard" / "__init__.py").write_text("")
    (tmp_path / "stateguard" / "artifacts" / "__init__.py").write_text("")
    (tmp_path / "stateguard" / "flows.py").write_text("")
    (tmp_path / "stateguard" / "artifacts" / "events.py").write_text("from stateguard.flows import X\n")
    graph = import_graph(tmp_path, ("stateguard",))
    assert _out_of_artifacts(graph) == ["stateguard.artifacts.events -> stateguard.flows"]
