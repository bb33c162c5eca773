"""Harvest a real model's wrong turns into the natural bank, then confirm them by replay.

    python -m eval.benchmarks.natural.harvest add runs/llm15             # candidates from an LLM-worker dev run
    python -m eval.benchmarks.natural.harvest confirm                    # replay candidates, keep what reproduces
    make eval BENCH=natural                                              # the bank's detection report

`add` reads a saved `eval.runner bench=dev worker=llm` run. Every scored turn that an arm got
wrong (baseline and StateGuard alike: both are the model's own code), on which the model ran at
least one cell, becomes a candidate: θ' is the model's executed cells of that turn, in order
(failed ones included: they ran in its session too), preceded by the model's earlier cells that
define names θ' reads and the reference prefix does not define, and followed by the model's
answer (`answer_block`). A turn already in the bank with the same code is not added twice.

`confirm` replays the candidates with the scripted worker (`eval.runner bench=natural
bench.entries=candidates arms=[baseline] worker=scripted`) and marks each one `confirmed` or
`rejected` (`replay_verdict`).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import io
import json
import math
import re
import shutil
import subprocess
import sys
import tokenize
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from eval.benchmarks.natural.bank import BANK_FILE, DATA_ROOT, BankEntry, NaturalBank, load_bank, save_bank
from eval.metrics.natural import classify
from eval.results import read_results
from stateguard.artifacts.events import LlmCallEvent, WorkerStepData, WorkerStepEvent
from stateguard.artifacts.run_folder import LLM_CALLS_FILE, RolloutFolder, RunFolder
from stateguard.task import PRELUDE, Task
from stateguard.trace import read_trace
from stateguard.workers.output_answer import OUTPUT_ANSWER_SETUP

__all__ = [
    "one_block",
    "answer_block",
    "defined_names",
    "harvest_run",
    "numbers_reproduced",
    "replay_verdict",
    "support_cells",
    "with_session_helpers",
]

SUPPORT_MARK = "# natural bank: the model's own cell from turn {turn}"
ANSWER_MARK = "# natural bank: the model's answer, as it reported it"
HELPER_MARK = "# natural bank: the LLM worker's print_answer helper, as its session had it"
AS_TEXT_MARK = (
    "# natural bank: the model's cell, run as text (it does not parse, or a string in it holds a blank line)"
)
MAX_SUPPORT = 12
_BUILTINS = set(dir(builtins))
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def defined_names(code: str) -> set[str]:
    """Names a piece of code binds at any level (assignments, imports, defs, loop targets)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
    return out


