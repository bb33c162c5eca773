"""One owner per file format: only `stateguard/artifacts` spells artifact names or reads them raw.

Checked on the source with `ast` (nothing is imported):
- no string literal outside `stateguard/artifacts` names an artifact file or folder of a task or
  run folder (as the whole string or as a path segment, f-string parts included). Docstrings and
  dict keys are not paths and are left out;
- no module that reads traces indexes an event payload by string (`e.data["index"]`,
  `e.data.get("turn")`): payloads are typed (`stateguard.artifacts.events`);
- no module indexes a relation graph or a graph stage by string (`graph["stages"]`);
- no module indexes the free-dict fields of an artifact by string (`e.data.draft["variables"]`,
  `act.arguments.get("code")`, `start.flow["regime"]`): `stateguard.artifacts.payloads` reads
  them as the runtime's models (`draft_of`, `run_flow`, `action_args` / `named_args`).

The checks run on source text, so `test_the_checks_can_fail` feeds them a small bad snippet.

    .venv/bin/python -m pytest -q tests/test_artifact_names.py
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("stateguard", "synthesis", "training", "eval", "scripts")
OWNER = ROOT / "stateguard" / "artifacts"

# Every name stateguard.artifacts defines a constant for (task folder, rollout folder, run folder).
NAMES = frozenset(
    {
        "hidden",
        "task.json",
        "graph.json",
        "faults.json",
        "fingerprints.json",
        "replay.json",
        "manifest.json",
        "questions.json",
        "trace.jsonl",
        "llm_calls.jsonl",
        "window_trace.jsonl",
        "states.sqlite",
        "result.json",
        "summary.json",
        "config.yaml",
    }
)
TRACE_MODULES = ("stateguard.trace", "stateguard.artifacts")
RAW_HOLDERS = frozenset({"graph", "stage"})
# Artifact fields kept as the writer's plain dict (trace bytes); payloads.py owns their typed reading.
RAW_SUBDICTS = frozenset({"draft", "flow", "arguments"})


def _sources() -> list[Path]:
    files = [f for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py"))]
    return [f for f in files if OWNER not in f.parents]


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _spells(text: str) -> str | None:
    if text in NAMES:
        return text
    for part in text.replace("\\", "/").split("/"):
        if part in NAMES:
            return part
    return None


def spelled_names(path: Path) -> list[str]:
    return spelled_names_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def spelled_names_in(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            skip.update(id(k) for k in node.keys if k is not None)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            name = _spells(node.value)
            if name is not None:
                out.append(f"{where}:{node.lineno}: {name!r}")
    return out


def _imports_trace(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and node.module is not None and node.module.startswith(TRACE_MODULES)
        for node in ast.walk(tree)
    )


def _string_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _unwrapped(node: ast.AST) -> ast.AST:
    """`(x.arguments or {})` -> `x.arguments`: a default for a missing dict is still a raw read."""
    while isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        node = node.values[0]
    return node


def raw_reads(path: Path) -> list[str]:
    return raw_reads_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def raw_reads_in(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    traced = _imports_trace(tree)
    out = []
    for node in ast.walk(tree):
        target, key = None, None
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            target, key = node.func.value, node.args[0]
        if target is None or key is None or not _string_key(key):
            continue
        target = _unwrapped(target)
        payload = traced and isinstance(target, ast.Attribute) and target.attr in ("data", "payload")
        holder = isinstance(target, ast.Name) and target.id in RAW_HOLDERS
        subdict = isinstance(target, ast.Attribute) and target.attr in RAW_SUBDICTS
        if payload or holder or subdict:
            out.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_module_outside_the_artifacts_layer_spells_an_artifact_name() -> None:
    found = [hit for f in _sources() for hit in spelled_names(f)]
    assert found == [], "use the constants and folder helpers of stateguard.artifacts:\n" + "\n".join(found)


def test_no_module_reads_an_artifact_dict_by_string_key() -> None:
    found = [hit for f in _sources() for hit in raw_reads(f)]
    assert found == [], "read the typed models of stateguard.artifacts instead:\n" + "\n".join(found)


def test_the_checks_can_fail() -> None:
    bad = (
        "from stateguard.trace import read_trace\n"
        "def f(run, graph, act, start):\n"
        '    e = read_trace(run / "trace.jsonl")[0]\n'
        '    x = e.data["index"], graph["stages"], f"{run}/hidden/graph.json", {"hidden": True}\n'
        '    y = e.data.draft["used_variables"], act.arguments["error_hint"]["error_variables"]\n'
        '    return x, y, (act.arguments or {}).get("code"), start.flow.get("regime")\n'
    )
    names = spelled_names_in(bad, "probe.py")
    reads = raw_reads_in(bad, "probe.py")
    assert sorted(h.split(": ", 1)[1] for h in names) == ["'hidden'", "'trace.jsonl'"]
    assert sorted(h.split(": ", 1)[1] for h in reads) == [
        "(act.arguments or {}).get('code')",
        "act.arguments['error_hint']",
        "e.data.draft['used_variables']",
        "e.data['index']",
        "graph['stages']",
        "start.flow.get('regime')",
    ]
    # typed reads and names that are not artifact sub-dicts pass
    good = (
        "def g(act, cfg, store):\n"
        "    args = named_args(act.name, act.arguments, RepairArgs)\n"
        '    return args.error_hint, cfg.flows["longds"], store.get("x"), act.arguments.get(key)\n'
    )
    assert raw_reads_in(good, "good.py") == [] and spelled_names_in(good, "good.py") == []
