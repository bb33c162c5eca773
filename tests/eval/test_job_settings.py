"""The eval config is checked once at start-up, and each job gets typed settings and returns a typed outcome.

Run: `python -m pytest -q tests/eval/test_job_settings.py`.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval.benchmarks.base import EvalTask
from eval.components import check_components
from eval.config import ConfigError, HarnessSettings, JobSettings, validate_config
from eval.results import JobOutcome
from eval.runner import run_job
from stateguard.flows import LONGDS
from stateguard.task import load_task

ROOT = Path(__file__).resolve().parents[2]
SIX_TURN = ROOT / "eval" / "benchmarks" / "demo" / "six_turn"


def config(*overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=list(overrides))


def test_job_settings_come_from_the_checked_config_and_travel_to_worker_processes() -> None:
    cfg = validate_config(config("workspace=dict", "seed=7", "harness.repair_budget=2"))
    job = JobSettings.from_config(cfg)
    assert (job.bench, job.workspace, job.worker, job.manager, job.seed) == (
        "synth",
        "dict",
        "scripted",
        "rules",
        7,
    )
    assert job.harness.repair_budget == 2 and job.response == {
        "identify": "variable_and_kind",
        "p_flip": 0.17,
        "p_fix": 1.0,
    }
    assert pickle.loads(pickle.dumps(job)) == job


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("harness.repair_budget=0", "harness.repair_budget=0: Input should be greater than or equal to 1"),
        ("harness.context_budget_tokens=100", "harness.context_budget_tokens=100"),
        ("+harness.light_attempts=-1", "light_attempts=-1: Input should be greater than or equal to 0"),
        ("+harness.regime=segment_induced", "regime are set by the flow and the task"),
    ],
)
def test_a_harness_value_the_harness_refuses_is_a_start_up_error(override: str, named: str) -> None:
    with pytest.raises(ConfigError, match="harness") as err:
        validate_config(config(override))
    assert named in str(err.value)


def test_response_and_semantic_blocks_are_checked_before_any_job() -> None:
    check_components(response={"p_flip": 0.2}, semantic={"enabled": True})
    with pytest.raises(ValueError, match=r"response\.p_flip"):
        check_components(response={"p_flip": 2})
    with pytest.raises(ValueError, match=r"response\.p_fix"):
        check_components(response={"p_fix": -0.1})
    with pytest.raises(ValueError, match=r"semantic\.nope"):
        check_components(semantic={"nope": 1})


def _task() -> EvalTask:
    return EvalTask(task_id="six", task=load_task(SIX_TURN, task_id="six"), data_dir=SIX_TURN / "data")


def test_run_job_returns_a_typed_outcome(tmp_path: Path) -> None:
    job = JobSettings(
        workspace="dict",
        worker="scripted",
        manager="rules",
        harness=HarnessSettings(repair_budget=3, context_budget_tokens=40960),
    )
    task = _task()
    outcome = run_job(task, "stateguard", LONGDS, job, str(tmp_path / "stateguard"))
    assert isinstance(outcome, JobOutcome) and outcome.error is None
    assert outcome.answers == {t.turn_id: t.answer for t in task.task.turns}
    assert outcome.committed_states == 6 and outcome.attempts == 1 and outcome.wall_s > 0
    assert set(outcome.counters()) == set(JobOutcome.model_fields) - {"answers", "error"}


def test_a_job_that_raises_is_a_crash_outcome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("STATEGUARD_MANAGER_BASE_URL", "STATEGUARD_MANAGER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    job = JobSettings(
        workspace="dict",
        worker="scripted",
        manager="llm",
        harness=HarnessSettings(repair_budget=3, context_budget_tokens=40960),
    )
    outcome = run_job(_task(), "stateguard", LONGDS, job, str(tmp_path / "llm"))
    assert outcome.error is not None and "STATEGUARD_MANAGER" in outcome.error
    assert outcome.answers == {} and outcome.attempts == 1
