"""DABstep as a runner benchmark: one single-turn task per question, scored by the official matcher.

    make eval BENCH=dabstep ARGS='worker=llm'                        # dev split (10 answered questions)
    make eval BENCH=dabstep ARGS='worker=llm bench.split=all'        # 450 questions, answers withheld
    python -m eval.benchmarks.dabstep.bench runs/eval/dabstep-<time>  # leaderboard JSONL per arm

Each question becomes a one-turn `Task`: the turn shows where the context files are, the
question and its answer guidelines (the manager's view of the task), and keeps the raw question
and guidelines for the worker protocol. The LLM worker speaks the official runner's shape
(`worker_protocol` -> `prompts.dabstep_protocol`: chat or reasoning-model prompts chosen from
`STATEGUARD_WORKER_MODEL`, Thought/Code/Observation steps, `final_answer(value)`). There is no
reference code, so only `worker=llm` can run it; `load` refuses `worker=scripted`, a missing
worker endpoint and a missing context file before any rollout. The sandbox mounts the context
folder read-only and `BASE_PATH` names it.

Scoring: `question_matches(prediction, truth)` when the split publishes the answer (dev);
None (excluded from accuracy) when the answer is withheld (the 450-task split), whose
predictions go to the official leaderboard as JSON lines {task_id, agent_answer,
reasoning_trace}: `write_submission(results, path)` for one arm, `write_submissions(run_dir)`
(= `after_run`, or the command above) for every arm of a run, as
`<run_dir>/dabstep_submission_<arm>.jsonl`. Level = easy | hard, as the paper reports them; no
DCR (the tasks declare no dependencies between units, so `parents` stays empty). Flow:
`stateguard.flows.DABSTEP` (segment-induced, review every 3 steps, budget 10 / 15 per task).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.dabstep.loader import CONTEXT_FILES, DabstepTask, check_context, load_split, resolve_root
from eval.benchmarks.dabstep.prompts import dabstep_protocol
from eval.benchmarks.dabstep.scorer import SCORING_VERSION, question_matches
from eval.results import ArmResult, read_results
from stateguard.artifacts.events import WorkerStepEvent
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.flows import DABSTEP
from stateguard.llm import EndpointConfig
from stateguard.task import Task, Turn
from stateguard.trace import read_trace
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["DabstepBench", "prediction_text", "write_submission", "write_submissions"]

UNIT = 1  # the single turn (and scored unit) of every DABstep task

CONTEXT_TEXT = """This is one DABstep question about a payment processor's data. The data files are in the \
read-only folder BASE_PATH ({folder}): {files}. manual.md defines the business terms and the fee rules, \
payments-readme.md describes the columns of payments.csv."""

QUESTION_TEXT = """Question: {question}

Answer guidelines: {guidelines}"""


def require_llm_worker(cfg: Mapping[str, Any], bench: str) -> None:
    """Fail before any rollout when the worker cannot run this benchmark (no reference code to replay)."""
    worker = cfg.get("worker")
    if worker is None:
        return  # called outside the runner: nothing to check
    if str(worker) != "llm":
        raise ValueError(
            f"bench={bench} needs worker=llm (worker={worker} replays reference code, and {bench} ships "
            "none); set worker=llm and the STATEGUARD_WORKER_BASE_URL / STATEGUARD_WORKER_MODEL variables"
        )
    EndpointConfig.from_env("worker")  # names the missing variable now, not after the first task


def make_task(item: DabstepTask, context_dir: Path) -> EvalTask:
    folder = context_dir.resolve()
    guidelines = item.guidelines.strip() or "none"
    question = QUESTION_TEXT.format(question=item.question.strip(), guidelines=guidelines)
    turn = Turn(
        turn_id=UNIT,
        context=CONTEXT_TEXT.format(folder=folder, files=", ".join(CONTEXT_FILES)),
        question=question,
        answer=item.answer if item.has_answer else None,  # hidden from the agent; read only by `score`
        visible={
            "dabstep": {"question": item.question.strip(), "guidelines": guidelines}
        },  # for the worker protocol
    )
    task = Task(task_id=item.task_id, turns=[turn], base_path=str(folder))
    return EvalTask(task_id=item.task_id, task=task, data_dir=folder, domain="dabstep", level=item.level)


def _order(task_id: str) -> tuple[int, int, str]:
    return (0, int(task_id), task_id) if task_id.isdigit() else (1, 0, task_id)


