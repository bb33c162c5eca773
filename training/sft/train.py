"""Manager SFT run (paper Sec. 3.4, B.4, Eq. 25): TRL SFTTrainer over the synthesized corpus.

    python -m training.sft                    # Qwen3-8B, Table 2 settings (GPU node; multi-GPU: __init__)
    python -m training.sft sft=debug          # tiny offline Qwen3 on CPU, about a minute

`run(cfg)` builds or names the base model, renders and masks the corpus as the server renders it
(training/sft/render.py), trains with loss only on the manager's own turns, resumes from the newest
checkpoint-N in output_dir, and writes <output_dir>/checkpoint-final: weights (LoRA merged unless
told otherwise), tokenizer and the same chat template the training used, which is what vLLM
(`make serve ARGS=model=...`) and `transformers serve` load. <output_dir>/sft_result.json
summarizes the run.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from pydantic import BaseModel, Field

from training.sft.config import SFTConfigError, SFTRunConfig
from training.sft.data import CorpusStats, load_corpus, mix, tokenize_corpus

__all__ = ["FINAL", "RESULT", "SFTResult", "run"]

log = logging.getLogger(__name__)
FINAL = "checkpoint-final"
RESULT = "sft_result.json"
TINY_BASE = "base-tiny"


class SFTResult(BaseModel):
    output_dir: str
    checkpoint: str = Field(description="the servable checkpoint (model + tokenizer + chat template)")
    base_model: str
    resumed_from: str | None
    global_step: int
    losses: list[float] = Field(description="training loss at each logging step, in order")
    trainable_parameters: int
    lora: bool
    world_size: int
    data: CorpusStats
    elapsed_s: float


def base_model_path(conf: SFTRunConfig) -> str:
    """The base model to start from; the tiny Qwen3 is built once into <output_dir>/base-tiny."""
    if conf.model.kind == "hf":
        return conf.model.name_or_path
    from training.tiny_model import build_tiny_model, is_built

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise SFTConfigError(
            "model.kind=tiny builds the base model inside the run, which several processes would race on; "
            "build it once (python -m training.tiny_model DIR) and pass model.kind=hf model.name_or_path=DIR"
        )
    target = Path(conf.output_dir) / TINY_BASE
    if not is_built(target, overfit_response=None, seed=conf.model.tiny_seed):
        log.info("building the tiny Qwen3 base into %s", target)
        build_tiny_model(target, overfit_response=None, seed=conf.model.tiny_seed)
    return str(target)


def load_tokenizer(base: str, conf: SFTRunConfig) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    path = conf.template.chat_template_path
    if path is not None:
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"template.chat_template_path={path} does not exist; give a .jinja file or null"
            )
        # the replacement is trained with and saved with the model, so serving renders with it too
        tokenizer.chat_template = Path(path).read_text(encoding="utf-8")
    if not tokenizer.chat_template:
        raise ValueError(f"{base} has no chat template; set template.chat_template_path to one")
    return tokenizer


def sft_args(conf: SFTRunConfig, world_size: int) -> Any:
    from trl import SFTConfig

    init: dict[str, Any] = {"dtype": conf.model.dtype}
    if conf.model.attn_implementation:
        init["attn_implementation"] = conf.model.attn_implementation
    kwargs = {
        "model_init_kwargs": init,
        **conf.train,
        "output_dir": conf.output_dir,
        "gradient_accumulation_steps": conf.accumulation_steps(world_size),
        "assistant_only_loss": False,  # our labels already mask everything but the manager's turns
        "completion_only_loss": False,
    }
    try:
        return SFTConfig(**kwargs)
    except TypeError as exc:
        raise TypeError(
            f"a key under `train:` is not a TRL SFTConfig field ({exc}); check its spelling"
        ) from exc
    except ValueError as exc:
        import torch

        if conf.train.get("bf16") and not torch.cuda.is_available():
            raise ValueError(
                f"{exc}\nconfigs/sft.yaml is the GPU recipe (bf16, DeepSpeed ZeRO-3). On a CPU machine run "
                "`python -m training.sft sft=debug`, or override train.bf16=false train.deepspeed=null."
            ) from exc
        raise


def lora_config(conf: SFTRunConfig) -> Any:
    if not conf.lora.enabled:
        return None
    from peft import LoraConfig

    lo = conf.lora
    return LoraConfig(
        r=lo.r,
        lora_alpha=lo.alpha,
        lora_dropout=lo.dropout,
        target_modules=lo.target_modules,
        task_type="CAUSAL_LM",
    )


def last_checkpoint(output_dir: str) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(output_dir) if Path(output_dir).is_dir() else None


def save_final(trainer: Any, conf: SFTRunConfig, base: str, tokenizer: Any) -> Path:
    """<output_dir>/checkpoint-final, loadable by from_pretrained / vLLM / transformers serve."""
    final = Path(conf.output_dir) / FINAL
    trainer.model.config.use_cache = True  # gradient checkpointing turns it off; serving wants it on
    if not (conf.lora.enabled and conf.lora.merge_on_save):
        trainer.save_model(str(final))  # weights (or the adapter) + tokenizer with its chat template
        return final
    adapter = Path(conf.output_dir) / "adapter-final"
    trainer.save_model(str(adapter))
    trainer.accelerator.wait_for_everyone()
    # merge on one process, from the saved adapter, so it works after ZeRO-3 partitioning too
    if trainer.is_world_process_zero():
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        dtype = getattr(torch, conf.model.dtype) if conf.model.dtype != "auto" else "auto"
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
        merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
        merged.config.use_cache = True
        merged.save_pretrained(str(final))
        tokenizer.save_pretrained(str(final))
    trainer.accelerator.wait_for_everyone()
    return final


def run(cfg: DictConfig | dict[str, Any]) -> SFTResult:
    start = time.perf_counter()
    conf = SFTRunConfig.from_hydra(cfg)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    corpus = load_corpus(conf.corpus_path())  # fail fast, before any model download or build
    args = sft_args(conf, world_size)  # with DeepSpeed ZeRO-3 it must exist before the model is loaded
    base = base_model_path(conf)
    tokenizer = load_tokenizer(base, conf)
    dataset, stats = tokenize_corpus(
        mix(corpus, conf.data), tokenizer, conf.data, conf.template, args.max_length
    )
    log.info("SFT data: %s", stats.model_dump_json())

    from trl import SFTTrainer

    trainer = SFTTrainer(
        model=base,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(conf),
    )
    model: Any = trainer.model
    trainable = sum(int(p.numel()) for p in model.parameters() if p.requires_grad)
    resume = last_checkpoint(conf.output_dir) if conf.resume else None
    if resume:
        log.info("resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    final = save_final(trainer, conf, base, tokenizer)
    result = SFTResult(
        output_dir=conf.output_dir,
        checkpoint=str(final),
        base_model=base,
        resumed_from=resume,
        global_step=trainer.state.global_step,
        losses=[float(e["loss"]) for e in trainer.state.log_history if "loss" in e],
        trainable_parameters=trainable,
        lora=conf.lora.enabled,
        world_size=world_size,
        data=stats,
        elapsed_s=round(time.perf_counter() - start, 2),
    )
    if trainer.is_world_process_zero():
        Path(conf.output_dir, RESULT).write_text(
            json.dumps(result.model_dump(), indent=1) + "\n", encoding="utf-8"
        )
    return result
