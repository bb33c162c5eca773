"""DABstep through the real runner: an LLM worker (a scripted HTTP model) answers two dev questions
in the sandbox, and each task's verdict is the official matcher's on what the model answered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval.benchmarks.dabstep import DabstepDataMissing, question_matches
from eval.benchmarks.dabstep.bench import DabstepBench, prediction_text, write_submission, write_submissions
from eval.benchmarks.dabstep.prompts import (
    CHAT_SYSTEM,
    CHAT_TASK,
    REASONING_SYSTEM,
    REASONING_TASK,
    TOKEN_CAP,
    dabstep_protocol,
    worker_mode,
)
from eval.results import read_results
from eval.runner import run
from stateguard.flows import DABSTEP
from stateguard.llm import EndpointConfig, LLMClient
from stateguard.llm.endpoints import EndpointConfigError
from stateguard.rollout import rollout
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workspace import DictWorkspace
from tests.support.scripted_server import Reply, Respond, ScriptedServer

ROOT = Path(__file__).resolve().parents[3]
PAYMENTS = "psp_reference,merchant,issuing_country,eur_amount\n" + "".join(
    f"{i},Shop_{i % 3},{country},{amount}\n"
    for i, (country, amount) in enumerate([("NL", 10.5), ("BE", 3.0), ("NL", 7.25), ("FR", 1.0), ("NL", 2.0)])
)
TASKS = [
    {
        "task_id": "5",
        "question": "Which issuing country appears on the most payments in the table?",
        "guidelines": "Answer with the country code only.",
        "level": "easy",
        "answer": "NL",
    },
    {
        "task_id": "1273",
        "question": "What is the average eur_amount of the transactions issued in NL?",
        "guidelines": "Answer with a number rounded to 6 decimals.",
        "level": "hard",
        "answer": "6.583333",
    },
]
# The scripted model's answers: NL (read from the data) is right; 6.5 is not the truth to one decimal.
SCRIPTED = {"5": None, "1273": 6.5}


def make_root(
    tmp_path: Path, *, payments: bool = True, tasks: list[dict[str, Any]] = TASKS, split: str = "dev"
) -> Path:
    root = tmp_path / "dabstep"
    context = root / "context"
    context.mkdir(parents=True)
    files = {
        "fees.json": "[]",
        "manual.md": "# Manual\nA transaction is one payment.\n",
        "merchant_data.json": "[]",
        "merchant_category_codes.csv": "mcc,description\n5812,Restaurants\n",
        "acquirer_countries.csv": "acquirer,country_code\nbank_a,NL\n",
        "payments-readme.md": "issuing_country: card country; eur_amount: value in EUR\n",
    }
    if payments:
        files["payments.csv"] = PAYMENTS
    for name, text in files.items():
        (context / name).write_text(text, encoding="utf-8")
    (root / "tasks").mkdir()
    lines = "".join(json.dumps(t) + "\n" for t in tasks)
    (root / "tasks" / f"{split}.jsonl").write_text(lines, encoding="utf-8")
    return root


def _task_of(messages: list[dict[str, Any]]) -> str:
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    return next(t["task_id"] for t in TASKS if t["question"] in prompt)


def scripted_model(request: dict[str, Any]) -> Reply:
    """The official runner's shape. Step 1: read payments.csv from BASE_PATH; step 2 (and after any
    hint): call final_answer with what the output showed."""
    messages = request["messages"]
    task_id = _task_of(messages)
    outputs = [
        m["content"] for m in messages if m["role"] == "user" and m["content"].startswith("Observation:")
    ]
    if not outputs:
        code = (
            "import os\npay = pd.read_csv(os.path.join(BASE_PATH, 'payments.csv'))\n"
            "print(pay.issuing_country.value_counts().idxmax())"
        )
        return Reply(
            content=f"Thought: I will count transactions per issuing country.\nCode:\n```py\n{code}\n```<end_code>"
        )
    answer = SCRIPTED[task_id] if SCRIPTED[task_id] is not None else outputs[-1].split()[-1].lower()
    return Reply(content=f"Thought: done.\nCode:\n```py\nfinal_answer({answer!r})\n```<end_code>")


def _cfg(run_dir: Path, data_dir: Path, **over: object) -> DictConfig:
    overrides = [
        "bench=dabstep",
        f"run_dir={run_dir}",
        f"bench.data_dir={data_dir}",
        "worker=llm",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=50",
        *[f"{k}={v}" for k, v in over.items()],
    ]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=overrides)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Any:
    with ScriptedServer([Respond(scripted_model)] * 60) as server:
        monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "scripted")
        yield server


def test_runner_scores_each_task_with_the_official_matcher(tmp_path: Path, model: ScriptedServer) -> None:
    root = make_root(tmp_path)
    cfg = _cfg(tmp_path / "run", root, workspace="sandbox", arms="[baseline,stateguard]", manager="rules")
    summary = run(cfg)
    results = read_results(tmp_path / "run")
    assert sorted((r.task_id, r.arm) for r in results) == sorted(
        (t, a) for t in ("5", "1273") for a in ("baseline", "stateguard")
    )
    truth = {t["task_id"]: t["answer"] for t in TASKS}
    for r in results:
        assert r.error is None, r.error
        said = prediction_text(r.answers[1])
        assert said is not None
        assert r.correct == {1: question_matches(said, truth[r.task_id])}
        assert (r.domain, r.level, r.parents) == ("dabstep", {"5": "easy", "1273": "hard"}[r.task_id], {})
    assert {r.task_id: r.correct[1] for r in results} == {"5": True, "1273": False}
    arms = {a.arm: a for a in summary.arms}
    assert arms["baseline"].accuracy_by_level == {"easy": 1.0, "hard": 0.0}
    # the first worker step read the context file through the read-only sandbox mount
    first = next(r for r in model.requests if len(r["messages"]) > 3)["messages"][3]["content"]
    assert first.startswith("Observation:") and "nl" in first.lower()
    paths = DabstepBench().after_run(tmp_path / "run")  # = write_submissions
    assert [p.name for p in paths] == [f"dabstep_submission_{a}.jsonl" for a in ("baseline", "stateguard")]
    rows = [json.loads(line) for line in paths[0].read_text().splitlines()]
    assert [(r["task_id"], r["agent_answer"]) for r in rows] == [("5", "nl"), ("1273", "6.5")]
    assert "payments.csv" in rows[0]["reasoning_trace"]


def test_withheld_answers_are_excluded_and_still_submitted(tmp_path: Path, model: ScriptedServer) -> None:
    blank = [{**t, "answer": ""} for t in TASKS]
    root = make_root(tmp_path, tasks=blank, split="all")
    over = {"bench.split": "all", "workspace": "dict", "arms": "[baseline]"}
    summary = run(_cfg(tmp_path / "run", root, **over))
    assert [p.name for p in write_submissions(tmp_path / "run")] == ["dabstep_submission_baseline.jsonl"]
    results = read_results(tmp_path / "run")
    assert [r.correct for r in results] == [{1: None}, {1: None}]
    assert summary.arms[0].turns_scored == 0
    out = write_submission(results, tmp_path / "sub.jsonl")
    assert {json.loads(x)["task_id"] for x in out.read_text().splitlines()} == {"5", "1273"}


def test_setups_that_cannot_run_fail_before_the_first_task(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_root(tmp_path)
    with pytest.raises(ValueError, match="needs worker=llm"):
        run(_cfg(tmp_path / "a", root, worker="scripted"))
    monkeypatch.delenv("STATEGUARD_WORKER_BASE_URL", raising=False)
    with pytest.raises(EndpointConfigError, match="STATEGUARD_WORKER_BASE_URL"):
        run(_cfg(tmp_path / "b", root))
    monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "m")
    no_payments = make_root(tmp_path / "np", payments=False)
    with pytest.raises(DabstepDataMissing, match=r"payments\.csv.*make data BENCH=dabstep"):
        run(_cfg(tmp_path / "c", no_payments))
    with pytest.raises(ValueError, match="bench.split='test'"):
        run(_cfg(tmp_path / "d", root, **{"bench.split": "test"}))
    assert not any((tmp_path / name).exists() for name in "abcd")  # nothing started


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ({"answer": "NL"}, "NL"),
        ({"Answer": 0.5}, "0.5"),
        ({"country": "BE"}, "BE"),
        (["A", "B"], "A, B"),
        ({"answer": ["x", "y"]}, "x, y"),
        (12, "12"),
        (None, None),
        ({"a": 1, "b": 2}, '{"a": 1, "b": 2}'),
    ],
)
def test_prediction_text(answer: Any, text: str | None) -> None:
    assert prediction_text(answer) == text


def test_score_without_an_answer_is_wrong(tmp_path: Path) -> None:
    bench = DabstepBench()
    tasks = bench.load({"data_dir": str(make_root(tmp_path))})
    assert [t.task_id for t in tasks] == ["5", "1273"]
    assert bench.score(tasks[0], {}) == {1: False}
    assert bench.score(tasks[0], {1: {"answer": " nl "}}) == {1: True}
    assert bench.score(tasks[0], {1: " nl "}) == {1: True}  # final_answer's string, as the runner submits it
    prompt = tasks[1].task.turns[0].prompt()
    assert re.search(r"BASE_PATH \(.*context\)", prompt) and "rounded to 6 decimals" in prompt
    assert "6.583333" not in prompt  # the truth never reaches the agent


# ----------------------------------------------------------------------------- worker prompts (C.2)
def _one_task(
    tmp_path: Path, model: ScriptedServer, name: str, mode: str | None = None
) -> list[dict[str, Any]]:
    """Run dev task 5 with the official runner's protocol for model `name`; the requests the model saw."""
    task = DabstepBench().load({"data_dir": str(make_root(tmp_path))})[0]
    protocol = dabstep_protocol(str(task.data_dir), model=name, mode=mode)  # type: ignore[arg-type]
    client = LLMClient(EndpointConfig(role="worker", base_url=model.base_url, model=name, max_retries=0))
    worker = LLMWorker(client, protocol=protocol)
    result = rollout(task.task, worker, DictWorkspace(), flow=DABSTEP, run_dir=tmp_path / "run")
    assert result.answers == {1: "nl"}  # the string final_answer was given, as the runner submits it
    return [r for r in model.requests if r["model"] == name]