def prediction_text(answer: Any) -> str | None:
    """The worker's reported answer as the string the matcher compares; None when it gave none.

    `{"answer": v}` (any letter case) or a one-field object gives v; a list is joined with ", ";
    any other object is written as JSON.
    """
    if answer is None:
        return None
    if isinstance(answer, dict):
        keyed = {str(k).strip().lower(): v for k, v in answer.items()}
        if "answer" in keyed:
            return prediction_text(keyed["answer"])
        if len(answer) == 1:
            return prediction_text(next(iter(answer.values())))
        return json.dumps(answer, sort_keys=True)
    if isinstance(answer, list | tuple):
        return ", ".join(str(x) for x in answer)
    return str(answer)


class DabstepBench(Benchmark):
    name = "dabstep"
    flow = DABSTEP
    scoring_version = SCORING_VERSION

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        split = str(cfg.get("split", "dev"))
        if split not in ("dev", "all"):
            raise ValueError(f"bench.split={split!r}: use dev (answers known) or all (answers withheld)")
        require_llm_worker(cfg, self.name)
        root = resolve_root(cfg.get("data_dir") or "data/dabstep")
        # A missing context file (payments.csv is not in every copy) stops the run here, naming the fetch.
        context = check_context(root / "context", verify=bool(cfg.get("verify", False)))
        items = sorted(load_split(root, "dev" if split == "dev" else "all"), key=lambda t: _order(t.task_id))
        return [make_task(item, context.folder) for item in items]

    def worker_protocol(self, task: EvalTask) -> WorkerProtocol:
        """The official runner's worker shape for the configured worker model (`prompts.py`)."""
        return dabstep_protocol(str(task.data_dir), model=EndpointConfig.from_env("worker").model)

    def score(self, task: EvalTask, answers: Mapping[int, Any]) -> dict[int, bool | None]:
        truth = task.task.turn(UNIT).answer
        if truth is None:
            return {UNIT: None}  # withheld: only the leaderboard can score it
        prediction = prediction_text(answers.get(UNIT))
        return {UNIT: prediction is not None and question_matches(prediction, str(truth))}

    def after_run(self, run_dir: str | Path) -> list[Path]:
        """The leaderboard files of a finished run (`write_submissions`)."""
        return write_submissions(run_dir)


def _reasoning(run_dir: str) -> str:
    """The worker's steps (thought, code, output head) from the arm's trace, for the submission."""
    path = RolloutFolder(Path(run_dir)).trace
    if not path.is_file():
        return ""
    parts = []
    for event in read_trace(path):
        if not isinstance(event, WorkerStepEvent):
            continue
        data = event.data
        if data.thought:
            parts.append(data.thought)
        if data.action:
            parts.append(f"```python\n{data.action}\n```")
        if data.output or data.error:
            parts.append(f"output: {data.output[:500]}{data.error or ''}")
    return "\n\n".join(parts)


def write_submission(results: Iterable[ArmResult], path: str | Path) -> Path:
    """Write one arm's predictions in the leaderboard format: JSON lines of
    {task_id, agent_answer, reasoning_trace}; a task without an answer gets an empty string."""
    rows = []
    arms = set()
    for result in results:
        arms.add(result.arm)
        answer = prediction_text(result.answers.get(UNIT))
        rows.append(
            {
                "task_id": result.task_id,
                "agent_answer": answer or "",
                "reasoning_trace": _reasoning(result.run_dir),
            }
        )
    if len(arms) > 1:
        raise ValueError(f"results of several arms {sorted(arms)}: write one submission file per arm")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "".join(json.dumps(r) + "\n" for r in sorted(rows, key=lambda r: _order(r["task_id"]))),
        encoding="utf-8",
    )
    return out


def write_submissions(run_dir: str | Path) -> list[Path]:
    """`<run_dir>/dabstep_submission_<arm>.jsonl` for every arm of a finished DABstep run."""
    results = [r for r in read_results(run_dir) if r.bench == DabstepBench.name]
    if not results:
        raise FileNotFoundError(f"{run_dir}: no DABstep results; run `make eval BENCH=dabstep` first")
    arms = sorted({r.arm for r in results})
    out = Path(run_dir)
    return [
        write_submission([r for r in results if r.arm == arm], out / f"dabstep_submission_{arm}.jsonl")
        for arm in arms
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write DABstep leaderboard submissions from a run folder.")
    parser.add_argument("run_dir", help="a `make eval BENCH=dabstep` run folder (holds results/)")
    args = parser.parse_args(argv)
    for path in write_submissions(args.run_dir):
        print(path)


if __name__ == "__main__":
    main()
