"""Typed view of configs/sft.yaml: what each key means, checked before anything heavy is loaded.

    python -m training.sft                  # configs/sft.yaml (paper defaults, Table 2)
    python -m training.sft sft=debug        # configs/sft/debug.yaml (tiny Qwen3 on CPU)

The `train:` section is handed to TRL's `SFTConfig` as is (its own field names and help); the
rest is ours. `global_batch_size` is the paper's batch size: gradient accumulation is derived
from it, the per-device batch and the number of processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["DataConfig", "LoraSettings", "ModelConfig", "SFTConfigError", "SFTRunConfig", "TemplateConfig"]


class SFTConfigError(ValueError):
    """The SFT configuration is inconsistent; the message names the key and how to fix it."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Strict):
    kind: Literal["hf", "tiny", "gguf"] = Field(
        "hf",
        description="hf: load name_or_path (Hub id or local checkpoint); tiny: build the offline tiny Qwen3; "
        "gguf: a GGUF file loaded through transformers (dequantized), see training/sft/gguf.py",
    )
    name_or_path: str = Field(
        "Qwen/Qwen3-8B",
        description="Hub id or local folder of the base model (kind=hf); for kind=gguf a local model key of "
        "stateguard.llm.local_model (0.5b, smollm2, ...) or a path to a .gguf file",
    )
    models_dir: str = Field(
        ".venv/models", description="where `make setup-local` joins the local models' GGUF files (kind=gguf)"
    )
    export_gguf: bool = Field(
        True, description="kind=gguf: also write <output_dir>/manager.gguf (base + LoRA delta) for llama.cpp"
    )
    dtype: str = Field(
        "bfloat16", description="dtype the weights are loaded in: bfloat16 | float16 | float32 | auto"
    )
    attn_implementation: str | None = Field(
        None, description="sdpa | flash_attention_2 | eager; null = default"
    )
    tiny_seed: int = Field(0, description="seed of the tiny model's random init (kind=tiny)")


class DataConfig(_Strict):
    corpus: str = Field(description="the SFT corpus folder written by `make synth` (<out_dir>/corpus/sft)")
    full_fraction: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="share of full-trajectory samples in the mix; atomic samples are all kept and the full "
        "ones are subsampled or repeated to reach it; null = the corpus as exported; 0 = atomic only; "
        "1 = full only",
    )
    max_samples: int | None = Field(None, gt=0, description="cap on mixed samples (debug runs); null = all")
    sequences: Literal["conversation", "per_call"] = Field(
        "conversation",
        description="conversation: one sequence per sample (needs a prefix-preserving template, checked); "
        "per_call: one sequence per manager call with its exact serving prompt",
    )
    num_proc: int | None = Field(None, gt=0, description="processes for tokenizing the corpus; null = one")
    over_length: Literal["truncate", "drop"] = Field(
        "truncate",
        description="sequences longer than train.max_length: truncate (TRL cuts them, train.truncation_mode) "
        "or drop (an atomic sample cut at its end loses the very decision it teaches; short-context runs)",
    )
    seed: int = Field(0, description="seed of the mix (subsampling / repetition / max_samples)")


class TemplateConfig(_Strict):
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="passed to apply_chat_template at training time; the serving endpoint must send the same "
        "(configs/endpoint: extra_body.chat_template_kwargs)",
    )
    chat_template_path: str | None = Field(
        None, description="a .jinja file that replaces the base model's template (trained and saved with it)"
    )
    end_of_turn: str | None = Field(
        None, description="token closing an assistant turn; null = tokenizer.eos_token"
    )


class LoraSettings(_Strict):
    enabled: bool = Field(False, description="train LoRA adapters (peft) instead of all weights")
    r: int = Field(64, gt=0, description="adapter rank")
    alpha: int = Field(128, gt=0, description="scaling numerator (lora_alpha)")
    dropout: float = Field(0.05, ge=0.0, lt=1.0, description="dropout on the adapter input")
    target_modules: str | list[str] = Field("all-linear", description="modules that get adapters")
    top_layers: int | None = Field(
        None,
        gt=0,
        description="adapt only the last N decoder layers (peft layers_to_transform): backward then stops "
        "there, which is what makes CPU runs affordable; null = every layer",
    )
    merge_on_save: bool = Field(
        True,
        description="write merged full weights to checkpoint-final (what vLLM / transformers serve load)",
    )


class SFTRunConfig(_Strict):
    output_dir: str = Field(description="checkpoints (checkpoint-N), checkpoint-final and sft_result.json")
    resume: bool = Field(True, description="continue from the newest checkpoint-N in output_dir, if any")
    global_batch_size: int = Field(32, gt=0, description="sequences per optimizer step over all processes")
    labelled_logits: bool = Field(
        False,
        description="compute the LM head and the loss only at labelled positions (the manager's own tokens): "
        "the same loss without the [sequence x vocabulary] logits; for long prompts with short targets on CPU. "
        "false = TRL's own loss (with its token-accuracy metrics)",
    )
    time_budget_min: float | None = Field(
        None,
        gt=0,
        description="stop (with a checkpoint) after this many minutes of training in one invocation; "
        "run again to resume; null = no limit (train.max_steps / epochs decide)",
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig
    template: TemplateConfig = Field(default_factory=TemplateConfig)
    lora: LoraSettings = Field(default_factory=LoraSettings)
    train: dict[str, Any] = Field(default_factory=dict, description="TRL SFTConfig fields, passed through")

    @model_validator(mode="after")
    def _ours_not_trl(self) -> SFTRunConfig:
        taken = {"output_dir", "gradient_accumulation_steps", "resume_from_checkpoint"} & set(self.train)
        if taken:
            raise ValueError(
                f"train.{sorted(taken)[0]} is set by the runner (output_dir, resume, global_batch_size); "
                "use the top-level key instead"
            )
        return self

    @classmethod
    def from_hydra(cls, cfg: DictConfig | dict[str, Any]) -> SFTRunConfig:
        data = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SFTConfigError(f"configs/sft.yaml (after overrides) is invalid:\n{exc}") from exc

    def accumulation_steps(self, world_size: int) -> int:
        """Gradient accumulation so that per-device batch x processes x accumulation == global_batch_size."""
        per_device = int(self.train.get("per_device_train_batch_size", 8))
        step = per_device * world_size
        if self.global_batch_size % step:
            raise SFTConfigError(
                f"global_batch_size={self.global_batch_size} is not a multiple of "
                f"per_device_train_batch_size ({per_device}) x processes ({world_size}) = {step}; "
                "change one of them"
            )
        return self.global_batch_size // step

    def corpus_path(self) -> Path:
        return Path(self.data.corpus)