def _loaded_names(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    seen = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return [n for n in dict.fromkeys(seen) if n not in _BUILTINS]


def support_cells(
    cells: Sequence[str], available: set[str], earlier: Sequence[tuple[int, str]]
) -> list[tuple[int, str]]:
    """The model's earlier cells (turn, code) that define names `cells` read and `available` (the
    reference prefix's names) lacks, with what they need in turn; in their original order."""
    chosen: dict[int, tuple[int, str]] = {}
    defined = set(available)
    wanted: list[str] = []
    for code in cells:
        wanted += [n for n in _loaded_names(code) if n not in defined]
        defined |= defined_names(code)
    while wanted and len(chosen) < MAX_SUPPORT:
        name = wanted.pop()
        if name in available:
            continue
        at = next(
            (
                i
                for i in range(len(earlier) - 1, -1, -1)
                if i not in chosen and name in defined_names(earlier[i][1])
            ),
            None,
        )
        if at is None:
            continue
        chosen[at] = earlier[at]
        available = available | defined_names(earlier[at][1])
        wanted += [n for n in _loaded_names(earlier[at][1]) if n not in available]
    return [chosen[i] for i in sorted(chosen)]


def one_block(cell: str) -> str:
    """The model's cell as one block of θ': the scripted worker cuts θ' at blank lines, which would
    run a cell's parts on after a part that raised. Blank lines become `#` lines; a cell that does
    not parse, or whose strings hold a blank line, runs as text (raising what it raised)."""
    code = cell.strip("\n")
    as_text = f"{AS_TEXT_MARK}\nexec(compile({code!r}, '<cell>', 'exec'))"
    try:
        ast.parse(code)
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (SyntaxError, tokenize.TokenError):
        return as_text
    lines = code.split("\n")
    inside = {
        n
        for t in tokens
        if t.start[0] != t.end[0] and t.type != tokenize.NL
        for n in range(t.start[0] + 1, t.end[0] + 1)
    }
    if any(not lines[n - 1].strip() for n in inside if n <= len(lines)):
        return as_text
    return "\n".join(line if line.strip() else "#" for line in lines)


def answer_block(answer: Any) -> str:
    """The cell that reports the model's answer as the scripted worker reports one (a printed JSON
    object; a bare value is wrapped as {"answer": value})."""
    body = answer if isinstance(answer, dict) else {"answer": answer}
    return f"{ANSWER_MARK}\nresult = json.loads({json.dumps(body)!r})\nprint(json.dumps(result))"


def with_session_helpers(parts: list[str]) -> list[str]:
    """The cells, after the LLM worker's `print_answer` helper when one of them calls it: the
    worker defined it in the model's session (`answer_from_output`), the scripted worker's replay
    has no such helper and would fail on the name."""
    if not any("print_answer" in _loaded_names(c) for c in parts):
        return parts
    return [f"{HELPER_MARK}\n{one_block(OUTPUT_ANSWER_SETUP)}", *parts]


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "answer_type":
                yield from _scalars(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _scalars(v)
    elif not isinstance(value, bool) and value is not None:
        yield value


def numbers_reproduced(answer: Any, output: str) -> list[str]:
    """The numbers and texts of `answer` that `output` does not show (empty: all reproduced). A
    number counts as shown when a printed number rounds to it at the places it was written with."""
    printed = [float(x) for x in _NUMBER.findall(output)]
    low = output.lower()
    missing = []
    for v in _scalars(answer):
        if isinstance(v, int | float):
            if not math.isfinite(float(v)):
                continue
            text = repr(float(v)) if isinstance(v, float) else str(v)
            places = len(text.split(".")[1]) if "." in text and "e" not in text else 0
            tol = 0.5 * 10.0**-places + 1e-9 * abs(float(v))
            if not any(abs(p - float(v)) <= tol for p in printed):
                missing.append(str(v))
        elif isinstance(v, str) and _NUMBER.search(v):
            # a free-text answer ("Number of flowers: 150 ..."): its numbers must be printed
            missing += numbers_reproduced(
                [float(x) if "." in x else int(x) for x in _NUMBER.findall(v)], output
            )
        elif isinstance(v, str) and v.strip() and v.strip().lower() not in low:
            missing.append(repr(v))
    return missing


def _error_name(steps: Sequence[WorkerStepData], turn: int) -> str:
    """The exception the turn's last executed cell raised ('' when it ran cleanly)."""
    ran = [
        s
        for s in steps
        if s.turn == turn and s.action.strip() and getattr(s.meta, "executed", True) is not False
    ]
    if not ran or ran[-1].success or not ran[-1].error:
        return ""
    return _exception_name(ran[-1].error)


def _exception_name(error: str) -> str:
    found = re.findall(r"\b([A-Z]\w*(?:Error|Exception|Exit|Interrupt))\b", error)
    if found:
        return str(found[-1])
    return error.strip().splitlines()[-1][:60] if error.strip() else ""


def _model_cells(steps: Sequence[WorkerStepData], turn: int) -> list[tuple[str, bool]]:
    return [
        (s.action.rstrip(), s.success)
        for s in steps
        if s.turn == turn and s.action.strip() and getattr(s.meta, "executed", True) is not False
    ]


def _run_info(run_dir: Path) -> tuple[str, dict[str, Any], str]:
    """(model name, sampling settings, data folder) of an LLM-worker run, from its calls and config."""
    from omegaconf import OmegaConf

    loaded = OmegaConf.to_container(OmegaConf.load(RunFolder(run_dir).config), resolve=False)
    cfg: dict[str, Any] = loaded if isinstance(loaded, dict) else {}  # type: ignore[assignment]
    block = dict(cfg.get("worker_llm") or {})
    sampling = {k: block.get(k) for k in ("temperature", "max_tokens")}
    if block.get("answer_from_output"):  # the worker's protocol differed: answers printed by code
        sampling["answer_from_output"] = True
    root = str(Path(str((cfg.get("bench") or {}).get("data_dir") or "data/dev")).resolve())
    for calls in sorted(run_dir.glob(f"tasks/*/*/{LLM_CALLS_FILE}")):
        for event in read_trace(calls):
            if isinstance(event, LlmCallEvent) and event.data.role == "worker" and event.data.model:
                return str(event.data.model), sampling, root
    return "unknown", sampling, root


def _short(model: str) -> str:
    m = re.search(r"(\d+(?:\.\d+)?)b", model.lower())
    return ("m" + m.group(1).replace(".", "")) if m else re.sub(r"\W+", "", model)[:8]


def harvest_run(run_dir: str | Path, tasks: dict[str, Task], bank: NaturalBank) -> list[BankEntry]:
    """New candidate entries from one LLM-worker run (not yet in `bank`); `tasks` by stored id."""
    run = Path(run_dir)
    model, sampling, root = _run_info(run)
    # the expected answers of the dev set given (`tasks`), not of the data folder the run names,
    # which may be another checkout's (and would be rebuilt if its sources differ)
    expected = {tid: {t.turn_id: t.answer for t in task.turns} for tid, task in tasks.items()}
    seen = {(e.task, e.turn, e.code) for e in bank.entries}
    ids = {e.id for e in bank.entries}
    out: list[BankEntry] = []
    for result in sorted(read_results(run), key=lambda r: (r.task_id, r.arm)):
        if result.status == "crashed" or result.variant != "clean" or result.task_id not in tasks:
            continue
        task = tasks[result.task_id]
        steps = [
            e.data
            for e in read_trace(RolloutFolder(Path(result.run_dir)).trace)
            if isinstance(e, WorkerStepEvent) and e.data.turn is not None
        ]
        available = defined_names(PRELUDE.format(base_path="."))
        for turn in task.turns:
            ok = result.correct.get(turn.turn_id)
            cells = _model_cells(steps, turn.turn_id)
            if ok is False and cells:
                earlier = [
                    (s.turn, s.action.rstrip())
                    for s in steps
                    if s.turn is not None and s.turn < turn.turn_id and s.action.strip() and s.success
                ]
                own = [one_block(c) for c, _ in cells]
                support = [
                    (t, one_block(c)) for t, c in support_cells([c for c, _ in cells], available, earlier)
                ]
                answer = result.answers.get(turn.turn_id)
                parts = [f"{SUPPORT_MARK.format(turn=t)}\n{c}" for t, c in support] + own
                parts = with_session_helpers(parts)
                code = "\n\n".join(parts + ([answer_block(answer)] if answer is not None else []))
                code = code.replace(root, DATA_ROOT)
                kind, _ = classify(
                    answer,
                    expected.get(result.task_id, {}).get(turn.turn_id),
                    [s for s in steps if s.turn == turn.turn_id],
                )
                key = (result.task_id, turn.turn_id, code)
                if key not in seen:
                    seen.add(key)
                    base = f"{_short(model)}-{result.task_id.split('__')[1]}-t{turn.turn_id}-{result.arm[:4]}"
                    entry_id, n = base, 2
                    while entry_id in ids:
                        entry_id, n = f"{base}-{n}", n + 1
                    ids.add(entry_id)
                    out.append(
                        BankEntry(
                            id=entry_id,
                            task=result.task_id,
                            turn=turn.turn_id,
                            model=model,
                            sampling=sampling,
                            source=f"{run.name}/{result.arm}",
                            kind=kind,
                            model_answer=answer,
                            model_error=_error_name(steps, turn.turn_id),
                            expected=turn.answer,
                            code=code,
                            support_cells=len(support),
                        )
                    )
            available |= defined_names(turn.code)
    return out


def replay_verdict(
    entry: BankEntry, correct: bool | None, answer: Any, output: str, error: str = ""
) -> tuple[bool, str]:
    """(confirmed, note) for one replayed entry: the judge must score the replayed answer wrong,
    and the replayed cells must show the model's answer again (or, with no answer, end without one,
    raising what the model's last cell raised; `error`: what the replay's last model cell raised)."""
    if correct is None:
        return False, "the replay's answer could not be scored"
    if correct:
        return (
            False,
            "the replay's answer is right: on the reference prefix the model's code does not make the mistake",
        )
    if entry.model_answer is None:
        if answer is not None:
            return False, "the replay answered"
        raised = _exception_name(error) if error else ""
        if entry.model_error and raised != entry.model_error:
            return False, f"the replay raised {raised or 'nothing'}, the model's run {entry.model_error}"
        return True, "no answer, as in the model's run" + (
            f" ({entry.model_error})" if entry.model_error else ""
        )
    missing = numbers_reproduced(entry.model_answer, output)
    if missing:
        return False, f"the replayed code does not print {', '.join(missing[:4])} of the model's answer"
    return True, "the replayed code prints the model's (wrong) answer"


def confirm(bank_path: Path, replay_dir: Path) -> tuple[int, int]:
    """Mark the bank's candidates confirmed or rejected from a replay run; (confirmed, rejected)."""
    bank = load_bank(bank_path)
    by_variant = {r.variant: r for r in read_results(replay_dir) if r.arm == "baseline"}
    counts = [0, 0]
    for entry in bank.entries:
        if entry.status != "candidate":
            continue
        result = by_variant.get(entry.variant)
        if result is None or result.status == "crashed":
            entry.status, entry.note = "rejected", "the replay did not run (crashed or missing)"
            counts[1] += 1
            continue
        steps = [
            e.data
            for e in read_trace(RolloutFolder(Path(result.run_dir)).trace)
            if isinstance(e, WorkerStepEvent) and e.data.turn == entry.turn
        ]
        own = [s for s in steps if ANSWER_MARK not in s.action]
        output = "\n".join(s.output for s in own)
        error = (own[-1].error or "") if own and not own[-1].success else ""
        answer = result.answers.get(entry.turn)
        ok, note = replay_verdict(entry, result.correct.get(entry.turn), answer, output, error)
        entry.status, entry.note, entry.replay_answer = ("confirmed" if ok else "rejected"), note, answer
        counts[0 if ok else 1] += 1
    save_bank(bank, bank_path)
    return counts[0], counts[1]


def _dev_tasks(data_dir: str) -> dict[str, Task]:
    from eval.benchmarks.dev.bench import DevBench

    return {t.task_id: t.task for t in DevBench().load({"data_dir": data_dir, "variants": ["clean"]})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.benchmarks.natural.harvest", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    add = sub.add_parser("add", help="add candidates from LLM-worker dev runs")
    add.add_argument("runs", nargs="+", type=Path)
    con = sub.add_parser("confirm", help="replay the candidates with the scripted worker and mark them")
    con.add_argument("--replay-dir", type=Path, default=Path("runs/natural-confirm"))
    con.add_argument("--workers", type=int, default=1)
    con.add_argument("--again", action="store_true", help="replay the rejected entries too (after a fix)")
    for p in (add, con):
        p.add_argument("--bank", type=Path, default=BANK_FILE)
        p.add_argument("--data-dir", default="data/dev")
    args = parser.parse_args(argv)
    bank = load_bank(args.bank)
    if args.cmd == "add":
        tasks = _dev_tasks(args.data_dir)
        for run in args.runs:
            new = harvest_run(run, tasks, bank)
            bank.entries += new
            print(f"{run}: {len(new)} new candidate(s)")
        save_bank(bank, args.bank)
        return 0
    if args.cmd == "confirm" and args.again:
        for entry in bank.entries:
            if entry.status == "rejected":
                entry.status, entry.note = "candidate", ""
        save_bank(bank, args.bank)
    if not any(e.status == "candidate" for e in bank.entries):
        print("no candidates to confirm")
        return 0
    cmd = [
        sys.executable,
        "-m",
        "eval.runner",
        "bench=natural",
        f"bench.bank={args.bank.resolve()}",
        f"bench.data_dir={args.data_dir}",
        "bench.entries=candidates",
        "bench.clean=false",
        "arms=[baseline]",
        "worker=scripted",
        f"workers={args.workers}",
        f"run_dir={args.replay_dir}",
        "progress=false",
    ]
    if args.replay_dir.exists():  # a replay of other candidates: start again
        shutil.rmtree(args.replay_dir)
    subprocess.run(cmd, check=False)
    kept, dropped = confirm(args.bank, args.replay_dir)
    print(
        f"confirmed {kept}, rejected {dropped}; bank: {args.bank} ({len(load_bank(args.bank).confirmed())} confirmed)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
