"""Semantic verification, measured: recall per mistake kind, false repairs on clean runs, accuracy.

Every task of the benchmark runs as a clean variant (no mistake) and as one variant per shipped
mistake (exactly that one), with the baseline and with the `rules` manager with semantic
verification off and on. Printed per manager setting (and written to `<out>/semantic.json`):

  * clean runs: accuracy (next to the baseline's), accepted REPAIRs per 100 turns (false repairs:
    nothing is wrong), destructive actions (variables deleted, states abandoned, rollbacks);
  * per mistake kind: recall = variants with an accepted REPAIR at the faulty turn naming a variable
    or answer field of that turn, or at a later turn naming one of them other than the scratch
    `result`; a repair at a turn where the clean run also repaired does not count (it is the same
    false alarm). Plus accuracy with and without StateGuard on those variants.

    python -m eval.perf.semantic                                   # synth, all tasks (~15 min, 2 workers)
    python -m eval.perf.semantic 'task_ids=[nyc_s773945_t25]' settings=[semantic]
    python -m eval.perf.semantic out=runs/bench/semantic-x    # again: finished rollouts are reused
    python -m eval.perf.semantic bench=dev bench.split=heldout   # hand-written tasks: clean + each counterfactual variant
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from eval.benchmarks.base import EvalTask
from eval.benchmarks.registry import get_benchmark
from eval.components import WORKSPACES, make_manager, make_workspace
from eval.jobs import exit_on_signals, worker_pool
from eval.metrics import dcr, pooled_dcr
from eval.metrics.dcr import DCRResult
from stateguard.actions import RepairArgs
from stateguard.artifacts.events import (
    ActionEvent,
    LlmCallEvent,
    RepairData,
    RepairEvent,
    RollbackEvent,
    StateAbandonedEvent,
    StateCommittedEvent,
    StateUpdatedEvent,
    ToolEvent,
    WorkerStepEvent,
)
from stateguard.artifacts.faults import load_faults
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.dataflow import cell_dataflow
from stateguard.rollout import rollout
from stateguard.trace import Trace
from stateguard.trace import read_trace as read_events
from stateguard.trace_payloads import action_args, draft_of
from stateguard.workers import FaultModel, ScriptedWorker

# setting -> (manager kind, semantic verification switches); the baseline runs without a manager.
# `llm` and `hierarchical` ask the model at STATEGUARD_MANAGER_* (e.g. `make serve-local`), so the two
# can be compared in one run against the same endpoint: model calls per rollout, seconds per call,
# recall (the paper's Table 5 columns).
SETTINGS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "baseline": None,
    "rules": ("rules", {"enabled": False}),
    "semantic": ("rules", {"enabled": True}),
    "llm": ("llm", {"enabled": False}),
    "hierarchical": ("hierarchical", {"enabled": True}),
}


def _variants(
    task: EvalTask, kinds: list[dict[str, Any]]
) -> list[tuple[str, list[Any], dict[str, Any] | None]]:
    out: list[tuple[str, list[Any], dict[str, Any] | None]] = [("clean", [], None)]
    for i, (fault, meta) in enumerate(zip(task.faults, kinds, strict=False)):
        out.append((f"fault{i}", [fault], meta))
    return out


def _fault_meta(task: EvalTask) -> list[dict[str, Any]]:
    """Kind and turn of each shipped mistake (synth: hidden/faults.json next to the data)."""
    shipped = load_faults(TaskFolder(task.data_dir.parent.parent).faults)
    if isinstance(shipped, list):
        return [{"kind": f.kind, "operation": f.operation or "", "turn": f.turn} for f in shipped]
    return [{"kind": f.semantic or f.kind, "operation": "", "turn": int(f.turn)} for f in task.faults]


def _jobs_of_variants(tasks: list[EvalTask]) -> list[tuple[EvalTask, str, list[Any], dict[str, Any] | None]]:
    """A benchmark that expands declared variants itself (`dev`): each counterfactual variant with one
    mistake is a faulty run of its base task, the `clean` variant is the clean run."""
    out: list[tuple[EvalTask, str, list[Any], dict[str, Any] | None]] = []
    for task in tasks:
        base = task.model_copy(update={"task_id": task.base_task or task.task_id})
        if task.variant == "clean":
            out.append((base, "clean", [], None))
        elif len(task.faults) == 1 and task.faults[0].kind == "counterfactual":
            out.append((base, task.variant, list(task.faults), _fault_meta(task)[0]))
    return out


def run_one(
    task: EvalTask,
    variant: str,
    faults: list[Any],
    setting: str,
    flow: Any,
    out: str,
    llm: dict[str, Any] | None = None,
    workspace_kind: str = "sandbox",
) -> dict[str, Any]:
    folder = Path(out)
    done = folder / "outcome.json"
    if done.is_file():  # finished in an earlier, interrupted run of the same folder
        try:
            return dict(json.loads(done.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass  # cut short while it was written (a full disk): the rollout runs again
    shutil.rmtree(folder, ignore_errors=True)
    calls = Trace(RolloutFolder(folder).llm_calls)
    start = time.perf_counter()
    workspace = make_workspace(workspace_kind, task.data_dir, folder)
    try:
        worker = ScriptedWorker(FaultModel(faults=faults), reference=task.task)
        chosen = SETTINGS[setting]
        manager = (
            None
            if chosen is None
            else make_manager(chosen[0], trace=calls, semantic=chosen[1], llm=llm or {})
        )
        result = rollout(
            task.task.agent_view(), worker, workspace, flow=flow, manager=manager, run_dir=folder
        )
    finally:
        workspace.close()
        calls.close()
    outcome = {
        "answers": result.answers,
        "wall_s": time.perf_counter() - start,
        "trace": str(RolloutFolder(folder).trace),
        **model_usage(RolloutFolder(folder).llm_calls),
    }
    done.write_text(json.dumps(outcome, default=str), encoding="utf-8")
    return outcome


def model_usage(path: Path) -> dict[str, Any]:
    """The manager's model calls in a rollout's `llm_calls.jsonl` (every call, answered or failed,
    with its latency); nothing for a manager that never called a model."""
    if not path.is_file():
        return {"model_calls": 0, "model_s": 0.0}
    calls = [e for e in read_events(path) if isinstance(e, LlmCallEvent)]
    return {"model_calls": len(calls), "model_s": round(sum(e.data.latency_s for e in calls), 3)}


CHECKS = (
    "semantic",
    "parameters",
    "staleness",
    "constraints",
    "precision",
    "grounding",
    "related",
    "execution",
)


def read_trace(path: str) -> dict[str, Any]:
    """Accepted REPAIRs (with the turn of the state they target), destructive actions, tool counts."""
    step_turn: dict[int, int] = {}
    state_turn: dict[str, int] = {}
    repairs: list[dict[str, Any]] = []
    destructive = 0
    states = coded = 0
    tools: dict[str, int] = defaultdict(int)
    last_repair: RepairData | None = None  # the harness's `repair` event precedes the accepted action's
    for event in read_events(path):
        if isinstance(event, WorkerStepEvent) and event.data.turn is not None:
            step_turn[event.data.index] = event.data.turn
        elif isinstance(event, StateUpdatedEvent):
            d = draft_of(event.data)
            lo, hi = d.source_step_start, d.source_step_end
            turns = (
                [step_turn[i] for i in range(lo, hi + 1) if i in step_turn]
                if lo is not None and hi is not None
                else []
            )
            if turns:
                state_turn[event.data.state_id] = max(turns)
        elif isinstance(event, ToolEvent):
            tools[event.data.name] += 1
        elif isinstance(event, RepairEvent):
            last_repair = event.data
            destructive += int(bool(event.data.removed))
        elif isinstance(event, ActionEvent) and event.data.accepted and last_repair is not None:
            args = action_args(event.data, RepairArgs)
            if args is None:
                continue
            repairs.append(
                {
                    "turn": state_turn.get(last_repair.state_id),
                    "variables": args.error_hint.error_variables,
                    "checks": sorted(c for c in CHECKS if f"[{c}]" in args.analytical_evidence),
                }
            )
            last_repair = None
        elif isinstance(event, StateAbandonedEvent | RollbackEvent):
            destructive += 1
        elif isinstance(event, StateCommittedEvent):
            states += 1
            coded += sum(1 for c in event.data.state.constraints if c.code)
    return {
        "repairs": repairs,
        "destructive": destructive,
        "tools": dict(tools),
        "states": states,
        "coded": coded,
    }


def _footprint(task: EvalTask, turn: int, faults: list[Any]) -> set[str]:
    ref = task.task.turn(turn)
    names = set(cell_dataflow(ref.code).writes) | set(cell_dataflow(ref.code).reads)
    for fault in faults:
        if fault.turn == turn and fault.code:
            names |= set(cell_dataflow(fault.code).writes)
    if isinstance(ref.answer, dict):
        names |= set(ref.answer)
    return names


# The run folder's record of what made it: a later run with the same `out` resumes only under the same
# code and settings (finished rollouts are reused, so a folder of other code would mix two versions).
CARD = "run.json"
_UNRECORDED = ("out", "workers", "task_ids", "verbose")  # may change between a run and its resumption


def code_digest() -> str:
    """sha256 of the runtime's and the benchmarks' Python sources (what a rollout's outcome depends on)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted([*(root / "stateguard").rglob("*.py"), *(root / "eval").rglob("*.py")]):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def claim_folder(out_dir: Path, cfg: DictConfig) -> None:
    """Record the code and settings in `out_dir`, or refuse a folder another code or setting made."""
    settings = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(settings, dict)
    config: dict[str, Any] = {str(k): v for k, v in settings.items() if k not in _UNRECORDED}
    card: dict[str, Any] = {"code_sha256": code_digest(), "config": config}
    path = out_dir / CARD
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old != card:
            changed = ["code"] if old.get("code_sha256") != card["code_sha256"] else []
            before: dict[str, Any] = old.get("config", {})
            changed += sorted(k for k in {*config, *before} if config.get(k) != before.get(k))
            raise ValueError(
                f"out={out_dir} holds a run made with other {', '.join(changed)}; resuming it would mix "
                f"the two. Pass a new out=, or delete the folder to start again."
            )
        return
    if any(out_dir.glob("*/*/*/outcome.json")):
        raise ValueError(
            f"out={out_dir} holds finished rollouts but no {CARD} (a run of an older version): which code made "
            f"them is unknown. Pass a new out=, or delete the folder to start again."
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(card, indent=1, default=str), encoding="utf-8")


def run(cfg: DictConfig) -> dict[str, Any]:
    load_cfg: dict[str, Any] = dict(OmegaConf.to_container(cfg.bench, resolve=True))  # type: ignore[arg-type]
    bench = get_benchmark(str(load_cfg.pop("name")))
    if cfg.get("data_dir"):
        load_cfg["data_dir"] = cfg.data_dir
    if (
        bench.name == "synth"
    ):  # each task with its shipped mistakes; clean and single-mistake runs are made here
        load_cfg["variants"] = ["shipped"]
    if cfg.get("workspace", "sandbox") not in WORKSPACES:
        raise ValueError(f"workspace={cfg.workspace!r}: use one of {', '.join(WORKSPACES)}")
    unknown = set(cfg.settings) - set(SETTINGS)
    if unknown:  # before the benchmark loads: a dev set absent or out of date is built by its load
        raise ValueError(
            f"settings: unknown {sorted(unknown)}; use some of {sorted(set(SETTINGS) - {'baseline'})}"
        )
    tasks = bench.load(load_cfg)
    if cfg.task_ids:  # dev ids may be written with "/" (energy/iowa/task1) or as stored ("__")
        wanted = {str(t).replace("/", "__") for t in cfg.task_ids}
        tasks = [t for t in tasks if (t.base_task or t.task_id) in wanted or t.task_id in wanted]
        if not tasks:
            raise ValueError(f"task_ids={list(cfg.task_ids)}: no such task in bench={bench.name}")
    flow = bench.flow
    if cfg.get("flow") == "turn_aligned":
        flow = flow.model_copy(update={"name": f"{flow.name}-turn", "regime": "turn_aligned"})
    settings = ["baseline", *[str(s) for s in cfg.settings]]
    if bench.name != "synth":  # the benchmark expanded its declared variants itself (dev)
        variants = _jobs_of_variants(tasks)
    else:
        variants = [(task, *v) for task in tasks for v in _variants(task, _fault_meta(task))]
    jobs = [
        (task, variant, faults, meta, setting)
        for task, variant, faults, meta in variants
        for setting in settings
    ]
    llm = dict(OmegaConf.to_container(cfg.llm, resolve=True)) if cfg.get("llm") else {}  # type: ignore[arg-type]
    out_dir = Path(cfg.out)
    claim_folder(out_dir, cfg)
    results: list[dict[str, Any]] = []
    start = time.perf_counter()
    exit_on_signals()  # SIGTERM ends the run's workers (and their kernels) too, not the runner alone
    with worker_pool(int(cfg.workers)) as pool:
        futures = [
            (
                job,
                pool.submit(
                    run_one,
                    job[0],
                    job[1],
                    job[2],
                    job[4],
                    flow,
                    str(out_dir / job[0].task_id / job[1] / job[4]),
                    llm,
                    str(cfg.get("workspace", "sandbox")),
                ),
            )
            for job in jobs
        ]
        for (task, variant, faults, meta, setting), fut in futures:
            outcome = fut.result()
            correct = bench.score(task, {int(k): v for k, v in outcome["answers"].items()})
            info = read_trace(outcome["trace"])
            results.append(
                {
                    "task": task.task_id,
                    "variant": variant,
                    "setting": setting,
                    "meta": meta,
                    "correct": {str(k): v for k, v in correct.items()},
                    "parents": {str(k): list(v) for k, v in task.parents.items()},
                    "turns": len(task.task.turns),
                    "footprint": sorted(_footprint(task, meta["turn"], faults)) if meta else [],
                    **info,
                    "wall_s": outcome["wall_s"],
                    "model_calls": outcome.get("model_calls", 0),
                    "model_s": outcome.get("model_s", 0.0),
                }
            )
    report = summarize(results)
    report["wall_s"] = round(time.perf_counter() - start, 1)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "semantic.json").write_text(
        json.dumps({"report": report, "runs": results}, indent=1, default=str)
    )
    return report


