"""Decision-level evaluation of a served manager model: held-out decisions, no rollouts.

    make eval-decisions MODEL_URL=http://127.0.0.1:8765/v1 [MODEL_NAME=local] [OUT=runs/decisions/base]
    python -m eval.decisions --base-url URL --model NAME --corpus runs/synth-heldout/corpus/sft \\
        --train-corpus runs/synth-debug/corpus/sft --per-class 10 --out runs/decisions/base

Each decision of the held-out corpus (see items.py) is sent as it stands -- the chat up to the
decision and the tool schemas -- to any OpenAI-compatible endpoint (llama.cpp, vLLM,
`transformers serve`, a hosted API), one request at a time, greedy. Every reply is scored
(score.py) and appended to <out>/scores.jsonl, so a killed run resumes where it stopped; the
summary goes to <out>/summary.json and is printed. `--train-corpus` names the corpus a model was
fine-tuned on: decisions from any task in it are refused, so the numbers stay held out.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.decisions.items import DecisionItem, load_items, read_rows, select
from eval.decisions.score import DecisionScore, Summary, score_reply, summarize
from stateguard.artifacts.run_folder import RunFolder
from stateguard.llm.client import LLMClient, LLMError
from stateguard.llm.endpoints import EndpointConfig

SCORES = "scores.jsonl"
log = logging.getLogger(__name__)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.decisions", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--base-url", required=True, help="OpenAI-compatible API root with /v1")
    p.add_argument("--model", default="local", help="model name sent with each request (default %(default)s)")
    p.add_argument("--api-key", default="EMPTY")
    p.add_argument("--corpus", default="runs/synth-heldout/corpus/sft", help="held-out SFT corpus folder")
    p.add_argument("--train-corpus", default=None, help="the fine-tuning corpus; its tasks are refused")
    p.add_argument(
        "--out", type=Path, default=Path("runs/decisions/eval"), help="scores.jsonl + summary.json"
    )
    p.add_argument("--per-class", type=int, default=10, help="decisions per teacher class; 0 = all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=384, help="completion budget per decision")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds of socket inactivity per request")
    p.add_argument(
        "--max-prompt-chars",
        type=int,
        default=None,
        help="leave out decisions whose chat + tool schemas (as JSON) are longer, so each fits the served "
        "window (about 3.3 characters per token: 25000 fits an 8,192-token window with the reply budget)",
    )
    return p.parse_args(argv)


def held_out(items: list[DecisionItem], train_corpus: str | None) -> list[DecisionItem]:
    if not train_corpus:
        return items
    seen = {r.task_id for r in read_rows(train_corpus)}
    overlap = sorted({it.task_id for it in items} & seen)
    if overlap:
        raise SystemExit(
            f"error: {len(overlap)} task(s) of the evaluation corpus are in the training corpus "
            f"{train_corpus} ({', '.join(overlap[:3])}); build held-out tasks with another seed "
            "(python -m synthesis.pipeline synth=heldout)"
        )
    return items


def prompt_chars(item: DecisionItem) -> int:
    """The size of what a decision sends: its chat and tool schemas as JSON, in characters."""
    return len(json.dumps(item.messages)) + len(json.dumps(item.tools))


def ask(client: LLMClient, item: DecisionItem) -> DecisionScore | None:
    """The scored reply, or None when the endpoint gave none (a timeout or a server error).

    An endpoint failure says nothing about the model, so it is not scored as an unparsed reply: the
    decision stays unanswered, is counted apart, and a rerun asks it again.
    """
    try:
        result = client.chat(item.messages, tools=item.tools)
    except LLMError as exc:
        log.warning("%s: no answer from the endpoint (%s); a rerun asks it again", item.id, exc)
        return None
    score = score_reply(item, result.message, truncated=result.finish_reason == "length")
    score.latency_s = round(result.latency_s, 2)
    score.completion_tokens = result.usage.completion_tokens
    return score


def report(summary: Summary, title: str) -> str:
    rows = [
        f"{title}",
        "",
        "| teacher decision | n | parse % | legal % | accuracy % |",
        "|---|---|---|---|---|",
    ]
    for name, r in [*summary.by_teacher_class.items(), ("**all**", summary.overall)]:
        rows.append(f"| {name} | {r.n} | {r.parse} | {r.legal} | {r.accuracy} |")
    rep = summary.repair
    rows += [
        "",
        f"REPAIR: {rep['answered_repair']} of {rep['teacher_repairs']} teacher repairs answered with "
        f"REPAIR, {rep['right_variable_named']} naming a right variable ({rep['same_variables']} the same set); "
        f"{rep['false_repairs']} REPAIRs where the teacher did not repair. "
        f"Truncated replies: {summary.overall.truncated}; mean latency {summary.mean_latency_s} s.",
    ]
    if summary.unanswered:
        rows.append(
            f"{summary.unanswered} decision(s) got no answer from the endpoint and are not in the rates; "
            "run the same command again to ask them."
        )
    return "\n".join(rows)


def run(args: argparse.Namespace) -> Summary:
    items = held_out(load_items(args.corpus), args.train_corpus)
    fitting = [
        it for it in items if args.max_prompt_chars is None or prompt_chars(it) <= args.max_prompt_chars
    ]
    chosen = select(fitting, args.per_class or None, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / SCORES
    done: dict[str, DecisionScore] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                s = DecisionScore.model_validate_json(line)
                done[s.id] = s
    meta: dict[str, Any] = {
        "base_url": args.base_url,
        "model": args.model,
        "corpus": args.corpus,
        "train_corpus": args.train_corpus,
        "per_class": args.per_class,
        "seed": args.seed,
        "max_tokens": args.max_tokens,
        "decisions": len(chosen),
        "available": len(items),
        "max_prompt_chars": args.max_prompt_chars,
        "fitting": len(fitting),
    }
    (args.out / "config.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    config = EndpointConfig(
        role="manager",
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        temperature=0.0,
        max_tokens=args.max_tokens,
        timeout_s=args.timeout,
        max_retries=1,
        concurrency=1,
    )
    todo = [it for it in chosen if it.id not in done]
    unanswered: list[str] = []
    with LLMClient(config) as client, path.open("a", encoding="utf-8") as out:
        for item in tqdm(
            todo, desc="decisions", unit="decision", initial=len(chosen) - len(todo), total=len(chosen)
        ):
            score = ask(client, item)
            if score is None:
                unanswered.append(item.id)
                continue
            done[item.id] = score
            out.write(score.model_dump_json() + "\n")
            out.flush()
    summary = summarize([done[it.id] for it in chosen if it.id in done])
    summary.unanswered = len(unanswered)
    RunFolder(args.out).summary.write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    text = report(summary, f"decisions of {args.corpus} asked of {args.model} at {args.base_url}")
    (args.out / "summary.md").write_text(text + "\n", encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    summary = run(args)
    print(report(summary, f"{args.model} ({args.out})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
