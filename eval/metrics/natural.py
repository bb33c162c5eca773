"""The natural-mistake report of a run: the baseline's own wrong turns, and what the manager did.

Runs with a real model as the worker (issue 30) make their own mistakes, not injected ones, so
the detection report (which counts declared faults) cannot describe them. This report reads a
saved run folder of `python -m eval.runner` and gives:

* every turn the baseline got wrong, classified by what its trace shows:
  - `exec_error`: the turn's last code block raised;
  - `missing_answer`: no answer (no block raised last, or no code ran at all);
  - `stale`: a block of the turn read a value computed before one of its inputs was redefined
    (the workspace's run-time dataflow, `meta.stale_reads`);
  - `format_precision`: the answer is right within 1% relative (rounding, number written as
    text, the wrong precision, the requested values given as a sentence instead of fields), but
    not as the judge requires; this needs the expected answers;
  - `wrong_value`: anything else;
* which of those turns the manager arm flagged (an accepted REPAIR for that turn of that task);
* false repairs: accepted REPAIRs for turns that the baseline got right. The same greedy model
  gave the manager arm the same answer up to that point, so the baseline's verdict stands in for
  the answer the manager saw. This is a proxy when sampling is not greedy;
* accuracy and DCR per arm, each with a 95% cluster-bootstrap interval over tasks;
* model time per turn: the worker's and the manager's `llm_call` latencies, summed over the run
  and divided by the scored turns;
* how the model answered repair hints (`hint_responses`): for every accepted REPAIR in the
  manager arm, the model's answer to that turn just before the hint and its final answer, both
  judged. A hint on a wrong answer that ends right is a fix; a hint on a right answer that ends
  wrong is a break. Whether the hint named the actual mistake is not known here, so
  P(fix | hint on a wrong answer) is a lower bound of P(fix | a hint that names the mistake).

    report = natural_mistake_report("runs/eval/2026...", expected={"task__id": {1: {...}}})
    print(render_natural(report))
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from eval.metrics.bootstrap import dcr_metric, micro_accuracy
from eval.metrics.dcr import dcr
from eval.metrics.detection_facts import arm_facts
from eval.results import ArmResult, read_results
from eval.scorers.fields import judge_fields
from stateguard.actions import RepairArgs
from stateguard.answers import parse_answer
from stateguard.artifacts.events import LlmCallEvent, WorkerStepData, WorkerStepEvent
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.trace import read_trace
from stateguard.trace_payloads import action_args
from stateguard.workers.answer_text import structured_answer

__all__ = [
    "KINDS",
    "ArmNatural",
    "NaturalReport",
    "TurnMistake",
    "HintResponse",
    "classify",
    "hint_responses",
    "natural_mistake_report",
    "render_natural",
]

KINDS = ("exec_error", "wrong_value", "format_precision", "stale", "missing_answer")
NEAR = 0.01  # relative distance under which a wrong number counts as a format or precision slip


class TurnMistake(BaseModel):
    task_id: str
    turn: int
    kind: str = Field(description="One of KINDS.")
    evidence: str = ""
    answer: Any = None
    flagged: bool = Field(default=False, description="The manager arm issued a REPAIR for this turn.")


class ArmNatural(BaseModel):
    arm: str
    tasks: int
    turns: int = Field(description="Scored turns.")
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None = None
    dcr: float | None = None
    dcr_ci: tuple[float, float] | None = None
    worker_model_s: float = 0.0
    manager_model_s: float = 0.0
    degraded_turns: int = 0

    @property
    def model_s_per_turn(self) -> float | None:
        return (self.worker_model_s + self.manager_model_s) / self.turns if self.turns else None

    @property
    def model_s_per_worked_turn(self) -> float | None:
        """Model time over the turns on which the worker ran code (a capped turn costs nothing)."""
        worked = self.turns - self.degraded_turns
        return (self.worker_model_s + self.manager_model_s) / worked if worked > 0 else None


class HintResponse(BaseModel):
    """One accepted repair hint in the manager arm and what the model's answer did after it."""

    task_id: str
    turn: int
    reason: str = ""
    before: Any = None
    after: Any = None
    before_right: bool | None = Field(default=None, description="None: the expected answer is unknown.")
    after_right: bool | None = None


