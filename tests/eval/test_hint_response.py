"""The hint-response experiment (eval.perf.hint_response), run with a scripted chat model.

One dev task (driving) is built once. The manager's hint for the chosen mistake is given in the
hints file, so no scripted manager run is needed. The scripted model answers the true hint with
the reference code and the right answer (a fixed item) and the false hint with a wrong answer
(a broken item). A rerun on the same `out` runs nothing and keeps the records. A second task
(iris) is built beside it to grow the candidates between a run and its resume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from eval.benchmarks.base import EvalTask
from eval.benchmarks.dev.bench import ensure_built
from eval.benchmarks.dev.build import MANIFEST, build, sources_digest
from eval.benchmarks.registry import get_benchmark
from eval.perf.hint_items import choose_pairs, fault_kind
from eval.perf.hint_response import PairsError, load_done, pairs_file, read_pairs, run, summarize
from stateguard.artifacts.faults import Fault
from stateguard.hints import Hint
from stateguard.task import Task, Turn
from tests.stateguard.workers.scripted_model import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
TASK = "transport/driving/task1"
STORED = "transport__driving__task1"  # the id the bench gives it
VARIANT = "join-t4"
IRIS = "botany/iris/task1"
HINT = Hint(
    kind="repair",
    error_variables=["crisis_years"],
    faulty_reasoning="the join drops driving years without a crisis (an inner join where the question keeps them)",
)


@pytest.fixture(scope="module")
def dev_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dev set's driving and iris tasks, stamped with the sources' digest so that they are kept."""
    root = tmp_path_factory.mktemp("dev")
    manifest = build(root, only={TASK, IRIS})
    (root / MANIFEST).write_text(
        json.dumps({**manifest, "sources_sha256": sources_digest()}), encoding="utf-8"
    )
    assert ensure_built(root)["tasks"].keys() == {TASK, IRIS}
    return root


def _cfg(tmp: Path, dev: Path, *more: str, task_ids: str = TASK) -> Any:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose(
            "perf_hint_response",
            overrides=[
                f"data_dir={dev}",
                f"task_ids=[{task_ids}]",
                "pairs=1",
                "model=scripted",
                f"out={tmp / 'items.jsonl'}",
                f"hints_file={tmp / 'hints.jsonl'}",
                f"work_dir={tmp / 'work'}",
                "progress=false",
                "per_task=6",  # every driving mistake is a candidate; the hints file gives only join's a hint
                *more,
            ],
        )


