"""A benchmark, a manager, a worker and a kind of mistake added from outside the repository, each
through its registry only, are checked by the eval config, built by eval's components, run by the
runner and counted in their own row of the detection report.

Run: `python -m pytest -q tests/eval/test_registries.py`. The toy package is written to a temporary
folder: it imports the four registries and nothing of eval's wiring (`docs/extending.md`).
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from eval.benchmarks import registry
from eval.benchmarks.registry import BENCHMARKS, StandaloneBenchmark, get_benchmark
from eval.benchmarks.variants import select_variants
from eval.components import make_manager, make_worker
from eval.config import ConfigError, arm_names, validate_config
from eval.runner import run
from stateguard.artifacts import mistakes
from stateguard.artifacts.faults import Fault
from stateguard.policies.registry import MANAGERS, MODEL_MANAGERS
from stateguard.trace import Trace
from stateguard.workers.registry import MODEL_WORKERS, WORKERS
from stateguard.workers.response import names_kind

ROOT = Path(__file__).resolve().parents[2]

TOY = '''
"""A toy extension: the six-turn demo's first three turns as a benchmark, a manager, a worker and a
kind of mistake (a result off by a unit factor) that the benchmark's one fault variant makes."""
from pathlib import Path

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.registry import register_benchmark
from eval.scorers.fields import per_turn_correct
from stateguard.artifacts.faults import Fault
from stateguard.artifacts.mistakes import Mistake, register_mistake
from stateguard.flows import LONGDS
from stateguard.policies.registry import register_manager
from stateguard.policies.rules import RulesManager
from stateguard.task import load_task
from stateguard.workers.registry import register_worker
from stateguard.workers.response import ResponseModel
from stateguard.workers.scripted import FaultModel, ScriptedWorker

DEMO = Path({demo!r})


class ToyBench(Benchmark):
    name = "toy"
    flow = LONGDS
    scoring_version = "toy-1"

    def load(self, cfg):
        task = load_task(DEMO)
        task = task.model_copy(update={{"turns": task.turns[:3]}})
        clean = EvalTask(task_id="toy_task", task=task, data_dir=DEMO / "data")
        if not cfg.get("toy_fault"):
            return [clean]
        unit = Fault(
            kind="counterfactual",
            turn=2,
            replace=[("margin = revenue - cost", "margin = (revenue - cost) * 100")],
            semantic="toy_unit",
        )
        faulted = clean.model_copy(
            update={{"task_id": "toy_task__unit", "variant": "unit", "base_task": "toy_task", "faults": [unit]}}
        )
        return [clean, faulted]

    def score(self, task, answers):
        return per_turn_correct({{t.turn_id: t.answer for t in task.task.turns}}, dict(answers))


BUILT = []  # the names of the toy parts the runner built, in order


class ToyManager(RulesManager):
    """The rules policy under another name: what matters here is how it is found."""

    def __init__(self, **kwargs):
        BUILT.append("manager")
        super().__init__(**kwargs)


class ToyWorker(ScriptedWorker):
    """The scripted worker under another name."""

    def __init__(self, *args, **kwargs):
        BUILT.append("worker")
        super().__init__(*args, **kwargs)


def _worker(ctx):
    model = ResponseModel(seed=ctx.seed, **dict(ctx.response))
    return ToyWorker(FaultModel(seed=ctx.seed, faults=list(ctx.faults)), model, reference=ctx.reference)


