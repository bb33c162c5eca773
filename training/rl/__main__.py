"""Hydra entry point of manager RL: compose configs/rl.yaml (+ overrides) and call run(cfg).

python -m training.rl rl=debug                     # CPU dry run (make rl CONFIG=debug), about a minute
python -m training.rl                              # DAPO on a GPU node / Ray cluster (see training/rl)
python -m training.rl stateguard.synth_dir=/data/synth actor_rollout_ref.model.path=/ckpt/sft
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from training.rl.dry_run import DryRunResult, format_table  # noqa: E402
from training.rl.run import run  # noqa: E402

log = logging.getLogger("training.rl")


@hydra.main(version_base=None, config_path="../../configs", config_name="rl")
def main(cfg: DictConfig) -> None:
    result = run(cfg)
    if isinstance(result, DryRunResult):
        print(format_table(result))
    else:
        log.info("RL done: checkpoints in %s", result.checkpoints)


if __name__ == "__main__":
    main()
