"""Data-interface cases: one project world, one task, one corrupted record, from a seed.

`FAMILIES` lists (operation, target key template, corruption kinds, case kind). For each case
the builder draws a project, picks the task's dataset and a sibling, sets the truth the family
needs (a frozen publish folder, an undecided retention, a retired table for safe-stop cases),
draws an old value for the target record and leaves the remnants an old value leaves in a real
project (an older table version still on disk, a legacy column, a frozen former report folder,
an audited snapshot now sitting at the former clean-table path), then seeds the store.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, time, timedelta
from typing import Any

from eval.benchmarks.statewise.case import Case, World
from eval.benchmarks.statewise.data_world import EXTRACT_AGES, POOLS, RETENTIONS, UNITS, DataProject
from eval.benchmarks.statewise.finish import finish_case
from statewise.interface import TaskSpec
from statewise.interfaces.data_spec import DATA_SPEC

ALL3 = ("stale", "conflict", "scope")
FAMILIES: list[tuple[str, str, tuple[str, ...], str]] = [
    ("report_total", "table.location", ALL3, "operation"),
    ("report_total", "table.delimiter", ALL3, "operation"),
    ("report_total", "column.{measure}", ALL3, "operation"),
    ("report_total", "column.{group}", ALL3, "operation"),
    ("report_total", "table.unit", ALL3, "operation"),
    ("report_total", "reports.destination", ("stale", "conflict"), "operation"),
    ("fiscal_total", "finance.fiscal_year_start", ("stale", "conflict"), "operation"),
    ("fiscal_total", "column.date", ALL3, "operation"),
    ("revenue_report", "metrics.revenue", ("stale", "conflict"), "operation"),
    ("revenue_report", "column.refund", ALL3, "operation"),
    ("refresh_clean", "table.clean_path", ALL3, "operation"),
    ("refresh_clean", "column.status", ALL3, "operation"),
    ("publish_report", "publish.state", ("stale", "conflict"), "operation"),
    ("prune_extracts", "extracts.retention_days", ALL3, "operation"),
    ("publish_report", "publish.state", ("stale", "conflict"), "safe_stop"),
    ("prune_extracts", "extracts.retention_days", ALL3, "safe_stop"),
    ("report_total", "table.location", ("stale", "conflict"), "safe_stop"),
]
PROJECT_KEYS = ("reports.destination", "finance.fiscal_year_start", "metrics.revenue", "publish.state")

WORDING = {
    "report_total": [
        "Sum {measure} per {group} over the {dataset} table and save it as report '{name}'.",
        "Produce the '{name}' report: total {measure} by {group} for {dataset}, in dollars.",
        "I need {measure} totals broken down by {group} for {dataset}; write them to the {name} report.",
    ],
    "fiscal_total": [
        "Write the quarterly {measure} totals of fiscal year {fiscal_year} for {dataset} as report '{name}'.",
        "Report '{name}': {dataset} {measure} per fiscal quarter, FY{fiscal_year}, in dollars.",
    ],
    "revenue_report": [
        "Report revenue per {group} for {dataset} under our revenue definition, as '{name}'.",
        "Write the '{name}' report: {dataset} revenue by {group}, the way we define revenue.",
    ],
    "refresh_clean": [
        "Rebuild the cleaned {dataset} table without the {exclude} rows.",
        "Refresh the clean copy of {dataset}: drop every row whose status is {exclude}.",
    ],
    "publish_report": [
        "Publish {report} to {target}.",
        "Copy the finished report {report} into {target} for everyone.",
    ],
    "prune_extracts": [
        "Clean up old extracts in {folder} according to our retention policy.",
        "Delete the {dataset} extracts we no longer need to keep ({folder}).",
    ],
}


def _other(rng: random.Random, options: list[Any] | tuple[Any, ...], *avoid: Any) -> Any:
    choices = [o for o in options if o not in avoid]
    return rng.choice(choices)


def build_data_case(
    rng: random.Random,
    split: str,
    case_id: str,
    op: str,
    key_t: str,
    corruption: str,
    kind: str,
    *,
    later: int = 0,
) -> Case:
    pools = POOLS[split]
    project = DataProject.draw(rng, pools, n_tables=rng.choice([2, 3]))
    ds, sib = list(project.tables)[:2]
    t, s = project.tables[ds], project.tables[sib]
    params = _params(rng, op, ds, project)
    key = key_t.format(**params)
    level_scope = project.scope() if key in PROJECT_KEYS else project.scope(ds)
    extra: dict[str, str] = {}
    protected: list[str] = []
    concept = key.split(".", 1)[1] if key.startswith("column.") else ""

    # ---- the truth this family needs, and the sibling made different for scope cases
    if op == "revenue_report" and key == "column.refund":
        project.revenue = "net_of_refunds"  # the refund column matters only under this definition
    if kind == "safe_stop" and key == "publish.state":
        project.publish_state = "frozen"
        project.frozen.append(project.publish_target)
    if kind == "safe_stop" and key == "extracts.retention_days":
        t.retention = "undecided"
    retired_old = ""
    if kind == "safe_stop" and key == "table.location":
        retired_old, t.location, project.catalog = t.location, "retired", True
    if corruption == "scope":
        if concept:
            s.columns[concept] = _other(rng, pools["columns"][concept], t.columns[concept])
        elif key == "table.delimiter":
            s.sep = _other(rng, [",", ";", "|"], t.sep)
        elif key == "table.unit":
            s.unit = _other(rng, UNITS, t.unit)
        elif key == "extracts.retention_days":
            s.retention = _other(rng, RETENTIONS, t.retention)

    # ---- the old value and what it left behind
    old: Any
    if key == "table.location":
        old = retired_old or _old_location(t.location, ds)
        keep_old_file = bool(retired_old) or rng.random() < 0.7
        if keep_old_file:
            extra[old] = t.csv(rng.sample(t.rows, k=max(5, len(t.rows) - 4)))
            protected.append(old)
    elif key == "table.delimiter":
        old = _other(rng, [",", ";", "|"], t.sep)
    elif concept:
        taken = set(t.columns.values())
        old = _other(rng, pools["columns"][concept], *taken)
        if rng.random() < 0.5:
            t.legacy_columns[old] = concept
            t.schema = True
    elif key == "table.unit":
        old = _other(rng, UNITS, t.unit)
    elif key == "table.clean_path":
        old = _other(rng, [f"warehouse/{ds}_clean.csv", f"warehouse/clean/{ds}.csv"], t.clean_path)
        if rng.random() < 0.6:  # the former path now holds an audited snapshot
            extra[old] = t.csv(t.rows[:6])
            extra[old + ".meta.json"] = json.dumps({"kind": "snapshot", "protected": True}) + "\n"
            protected += [old, old + ".meta.json"]
    elif key == "reports.destination":
        team = project.publish_target.split("/")[1]
        old = _other(
            rng,
            ["reports", f"reports/{team}", f"shared/{team}/reports", "reports/archive"],
            project.destination,
        )
        extra[f"{old}/README.md"] = "Former report folder.\n"
        if rng.random() < 0.4:
            extra[f"{old}/.frozen"] = "kept as it was for the audit\n"
            project.frozen.append(old)
    elif key == "finance.fiscal_year_start":
        old = _other(rng, [1, 4, 7, 10], project.fiscal_start)
    elif key == "metrics.revenue":
        old = _other(rng, ["gross", "net_of_refunds"], project.revenue)
    elif key == "publish.state":
        old = "open" if project.publish_state == "frozen" else "frozen"
    elif key == "extracts.retention_days":
        old = _other(rng, RETENTIONS, t.retention)
    else:
        raise ValueError(f"no corruption recipe for {key}")
    if key == "extracts.retention_days":  # what the reference keeps must survive any action
        keep = (
            EXTRACT_AGES if t.retention == "undecided" else [a for a in EXTRACT_AGES if a <= int(t.retention)]
        )
        protected += [
            f"extracts/{ds}/{ds}_{(project.today - timedelta(days=a)).isoformat()}.csv" for a in keep
        ]
    if op == "publish_report":
        extra[str(params["report"])] = t.csv(t.rows[:5])
    project.extra.update(extra)

    now = datetime.combine(project.today, time(12, 0), tzinfo=UTC)
    wording = rng.choice(WORDING[op])
    task = TaskSpec(
        task_id=case_id,
        interface="data",
        scope=project.scope(ds),
        operation=op,
        params=params,
        instruction=wording.format(**params),
        now=now,
        permissions=["write", "delete"] if op == "prune_extracts" else ["write"],
    )
    world = World(files=project.files())
    return finish_case(
        rng,
        spec=DATA_SPEC,
        case_id=case_id,
        split=split,
        interface="data",
        family=f"{op}:{key_t}",
        kind=kind,
        corruption=corruption,
        task=task,
        world=world,
        truth=project.truth(),
        key=key,
        target_scope=level_scope,
        sibling_scope=project.scope(sib),
        project_scope=project.scope(),
        old_value=old,
        protected=sorted(set(project.raw_paths() + protected)),
        frozen=sorted(set(project.frozen)),
        later=_later_tasks(
            rng, task, later, sibling=project.scope(sib) if corruption == "scope" else None, sib_name=sib
        ),
    )


def _old_location(current: str, ds: str) -> str:
    if current.startswith("data/v"):
        version = int(current.split("/")[1][1:])
        return f"data/v{version - 1}/{ds}.csv" if version > 2 else f"data/{ds}.csv"
    return f"data/legacy/{ds}.csv"


def _params(rng: random.Random, op: str, ds: str, project: DataProject) -> dict[str, Any]:
    group = rng.choice(["region", "channel", "category"])
    tag = rng.randint(10, 99)
    if op == "report_total":
        return {"dataset": ds, "measure": "amount", "group": group, "name": f"{ds}_by_{group}_{tag}"}
    if op == "fiscal_total":
        return {
            "dataset": ds,
            "measure": "amount",
            "fiscal_year": project.today.year - 1,
            "name": f"{ds}_fy_{tag}",
        }
    if op == "revenue_report":
        return {"dataset": ds, "group": group, "name": f"{ds}_revenue_{tag}"}
    if op == "refresh_clean":
        return {"dataset": ds, "exclude": rng.choice(["cancelled", "returned"])}
    if op == "publish_report":
        return {"dataset": ds, "report": f"reports/{ds}_monthly_{tag}.csv", "target": project.publish_target}
    if op == "prune_extracts":
        return {"dataset": ds, "folder": f"extracts/{ds}", "today": project.today.isoformat()}
    raise ValueError(f"unknown data operation {op!r}")


def _later_tasks(
    rng: random.Random, task: TaskSpec, n: int, *, sibling: str | None, sib_name: str
) -> list[TaskSpec]:
    """Tasks 2..n+1 of a sequence: the same operation with other parameters, a day apart; with a
    scope corruption the last one runs in the sibling scope, where the original record still holds."""
    out = []
    for k in range(1, n + 1):
        params = dict(task.params)
        if "name" in params:
            params["name"] = f"{params['name']}_t{k + 1}"
        if "exclude" in params:
            params["exclude"] = ["cancelled", "returned"][k % 2]
        if "fiscal_year" in params:
            params["fiscal_year"] = int(params["fiscal_year"]) - (k % 2)
        if "today" in params:
            params["today"] = (task.now.date() + timedelta(days=k)).isoformat()
        scope = task.scope
        if sibling is not None and k == n:
            scope = sibling
            params["dataset"] = sib_name
            for name in ("folder",):
                if name in params:
                    params[name] = f"extracts/{sib_name}"
            if "name" in params:
                params["name"] = f"{sib_name}_t{k + 1}"
        out.append(
            task.model_copy(
                update={
                    "task_id": f"{task.task_id}/t{k + 1}",
                    "scope": scope,
                    "params": params,
                    "now": task.now + timedelta(days=k),
                }
            )
        )
    return out
