"""The RL configuration: our `stateguard:` section, typed, and verl's own checks of the composed recipe.

    python -m training.rl rl=debug          # composes configs/rl.yaml (+ configs/rl/debug.yaml)

configs/rl.yaml is verl's ppo_trainer config (found on Hydra's search path) plus our deltas: the
DAPO settings, the custom reward and the agent loop. `check_recipe(cfg)` runs what verl runs before
training (verl.utils.config.validate_config), builds verl's config dataclasses for the algorithm,
actor and rollout (their __post_init__ checks), resolves the reward manager class, and then asserts
the DAPO recipe itself: GRPO advantages, no KL, decoupled clip ranges, token-mean loss, group filtering, an
overlong buffer inside the response budget, and a reward manager that is verl's DAPO one.
"""

from __future__ import annotations

import contextlib
import io
import logging
from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["DryRunSettings", "RLConfigError", "RLSettings", "check_recipe", "settings"]

log = logging.getLogger(__name__)


class RLConfigError(ValueError):
    """The RL configuration is inconsistent; the message names the key and how to fix it."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DryRunSettings(_Strict):
    groups: int = Field(2, ge=1, description="prompts rolled out (each a group of rollout.n)")
    constant_groups: int = Field(
        0,
        ge=0,
        description="extra groups whose scripted rollouts all act alike (zero variance: DAPO drops them)",
    )
    model_dir: str = Field(description="where the tiny offline Qwen3 (its tokenizer) is built once")
    server: Literal["scripted"] = Field("scripted", description="the model behind the agent loop on CPU")


class RLSettings(_Strict):
    mode: Literal["train", "dry_run"] = Field(description="train: launch verl | dry_run: the CPU check")
    out_dir: str
    synth_dir: str
    prompts: str = Field(description="the RL prompts parquet of `make synth` (synthesis/export.py)")
    tasks_dir: str = Field(description="folder holding <task_id>/{hidden,agent} for every row's task")
    data_dir: str
    val_fraction: float = Field(0.05, ge=0.0, lt=1.0)
    seed: int = 0
    agent_name: str = "stateguard_manager"
    workspace: Literal["sandbox", "dict"] = "sandbox"
    runs_dir: str
    keep_runs: bool = False
    trace_transport: Literal["inline", "path"] = "inline"
    prefix_check: bool = True
    max_activations: int = Field(6, ge=1)
    max_model_calls: int = Field(16, ge=1)
    followup_observation_only: bool = True
    dry_run: DryRunSettings


def settings(cfg: DictConfig | dict[str, Any]) -> RLSettings:
    """The `stateguard:` section as RLSettings; errors name the key."""
    section = cfg.get("stateguard", None)
    if section is None:
        raise RLConfigError("the config has no `stateguard:` section; compose configs/rl.yaml")
    raw = OmegaConf.to_container(section, resolve=True) if isinstance(section, DictConfig) else dict(section)
    try:
        return RLSettings.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise RLConfigError(
            f"stateguard.{key}: {first['msg']} (configs/rl.yaml documents each key)"
        ) from None


def _need(ok: bool, key: str, why: str) -> None:
    if not ok:
        raise RLConfigError(f"{key}: {why}")


def check_recipe(cfg: DictConfig) -> dict[str, Any]:
    """Run verl's validation on the composed config, then the DAPO recipe's own invariants.

    Returns the values that define the recipe (for the run summary and docs/paper_index.md).
    """
    from verl.trainer.ppo.reward import resolve_reward_manager_cls
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.utils.import_utils import load_extern_object

    verl_says = io.StringIO()
    with contextlib.redirect_stdout(verl_says):  # verl prints its verdict; keep it in the log instead
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        algo = omega_conf_to_dataclass(cfg.algorithm)
        actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
        rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    log.debug("verl validate_config: %s", verl_says.getvalue().strip())

    _need(
        algo.adv_estimator == "grpo",
        "algorithm.adv_estimator",
        "DAPO uses group-normalized (grpo) advantages",
    )
    _need(not algo.use_kl_in_reward, "algorithm.use_kl_in_reward", "DAPO has no KL term; set false")
    _need(not actor.use_kl_loss, "actor_rollout_ref.actor.use_kl_loss", "DAPO has no KL loss; set false")
    _need(
        actor.clip_ratio_low < actor.clip_ratio_high,
        "actor_rollout_ref.actor.clip_ratio_high",
        "clip-higher needs clip_ratio_high > clip_ratio_low",
    )
    _need(
        actor.loss_agg_mode == "token-mean",
        "actor_rollout_ref.actor.loss_agg_mode",
        "DAPO's loss is token-mean",
    )
    _need(rollout.n > 1, "actor_rollout_ref.rollout.n", "a DAPO group needs more than one rollout per prompt")
    groups = algo.filter_groups
    _need(
        groups is not None and groups.enable, "algorithm.filter_groups.enable", "dynamic sampling must be on"
    )
    kwargs = cfg.reward.get("reward_kwargs") or {}
    buffer = kwargs.get("overlong_buffer_cfg") or {}
    if buffer.get("enable"):
        _need(
            0 < buffer.get("len", 0) <= cfg.data.max_response_length,
            "reward.reward_kwargs.overlong_buffer_cfg.len",
            "the overlong buffer must be positive and inside data.max_response_length",
        )
        _need(
            kwargs.get("max_resp_len") == cfg.data.max_response_length,
            "reward.reward_kwargs.max_resp_len",
            "must equal data.max_response_length (the DAPO reward manager measures the buffer from it)",
        )

    from verl.experimental.reward_loop.reward_manager.dapo import DAPORewardManager

    try:
        manager = resolve_reward_manager_cls(cfg)
    except (ValueError, ImportError, AttributeError, FileNotFoundError) as exc:
        raise RLConfigError(
            f"reward.reward_manager: cannot resolve it ({exc}); configs/rl.yaml names ours"
        ) from None
    _need(
        issubclass(manager, DAPORewardManager),
        "reward.reward_manager",
        f"{manager.__name__} is not verl's DAPO reward manager (the overlong buffer lives there)",
    )
    fn = cfg.reward.custom_reward_function
    try:
        score = load_extern_object(module_path=fn.path, object_name=fn.name)
    except (ImportError, AttributeError, FileNotFoundError) as exc:
        raise RLConfigError(
            f"reward.custom_reward_function: cannot load {fn.path}:{fn.name} ({exc})"
        ) from None
    _need(callable(score), "reward.custom_reward_function.name", f"{fn.name} is not callable")
    return {
        "adv_estimator": algo.adv_estimator,
        "use_kl_in_reward": algo.use_kl_in_reward,
        "use_kl_loss": actor.use_kl_loss,
        "clip_ratio_low": actor.clip_ratio_low,
        "clip_ratio_high": actor.clip_ratio_high,
        "loss_agg_mode": actor.loss_agg_mode,
        "filter_groups_metric": groups.metric if groups is not None else None,
        "overlong_buffer_len": buffer.get("len") if buffer.get("enable") else 0,
        "rollout_n": rollout.n,
        "lr": actor.optim.lr,
        "train_batch_size": cfg.data.train_batch_size,
        "context": cfg.data.max_prompt_length + cfg.data.max_response_length,
        "reward_manager": f"{manager.__module__}.{manager.__name__}",
        "reward_fn": f"{fn.path}:{fn.name}",
        "reward_manager_source": cfg.reward.reward_manager.source,
    }
