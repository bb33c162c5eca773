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
GGUF_BASE = "base-gguf"
GGUF_OUT = "manager.gguf"
GGUF_BASE_OUT = "base.gguf"  # the base, served through the same template: the "before" of a comparison


class SFTResult(BaseModel):
    output_dir: str
    checkpoint: str = Field(description="the servable checkpoint (model + tokenizer + chat template)")
    gguf: str | None = Field(None, description="the manager as a GGUF for llama.cpp (model.kind=gguf)")
    base_model: str
    resumed_from: str | None
    global_step: int
    losses: list[float] = Field(description="training loss at each logging step, in order")
    trainable_parameters: int
    lora: bool
    world_size: int
    data: CorpusStats
    elapsed_s: float
    train_runtime_s: float = Field(0.0, description="seconds inside trainer.train() in this invocation")
    tokens_seen: int = Field(
        0, description="input tokens through the model in this invocation (padding included)"
    )
    tokens_per_s: float = Field(0.0, description="tokens_seen / train_runtime_s (forward + backward)")
    peak_rss_gib: float = Field(0.0, description="peak resident memory of this process")
    stopped_by_budget: bool = Field(False, description="time_budget_min ended this invocation early")


def base_model_path(conf: SFTRunConfig) -> str:
    """The base model to start from; the tiny Qwen3 is built once into <output_dir>/base-tiny, a GGUF
    file is converted once into <output_dir>/base-gguf."""
    if conf.model.kind == "hf":
        return conf.model.name_or_path
    if conf.model.kind == "gguf":
        from training.sft.gguf import convert_base, resolve_gguf

        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise SFTConfigError(
                "model.kind=gguf converts the base inside the run, which several processes would race on; "
                "run once on one process (it writes <output_dir>/base-gguf), then pass model.kind=hf "
                "model.name_or_path=<output_dir>/base-gguf"
            )
        gguf = resolve_gguf(conf.model.name_or_path, conf.model.models_dir)
        return str(convert_base(gguf, Path(conf.output_dir) / GGUF_BASE, conf.model.dtype))
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
        "include_num_input_tokens_seen": conf.train.get("include_num_input_tokens_seen", True),
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


def lora_config(conf: SFTRunConfig, base: str) -> Any:
    if not conf.lora.enabled:
        return None
    from peft import LoraConfig

    lo = conf.lora
    targets: Any = lo.target_modules
    layers = None
    if lo.top_layers is not None:
        from transformers import AutoConfig

        total = int(AutoConfig.from_pretrained(base).num_hidden_layers)
        layers = list(range(max(0, total - lo.top_layers), total))
        if isinstance(targets, str):
            # peft takes layers_to_transform only with a list of names; "all-linear" of the top layers is
            # then the attention and MLP projections of those layers (Qwen / Llama module names)
            targets = rf".*\.layers\.({'|'.join(map(str, layers))})\.(self_attn|mlp)\.\w+_proj"
            layers = None
    return LoraConfig(
        r=lo.r,
        lora_alpha=lo.alpha,
        lora_dropout=lo.dropout,
        target_modules=targets,
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def labelled_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
    """Next-token cross entropy over the labelled positions only, the LM head applied to those alone.

    Equal to the causal-LM loss on the same labels (summed, divided by the labelled tokens of the
    whole accumulated batch, as the Trainer counts them), without materializing the logits of
    every prompt position: on CPU those dominate memory and a quarter of the work.
    """
    import torch.nn.functional as F

    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = inner.get_decoder()(
        input_ids=inputs["input_ids"], attention_mask=inputs.get("attention_mask"), use_cache=False
    ).last_hidden_state
    target = inputs["labels"][:, 1:]
    keep = target != -100
    logits = inner.get_output_embeddings()(hidden[:, :-1][keep]).float()
    total = F.cross_entropy(logits, target[keep], reduction="sum")
    count = num_items_in_batch if num_items_in_batch is not None else keep.sum()
    return total / count


def trainer_class(conf: SFTRunConfig) -> Any:
    from trl import SFTTrainer

    if not conf.labelled_logits:
        return SFTTrainer

    class LabelledLogitsTrainer(SFTTrainer):
        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None
        ) -> Any:
            loss = labelled_loss(model, inputs, num_items_in_batch)
            return (loss, None) if return_outputs else loss

    return LabelledLogitsTrainer


def budget_callback(minutes: float) -> Any:
    """Stops training, with a checkpoint, once `minutes` of this invocation have passed."""
    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):
        started = time.monotonic()
        hit = False

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            self.started = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if time.monotonic() - self.started > minutes * 60:
                self.hit = control.should_save = control.should_training_stop = True
            return control

    return TimeBudget()


