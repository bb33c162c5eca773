"""Helpers for the manager-SFT tests, imported as `sft_support` (pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
TRAIN_STEPS = 24


def compose_sft(*overrides: str) -> DictConfig:
    """configs/sft.yaml with overrides, through Hydra's compose API."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose("sft", overrides=list(overrides))


def debug_overrides(corpus: Path, base: Path, out: Path, steps: int) -> list[str]:
    """The debug preset on a given corpus and pre-built tiny base, shortened to `steps` optimizer steps."""
    return [
        "sft=debug",
        f"output_dir={out}",
        f"data.corpus={corpus}",
        "model.kind=hf",
        f"model.name_or_path={base}",
        f"train.max_steps={steps}",
        "train.save_steps=6",
        "data.max_samples=32",
        "train.disable_tqdm=true",
    ]
