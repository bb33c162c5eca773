"""The synthesized SFT corpus -> a mixed, tokenized dataset of (input_ids, labels) for SFTTrainer.

    (library module; `python -m training.sft` uses it, see training/sft/__init__.py)

The corpus is what `make synth` writes with synthesis/export.py: a `datasets` dataset saved with
`save_to_disk` under <out_dir>/corpus/sft, one `stateguard.artifacts.sft_rows.SftRow` per row
(its columns are named here through `SftColumn`: the rows are read columnwise, in `datasets`
batches, so they are not built as models). Each row holds `messages` (JSON chat: system, the task
and observation as user turns, the manager's tool calls as assistant turns, tool results as tool
turns, one control action last per activation), `tools` (JSON function schemas) and `kind`:
`atomic` (one manager activation) or `full` (a whole trajectory). Rendering and masking are in
training/sft/render.py; here the kinds are mixed and every sample is tokenized.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from stateguard.artifacts.sft_rows import SftColumn, SftKind
from training.sft.config import DataConfig, TemplateConfig
from training.sft.render import RenderError, encode, segments

__all__ = ["CorpusError", "CorpusStats", "load_corpus", "mix", "tokenize_corpus"]

log = logging.getLogger(__name__)
REQUIRED = tuple(c.value for c in SftColumn)


class CorpusError(FileNotFoundError):
    """The SFT corpus is missing or is not what synthesis/export.py writes."""


class CorpusStats(BaseModel):
    samples: dict[str, int] = Field(description="mixed samples per kind (atomic / full)")
    sequences: int = Field(description="training sequences (more than samples with sequences=per_call)")
    tokens: int
    trained_tokens: int = Field(description="tokens with a label: the manager's own output")
    over_max_length: int = Field(
        description="sequences longer than max_length (truncated by TRL, or dropped: data.over_length)"
    )
    dropped: int = Field(
        0, description="sequences left out for being longer than max_length (over_length=drop)"
    )
    prompt_token_mismatch: int = Field(
        description="samples whose last serving prompt tokenizes differently as one string than per segment"
    )


def load_corpus(path: str | Path) -> Any:
    """The corpus as a `datasets.Dataset`; a clear error when it is missing or malformed."""
    from datasets import Dataset, load_from_disk

    root = Path(path)
    if not (root / "dataset_info.json").is_file():
        raise CorpusError(
            f"no SFT corpus at {root} (no dataset_info.json). The corpus is written by `make synth` "
            "(synthesis/export.py) to <out_dir>/corpus/sft: run `make synth` for runs/synth/corpus/sft, "
            "or `make synth ARGS=synth=debug` for runs/synth-debug/corpus/sft, or point "
            "data.corpus=<path> at one."
        )
    ds = load_from_disk(str(root))
    if not isinstance(ds, Dataset):
        raise CorpusError(
            f"{root} holds a {type(ds).__name__}; expected one Dataset as synthesis/export.py writes"
        )
    missing = [c for c in REQUIRED if c not in ds.column_names]
    if missing:
        raise CorpusError(
            f"{root} lacks column(s) {missing} (has {ds.column_names}); re-export it with `make synth`"
        )
    return ds


def mix(ds: Any, cfg: DataConfig) -> Any:
    """Atomic and full samples in the configured proportion, shuffled with cfg.seed, capped at max_samples."""
    rng = random.Random(cfg.seed)
    kinds = ds[SftColumn.KIND]
    atomic = [i for i, k in enumerate(kinds) if k == SftKind.ATOMIC]
    full = [i for i, k in enumerate(kinds) if k == SftKind.FULL]
    f = cfg.full_fraction
    if f is not None:
        if f == 1.0:
            atomic = []
        elif f == 0.0:
            full = []
        else:
            if not full:
                raise CorpusError(f"data.full_fraction={f} but the corpus has no full-trajectory samples")
            want = max(1, round(f * len(atomic) / (1.0 - f)))
            order = rng.sample(full, len(full))
            full = (order * math.ceil(want / len(order)))[:want]
    chosen = atomic + full
    if not chosen:
        raise CorpusError(
            f"the mix is empty (atomic {len(atomic)}, full {len(full)}); check data.full_fraction"
        )
    rng.shuffle(chosen)
    if cfg.max_samples is not None:
        chosen = chosen[: cfg.max_samples]
    return ds.select(chosen)


def _tokenize_batch(
    batch: dict[str, list[Any]], tokenizer: Any, data: DataConfig, tpl: TemplateConfig
) -> dict[str, Any]:
    out: dict[str, list[Any]] = {"input_ids": [], "labels": [], SftColumn.KIND.value: [], "mismatch": []}
    columns = (batch[SftColumn.MESSAGES], batch[SftColumn.TOOLS], batch[SftColumn.KIND])
    for raw_messages, raw_tools, kind in zip(*columns, strict=True):
        messages, tools = json.loads(raw_messages), json.loads(raw_tools)
        try:
            seqs = segments(
                tokenizer,
                messages,
                tools,
                mode=data.sequences,
                template_kwargs=tpl.chat_template_kwargs,
                end_of_turn=tpl.end_of_turn,
            )
        except RenderError as exc:
            raise RenderError(f"{kind} sample: {exc}") from exc
        for parts in seqs:
            ids, labels = encode(tokenizer, parts)
            # the last call's serving prompt as the server tokenizes it: one string, not per segment
            whole = list(
                tokenizer("".join(p.text for p in parts[:-1]), add_special_tokens=False)["input_ids"]
            )
            target = len(tokenizer(parts[-1].text, add_special_tokens=False)["input_ids"])
            out["input_ids"].append(ids)
            out["labels"].append(labels)
            out[SftColumn.KIND.value].append(kind)
            out["mismatch"].append(whole != ids[: len(ids) - target])
    return out


def tokenize_corpus(
    ds: Any, tokenizer: Any, data: DataConfig, tpl: TemplateConfig, max_length: int | None
) -> tuple[Any, CorpusStats]:
    """(dataset of input_ids / labels / kind, stats), kept in memory: the corpus folder is never written."""
    out = ds.map(
        _tokenize_batch,
        batched=True,
        batch_size=16,
        remove_columns=ds.column_names,
        fn_kwargs={"tokenizer": tokenizer, "data": data, "tpl": tpl},
        num_proc=data.num_proc,
        keep_in_memory=True,
        desc="render + tokenize (serving template)",
    )
    lengths = [len(x) for x in out["input_ids"]]
    trained_per = [sum(1 for t in labels if t != -100) for labels in out["labels"]]
    trained = sum(trained_per)
    stats = CorpusStats(
        samples=dict(Counter(ds[SftColumn.KIND])),
        sequences=len(out),
        tokens=sum(lengths),
        trained_tokens=trained,
        over_max_length=sum(n > max_length for n in lengths) if max_length else 0,
        prompt_token_mismatch=sum(out["mismatch"]),
    )
    if stats.over_max_length and data.over_length == "drop" and max_length:
        keep = [i for i, n in enumerate(lengths) if n <= max_length]
        if not keep:
            raise CorpusError(
                f"every sequence is longer than train.max_length={max_length} (shortest {min(lengths)} tokens); "
                "raise max_length or set data.over_length=truncate"
            )
        out = out.select(keep)
        stats.dropped = stats.sequences - len(keep)
        stats.tokens = sum(lengths[i] for i in keep)
        stats.trained_tokens = sum(trained_per[i] for i in keep)
        stats.sequences = len(keep)
        log.warning(
            "dropped %d sequences longer than max_length=%s (data.over_length=drop)",
            stats.dropped,
            max_length,
        )
    elif stats.over_max_length:
        log.warning(
            "%d of %d sequences exceed max_length=%s; TRL truncates them (train.truncation_mode)",
            stats.over_max_length,
            stats.sequences,
            max_length,
        )
    if stats.prompt_token_mismatch:
        log.warning(
            "%d sequences: a serving prompt tokenizes differently as one string than per segment",
            stats.prompt_token_mismatch,
        )
    return out.remove_columns(["mismatch"]), stats
