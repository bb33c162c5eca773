"""Shared fixtures for the manager-SFT tests: a real synthesized corpus, the tiny Qwen3, one trained run.

The corpus comes from the real pipeline (one 11-turn penguins task, a clean and a repair trajectory,
exported by synthesis/export.py: about 90 atomic samples and 2 full ones, ~5 s). The tiny base
model is built once; the trained run is the debug config shortened to 24 steps (~30 s on 2 cores).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sft_support import TRAIN_STEPS, compose_sft, debug_overrides


@pytest.fixture(scope="session")
def sft_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("datasets", reason="needs the train extra: pip install -e '.[dev,train]'")
    from synthesis.export import export
    from synthesis.sources.tabular import is_installed
    from synthesis.tasks import build_task

    if not is_installed("penguins"):
        pytest.skip("palmerpenguins is not installed")
    root = tmp_path_factory.mktemp("sft_corpus")
    build_task(root / "tasks", dataset="penguins", seed=224049, turns=11)
    export(root / "tasks", root / "corpus", seed=0, repairs=1)
    return root / "corpus" / "sft"


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The untrained tiny Qwen3, built through the runner's own `model.kind=tiny` path."""
    pytest.importorskip("trl", reason="needs the train extra: pip install -e '.[dev,train]'")
    from training.sft.config import SFTRunConfig
    from training.sft.train import base_model_path

    out = tmp_path_factory.mktemp("sft_base")
    conf = SFTRunConfig.from_hydra(compose_sft("sft=debug", f"output_dir={out}"))
    return Path(base_model_path(conf))


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_base)


@pytest.fixture(scope="session")
def trained(sft_corpus: Path, tiny_base: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from training.sft.train import run

    out = tmp_path_factory.mktemp("sft_run")
    return run(compose_sft(*debug_overrides(sft_corpus, tiny_base, out, TRAIN_STEPS)))
