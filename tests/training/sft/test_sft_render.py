"""Rendering and masking: training sequences are exactly what the server renders, loss only on the manager.

"Serving" here is `transformers serve`'s own request path: its message normalization
(BaseHandler.get_processor_inputs_from_messages) and then the tokenizer's chat template with
add_generation_prompt=True, tokenized -- compared token for token with the training sequence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the train extra: pip install -e '.[dev,train]'")

from stateguard.parser import parse_response  # noqa: E402
from training.sft.config import DataConfig, TemplateConfig  # noqa: E402
from training.sft.data import CorpusError, load_corpus, mix, tokenize_corpus  # noqa: E402
from training.sft.render import RenderError, encode, segments  # noqa: E402

IM_END = "<|im_end|>"


def _rows(corpus: Path, kind: str, min_calls: int = 1) -> list[dict[str, Any]]:
    rows = [r for r in load_corpus(corpus) if r["kind"] == kind]
    return [r for r in rows if sum(m["role"] == "assistant" for m in json.loads(r["messages"])) >= min_calls]


def _runs(labels: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each maximal run of trained positions."""
    runs, start = [], None
    for i, lab in enumerate([*labels, -100]):
        if lab != -100 and start is None:
            start = i
        elif lab == -100 and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _expected_turn(message: dict[str, Any]) -> str:
    """The manager's turn as the tiny template writes it, built here from the corpus message alone."""
    calls = []
    for call in message["tool_calls"]:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        calls.append(f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>')
    return "\n".join(calls) + IM_END


def _served_prompt_ids(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> list[int]:
    from transformers.cli.serving.utils import BaseHandler, Modality

    inputs = BaseHandler.get_processor_inputs_from_messages(messages, Modality.LLM)
    out = tokenizer.apply_chat_template(
        inputs, add_generation_prompt=True, tools=tools, tokenize=True, return_dict=True
    )
    return list(out["input_ids"])


def test_labels_are_exactly_the_manager_turns(sft_corpus: Path, tiny_tokenizer: Any) -> None:
    row = _rows(sft_corpus, "atomic", min_calls=2)[0]
    messages, tools = json.loads(row["messages"]), json.loads(row["tools"])
    (parts,) = segments(tiny_tokenizer, messages, tools)
    ids, labels = encode(tiny_tokenizer, parts)
    turns = [m for m in messages if m["role"] == "assistant"]
    runs = _runs(labels)
    assert len(runs) == len(turns) >= 2
    for (a, b), turn in zip(runs, turns, strict=True):
        assert tiny_tokenizer.decode(ids[a:b]) == _expected_turn(turn)
    trained = tiny_tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab != -100])
    assert trained == "".join(_expected_turn(t) for t in turns)
    # everything else -- system prompt, tool schemas, task, observation, tool results -- is masked
    masked = tiny_tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab == -100])
    for m in messages:
        if m["role"] in ("system", "user", "tool"):
            assert m["content"] in masked and m["content"] not in trained
    assert '"name": "check_execution"' in masked  # a tool schema is context, never a target
    # the end-of-turn token is trained: the model learns to stop
    assert labels[-1] != -100 and tiny_tokenizer.convert_ids_to_tokens(ids[-1]) == IM_END


@pytest.mark.parametrize("kind", ["atomic", "full"])
def test_training_sequence_equals_what_the_server_renders(
    sft_corpus: Path, tiny_tokenizer: Any, kind: str
) -> None:
    row = _rows(sft_corpus, kind, min_calls=2)[0]
    messages, tools = json.loads(row["messages"]), json.loads(row["tools"])
    (parts,) = segments(tiny_tokenizer, messages, tools)
    ids, labels = encode(tiny_tokenizer, parts)
    calls = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    runs = _runs(labels)
    assert len(runs) == len(calls)
    checked = list(zip(calls, runs, strict=True))
    if kind == "full":  # a full trajectory has dozens of calls: check the first few and the last
        checked = checked[:4] + checked[-1:]
    for index, (start, end) in checked:
        history = messages[:index]  # what the LLM client sends for this call
        assert ids[:start] == _served_prompt_ids(tiny_tokenizer, history, tools), f"call at message {index}"
        reply = tiny_tokenizer.decode(ids[start:end], skip_special_tokens=True)
        parsed = parse_response({"role": "assistant", "content": reply})  # what the manager gets back
        sent = messages[index]["tool_calls"]
        assert [a.name.value for a in parsed.actions] == [c["function"]["name"] for c in sent]
        assert [a.args.model_dump(exclude_unset=True) for a in parsed.actions] == [
            json.loads(c["function"]["arguments"]) for c in sent
        ]


