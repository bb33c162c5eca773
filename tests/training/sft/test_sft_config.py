"""configs/sft.yaml and configs/sft/debug.yaml compose (Hydra compose API) into a valid run config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="needs the train extra: pip install -e '.[dev,train]'")

from sft_support import CONFIGS, compose_sft  # noqa: E402

from training.sft.config import SFTConfigError, SFTRunConfig  # noqa: E402
from training.sft.train import sft_args  # noqa: E402

REPO = CONFIGS.parent


def test_default_config_has_the_paper_settings() -> None:
    conf = SFTRunConfig.from_hydra(compose_sft())
    assert conf.model.kind == "hf" and conf.model.name_or_path == "Qwen/Qwen3-8B"  # Table 2: backbone
    assert conf.train["num_train_epochs"] == 3 and conf.train["learning_rate"] == 5e-5  # Table 2
    assert conf.global_batch_size == 32 and conf.train["max_length"] == 40_960  # Table 2; runtime context
    assert conf.train["bf16"] is True and conf.train["gradient_checkpointing"] is True
    assert conf.model.dtype == "bfloat16" and conf.lora.enabled is False
    assert conf.data.corpus == "runs/synth/corpus/sft" and conf.output_dir == "runs/sft"
    assert conf.accumulation_steps(8) == 4 and conf.accumulation_steps(1) == 32
    ds = json.loads((REPO / conf.train["deepspeed"]).read_text())
    assert ds["zero_optimization"]["stage"] == 3
    # full weights on save, so checkpoint-final is servable after ZeRO-3
    assert ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True


def test_default_config_builds_trl_arguments(tmp_path: Path) -> None:
    # no GPU here: DeepSpeed and bf16 off, everything else as the paper run
    cfg = compose_sft(f"output_dir={tmp_path}", "train.deepspeed=null", "train.bf16=false")
    args = sft_args(SFTRunConfig.from_hydra(cfg), world_size=8)
    assert args.gradient_accumulation_steps == 4 and args.per_device_train_batch_size == 1
    assert args.learning_rate == 5e-5 and args.num_train_epochs == 3 and args.max_length == 40_960
    assert args.assistant_only_loss is False and args.model_init_kwargs["dtype"] == "bfloat16"


def test_debug_config_is_the_tiny_cpu_run() -> None:
    conf = SFTRunConfig.from_hydra(compose_sft("sft=debug"))
    assert conf.model.kind == "tiny" and conf.model.dtype == "float32"
    assert conf.data.corpus == "runs/synth-debug/corpus/sft" and conf.output_dir == "runs/sft-debug"
    assert conf.train["deepspeed"] is None and conf.train["bf16"] is False and conf.train["max_steps"] > 0
    assert conf.train["max_length"] <= 8192  # the tiny model's position limit


def test_lora_option_composes() -> None:
    conf = SFTRunConfig.from_hydra(compose_sft("sft=debug", "lora.enabled=true", "lora.r=4"))
    assert conf.lora.enabled and conf.lora.r == 4 and conf.lora.merge_on_save


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("global_batch_size=3", "not a multiple"),
        ("+train.output_dir=/elsewhere", "set by the runner"),
        ("data.full_fraction=1.5", "full_fraction"),
        ("+model.nme_or_path=x", "nme_or_path"),
    ],
)
def test_bad_settings_are_refused_with_the_key(override: str, message: str) -> None:
    with pytest.raises(SFTConfigError, match=message):
        SFTRunConfig.from_hydra(compose_sft("sft=debug", override)).accumulation_steps(2)


def test_unknown_trl_field_is_named(tmp_path: Path) -> None:
    conf = SFTRunConfig.from_hydra(
        compose_sft("sft=debug", f"output_dir={tmp_path}", "+train.learning_rat=1")
    )
    with pytest.raises(TypeError, match="learning_rat"):
        sft_args(conf, world_size=1)
