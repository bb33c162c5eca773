"""One owner per file format: only `stateguard/artifacts` spells artifact names or reads them raw.

Checked on the source with `ast` (nothing is imported):
- no string literal outside `stateguard/artifacts` names an artifact file or folder of a task or
  run folder (as the whole string or as a path segment, f-string parts included). Docstrings and
  dict keys are not paths and are left out;
- no module that reads traces indexes an event payload by string (`e.data["index"]`,
  `e.data.get("turn")`): payloads are typed (`stateguard.artifacts.events`);
- no module indexes a relation graph or a graph stage by string (`graph["stages"]`);
- no module indexes the free-dict fields of an artifact by string (`e.data.draft["variables"]`,
  `act.arguments.get("code")`, `start.flow["regime"]`): `stateguard.trace_payloads` reads
  them as the runtime's models (`draft_of`, `run_flow`, `action_args` / `named_args`);
- no module indexes an SFT corpus row by one of `SftRow`'s field names (`row["kind"]`,
  `sample.get("messages")`, `ds["kind"]`): rows are `stateguard.artifacts.sft_rows.SftRow`, and
  columnwise readers (a `datasets` batch) name the columns through `SftColumn`. A row is a name
  bound from a corpus reader (`for row in read_rows(...)`, `samples = build_samples(...)`, a loop
  over such a name) or one of the names the corpus code gives rows and batches (SFT_HOLDERS).

The checks run on source text, so `test_the_checks_can_fail` feeds them a small bad snippet.

    .venv/bin/python -m pytest -q tests/test_artifact_names.py
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from stateguard.artifacts.rl_prompts import (
    PreparedExtraInfo,
    PreparedRlRow,
    RlGroundTruth,
    RlLabels,
    RlRewardSpec,
    RlWorkerPrefix,
)
from stateguard.artifacts.sft_rows import SftRow

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("stateguard", "synthesis", "statewise", "training", "eval", "scripts")
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
        "export_summary.json",
        "corpus_stats.json",
        "corpus_stats.md",
        "synth_summary.json",
        "train.parquet",
        "val.parquet",
    }
)
TRACE_MODULES = ("stateguard.trace", "stateguard.artifacts")
RAW_HOLDERS = frozenset({"graph", "stage"})
# Artifact fields kept as the writer's plain dict (trace bytes); stateguard/trace_payloads.py owns their typed reading.
RAW_SUBDICTS = frozenset({"draft", "flow", "arguments"})
# SFT corpus rows: their columns, the calls that return rows (or a corpus dataset), and the names
# the corpus code binds rows, row lists, datasets and batches to.
SFT_FIELDS = frozenset(SftRow.model_fields)
SFT_SOURCES = frozenset({"read_rows", "read_sft_rows", "build_samples", "load_corpus", "mix"})
SFT_HOLDERS = frozenset({"row", "sample", "samples", "ds", "batch"})
# RL prompt rows (verl's layout): their columns (flagged on any dict: the names are verl's and
# distinctive, but "prompt" only on a row), the fields of their nested parts (extra_info,
# reward_model and the JSON inside them), the calls that return rows, and the names the RL code
# gives rows and their parts.
RL_COLUMNS = frozenset(PreparedRlRow.model_fields) - {"prompt"}
RL_NESTED = frozenset().union(
    *(m.model_fields for m in (PreparedExtraInfo, RlRewardSpec, RlLabels, RlGroundTruth, RlWorkerPrefix))
)
RL_SOURCES = frozenset({"read_rl_prompts", "load_prompts", "rl_prompts", "prepare_rows", "rl_row_dicts"})
RL_HOLDERS = frozenset({"row", "r"})
RL_PART_HOLDERS = frozenset(
    {"extra", "extra_info", "truth", "ground_truth", "labels", "lab", "given", "prefix"}
)


def _sources() -> list[Path]:
    files = [f for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py"))]
    return [f for f in files if OWNER not in f.parents]


@dataclass(frozen=True)
class Module:
    """One checked module, read and parsed once: the checks only walk its tree."""

    path: Path
    where: str
    source: str
    tree: ast.Module


@pytest.fixture(scope="module")
def modules() -> list[Module]:
    """Every module the checks cover, parsed once for this file's tests (a parse of the whole
    repository took seconds per test)."""
    out = []
    for f in _sources():
        source = f.read_text(encoding="utf-8")
        out.append(Module(f, str(f.relative_to(ROOT)), source, ast.parse(source)))
    return out


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


def spelled_names_in(source: str, where: str, tree: ast.Module | None = None) -> list[str]:
    tree = tree or ast.parse(source)
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


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        )
    return None


def _bound(target: ast.AST) -> list[str]:
    """`x` and `(x, n)` -> the first name: readers that return (rows, count) bind rows first."""
    if isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[0]
    return [target.id] if isinstance(target, ast.Name) else []


def _sft_rows(
    tree: ast.AST, holders: frozenset[str] = SFT_HOLDERS, sources: frozenset[str] = SFT_SOURCES
) -> set[str]:
    """Names bound to rows, row lists or a corpus dataset in this module (SFT unless told)."""
    names = set(holders)
    for _ in range(2):  # a loop over a list bound from a reader: two passes reach it
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _called(node.value) in sources:
                names.update(n for t in node.targets for n in _bound(t))
            elif isinstance(node, ast.For | ast.comprehension):
                source = node.iter
                if _called(source) in sources or (isinstance(source, ast.Name) and source.id in names):
                    names.update(_bound(node.target))
    return names


def _keyed(node: ast.AST) -> tuple[ast.AST | None, object]:
    """`x["k"]` / `x.get("k")` -> (x, "k"); anything else -> (None, None)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _unwrapped(node.value), node.slice.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
    ):
        key = node.args[0]
        return (_unwrapped(node.func.value), key.value) if isinstance(key, ast.Constant) else (None, None)
    return None, None


