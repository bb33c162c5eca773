"""A DAComp-DE task folder, as published in the Hugging Face dataset `DAComp/dacomp-de`.

    <example_id>/                      e.g. dacomp-de-impl-001, dacomp-de-evol-017
      run.py                           builds <database_file> from the SQL files
      config/layer_dependencies.yaml   layer order and table dependencies (kept as read)
      docs/data_contract.yaml          implementation tasks: the contract to implement
      question.md                      evolution tasks: the requested change
      sql/{staging,intermediate,marts}/<table>.sql   one SELECT per table (evol: pre-change SQL)
      <proj>_start.duckdb              raw data only (schema `raw`), the clean starting state

    task = load_task("data/dacomp_de/tasks/dacomp-de-impl-001")
    task.spec_file, task.start_db, task.sql_files["staging"]["stg_lever__user"]
    sources = read_sql(task.root / "sql")       # {layer: {table: sql text}}, for pipeline.py

The worker sees the whole folder; the reference answer exists only in the gold database.
`FLOW` in this package sets the review cadence and the worker's step budgets.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

TASK_ID = re.compile(r"^dacomp-de-(impl|evol)-\d+")


class TaskFolderError(ValueError):
    """A task folder is missing a file the benchmark layout requires."""


class DACompTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    example_id: str
    kind: Literal["impl", "evol"]
    root: Path
    run_py: Path
    start_db: Path = Field(description="`<proj>_start.duckdb`: raw inputs, never written by the scorer.")
    spec_file: Path = Field(description="docs/data_contract.yaml (impl) or question.md (evol).")
    layer_dependencies: dict[str, Any] = Field(description="config/layer_dependencies.yaml as parsed.")
    sql_files: dict[str, dict[str, Path]] = Field(description="layer -> table -> SQL file.")

    @property
    def project(self) -> str:
        """Project name from the start database, e.g. `lever` for `lever_start.duckdb`."""
        return self.start_db.name.removesuffix("_start.duckdb")


def sql_file_map(sql_dir: Path) -> dict[str, dict[str, Path]]:
    """{layer: {table: path}} for every `sql/<layer>/<table>.sql`; layers and tables sorted."""
    if not sql_dir.is_dir():
        return {}
    out: dict[str, dict[str, Path]] = {}
    for layer_dir in sorted(p for p in sql_dir.iterdir() if p.is_dir()):
        files = sorted(layer_dir.glob("*.sql"))
        if files:
            out[layer_dir.name] = {f.stem.lower(): f for f in files}
    return out


def read_sql(sql_dir: Path) -> dict[str, dict[str, str]]:
    """The SQL text of every file under `sql_dir`, keyed like `sql_file_map`."""
    return {
        layer: {table: path.read_text(encoding="utf-8") for table, path in tables.items()}
        for layer, tables in sql_file_map(sql_dir).items()
    }


def _one_start_db(root: Path) -> Path:
    found = sorted(root.glob("*_start.duckdb"))
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise TaskFolderError(
            f"{root}: expected exactly one `<proj>_start.duckdb`, found {what} "
            f"({[p.name for p in found]}); re-extract the task from DAComp/dacomp-de"
        )
    return found[0]


def load_task(folder: str | Path) -> DACompTask:
    """Read one task folder; raises TaskFolderError naming the missing piece."""
    root = Path(folder)
    match = TASK_ID.match(root.name)
    if match is None:
        raise TaskFolderError(f"{root}: folder name must be the example id, like dacomp-de-impl-001")
    run_py = root / "run.py"
    if not run_py.is_file():
        raise TaskFolderError(f"{root}: run.py is missing; every DAComp-DE task ships one")
    deps_file = root / "config" / "layer_dependencies.yaml"
    if not deps_file.is_file():
        raise TaskFolderError(f"{root}: config/layer_dependencies.yaml is missing")
    try:
        layer_deps = yaml.safe_load(deps_file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise TaskFolderError(f"{deps_file}: not valid YAML: {err}") from err
    if not isinstance(layer_deps, dict):
        raise TaskFolderError(f"{deps_file}: expected a mapping at the top level")
    candidates = [root / "docs" / "data_contract.yaml", root / "question.md"]
    spec = next((p for p in candidates if p.is_file()), None)
    if spec is None:
        raise TaskFolderError(f"{root}: neither docs/data_contract.yaml (impl) nor question.md (evol) exists")
    kind: Literal["impl", "evol"] = "impl" if match.group(1) == "impl" else "evol"
    return DACompTask(
        example_id=root.name,
        kind=kind,
        root=root,
        run_py=run_py,
        start_db=_one_start_db(root),
        spec_file=spec,
        layer_dependencies=layer_deps,
        sql_files=sql_file_map(root / "sql"),
    )


def find_tasks(root: str | Path) -> list[Path]:
    """Task folders anywhere under `root` (the zip's top folder varies), sorted by example id."""
    base = Path(root)
    if not base.is_dir():
        raise TaskFolderError(f"{base}: not a directory; fetch the tasks with `make data BENCH=dacomp_de`")
    found = [p.parent for p in base.rglob("run.py") if TASK_ID.match(p.parent.name)]
    return sorted(found, key=lambda p: p.name)


def gold_db_path(gold_root: str | Path, example_id: str, database_file: str) -> Path:
    """`<gold_root>/.../<example_id>/<database_file>`; raises FileNotFoundError with the fix."""
    base = Path(gold_root)
    direct = base / example_id / database_file
    if direct.is_file():
        return direct
    nested = sorted(base.rglob(f"{example_id}/{database_file}")) if base.is_dir() else []
    if nested:
        return nested[0]
    raise FileNotFoundError(
        f"{direct}: gold database not found. Fetch DAComp/dacomp-de-gold with `make data BENCH=dacomp_de` "
        "or copy gold/<example_id>/<database_file> there by hand"
    )
