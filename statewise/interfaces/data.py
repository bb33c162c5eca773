"""The data-analysis interface: pandas operations over a project folder in the sandboxed workspace.

A project holds CSV tables under `data/`, an optional catalog (`meta/catalog.json`:
dataset -> path, status, clean path) and per-table schemas (`meta/<dataset>.schema.json`: column
-> concept, unit), reports, a warehouse of cleaned tables (with `<file>.meta.json` sidecars),
publish folders (a `.frozen` marker freezes one) and dated extracts. Scopes are
`<project>/<dataset>`.

Operations run as one cell in `stateguard.sandbox.SandboxWorkspace` (its own limited process;
writes only under its scratch folder, where the project lives); verifiers observe read-only
through `run_probe` (a forked copy whose writes are refused). The verifiers read the catalog,
the schemas, the headers and the markers, never the store. A bubblewrap workspace sees the project
as it was when the workspace started (its scratch is a tmpfs copy): open a new workspace per task
when something outside changes the project between tasks, or choose `isolation="process"`.

    env = DataEnvironment(workspace, project_root)
    interface = DATA_INTERFACE                 # spec + verifier adapters + renderer
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from stateguard.workspace import LiveWorkspace
from statewise.interface import ExecOutcome, Interface, Operation, TaskSpec, Verdict
from statewise.interfaces.data_spec import DATA_SPEC

DELIMITERS = (",", ";", "|", "\t")


class DataEnvironment:
    """A project folder in a live workspace: probes are read-only forks, execution is one cell."""

    def __init__(self, workspace: LiveWorkspace, root: Path):
        self.ws = workspace
        self.root = Path(root).resolve()
        self.probes = 0

    def _probe(self, code: str) -> Any:
        self.probes += 1
        result = self.ws.run_probe(f"import os\n__root = {str(self.root)!r}\n{code}")
        return result.value if result.ok else None

    def read_text(self, path: str, limit: int = 4000) -> str | None:
        code = (
            "__p = os.path.join(__root, " + repr(path) + ")\n"
            f"result = open(__p, encoding='utf-8', errors='replace').read({int(limit)}) if os.path.isfile(__p) else None"
        )
        value = self._probe(code)
        return value if isinstance(value, str) else None

    def list_dir(self, path: str) -> list[str] | None:
        code = (
            f"__p = os.path.join(__root, {path!r})\n"
            "result = sorted(os.listdir(__p)) if os.path.isdir(__p) else None"
        )
        value = self._probe(code)
        return [str(v) for v in value] if isinstance(value, list) else None

    def execute(self, program: str) -> ExecOutcome:
        body = textwrap.indent(program, "    ")
        cell = f"def __statewise_action(ROOT):\n{body}\n\n__statewise_action({str(self.root)!r})\ndel __statewise_action"
        result = self.ws.run_cell(cell)
        return ExecOutcome(ok=result.ok, output=(result.stdout or "")[-2000:], error=result.error)


# ---------------------------------------------------------------------------- verifiers
def _dataset(task: TaskSpec) -> str:
    return task.scope.split("/")[-1]


def _json(env: Any, path: str) -> dict[str, Any] | None:
    text = env.read_text(path, limit=100_000)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def locate_table(env: Any, dataset: str) -> Verdict:
    """The table's current path: the catalog when it names one, else the one non-deprecated candidate."""
    catalog = _json(env, "meta/catalog.json")
    entry = (catalog or {}).get("datasets", {}).get(dataset)
    if isinstance(entry, dict):
        if entry.get("status") == "retired":
            return Verdict(
                conclusive=True, value="retired", detail=f"meta/catalog.json: {dataset} is retired"
            )
        path = entry.get("path")
        if isinstance(path, str) and env.read_text(path, limit=1) is not None:
            return Verdict(
                conclusive=True, value=path, detail=f"meta/catalog.json: {dataset} -> {path} (exists)"
            )
    candidates: list[str] = []
    stack = ["data"]
    while stack:
        folder = stack.pop()
        listing = env.list_dir(folder) or []
        if "DEPRECATED" in listing:
            continue
        for name in listing:
            if name == f"{dataset}.csv":
                candidates.append(f"{folder}/{name}")
            elif "." not in name:
                stack.append(f"{folder}/{name}")
    if len(candidates) == 1:
        return Verdict(
            conclusive=True, value=candidates[0], detail=f"only current file named {dataset}.csv under data/"
        )
    return Verdict(
        conclusive=False, detail=f"{len(candidates)} candidate files for {dataset}: {sorted(candidates)}"
    )