def test_a_true_hint_is_fixed_a_false_hint_breaks_and_a_rerun_skips_done_items(
    tmp_path: Path, dev_dir: Path
) -> None:
    bench = get_benchmark("dev")
    reference = next(
        t for t in bench.load({"data_dir": str(dev_dir), "variants": ["clean"]}) if t.task_id == STORED
    )
    turn4 = reference.task.turn(4)
    # choose_pairs picks the rarest kind first; driving's rarest kinds are one variant each, so pin the
    # hints file to the join mistake and no other: the other chosen mistakes have no hint (passed over)
    cfg = _cfg(tmp_path, dev_dir)
    tasks = bench.load({"data_dir": str(dev_dir), "variants": list(cfg.bench.variants)})
    chosen = choose_pairs([t for t in tasks if t.variant != "clean"], per_task=6)
    lines = [
        {
            "variant_id": t.task_id,
            "turn": t.faults[0].turn,
            "hint": HINT.model_dump(mode="json") if t.variant == VARIANT else None,
        }
        for t in chosen
    ]
    assert f"{STORED}~{VARIANT}" in [t.task_id for t in chosen]
    (tmp_path / "hints.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    model = ScriptedModel(
        f"<reasoning>keep the years without a crisis</reasoning>\n<python>\n{turn4.code}\n</python>",
        f"<answer>\n{json.dumps(turn4.answer)}\n</answer>",
        '<answer>\n{"answer": "no years"}\n</answer>',
    )
    summary = run(cfg, client=model)
    records = [json.loads(x) for x in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [(r["truth"], r["variant"], r["turn"], r["kind"]) for r in records] == [
        ("true", VARIANT, 4, "join"),
        ("false", "clean", 4, "join"),
    ]
    true, false = records
    assert true["error"] is None and false["error"] is None
    assert true["first_correct"] is False and true["correct"] is True and true["outcome"] == "fixed"
    assert false["first_correct"] is True and false["correct"] is False and false["outcome"] == "broken"
    assert "crisis_years" in true["hint"] and true["hint"] == false["hint"]
    assert [c["code"].strip() for c in true["cells"]] == [turn4.code.strip(), ""]
    assert false["final_answer"] == {"answer": "no years"}
    # the model saw its (scripted) first attempt and then the hint, in that order
    seen = model.requests[0]
    assert "<repair_hint>" in seen[-1]["content"] and seen[-2]["content"].startswith("<answer>")
    assert summary["scripted"]["p_fix"]["all"]["k"] == 1 and summary["scripted"]["p_fix"]["all"]["n"] == 1
    assert summary["scripted"]["p_break"]["join"] == {"k": 1, "n": 1, "rate": 1.0, "wilson95": [0.207, 1.0]}
    # a rerun runs nothing (a model that would be called fails the test) and keeps the two records
    rerun = run(cfg, client=None)
    assert rerun == summary
    assert len(load_done(tmp_path / "items.jsonl")) == 2


def test_history_none_sends_the_current_turn_only_and_a_silent_model_is_no_sample(
    tmp_path: Path, dev_dir: Path
) -> None:
    bench = get_benchmark("dev")
    tasks = bench.load({"data_dir": str(dev_dir), "variants": ["clean", "counterfactual"]})
    reference = next(t for t in tasks if t.task_id == STORED)
    chosen = choose_pairs([t for t in tasks if t.variant != "clean"], per_task=6)
    lines = [
        {
            "variant_id": t.task_id,
            "turn": t.faults[0].turn,
            "hint": HINT.model_dump(mode="json") if t.variant == VARIANT else None,
        }
        for t in chosen
    ]
    (tmp_path / "hints.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    class Silent:  # every call fails, as a call past its deadline does
        requests: list[list[dict[str, Any]]] = []

        def chat(self, messages: list[dict[str, Any]], **_: Any) -> Any:
            self.requests.append([dict(m) for m in messages])
            raise TimeoutError("no reply in time")

    model = Silent()
    summary = run(_cfg(tmp_path, dev_dir, "history=none"), client=model)
    sent = model.requests[0]
    text = "\n".join(str(m["content"]) for m in sent)
    assert reference.task.turn(4).question in text and "<repair_hint>" in sent[-1]["content"]
    for earlier in (1, 2, 3):  # no earlier question reaches the model
        assert reference.task.turn(earlier).question not in text
    records = [json.loads(x) for x in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [r["model_calls"] for r in records] == [0, 0] and records[0]["sampling"]["history"] == "none"
    assert records[0]["cells"][0]["failure"] == "model_call"
    entry = summary["scripted"]
    assert entry["p_fix"]["all"]["n"] == 0 and entry["p_break"]["all"]["n"] == 0
    assert entry["no_reply_true"] == 1 and entry["no_reply_false"] == 1


class Untouchable:
    """A model that must not be asked (a resume with nothing left to run)."""

    def chat(self, messages: list[dict[str, Any]], **_: Any) -> Any:
        raise AssertionError("the model was asked")


def test_a_resume_runs_the_recorded_pairs_when_the_dev_set_grows(tmp_path: Path, dev_dir: Path) -> None:
    bench = get_benchmark("dev")
    cfg = _cfg(tmp_path, dev_dir)  # driving only, as the dev set stood at the first run
    tasks = bench.load({"data_dir": str(dev_dir), "variants": list(cfg.bench.variants)})
    grown = choose_pairs([t for t in tasks if t.variant != "clean"], per_task=6)  # driving and iris
    assert grown[0].base_task == IRIS.replace("/", "__")  # once iris is there, its mistake is picked first
    hinted = {f"{STORED}~{VARIANT}", grown[0].task_id}
    lines = [
        {
            "variant_id": t.task_id,
            "turn": t.faults[0].turn,
            "hint": HINT.model_dump(mode="json") if t.task_id in hinted else None,
        }
        for t in grown
    ]
    (tmp_path / "hints.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    turn4 = next(t for t in tasks if t.task_id == STORED).task.turn(4)
    model = ScriptedModel(
        f"<python>\n{turn4.code}\n</python>",
        f"<answer>\n{json.dumps(turn4.answer)}\n</answer>",
        f"<answer>\n{json.dumps(turn4.answer)}\n</answer>",
    )
    out = tmp_path / "items.jsonl"
    summary = run(cfg, client=model)
    recorded = read_pairs(pairs_file(out))
    assert [(p.task_id, p.variant, p.turn, p.kind, p.hint) for p in recorded] == [
        (STORED, VARIANT, 4, "join", HINT)
    ]
    before = out.read_text()

    # the candidates grow (iris); the resume runs the recorded pair, which is done: nothing is asked
    grown_cfg = _cfg(tmp_path, dev_dir, task_ids=f"{TASK},{IRIS}")
    assert run(grown_cfg, client=Untouchable()) == summary
    assert read_pairs(pairs_file(out)) == recorded and out.read_text() == before

    # another model on the same pairs (pairs_from), whatever the candidates: its own out records them
    other = tmp_path / "other.jsonl"
    run(_cfg(tmp_path, dev_dir, f"out={other}", f"pairs_from={out}", task_ids=f"{TASK},{IRIS}"), client=model)
    assert read_pairs(pairs_file(other)) == recorded
    assert [json.loads(x)["item"] for x in other.read_text().splitlines()] == [
        f"{STORED}~{VARIANT}~true",
        f"{STORED}~{VARIANT}~false",
    ]

    # pairs that the loaded tasks lack stop the run with an error naming them
    with pytest.raises(
        PairsError, match=f"pair 1 \\({STORED}~{VARIANT}, turn 4\\): .* not in the loaded tasks"
    ):
        run(_cfg(tmp_path, dev_dir, task_ids=IRIS), client=Untouchable())
    with pytest.raises(PairsError, match="records 1 pairs and pairs=2"):
        run(_cfg(tmp_path, dev_dir, "pairs=2", task_ids=f"{TASK},{IRIS}"), client=Untouchable())
    # items without their recorded pairs are not resumed on a new choice
    pairs_file(out).unlink()
    with pytest.raises(PairsError, match="no recorded pairs"):
        run(grown_cfg, client=Untouchable())
    assert out.read_text() == before


def _variant(task: str, kind: str, turn: int) -> EvalTask:
    fault = Fault(kind="counterfactual", turn=turn, semantic=kind, replace=[("a", "b")])
    return EvalTask(
        task_id=f"{task}~{kind}-t{turn}",
        task=Task(task_id=task, turns=[Turn(turn_id=turn, question="q", code="a", answer=1)]),
        data_dir=Path("."),
        faults=[fault],
        variant=f"{kind}-t{turn}",
        base_task=task,
    )


def test_pairs_are_spread_over_kinds_and_tasks_at_most_two_per_task() -> None:
    candidates = [
        _variant("a", "join", 2),
        _variant("a", "grouping_key", 3),
        _variant("a", "dropped_filter", 4),
        _variant("b", "join", 2),
        _variant("b", "dropped_filter", 5),
        _variant("c", "dropped_filter", 6),
    ]
    chosen = choose_pairs(candidates, per_task=2)
    picked = [(t.base_task, fault_kind(t)) for t in chosen]
    assert picked == [
        ("a", "grouping_key"),
        ("b", "join"),
        ("c", "dropped_filter"),
        ("a", "join"),
        ("b", "dropped_filter"),
    ]
    assert choose_pairs(candidates, per_task=1, limit=2) == chosen[:2]


def test_summary_counts_only_items_set_up_as_meant() -> None:
    rows = [
        {
            "model": "m",
            "truth": "true",
            "kind": "join",
            "first_correct": False,
            "outcome": "fixed",
            "model_s": 10,
        },
        {
            "model": "m",
            "truth": "true",
            "kind": "stale",
            "first_correct": False,
            "outcome": "not_fixed",
            "model_s": 20,
        },
        {
            "model": "m",
            "truth": "true",
            "kind": "stale",
            "first_correct": True,
            "outcome": "fixed",
            "model_s": 30,
        },
        {
            "model": "m",
            "truth": "false",
            "kind": "join",
            "first_correct": True,
            "outcome": "kept",
            "model_s": 40,
        },
        {
            "model": "m",
            "truth": "false",
            "kind": "join",
            "first_correct": True,
            "outcome": "broken",
            "error": "x",
        },
    ]
    entry = summarize(rows)["m"]
    assert entry["p_fix"]["all"]["k"] == 1 and entry["p_fix"]["all"]["n"] == 2
    assert entry["p_fix"]["stale"] == {"k": 0, "n": 1, "rate": 0.0, "wilson95": [0.0, 0.793]}
    assert entry["set_up_wrong_true"] == 1
    assert entry["p_break"]["all"] == {"k": 0, "n": 1, "rate": 0.0, "wilson95": [0.0, 0.793]}
    assert entry["items"] == 4 and entry["model_s_per_item"] == 25.0
