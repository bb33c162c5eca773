"""Manager SFT end to end on the tiny Qwen3 (CPU): loss, weights, servable checkpoint, resume, LoRA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the train extra: pip install -e '.[dev,train]'")
pytest.importorskip("peft", reason="needs the train extra: pip install -e '.[dev,train]'")

from sft_support import TRAIN_STEPS, compose_sft, debug_overrides  # noqa: E402

from training.sft.data import CorpusError  # noqa: E402
from training.sft.render import serving_prompt  # noqa: E402
from training.sft.train import FINAL, RESULT, run  # noqa: E402


def _weights(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


# the 24-step training run (a minute or more of CPU on 2 cores): `make test-slow`, run by CI
@pytest.mark.slow
def test_loss_decreases(trained: Any) -> None:
    losses = trained.losses
    assert trained.global_step == TRAIN_STEPS and len(losses) == TRAIN_STEPS
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.5, losses
    assert trained.data.trained_tokens < trained.data.tokens / 5  # the loss sees only the manager's turns
    saved = json.loads((Path(trained.output_dir) / RESULT).read_text())
    assert saved["global_step"] == TRAIN_STEPS and saved["checkpoint"] == trained.checkpoint


@pytest.mark.slow
def test_every_trainable_tensor_changed(trained: Any) -> None:
    import torch

    before, after = _weights(Path(trained.base_model)), _weights(Path(trained.checkpoint))
    assert before.keys() == after.keys()
    unchanged = [name for name in before if torch.equal(before[name], after[name])]
    assert unchanged == []
    assert trained.trainable_parameters == sum(t.numel() for t in before.values())


@pytest.mark.slow
def test_checkpoint_reloads_with_its_template_and_generates(trained: Any, sft_corpus: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.sft.data import load_corpus

    final = Path(trained.checkpoint)
    assert final.name == FINAL and (final / "chat_template.jinja").is_file()
    tokenizer = AutoTokenizer.from_pretrained(final)
    base_tokenizer = AutoTokenizer.from_pretrained(trained.base_model)
    # trained and served with the same template
    assert tokenizer.chat_template == base_tokenizer.chat_template
    model = AutoModelForCausalLM.from_pretrained(final)
    assert model.config.use_cache is True
    row = next(r for r in load_corpus(sft_corpus) if r["kind"] == "atomic")
    messages, tools = json.loads(row["messages"]), json.loads(row["tools"])
    first_call = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
    text = serving_prompt(tokenizer, messages[:first_call], tools)
    prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones((1, len(prompt)), dtype=torch.long),
            max_new_tokens=8,
            do_sample=False,
        )
    new = out[0, len(prompt) :].tolist()
    assert 0 < len(new) <= 8
    # every target starts with it, and 24 steps are enough to learn that much (12 were enough on the
    # corpus before the shared teacher; on its corpus they are not)
    assert tokenizer.convert_ids_to_tokens(new[0]) == "<tool_call>"


@pytest.mark.slow
def test_resume_continues_from_the_last_checkpoint(trained: Any, sft_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(trained.output_dir, out)  # a copy, so the other tests keep the original checkpoint-final
    more = run(compose_sft(*debug_overrides(sft_corpus, Path(trained.base_model), out, TRAIN_STEPS + 2)))
    assert more.resumed_from == str(out / f"checkpoint-{TRAIN_STEPS}")
    assert more.global_step == TRAIN_STEPS + 2
    assert more.losses[:TRAIN_STEPS] == trained.losses  # the history carried over, then two new steps
    assert len(more.losses) == TRAIN_STEPS + 2


# a LoRA training run, merge and save (60 s on a busy 2-core machine): `make test-slow`, run by CI,
# where the corpus and base model the 24-step run builds are already there
@pytest.mark.slow
def test_lora_trains_adapters_and_saves_merged_weights(
    sft_corpus: Path, tiny_base: Path, tmp_path: Path
) -> None:
    import torch

    overrides = debug_overrides(sft_corpus, tiny_base, tmp_path, 2)
    result = run(
        compose_sft(*overrides, "lora.enabled=true", "lora.r=4", "lora.alpha=8", "data.max_samples=4")
    )
    final = Path(result.checkpoint)
    assert (tmp_path / "adapter-final" / "adapter_config.json").is_file()
    assert not (final / "adapter_config.json").exists() and (final / "chat_template.jinja").is_file()
    before, after = _weights(tiny_base), _weights(final)
    assert before.keys() == after.keys()  # plain model weights: what vLLM / transformers serve load
    assert result.trainable_parameters < sum(t.numel() for t in before.values()) / 2
    changed = [n for n in before if not torch.equal(before[n], after[n])]
    assert changed and all("proj" in n for n in changed)  # only adapted linear layers moved


def test_missing_corpus_fails_before_any_model_work(tmp_path: Path) -> None:
    cfg = compose_sft("sft=debug", f"output_dir={tmp_path / 'out'}", f"data.corpus={tmp_path / 'none'}")
    with pytest.raises(CorpusError, match=r"make synth ARGS=synth=debug"):
        run(cfg)
    assert not (tmp_path / "out" / "base-tiny").exists()