def _stock_qwen3(tokenizer: Any) -> Any:
    from trl.chat_template_utils import qwen3_chat_template

    copy = type(tokenizer).from_pretrained(tokenizer.name_or_path)
    copy.chat_template = qwen3_chat_template  # byte-identical to Qwen3-8B's own template (TRL detects it so)
    return copy


def test_stock_qwen3_template_matches_serving_without_think_blocks(
    sft_corpus: Path, tiny_tokenizer: Any
) -> None:
    from trl.chat_template_utils import qwen3_training_chat_template

    qwen = _stock_qwen3(tiny_tokenizer)
    row = _rows(sft_corpus, "atomic", min_calls=2)[0]
    messages, tools = json.loads(row["messages"]), json.loads(row["tools"])
    (parts,) = segments(qwen, messages, tools)
    ids, labels = encode(qwen, parts)
    calls = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    for index, (start, end) in zip(calls, _runs(labels), strict=True):
        assert ids[:start] == _served_prompt_ids(qwen, messages[:index], tools)
        target = qwen.decode(ids[start:end])
        assert target.startswith("<tool_call>") and "<think>" not in target and target.endswith(IM_END)
    # TRL's Qwen3 training template would put an empty think block into history the server never shows
    from transformers.cli.serving.utils import BaseHandler, Modality

    history = BaseHandler.get_processor_inputs_from_messages(messages[: calls[1]], Modality.LLM)
    served = qwen.apply_chat_template(history, tools=tools, tokenize=False, add_generation_prompt=True)
    trl_view = qwen.apply_chat_template(
        history,
        tools=tools,
        tokenize=False,
        add_generation_prompt=True,
        chat_template=qwen3_training_chat_template,
    )
    assert "<think>" not in served and "<think>\n\n</think>" in trl_view


def test_thinking_off_is_refused_as_one_sequence_and_trained_per_call(
    sft_corpus: Path, tiny_tokenizer: Any
) -> None:
    qwen = _stock_qwen3(tiny_tokenizer)
    row = _rows(sft_corpus, "atomic", min_calls=2)[0]
    messages, tools = json.loads(row["messages"]), json.loads(row["tools"])
    off = {"enable_thinking": False}
    with pytest.raises(RenderError, match="per_call"):
        segments(qwen, messages, tools, template_kwargs=off)
    per_call = segments(qwen, messages, tools, mode="per_call", template_kwargs=off)
    calls = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert len(per_call) == len(calls)
    for index, (prompt, target) in zip(calls, per_call, strict=True):
        assert not prompt.trained and target.trained
        assert prompt.text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        assert target.text == _expected_turn(messages[index])
        ids, _ = encode(qwen, [prompt])
        from transformers.cli.serving.utils import BaseHandler, Modality

        served = BaseHandler.get_processor_inputs_from_messages(messages[:index], Modality.LLM)
        assert ids == list(
            qwen.apply_chat_template(
                served, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True, **off
            )["input_ids"]
        )


def test_missing_corpus_names_make_synth(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"make synth"):
        load_corpus(tmp_path / "nowhere")


def test_mix_reaches_the_full_fraction_and_tokenizes(sft_corpus: Path, tiny_tokenizer: Any) -> None:
    ds = load_corpus(sft_corpus)
    n_atomic = sum(k == "atomic" for k in ds["kind"])
    quarter = mix(ds, DataConfig(corpus=str(sft_corpus), full_fraction=0.25))
    kinds = quarter["kind"]
    assert kinds.count("atomic") == n_atomic and kinds.count("full") == round(n_atomic / 3)
    assert set(mix(ds, DataConfig(corpus=str(sft_corpus), full_fraction=0.0))["kind"]) == {"atomic"}
    assert set(mix(ds, DataConfig(corpus=str(sft_corpus), full_fraction=1.0))["kind"]) == {"full"}
    small = mix(ds, DataConfig(corpus=str(sft_corpus), max_samples=6, seed=3))
    out, stats = tokenize_corpus(
        small, tiny_tokenizer, DataConfig(corpus=str(sft_corpus)), TemplateConfig(), 8192
    )
    assert len(out) == stats.sequences == 6 and set(out.column_names) == {"input_ids", "labels", "kind"}
    assert 0 < stats.trained_tokens < stats.tokens and stats.prompt_token_mismatch == 0
    per_call = DataConfig(corpus=str(sft_corpus), sequences="per_call")
    split, split_stats = tokenize_corpus(small, tiny_tokenizer, per_call, TemplateConfig(), 8192)
    calls = sum(m["role"] == "assistant" for row in small for m in json.loads(row["messages"]))
    assert len(split) == split_stats.sequences == calls  # one sequence per manager call
    assert split_stats.trained_tokens == stats.trained_tokens  # same targets, only the context is repeated
