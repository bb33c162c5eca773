"""DAComp-DE through the real runner: an LLM worker (a scripted HTTP model) writes a four-table SQL
pipeline in the sandbox, one staging table wrong; the tables are scored against a gold DuckDB.

The toy "shop" pipeline, its start and gold databases and the evaluation config come from
test_dacomp_de_scorer.py and tests/eval/fixtures/dacomp_de/evaluation_config_small.yaml.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval.benchmarks.dacomp_de.bench import (
    DACompDEBench,
    merged_sources,
    summarize_scores,
    table_units,
    task_scores,
    unit_parents,
)
from eval.benchmarks.dacomp_de.config import load_eval_config
from eval.benchmarks.dacomp_de.prompts import SYSTEM, TRACK_INSTRUCTIONS, parse_action
from eval.results import read_results
from eval.runner import run
from tests.eval.benchmarks.test_dacomp_de_scorer import ORDERS, REFERENCE, _build_dbs
from tests.support.scripted_server import Reply, Respond, ScriptedServer

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "tests" / "eval" / "fixtures" / "dacomp_de" / "evaluation_config_small.yaml"
EXAMPLE = "dacomp-de-impl-901"
# The agent's pipeline: the reference with one order dropped in staging (row count differs).
AGENT = {layer: dict(tables) for layer, tables in REFERENCE.items()}
AGENT["staging"]["stg_shop__orders"] = ORDERS + " where amount > 5"
# Units in the config's order, and what CFS (cascading) makes of the one staging mistake.
UNITS = {
    "stg_shop__orders": 1,
    "stg_shop__customers": 2,
    "int_shop__customer_orders": 3,
    "shop__top_customers": 4,
}


def make_data(tmp_path: Path) -> Path:
    """<data>/tasks/<example>/ (reference SQL, start DB, contract) and <data>/gold/<example>/shop.duckdb."""
    data = tmp_path / "dacomp_de"
    start, gold = _build_dbs(tmp_path, "marts")
    task = data / "tasks" / EXAMPLE
    for layer, tables in REFERENCE.items():
        (task / "sql" / layer).mkdir(parents=True)
        for table, sql in tables.items():
            (task / "sql" / layer / f"{table}.sql").write_text(sql, encoding="utf-8")
    (task / "config").mkdir()
    (task / "config" / "layer_dependencies.yaml").write_text("layers: [staging, intermediate, marts]\n")
    (task / "docs").mkdir()
    (task / "docs" / "data_contract.yaml").write_text(
        "staging:\n  stg_shop__orders: one row per order, status lower-cased\n"
        "marts:\n  shop__top_customers: customers with a kept order, and their total\n"
    )
    (task / "run.py").write_text("# builds shop.duckdb from sql/\n")
    shutil.copyfile(start, task / "shop_start.duckdb")
    (data / "gold" / EXAMPLE).mkdir(parents=True)
    shutil.copyfile(gold, data / "gold" / EXAMPLE / "shop.duckdb")
    return data


WRITE = """import os
for layer, tables in json.loads({agent!r}).items():
    os.makedirs(os.path.join('sql', layer), exist_ok=True)
    for table, sql in tables.items():
        with open(os.path.join('sql', layer, table + '.sql'), 'w') as handle:
            handle.write(sql)