def _header(env: Any, dataset: str) -> tuple[str | None, str]:
    where = locate_table(env, dataset)
    if not where.conclusive or where.value == "retired":
        return None, where.detail
    text = env.read_text(str(where.value), limit=2000)
    return text, f"{where.value}"


def verify_location(env: Any, key: str, task: TaskSpec) -> Verdict:
    return locate_table(env, _dataset(task))


def verify_delimiter(env: Any, key: str, task: TaskSpec) -> Verdict:
    text, where = _header(env, _dataset(task))
    if text is None:
        return Verdict(conclusive=False, detail=where)
    lines = [ln for ln in text.splitlines()[:4] if ln]
    counts = {d: {ln.count(d) for ln in lines} for d in DELIMITERS}
    found = [d for d, c in counts.items() if len(c) == 1 and min(c) >= 1]
    if len(found) == 1:
        return Verdict(conclusive=True, value=found[0], detail=f"{where}: every line splits on {found[0]!r}")
    return Verdict(conclusive=False, detail=f"{where}: delimiter ambiguous among {found}")


def _schema(env: Any, dataset: str) -> dict[str, Any]:
    data = _json(env, f"meta/{dataset}.schema.json")
    cols = (data or {}).get("columns")
    return cols if isinstance(cols, dict) else {}


def verify_column(env: Any, key: str, task: TaskSpec) -> Verdict:
    concept = key.split(".", 1)[1]
    dataset = _dataset(task)
    for name, info in _schema(env, dataset).items():
        if isinstance(info, dict) and info.get("concept") == concept:
            return Verdict(
                conclusive=True, value=name, detail=f"meta/{dataset}.schema.json: {name} is the {concept}"
            )
    text, where = _header(env, dataset)
    if text is None:
        return Verdict(conclusive=False, detail=where)
    delim = verify_delimiter(env, "table.delimiter", task)
    header = text.splitlines()[0].split(str(delim.value)) if delim.conclusive else []
    if concept in header:
        return Verdict(conclusive=True, value=concept, detail=f"{where}: header has a column named {concept}")
    return Verdict(
        conclusive=False, detail=f"{where}: no schema entry and no column named {concept} in {header}"
    )


def verify_unit(env: Any, key: str, task: TaskSpec) -> Verdict:
    dataset = _dataset(task)
    units = {
        info.get("unit")
        for info in _schema(env, dataset).values()
        if isinstance(info, dict) and info.get("unit")
    }
    if len(units) == 1:
        unit = units.pop()
        return Verdict(conclusive=True, value=unit, detail=f"meta/{dataset}.schema.json: amounts in {unit}")
    return Verdict(
        conclusive=False,
        detail=f"meta/{dataset}.schema.json states no single unit ({sorted(map(str, units))})",
    )


def verify_clean_path(env: Any, key: str, task: TaskSpec) -> Verdict:
    """The one warehouse table (two folder levels deep) whose sidecar marks it the clean table of the dataset."""
    dataset = _dataset(task)
    hits = []
    folders = ["warehouse"]
    for _ in range(2):
        below = []
        for folder in folders:
            for name in env.list_dir(folder) or []:
                if name.endswith(".meta.json"):
                    meta = _json(env, f"{folder}/{name}") or {}
                    if meta.get("kind") == "clean" and meta.get("dataset") == dataset:
                        hits.append(f"{folder}/{name[: -len('.meta.json')]}")
                elif "." not in name:
                    below.append(f"{folder}/{name}")
        folders = below
    if len(hits) == 1:
        return Verdict(
            conclusive=True, value=hits[0], detail=f"{hits[0]}.meta.json marks it the clean {dataset} table"
        )
    return Verdict(conclusive=False, detail=f"{len(hits)} warehouse tables marked clean for {dataset}")


def verify_publish_state(env: Any, key: str, task: TaskSpec) -> Verdict:
    target = str(task.params.get("target", ""))
    listing = env.list_dir(target)
    if listing is None:
        return Verdict(conclusive=False, detail=f"publish folder {target!r} does not exist")
    frozen = ".frozen" in listing
    return Verdict(
        conclusive=True,
        value="frozen" if frozen else "open",
        detail=f"{target}: {'a .frozen marker' if frozen else 'no .frozen marker'}",
    )


def render(op: Operation, slots: dict[str, Any]) -> str:
    """The operation's pandas program with each slot value as a Python literal (no code injection)."""
    return op.template.format(**{k: repr(v) for k, v in slots.items()})


DATA_INTERFACE = Interface(
    spec=DATA_SPEC,
    verifiers={
        "table_location": verify_location,
        "csv_delimiter": verify_delimiter,
        "column": verify_column,
        "amount_unit": verify_unit,
        "clean_path": verify_clean_path,
        "publish_state": verify_publish_state,
    },
    render=render,
)
