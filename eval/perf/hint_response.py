"""How a real model answers repair hints, measured on set-up turns (issue 30, item 3).

Real-model runs gave 34 true hints and no false one, so P(break | false hint) had no sample. Here
each case is set up instead (`eval.perf.hint_items`): a declared mistake of the dev set at its turn,
with the hint the `rules` manager (semantic verification on) gives on it (`hint_harvest`), run twice:

* true hint: the mistake's variant; the scripted worker replays the reference prefix and the
  faulty first attempt of the turn, the model sees them as its own work, gets the hint and goes on
  with the real LLM worker loop (`stateguard.workers.handover`). Outcome: fixed (right at the end);
* false hint: the clean variant, the reference first attempt (right), the same hint. Outcome:
  broken (wrong at the end).

Both are judged by the dev set's own answer checker. One JSONL line per item (`out`); a rerun skips
the items already there (`resume`), and the manager's hints are kept in `hints_file`, so no
scripted run is repeated. The first run records its pairs beside `out` (`<out>.pairs.jsonl`: task,
mistake, turn, kind, hint); a resume runs exactly those, whatever the dev set has gained since, and
stops with an error naming the pairs it cannot find (`pairs_from` reuses another run's pairs, so a
second model answers the same items). Prints P(fix | true hint) and P(break | false hint) with Wilson 95%
intervals, per model and per kind, and writes them beside `out` (`<out>.summary.json`).

    python scripts/serve_local.py --gguf <file>.gguf --port 8791 --threads 1 &
    STATEGUARD_WORKER_BASE_URL=http://127.0.0.1:8791/v1 STATEGUARD_WORKER_MODEL=qwen2.5-coder-0.5b \\
      nice -n 5 python -m eval.perf.hint_response pairs=30 out=docs/results/llm_worker_dev/hints-05b.jsonl
    python -m eval.perf.hint_response --help
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.registry import get_benchmark
from eval.components import endpoint_settings, make_workspace
from eval.metrics.wilson import wilson
from eval.perf.hint_harvest import cut_after, manager_hint
from eval.perf.hint_items import HintItem, HintPair, HintRecord, choose_pairs, fault_kind, items_of
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.hints import Hint
from stateguard.rollout import rollout
from stateguard.trace import Trace
from stateguard.workers.handover import HandoverWorker
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workers.registry import WORKERS, WorkerSetup
from stateguard.workers.response import ResponseModel
from stateguard.workers.scripted import FaultModel, ScriptedWorker

__all__ = [
    "PairsError",
    "check_pairs",
    "load_done",
    "pairs_file",
    "pairs_with_hints",
    "read_pairs",
    "run",
    "run_item",
    "summarize",
    "tagged_code",
    "write_pairs",
]

KINDS = ("counterfactual", "stale", "precision")
# What the model is sent of the turns before the item's turn (the LLM worker's compaction levels):
# full: everything; answers: each earlier turn's question and answer; none: the current turn only
# (it still opens with the session's data frames). On a loaded 2-core CPU the 0.5B model read
# prompts at about 26 tokens/s, so a late turn's full history (6,500 tokens) outran a 150 s cap.
HISTORY = {"full": 0, "answers": 2, "none": 3}  # exec_error hints name a failure, not a mistake


def tagged_code(code: str) -> str:
    """A code reply in the dev set's (LongDS's) tagged form."""
    return f"<python>\n{code}\n</python>"


def load_done(path: Path) -> dict[str, dict[str, Any]]:
    """Items already run (item id -> record); a line that does not parse, or a crashed item, is not done."""
    done: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = HintRecord.model_validate_json(line)
            except ValueError:
                continue
            if record.error is None:
                done[record.item] = record.model_dump(mode="json")
    return done


class PairsError(ValueError):
    """The recorded pairs do not fit this run (a pair's task is not loaded, or `pairs` differs)."""


def pairs_file(out: Path) -> Path:
    """Where a run records its pairs: beside `out`, as `<out>.pairs.jsonl` (one HintPair per line)."""
    return Path(f"{out}.pairs.jsonl")


def read_pairs(path: Path) -> list[HintPair]:
    return [
        HintPair.model_validate_json(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def write_pairs(path: Path, pairs: list[HintPair]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(p.model_dump_json() + "\n" for p in pairs), encoding="utf-8")


def check_pairs(pairs: list[HintPair], by_id: dict[str, EvalTask], source: Path) -> None:
    """PairsError unless every recorded pair's two tasks (its mistake's variant and the clean one) are
    loaded, with the mistake at the recorded turn and of the recorded kind."""
    problems = []
    for n, pair in enumerate(pairs, 1):
        name = f"pair {n} ({pair.task_id}~{pair.variant}, turn {pair.turn})"
        missing = [t for t in (f"{pair.task_id}~{pair.variant}", pair.task_id) if t not in by_id]
        if missing:
            problems.append(f"{name}: {', '.join(missing)} not in the loaded tasks")
            continue
        variant = by_id[f"{pair.task_id}~{pair.variant}"]
        if (
            len(variant.faults) != 1
            or int(variant.faults[0].turn) != pair.turn
            or fault_kind(variant) != pair.kind
        ):
            problems.append(
                f"{name}: the dev set's {pair.variant} is no longer a {pair.kind} mistake at that turn"
            )
    if problems:
        raise PairsError(
            f"{len(problems)} of the {len(pairs)} pairs recorded in {source} cannot be run: "
            + "; ".join(problems)
            + ". Load the tasks they came from (data_dir, bench.variants, task_ids), or start a new `out`."
        )


def pairs_with_hints(
    tasks: list[EvalTask],
    bench: Benchmark,
    *,
    want: int,
    per_task: int,
    hints_file: Path,
    work_dir: Path,
    harvest: Callable[[EvalTask, int], Hint | None] | None = None,
) -> list[HintPair]:
    """`want` pairs: the chosen mistakes (`choose_pairs`) in order, each with the manager's hint;
    one the manager does not flag is passed over. Each harvest is appended to `hints_file` (a hint
    or null), which later runs read instead of running the scripted worker again."""
    known: dict[str, dict[str, Any] | None] = {}
    if hints_file.is_file():
        for line in hints_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                known[row["variant_id"]] = row["hint"]
    candidates = [t for t in tasks if len(t.faults) == 1 and t.faults[0].kind in KINDS]
    harvest = harvest or (
        lambda task, turn: manager_hint(
            task, turn, bench.flow, work_dir / "harvest" / task.task_id.replace("/", "__")
        )
    )
    pairs: list[HintPair] = []
    for task in choose_pairs(candidates, per_task=per_task):
        if len(pairs) >= want:
            break
        turn = int(task.faults[0].turn)
        if task.task_id not in known:
            hint = harvest(task, turn)
            known[task.task_id] = None if hint is None else hint.model_dump(mode="json")
            hints_file.parent.mkdir(parents=True, exist_ok=True)
            with hints_file.open("a", encoding="utf-8") as fh:
                fh.write(
                    json.dumps({"variant_id": task.task_id, "turn": turn, "hint": known[task.task_id]}) + "\n"
                )
        found = known[task.task_id]
        if found is not None:
            pairs.append(
                HintPair(
                    task_id=task.base_task or task.task_id,
                    variant=task.variant,
                    turn=turn,
                    kind=fault_kind(task),
                    hint=Hint.model_validate(found),
                    hint_source="manager",
                )
            )
    return pairs


def run_item(
    item: HintItem,
    task: EvalTask,
    bench: Benchmark,
    llm: LLMWorker,
    folder: Path,
    sandbox: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one item in `folder` (removed after) and judge its turn's first and final answers."""
    turn = item.pair.turn
    cut = cut_after(task, turn)
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    workspace = make_workspace("sandbox", cut.data_dir, folder, sandbox)
    try:
        scripted = ScriptedWorker(
            FaultModel(faults=cut.faults), ResponseModel(p_flip=0.0), reference=cut.task
        )
        worker = HandoverWorker(scripted, llm, turn=turn, hint=item.pair.hint, code_reply=tagged_code)
        result = rollout(
            cut.task.agent_view(), worker, workspace, flow=bench.flow, manager=None, run_dir=folder
        )
    finally:
        workspace.close()
        shutil.rmtree(folder, ignore_errors=True)
    first = bench.score(cut, {turn: worker.first_answer}).get(turn)
    final_answer = result.answers.get(turn)
    final = bench.score(cut, {turn: final_answer}).get(turn)
    return {
        "first_answer": worker.first_answer,
        "first_correct": first,
        "handed_over": worker.handed_over,
        "cells": worker.model_cells,
        "final_answer": final_answer,
        "correct": final,
        "outcome": _outcome(item, first, final),
        "model_s": round(llm.model_s, 1),
        "model_calls": sum(1 for c in worker.model_cells if c.get("failure") is None),  # replies
        "wall_s": round(time.perf_counter() - started, 1),
    }


def _outcome(item: HintItem, first: bool | None, final: bool | None) -> str:
    if item.truth == "true":
        return "fixed" if final else "not_fixed"
    return "kept" if final else "broken"


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model: P(fix | true hint) and P(break | false hint), overall and per kind, with Wilson
    95% intervals; counted over items whose first attempt was as set up (wrong / right) and where
    the model replied at least once after the hint (an item whose every call failed or timed out
    says nothing about the hint: counted apart as `no_reply_*`)."""
    out: dict[str, Any] = {}
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("error") is None:
            by_model[str(r.get("model"))].append(r)
    for model, rows in sorted(by_model.items()):
        entry: dict[str, Any] = {}
        for truth, event in (("true", "fixed"), ("false", "broken")):
            mine = [r for r in rows if r["truth"] == truth]
            valid = [
                r for r in mine if r["first_correct"] == (truth == "false") and r.get("model_calls", 1) > 0
            ]
            groups: dict[str, list[dict[str, Any]]] = {"all": valid}
            for r in valid:
                groups.setdefault(r["kind"], []).append(r)
            entry[f"p_{'fix' if truth == 'true' else 'break'}"] = {
                name: _rate(sum(1 for r in g if r["outcome"] == event), len(g)) for name, g in groups.items()
            }
            entry[f"set_up_wrong_{truth}"] = sum(1 for r in mine if r["first_correct"] != (truth == "false"))
            entry[f"no_reply_{truth}"] = sum(1 for r in mine if r.get("model_calls", 1) == 0)
        entry["model_s_per_item"] = round(sum(r["model_s"] for r in rows) / max(len(rows), 1), 1)
        entry["items"] = len(rows)
        out[model] = entry
    return out


def _rate(k: int, n: int) -> dict[str, Any]:
    interval = wilson(k, n)
    return {
        "k": k,
        "n": n,
        "rate": None if n == 0 else round(k / n, 3),
        "wilson95": interval and [round(x, 3) for x in interval],
    }


def render(summary: dict[str, Any]) -> str:
    lines = []
    for model, entry in summary.items():
        lines.append(f"model {model}: {entry['items']} items, {entry['model_s_per_item']} model s per item")
        for key, label in (("p_fix", "P(fix | true hint)"), ("p_break", "P(break | false hint)")):
            for name, r in entry[key].items():
                ci = (
                    "no sample"
                    if r["wilson95"] is None
                    else f"[{r['wilson95'][0]:.2f}, {r['wilson95'][1]:.2f}]"
                )
                lines.append(f"  {label:22s} {name:22s} {r['k']:3d}/{r['n']:<3d} {ci}")
    return "\n".join(lines)


def run(cfg: DictConfig, client: Any | None = None) -> dict[str, Any]:
    """Build the pairs, run every item not yet in `out` (none with `summarize_only`), and summarize
    all of `out`. `client`: a chat client for the model (tests pass a scripted one); by default the
    STATEGUARD_WORKER_* endpoint."""
    bench = get_benchmark(cfg.bench.name)
    raw = OmegaConf.to_container(cfg.bench, resolve=True)
    bench_cfg: dict[str, Any] = {str(k): v for k, v in raw.items()} if isinstance(raw, dict) else {}
    if cfg.data_dir:
        bench_cfg["data_dir"] = cfg.data_dir
    tasks = bench.load(bench_cfg)
    if cfg.task_ids:
        wanted = {str(x).replace("/", "__") for x in cfg.task_ids}  # as written or as stored
        tasks = [t for t in tasks if (t.base_task or t.task_id) in wanted]
    out, work = Path(cfg.out), Path(cfg.work_dir)
    by_id = {t.task_id: t for t in tasks}
    done = load_done(out) if cfg.resume else {}
    if not cfg.resume and out.exists():
        out.unlink()
    pairs = [] if cfg.summarize_only else _pairs(cfg, tasks, bench, by_id, out, work, done)
    todo = [i for i in items_of(pairs) if i.item_id not in done]
    worker_llm = dict(OmegaConf.to_container(cfg.worker_llm, resolve=True) or {})  # type: ignore[arg-type]
    model = cfg.model or os.environ.get("STATEGUARD_WORKER_MODEL") or "unnamed"
    if cfg.history not in HISTORY:
        raise ValueError(f"history={cfg.history!r}: use one of {', '.join(HISTORY)}")
    sampling = {**{k: worker_llm.get(k) for k in ("temperature", "max_tokens")}, "history": cfg.history}
    out.parent.mkdir(parents=True, exist_ok=True)
    for item in tqdm(todo, desc="hint items", disable=not cfg.progress):
        base = item.pair.task_id
        task = by_id[base if item.truth == "false" else f"{base}~{item.pair.variant}"]
        folder = work / "items" / item.item_id.replace("/", "__")
        calls = Trace(RolloutFolder(folder.parent / (folder.name + "-calls")).llm_calls)
        record: dict[str, Any] = {
            "item": item.item_id,
            "model": model,
            "sampling": sampling,
            "task": base,
            "variant": item.run_variant,
            "fault_variant": item.pair.variant,
            "turn": item.pair.turn,
            "kind": item.pair.kind,
            "truth": item.truth,
            "hint": item.pair.hint.render(),
            "hint_source": item.pair.hint_source,
            "error": None,
        }
        try:
            llm = _worker(bench, task, worker_llm, calls, client, str(cfg.history))
            record.update(run_item(item, task, bench, llm, folder, cfg.get("sandbox")))
        except Exception as exc:  # noqa: BLE001 - a crashed item is recorded and rerun on resume
            record["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            calls.close()
            shutil.rmtree(folder.parent / (folder.name + "-calls"), ignore_errors=True)
        line = HintRecord.model_validate(record).model_dump_json(fallback=str)
        with out.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    records = (
        [
            HintRecord.model_validate_json(line).model_dump(mode="json")
            for line in out.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        if out.exists()
        else []
    )
    summary = summarize(records)
    Path(f"{out}.summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def _pairs(
    cfg: DictConfig,
    tasks: list[EvalTask],
    bench: Benchmark,
    by_id: dict[str, EvalTask],
    out: Path,
    work: Path,
    done: dict[str, dict[str, Any]],
) -> list[HintPair]:
    """The run's pairs: on resume the ones recorded beside `out`, exactly; else another run's
    (`pairs_from`, its first `pairs`) or a new choice (`pairs_with_hints`), recorded beside `out`."""
    recorded, want = pairs_file(out), int(cfg.pairs)
    if cfg.resume and recorded.is_file():
        pairs = read_pairs(recorded)
        if len(pairs) != want:
            raise PairsError(
                f"{recorded} records {len(pairs)} pairs and pairs={want}: a resume runs the recorded pairs; "
                f"pass pairs={len(pairs)}, or start a new `out` for another number"
            )
        check_pairs(pairs, by_id, recorded)
        return pairs
    if done:  # items without the pairs they came from: choosing again could pick other pairs
        raise PairsError(
            f"{out} has {len(done)} items but no recorded pairs ({recorded}); write that file with the pairs "
            "those items came from (one HintPair per line), or rerun from scratch with resume=false"
        )
    if cfg.get("pairs_from"):
        source = pairs_file(Path(cfg.pairs_from))
        if not source.is_file():
            raise PairsError(f"pairs_from={cfg.pairs_from}: no recorded pairs at {source}")
        pairs = read_pairs(source)[:want]
        if len(pairs) < want:
            raise PairsError(f"{source} records {len(pairs)} pairs, fewer than pairs={want}")
        check_pairs(pairs, by_id, source)
    else:
        pairs = pairs_with_hints(
            tasks,
            bench,
            want=want,
            per_task=int(cfg.per_task),
            hints_file=Path(cfg.hints_file),
            work_dir=work,
        )
    write_pairs(recorded, pairs)
    return pairs


def _worker(
    bench: Benchmark,
    task: EvalTask,
    worker_llm: dict[str, Any],
    calls: Trace,
    client: Any | None,
    history: str,
) -> LLMWorker:
    """The LLM worker as the runner builds it for `worker=llm`, with the item's model-time cap and
    the earlier turns compacted as `history` says."""
    from stateguard.llm import EndpointConfig, LLMClient  # noqa: PLC0415 - the openai client, only when used

    if client is None:
        client = LLMClient(EndpointConfig.from_env("worker", **endpoint_settings(worker_llm)), trace=calls)
    from_output = worker_llm.get("answer_from_output")
    setup = WorkerSetup(
        trace=calls,
        client=lambda: client,
        protocol=bench.worker_protocol(task),
        task_time_cap_s=worker_llm.get("task_time_cap_s"),
        answer_from_output=bool(from_output) if from_output is not None else False,
        compaction=HISTORY[history],
    )
    worker = WORKERS["llm"](setup)
    assert isinstance(worker, LLMWorker)
    return worker


@hydra.main(version_base=None, config_path="../../configs", config_name="perf_hint_response")
def main(cfg: DictConfig) -> None:
    print(render(run(cfg)))


if __name__ == "__main__":
    main()
