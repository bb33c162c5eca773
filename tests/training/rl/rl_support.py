"""Helpers for the manager-RL tests: compose configs/rl.yaml through Hydra's compose API."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def compose_rl(*overrides: str) -> DictConfig:
    """configs/rl.yaml (verl's ppo_trainer + our recipe) with overrides."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose("rl", overrides=list(overrides))


def debug_overrides(synth: Path, tiny: Path, out: Path) -> list[str]:
    """The debug preset on the tests' synthesized task and pre-built tiny tokenizer."""
    return [
        "rl=debug",
        f"stateguard.prompts={synth / 'corpus' / 'rl' / 'prompts.parquet'}",
        f"stateguard.tasks_dir={synth / 'tasks'}",
        f"stateguard.out_dir={out}",
        f"stateguard.dry_run.model_dir={tiny}",
    ]
