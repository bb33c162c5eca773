"""The run overview page (`index.html`): benchmarks x arms, then one row per task and arm.

    html = overview_page(run, pages={"task_a": "tasks/task_a.html"}, resamples=2000)

The first table is `eval.report.summarize` over the run's results, per benchmark (accuracy,
DCR, repairs, manager calls, wall time), so it shows the numbers `make eval` printed. The
second lists every task, each linking to its page, with a strip of per-turn verdicts per arm;
turns where an arm disagrees with the reference arm (baseline, or a synthesis run's clean
variant) are highlighted in every row of the task.
"""

from __future__ import annotations

from collections import defaultdict

from eval.report import RunSummary, fmt, summarize
from eval.results import ArmResult
from eval.viewer.html import Markup, el, join, page
from eval.viewer.model import RunSource, TaskSource

__all__ = ["diverging_turns", "overview_page", "turn_cells", "verdict_class"]


def verdict_class(value: bool | None, present: bool = True) -> str:
    if not present:
        return "missing"
    return "excluded" if value is None else "ok" if value else "wrong"


def diverging_turns(task: TaskSource, reference: str) -> set[int]:
    """Turns where some arm's verdict differs from the reference arm's (or, with none, from each other)."""
    ref = next((a for a in task.arms if a.name == reference), None)
    out = set()
    for turn in task.turns:
        seen = {a.result.correct.get(turn) for a in task.arms}
        if ref is not None:
            seen = {v for v in seen if v != ref.result.correct.get(turn)}
            if seen:
                out.add(turn)
        elif len(seen) > 1:
            out.add(turn)
    return out


def turn_cells(task: TaskSource, arm_index: int, diverge: set[int], href: str | None) -> Markup:
    arm = task.arms[arm_index]
    cells = []
    for turn in task.turns:
        value, present = arm.result.correct.get(turn), turn in arm.result.correct
        cls = f"t {verdict_class(value, present)}" + (" diverge" if turn in diverge else "")
        title = f"turn {turn}: {verdict_class(value, present)}" + (
            " (arms diverge)" if turn in diverge else ""
        )
        link = f"{href}#a{arm_index}-turn-{turn}" if href else None
        cells.append(el("a", {"class": cls, "href": link, "title": title, "data-turn": turn}, ""))
    return el("span", {"class": "strip"}, cells)


def _summaries(run: RunSource, resamples: int) -> list[RunSummary]:
    by_bench: dict[str, list[ArmResult]] = defaultdict(list)
    for r in run.results:
        by_bench[r.bench].append(r)
    out = []
    for bench, results in sorted(by_bench.items()):
        try:
            summary = summarize(results, resamples=resamples)
        except ValueError:  # no turn scored anywhere (plain rollout folders): the counters, no bootstrap
            names = dict.fromkeys(r.arm for r in results)
            arms = [summarize([r for r in results if r.arm == a], resamples=resamples).arms[0] for a in names]
            summary = RunSummary(bench=bench, arms=arms)
        if run.summary is not None and run.summary.bench == bench and len(by_bench) == 1:
            summary.gain, summary.wall_s = run.summary.gain, run.summary.wall_s  # the printed bootstrap
        out.append(summary)
    return out


def _num(field: str, value: float | int | None, shown: str) -> Markup:
    return el(
        "td", {"class": "num", "data-field": field, "data-value": "" if value is None else value}, shown
    )


def _bench_table(summaries: list[RunSummary]) -> Markup:
    head = [
        "benchmark",
        "arm",
        "tasks",
        "turns scored",
        "accuracy %",
        "DCR %",
        "risk ratio",
        "repairs",
        "manager calls",
        "wall time s",
        "degraded",
        "crashed",
    ]
    rows = []
    for s in summaries:
        for i, a in enumerate(s.arms):
            rows.append(
                el(
                    "tr",
                    {"data-bench": s.bench, "data-arm": a.arm},
                    el("th", {"rowspan": len(s.arms)}, s.bench) if i == 0 else None,
                    el("th", None, a.arm),
                    _num("tasks", a.tasks, str(a.tasks)),
                    _num("turns_scored", a.turns_scored, str(a.turns_scored)),
                    _num("accuracy", a.accuracy, fmt(a.accuracy)),
                    _num("dcr", a.dcr, fmt(a.dcr)),
                    _num("risk_ratio", a.risk_ratio, fmt(a.risk_ratio, False)),
                    _num("repairs", a.repairs, str(a.repairs)),
                    _num("manager_calls", a.manager_calls, str(a.manager_calls)),
                    _num("wall_s", a.wall_s, f"{a.wall_s:.1f}"),
                    _num("degraded_tasks", a.degraded_tasks, str(a.degraded_tasks)),
                    _num("crashed_tasks", a.crashed_tasks, str(a.crashed_tasks)),
                )
            )
    gains = []
    for s in summaries:
        g = s.gain
        if g is not None and g.observed_gain is not None:
            gains.append(
                el(
                    "p",
                    {"class": "gain"},
                    f"{s.bench}: accuracy gain (stateguard - baseline) "
                    f"{100 * g.observed_gain:+.1f} points, 95% CI [{fmt(g.ci_low)}, {fmt(g.ci_high)}] "
                    f"({g.n_resamples} resamples over {g.n_tasks} tasks)",
                )
            )
    return join(
        el(
            "table",
            {"class": "bench-table", "id": "bench-table"},
            el("thead", None, el("tr", None, [el("th", None, h) for h in head])),
            el("tbody", None, rows),
        ),
        gains,
        _problems(summaries),
    )


