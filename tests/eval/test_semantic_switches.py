"""Every switch of the semantic verifier is in configs/eval.yaml, so a run can turn it off with a plain
override (`semantic.share_bases=false`; a key missing from the config would need Hydra's `+`)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from stateguard.verification.verifier import SemanticConfig

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "eval.yaml"


def test_every_semantic_switch_is_in_the_eval_config_with_its_default() -> None:
    block = OmegaConf.to_container(OmegaConf.load(CONFIG).semantic)
    assert isinstance(block, dict)
    defaults = SemanticConfig().model_dump()
    assert set(block) == set(defaults)
    assert SemanticConfig.model_validate(block) == SemanticConfig()  # the config states the defaults
