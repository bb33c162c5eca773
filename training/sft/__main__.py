"""Hydra entry point of manager SFT: compose configs/sft.yaml (+ overrides) and call run(cfg).

python -m training.sft                          # paper defaults (Qwen3-8B; GPU node)
python -m training.sft sft=debug                # tiny offline Qwen3 on CPU in about a minute
python -m training.sft lora.enabled=true data.full_fraction=0.2 output_dir=runs/sft-lora
"""

from __future__ import annotations

import logging

import hydra
from omegaconf import DictConfig

from training.sft.train import run

log = logging.getLogger("training.sft")


@hydra.main(version_base=None, config_path="../../configs", config_name="sft")
def main(cfg: DictConfig) -> None:
    result = run(cfg)
    log.info(
        "SFT done: step %d, checkpoint %s (%.1fs)", result.global_step, result.checkpoint, result.elapsed_s
    )


if __name__ == "__main__":
    main()
