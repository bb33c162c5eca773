"""The `Benchmark` protocol's optional hooks: declared with defaults, inherited by every benchmark."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.registry import BENCHMARKS, StandaloneBenchmark, get_benchmark
from stateguard.flows import LONGDS
from stateguard.task import Task, Turn

ROOT = Path(__file__).resolve().parents[3]


class _Plain(Benchmark):
    """A benchmark that only loads and scores: the hooks come from the protocol."""

    name = "plain"
    flow = LONGDS
    scoring_version = "plain/1"

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        return []

    def score(self, task: EvalTask, answers: Mapping[int, Any]) -> dict[int, bool | None]:
        return {k: True for k in answers}


def _task() -> EvalTask:
    task = Task(task_id="t", turns=[Turn(turn_id=1, question="q", code="x = 1", answer=1)])
    return EvalTask(task_id="t", task=task, data_dir=Path("."))


def test_a_benchmark_without_hooks_gets_the_defaults(tmp_path: Path) -> None:
    bench = _Plain()
    answers = {1: 3, 2: "x"}
    collected = bench.collect(_task(), tmp_path, answers)
    assert collected == answers and collected is not answers  # a copy the runner may change
    assert bench.worker_protocol(_task()) is None
    assert bench.after_run(tmp_path) == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_registered_benchmark_is_a_benchmark(name: str) -> None:
    made = BENCHMARKS[name]()
    if isinstance(made, StandaloneBenchmark):  # its own entry point: a module with a Hydra main
        assert made.name == name
        assert callable(importlib.import_module(made.module).main)
        with pytest.raises(ValueError, match=f"make eval BENCH={name}"):
            get_benchmark(name)
        return
    bench = get_benchmark(name)
    assert Benchmark in type(bench).__mro__  # subclassed, so the hooks' defaults are inherited
    for hook in ("worker_protocol", "collect", "after_run"):
        assert callable(getattr(bench, hook))


def test_statewise_is_registered_as_a_benchmark() -> None:
    made = BENCHMARKS["statewise"]()
    assert isinstance(made, StandaloneBenchmark) and made.module == "eval.benchmarks.statewise.run"


def test_the_runner_calls_the_hooks_without_looking_them_up() -> None:
    tree = ast.parse((ROOT / "eval" / "runner.py").read_text(encoding="utf-8"))
    lookups = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ("getattr", "hasattr")
        and isinstance(n.args[0], ast.Name | ast.Attribute)
        and "bench" in ast.unparse(n.args[0])
    ]
    assert [ast.unparse(n) for n in lookups] == []
