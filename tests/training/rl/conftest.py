"""Shared fixtures of the manager-RL tests: a synthesized task with its RL prompts, the tiny tokenizer,
the prepared verl parquet, and one DAPO group rolled out through verl's AgentLoopWorker.

The task comes from the real pipeline (one 8-turn penguins task; clean and repair trajectories,
exported by synthesis/export.py: 17 decision points, ~4 s). The group is the g=1 decision point
(the turn whose counterfactual result should be repaired) rolled out 8 times against the scripted
model server with the dict workspace (~5 s).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from tests.training.rl.rl_support import compose_rl, debug_overrides

# DictWorkspace's value hashing walks sys.modules; transformers logs a line per lazy alias it meets.
logging.getLogger("transformers").setLevel(logging.ERROR)


def pytest_configure(config: pytest.Config) -> None:
    # verl probes its optional training engines at import and warns for each one not installed (CPU: all)
    config.addinivalue_line("filterwarnings", "ignore:.*engine is not available:UserWarning")
    config.addinivalue_line(
        "filterwarnings", "ignore:Ray state API is no longer experimental:DeprecationWarning"
    )


@pytest.fixture(scope="session")
def rl_synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("verl", reason="needs the rl extra: pip install -e '.[rl]'")
    from synthesis.export import export
    from synthesis.sources.tabular import is_installed
    from synthesis.tasks import build_task

    if not is_installed("penguins"):
        pytest.skip("palmerpenguins is not installed")
    root = tmp_path_factory.mktemp("rl_synth")
    build_task(root / "tasks", dataset="penguins", seed=224049, turns=8)
    export(root / "tasks", root / "corpus", seed=0, repairs=1, autos=1)
    return root


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers", reason="needs the train extra")
    from training.tiny_model import build_tiny_model

    out = tmp_path_factory.mktemp("rl_tiny") / "model"
    build_tiny_model(out, overfit_response=None, seed=0)
    return out


@pytest.fixture(scope="session")
def rl_cfg(
    rl_synth: Path, tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., DictConfig]:
    """Factory: the debug config on the tests' task, plus extra overrides."""
    out = tmp_path_factory.mktemp("rl_out")

    def make(*overrides: str) -> DictConfig:
        return compose_rl(*debug_overrides(rl_synth, tiny_dir, out), *overrides)

    return make


@pytest.fixture(scope="session")
def prepared(rl_cfg: Callable[..., DictConfig]) -> Any:
    from training.rl.config import settings
    from training.rl.data import prepare

    s = settings(rl_cfg())
    return prepare(s.prompts, s.data_dir, val_fraction=s.val_fraction, seed=s.seed, agent_name=s.agent_name)


@pytest.fixture(scope="session")
def group(
    rl_cfg: Callable[..., DictConfig], prepared: Any, tiny_dir: Path
) -> tuple[Any, Any, Any, DictConfig]:
    """(input batch, verl output batch, scripted server, config) for one g=1 prompt x 8 rollouts."""
    from training.rl.dry_run import rollout_groups

    cfg = rl_cfg("stateguard.keep_runs=true")
    batch, out, server = asyncio.run(rollout_groups(cfg, str(tiny_dir), 1, 0))
    return batch, out, server, cfg