class NaturalReport(BaseModel):
    manager_arm: str | None
    mistakes: list[TurnMistake] = Field(default_factory=list, description="The baseline's wrong turns.")
    right_turns: int = Field(default=0, description="Turns the baseline got right.")
    false_repairs: int = Field(default=0, description="Manager-arm REPAIRs for turns the baseline got right.")
    arms: list[ArmNatural] = Field(default_factory=list)
    hints: list[HintResponse] = Field(
        default_factory=list, description="Accepted repair hints of the manager arm."
    )
    resamples: int = 0

    def hint_rates(self) -> dict[str, tuple[int, int]]:
        """fix: (answers fixed, hints on a wrong answer); break: (answers broken, hints on a right one)."""
        wrong = [h for h in self.hints if h.before_right is False]
        right = [h for h in self.hints if h.before_right is True]
        return {
            "fix": (sum(h.after_right is True for h in wrong), len(wrong)),
            "break": (sum(h.after_right is False for h in right), len(right)),
        }

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """kind -> (baseline mistakes, of them flagged by the manager)."""
        counts = Counter(m.kind for m in self.mistakes)
        flagged = Counter(m.kind for m in self.mistakes if m.flagged)
        return {k: (counts[k], flagged[k]) for k in KINDS}


def _executed(steps: list[WorkerStepData]) -> list[WorkerStepData]:
    return [s for s in steps if s.action.strip() and getattr(s.meta, "executed", True) is not False]


def classify(answer: Any, expected: Any, steps: list[WorkerStepData]) -> tuple[str, str]:
    """(kind, evidence) for a wrong turn from its answer, the expected one (None: unknown) and
    the worker steps of that turn."""
    ran = _executed(steps)
    last = ran[-1] if ran else None
    if answer is None:
        if last is not None and not last.success:
            return "exec_error", f"no answer; the last block raised {last.error}"
        return "missing_answer", "no answer" + ("" if ran else "; no code ran")
    stale = sorted({name for s in ran for name in s.meta.stale_reads})
    if stale:
        return "stale", f"read stale values: {', '.join(stale)}"
    if last is not None and not last.success:
        return "exec_error", f"the last block raised {last.error}"
    if expected is not None and _near(expected, answer):
        return "format_precision", f"right within {NEAR:.0%} but not as required"
    return "wrong_value", ""


def _in_text(expected: Any, text: str) -> bool:
    """Every requested value of `expected` appears in `text` (numbers within NEAR, texts in any case)."""
    if isinstance(expected, dict):
        return all(_in_text(v, text) for k, v in expected.items() if k != "answer_type")
    if isinstance(expected, list | tuple):
        return all(_in_text(v, text) for v in expected)
    if isinstance(expected, bool) or expected is None:
        return True  # a flag is read from the values, not printed as such
    if isinstance(expected, int | float):
        shown = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]
        return any(abs(x - expected) <= NEAR * max(abs(expected), 1e-9) for x in shown)
    return str(expected).lower() in text.lower()


def _near(expected: Any, answer: Any) -> bool:
    if isinstance(answer, str) and isinstance(expected, dict):
        return _in_text(expected, answer)  # the right values, written as text instead of fields
    if isinstance(expected, dict):
        return judge_fields({**expected, "rel_tol": NEAR}, answer)
    return judge_fields({"value": expected, "rel_tol": NEAR}, {"value": answer})


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.S)


def _reply_answer(text: str) -> Any:
    """The answer a worker's final reply gave (inside <answer> tags when present), read as the LLM
    worker reads it: a tagged answer's labelled lines are fields (`structured_answer`)."""
    tagged = _ANSWER_TAG.search(text)
    body = tagged.group(1) if tagged else text
    parsed = structured_answer(body) if tagged else parse_answer(body)
    return parsed if parsed is not None else (body.strip() or None)


def hint_responses(
    trace: Path, task_id: str, final: Mapping[int, Any], expected: Mapping[int, Any] | None = None
) -> list[HintResponse]:
    """Every accepted REPAIR of one manager-arm rollout, with the answer of the turn under review
    before the hint (the latest final reply of that turn) and the final one (`final`). A hint
    given before the turn had any answer counts as a hint on a wrong answer."""
    latest: dict[int, Any] = {}
    current: int | None = None
    out: list[HintResponse] = []
    for event in read_trace(trace) if trace.is_file() else []:
        if event.kind == "turn_start":
            current = event.data.turn_id
        elif isinstance(event, WorkerStepEvent) and event.data.turn is not None and event.data.meta.final:
            latest[event.data.turn] = _reply_answer(event.data.output)
        elif event.kind == "action" and event.data.name == "REPAIR" and event.data.accepted and current:
            if any(h.turn == current for h in out):
                continue  # the first hint on a turn is the one whose effect is measured
            args = action_args(event.data, RepairArgs)
            reason = args.error_hint.faulty_reasoning if args else ""
            out.append(
                HintResponse(task_id=task_id, turn=current, reason=reason[:300], before=latest.get(current))
            )
    truth = expected or {}
    for h in out:
        h.after = final.get(h.turn)
        if h.turn in truth:
            h.before_right = judge_fields(truth[h.turn], h.before)
            h.after_right = judge_fields(truth[h.turn], h.after)
    return out


