"""Tiny model build, fast part: the tokenizer's special tokens and the chat template's exact layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers", reason="needs the train extra: pip install -e '.[dev,train]'")
pytest.importorskip("transformers", reason="needs the train extra: pip install -e '.[dev,train]'")

from training import tiny_model as tm  # noqa: E402

TOOLS: list[dict[Any, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "ABSTAIN",
            "description": "Make no decision.",
            "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}},
        },
    },
    {
        "name": "load_state",
        "description": "Load a state.",
        "parameters": {"type": "object", "properties": {}},
    },
]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return tm.build_tokenizer()


def render(tokenizer: Any, messages: list[dict[str, Any]], **kw: Any) -> str:
    return str(tokenizer.apply_chat_template(messages, tokenize=False, **kw))


def test_special_tokens_are_single_ids_and_round_trip(tokenizer: Any) -> None:
    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in tm.SPECIAL_TOKENS}
    assert len(set(ids.values())) == len(tm.SPECIAL_TOKENS)
    for tok, i in ids.items():
        assert tokenizer.encode(tok, add_special_tokens=False) == [i], tok
        assert tokenizer.decode([i]) == tok
    text = "".join(f"{tok} x{n}\n" for n, tok in enumerate(tm.SPECIAL_TOKENS))
    encoded = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(encoded) == text
    assert all(encoded.count(i) == 1 for i in ids.values())  # never split, never merged with neighbours
    # control tokens are special (dropped on request); markup stays in the text
    kept = tokenizer.decode(encoded, skip_special_tokens=True)
    assert not any(tok in kept for tok in tm.CONTROL_TOKENS)
    assert all(tok in kept for tok in tm.MARKUP_TOKENS)
    assert tokenizer.eos_token == tm.IM_END and tokenizer.pad_token == tm.END_OF_TEXT


def test_any_text_round_trips_byte_level(tokenizer: Any) -> None:
    assert 1000 <= len(tokenizer) <= 2100
    for text in ["plain words", 'tabs\tand\nnewlines  {"k": [1, 2.5]}', "unicode: é ß 漢字 🙂", ""]:
        assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_template_renders_tools_calls_and_responses_as_documented(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You manage states."},
        {"role": "user", "content": "Check step 2."},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "dropped: before the last user turn",
            "tool_calls": [
                {"type": "function", "function": {"name": "check_execution", "arguments": {"step_id": 2}}},
                {"type": "function", "function": {"name": "load_state", "arguments": '{"state_id": "S1"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
        {"role": "tool", "tool_call_id": "c2", "content": "S1: revenue"},
        {"role": "user", "content": [{"type": "text", "text": "Now "}, {"type": "text", "text": "decide."}]},
        {
            "role": "assistant",
            "content": "Nothing to do.",
            "reasoning_content": "kept: after the last user turn",
            "tool_calls": [{"function": {"name": "ABSTAIN", "arguments": {"reason": "tiny"}}}],
        },
    ]
    schema_lines = "".join(json.dumps(t.get("function", t)) + "\n" for t in TOOLS)
    expected = (
        "<|im_start|>system\nYou manage states.\n\n"
        "## Functions\n"
        'To call a function, write a <tool_call> block that holds one JSON object with the keys "name" and "arguments":\n'
        '<tool_call>\n{"name": "FUNCTION", "arguments": {"ARGUMENT": "VALUE"}}\n</tool_call>\n'
        "Write one block per call. The functions, one JSON schema per line:\n"
        f"{schema_lines}<|im_end|>\n"
        "<|im_start|>user\nCheck step 2.<|im_end|>\n"
        "<|im_start|>assistant\n"
        '<tool_call>\n{"name": "check_execution", "arguments": {"step_id": 2}}\n</tool_call>\n'
        '<tool_call>\n{"name": "load_state", "arguments": {"state_id": "S1"}}\n</tool_call><|im_end|>\n'
        '<|im_start|>tool\n<tool_response>\n{"ok": true}\n</tool_response><|im_end|>\n'
        "<|im_start|>tool\n<tool_response>\nS1: revenue\n</tool_response><|im_end|>\n"
        "<|im_start|>user\nNow decide.<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nkept: after the last user turn\n</think>\n\n"
        'Nothing to do.\n<tool_call>\n{"name": "ABSTAIN", "arguments": {"reason": "tiny"}}\n</tool_call><|im_end|>\n'
    )
    assert render(tokenizer, messages, tools=TOOLS) == expected
    assert (
        render(tokenizer, messages, tools=TOOLS, add_generation_prompt=True)
        == expected + "<|im_start|>assistant\n"
    )


def test_template_generation_prompt_thinking_and_optional_system(tokenizer: Any) -> None:
    user = [{"role": "user", "content": "hi"}]
    assert (
        render(tokenizer, user) == "<|im_start|>user\nhi<|im_end|>\n"
    )  # no system, no tools: no system block
    assert render(tokenizer, user, add_generation_prompt=True, enable_thinking=True).endswith(
        "<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render(tokenizer, user, add_generation_prompt=True, enable_thinking=False).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    tools_only = render(tokenizer, user, tools=TOOLS[:1])
    assert tools_only.startswith("<|im_start|>system\n## Functions\n") and '"name": "ABSTAIN"' in tools_only
    later_system = render(tokenizer, [*user, {"role": "system", "content": "be brief"}])
    assert later_system.endswith("<|im_start|>system\nbe brief<|im_end|>\n")
    with pytest.raises(Exception, match="unsupported message role: robot"):
        render(tokenizer, [{"role": "robot", "content": "beep"}])


def test_untrained_build_saves_and_reloads_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tm.build_tiny_model(tmp_path / "tiny", overfit_response=None, seed=3)
    assert tm.is_built(out, overfit_response=None, seed=3)
    assert not tm.is_built(out, overfit_response=tm.DEFAULT_RESPONSE, seed=3)
    assert not tm.is_built(out, overfit_response=None, seed=4)
    tokenizer: Any = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out)
    cfg = model.config
    assert type(model).__name__ == "Qwen3ForCausalLM" and cfg.model_type == "qwen3"
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads) == (
        64,
        2,
        4,
        2,
    )
    assert cfg.vocab_size == len(tokenizer) and cfg.tie_word_embeddings
    assert cfg.eos_token_id == tokenizer.convert_tokens_to_ids(tm.IM_END)
    assert model.generation_config.eos_token_id == cfg.eos_token_id and not model.generation_config.do_sample
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    fresh = tm.build_tokenizer()
    assert tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=False) == fresh.apply_chat_template(
        messages, tools=TOOLS, tokenize=False
    )
    assert tm.prompt_ids(tokenizer, messages, TOOLS) == tm.prompt_ids(fresh, messages, TOOLS)
