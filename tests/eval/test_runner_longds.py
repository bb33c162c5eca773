"""Any folder in the LongDS layout runs offline: scripted worker, rules manager, field judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from eval.benchmarks.longds.loader import LongDSDataMissing
from eval.results import read_results
from eval.runner import run
from stateguard.llm.endpoints import EndpointConfigError

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "eval" / "benchmarks" / "demo" / "six_turn"


def _layout(root: Path, with_data: bool = True) -> Path:
    """The six-turn demo task as `task/longds/demo/sales/task1` + `data/longds/demo/sales/task1/data`."""
    task_dir = root / "task" / "longds" / "demo" / "sales" / "task1"
    task_dir.mkdir(parents=True)
    shutil.copy(DEMO / "task.json", task_dir / "task.json")
    if with_data:
        shutil.copytree(DEMO / "data", root / "data" / "longds" / "demo" / "sales" / "task1" / "data")
    return root


def _cfg(data_dir: Path, run_dir: Path, *extra: str):  # type: ignore[no-untyped-def]
    overrides = [
        "bench=longds",
        f"bench.data_dir={data_dir}",
        f"run_dir={run_dir}",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=100",
        *extra,
    ]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=overrides)


def test_a_longds_layout_folder_runs_offline_with_the_field_judge(tmp_path: Path) -> None:
    data = _layout(tmp_path / "ds")
    summary = run(
        _cfg(
            data, tmp_path / "run", "bench.judge=fields", "worker=scripted", "manager=rules", "workspace=dict"
        )
    )
    results = {r.arm: r for r in read_results(tmp_path / "run")}
    assert set(results) == {"baseline", "stateguard"}
    task = json.loads((data / "task" / "longds" / "demo" / "sales" / "task1" / "task.json").read_text())
    assert results["baseline"].task_id == "demo__sales__task1" and results["baseline"].domain == "demo"
    # no shipped mistakes: the scripted worker replays the reference code, every turn is right
    assert all(results["baseline"].correct.values()) and len(results["baseline"].correct) == len(task)
    assert {a.arm: a.accuracy for a in summary.arms} == {"baseline": 1.0, "stateguard": 1.0}


def test_missing_data_or_endpoint_fails_before_any_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(LongDSDataMissing, match="make data BENCH=longds"):
        run(_cfg(_layout(tmp_path / "nodata", with_data=False), tmp_path / "r1", "bench.judge=fields"))
    for var in ("STATEGUARD_JUDGE_BASE_URL", "STATEGUARD_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(EndpointConfigError, match="STATEGUARD_JUDGE"):
        run(_cfg(_layout(tmp_path / "ok"), tmp_path / "r2", "bench.judge=llm"))
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


def test_the_llm_worker_speaks_the_dsgym_dialect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.scripted_server import Reply, Respond, ScriptedServer

    data = _layout(tmp_path / "ds")
    turns = json.loads((data / "task" / "longds" / "demo" / "sales" / "task1" / "task.json").read_text())
    by_question = {t["question"]: t["answer"] for t in turns}

    def model(request: dict) -> Reply:
        messages = request["messages"]
        last = messages[-1]["content"]
        if "<information>" in last:  # the code ran: answer the open question
            question = next(
                m["content"]
                for m in reversed(messages)
                if m["role"] == "user" and "Question: " in m["content"]
            )
            truth = by_question[question.split("Question: ", 1)[1]]
            return Reply(content=f"<reasoning>done</reasoning>\n<answer>{json.dumps(truth)}</answer>")
        return Reply(
            content="<reasoning>look at the data</reasoning>\n<python>\nprint(len(pd.read_csv(f'{BASE_PATH}/data/sales.csv')))\n</python>"
        )

    with ScriptedServer([Respond(model)] * 40) as server:
        monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "scripted-analyst")
        run(
            _cfg(
                data,
                tmp_path / "run",
                "bench.judge=fields",
                "worker=llm",
                "workspace=sandbox",
                "arms=[baseline]",
            )
        )
        requests = list(server.requests)
    first = requests[0]["messages"]
    assert (
        first[0]["role"] == "system"
        and str(data / "data" / "longds" / "demo" / "sales" / "task1") in first[0]["content"]
    )
    assert (
        sum(m["role"] == "system" for m in requests[-1]["messages"]) == 1
    )  # the system prompt opens the task once
    assert first[1]["content"].endswith("Question: " + turns[0]["question"])
    assert any("<information>10\n</information>" in m["content"] for m in requests[1]["messages"])
    result = read_results(tmp_path / "run")[0]
    assert result.correct == {t["turn_id"]: True for t in turns}