def _steps_by_turn(trace: Path) -> dict[int, list[WorkerStepData]]:
    out: dict[int, list[WorkerStepData]] = defaultdict(list)
    for event in read_trace(trace) if trace.is_file() else []:
        if isinstance(event, WorkerStepEvent) and event.data.turn is not None:
            out[event.data.turn].append(event.data)
    return out


def _model_seconds(folder: RolloutFolder) -> tuple[float, float]:
    """(worker, manager) model seconds of one rollout, from its llm_calls.jsonl."""
    worker = manager = 0.0
    path = folder.llm_calls
    for event in read_trace(path) if path.is_file() else []:
        if isinstance(event, LlmCallEvent):
            if event.data.role == "worker":
                worker += event.data.latency_s
            else:
                manager += event.data.latency_s
    return worker, manager


def _interval(
    rows: Sequence[Sequence[float]], metric: Any, resamples: int, seed: int
) -> tuple[float, float] | None:
    """95% percentile interval of metric(totals of resampled tasks); None when never defined."""
    if not rows or resamples < 1:
        return None
    data = np.asarray(rows, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, len(rows), size=(resamples, len(rows)))
    values = metric(data[idx].sum(axis=1))
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _arm(arm: str, results: list[ArmResult], resamples: int, seed: int) -> ArmNatural:
    acc_rows = [
        [sum(v is True for v in r.correct.values()), sum(v is not None for v in r.correct.values())]
        for r in results
    ]
    dcrs = [dcr(r.correct, r.parents) for r in results]
    dcr_rows = [[d.contaminated_bad, d.contaminated_n, d.clean_bad, d.clean_n] for d in dcrs]
    totals = np.asarray(acc_rows, dtype=np.float64).sum(axis=0, keepdims=True) if acc_rows else None
    dcr_totals = np.asarray(dcr_rows, dtype=np.float64).sum(axis=0, keepdims=True) if dcr_rows else None
    accuracy = float(micro_accuracy(totals)[0]) if totals is not None else float("nan")
    pooled = float(dcr_metric(dcr_totals)[0]) if dcr_totals is not None else float("nan")
    seconds = [_model_seconds(RolloutFolder(Path(r.run_dir))) for r in results]
    return ArmNatural(
        arm=arm,
        tasks=len(results),
        turns=int(sum(row[1] for row in acc_rows)),
        accuracy=accuracy if np.isfinite(accuracy) else None,
        accuracy_ci=_interval(acc_rows, micro_accuracy, resamples, seed),
        dcr=pooled if np.isfinite(pooled) else None,
        dcr_ci=_interval(dcr_rows, dcr_metric, resamples, seed),
        worker_model_s=round(sum(w for w, _ in seconds), 2),
        manager_model_s=round(sum(m for _, m in seconds), 2),
        degraded_turns=sum(len(r.degraded_turns) for r in results),
    )


