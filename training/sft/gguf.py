"""GGUF checkpoints on the PyTorch side: a GGUF base for SFT, and the fine-tuned manager back as GGUF.

    python -m training.sft sft=local        # model.kind=gguf: Qwen2.5-Coder-0.5B from `make setup-local`

* `resolve_gguf` names the file: a key of stateguard.llm.local_model's registry (joined from its
  registry packages and sha256-checked there) or a path to any .gguf file.
* `convert_base` loads it through transformers' GGUF support (tokenizer with the chat template
  the file carries; weights dequantized) once, into an ordinary Hugging Face folder that the
  trainer, the LoRA merge and `transformers serve` read like any other base model. A marker
  holding the file's sha256 makes the conversion happen once per file, and resumed runs skip it.
* `export_gguf` writes the fine-tuned manager as a GGUF that llama.cpp serves (`make serve-local
  CKPT=<file>.gguf`): every metadata field and every tensor LoRA did not touch is copied byte for
  byte from the base file (so tokenizer, template and the untouched quantized weights stay the
  base's), and each touched weight is written as dequantized base + the LoRA delta, quantized
  to Q8_0 (F16 where rows do not split into 32-value blocks). The chat template written into it
  is the one the run trained with, made to accept tool-call arguments as JSON strings too
  (`serving_template`): OpenAI clients send them as strings, and llama-cpp-python, unlike
  `transformers serve` and vLLM, hands them to the template unparsed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from stateguard.llm.local_model import REGISTRY, assemble, file_sha256

__all__ = [
    "GGUFExport",
    "GGUFModelError",
    "convert_base",
    "export_gguf",
    "gguf_to_hf_names",
    "resolve_gguf",
    "serving_template",
]

log = logging.getLogger(__name__)
MARKER = "gguf_source.json"
_SKIP_KEYS = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count", "general.architecture"}


class GGUFModelError(ValueError):
    """A GGUF base cannot be used (missing file, unknown architecture, a tensor without a match)."""


class GGUFExport(BaseModel):
    path: str
    tensors: int
    rewritten: int
    rewritten_type: dict[str, int]
    bytes: int


def resolve_gguf(spec: str, cache_dir: str | Path = ".venv/models") -> Path:
    """A registry key (0.5b, smollm2, ...) -> its joined, hash-checked file; otherwise a path to a .gguf."""
    if spec in REGISTRY:
        return assemble(spec, Path(cache_dir))
    path = Path(spec)
    if not path.is_file():
        raise GGUFModelError(
            f"model.name_or_path={spec!r} is neither a local model key ({', '.join(REGISTRY)}) nor a .gguf "
            f"file. Fix: `make setup-local MODEL=0.5b` (or MODEL=smollm2) and use the key, or give a path."
        )
    return path


def convert_base(gguf: Path, target: Path, dtype: str) -> Path:
    """The GGUF as a Hugging Face folder (weights in `dtype`, tokenizer + chat template), converted once."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    digest = file_sha256(gguf)
    marker = target / MARKER
    want = {"sha256": digest, "dtype": dtype}
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == want:
        return target
    log.info("converting %s into %s (transformers GGUF loader, dequantized to %s)", gguf, target, dtype)
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    # the converted folder must not point back at the file: it is a plain checkpoint from here on
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype) if dtype != "auto" else "auto"
    )
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    (tmp / MARKER).write_text(json.dumps(want) + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # a killed conversion leaves only the .tmp folder, never a half base
    return target


_ARGS_TOJSON = re.compile(r"(\b[\w.]+\.arguments)\s*\|\s*tojson")


def serving_template(template: str) -> str:
    """The template with every `X.arguments | tojson` also accepting X.arguments as a JSON string.

    A string is written as it is, so a server that does not parse arguments renders the very text
    that training rendered from the parsed mapping (the corpus's JSON uses the same separators).
    """
    return _ARGS_TOJSON.sub(r"(\1 if \1 is string else \1 | tojson)", template)


def gguf_to_hf_names(model: Any) -> dict[str, str]:
    """GGUF tensor name (blk.0.attn_q.weight) -> parameter name (model.layers.0.self_attn.q_proj.weight).

    The map transformers itself loads GGUF files with, so export and import agree by construction.
    """
    from transformers.modeling_gguf_pytorch_utils import TensorProcessor, get_gguf_hf_weights_map

    return dict(get_gguf_hf_weights_map(model, TensorProcessor()))


def _to_gguf_layout(delta: Any, gguf_name: str, arch: str, config: Any) -> Any:
    """A weight delta in the layout llama.cpp stores: llama-family files keep q/k rows permuted.

    transformers un-permutes them on load (LlamaTensorProcessor); this is the inverse.
    """
    if arch != "llama" or not (".attn_q." in gguf_name or ".attn_k." in gguf_name):
        return delta
    heads = int(config.num_attention_heads)
    if ".attn_k." in gguf_name:
        heads = int(getattr(config, "num_key_value_heads", None) or heads)
    rows = delta.shape[0]
    return delta.reshape(heads, rows // heads // 2, 2, *delta.shape[1:]).swapaxes(1, 2).reshape(delta.shape)


def export_gguf(
    base: Path,
    deltas: Mapping[str, Any],
    config: Any,
    names: Mapping[str, str],
    out: Path,
    chat_template: str | None = None,
) -> GGUFExport:
    """Write `out`: the base GGUF with `deltas` (parameter name -> float32 numpy delta) added in.

    `names` is gguf_to_hf_names() of the architecture; every delta must land on a tensor, else
    nothing is written. `chat_template` (the one training rendered with) replaces the file's,
    through serving_template(); no deltas and no template give a byte-identical copy of the tensors.
    """
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize, quantize

    reader = GGUFReader(str(base))
    arch = str(reader.fields["general.architecture"].contents())
    by_hf = {hf: g for g, hf in names.items()}
    missing = sorted(set(deltas) - set(by_hf))
    tensor_names = {t.name for t in reader.tensors}
    missing += sorted(by_hf[n] for n in deltas if n in by_hf and by_hf[n] not in tensor_names)
    if missing:
        raise GGUFModelError(
            f"{base}: no GGUF tensor for {missing[:5]} (architecture {arch}); nothing written"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    writer = GGUFWriter(str(tmp), arch)
    for key, field in reader.fields.items():
        if key in _SKIP_KEYS or (chat_template is not None and key == "tokenizer.chat_template"):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type=sub)
    if chat_template is not None:
        writer.add_key_value("tokenizer.chat_template", serving_template(chat_template), GGUFValueType.STRING)
    changed = {by_hf[n]: d for n, d in deltas.items()}
    kinds: dict[str, int] = {}
    for t in reader.tensors:
        if t.name not in changed:
            writer.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)  # byte-exact copy
            continue
        weight = dequantize(t.data, t.tensor_type).astype(np.float32)
        delta = _to_gguf_layout(np.asarray(changed[t.name], dtype=np.float32), t.name, arch, config)
        if delta.shape != weight.shape:
            raise GGUFModelError(f"{t.name}: delta shape {delta.shape} != GGUF tensor {weight.shape}")
        qtype = GGMLQuantizationType.Q8_0 if weight.shape[-1] % 32 == 0 else GGMLQuantizationType.F16
        data = quantize(weight + delta, qtype)
        writer.add_tensor(t.name, data, raw_dtype=qtype)
        kinds[qtype.name] = kinds.get(qtype.name, 0) + 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)
    return GGUFExport(
        path=str(out),
        tensors=len(reader.tensors),
        rewritten=len(changed),
        rewritten_type=kinds,
        bytes=out.stat().st_size,
    )