def _problems(summaries: list[RunSummary]) -> Markup:
    """Crashed and degraded rollouts, named with their reasons: never only a count."""
    items = []
    for s in summaries:
        for a in s.arms:
            for task, error in sorted(a.crashed.items()):
                items.append(
                    el(
                        "li",
                        {"class": "crashed", "data-arm": a.arm, "data-task": task},
                        el("strong", None, f"crashed, not scored: {task} / {a.arm}: "),
                        error,
                    )
                )
            for task, why in sorted(a.degraded.items()):
                items.append(
                    el(
                        "li",
                        {"class": "degraded", "data-arm": a.arm, "data-task": task},
                        el("strong", None, f"degraded: {task} / {a.arm}: "),
                        "; ".join(why),
                    )
                )
    if not items:
        return join()
    return el("ul", {"class": "problems", "id": "problems"}, items)


def _note(facts: dict[str, str]) -> str:
    """The short remark of an arm's row: its crash or degradation, or a synthesis variant's kept
    verdict and intervention."""
    if "error" in facts:
        return f"crashed, not scored: {facts['error']}"
    if "degraded" in facts:
        return f"degraded: {facts['degraded']}"
    parts = [f"kept: {facts['kept']}"] if "kept" in facts else []
    if "intervention" in facts:
        parts.append(facts["intervention"].split(":", 1)[0])
    return "; ".join(parts)


def _task_rows(run: RunSource, pages: dict[str, str]) -> Markup:
    rows = []
    for task in run.tasks:
        diverge = diverging_turns(task, run.reference)
        href = pages.get(task.task_id)
        for i, arm in enumerate(task.arms):
            r = arm.result
            scored = [v for v in r.correct.values() if v is not None]
            acc = sum(scored) / len(scored) if scored else None
            about = [g for g in (r.domain, r.level) if g != "all"] + [f"{len(task.turns)} turns"]
            about += [f"{len(diverge)} diverging"] if diverge else []
            first = (
                el(
                    "th",
                    {"rowspan": len(task.arms), "class": "task"},
                    el("a", {"href": href}, task.task_id) if href else task.task_id,
                    el("div", {"class": "sub"}, " · ".join(about)),
                )
                if i == 0
                else None
            )
            status = "first" if i == 0 else ""
            status += f" {r.status}" if r.status != "ok" else ""
            rows.append(
                el(
                    "tr",
                    {
                        "data-task": task.task_id,
                        "data-arm": arm.name,
                        "data-status": r.status,
                        "class": status.strip() or None,
                    },
                    first,
                    el("td", {"class": "arm"}, arm.name),
                    _num("correct", sum(scored), f"{sum(scored)}/{len(scored)}"),
                    _num("accuracy", acc, fmt(acc)),
                    _num("repairs", r.repairs, str(r.repairs)),
                    _num("manager_calls", r.manager_calls, str(r.manager_calls)),
                    _num("wall_s", r.wall_s, f"{r.wall_s:.1f}"),
                    _num("committed_states", r.committed_states, str(r.committed_states)),
                    _num("stale_states", r.stale_states, str(r.stale_states)),
                    el("td", {"class": "note"}, _note(arm.facts)),
                    el("td", None, turn_cells(task, i, diverge, href)),
                )
            )
    head = [
        "task",
        "arm",
        "correct",
        "accuracy %",
        "repairs",
        "manager calls",
        "wall s",
        "states",
        "stale",
        "notes",
        "per-turn verdicts (highlighted: arms diverge)",
    ]
    return el(
        "table",
        {"class": "task-table", "id": "task-table"},
        el("thead", None, el("tr", None, [el("th", None, h) for h in head])),
        el("tbody", None, rows),
    )


def overview_page(run: RunSource, pages: dict[str, str], *, resamples: int = 2000) -> str:
    what = {
        "eval": "evaluation run",
        "synthesis": "synthesis export (variants of each parent task)",
        "rollouts": "rollout folders (no per-turn verdicts recorded)",
    }[run.kind]
    legend = el(
        "p",
        {"class": "legend"},
        "verdicts: ",
        el("span", {"class": "t ok"}, ""),
        " correct ",
        el("span", {"class": "t wrong"}, ""),
        " wrong ",
        el("span", {"class": "t excluded"}, ""),
        " excluded ",
        el("span", {"class": "t ok diverge"}, ""),
        f" turn where the arms diverge (compared with {run.reference})",
    )
    body = join(
        el(
            "header",
            {"class": "top"},
            el("strong", None, "StateGuard run viewer"),
            " · ",
            what,
            " · ",
            el("code", None, str(run.root)),
        ),
        el(
            "main",
            None,
            el("h1", None, "Run overview"),
            el("h2", None, "Benchmarks × arms"),
            _bench_table(_summaries(run, resamples)),
            el("h2", None, f"Tasks ({len(run.tasks)})"),
            legend,
            _task_rows(run, pages),
            el(
                "details",
                {"class": "config"},
                el("summary", None, "run configuration"),
                el("pre", None, run.config_text or "(none recorded)"),
            ),
        ),
    )
    return page(f"StateGuard run: {run.root.name}", body, depth=0, body_class="overview")