def rl_reads_in(source: str, where: str, tree: ast.Module | None = None) -> list[str]:
    tree = tree or ast.parse(source)
    rows = _sft_rows(tree, RL_HOLDERS, RL_SOURCES)
    out = []
    for node in ast.walk(tree):
        target, key = _keyed(node)
        if target is None or not isinstance(key, str):
            continue
        on_row = isinstance(target, ast.Name) and target.id in rows
        column = key in RL_COLUMNS or (key == "prompt" and on_row)
        on_part = (isinstance(target, ast.Name) and target.id in RL_PART_HOLDERS) or _keyed(target)[
            1
        ] in RL_COLUMNS
        if column or (key in RL_NESTED and on_part):
            out.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return out


def sft_reads_in(source: str, where: str, tree: ast.Module | None = None) -> list[str]:
    tree = tree or ast.parse(source)
    rows = _sft_rows(tree)
    out = []
    for node in ast.walk(tree):
        target, key = None, None
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            target, key = node.func.value, node.args[0] if node.args else None
        if (
            isinstance(target, ast.Name)
            and target.id in rows
            and isinstance(key, ast.Constant)
            and key.value in SFT_FIELDS
        ):
            out.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return out


def raw_reads_in(source: str, where: str, tree: ast.Module | None = None) -> list[str]:
    tree = tree or ast.parse(source)
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


def test_no_module_outside_the_artifacts_layer_spells_an_artifact_name(modules: list[Module]) -> None:
    found = [hit for m in modules for hit in spelled_names_in(m.source, m.where, m.tree)]
    assert found == [], "use the constants and folder helpers of stateguard.artifacts:\n" + "\n".join(found)


def test_no_module_reads_an_artifact_dict_by_string_key(modules: list[Module]) -> None:
    found = [hit for m in modules for hit in raw_reads_in(m.source, m.where, m.tree)]
    assert found == [], "read the typed models of stateguard.artifacts instead:\n" + "\n".join(found)


def test_no_module_reads_an_sft_row_by_string_key(modules: list[Module]) -> None:
    found = [hit for m in modules for hit in sft_reads_in(m.source, str(m.path), m.tree)]
    assert found == [], "read SftRow attributes (or name columns by SftColumn) instead:\n" + "\n".join(found)


def test_no_module_reads_an_rl_row_by_string_key(modules: list[Module]) -> None:
    found = [hit for m in modules for hit in rl_reads_in(m.source, str(m.path), m.tree)]
    assert found == [], (
        "read RlPromptRow / RlExtraInfo attributes (or name columns by RlColumn) instead:\n"
        + "\n".join(found)
    )


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
    sft_bad = (
        "def h(corpus, rec, batch):\n"
        "    samples, n = dedup_atomic(build_samples(rec))\n"
        "    kinds = [s['kind'] for s in samples]\n"
        "    for row in read_rows(corpus):\n"
        "        x = row.get('messages'), batch['tools']\n"
        "    return [r['task_id'] for r in read_sft_rows(corpus)]\n"
    )
    assert sorted(h.split(": ", 1)[1] for h in sft_reads_in(sft_bad, "probe.py")) == [
        "batch['tools']",
        "r['task_id']",
        "row.get('messages')",
        "s['kind']",
    ]
    sft_good = (
        "def h(corpus, event, tokens):\n"
        "    kinds = [r.kind for r in read_rows(corpus)]\n"
        "    return kinds, event['kind'], tokens['input_ids'], read_rows(corpus)[0].messages\n"
    )
    assert sft_reads_in(sft_good, "good.py") == []
    rl_bad = (
        "def k(path, dataset, info):\n"
        "    rows = load_prompts(path)\n"
        "    g = [json.loads(r['extra_info']['labels'])['g'] for r in rows]\n"
        "    extra = dataset[0]['extra_info']\n"
        "    return g, extra.get('turn'), rows[0]['prompt'], info['reward_model']['ground_truth']\n"
    )
    assert sorted(h.split(": ", 1)[1] for h in rl_reads_in(rl_bad, "probe.py")) == [
        "dataset[0]['extra_info']",
        "extra.get('turn')",
        "info['reward_model']",
        "info['reward_model']['ground_truth']",
        "r['extra_info']",
        "r['extra_info']['labels']",
    ]
    rl_good = (
        "def k(path, dataset, out, summaries):\n"
        "    rows = load_prompts(path)\n"
        "    g = [r.extra_info.label().g for r in rows]\n"
        "    info = PreparedExtraInfo.from_runtime(dataset[0][RlColumn.EXTRA_INFO])\n"
        "    return g, info.turn, out.batch['prompts'], summaries[0]['decision'], {'prompt': 1}.get('turn')\n"
    )
    assert rl_reads_in(rl_good, "good.py") == []