print(os.path.abspath('sql'))"""


def scripted_engineer(request: dict[str, Any]) -> Reply:
    """CodeAct shape. Step 1 tries a shell action (refused), step 2 writes the SQL files from Python,
    then it finishes with the folder the code printed."""
    said = [m["content"] for m in request["messages"] if m["role"] == "user"]
    outputs = [text for text in said if text.startswith("OBSERVATION:")]
    if not outputs:
        return Reply(content="Let me look around first.\n<execute_bash>\nls -R\n</execute_bash>")
    if len(outputs) == 1:
        code = WRITE.format(agent=json.dumps(AGENT))
        return Reply(
            content=f"I will write the pipeline files.\n<execute_ipython>\n{code}\n</execute_ipython>"
        )
    folder = outputs[-1].split()[-1]
    return Reply(content=f'The pipeline is written.\n<finish>{{"sql_dir": {json.dumps(folder)}}}</finish>')


def _cfg(run_dir: Path, data: Path, **over: object) -> DictConfig:
    overrides = [
        "bench=dacomp_de",
        f"run_dir={run_dir}",
        f"bench.data_dir={data}",
        f"bench.eval_config={CONFIG}",
        "worker=llm",
        "workspace=sandbox",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=50",
        *[f"{k}={v}" for k, v in over.items()],
    ]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=overrides)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Any:
    with ScriptedServer([Respond(scripted_engineer)] * 40) as server:
        monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "scripted")
        yield server


def test_runner_scores_tables_under_cfs_and_keeps_cs(tmp_path: Path, model: ScriptedServer) -> None:
    data, run_dir = make_data(tmp_path), tmp_path / "run"
    run(_cfg(run_dir, data, arms="[baseline,stateguard]", manager="rules"))
    results = read_results(run_dir)
    assert sorted(r.arm for r in results) == ["baseline", "stateguard"]
    for r in results:
        assert r.error is None, r.error
        assert (r.domain, r.level) == ("shop", "impl")
        # the wrong staging table and everything built on it fail under CFS; the customers table holds
        assert r.correct == {1: False, 2: True, 3: False, 4: False}
        assert r.parents == {3: [1, 2], 4: [3]}  # from the reference SQL, shared by both arms
        written = run_dir / "tasks" / EXAMPLE / r.arm / "scratch" / "sql" / "staging" / "stg_shop__orders.sql"
        assert written.read_text() == AGENT["staging"]["stg_shop__orders"]  # in the arm's own scratch folder
        assert r.answers[1] == {"sql_dir": str(written.parent.parent)}
    scores = {s.arm: s for s in task_scores(run_dir)}
    for s in scores.values():
        assert s.cfs is not None and s.cs is not None and s.note is None
        assert (s.cfs_score, s.cs_score) == (pytest.approx(7.5), pytest.approx(92.5))  # CS: gold inputs
        assert s.cs.table_correct() == {t: t != "stg_shop__orders" for t in UNITS}
        assert s.units == UNITS
    means = summarize_scores(scores.values())
    assert means["baseline"] == {"impl_cfs": 7.5, "impl_cs": 92.5, "evol_cfs": None}
    (path,) = DACompDEBench().after_run(run_dir)
    saved = json.loads(path.read_text())
    assert saved["arms"]["stateguard"]["impl_cs"] == 92.5 and len(saved["tasks"]) == 2
    system, prompt = (m["content"] for m in model.requests[0]["messages"])
    assert system == SYSTEM  # the CodeAct loop's system prompt
    assert "one row per order" in prompt and "sql/<layer>/<table>.sql" in prompt and "sql_dir" in prompt
    assert TRACK_INSTRUCTIONS["impl"] in prompt and TRACK_INSTRUCTIONS["evol"] not in prompt
    refused = model.requests[1]["messages"][-1]["content"]
    assert refused.startswith("OBSERVATION:\nThis sandbox has no shell")  # the bash action was not run


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("run it\n<execute_ipython>\nx = 1\n</execute_ipython>", ("x = 1", None)),
        ('<finish>{"sql_dir": "/a/sql"}</finish>', (None, '{"sql_dir": "/a/sql"}')),
        (
            "<execute_ipython>a()</execute_ipython> then <finish>x</finish>",
            ("a()", None),
        ),  # the first action counts
        ("<finish>done</finish><execute_ipython>a()</execute_ipython>", (None, "done")),
        ("<execute_bash>ls</execute_bash>", (None, None)),
        ("just text", (None, None)),
    ],
)
def test_codeact_actions(text: str, action: tuple[str | None, str | None]) -> None:
    assert parse_action(text) == action


def test_each_track_gets_its_instructions(tmp_path: Path) -> None:
    data = make_data(tmp_path)
    evol = data / "tasks" / "dacomp-de-evol-901"
    shutil.copytree(data / "tasks" / EXAMPLE, evol)
    (evol / "docs" / "data_contract.yaml").unlink()
    (evol / "question.md").write_text("Drop cancelled orders from the top-customer totals.\n")
    (data / "gold" / "dacomp-de-evol-901").mkdir(parents=True)
    shutil.copyfile(
        data / "gold" / EXAMPLE / "shop.duckdb", data / "gold" / "dacomp-de-evol-901" / "shop.duckdb"
    )
    bench = DACompDEBench()
    tasks = {t.level: t for t in bench.load({"data_dir": str(data), "eval_config": str(CONFIG)})}
    for kind, other in (("impl", "evol"), ("evol", "impl")):
        text = bench.worker_protocol(tasks[kind]).turn_text(tasks[kind].task.turns[0])
        assert TRACK_INSTRUCTIONS[kind] in text and TRACK_INSTRUCTIONS[other] not in text
        assert bench.worker_protocol(tasks[kind]).system_prompt == SYSTEM
    assert "Drop cancelled orders" in tasks["evol"].task.turns[0].prompt()


def test_unwritten_tables_keep_the_task_sql_and_a_bad_folder_is_ignored(tmp_path: Path) -> None:
    data = make_data(tmp_path)
    bench = DACompDEBench()
    (task,) = bench.load(
        {"data_dir": str(data), "eval_config": str(CONFIG), "run_dir": str(tmp_path / "run")}
    )
    assert bench.units(task) == [1, 2, 3, 4]
    mine = tmp_path / "run" / "tasks" / EXAMPLE / "baseline" / "scratch" / "sql" / "staging"
    mine.mkdir(parents=True)
    (mine / "stg_shop__orders.sql").write_text(AGENT["staging"]["stg_shop__orders"])
    assert bench.score(task, {1: {"sql_dir": str(mine.parent)}}) == {1: False, 2: True, 3: False, 4: False}
    assert bench.score(task, {1: {"sql_dir": str(mine.parent.parent)}})[1] is False  # the folder holding sql/
    # outside this task's run folder, or no answer: the task's own (here: reference) SQL is scored
    everything = dict.fromkeys(range(1, 5), True)
    assert bench.score(task, {1: {"sql_dir": str(data / "tasks" / EXAMPLE / "sql")}}) == everything
    assert bench.score(task, {}) == everything
    notes = {s.note for s in bench.scores.values()}
    assert {None, "the answer names no sql_dir"} < notes
    assert bench.collect(task, mine.parent.parent.parent, {})[1] == {"sql_dir": str(mine.parent)}
    saved = list((tmp_path / "run" / "dacomp_de_scores" / EXAMPLE).glob("*.json"))
    assert len(saved) == 4


def test_merge_and_parents_through_unscored_tables() -> None:
    example = load_eval_config(CONFIG).example(EXAMPLE)
    assert table_units(example) == UNITS
    base = {"staging": {"a": "x", "b": "y"}, "marts": {"m": "z"}}
    assert merged_sources(base, {"intermediate": {"a": "x2"}, "marts": {"n": "w"}}) == {
        "staging": {"b": "y"},
        "marts": {"m": "z", "n": "w"},
        "intermediate": {"a": "x2"},
    }
    # int_shop__customer_orders reads the staging tables only through an unscored helper table
    reference = {layer: dict(tables) for layer, tables in REFERENCE.items()}
    reference["intermediate"]["int_shop__helper"] = "select * from staging.stg_shop__orders"
    reference["intermediate"]["int_shop__customer_orders"] = (
        "select customer_id from intermediate.int_shop__helper "
        "join staging.stg_shop__customers using (customer_id)"
    )
    assert unit_parents(example, reference) == {3: [1, 2], 4: [3]}


@pytest.mark.parametrize(
    ("over", "error", "message"),
    [
        ({"worker": "scripted"}, ValueError, "needs worker=llm"),
        ({"workspace": "dict"}, ValueError, "needs workspace=sandbox"),
        ({"bench.kinds": "[arch]"}, ValueError, r"bench.kinds=\['arch'\]"),
        ({"bench.gold_dir": "/nonexistent"}, FileNotFoundError, "make data BENCH=dacomp_de"),
        ({"bench.eval_config": "/nonexistent.yaml"}, ValueError, "evaluation config not found"),
    ],
)
def test_setups_that_cannot_run_fail_before_the_first_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, over: dict[str, str], error: type, message: str
) -> None:
    monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "m")
    with pytest.raises(error, match=message):
        run(_cfg(tmp_path / "run", make_data(tmp_path), **over))
    assert not (tmp_path / "run").exists()