def _pooled_dcr(rows: list[dict[str, Any]]) -> DCRResult | None:
    """The mistake variants' turns pooled (Eq. 31's four counts); None when not recorded."""
    if not rows or any("parents" not in r for r in rows):
        return None
    return pooled_dcr(
        [
            dcr(
                {int(k): v for k, v in r["correct"].items()},
                {int(k): [int(p) for p in v] for k, v in r["parents"].items()},
            )
            for r in rows
        ]
    )


def _dcr(rows: list[dict[str, Any]]) -> float | None:
    """Pooled DCR (points) of the mistake variants' turns; None when undefined or not recorded."""
    pooled = _pooled_dcr(rows)
    return None if pooled is None or pooled.dcr is None else round(100.0 * pooled.dcr, 1)


def _dcr_counts(rows: list[dict[str, Any]]) -> dict[str, str] | None:
    """The two rates behind DCR as counts: DCR is their difference, so it can rise while both fall
    (fewer wrong turns after a wrong parent, and fewer still elsewhere)."""
    pooled = _pooled_dcr(rows)
    if pooled is None:
        return None
    return {
        "wrong_after_a_wrong_parent": f"{pooled.contaminated_bad}/{pooled.contaminated_n}",
        "wrong_otherwise": f"{pooled.clean_bad}/{pooled.clean_n}",
    }