register_mistake(Mistake("counterfactual:toy_unit", "counterfactual", ("unit", "scale"), semantic="toy_unit"))
register_benchmark("toy", ToyBench)
register_manager("toy", lambda ctx: ToyManager(semantic=ctx.semantic))
register_worker("toy", _worker)
'''


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[object]:
    package = tmp_path / "pkg" / "toy_extension"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent(TOY.format(demo=str(ROOT / "eval/benchmarks/demo/six_turn")))
    )
    sys.path.insert(0, str(package.parent))
    try:
        yield importlib.import_module("toy_extension")
    finally:
        sys.path.remove(str(package.parent))
        sys.modules.pop("toy_extension", None)
        for registry in (BENCHMARKS, MANAGERS, WORKERS):
            registry.pop("toy", None)
        mistakes.MISTAKES.pop("counterfactual:toy_unit", None)
        MODEL_MANAGERS.discard("toy")
        MODEL_WORKERS.discard("toy")


def _config(tmp_path: Path, *overrides: str, bench: dict | None = None) -> dict:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("eval", overrides=["workspace=dict", "workers=1", "progress=false", *overrides])
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    # configs/bench/<name>.yaml is where a benchmark's options live; the toy one has none
    plain["bench"] = {"name": "toy", **(bench or {})}
    plain["run_dir"] = str(tmp_path / "run")
    return plain


def test_unregistered_names_are_refused_by_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        validate_config(_config(tmp_path, "manager=toy", "worker=toy"))
    text = str(err.value)
    assert "bench.name='toy': Input should be 'dabstep'" in text
    assert "manager='toy': Input should be 'rules', 'llm'" in text
    assert "worker='toy': Input should be 'scripted' or 'llm'" in text


def test_a_toy_benchmark_manager_and_worker_run_through_the_registries_only(
    toy: object, tmp_path: Path
) -> None:
    cfg = validate_config(_config(tmp_path, "manager=toy", "worker=toy", "arms=[baseline,stateguard,toy]"))
    assert (cfg.bench.name, cfg.manager, cfg.worker) == ("toy", "toy", "toy")
    assert "toy" in arm_names()

    assert type(get_benchmark("toy")).__name__ == "ToyBench"
    trace = Trace(tmp_path / "calls.jsonl")
    assert type(make_manager("toy", trace=trace)).__name__ == "ToyManager"
    assert type(make_worker("toy", trace=trace)).__name__ == "ToyWorker"

    toy.BUILT.clear()  # type: ignore[attr-defined]
    summary = run(
        OmegaConf.create(_config(tmp_path, "manager=toy", "worker=toy", "arms=[baseline,stateguard]"))
    )
    assert summary.bench == "toy"
    # workers=1: the jobs ran in this process, one worker per arm and the manager for stateguard only
    assert sorted(toy.BUILT) == ["manager", "worker", "worker"]  # type: ignore[attr-defined]
    by_arm = {a.arm: a for a in summary.arms}
    assert set(by_arm) == {"baseline", "stateguard"}
    # the three turns of the demo before its stale read: the toy worker answers them all right
    assert (by_arm["baseline"].turns_scored, by_arm["baseline"].accuracy) == (3, 1.0)
    assert (
        by_arm["stateguard"].turns_scored,
        by_arm["stateguard"].accuracy,
        by_arm["stateguard"].crashed_tasks,
    ) == (
        3,
        1.0,
        0,
    )


def test_benchmarks_are_the_folders_that_hold_one() -> None:
    """A benchmark is found by its folder: no list to edit (the demo's folder is data, not one)."""
    folders = {
        p.parent.name
        for f in ("bench.py", "run.py", "__init__.py")
        for p in (ROOT / "eval/benchmarks").glob(f"*/{f}")
    }
    assert {"synth", "dev", "longds", "dabstep", "dacomp_de", "statewise"} <= set(BENCHMARKS) == folders
    assert "demo" not in BENCHMARKS
    assert type(get_benchmark("dev")).__name__ == "DevBench"  # its bench.py also holds LongDSBench


def test_a_new_benchmark_folder_is_found_without_a_registry_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder with a bench.py is a benchmark; one with only a run.py is a standalone one."""
    import eval.benchmarks

    (tmp_path / "toyfolder").mkdir()
    (tmp_path / "toyfolder" / "__init__.py").write_text("")
    (tmp_path / "toyfolder" / "bench.py").write_text(
        "from eval.benchmarks.dev.bench import DevBench\n\n\nclass ToyFolderBench(DevBench):\n    name = 'toyfolder'\n"
    )
    (tmp_path / "toyrun").mkdir()
    (tmp_path / "toyrun" / "run.py").write_text("")
    (tmp_path / "notes").mkdir()  # a folder without Python is not a benchmark
    monkeypatch.setattr(eval.benchmarks, "__path__", [*eval.benchmarks.__path__, str(tmp_path)])
    try:
        found = registry._folders(tmp_path)
        assert set(found) == {"toyfolder", "toyrun"}
        assert type(found["toyfolder"]()).__name__ == "ToyFolderBench"  # not DevBench, which it imports
        standalone = found["toyrun"]()
        assert (
            isinstance(standalone, StandaloneBenchmark) and standalone.module == "eval.benchmarks.toyrun.run"
        )
    finally:
        for name in [m for m in sys.modules if m.startswith("eval.benchmarks.toy")]:
            sys.modules.pop(name)


def test_a_toy_mistake_kind_is_read_from_its_registry_only(tmp_path: Path) -> None:
    fault = {"kind": "counterfactual", "turn": 2, "code": "x = 1", "semantic": "toy_unit"}
    with pytest.raises(ValueError, match="unknown semantic kind 'toy_unit'"):
        Fault.model_validate(fault)
    sys.path.insert(0, str(tmp_path))
    (tmp_path / "toy_kind.py").write_text(
        "from stateguard.artifacts.mistakes import Mistake, register_mistake\n"
        "register_mistake(Mistake('counterfactual:toy_unit', 'counterfactual', ('unit',), semantic='toy_unit'))\n"
    )
    try:
        importlib.import_module("toy_kind")
        declared = Fault.model_validate(fault)  # the faults file's reader accepts it now
        assert (declared.label, declared.group) == ("counterfactual:toy_unit", "counterfactual:toy_unit")
        # bench.variants selects it by its label; the response model hears a hint that names it
        assert list(select_variants({"u": [declared]}, {"variants": ["counterfactual:toy_unit"]})) == ["u"]
        assert names_kind("the unit of this result is off", declared.label)
        assert not names_kind("a filter was lost", declared.label)
        with pytest.raises(ValueError, match="that label is taken"):
            mistakes.register_mistake(mistakes.MISTAKES["counterfactual:toy_unit"])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("toy_kind", None)
        mistakes.MISTAKES.pop("counterfactual:toy_unit", None)


def test_the_toy_kind_counts_in_its_own_row_of_the_detection_report(toy: object, tmp_path: Path) -> None:
    summary = run(
        OmegaConf.create(
            _config(
                tmp_path, "manager=toy", "worker=toy", "arms=[baseline,stateguard]", bench={"toy_fault": True}
            )
        )
    )
    assert summary.detection is not None
    rows = {k.kind: k for s in summary.detection.sections for k in s.kinds}
    assert rows["counterfactual:toy_unit"].faults == 1
    # the fault took effect: the baseline's turn 2 of the faulted variant is wrong
    assert {a.arm: a.accuracy for a in summary.arms}["baseline"] < 1.0


def test_the_llm_worker_factory_passes_compaction_and_keeps_its_own_default_answer_mode() -> None:
    from stateguard.workers.registry import WORKERS, WorkerSetup

    plain = WORKERS["llm"](WorkerSetup(trace=Trace(), client=lambda: None, compaction=3))  # type: ignore[arg-type,return-value]
    assert plain.compaction == 3 and plain.answer_from_output is False  # type: ignore[attr-defined]
    told = WORKERS["llm"](WorkerSetup(trace=Trace(), client=lambda: None, answer_from_output=True))  # type: ignore[arg-type,return-value]
    assert told.compaction == 0 and told.answer_from_output is True  # type: ignore[attr-defined]
