"""Summaries and tables of an evaluation run (the printed table of `make eval`; `make tables`).

    summary = summarize(read_results(run_dir))       # per-arm accuracy, DCR, repairs, calls, time
    print(render_summary(summary))

Accuracy is micro over scored turns (excluded turns are neither right nor wrong, C.3); DCR and
its risk ratio pool the contaminated/clean counts over all tasks of the benchmark (C.4) and are
"—" when undefined; the gain of `stateguard` over `baseline` comes with the paired cluster
bootstrap over tasks (10,000 resamples by default, 95% CI, share of non-positive gains), for
micro accuracy and, next to it, for task-macro accuracy (each task weighs the same; C.3 reports
both to show a gain is not carried by a few long tasks).

Crashed rollouts (status `crashed`) are not scored: they are left out of accuracy, DCR and both
paired gains (a task crashed in either arm leaves the pair), and counted per arm with their
errors. Degraded rollouts are scored and counted per arm with their reasons. Neither is silent:
the printed table has a column for each and a line per arm naming the tasks.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, Field

from eval.metrics import accuracy, accuracy_by, dcr, pooled_dcr, unit_outcomes
from eval.metrics.bootstrap import (
    BootstrapResult,
    accuracy_stats,
    macro_accuracy_stats,
    paired_cluster_bootstrap,
    task_macro_accuracy,
)
from eval.metrics.detection import DetectionReport, detection_report, render_detection, scored_results
from eval.results import ArmResult
from stateguard.artifacts.run_folder import TRACE_FILE

__all__ = [
    "ArmSummary",
    "RunSummary",
    "fallback_warnings",
    "fmt",
    "macro_gain",
    "render_gain",
    "render_summary",
    "summarize",
]


class ArmSummary(BaseModel):
    arm: str
    tasks: int
    turns_scored: int
    turns_excluded: int
    accuracy: float | None
    accuracy_by_domain: dict[str, float | None] = Field(default_factory=dict)
    accuracy_by_level: dict[str, float | None] = Field(default_factory=dict)
    dcr: float | None
    risk_ratio: float | None
    contaminated: str = Field(description="wrong/contaminated and wrong/clean unit counts behind DCR")
    repairs: int
    manager_calls: int = Field(description="Model calls that got a real answer.")
    refused_calls: int = Field(
        default=0, description="Model requests the server refused (for size or otherwise)."
    )
    failed_calls: int = Field(
        default=0, description="Model calls that failed (transport, 5xx, malformed, deadline)."
    )
    unusable_outputs: int = Field(
        default=0, description="Answers with no parseable action or an action not offered."
    )
    llm_activations: int = Field(default=0, description="Activations in which the model was consulted.")
    fallbacks: int = Field(
        default=0, description="Activations that ended without the manager's own decision."
    )
    wall_s: float
    crashed_tasks: int = Field(default=0, description="rollouts that crashed: not scored, not in accuracy")
    crashed: dict[str, str] = Field(
        default_factory=dict, description="task id -> error of each crashed rollout"
    )
    degraded_tasks: int = Field(default=0, description="rollouts that ran impaired (scored)")
    degraded: dict[str, list[str]] = Field(default_factory=dict, description="task id -> why it was degraded")
    degraded_turns: int = Field(
        default=0, description="scored turns in which no worker code ran (failed model calls, refusals)"
    )


class RunSummary(BaseModel):
    bench: str
    arms: list[ArmSummary]
    gain: BootstrapResult | None = Field(
        default=None, description="stateguard - baseline accuracy, bootstrap"
    )
    macro_gain: BootstrapResult | None = Field(
        default=None, description="stateguard - baseline task-macro accuracy (C.3), same bootstrap"
    )
    wall_s: float = 0.0
    scope: str = Field(
        default="all runs", description="Which runs the arm table covers (fault variants / all)."
    )
    detection: DetectionReport | None = Field(
        default=None, description="Recall, false repairs, harm (detection.py)."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="what a resume found and did (invalid results "
        "files moved aside and rerun, a changed config)",
    )


def _arm(arm: str, everything: list[ArmResult]) -> ArmSummary:
    results = [r for r in everything if r.status != "crashed"]
    units = [u for r in results for u in unit_outcomes(r.task_id, r.correct, domain=r.domain, level=r.level)]
    acc = accuracy(units)
    pooled = pooled_dcr([dcr(r.correct, r.parents) for r in results])
    return ArmSummary(
        arm=arm,
        tasks=len(everything),
        turns_scored=acc.scored,
        turns_excluded=acc.excluded,
        accuracy=acc.value,
        accuracy_by_domain={k: v.value for k, v in accuracy_by(units, "domain").items()},
        accuracy_by_level={k: v.value for k, v in accuracy_by(units, "level").items()},
        dcr=pooled.dcr,
        risk_ratio=pooled.risk_ratio,
        contaminated=f"{pooled.contaminated_bad}/{pooled.contaminated_n} vs {pooled.clean_bad}/{pooled.clean_n}",
        repairs=sum(r.repairs for r in results),
        manager_calls=sum(r.manager_calls for r in results),
        refused_calls=_usage(results, "rejected_for_size", "rejected_requests"),
        failed_calls=_usage(results, "failed_requests"),
        unusable_outputs=_usage(results, "parse_failures", "illegal_actions"),
        llm_activations=_usage(results, "activations"),
        fallbacks=sum(r.manager_fallbacks for r in results),
        wall_s=round(sum(r.wall_s for r in everything), 2),
        crashed_tasks=len(everything) - len(results),
        crashed={r.task_id: str(r.error) for r in everything if r.status == "crashed"},
        degraded_tasks=sum(r.status == "degraded" for r in results),
        degraded={
            r.task_id: r.degraded_reasons or ["(no reason recorded)"]
            for r in results
            if r.status == "degraded"
        },
        degraded_turns=sum(len(r.degraded_turns) for r in results),
    )


def _usage(results: list[ArmResult], *keys: str) -> int:
    return int(sum(r.manager_usage.get(k, 0) for r in results for k in keys))


def summarize(
    results: list[ArmResult],
    *,
    seed: int = 0,
    resamples: int = 10_000,
    detection: bool = True,
) -> RunSummary:
    if not results:
        raise ValueError("no results to summarize")
    report = detection_report(results) if detection else None
    everything, results = results, scored_results(results)  # clean variants go to the detection report
    by_arm: dict[str, list[ArmResult]] = defaultdict(list)
    for r in results:
        by_arm[r.arm].append(r)
    order = sorted(by_arm, key=lambda a: (a != "baseline", a != "stateguard", a))
    summary = RunSummary(
        bench=results[0].bench,
        arms=[_arm(a, by_arm[a]) for a in order],
        detection=report,
        scope="all runs" if len(results) == len(everything) else "fault variants",
    )
    if "baseline" in by_arm and "stateguard" in by_arm:
        scored = {
            a: {r.task_id for r in by_arm[a] if r.status != "crashed"} for a in ("baseline", "stateguard")
        }
        shared = scored["baseline"] & scored["stateguard"]
        if shared:
            stats = {
                a: accuracy_stats(
                    u
                    for r in sorted(by_arm[a], key=lambda r: r.task_id)
                    if r.task_id in shared
                    for u in unit_outcomes(r.task_id, r.correct)
                )
                for a in ("baseline", "stateguard")
            }
            summary.gain = paired_cluster_bootstrap(
                stats["baseline"], stats["stateguard"], n_resamples=resamples, seed=seed
            )
            summary.macro_gain = macro_gain(
                by_arm["baseline"], by_arm["stateguard"], seed=seed, resamples=resamples
            )
    return summary


def macro_gain(
    baseline: list[ArmResult], treatment: list[ArmResult], *, seed: int = 0, resamples: int = 10_000
) -> BootstrapResult | None:
    """C.3's task-macro gain: mean per-task accuracy, treatment minus baseline, over the tasks both
    arms ran and neither crashed, with the same paired cluster bootstrap as the micro gain."""
    shared = {r.task_id for r in baseline if r.status != "crashed"} & {
        r.task_id for r in treatment if r.status != "crashed"
    }
    if not shared:
        return None
    stats = [
        macro_accuracy_stats(
            u
            for r in sorted(arm, key=lambda r: r.task_id)
            if r.task_id in shared
            for u in unit_outcomes(r.task_id, r.correct)
        )
        for arm in (baseline, treatment)
    ]
    return paired_cluster_bootstrap(stats[0], stats[1], task_macro_accuracy, n_resamples=resamples, seed=seed)


def render_gain(name: str, g: BootstrapResult) -> str:
    """One line: the observed gain in points, its 95% CI and the share of non-positive resamples."""
    return (
        f"{name}: {100 * g.observed_gain:+.1f} points, 95% CI [{fmt(g.ci_low)}, {fmt(g.ci_high)}], "
        f"share of resamples <= 0: {fmt(g.share_nonpositive)}% ({g.n_resamples} resamples over {g.n_tasks} tasks)"
        if g.observed_gain is not None
        else f"{name}: —"
    )


def fmt(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "—"
    return f"{100 * value:.1f}" if percent else f"{value:.2f}"


def _clip(text: str, n: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def render_summary(summary: RunSummary) -> str:
    head = (
        f"{'arm':<12}{'tasks':>6}{'turns':>7}{'acc %':>8}{'DCR %':>8}{'RR':>7}{'repairs':>9}{'mgr calls':>11}"
        f"{'degraded':>10}{'crashed':>9}{'time s':>9}"
    )
    model = any(a.refused_calls or a.failed_calls or a.llm_activations for a in summary.arms)
    if model:  # the model-call columns, only where a model manager ran
        head = head.replace(
            f"{'degraded':>10}",
            f"{'refused':>9}{'failed':>8}{'unusable':>10}{'fallbacks':>11}{'degraded':>10}",
        )
    scope = (
        ""
        if summary.scope == "all runs"
        else f" (accuracy and DCR over the {summary.scope}; clean runs below)"
    )
    lines = [f"benchmark: {summary.bench}{scope}", "", head, "-" * len(head)]
    for a in summary.arms:
        calls = (
            f"{a.refused_calls:>9}{a.failed_calls:>8}{a.unusable_outputs:>10}{a.fallbacks:>11}"
            if model
            else ""
        )
        lines.append(
            f"{a.arm:<12}{a.tasks:>6}{a.turns_scored:>7}{fmt(a.accuracy):>8}{fmt(a.dcr):>8}"
            f"{fmt(a.risk_ratio, False):>7}{a.repairs:>9}{a.manager_calls:>11}{calls}{a.degraded_tasks:>10}"
            f"{a.crashed_tasks:>9}{a.wall_s:>9.1f}"
        )
    g = summary.gain
    if g is not None and g.observed_gain is not None:
        lines += ["", render_gain("accuracy gain (stateguard - baseline)", g)]
        if summary.macro_gain is not None:
            lines.append(render_gain("task-macro gain (stateguard - baseline)", summary.macro_gain))
    notes = []
    for a in summary.arms:
        if a.crashed_tasks:
            notes.append(
                f"CRASHED {a.arm}: {a.crashed_tasks} task(s) not scored (left out of accuracy and DCR; "
                "`resume=true` reruns them):"
            )
            notes += [f"  {task}: {_clip(error)}" for task, error in sorted(a.crashed.items())]
        if a.degraded_turns:
            notes.append(
                f"WARNING: {a.arm}: {a.degraded_turns} of {a.turns_scored} scored turn(s) ran no worker code "
                "(failed model calls, refused replies or a spent time cap): their answers rest on nothing executed"
            )
        if a.degraded_tasks:
            notes.append(f"DEGRADED {a.arm}: {a.degraded_tasks} task(s) ran impaired (scored as they ended):")
            notes += [f"  {task}: {_clip('; '.join(why))}" for task, why in sorted(a.degraded.items())]
    notes += fallback_warnings(summary)
    notes += [f"NOTE: {n}" for n in summary.notes]
    if notes:
        lines += ["", *notes]
    lines.append(
        "DCR: error rate of turns with a wrong parent minus that of turns whose parents are all right "
        "(pooled over tasks; — = undefined)"
    )
    if model:
        lines.append(
            "mgr calls: real model answers only; refused / failed: requests without one; unusable: answers "
            "with no parseable, offered action; fallbacks: activations ended without the manager's decision"
        )
    detection = render_detection(summary.detection)
    return "\n".join(lines) + (f"\n{detection}" if detection else "")


def fallback_warnings(summary: RunSummary) -> list[str]:
    """One WARNING line per arm in which any manager activation ended in a fallback."""
    return [
        f"WARNING: {a.arm}: {a.fallbacks} manager activation(s) ended in a fallback, not a decision of the "
        f"manager ({a.refused_calls} refused and {a.failed_calls} failed model requests, {a.unusable_outputs} "
        f"unusable answers); see the `manager_fallback` events in tasks/<task>/<arm>/{TRACE_FILE}"
        for a in summary.arms
        if a.fallbacks
    ]