def _spread(rows: list[dict[str, Any]]) -> dict[str, str] | None:
    """Where each variant's one mistake ended up, over the same turns in every arm: its own turn
    left wrong, and the turns downstream of it (its children, theirs, ...) left wrong. DCR compares
    two rates whose populations move with the arm (a mistake fixed at its turn takes its children
    out of the "wrong parent" group), so it can rise when fewer turns end wrong; these counts
    cannot."""
    if not rows or any("parents" not in r or not r.get("meta") for r in rows):
        return None
    own = own_n = down = down_n = 0
    for r in rows:
        turn = int(r["meta"]["turn"])
        parents = {int(k): {int(p) for p in v} for k, v in r["parents"].items()}
        below, grew = {turn}, True
        while grew:
            more = {t for t, ps in parents.items() if ps & below} - below
            below |= more
            grew = bool(more)
        verdicts = {int(k): v for k, v in r["correct"].items()}
        if verdicts.get(turn) is not None:
            own_n += 1
            own += int(not verdicts[turn])
        for t in below - {turn}:
            if verdicts.get(t) is not None:
                down_n += 1
                down += int(not verdicts[t])
    return {"mistaken_turn_wrong": f"{own}/{own_n}", "downstream_wrong": f"{down}/{down_n}"}


def _dcr_text(value: float | None, counts: dict[str, str] | None) -> str:
    if counts is None:
        return _points(value)
    return (
        f"{_points(value)} (wrong after a wrong parent {counts['wrong_after_a_wrong_parent']}, "
        f"otherwise {counts['wrong_otherwise']})"
    )


