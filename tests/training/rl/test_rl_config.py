"""configs/rl.yaml composes over verl's own ppo_trainer config and passes verl's validation and ours."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.training.rl.rl_support import compose_rl

pytest.importorskip("verl", reason="needs the rl extra: pip install -e '.[rl]'")

from training.rl.config import RLConfigError, check_recipe, settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def test_paper_recipe_composes_and_validates() -> None:
    cfg = compose_rl()
    recipe = check_recipe(cfg)  # verl's validate_config + its dataclasses + our DAPO invariants
    assert recipe["adv_estimator"] == "grpo"
    assert (recipe["clip_ratio_low"], recipe["clip_ratio_high"]) == (0.2, 0.28)
    assert recipe["loss_agg_mode"] == "token-mean"
    assert recipe["use_kl_loss"] is False and recipe["use_kl_in_reward"] is False
    assert recipe["rollout_n"] == 8 and recipe["lr"] == 5e-7 and recipe["train_batch_size"] == 64  # Table 2
    assert recipe["context"] == 40_960  # Table 2: prompt + response
    assert recipe["filter_groups_metric"] == "score" and recipe["overlong_buffer_len"] > 0
    assert recipe["reward_manager"] == "training.rl.reward_manager.StateGuardRewardManager"
    assert recipe["reward_fn"] == "pkg://training.rewards.verl_score:compute_score"
    # verl's own keys keep verl's defaults where we add nothing (the recipe is a set of deltas)
    assert cfg.actor_rollout_ref.actor.ppo_epochs == 1 and cfg.algorithm.gamma == 1.0
    assert settings(cfg).mode == "train"


def test_reward_settings_reach_compute_score() -> None:
    cfg = compose_rl("reward.custom_reward_function.reward_kwargs.config.beta_fp=2.0")
    config = cfg.reward.custom_reward_function.reward_kwargs.config
    assert (config.w_action, config.w_lifecycle, config.w_support, config.w_intervention) == (
        0.15,
        0.2,
        0.3,
        0.35,
    )
    assert config.beta_fp == 2.0  # configs/reward/default.yaml, overridable from the command line


def test_debug_preset_composes_and_validates() -> None:
    cfg = compose_rl("rl=debug")
    check_recipe(cfg)
    s = settings(cfg)
    assert s.mode == "dry_run" and s.workspace == "dict" and cfg.trainer.device == "cpu"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("actor_rollout_ref.actor.use_kl_loss=true", "use_kl_loss"),
        ("algorithm.use_kl_in_reward=true", "use_kl_in_reward"),
        ("actor_rollout_ref.actor.clip_ratio_high=0.1", "clip_ratio_high"),
        ("actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum", "loss_agg_mode"),
        ("algorithm.filter_groups.enable=false", "filter_groups"),
        ("reward.reward_kwargs.overlong_buffer_cfg.len=99999", "overlong_buffer_cfg.len"),
        ("reward.reward_manager.source=register", "reward.reward_manager"),
    ],
)
def test_recipe_invariants_name_the_key(override: str, key: str) -> None:
    with pytest.raises(RLConfigError, match=key.replace(".", r"\.")):
        check_recipe(compose_rl(override))


def test_verl_validation_is_applied() -> None:
    # no dynamic batching: 3 rollouts of 1 prompt cannot spread over 8 GPUs; verl's validate_config sees it
    overrides = (
        "actor_rollout_ref.actor.use_dynamic_bsz=false",
        "data.train_batch_size=1",
        "actor_rollout_ref.rollout.n=3",
    )
    with pytest.raises(AssertionError, match="real_train_batch_size"):
        check_recipe(compose_rl(*overrides))


def test_settings_errors_name_the_key() -> None:
    with pytest.raises(RLConfigError, match=r"stateguard\.workspace"):
        settings(compose_rl("stateguard.workspace=docker"))


def test_agent_loop_registry_file_names_our_loop() -> None:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase
    from verl.utils.import_utils import load_class_from_fqn

    cfg = compose_rl()
    entries = yaml.safe_load((ROOT / cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path).read_text())
    entry = next(e for e in entries if e["name"] == cfg.actor_rollout_ref.rollout.agent.default_agent_loop)
    assert issubclass(load_class_from_fqn(entry["_target_"]), AgentLoopBase)


def test_train_mode_refuses_without_gpu() -> None:
    import torch

    from training.rl.run import run

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RLConfigError, match="rl=debug"):
        run(compose_rl())
