"""Find what a run folder holds and read it into one shape: tasks, each with its arms or variants.

    run = load_run("runs/eval/synth-20250101-120000")    # an evaluation run (results/ + tasks/)
    run = load_run("/tmp/synth-view")                   # a synthesis export (corpus/runs + records)
    run = load_run("runs/demo/20250101-120000")         # rollout folders ({baseline,stateguard}/)

An evaluation run gives one `ArmSource` per (task, arm) from its `results/` files. A synthesis
export gives one per trajectory variant (`clean`, `repair-1`, `auto-1`, ...) of each parent task,
and plain rollout folders one per folder (both read in `eval/viewer/rollouts.py`). Every arm
carries an `ArmResult`, so the overview uses the same summary code as `make eval`. The shapes
themselves (`ArmSource`, `TaskSource`, `RunSource`) live in `eval/viewer/model.py`.
"""

from __future__ import annotations

from pathlib import Path

from eval.report import RunSummary
from eval.results import ArmResult, read_results
from eval.viewer.config import ViewerError
from eval.viewer.model import ArmSource, RunSource, TaskSource
from eval.viewer.rollouts import load_rollouts, load_synthesis
from stateguard.artifacts.run_folder import TRACE_FILE, CorpusFolder, RolloutFolder, RunFolder

__all__ = ["load_run"]


def load_run(root: str | Path) -> RunSource:
    path = Path(root)
    if not path.is_dir():
        raise ViewerError(
            f"{path}: no such folder; pass an evaluation run folder (with results/) or a synthesis "
            "out_dir (with corpus/runs/)"
        )
    if RunFolder(path).results.is_dir():
        return _load_eval(path)
    for corpus in (path / "corpus", path):
        if CorpusFolder(corpus).runs.is_dir() and CorpusFolder(corpus).records.is_dir():
            return load_synthesis(path, corpus)
    if RolloutFolder(path).trace.is_file() or any(path.glob(f"*/{TRACE_FILE}")):
        return load_rollouts(path)
    raise ViewerError(
        f"{path}: neither an evaluation run (no results/ folder; make one with `python -m eval.runner "
        "run_dir=...`), a synthesis export (no corpus/runs/ and corpus/records/; make one with "
        "`python -m synthesis.pipeline out_dir=...`) nor rollout folders (no trace.jsonl in it or its "
        "subfolders)"
    )


# ---------------------------------------------------------------------------------- evaluation runs
def _arm_folder(root: Path, result: ArmResult) -> Path | None:
    """The arm's folder inside the run (the run may have moved since), else the recorded path."""
    for candidate in (RunFolder(root).rollout(result.task_id, result.arm).root, Path(result.run_dir)):
        if RolloutFolder(candidate).trace.is_file():
            return candidate
    return None


def _load_eval(root: Path) -> RunSource:
    try:
        results = read_results(root)
    except (
        ValueError
    ) as exc:  # ResultFileError names the file and the fix (a resume moves it aside, reruns it)
        raise ViewerError(str(exc)) from exc
    if not results:
        raise ViewerError(f"{root}/results is empty: the run has not finished any task yet")
    by_task: dict[tuple[str, str], list[ArmSource]] = {}
    for r in results:
        facts = {"error": r.error} if r.error else {}
        if r.status == "degraded":
            facts["degraded"] = "; ".join(r.degraded_reasons) or "(no reason recorded)"
        by_task.setdefault((r.bench, r.task_id), []).append(
            ArmSource(r.arm, r.arm, _arm_folder(root, r), r, facts)
        )
    order = ("baseline", "stateguard")
    tasks = [
        TaskSource(
            task_id,
            bench,
            sorted(
                arms,
                key=lambda a: (a.name not in order, order.index(a.name) if a.name in order else 0, a.name),
            ),
        )
        for (bench, task_id), arms in sorted(by_task.items())
    ]
    summary = None
    if RunFolder(root).summary.is_file():
        try:
            summary = RunSummary.model_validate_json(RunFolder(root).summary.read_text(encoding="utf-8"))
        except ValueError:
            summary = None  # an older or torn summary: the overview recomputes it from results/
    config = RunFolder(root).config
    return RunSource(
        "eval",
        root,
        "baseline",
        tasks,
        summary,
        config.read_text(encoding="utf-8") if config.is_file() else "",
    )