def _spread_text(spread: dict[str, str] | None) -> str:
    if spread is None:
        return ""
    return (
        f"; the mistaken turn left wrong {spread['mistaken_turn_wrong']}, "
        f"turns downstream of it left wrong {spread['downstream_wrong']}"
    )


def _accuracy(rows: list[dict[str, Any]]) -> float:
    verdicts = [v for r in rows for v in r["correct"].values() if v is not None]
    return 100.0 * sum(verdicts) / max(len(verdicts), 1)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    by = defaultdict(list)
    for r in results:
        by[(r["setting"], r["variant"] == "clean")].append(r)
    clean_repairs = {
        (r["task"], r["setting"]): {rep["turn"] for rep in r["repairs"]}
        for r in results
        if r["variant"] == "clean"
    }
    report: dict[str, Any] = {
        "baseline_clean_accuracy": round(_accuracy(by[("baseline", True)]), 2),
        "baseline_fault_accuracy": round(_accuracy(by[("baseline", False)]), 2),
        "baseline_fault_dcr": _dcr(by[("baseline", False)]),
        "baseline_fault_dcr_counts": _dcr_counts(by[("baseline", False)]),
        "baseline_fault_spread": _spread(by[("baseline", False)]),
        "settings": {},
    }
    for setting in sorted({r["setting"] for r in results} - {"baseline"}):
        clean = by[(setting, True)]
        turns = sum(r["turns"] for r in clean)
        faulty = by[(setting, False)]
        kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in faulty:
            meta, fp = r["meta"], set(r["footprint"])
            already = clean_repairs.get((r["task"], setting), set())
            hit = any(
                _names_fault(rep, meta["turn"], fp) and rep["turn"] not in already for rep in r["repairs"]
            )
            kinds[meta["kind"]][0] += int(hit)
            kinds[meta["kind"]][1] += 1
        tools: dict[str, int] = defaultdict(int)
        for r in clean + faulty:
            for k, v in r["tools"].items():
                tools[k] += v
        report["settings"][setting] = {
            "clean_accuracy": round(_accuracy(clean), 2),
            "false_repairs_per_100_turns": round(
                100.0 * sum(len(r["repairs"]) for r in clean) / max(turns, 1), 2
            ),
            "clean_destructive": sum(r["destructive"] for r in clean),
            "fault_accuracy": round(_accuracy(faulty), 2),
            "fault_dcr": _dcr(faulty),
            "fault_dcr_counts": _dcr_counts(faulty),
            "fault_spread": _spread(faulty),
            "recall": {k: f"{h}/{n}" for k, (h, n) in sorted(kinds.items())},
            "recall_semantic_kinds": _pooled(kinds, exclude=("numeric_parameter",)),
            "recall_all": _pooled(kinds),
            "tool_calls": dict(tools),
            "executable_constraints_per_state": round(
                sum(r.get("coded", 0) for r in clean) / max(sum(r.get("states", 0) for r in clean), 1), 2
            ),
            "model_calls_per_rollout": round(
                sum(r["model_calls"] for r in clean + faulty) / max(len(clean + faulty), 1), 2
            ),
            "seconds_per_call": round(
                sum(r["model_s"] for r in clean + faulty)
                / max(sum(r["model_calls"] for r in clean + faulty), 1),
                2,
            ),
            "false_repair_checks": sorted({c for r in clean for rep in r["repairs"] for c in rep["checks"]}),
        }
    return report


