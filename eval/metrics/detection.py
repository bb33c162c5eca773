"""The detection report of a run: did the manager catch the injected mistakes, and did it do harm?

    report = detection_report(results)          # results of one run (every variant, every arm)
    print(render_detection(report))             # `make eval` prints it under the accuracy/DCR table

Per manager arm (vs `baseline`) and per split (`dev` / `heldout` are shown apart):
* **recall per fault kind**: a fault is detected when an accepted REPAIR at or after its turn
  names one of its variables (what the faulty turn wrote, what a stale fault left unrecomputed,
  the fields it reported) and the clean variant of the same task did not issue that same repair
  (same turn, variables and check); after the faulty turn, `result` and `_scratch` names (rebound
  by every turn) do not count. Faults that could not take effect are listed, not counted.
* **lucky fixes**: the worker recomputed the faulty turn after a repair that is not a detection
  (a false alarm that happened to touch the turn); counted apart, never as recall.
* **false repairs per 100 clean turns**: accepted REPAIRs in the clean variants.
* **destructive actions on clean runs**: variable deletions (heavy repairs that removed
  something), rollbacks and abandoned states.
* **answers changed by false alarms** (the scripted worker's `p_flip` response), and the
  clean-run accuracy delta (harm) and the accuracy delta per fault kind.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from eval.metrics.detection_facts import ArmFacts, arm_facts
from eval.results import ArmResult
from stateguard.artifacts.mistakes import by_label
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.workers.faults import scratch_name

__all__ = [
    "DetectionReport",
    "KindRow",
    "SplitDetection",
    "detection_report",
    "detection_table",
    "render_detection",
    "scored_results",
]


class KindRow(BaseModel):
    kind: str
    faults: int = 0
    detected: int = 0
    lucky: int = 0
    runs: int = 0  # variants whose mistakes are all of this kind (accuracy columns)
    acc_baseline: float | None = None
    acc_arm: float | None = None

    @property
    def recall(self) -> float | None:
        return self.detected / self.faults if self.faults else None


class SplitDetection(BaseModel):
    arm: str
    split: str
    tasks: int
    kinds: list[KindRow] = Field(default_factory=list)
    clean_runs: int = 0
    clean_turns: int = 0
    false_repairs: int = 0
    destructive: int = 0
    deletions: int = 0
    rollbacks: int = 0
    abandons: int = 0
    flipped: int = Field(default=0, description="Clean-run answers the worker changed after a false alarm.")
    clean_degraded_turns: int = Field(
        default=0, description="Clean-run turns of this arm in which no worker code ran (not clean evidence)."
    )
    degraded_turns: int = Field(
        default=0, description="Turns of this arm, every variant, in which no worker code ran."
    )
    clean_acc_baseline: float | None = None
    clean_acc_arm: float | None = None
    not_applied: list[str] = Field(default_factory=list)
    failed_runs: int = 0
    stale_faulted: dict[str, int] = Field(
        default_factory=dict, description="Stale reads of the fault variants by the manager's decision."
    )
    stale_clean: dict[str, int] = Field(default_factory=dict, description="The same on clean runs.")
    committed_over_stale: int = Field(
        default=0,
        description="Fault-variant runs with a stale read committed without a finding or positive evidence "
        "of intent (decision `undecided`).",
    )

    @property
    def false_per_100(self) -> float | None:
        return 100 * self.false_repairs / self.clean_turns if self.clean_turns else None


class DetectionReport(BaseModel):
    sections: list[SplitDetection] = Field(default_factory=list)


def scored_results(results: list[ArmResult]) -> list[ArmResult]:
    """The runs the accuracy/DCR table covers: the fault variants when the run has both clean and
    faulted variants (the clean runs are reported by the detection section), else every run."""
    faulted = [r for r in results if r.variant != "clean"]
    return faulted if faulted and len(faulted) < len(results) else results


def _accuracy(results: list[ArmResult]) -> float | None:
    scored = [v for r in results for v in r.correct.values() if v is not None]
    return sum(scored) / len(scored) if scored else None


def _report_row(label: str) -> str:
    """The per-kind row a fault counts in: its kind's row of the mistakes table (one per kind)."""
    mistake = by_label(label)
    return mistake.group if mistake is not None else label


def _group(r: ArmResult) -> str:
    labels = {_report_row(_label(f)) for f in r.faults}
    return labels.pop() if len(labels) == 1 else r.variant


def _label(fault: dict[str, object]) -> str:
    kind = str(fault.get("kind"))
    return f"counterfactual:{fault.get('semantic') or 'other'}" if kind == "counterfactual" else kind


