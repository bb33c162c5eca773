"""What `worker_llm.answer_from_output` does, or would have done, to a real-model run's turns.

The LLM worker may take a successful cell's output as the turn's answer when that output is one
JSON object (`stateguard.workers.output_answer`). Before that is on by default we check on saved
runs that it would not take an intermediate print for the answer. For every turn of every rollout
(both arms) this reads the trace and finds the first successful cell the rule accepts:

* in a run made with the option on, that cell ended the turn (`taken`), and its answer is judged;
* in a run made without it, the turn would have ended there: its object is judged and compared
  with the turn's recorded verdict (baseline arm only: in the manager arm a hint may reopen the
  turn after its first answer, with or without the option), giving the turns the option would have changed, right ->
  wrong (an intermediate print taken for the answer) and wrong -> right (an answer the turn
  computed but did not give, e.g. cut by its time share).

Later turns could differ too (the history would be shorter), which a saved run cannot show, so
this counts turn by turn. `--labelled` also reads cells that print `label: value` lines
(`answer_text.structured_answer`) as if printed as JSON: how risky the rule would be for a model
that printed every result it computed as an object, as the system prompt now invites.

    python -m eval.metrics.natural_output runs/nat3a runs/nat3b [--labelled]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from eval.results import read_results
from eval.scorers.fields import judge_fields
from stateguard.artifacts.events import WorkerStepEvent
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.trace import read_trace
from stateguard.workers.answer_text import structured_answer
from stateguard.workers.output_answer import json_object_output

__all__ = ["OutputTurn", "OutputEffect", "output_answer_effect", "render_effect"]


class OutputTurn(BaseModel):
    run: str
    task_id: str
    arm: str
    turn: int
    taken: bool = Field(description="The run had the option on and this cell ended the turn.")
    answer: Any = None
    right: bool | None = Field(default=None, description="The object judged; None: no expected answer.")
    recorded: bool | None = Field(default=None, description="The turn's verdict in the run.")


class OutputEffect(BaseModel):
    runs: list[str]
    labelled: bool = False
    successful_cells: int = 0
    turns: list[OutputTurn] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        # the baseline arm only: there the first answer is the turn's last; in the manager arm a
        # repair hint may reopen the turn after it (the option ends the answer, not the review)
        would = [t for t in self.turns if not t.taken and t.arm == "baseline"]
        return {
            "taken": sum(t.taken for t in self.turns),
            "taken_right": sum(bool(t.taken and t.right) for t in self.turns),
            "would_fire": len(would),
            "right_to_wrong": sum(bool(t.recorded and t.right is False) for t in would),
            "wrong_to_right": sum(bool(t.recorded is False and t.right) for t in would),
            "unchanged": sum(t.recorded == t.right for t in would),
        }


def _candidate(output: str, labelled: bool) -> Any:
    found = json_object_output(output, None)
    if found is None and labelled:
        read = structured_answer(output.strip())
        found = read if isinstance(read, dict) and read and "answer" not in read else None
    return found


def output_answer_effect(
    runs: Sequence[str | Path], expected: Mapping[str, Mapping[int, Any]], *, labelled: bool = False
) -> OutputEffect:
    """The turns of `runs` where the rule fires (see the module). `expected`: task id -> turn ->
    expected answer (`eval.metrics.natural.expected_answers`)."""
    effect = OutputEffect(runs=[str(r) for r in runs], labelled=labelled)
    for run in runs:
        for result in read_results(run):
            if result.status == "crashed":
                continue
            trace = RolloutFolder(Path(result.run_dir)).trace
            seen: set[int] = set()
            for event in read_trace(trace) if trace.is_file() else []:
                if not isinstance(event, WorkerStepEvent) or event.data.turn is None:
                    continue
                step, turn = event.data, event.data.turn
                if not step.success or not step.action:
                    continue
                effect.successful_cells += 1
                if turn in seen:
                    continue
                taken = bool(getattr(step.meta, "answer_from_output", False))
                answer = (
                    _candidate(step.output or "", labelled)
                    if not taken
                    else json_object_output(step.output or "", None)
                )
                if answer is None:
                    continue
                seen.add(turn)
                truth = expected.get(result.task_id, {}).get(turn)
                effect.turns.append(
                    OutputTurn(
                        run=str(run),
                        task_id=result.task_id,
                        arm=result.arm,
                        turn=turn,
                        taken=taken,
                        answer=answer,
                        right=None if truth is None else judge_fields(truth, answer),
                        recorded=result.correct.get(turn),
                    )
                )
    return effect


def render_effect(effect: OutputEffect) -> str:
    c = effect.counts()
    rule = "JSON object or labelled lines" if effect.labelled else "one JSON object"
    lines = [
        f"answer_from_output on {', '.join(effect.runs)} (rule: {rule}; {effect.successful_cells} successful cells)",
        f"  taken by the worker (option on): {c['taken']} turns, {c['taken_right']} right",
        f"  would have fired (option off, baseline arm): {c['would_fire']} turns; right -> wrong {c['right_to_wrong']}, "
        f"wrong -> right {c['wrong_to_right']}, unchanged {c['unchanged']}",
    ]
    for t in effect.turns:
        verdict = "?" if t.right is None else ("right" if t.right else "wrong")
        was = "" if t.taken else f" (recorded {'right' if t.recorded else 'wrong'})"
        lines.append(
            f"  {t.run} {t.task_id} {t.arm} turn {t.turn}: {'taken' if t.taken else 'would take'} "
            f"{str(t.answer)[:120]} -> {verdict}{was}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`python -m eval.metrics.natural_output RUN_DIR... [--labelled] [--json FILE]`."""
    import argparse

    from eval.metrics.natural import expected_answers

    parser = argparse.ArgumentParser(
        prog="python -m eval.metrics.natural_output", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run_dirs", type=Path, nargs="+", help="run folders of `python -m eval.runner`")
    parser.add_argument("--labelled", action="store_true", help="also read `label: value` prints")
    parser.add_argument("--json", type=Path, default=None, help="also write the turns as JSON here")
    args = parser.parse_args(argv)
    from omegaconf import OmegaConf

    from stateguard.artifacts.run_folder import RunFolder

    expected: dict[str, dict[int, Any]] = {}
    loaded: set[str] = set()  # each benchmark config once (loading the dev set takes a while)
    for run in args.run_dirs:
        bench = OmegaConf.to_yaml(OmegaConf.load(RunFolder(Path(run)).config).bench)
        if bench not in loaded:
            loaded.add(bench)
            expected.update(expected_answers(run))
    effect = output_answer_effect(args.run_dirs, expected, labelled=args.labelled)
    print(render_effect(effect))
    if args.json is not None:
        args.json.write_text(effect.model_dump_json(indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
