"""Decision-level evaluation (eval/decisions): corpus reading, scoring against the teacher, the CLI
against a real HTTP server (tests/support/scripted_server.py, a scripted model)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from eval.decisions.__main__ import main, parse_args, run
from eval.decisions.items import CorpusFormatError, DecisionItem, load_items, select
from eval.decisions.score import score_reply, summarize
from stateguard.actions import tool_schemas
from stateguard.lifecycle import Regime, Stage
from stateguard.policies.prompts import system_prompt
from tests.support.scripted_server import Reply, Respond, ScriptedServer

REPAIR_ARGS = {
    "analytical_evidence": "step 3 output differs from the stated cut-off",
    "error_hint": {"error_variables": ["n_rows"], "faulty_reasoning": "the filter uses the wrong year"},
}


def _args(*argv: str) -> argparse.Namespace:
    """The CLI's parsed arguments, as a user would type them."""
    return parse_args(list(argv))


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _row(
    task: str, activation: int, stage: str, calls: list[list[tuple[str, dict[str, Any]]]]
) -> dict[str, Any]:
    """One atomic sample in synthesis/export.py's layout: batches of calls, tool results between them."""
    obs = json.dumps({"event_type": "turn_end", "stage": stage})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(Regime.TURN_ALIGNED)},
        {"role": "user", "content": f"TASK\nTurn 1: count.\n\nOBSERVATION\n{obs}"},
    ]
    k = 0
    for batch in calls:
        msg_calls = []
        for name, args in batch:
            msg_calls.append(_call(k, name, args))
            k += 1
        messages.append({"role": "assistant", "content": "", "tool_calls": msg_calls})
        for c in msg_calls:
            if c["function"]["name"][0].islower():
                messages.append(
                    {"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"], "content": "{}"}
                )
    return {
        "variant": "repair" if stage == "updated" else "clean",
        "task_id": task,
        "trajectory_id": f"{task}/clean",
        "tools": json.dumps(tool_schemas()),
        "intervention_kind": "none",
        "intervention_op": "none",
        "t_star": -1,
        "kind": "atomic",
        "activation": activation,
        "turn": 1,
        "relations": "[]",
        "messages": json.dumps(messages),
    }


def _corpus(root: Path, task: str = "t0") -> Path:
    from datasets import Dataset

    rows = [
        _row(task, 0, "idle", [[("OPEN_STATE", {"issue": "count rows"})]]),
        _row(
            task,
            1,
            "open",
            [[("check_execution", {"step_id": 0})], [("UPDATE_STATE", {"conclusions": ["n"]})]],
        ),
        _row(task, 2, "updated", [[("REPAIR", REPAIR_ARGS)]]),
        _row(task, 3, "finalized", [[("COMMIT_STATE", {})]]),
    ]
    rows.append({**rows[0], "kind": "full", "activation": -1})  # full trajectories are not decisions
    Dataset.from_list(rows).save_to_disk(str(root))
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    pytest.importorskip("datasets", reason="the corpus is a datasets folder (train extra)")
    return _corpus(tmp_path / "heldout")


def test_every_assistant_message_of_an_atomic_sample_is_one_decision(corpus: Path) -> None:
    items = load_items(corpus)
    assert [(i.stage.value, i.teacher_class) for i in items] == [
        ("idle", "OPEN_STATE"),
        ("open", "tool"),
        ("open", "UPDATE_STATE"),
        ("updated", "REPAIR"),
        ("finalized", "COMMIT_STATE"),
    ]
    update = items[2]
    assert [m["role"] for m in update.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]  # the chat before it
    assert update.teacher == [{"name": "UPDATE_STATE", "arguments": {"conclusions": ["n"]}}]
    assert update.regime is Regime.TURN_ALIGNED and len(update.tools) == len(tool_schemas())


def test_selection_is_nested_and_keeps_rare_classes(corpus: Path) -> None:
    items = load_items(corpus) * 3  # duplicates are fine for the sampler
    small, large = select(items, 1), select(items, 2)
    assert {i.teacher_class for i in small} == {i.teacher_class for i in items}
    assert all(any(s is x for x in large) for s in small)