def peak_rss_gib() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)  # KiB on Linux


def last_checkpoint(output_dir: str) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(output_dir) if Path(output_dir).is_dir() else None


def _lora_deltas(peft_model: Any) -> dict[str, Any]:
    """Parameter name of each LoRA-wrapped weight -> its float32 delta (B @ A x scale) as numpy."""
    from peft.tuners.lora import LoraLayer

    out = {}
    for name, module in peft_model.named_modules():
        if isinstance(module, LoraLayer):
            plain = name.removeprefix("base_model.model.")
            layer: Any = module  # get_delta_weight lives on the concrete layer classes
            delta = layer.get_delta_weight("default")
            out[f"{plain}.weight"] = delta.float().detach().numpy()
    return out


def _export_gguf(conf: SFTRunConfig, deltas: dict[str, Any], merged: Any, template: str) -> str:
    """manager.gguf (base + LoRA) and base.gguf (no delta), both with the template training used."""
    from training.sft.gguf import export_gguf, gguf_to_hf_names, resolve_gguf

    source = resolve_gguf(conf.model.name_or_path, conf.model.models_dir)
    names = gguf_to_hf_names(merged)
    out = Path(conf.output_dir)
    res = export_gguf(source, deltas, merged.config, names, out / GGUF_OUT, chat_template=template)
    export_gguf(source, {}, merged.config, names, out / GGUF_BASE_OUT, chat_template=template)
    log.info("GGUF for llama.cpp: %s (and %s)", res.model_dump_json(), out / GGUF_BASE_OUT)
    return res.path


def save_final(trainer: Any, conf: SFTRunConfig, base: str, tokenizer: Any) -> tuple[Path, str | None]:
    """<output_dir>/checkpoint-final, loadable by from_pretrained / vLLM / transformers serve, and for a
    GGUF base also <output_dir>/manager.gguf (llama.cpp, `make serve-local CKPT=...gguf`)."""
    final = Path(conf.output_dir) / FINAL
    gguf: str | None = None
    trainer.model.config.use_cache = True  # gradient checkpointing turns it off; serving wants it on
    if not (conf.lora.enabled and conf.lora.merge_on_save):
        trainer.save_model(str(final))  # weights (or the adapter) + tokenizer with its chat template
        return final, None
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
        peft_model = PeftModel.from_pretrained(model, str(adapter))
        want_gguf = conf.model.kind == "gguf" and conf.model.export_gguf
        deltas = _lora_deltas(peft_model) if want_gguf else {}  # before the merge folds them in
        merged = peft_model.merge_and_unload()
        merged.config.use_cache = True
        merged.save_pretrained(str(final))
        tokenizer.save_pretrained(str(final))
        if want_gguf:
            gguf = _export_gguf(conf, deltas, merged, str(tokenizer.chat_template))
    trainer.accelerator.wait_for_everyone()
    return final, gguf


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

    budget = budget_callback(conf.time_budget_min) if conf.time_budget_min else None
    trainer = trainer_class(conf)(
        model=base,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(conf, base),
        callbacks=[budget] if budget else None,
    )
    model: Any = trainer.model
    trainable = sum(int(p.numel()) for p in model.parameters() if p.requires_grad)
    resume = last_checkpoint(conf.output_dir) if conf.resume else None
    if resume:
        log.info("resuming from %s", resume)
    tokens_before = trainer.state.num_input_tokens_seen or 0
    out = trainer.train(resume_from_checkpoint=resume)
    runtime = float(out.metrics.get("train_runtime", 0.0))
    seen = int(trainer.state.num_input_tokens_seen or 0) - (tokens_before if not resume else 0)
    final, gguf = save_final(trainer, conf, base, tokenizer)
    result = SFTResult(
        output_dir=conf.output_dir,
        checkpoint=str(final),
        gguf=gguf,
        base_model=base,
        resumed_from=resume,
        global_step=trainer.state.global_step,
        losses=[float(e["loss"]) for e in trainer.state.log_history if "loss" in e],
        trainable_parameters=trainable,
        lora=conf.lora.enabled,
        world_size=world_size,
        data=stats,
        elapsed_s=round(time.perf_counter() - start, 2),
        train_runtime_s=round(runtime, 1),
        tokens_seen=seen,
        tokens_per_s=round(seen / runtime, 1) if runtime else 0.0,
        peak_rss_gib=peak_rss_gib(),
        stopped_by_budget=bool(budget and budget.hit),
    )
    if trainer.is_world_process_zero():
        Path(conf.output_dir, RESULT).write_text(
            json.dumps(result.model_dump(), indent=1) + "\n", encoding="utf-8"
        )
    return result