def test_chat_model_prompt_assembly(tmp_path: Path, model: ScriptedServer) -> None:
    requests = _one_task(tmp_path, model, "scripted-chat")
    first = requests[0]
    system, user = first["messages"]
    folder = str((tmp_path / "dabstep" / "context").resolve())
    assert system == {"role": "system", "content": CHAT_SYSTEM}
    assert user["content"] == CHAT_TASK.format(
        folder=folder, question=TASKS[0]["question"], guidelines=TASKS[0]["guidelines"]
    )
    assert first["max_tokens"] == TOKEN_CAP and "max_completion_tokens" not in first
    assert (
        requests[1]["messages"][-1]["content"] == "Observation:\nNL\n"
    )  # the printed output, as an observation


def test_reasoning_model_prompt_assembly_and_think_blocks(tmp_path: Path) -> None:
    task_text = REASONING_TASK.format(question=TASKS[0]["question"], guidelines=TASKS[0]["guidelines"])
    code = "import os\nprint(pd.read_csv(os.path.join(BASE_PATH, 'payments.csv')).issuing_country.value_counts().idxmax())"
    script = [
        Reply(content="<think>private chain of thought</think>I should look at the data first."),  # no code
        Reply(
            content=f"<think>more private text</think>Thought: count.\nCode:\n```py\n{code}\n```<end_code>"
        ),
        Reply(content="Thought: done.\nCode:\n```py\nfinal_answer('nl')\n```<end_code>"),
    ]
    with ScriptedServer(script) as server:
        requests = _one_task(tmp_path, server, "deepseek-reasoner")
    folder = str((tmp_path / "dabstep" / "context").resolve())
    assert requests[0]["messages"] == [
        {"role": "system", "content": REASONING_SYSTEM.format(folder=folder)},
        {"role": "user", "content": task_text},
    ]
    assert all(r["max_completion_tokens"] == TOKEN_CAP and "max_tokens" not in r for r in requests)
    history = json.dumps(requests[-1]["messages"])
    assert "private" not in history  # think blocks never enter the history
    assert "I should look at the data first." in history
    assert "no Code block" in requests[1]["messages"][-1]["content"]  # a reply without code gets a reminder
    assert folder not in task_text and TASKS[0]["question"] in task_text


@pytest.mark.parametrize(
    ("model", "setting", "mode"),
    [
        ("o3-mini", None, "reasoning"),
        ("openai/o1", None, "reasoning"),
        ("deepseek-reasoner", None, "reasoning"),
        ("DeepSeek-R1-Distill-Qwen-7B", None, "reasoning"),
        ("gpt-4o", None, "chat"),
        ("qwen3-8b", None, "chat"),
        ("o3-mini", "no", "chat"),
        ("qwen3-8b", "yes", "reasoning"),
        ("gpt-4o", "auto", "chat"),
    ],
)
def test_reasoning_models_are_recognized(model: str, setting: str | None, mode: str) -> None:
    assert worker_mode(model, setting) == mode


def test_bad_reasoning_setting_names_the_variable() -> None:
    with pytest.raises(ValueError, match="STATEGUARD_WORKER_REASONING='maybe'"):
        worker_mode("gpt-4o", "maybe")
