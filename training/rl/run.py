"""`run(cfg)`: the manager's RL, either the CPU dry run or verl's DAPO trainer on a Ray cluster.

    python -m training.rl rl=debug      # stateguard.mode=dry_run: training/rl/dry_run.py
    python -m training.rl               # stateguard.mode=train: prepare data, check, launch verl

Training launch: the composed config (verl's ppo_trainer + configs/rl.yaml) goes to verl's own
`run_ppo` with its V1 task runner, which joins the Ray cluster (`ray.init()` finds a running one,
e.g. started with `ray start --head`; otherwise it starts a local one). Paths are made absolute
first, so Ray workers whose working directory differs still find the data, the task folders, the
agent-loop registry and the rollout folders; every node needs this repository installed
(`pip install -e '.[rl]'`) at the same path and the task folders readable.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict
from pydantic import BaseModel

from training.rl.config import RLConfigError, check_recipe, settings
from training.rl.data import PrepStats, prepare
from training.rl.dry_run import DryRunResult, dry_run

__all__ = ["LaunchResult", "absolute_paths", "launch", "run"]

log = logging.getLogger(__name__)


class LaunchResult(BaseModel):
    data: PrepStats
    recipe: dict[str, Any]
    checkpoints: str


def absolute_paths(cfg: DictConfig) -> None:
    """Rewrite the path-valued keys Ray workers read as absolute paths (in place)."""
    s = settings(cfg)
    rollout = cfg.actor_rollout_ref.rollout
    with open_dict(cfg):
        cfg.stateguard.tasks_dir = str(Path(s.tasks_dir).resolve())
        cfg.stateguard.runs_dir = str(Path(s.runs_dir).resolve())
        cfg.stateguard.out_dir = str(Path(s.out_dir).resolve())
        cfg.data.train_files = str(Path(cfg.data.train_files).resolve())
        cfg.data.val_files = str(Path(cfg.data.val_files).resolve())
        rollout.agent.agent_loop_config_path = str(Path(rollout.agent.agent_loop_config_path).resolve())
        cfg.trainer.default_local_dir = str(Path(cfg.trainer.default_local_dir).resolve())
        model = Path(cfg.actor_rollout_ref.model.path)
        if model.exists():  # a local checkpoint (a Hub id stays as it is)
            cfg.actor_rollout_ref.model.path = str(model.resolve())


def launch(cfg: DictConfig) -> LaunchResult:
    """Prepare the data, check the recipe and hand the config to verl's trainer (blocks until done)."""
    import torch

    if not torch.cuda.is_available():
        raise RLConfigError(
            "stateguard.mode=train launches verl with a vLLM rollout engine and FSDP actors, which need "
            "CUDA GPUs; on this machine run the CPU dry run instead: `python -m training.rl rl=debug` "
            "(make rl CONFIG=debug)"
        )
    s = settings(cfg)
    data = prepare(s.prompts, s.data_dir, val_fraction=s.val_fraction, seed=s.seed, agent_name=s.agent_name)
    absolute_paths(cfg)
    recipe = check_recipe(cfg)
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.utils.device import auto_set_device

    auto_set_device(cfg)
    log.info("launching verl DAPO: %s", recipe)
    run_ppo(cfg, task_runner_class=TaskRunnerV1)
    return LaunchResult(data=data, recipe=recipe, checkpoints=str(cfg.trainer.default_local_dir))


def run(cfg: DictConfig) -> DryRunResult | LaunchResult:
    return dry_run(cfg) if settings(cfg).mode == "dry_run" else launch(cfg)
