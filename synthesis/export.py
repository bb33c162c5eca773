"""SFT corpus and RL prompts from kept manager trajectories (paper B.3, B.4), with corpus statistics.

    python -m synthesis.export TASKS_DIR OUT_DIR --seed 0

For every built task under TASKS_DIR, `synthesis.trajectories.generate` runs the clean and the
counterfactual rollouts (repair, heavy, abandon, benign, auto; cached per task under
OUT_DIR/records, so a rerun resumes; parallel over processes or, with `--backend ray`, over a Ray
cluster); the kept ones become
* SFT samples (`OUT_DIR/sft`, a Hugging Face `datasets` dataset saved with `save_to_disk`, plus a
  README.md card): one ATOMIC sample per manager activation -- the system prompt of the task's
  lifecycle regime (turn-aligned or segment-induced), the task so far and that activation's
  observation, the accepted tool calls with their results, and exactly one control action last --
  and one FULL sample per trajectory concatenating all activations (atomic samples identical to an
  earlier one -- a variant's replay of the clean prefix -- are written once). Columns also say the regime,
  the flow, the teacher that produced the row and whether it is a benign hard negative;
* RL prompts (`OUT_DIR/rl/prompts.parquet`, verl's layout) for every verification decision point,
  labelled with the expected control action and, for a repair, the affected variables; `extra_info`
  carries the decision point, the flow, the worker prefix with the teacher's plan (which
  `training.rl.prefix` replays) and the labels (g_i, benign);
* `OUT_DIR/corpus_stats.json` (`stateguard.corpus_stats.CorpusStats`): actions, tools, constraints
  per state, relations, repairs by kind, interventions by kind, regimes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from tqdm import tqdm

from stateguard.actions import RepairArgs, tool_schemas
from stateguard.artifacts.corpus_records import (
    RecordsKey,
    load_key,
    load_records,
    observation_of,
    save_records,
)
from stateguard.artifacts.export_summary import ExportSummary, save_export_summary
from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.rl_prompts import (
    RlExtraInfo,
    RlGroundTruth,
    RlLabels,
    RlMessage,
    RlPromptRow,
    RlRewardSpec,
    RlWorkerPrefix,
    write_rl_prompts,
)
from stateguard.artifacts.run_folder import CorpusFolder
from stateguard.artifacts.sft_rows import SftKind, SftRow, write_sft_rows
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.corpus_stats import render_markdown
from stateguard.policies.prompts import system_prompt, task_block
from stateguard.task import Task
from stateguard.trace_payloads import named_args
from synthesis.stats import corpus_stats
from synthesis.teacher import TEACHER_VERSION, ActivationLog, flow_named
from synthesis.trajectories import TrajectoryRecord, generate, load_built_task, rejection_counts

__all__ = [
    "ExportOptions",
    "activation_messages",
    "build_samples",
    "AtomicDedup",
    "export",
    "main",
    "rl_prompts",
    "write_rl",
    "write_sft_card",
]

ABILITY = "state_management"
DATA_SOURCE = "stateguard_synth"


def _observation(act: ActivationLog) -> str:
    return "OBSERVATION\n" + json.dumps(act.observation, default=str)


def activation_messages(act: ActivationLog, prefix: str) -> list[dict[str, Any]]:
    """user (prefix + observation), then assistant tool-call batches with tool results, ending in
    one assistant message holding exactly one control action. Rejected proposals are left out."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": f"{prefix}{_observation(act)}"}]
    pending: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            msgs.append({"role": "assistant", "content": "", "tool_calls": list(pending)})
            msgs.extend(results)
            pending.clear()
            results.clear()

    for k, action in enumerate(a for a in act.actions if a.accepted):
        call = {
            "id": f"call_{act.index}_{k}",
            "type": "function",
            "function": {"name": action.name, "arguments": json.dumps(action.arguments, sort_keys=True)},
        }
        if action.control:
            flush()
            msgs.append({"role": "assistant", "content": "", "tool_calls": [call]})
            break
        pending.append(call)
        results.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "name": action.name,
                "content": json.dumps(action.tool_result, default=str, sort_keys=True),
            }
        )
    return msgs