def _section(
    arm: str, split: str, results: list[ArmResult], facts: dict[tuple[str, str, str], ArmFacts]
) -> SplitDetection:
    runs = {(r.base_task or r.task_id, r.variant, r.arm): r for r in results}
    tasks = sorted({k[0] for k in runs})
    out = SplitDetection(arm=arm, split=split, tasks=len(tasks))
    kinds: dict[str, KindRow] = {}
    pairs: dict[str, list[tuple[ArmResult, ArmResult]]] = defaultdict(list)  # (baseline, arm) per row
    for (task, variant, a), r in sorted(runs.items()):
        if a != arm:
            continue
        base = runs.get((task, variant, "baseline"))
        if r.error is not None:
            out.failed_runs += 1
            continue
        f = facts[(task, variant, arm)]
        tally = out.stale_clean if variant == "clean" else out.stale_faulted
        for decision, n in f.stale.items():
            tally[decision] = tally.get(decision, 0) + n
        if variant != "clean" and f.stale.get("undecided"):
            out.committed_over_stale += 1
        out.degraded_turns += len(r.degraded_turns)
        if variant == "clean":
            out.clean_runs += 1
            out.clean_degraded_turns += len(r.degraded_turns)
            out.clean_turns += sum(v is not None for v in r.correct.values())
            out.false_repairs += len(f.repairs)
            out.deletions, out.rollbacks, out.abandons = (
                out.deletions + f.deletions,
                out.rollbacks + f.rollbacks,
                out.abandons + f.abandons,
            )
            out.flipped += len(f.flipped_turns)
            continue
        clean = facts.get((task, "clean", arm))
        clean_keys = {x.key() for x in clean.repairs} if clean else set()
        fresh = [x for x in f.repairs if x.key() not in clean_keys]
        out.not_applied += [f"{task}~{variant}: {s}" for s in f.skipped]
        for fault in f.faults:
            name = _report_row(fault.label)
            row = kinds.setdefault(name, KindRow(kind=name))
            row.faults += 1
            # At the faulty turn any of its variables counts; later, `result` (rebound every turn) does not.
            mine = {v for v in fault.variables if not scratch_name(v)}
            found = any(
                x.turn is not None
                and (set(x.variables) & (set(fault.variables) if x.turn == fault.turn else mine))
                and x.turn >= fault.turn
                for x in fresh
            )
            row.detected += found
            row.lucky += fault.recomputed and not found
        group = kinds.setdefault(_group(r), KindRow(kind=_group(r)))
        group.runs += 1
        if base is not None:
            pairs[group.kind].append((base, r))
    for name, row in kinds.items():
        row.acc_baseline = _accuracy([b for b, _ in pairs[name]])
        row.acc_arm = _accuracy([a for _, a in pairs[name]])
    out.kinds = sorted(kinds.values(), key=lambda k: (k.kind.startswith("counterfactual"), k.kind))
    clean_pairs = [(runs.get((t, "clean", "baseline")), runs.get((t, "clean", arm))) for t in tasks]
    out.clean_acc_baseline = _accuracy([b for b, a in clean_pairs if b is not None and a is not None])
    out.clean_acc_arm = _accuracy([a for b, a in clean_pairs if b is not None and a is not None])
    out.destructive = out.deletions + out.rollbacks + out.abandons
    return out


