"""The packages' import graph: no cycles, and the one-way rule of DESIGN.md.

Built from the source with `ast` (nothing is imported): an edge for every `import` / `from ...
import` anywhere in a module, function bodies included (a late import is still a cycle, only
hidden), except under `if TYPE_CHECKING:`, which never runs. The rule: `synthesis`, `statewise`,
`training` and `eval` import `stateguard` and never each other, except that `eval` may import
`statewise` (its benchmark); `stateguard` imports none of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("stateguard", "synthesis", "statewise", "training", "eval")


# Edges between two non-ground packages that the data flow allows (DESIGN.md's layout).
ALLOWED_ACROSS = {("eval", "statewise")}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for file in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(file.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = file
    return out


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except the bodies of `if TYPE_CHECKING:` blocks."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()

    def owner(name: str) -> str | None:  # the repo module a dotted name lives in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, file in modules.items():
        is_pkg = file.name == "__init__.py"
        for node in _runtime_nodes(ast.parse(file.read_text(encoding="utf-8"), str(file))):
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


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_late_imports_and_skips_type_checking_ones() -> None:
    graph = import_graph()
    assert "synthesis.replay" in graph["synthesis.worker_faults"]
    assert "stateguard.task" in graph["synthesis.replay"]
    # bind_shape imports bind's types only for mypy; at run time bind imports bind_shape alone
    assert "stateguard.verification.bind" not in graph["stateguard.verification.bind_shape"]
    assert "stateguard.verification.bind_shape" in graph["stateguard.verification.bind"]


def test_no_import_cycles_in_the_packages() -> None:
    assert cycles(import_graph()) == []


def test_dependencies_run_one_way() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if (top := module.split(".")[0]) != (other := target.split(".")[0])
        and (top == "stateguard" or other != "stateguard")
        and (top, other) not in ALLOWED_ACROSS
    )
    assert wrong == []


def test_statewise_is_a_top_level_package_that_stateguard_never_imports() -> None:
    graph = import_graph()
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