def _row(
    rec: TrajectoryRecord,
    tools: str,
    kind: SftKind,
    activation: int,
    turn: int,
    relations: str,
    messages: str,
) -> SftRow:
    iv = rec.intervention
    return SftRow(
        variant=rec.variant,
        task_id=rec.task_id,
        trajectory_id=rec.trajectory_id,
        tools=tools,
        intervention_kind=iv.kind.value if iv else "none",
        intervention_op=iv.operation if iv else "none",
        t_star=rec.t_star if rec.t_star is not None else -1,
        benign=rec.benign,
        flow=rec.flow,
        regime=flow_named(rec.flow).regime.value,
        teacher=rec.teacher,
        kind=kind,
        activation=activation,
        turn=turn,
        relations=relations,
        messages=messages,
    )


def _system(rec: TrajectoryRecord) -> dict[str, Any]:
    return {"role": "system", "content": system_prompt(flow_named(rec.flow).regime)}


def _relations(graph: dict[int, list[str]], turns: list[int]) -> str:
    return json.dumps(sorted({r for t in turns for r in graph.get(t, [])}))


def build_samples(rec: TrajectoryRecord, task: Task, relations: dict[int, list[str]]) -> list[SftRow]:
    system = _system(rec)
    tools = json.dumps(tool_schemas())
    samples = []
    full: list[dict[str, Any]] = [system]
    seen_turn: int | None = None
    for act in rec.activations:
        turn = act.turn
        atomic = [system, *activation_messages(act, task_block(task.agent_view(), turn) + "\n\n")]
        samples.append(
            _row(
                rec,
                tools,
                SftKind.ATOMIC,
                act.index,
                turn or 0,
                _relations(relations, [turn] if turn else []),
                json.dumps(atomic),
            )
        )
        if seen_turn is None:
            prefix = task_block(task.agent_view(), turn) + "\n\n"
        elif turn != seen_turn and turn is not None:
            prefix = f"Turn {turn}: {task.turn(turn).prompt()}\n\n"
        else:
            prefix = ""
        seen_turn = turn
        full.extend(activation_messages(act, prefix))
    samples.append(
        _row(rec, tools, SftKind.FULL, -1, 0, _relations(relations, list(relations)), json.dumps(full))
    )
    return samples