def detection_report(results: list[ArmResult]) -> DetectionReport | None:
    """The report for every manager arm that has a baseline beside it; None without fault variants
    or clean runs to compare (a run of one arm, or of benchmarks without variants)."""
    arms = sorted({r.arm for r in results} - {"baseline"})
    if not arms or not any(r.arm == "baseline" for r in results):
        return None
    facts = {
        (r.base_task or r.task_id, r.variant, r.arm): arm_facts(
            RolloutFolder(Path(r.run_dir)).trace, r.answers
        )
        for r in results
        if r.arm != "baseline"
    }
    splits = sorted({r.split for r in results}, key=lambda s: (s == "heldout", s))
    report = DetectionReport()
    for arm in arms:
        for split in splits:
            report.sections.append(_section(arm, split, [r for r in results if r.split == split], facts))
    return report


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _delta(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{100 * (b - a):+.1f}"


def detection_table(report: DetectionReport) -> tuple[list[str], list[list[str]]]:
    """One row per (arm, split, fault kind), for `make tables` (detection.md / detection.csv)."""
    head = [
        "arm",
        "split",
        "kind",
        "faults",
        "detected",
        "recall %",
        "lucky fixes",
        "runs",
        "acc baseline %",
        "acc arm %",
        "delta",
    ]
    rows = []
    for s in report.sections:
        for k in s.kinds:
            rows.append(
                [
                    s.arm,
                    s.split,
                    k.kind,
                    str(k.faults),
                    str(k.detected),
                    _pct(k.recall),
                    str(k.lucky),
                    str(k.runs),
                    _pct(k.acc_baseline),
                    _pct(k.acc_arm),
                    _delta(k.acc_baseline, k.acc_arm),
                ]
            )
        rows.append(
            [
                s.arm,
                s.split,
                "clean runs",
                "",
                "",
                "",
                "",
                str(s.clean_runs),
                _pct(s.clean_acc_baseline),
                _pct(s.clean_acc_arm),
                _delta(s.clean_acc_baseline, s.clean_acc_arm),
            ]
        )
        per100 = "—" if s.false_per_100 is None else f"{s.false_per_100:.1f}"
        rows.append([s.arm, s.split, "false repairs / 100 clean turns", per100, "", "", "", "", "", "", ""])
        rows.append(
            [
                s.arm,
                s.split,
                "destructive actions on clean runs",
                str(s.destructive),
                "",
                "",
                "",
                "",
                "",
                "",
                "",
            ]
        )
    return head, rows


def render_detection(report: DetectionReport | None) -> str:
    if report is None or not report.sections:
        return ""
    lines: list[str] = []
    for s in report.sections:
        lines += ["", f"detection: {s.arm} vs baseline, split {s.split} ({s.tasks} tasks)"]
        head = f"{'fault kind':<36}{'faults':>7}{'found':>7}{'recall':>8}{'lucky':>7}{'runs':>6}{'acc base':>10}{'acc arm':>9}{'delta':>7}"
        lines += [head, "-" * len(head)]
        for k in s.kinds:
            lines.append(
                f"{k.kind:<36}{k.faults or '':>7}{k.detected if k.faults else '':>7}{_pct(k.recall):>8}"
                f"{k.lucky if k.faults else '':>7}{k.runs or '':>6}{_pct(k.acc_baseline):>10}{_pct(k.acc_arm):>9}"
                f"{_delta(k.acc_baseline, k.acc_arm):>7}"
            )
        lines.append(
            f"{'clean runs':<36}{'':>7}{'':>7}{'':>8}{'':>7}{s.clean_runs or '':>6}{_pct(s.clean_acc_baseline):>10}"
            f"{_pct(s.clean_acc_arm):>9}{_delta(s.clean_acc_baseline, s.clean_acc_arm):>7}"
        )
        if s.clean_turns:
            lines.append(
                f"clean runs: {s.false_repairs} false repairs in {s.clean_turns} turns "
                f"({s.false_per_100:.1f} per 100); destructive actions {s.destructive} (deletions "
                f"{s.deletions}, rollbacks {s.rollbacks}, abandons {s.abandons}); answers changed "
                f"after a false alarm {s.flipped}"
            )
            if s.clean_degraded_turns:
                lines.append(
                    f"WARNING: {s.clean_degraded_turns} of those {s.clean_turns} clean turns ran no worker code "
                    "(failed model calls, refused replies, a spent time cap): they are not evidence of a clean run"
                )
        else:
            lines.append("clean runs: none in this run (false repairs and harm need the `clean` variant)")
        for label, tally in (("fault variants", s.stale_faulted), ("clean runs", s.stale_clean)):
            if tally:
                lines.append(
                    f"stale reads recorded on {label}: {sum(tally.values())} ("
                    + ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
                    + ")"
                )
        if s.stale_faulted or s.stale_clean:
            lines.append(
                f"runs with a stale read committed without a finding or evidence of intent: {s.committed_over_stale}"
            )
        if s.degraded_turns > s.clean_degraded_turns:
            lines.append(
                f"WARNING: {s.degraded_turns - s.clean_degraded_turns} turn(s) of the fault variants ran no "
                "worker code: the mistakes planted there never ran"
            )
        if s.not_applied:
            lines.append(
                f"faults that could not take effect ({len(s.not_applied)}): {'; '.join(s.not_applied[:4])}"
            )
        if s.failed_runs:
            lines.append(f"failed runs left out: {s.failed_runs}")
    lines.append(
        "found = a REPAIR at or after the faulty turn naming its variables that the clean run did not "
        "issue; lucky = the worker redid the turn after a repair that was not a detection"
    )
    return "\n".join(lines)
