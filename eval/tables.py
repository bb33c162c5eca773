"""`make tables RUN=<run folder>`: the paper's tables and plots from a saved evaluation run.

    python -m eval.tables runs/eval/synth-20261130-091500            # -> <run>/tables/
    python -m eval.tables RUN_A RUN_B --out reports/main             # several benchmarks in one Table 1
    python -m eval.tables runs/synth-debug                          # a `make synth` out_dir: corpus statistics

Reads only `<run>/results/*.json` and the traces/stores they point to; writes, as Markdown and
CSV each:
* table1     one row per agent and one per +StateGuard: accuracy per domain, average, DCR
             (Table 1's layout; "—" where undefined);
* ablation   every arm of the run with accuracy, DCR and the gain over the baseline (Fig. 3 left);
* runtime    reviews per task, manager calls per task (real completions only; refused and
             failed requests, unusable answers and fallbacks in their own columns), time per
             call, T_M (Eq. 32) and wall time per task (Table 5);
* states     D.2 state statistics of the StateGuard arm;
* gains      C.3: micro and task-macro accuracy gain of each arm over the baseline, each with its
             paired cluster bootstrap CI (`--resamples`, default 10,000);
* states_mix D.2's relation mix, hints by kind, and tool usage (calls, share of tasks using each);
* paired     D.3: unit flips baseline -> StateGuard in both directions, task-level changes, and the
             manager-attributable regressions (broad and strict criteria, `eval/metrics/paired.py`);
* detection  per manager arm, split and fault kind: recall, lucky fixes, accuracy vs baseline,
             clean-run harm (false repairs per 100 clean turns, destructive actions);
* problems   every crashed rollout (not scored, left out of the tables' accuracy and DCR), every
             degraded one (scored) and every state store that could not be read, with the reason
             (printed as well, so nothing is left out silently);
and two PNG plots: accuracy vs analytical-state coverage (one point per task), and verification
engagement (share of turns with an evidence tool call) by stage difficulty (the share of arms
that answered the turn wrong), as in Fig. 3 right.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

from eval.corpus_table import find_corpus_stats, write_corpus_table
from eval.metrics.accuracy import unit_outcomes
from eval.metrics.bootstrap import accuracy_stats, paired_cluster_bootstrap
from eval.metrics.detection import detection_report, detection_table, scored_results
from eval.metrics.overhead import decompose, manager_call_stats, step_intervals
from eval.metrics.paired import attribute, paired_flips, regressed_units
from eval.metrics.states import RunStateStats, run_state_stats
from eval.metrics.states import summarize as summarize_states
from eval.report import fmt, macro_gain, summarize
from eval.results import ArmResult, read_results
from stateguard.artifacts.events import TurnStartEvent
from stateguard.artifacts.run_folder import RolloutFolder, RunFolder
from stateguard.store import StateStore, StoreError
from stateguard.trace import TraceEvent, read_trace

__all__ = ["main", "render_tables"]

Table = tuple[list[str], list[list[str]]]


@cache
def _events(path: Path) -> tuple[TraceEvent, ...]:
    """A trace read once per report (the runtime table, the state statistics and the plots all
    read the same files); a missing file is an empty trace."""
    return tuple(read_trace(path)) if path.is_file() else ()


def _trace(r: ArmResult, calls: bool = False) -> tuple[TraceEvent, ...]:
    """The arm's trace (or, with `calls`, its llm_calls log)."""
    folder = RolloutFolder(Path(r.run_dir))
    return _events(folder.llm_calls if calls else folder.trace)