def test_not_a_corpus_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(CorpusFormatError, match="synth=heldout"):
        load_items(tmp_path)


def _item(stage: Stage, teacher: list[dict[str, Any]], cls: str) -> DecisionItem:
    return DecisionItem(
        id="x",
        task_id="t",
        variant="clean",
        intervention_kind="none",
        turn=1,
        regime=Regime.TURN_ALIGNED,
        stage=stage,
        messages=[],
        tools=[],
        teacher=teacher,
        teacher_class=cls,
    )


def _text(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"content": "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"}


@pytest.mark.parametrize(
    ("stage", "cls", "reply", "parsed", "legal", "correct"),
    [
        (Stage.IDLE, "OPEN_STATE", _text("OPEN_STATE", {"issue": "rows"}), True, True, True),
        (Stage.IDLE, "OPEN_STATE", _text("COMMIT_STATE", {}), True, False, False),  # illegal at idle
        (Stage.OPEN, "tool", _text("check_execution", {"step_id": 2}), True, True, True),  # tools: any stage
        (Stage.UPDATED, "FINALIZE_RELATIONS", _text("REPAIR", REPAIR_ARGS), True, True, False),
        (Stage.UPDATED, "FINALIZE_RELATIONS", {"content": "The state looks fine."}, False, False, False),
        (
            Stage.UPDATED,
            "REPAIR",
            _text("REPAIR", {"analytical_evidence": "x"}),
            False,
            False,
            False,
        ),  # no hint
        (
            Stage.FINALIZED,
            "COMMIT_STATE",
            {
                "content": "",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "COMMIT_STATE", "arguments": "{}"}}
                ],
            },
            True,
            True,
            True,
        ),  # native tool_calls
    ],
)
def test_score_table(
    stage: Stage, cls: str, reply: dict[str, Any], parsed: bool, legal: bool, correct: bool
) -> None:
    s = score_reply(_item(stage, [], cls), reply)
    assert (s.parsed, s.legal, s.correct) == (parsed, legal, correct)
    assert (s.error is None) == parsed


def test_repair_variables_are_compared_with_the_teacher() -> None:
    item = _item(Stage.UPDATED, [{"name": "REPAIR", "arguments": REPAIR_ARGS}], "REPAIR")
    right = score_reply(item, _text("REPAIR", REPAIR_ARGS))
    other = {
        **REPAIR_ARGS,
        "error_hint": {"error_variables": ["mean_mass", "n_rows"], "faulty_reasoning": "x"},
    }
    partial = score_reply(item, _text("REPAIR", other))
    wrong = score_reply(
        item,
        _text("REPAIR", {**REPAIR_ARGS, "error_hint": {"error_variables": ["z"], "faulty_reasoning": "x"}}),
    )
    assert (right.repair_overlap, right.repair_exact) == (True, True)
    assert (partial.repair_overlap, partial.repair_exact) == (True, False)
    assert (wrong.repair_overlap, wrong.repair_exact) == (False, False)
    summary = summarize([right, partial, wrong])
    assert summary.repair["right_variable_named"] == 2 and summary.repair["same_variables"] == 1
    assert summary.overall.accuracy == 100.0 and summary.by_teacher_class["REPAIR"].n == 3


