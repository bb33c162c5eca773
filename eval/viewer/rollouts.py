"""Runs made of rollout folders: synthesis exports, and plain folders such as `python -m eval.demo`'s.

    run = load_synthesis(Path("/tmp/synth-view"), Path("/tmp/synth-view/corpus"))
    run = load_rollouts(Path("runs/demo/20250101-120000"))         # <run>/{baseline,stateguard}/trace.jsonl

A rollout folder holds trace.jsonl, states.sqlite and result.json (`stateguard.rollout`). In a
synthesis export they sit at `corpus/runs/<task_id>/<variant>/`, and `corpus/records/<task_id>.jsonl`
(a key line, then one `stateguard.artifacts.corpus_records.TrajectoryRecord` per variant) gives each variant's answers, the reference
answers (judged with the benchmark field judge into per-turn verdicts), its intervention and whether
the corpus kept it; Pa(t) comes from `<out>/<task_id>/hidden/graph.json` when it is there. Plain
rollout folders carry no verdicts: their pages show states and timelines only.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from eval.metrics.dcr import parents_from_graph
from eval.results import ArmResult
from eval.scorers.fields import per_turn_correct
from eval.viewer.config import ViewerError
from eval.viewer.model import ArmSource, RunSource, TaskSource
from stateguard.artifacts.corpus_records import TrajectoryRecord, load_records
from stateguard.artifacts.events import parse_event
from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.run_folder import TRACE_FILE, CorpusFolder, RolloutFolder
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.rollout import RolloutResult

__all__ = ["load_rollouts", "load_synthesis", "rollout_arm"]

VARIANTS = ("clean", "repair", "counterfactual", "auto")


def _records(path: Path) -> dict[str, TrajectoryRecord]:
    """variant name (the rollout folder's) -> its record; a bad line is an error naming it."""
    try:
        _, records = load_records(path)
    except ArtifactError as exc:
        raise ViewerError(str(exc)) from None
    return {r.variant_name: r for r in records}


def _wall_s(trace: Path) -> float:
    """Seconds between the first and the last event of a trace (0 when it has no timestamps)."""
    lines = [ln for ln in trace.read_text(encoding="utf-8").splitlines() if ln.strip()]
    try:
        first, last = parse_event(json.loads(lines[0])).ts, parse_event(json.loads(lines[-1])).ts
    except (IndexError, json.JSONDecodeError, ValidationError):
        return 0.0
    if first is not None and last is not None:
        return round(last - first, 2)
    return 0.0


def _record_facts(record: TrajectoryRecord) -> dict[str, str]:
    facts = {"kept": "yes" if record.keep else "no: " + ", ".join(record.rejections or ["?"])}
    intervention = record.intervention
    if intervention is not None:
        facts["intervention"] = (
            f"{intervention.kind.value} at turn {record.t_star} ({record.stage}): {intervention.description}"
        )
    return facts


def rollout_arm(
    folder: Path,
    *,
    task_id: str,
    name: str,
    group: str,
    bench: str,
    correct: dict[int, bool | None] | None = None,
    parents: dict[int, list[int]] | None = None,
    facts: dict[str, str] | None = None,
) -> ArmSource:
    """One rollout folder as an arm; its counters come from result.json (RolloutResult)."""
    rollout = RolloutFolder(folder)
    result = _rollout_result(rollout)
    trace = rollout.trace
    arm = ArmResult(
        bench=bench,
        task_id=task_id,
        arm=name,
        correct=correct or {},
        parents=parents or {},
        answers=dict(result.answers) if result else {},
        repairs=result.repairs if result else 0,
        manager_calls=result.manager_llm_calls if result else 0,
        committed_states=len(result.committed_states) if result else 0,
        stale_states=len(result.stale_states) if result else 0,
        degraded=result.degraded if result else False,
        degraded_reasons=list(result.degraded_reasons) if result else [],
        wall_s=_wall_s(trace) if trace.is_file() else 0.0,
        run_dir=str(folder),
    )
    return ArmSource(name, group, folder if trace.is_file() else None, arm, facts or {})


def _rollout_result(folder: RolloutFolder) -> RolloutResult | None:
    """The folder's result.json (None while the rollout has not finished); a bad file is an error."""
    if not folder.result.is_file():
        return None
    try:
        return RolloutResult.from_json(folder.result.read_bytes(), source=str(folder.result))
    except (ValidationError, ValueError) as exc:
        raise ViewerError(f"{folder.result}: not a rollout result ({str(exc).splitlines()[0]})") from None


def _variant_order(name: str) -> tuple[int, str]:
    kind, _, num = name.partition("-")
    return (VARIANTS.index(kind) if kind in VARIANTS else len(VARIANTS), f"{num:>6}")


def load_synthesis(root: Path, corpus: Path) -> RunSource:
    tasks = []
    folder_of = CorpusFolder(corpus)
    for task_dir in sorted(p for p in folder_of.runs.iterdir() if p.is_dir()):
        records_file = folder_of.record_file(task_dir.name)
        records = _records(records_file) if records_file.is_file() else {}
        graph = TaskFolder(corpus.parent / task_dir.name).graph
        parents = parents_from_graph(load_graph(graph)) if graph.is_file() else {}
        arms = []
        for folder in sorted(
            (p for p in task_dir.iterdir() if p.is_dir()), key=lambda p: _variant_order(p.name)
        ):
            record = records.get(folder.name)
            correct: dict[int, bool | None] = {}
            if record is not None:
                correct = dict(per_turn_correct(record.reference_answers, record.answers))
            group = record.variant if record else folder.name.split("-")[0]
            facts = _record_facts(record) if record else {"kept": "no record in corpus/records"}
            arm = rollout_arm(
                folder,
                task_id=task_dir.name,
                name=folder.name,
                group=group,
                bench="synthesis",
                correct=correct,
                parents=parents,
                facts=facts,
            )
            arms.append(arm)
        if arms:
            tasks.append(TaskSource(task_dir.name, "synthesis", arms))
    if not tasks:
        raise ViewerError(
            f"{corpus}/runs holds no trajectory folders; was the export run with trajectories on?"
        )
    summary_file = corpus / "export_summary.json"
    text = summary_file.read_text(encoding="utf-8") if summary_file.is_file() else ""
    return RunSource("synthesis", root, "clean", tasks, None, text)


def load_rollouts(root: Path) -> RunSource:
    """`root` itself, or each subfolder of it, holding trace.jsonl: one arm each, grouped by task id."""
    folders = (
        [root]
        if RolloutFolder(root).trace.is_file()
        else sorted(p.parent for p in root.glob(f"*/{TRACE_FILE}"))
    )
    by_task: dict[str, list[ArmSource]] = {}
    for folder in folders:
        result = _rollout_result(RolloutFolder(folder))
        task_id = result.task_id if result else root.name
        name = folder.name if folder != root else (result.arm if result else folder.name)
        arm = rollout_arm(folder, task_id=task_id, name=name, group=name, bench=root.name)
        by_task.setdefault(task_id, []).append(arm)
    order = ("baseline", "stateguard")
    tasks = [
        TaskSource(task_id, root.name, sorted(arms, key=lambda a: (a.name not in order, a.name)))
        for task_id, arms in sorted(by_task.items())
    ]
    note = "rollout folders without a scorer's verdicts; `python -m eval.runner` records them in results/"
    return RunSource("rollouts", root, "baseline", tasks, None, note)