def _md(table: Table) -> str:
    head, rows = table
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def _csv(table: Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(table[0])
    writer.writerows(table[1])
    return buf.getvalue()


def _label(arm: str, worker: str) -> str:
    return worker if arm == "baseline" else f"+StateGuard ({arm})" if arm != "stateguard" else "+StateGuard"


def table1(results: list[ArmResult], worker: str) -> Table:
    by_bench: dict[str, list[ArmResult]] = defaultdict(list)
    for r in results:
        by_bench[r.bench].append(r)
    head = ["agent"]
    columns: list[tuple[str, list[str]]] = []
    for bench, rs in sorted(by_bench.items()):
        domains = sorted({r.domain for r in rs})
        columns.append((bench, domains))
        head += [f"{bench} {d}" for d in domains] + [f"{bench} avg", f"{bench} DCR"]
    rows = []
    for arm in ("baseline", "stateguard"):
        row = [_label(arm, worker)]
        for bench, domains in columns:
            rs = [r for r in by_bench[bench] if r.arm == arm]
            if not rs:
                row += ["—"] * (len(domains) + 2)
                continue
            s = summarize(rs, resamples=1).arms[0]
            row += [fmt(s.accuracy_by_domain.get(d)) for d in domains] + [fmt(s.accuracy), fmt(s.dcr)]
        rows.append(row)
    return head, rows


def ablation(results: list[ArmResult]) -> Table:
    summary = summarize(results, resamples=1, detection=False)
    base = next((a.accuracy for a in summary.arms if a.arm == "baseline"), None)
    rows = [
        [
            a.arm,
            fmt(a.accuracy),
            fmt(a.dcr),
            "—" if a.accuracy is None or base is None else f"{100 * (a.accuracy - base):+.1f}",
            str(a.degraded_tasks),
            str(a.crashed_tasks),
        ]
        for a in summary.arms
    ]
    return [
        "arm",
        "accuracy %",
        "DCR %",
        "gain vs baseline (points)",
        "degraded tasks",
        "crashed tasks (not scored)",
    ], rows


def problems(results: list[ArmResult], unreadable: list[tuple[ArmResult, str]]) -> Table:
    """Crashed and degraded rollouts and unreadable stores, one row each (empty when none)."""
    rows = [
        [
            r.bench,
            r.arm,
            r.task_id,
            r.status,
            str(r.error)
            if r.status == "crashed"
            else "; ".join(r.degraded_reasons) or "(no reason recorded)",
        ]
        for r in results
        if r.status != "ok"
    ]
    rows += [
        [r.bench, r.arm, r.task_id, "store unreadable (left out of the state statistics)", why]
        for r, why in unreadable
    ]
    return ["benchmark", "arm", "task", "status", "reason"], rows


def runtime(results: list[ArmResult]) -> Table:
    by_arm: dict[str, list[ArmResult]] = defaultdict(list)
    for r in results:
        if r.status != "crashed":  # a crashed rollout has no whole trace to time
            by_arm[r.arm].append(r)
    baseline = [step_intervals(_trace(r)) for r in by_arm.get("baseline", [])]
    rows = []
    for arm, rs in sorted(by_arm.items(), key=lambda kv: (kv[0] != "baseline", kv[0])):
        traces = [_trace(r) for r in rs]
        calls = manager_call_stats([_trace(r, calls=True) for r in rs])
        if arm == "baseline":
            reviews, t_m = "0", "—"
        else:
            d = decompose([step_intervals(t) for t in traces], baseline or None)
            reviews, t_m = (
                f"{d.reviews_per_task:.1f}",
                "—" if d.t_manager_s is None else f"{d.t_manager_s:.3f}",
            )
        n = len(rs)

        def per_task(*keys: str, rs: list[ArmResult] = rs, n: int = n) -> str:
            return f"{sum(r.manager_usage.get(k, 0) for r in rs for k in keys) / n:.1f}"

        rows.append(
            [
                arm,
                reviews,
                f"{sum(r.manager_calls for r in rs) / n:.1f}",
                per_task("rejected_for_size", "rejected_requests"),
                per_task("failed_requests"),
                per_task("parse_failures", "illegal_actions"),
                f"{sum(r.manager_fallbacks for r in rs) / n:.1f}",
                fmt(calls.mean_latency_s, False),
                t_m,
                f"{sum(r.wall_s for r in rs) / n:.2f}",
            ]
        )
    head = [
        "arm",
        "reviews/task",
        "manager calls/task (real completions)",
        "refused requests/task",
        "failed requests/task",
        "unusable answers/task",
        "fallbacks/task",
        "s per call",
        "T_M s (Eq. 32)",
        "wall s/task",
    ]
    return head, rows


def _state_runs(
    results: list[ArmResult],
) -> tuple[list[tuple[ArmResult, object]], list[tuple[ArmResult, str]]]:
    """State statistics per rollout, and the rollouts whose store is damaged or missing (named in
    the problems table rather than stopping the report or being counted as empty)."""
    out: list[tuple[ArmResult, object]] = []
    unreadable: list[tuple[ArmResult, str]] = []
    for r in results:
        try:
            store = StateStore.open_read_only(RolloutFolder(Path(r.run_dir)).store)
        except StoreError as exc:
            unreadable.append((r, str(exc)))
            continue
        try:
            out.append((r, run_state_stats(_trace(r), store)))
        finally:
            store.close()
    return out, unreadable


def states(runs: list[tuple[ArmResult, object]]) -> Table:
    s = summarize_states([x for _, x in runs])  # type: ignore[misc]
    data = s.model_dump()
    rows = [
        [k, f"{v:.3g}" if isinstance(v, float) else str(v)]
        for k, v in data.items()
        if not isinstance(v, dict | list)
    ]
    # Evidence-tool calls by tool (D.2, Figure 4b): total and per task.
    rows += [
        [f"tool calls: {name}", f"{count} ({count / s.tasks:.1f}/task)"] for name, count in s.tools.items()
    ]
    return ["statistic", "value"], rows


def _points(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.2f}"


def gains(results: list[ArmResult], resamples: int = 10_000) -> Table:
    """C.3: per benchmark and arm, micro and task-macro gain over the baseline on the shared tasks."""
    rows = []
    for bench in sorted({r.bench for r in results}):
        rs = [r for r in results if r.bench == bench and r.error is None]
        base = {r.task_id: r for r in rs if r.arm == "baseline"}
        for arm in sorted({r.arm for r in rs} - {"baseline"}):
            treat = {r.task_id: r for r in rs if r.arm == arm and r.task_id in base}
            if not treat:
                continue
            b, t = [base[k] for k in sorted(treat)], [treat[k] for k in sorted(treat)]
            base_stats, treat_stats = (
                accuracy_stats(u for r in arm_rs for u in unit_outcomes(r.task_id, r.correct))
                for arm_rs in (b, t)
            )
            micro = paired_cluster_bootstrap(base_stats, treat_stats, n_resamples=resamples)
            macro = macro_gain(b, t, resamples=resamples)
            rows.append(
                [
                    bench,
                    arm,
                    str(len(t)),
                    _points(micro.observed_gain),
                    f"[{fmt(micro.ci_low)}, {fmt(micro.ci_high)}]",
                    fmt(micro.share_nonpositive),
                    _points(macro.observed_gain if macro else None),
                    f"[{fmt(macro.ci_low)}, {fmt(macro.ci_high)}]" if macro else "—",
                ]
            )
    head = [
        "bench",
        "arm",
        "tasks",
        "micro gain (points)",
        "micro 95% CI",
        "micro resamples <= 0 %",
        "task-macro gain (points)",
        "task-macro 95% CI",
    ]
    return head, rows


def states_mix(runs: list[tuple[ArmResult, object]]) -> Table:
    """D.2: relation mix (share of committed relations), hints by kind (per task), tool usage
    (calls, and the share of tasks that used each tool) of the StateGuard arm."""
    stats = [x for _, x in runs if isinstance(x, RunStateStats)]
    s = summarize_states(stats)
    n = len(stats)
    rows = [
        ["relation", k, str(v), f"{100 * s.relation_shares[k]:.1f}% of relations"]
        for k, v in s.relations.items()
    ]
    rows.append(["relation", "states with 2+ upstream states", str(s.multi_upstream_states), ""])
    rows.append(["relation", "reselections at finalization", str(s.reselections), ""])
    rows += [["hint", k, str(v), f"{s.hints_per_task[k]:.2f} per task"] for k, v in s.hints.items()]
    rows += [
        ["tool", k, str(v), f"{100 * sum(bool(x.tools.get(k)) for x in stats) / n:.0f}% of tasks"]
        for k, v in s.tools.items()
    ]
    rows.append(
        [
            "tool",
            "any evidence tool",
            str(sum(s.tools.values())),
            f"{100 * s.tool_task_coverage:.0f}% of tasks",
        ]
    )
    return ["D.2", "kind", "count", "share"], rows


def _share(count: int, of: int) -> str:
    return f"{count} ({100 * count / of:.2f}%)" if of else str(count)


def _units_are_turns(r: ArmResult) -> bool:
    turns = {e.data.turn_id for e in _trace(r) if isinstance(e, TurnStartEvent)}
    return bool(turns) and set(r.correct) <= turns


def paired(results: list[ArmResult]) -> Table:
    """D.3 per benchmark: flips baseline -> stateguard in both directions, task-level changes, and
    the regressions the manager is attributable for (on turn-level units; "—" otherwise)."""
    rows = []
    for bench in sorted({r.bench for r in results}):
        base = {r.task_id: r for r in results if r.bench == bench and r.arm == "baseline" and r.error is None}
        guard = {
            r.task_id: r for r in results if r.bench == bench and r.arm == "stateguard" and r.error is None
        }
        if not base or not guard:
            continue
        flips = paired_flips(
            {k: r.correct for k, r in base.items()}, {k: r.correct for k, r in guard.items()}
        )
        broad = strict = 0
        turn_level = all(_units_are_turns(r) for k, r in guard.items() if k in base)
        if turn_level:
            for k in sorted(set(base) & set(guard)):
                lost = regressed_units(base[k].correct, guard[k].correct)
                if lost:
                    b, st = attribute(_trace(guard[k]), lost, guard[k].correct)
                    broad, strict = broad + len(b), strict + len(st)
        rows.append(
            [
                bench,
                str(flips.units),
                str(flips.improved),
                str(flips.regressed),
                f"{flips.net:+d}",
                str(flips.stayed_right),
                str(flips.stayed_wrong),
                str(flips.excluded),
                f"{flips.tasks_improved}/{flips.tasks_decreased}/{flips.tasks_unchanged}",
                _share(broad, flips.units) if turn_level else "—",
                _share(strict, flips.units) if turn_level else "—",
            ]
        )
    head = [
        "bench",
        "paired units",
        "wrong->right",
        "right->wrong",
        "net",
        "stayed right",
        "stayed wrong",
        "excluded",
        "tasks up/down/same",
        "manager-attributable (broad)",
        "manager-attributable (strict)",
    ]
    return head, rows


def plots(results: list[ArmResult], runs: list[tuple[ArmResult, object]], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    xs = [getattr(st, "coverage", None) for _, st in runs]
    ys = [sum(bool(v) for v in r.correct.values()) / max(1, len(r.correct)) for r, _ in runs]
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.scatter([x or 0.0 for x in xs], ys, s=18)
    ax.set(
        xlabel="analytical-state coverage (share of turns)",
        ylabel="task accuracy",
        title="Accuracy vs coverage",
    )
    fig.tight_layout()
    fig.savefig(out / "accuracy_vs_coverage.png", dpi=120)
    plt.close(fig)
    written.append(out / "accuracy_vs_coverage.png")
    # Difficulty of a turn: share of arms that got it wrong. Engagement: a tool call during that turn.
    wrong: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for r in results:
        for t, v in r.correct.items():
            wrong[(r.task_id, t)].append(v is False)
    buckets: dict[str, list[int]] = {"easy (<30%)": [], "medium (30-70%)": [], "hard (>=70%)": []}
    for r, _ in runs:
        turn, tooled = None, set()
        for e in _trace(r):
            turn = e.data.turn_id if isinstance(e, TurnStartEvent) else turn
            if e.kind == "tool" and turn is not None:
                tooled.add(turn)
        for t in r.correct:
            share = sum(wrong[(r.task_id, t)]) / len(wrong[(r.task_id, t)])
            key = "easy (<30%)" if share < 0.3 else "medium (30-70%)" if share < 0.7 else "hard (>=70%)"
            buckets[key].append(int(t in tooled))
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.bar(list(buckets), [sum(v) / len(v) if v else 0.0 for v in buckets.values()])
    ax.set(ylabel="turns with a verification tool call", title="Verification engagement by difficulty")
    fig.tight_layout()
    fig.savefig(out / "engagement_by_difficulty.png", dpi=120)
    plt.close(fig)
    written.append(out / "engagement_by_difficulty.png")
    return written


def _located(r: ArmResult, run_dir: Path) -> ArmResult:
    """The arm's folder inside the run folder (the run may have been moved or copied since the
    result recorded its path), else the recorded one."""
    inside = RunFolder(Path(run_dir)).rollout(r.task_id, r.arm).root
    return r.model_copy(update={"run_dir": str(inside)}) if inside.is_dir() else r


def render_tables(
    run_dirs: list[Path], out: Path, worker: str | None = None, resamples: int = 10_000
) -> list[Path]:
    _events.cache_clear()  # traces are cached for one report only: a rerun may have changed them
    results = [_located(r, d) for d in run_dirs for r in read_results(d)]
    if not results:
        raise FileNotFoundError(f"no results under {[str(d) for d in run_dirs]}; run `make eval` first")
    worker = worker or "worker"
    out.mkdir(parents=True, exist_ok=True)
    sg = [r for r in results if r.arm == "stateguard" and r.status != "crashed"]
    runs, unreadable = _state_runs(sg)
    tables = {
        "table1": table1(results, worker),
        "ablation": ablation(results),
        "runtime": runtime(results),
        "problems": problems(results, unreadable),
    }
    tables |= fidelity_tables(results, runs, resamples)
    if runs:
        tables["states"] = states(runs)
    report = detection_report(results)
    if report is not None:  # recall per fault kind, false repairs, harm (eval/metrics/detection.py)
        tables["detection"] = detection_table(report)
    written = []
    for name, table in tables.items():
        for ext, text in (("md", _md(table)), ("csv", _csv(table))):
            (out / f"{name}.{ext}").write_text(text, encoding="utf-8")
            written.append(out / f"{name}.{ext}")
    if runs:
        written += plots(results, runs, out)
    return written


def fidelity_tables(
    results: list[ArmResult], runs: list[tuple[ArmResult, object]], resamples: int
) -> dict[str, Table]:
    """C.3's task-macro gain, D.2's relation / hint / tool mix, D.3's paired flips."""
    # The gains cover the runs the summary's gain covers (the fault variants when there are clean ones);
    # the paired flips cover every run (a right -> wrong flip on a clean run is harm).
    tables = {"gains": gains(scored_results(results), resamples), "paired": paired(results)}
    if runs:
        tables["states_mix"] = states_mix(runs)
    return tables


def _worker_name(run_dir: Path) -> str | None:
    cfg = RunFolder(run_dir).config
    if not cfg.is_file():
        return None
    from omegaconf import DictConfig, OmegaConf

    loaded = OmegaConf.load(cfg)
    return str(loaded.get("worker")) if isinstance(loaded, DictConfig) and "worker" in loaded else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.tables", description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs", nargs="+", type=Path, help="run folders of `make eval` (or `make synth` out_dirs)"
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <first run>/tables)")
    parser.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap resamples for the gains table"
    )
    args = parser.parse_args(argv)
    out = args.out or args.runs[0] / "tables"
    corpus = {d: find_corpus_stats(d) for d in args.runs if not RunFolder(d).results.is_dir()}
    if corpus and all(corpus.values()):  # synthesis out_dirs: the corpus statistics (make synth)
        try:
            for d, stats in corpus.items():
                assert stats is not None
                path = write_corpus_table(stats, args.out or d / "tables")
                print(
                    f"Corpus statistics of {d} (next to the paper's D.2)\n{path.read_text(encoding='utf-8')}"
                )
                print(f"wrote {path}")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        written = render_tables(list(args.runs), out, _worker_name(args.runs[0]), args.resamples)
    except (FileNotFoundError, ValueError) as exc:  # a missing run folder or a bad results file, named
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print((out / "table1.md").read_text(encoding="utf-8"))
    for name, title in (
        ("gains", "Accuracy gain, micro and task-macro (C.3)"),
        ("states_mix", "Relations, hints and tools (D.2)"),
        ("paired", "Paired flips (D.3)"),
    ):
        if (out / f"{name}.md").is_file():
            print(f"{title}\n{(out / f'{name}.md').read_text(encoding='utf-8')}")
    rows = list(csv.reader(io.StringIO((out / "problems.csv").read_text(encoding="utf-8"))))[1:]
    if rows:
        print(f"{len(rows)} rollout(s) crashed, degraded or unreadable (crashed ones are not in the tables):")
        print("\n".join(f"  {arm} {task}: {status}: {reason[:160]}" for _, arm, task, status, reason in rows))
    else:
        print("no rollout crashed or degraded, and every state store read back intact")
    print(f"wrote {len(written)} files to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