class AtomicDedup:
    """Atomic samples with the same messages pass once (the first: the clean run's, then the variants
    in order). Every variant of a task replays the clean run up to its intervention, so without this
    the decisions before t* would be weighted by the number of variants; full samples all differ.
    Streaming: only the hashes of the messages seen are kept."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.dropped = 0

    def keep(self, sample: SftRow) -> bool:
        if sample.kind is SftKind.ATOMIC:
            digest = hashlib.sha256(sample.messages.encode("utf-8")).hexdigest()
            if digest in self.seen:
                self.dropped += 1
                return False
            self.seen.add(digest)
        return True


def _faulty_now(rec: TrajectoryRecord, act: ActivationLog) -> bool:
    """At this decision point, is the state under review the one θ' changed, still computed by θ'?
    (The latest run of the fault turn up to the observed steps is a faulty one: before any retry, or
    after a retry that repeated the mistake.)"""
    if rec.t_star is None or rec.variant == "clean":
        return False
    segmented = rec.plan is not None and bool(rec.plan.segments)
    if (act.segment != rec.stage) if segmented else (act.turn != rec.t_star):
        return False
    end = observation_of(act).pending_end_step
    runs = [
        s
        for s in rec.worker_steps
        if s.turn == rec.t_star
        and s.purpose in ("faulty", "recompute")
        and end is not None
        and s.index <= end
    ]
    return bool(runs) and runs[-1].purpose == "faulty"


def rl_prompts(rec: TrajectoryRecord, task: Task) -> list[RlPromptRow]:
    """One verl row per verification decision point (activations at stage 'updated')."""
    rows = []
    system = _system(rec)
    last_step = -1
    plan = rec.plan.model_dump(mode="json") if rec.plan is not None else None
    for act in rec.activations:
        obs = observation_of(act)
        last_step = obs.pending_end_step or last_step
        if obs.stage != "updated" or act.turn is None:
            continue
        control = next((a for a in act.actions if a.accepted and a.control), None)
        if control is None:
            continue
        repair = named_args(control.name, control.arguments, RepairArgs)
        iv = rec.intervention
        if repair is None:
            truth = RlGroundTruth(action=control.name)
        else:
            truth = RlGroundTruth(
                action=control.name,
                affected_variables=list(repair.error_hint.error_variables),
                intervention_kind=iv.kind.value if iv else None,
            )
        # g_i (Eq. 30): an inconsistency is present exactly when the state under review is the one
        # θ' changed and θ' is still what computed it; a benign θ' is never an inconsistency.
        faulty = _faulty_now(rec, act)
        inconsistent = faulty and not rec.benign
        labels = RlLabels(
            g=int(inconsistent),
            benign=bool(faulty and rec.benign),
            affected_variables=truth.affected_variables
            or ([rec.stage] if inconsistent and rec.stage is not None else []),
            intervention_kind=truth.intervention_kind or (iv.kind.value if faulty and iv else None),
        )
        user = {
            "role": "user",
            "content": task_block(task.agent_view(), act.turn) + "\n\n" + _observation(act),
        }
        rows.append(
            RlPromptRow(
                data_source=DATA_SOURCE,
                prompt=[RlMessage.model_validate(system), RlMessage.model_validate(user)],
                ability=ABILITY,
                reward_model=RlRewardSpec(style="rule", ground_truth=truth.to_json()),
                extra_info=RlExtraInfo(
                    task_id=rec.task_id,
                    turn=act.turn,
                    decision_point=act.index,
                    variant=rec.variant,
                    flow=rec.flow,
                    teacher=rec.teacher,
                    worker_prefix=RlWorkerPrefix(
                        trajectory_id=rec.trajectory_id,
                        fault_turn=rec.t_star,
                        faulty_code=rec.faulty_code,
                        worker_step_upto=last_step,
                        plan=plan,
                    ).to_json(),
                    labels=labels.to_json(),
                ),
            )
        )
    return rows


def _relation_map(task_dir: Path) -> dict[int, list[str]]:
    graph = load_graph(TaskFolder(task_dir))
    return {s.turn_id: sorted({r.type.value for r in s.relations}) for s in graph.stages}


def write_sft_card(samples: list[SftRow], out: Path, rejections: dict[str, int]) -> None:
    """The SFT folder's README.md, from the written samples (their text is not needed)."""
    by = Counter((s.variant, s.kind.value) for s in samples)
    kinds = Counter(s.intervention_kind for s in samples if s.kind is SftKind.FULL)
    lines = [
        "# StateGuard manager SFT corpus (synthesized)",
        "",
        "Manager demonstrations from real rollouts of synthesized tasks: the scripted worker with an optional "
        "counterfactual intervention, the shared teacher (synthesis.teacher) demonstrating verification, kept by "
        "Keep(τ). Columns: messages (JSON chat), tools (JSON tool schemas), variant (clean, repair, heavy, abandon, "
        "benign, auto), kind (atomic, full), task_id, trajectory_id, turn, activation, relations, intervention_kind, "
        "intervention_op, t_star, benign (a hard negative: the intervention changed nothing), flow (longds, dabstep, "
        "dacomp_de), regime (turn_aligned, segment_induced: which system prompt), teacher.",
        "",
        f"Samples: {len(samples)}",
        "",
        "| variant | kind | count |",
        "|---|---|---|",
        *[f"| {v} | {k} | {n} |" for (v, k), n in sorted(by.items())],
        "",
        "Trajectories by intervention kind:",
        "",
        *[f"- {k}: {n}" for k, n in sorted(kinds.items())],
        "",
        f"Rejected trajectories by reason: {json.dumps(rejections)}",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def write_rl(rows: list[RlPromptRow], path: Path) -> None:
    write_rl_prompts(path, rows)


class ExportOptions(BaseModel):
    seed: int = 0
    repairs: int = Field(2, ge=0, description="repair trajectories kept per task (at most)")
    autos: int = Field(1, ge=0, description="auto trajectories kept per task (at most; turn-aligned tasks)")
    benign: int = Field(1, ge=0, description="benign hard negatives kept per task (at most)")
    heavy: int = Field(1, ge=0, description="light-then-heavy repair trajectories kept per task (at most)")
    abandon: int = Field(
        1, ge=0, description="exhausted-budget trajectories kept per task (at most; turn-aligned)"
    )
    max_trajectories: int | None = Field(None, ge=1, description="stop adding tasks once this many are kept")
    workers: int = Field(
        1, ge=1, description="processes (backend=process) or Ray tasks in flight (backend=ray)"
    )
    backend: str = Field("process", description="process | ray")
    teacher: str = Field(
        "rules", description="rules | llm (auto branches decided by an OpenAI-compatible model)"
    )
    progress: bool = True


def _task_records(root: Path, out: Path, opts: ExportOptions) -> list[TrajectoryRecord]:
    """The trajectories of one task, cached in `out/records/<task_id>.jsonl` (a rerun resumes)."""
    params = opts.model_dump(include={"seed", "repairs", "autos", "benign", "heavy", "abandon", "teacher"})
    key = RecordsKey(**params, version=TEACHER_VERSION)
    cache = CorpusFolder(out).record_file(root.name)
    if load_key(cache) == key:
        return load_records(cache)[1]
    recs = generate(root, out, **params)
    save_records(cache, key, recs)  # atomic: a killed export never leaves a half-written cache
    return recs


def _records_by_task(roots: list[Path], out: Path, opts: ExportOptions) -> dict[Path, list[TrajectoryRecord]]:
    done: dict[Path, list[TrajectoryRecord]] = {}
    kept = 0
    with tqdm(total=len(roots), desc="trajectories", unit="task", disable=not opts.progress) as bar:
        if opts.backend == "ray":
            from stateguard.parallel import map_tasks  # needs the `rl` extra (ray)

            for root, recs in map_tasks(_task_records, roots, out, opts, in_flight=opts.workers):
                done[root] = recs
                bar.update()
        elif opts.workers > 1 and len(roots) > 1:
            with ProcessPoolExecutor(
                max_workers=opts.workers, mp_context=get_context("spawn")
            ) as pool:  # fork: see pipeline.py
                futures = {pool.submit(_task_records, r, out, opts): r for r in roots}
                for fut in as_completed(futures):
                    done[futures[fut]] = fut.result()
                    bar.update()
        else:
            for root in roots:
                if opts.max_trajectories is not None and kept >= opts.max_trajectories:
                    break
                done[root] = _task_records(root, out, opts)
                kept += sum(r.keep for r in done[root])
                bar.update()
    return done


def export(
    tasks_dir: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    repairs: int = 2,
    autos: int = 1,
    benign: int = 1,
    heavy: int = 1,
    abandon: int = 1,
    max_trajectories: int | None = None,
    workers: int = 1,
    backend: str = "process",
    progress: bool = False,
    teacher: str = "rules",
    started: float | None = None,
) -> dict[str, Any]:
    """Trajectories for every built task under `tasks_dir` -> SFT dataset + RL parquet under `out_dir`.

    Deterministic for a seed whatever the parallelism: tasks are processed in name order and
    their records cached per task, so an interrupted export resumes where it stopped.
    """
    opts = ExportOptions(
        seed=seed,
        repairs=repairs,
        autos=autos,
        benign=benign,
        heavy=heavy,
        abandon=abandon,
        max_trajectories=max_trajectories,
        workers=workers,
        backend=backend,
        progress=progress,
        teacher=teacher,
    )
    if opts.backend not in ("process", "ray"):
        raise ValueError(f"export backend={opts.backend!r}: use process or ray")
    start = time.perf_counter()
    out = Path(out_dir)
    roots = sorted(p for p in Path(tasks_dir).glob("*") if TaskFolder(p).task.is_file())
    by_task = _records_by_task(roots, out, opts)
    records: list[TrajectoryRecord] = []
    kept: list[TrajectoryRecord] = []
    written: list[SftRow] = []  # the samples written, without their chat and tool schemas (counts only)
    rows: list[RlPromptRow] = []
    dedup = AtomicDedup()
    n_kept = 0

    def stream() -> Iterator[SftRow]:
        """The SFT samples task by task, straight to disk: the corpus is never held in memory whole."""
        nonlocal n_kept
        for root in sorted(by_task):
            if opts.max_trajectories is not None and n_kept >= opts.max_trajectories:
                break
            task = load_built_task(root)
            relations = _relation_map(root)
            recs = by_task[root]
            records.extend(recs)
            for rec in recs:
                if rec.keep and (opts.max_trajectories is None or n_kept < opts.max_trajectories):
                    n_kept += 1
                    kept.append(rec)
                    for sample in build_samples(rec, task, relations):
                        if dedup.keep(sample):
                            written.append(sample.model_copy(update={"messages": "", "tools": ""}))
                            yield sample
                    rows.extend(rl_prompts(rec, task))

    write_sft_rows(CorpusFolder(out).sft, stream())
    samples, duplicates = written, dedup.dropped
    rejections = rejection_counts(records)
    write_sft_card(samples, CorpusFolder(out).sft, rejections)
    write_rl(rows, CorpusFolder(out).rl_prompts)
    summary = ExportSummary(
        tasks=len(by_task),
        trajectories=len(records),
        kept=n_kept,
        kept_by_variant=dict(sorted(Counter(r.variant for r in records if r.keep).items())),
        attempted_by_variant=dict(sorted(Counter(r.variant for r in records).items())),
        rejections=rejections,
        sft_samples=dict(Counter(s.kind.value for s in samples)),
        sft_duplicates_dropped=duplicates,
        rl_prompts=len(rows),
        rl_by_action=dict(Counter(r.reward_model.truth().action for r in rows)),
        rl_inconsistent=sum(r.extra_info.label().g for r in rows),
        elapsed_s=round(time.perf_counter() - start, 2),
    )
    stats = corpus_stats(
        kept,
        records,
        samples,
        rows,
        tasks=len(by_task),
        elapsed_s=time.perf_counter() - (started if started is not None else start),
    )
    CorpusFolder(out).corpus_stats.write_text(stats.model_dump_json(indent=1) + "\n", encoding="utf-8")
    CorpusFolder(out).corpus_stats_table.write_text(render_markdown(stats), encoding="utf-8")
    summary.benign_share = round(stats.benign_share, 4)
    save_export_summary(CorpusFolder(out).export_summary, summary)
    return summary.model_dump(mode="json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m synthesis.export", description=__doc__.splitlines()[0])
    parser.add_argument("tasks_dir", help="folder of built tasks (<task_id>/agent, hidden)")
    parser.add_argument(
        "out_dir", help="receives sft/ (datasets), rl/prompts.parquet, runs/ and export_summary.json"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repairs", type=int, default=2, help="repair trajectories kept per task (at most)")
    parser.add_argument("--autos", type=int, default=1, help="auto trajectories kept per task (at most)")
    parser.add_argument("--benign", type=int, default=1, help="benign hard negatives kept per task (at most)")
    parser.add_argument(
        "--heavy", type=int, default=1, help="light-then-heavy repair trajectories per task (at most)"
    )
    parser.add_argument(
        "--abandon", type=int, default=1, help="exhausted-budget trajectories per task (at most)"
    )
    parser.add_argument("--max-trajectories", type=int, default=None, help="cap on kept trajectories")
    parser.add_argument("--workers", type=int, default=1, help="parallel processes (or Ray tasks in flight)")
    parser.add_argument("--backend", choices=["process", "ray"], default="process")
    parser.add_argument(
        "--teacher",
        choices=["rules", "llm"],
        default="rules",
        help="llm: auto branches decided by the STATEGUARD_MANAGER_* endpoint (rules checks first)",
    )
    args = parser.parse_args(argv)
    summary = export(
        args.tasks_dir,
        args.out_dir,
        seed=args.seed,
        repairs=args.repairs,
        autos=args.autos,
        benign=args.benign,
        heavy=args.heavy,
        abandon=args.abandon,
        max_trajectories=args.max_trajectories,
        workers=args.workers,
        backend=args.backend,
        progress=True,
        teacher=args.teacher,
    )
    print(json.dumps(summary, indent=1))
    print(CorpusFolder(Path(args.out_dir)).corpus_stats_table.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