def _points(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.1f}"


def _names_fault(rep: dict[str, Any], turn: int, footprint: set[str]) -> bool:
    """A repair at the faulty turn naming one of its variables, or at a later turn naming one of
    them other than the scratch `result` every turn rebinds (a later turn's own `result` is not
    evidence about the faulty turn)."""
    if rep["turn"] is None or rep["turn"] < turn:
        return False
    names = set(rep["variables"]) & footprint
    return bool(names if rep["turn"] == turn else names - {"result"})


def _pooled(kinds: dict[str, list[int]], exclude: tuple[str, ...] = ()) -> str:
    hit = sum(h for k, (h, _) in kinds.items() if k not in exclude)
    total = sum(n for k, (_, n) in kinds.items() if k not in exclude)
    return f"{hit}/{total} ({100.0 * hit / max(total, 1):.0f}%)"


def render(report: dict[str, Any]) -> str:
    lines = [
        f"baseline: clean accuracy {report['baseline_clean_accuracy']:.1f}%, "
        f"accuracy on single-mistake variants {report['baseline_fault_accuracy']:.1f}%, "
        f"DCR there {_dcr_text(report.get('baseline_fault_dcr'), report.get('baseline_fault_dcr_counts'))}"
        + _spread_text(report.get("baseline_fault_spread"))
    ]
    for setting, s in report["settings"].items():
        lines.append(
            f"\n[{setting}] clean accuracy {s['clean_accuracy']:.1f}%, false repairs "
            f"{s['false_repairs_per_100_turns']:.2f}/100 clean turns ({', '.join(s['false_repair_checks']) or 'none'}), "
            f"destructive on clean {s['clean_destructive']}, accuracy on mistake variants {s['fault_accuracy']:.1f}%, "
            f"DCR there {_dcr_text(s.get('fault_dcr'), s.get('fault_dcr_counts'))}"
            + _spread_text(s.get("fault_spread"))
        )
        lines.append(
            f"  recall: semantic kinds {s['recall_semantic_kinds']}, all {s['recall_all']}; per kind: "
            + ", ".join(f"{k} {v}" for k, v in s["recall"].items())
        )
        lines.append(
            f"  tool calls: {s['tool_calls']}; executable constraints per state (clean runs): "
            f"{s['executable_constraints_per_state']:.2f}"
        )
        if s["model_calls_per_rollout"]:
            lines.append(
                f"  model: {s['model_calls_per_rollout']:.1f} calls per rollout, "
                f"{s['seconds_per_call']:.1f} s per call"
            )
    lines.append(f"\nwall time {report.get('wall_s', 0):.0f} s")
    return "\n".join(lines)


@hydra.main(version_base=None, config_path="../../configs", config_name="perf_semantic")
def main(cfg: DictConfig) -> None:
    print(OmegaConf.to_yaml(cfg, resolve=True) if cfg.get("verbose") else "", end="")
    print(render(run(cfg)))


if __name__ == "__main__":
    main()