def natural_mistake_report(
    run_dir: str | Path,
    expected: Mapping[str, Mapping[int, Any]] | None = None,
    *,
    manager_arm: str = "stateguard",
    resamples: int = 2000,
    seed: int = 0,
) -> NaturalReport:
    """The report of a saved run folder. `expected` (task id -> turn -> expected answer) lets a
    near miss count as `format_precision`; without it such turns are `wrong_value`. Crashed
    rollouts are left out (they are not scored)."""
    results = [r for r in read_results(run_dir) if r.status != "crashed"]
    by_arm: dict[str, list[ArmResult]] = defaultdict(list)
    for r in results:
        by_arm[r.arm].append(r)
    managed = {r.task_id: r for r in by_arm.get(manager_arm, [])}
    report = NaturalReport(manager_arm=manager_arm if managed else None, resamples=resamples)
    for base in by_arm.get("baseline", []):
        steps = _steps_by_turn(RolloutFolder(Path(base.run_dir)).trace)
        other = managed.get(base.task_id)
        repaired: set[int] = set()
        if other is not None:
            trace = RolloutFolder(Path(other.run_dir)).trace
            facts = arm_facts(trace, other.answers)
            repaired = {x.turn for x in facts.repairs if x.turn is not None}
            report.hints += hint_responses(
                trace, other.task_id, other.answers, (expected or {}).get(other.task_id)
            )
        for turn, ok in sorted(base.correct.items()):
            if ok is None:
                continue
            if ok:
                report.right_turns += 1
                report.false_repairs += turn in repaired
                continue
            answer = base.answers.get(turn)
            truth = (expected or {}).get(base.task_id, {}).get(turn)
            kind, evidence = classify(answer, truth, steps.get(turn, []))
            report.mistakes.append(
                TurnMistake(
                    task_id=base.task_id,
                    turn=turn,
                    kind=kind,
                    evidence=evidence,
                    answer=answer,
                    flagged=turn in repaired,
                )
            )
    report.arms = [_arm(arm, rs, resamples, seed) for arm, rs in sorted(by_arm.items())]
    return report


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def render_natural(report: NaturalReport) -> str:
    lines = ["natural mistakes of the baseline (its own wrong turns, classified from its trace)", ""]
    head = f"{'kind':<18}{'turns':>7}{'flagged':>9}"
    lines += [head, "-" * len(head)]
    for kind, (n, flagged) in report.by_kind().items():
        lines.append(f"{kind:<18}{n:>7}{flagged if report.manager_arm else '—':>9}")
    lines.append(
        f"{'all wrong turns':<18}{len(report.mistakes):>7}{sum(m.flagged for m in report.mistakes):>9}"
    )
    unworked = sum(m.kind == "missing_answer" and m.evidence.endswith("no code ran") for m in report.mistakes)
    if unworked:
        lines.append(
            f"  of the missing answers, {unworked} ran no code at all (the time cap was spent, or every "
            "reply was refused): a cost of the run, not a mistake in code"
        )
    per100 = 100 * report.false_repairs / report.right_turns if report.right_turns else None
    lines.append(
        f"false repairs on turns the baseline got right: {report.false_repairs} in {report.right_turns}"
        + ("" if per100 is None else f" ({per100:.1f} per 100)")
    )
    lines += [
        "",
        f"{'arm':<14}{'tasks':>6}{'turns':>7}{'acc %':>8}{'95% CI':>15}{'DCR %':>8}{'95% CI':>16}"
        f"{'model s/turn':>14}{'s/worked turn':>15}{'degraded':>10}",
    ]
    for a in report.arms:
        per_turn, worked = a.model_s_per_turn, a.model_s_per_worked_turn
        lines.append(
            f"{a.arm:<14}{a.tasks:>6}{a.turns:>7}{_pct(a.accuracy):>8}{_ci(a.accuracy_ci):>15}{_pct(a.dcr):>8}"
            f"{_ci(a.dcr_ci):>16}{'—' if per_turn is None else f'{per_turn:.1f}':>14}"
            f"{'—' if worked is None else f'{worked:.1f}':>15}{a.degraded_turns:>10}"
        )
    lines.append(f"(cluster bootstrap over tasks, {report.resamples} resamples)")
    if report.manager_arm:
        rates = report.hint_rates()
        lines += ["", f"repair hints in the {report.manager_arm} arm: {len(report.hints)}"]
        for key, words in (
            ("fix", "P(fix | hint on a wrong answer)"),
            ("break", "P(break | hint on a right answer)"),
        ):
            k, n = rates[key]
            lines.append(
                f"  {words}: {k}/{n}"
                + (f" = {k / n:.2f}, 95% CI {_wilson(k, n)}" if n else " (no such hint)")
            )
    return "\n".join(lines)


def _wilson(k: int, n: int, z: float = 1.96) -> str:
    """The Wilson score interval of k successes in n: honest for the small samples these are."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"[{max(0.0, centre - half):.2f}, {min(1.0, centre + half):.2f}]"


def expected_answers(run_dir: str | Path) -> dict[str, dict[int, Any]]:
    """Task id -> turn -> expected answer, from the benchmark named in the run's config.yaml."""
    from omegaconf import OmegaConf

    from eval.benchmarks.registry import get_benchmark
    from stateguard.artifacts.run_folder import RunFolder

    cfg = OmegaConf.load(RunFolder(Path(run_dir)).config)
    tasks = get_benchmark(str(cfg.bench.name)).load(cfg.bench)
    return {t.task_id: {turn.turn_id: turn.answer for turn in t.task.turns} for t in tasks}


def main(argv: list[str] | None = None) -> int:
    """`python -m eval.metrics.natural RUN_DIR [--json FILE]`: print the report of a saved run."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m eval.metrics.natural", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run_dir", type=Path, help="a run folder of `python -m eval.runner`")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    report = natural_mistake_report(args.run_dir, expected_answers(args.run_dir), resamples=args.resamples)
    print(render_natural(report))
    if args.json is not None:
        args.json.write_text(report.model_dump_json(indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