def test_cli_asks_a_real_server_and_resumes(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each decision goes to the endpoint with its chat and tools; a scripted model answers the teacher's
    action at open/idle stages and babbles otherwise, so the rates are known in advance."""

    def answer(request: dict[str, Any]) -> Reply:
        obs = json.loads(request["messages"][1]["content"].split("OBSERVATION\n", 1)[1])
        assert request["tools"] and request["temperature"] == 0.0
        if obs["stage"] == "idle":
            return Reply(tool_calls=[{"name": "OPEN_STATE", "arguments": {"issue": "rows"}}])
        if obs["stage"] == "open":
            return Reply(
                content='<tool_call>{"name": "check_execution", "arguments": {"step_id": 0}}</tool_call>'
            )
        return Reply(content="I think everything is fine.")

    out = tmp_path / "run"
    with ScriptedServer([Respond(answer)] * 5) as server:
        code = main(
            [
                "--base-url",
                server.base_url,
                "--model",
                "scripted-model",
                "--corpus",
                str(corpus),
                "--out",
                str(out),
                "--per-class",
                "0",
            ]
        )
        assert code == 0 and len(server.requests) == 5
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["n"] == 5 and summary["overall"]["parse"] == 60.0  # idle + 2 open of 5
    assert summary["overall"]["accuracy"] == 40.0  # OPEN right, tool right, UPDATE answered with a tool
    assert summary["confusion"]["REPAIR"] == {"unparsed": 1}
    assert "| REPAIR | 1 | 0.0 |" in capsys.readouterr().out
    # a rerun finds every decision scored and asks nothing (the script is spent: a request would fail)
    with ScriptedServer([]) as server:
        again = run(
            _args(
                "--base-url", server.base_url, "--corpus", str(corpus), "--out", str(out), "--per-class", "0"
            )
        )
        assert server.requests == [] and again.overall.n == 5


def test_training_tasks_are_refused(corpus: Path, tmp_path: Path) -> None:
    train = _corpus(tmp_path / "train", task="t0")  # the same task id
    with pytest.raises(SystemExit, match="in the training corpus"):
        run(
            _args(
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--corpus",
                str(corpus),
                "--train-corpus",
                str(train),
                "--out",
                str(tmp_path / "o"),
            )
        )


def test_an_endpoint_failure_is_not_scored_and_a_rerun_asks_again(corpus: Path, tmp_path: Path) -> None:
    """A server error says nothing about the model: the decision is left out of the rates, counted as
    unanswered, and the next run asks it (and only it) again."""
    from tests.support.scripted_server import Status

    out = tmp_path / "run"
    ok = Reply(tool_calls=[{"name": "OPEN_STATE", "arguments": {"issue": "rows"}}])
    script = [Status(400, {"error": {"message": "bad request"}}), *[ok] * 4]
    with ScriptedServer(script) as server:
        first = run(
            _args(
                "--base-url", server.base_url, "--corpus", str(corpus), "--out", str(out), "--per-class", "0"
            )
        )
    assert first.unanswered == 1 and first.overall.n == 4
    assert len((out / "scores.jsonl").read_text().splitlines()) == 4
    with ScriptedServer([ok]) as server:
        second = run(
            _args(
                "--base-url", server.base_url, "--corpus", str(corpus), "--out", str(out), "--per-class", "0"
            )
        )
        assert len(server.requests) == 1
    assert second.unanswered == 0 and second.overall.n == 5


def test_decisions_too_long_for_the_window_are_left_out_before_sampling(corpus: Path, tmp_path: Path) -> None:
    """--max-prompt-chars keeps only decisions whose chat + schemas fit; config.json says how many fit."""
    from eval.decisions.__main__ import prompt_chars

    items = load_items(corpus)
    sizes = sorted(prompt_chars(it) for it in items)
    limit = sizes[1]  # the two shortest decisions fit, the others do not
    out = tmp_path / "run"
    ok = Reply(tool_calls=[{"name": "OPEN_STATE", "arguments": {"issue": "rows"}}])
    with ScriptedServer([ok] * 5) as server:
        summary = run(
            _args(
                "--base-url",
                server.base_url,
                "--corpus",
                str(corpus),
                "--out",
                str(out),
                "--per-class",
                "0",
                "--max-prompt-chars",
                str(limit),
            )
        )
        asked = [len(json.dumps(r["messages"])) + len(json.dumps(r["tools"])) for r in server.requests]
    assert summary.overall.n == sum(s <= limit for s in sizes) == len(asked)
    assert max(asked) <= limit
    config = json.loads((out / "config.json").read_text())
    assert config["fitting"] == len(asked) and config["available"] == len(items)
