"""A tiny Qwen3 chat model built from scratch, offline, for end-to-end serving tests.

    python -m training.tiny_model OUT_DIR [--overfit] [--seed 0]

`build_tiny_model(out_dir, overfit_response=..., seed=0)` writes a directory that
`AutoModelForCausalLM.from_pretrained` / `AutoTokenizer.from_pretrained` (and so
`transformers serve`) load with no network:

* a byte-level BPE tokenizer (1537 tokens) trained with the `tokenizers` library on a corpus made
  here: our 13 tool schemas, the manager prompts, sample JSON tool calls and the chat markers.
  Its pre-tokenizer does not split on the GPT-2 word regex, so merges may cross spaces and
  punctuation: the full manager prompt with all 13 tools is about 1.6k tokens, and the default
  reply is 11 distinct tokens, which a 2-layer model memorizes in a few dozen steps;
* our own ChatML-style chat template (CHAT_TEMPLATE below; the layout is documented there);
* a `Qwen3ForCausalLM` with about 170k weights (hidden 64, 2 layers, tied embeddings), randomly
  initialized from `seed`;
* with `overfit_response`, AdamW steps on the CPU (40 to 100 seen, a few seconds; at most 400)
  teach the model to answer every chat prompt with that exact text; greedy decoding is then
  checked to reproduce it on prompts it was not trained on, and the build fails if it does not.

Special tokens: `<|im_start|>`, `<|im_end|>` (end of turn, the EOS) and `<|endoftext|>` (padding)
are special, so `decode(..., skip_special_tokens=True)` drops them. `<think>`, `</think>`,
`<tool_call>` and `</tool_call>` are single, never-split tokens that stay in decoded text, so a
server that only returns text still hands the `<tool_call>` markup to our parser.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from stateguard.actions import tool_schemas
from stateguard.lifecycle import Regime
from stateguard.policies import prompts

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"
CONTROL_TOKENS = (END_OF_TEXT, IM_START, IM_END)  # special: dropped by skip_special_tokens
MARKUP_TOKENS = ("<think>", "</think>", "<tool_call>", "</tool_call>")  # atomic, kept in decoded text
SPECIAL_TOKENS = CONTROL_TOKENS + MARKUP_TOKENS

VOCAB_SIZE = 1536
DEFAULT_RESPONSE = '<tool_call>\n{"name": "ABSTAIN", "arguments": {"reason": "tiny"}}\n</tool_call>' + IM_END
MANIFEST = "tiny_model.json"  # written last: its presence marks a complete build
FORMAT_VERSION = 1

# Layout rendered by the template, one block per message, each closed by <|im_end|> and a newline:
#
#   <|im_start|>system\n{first system message}[\n\n]{tools section}<|im_end|>\n
#       (the block is left out when there is neither a system message nor tools; the tools
#       section explains the call format, then lists each function's JSON schema on its own line)
#   <|im_start|>user\n{content}<|im_end|>\n
#   <|im_start|>assistant\n[<think>\n{reasoning}\n</think>\n\n]{content}[\n]<tool_call>\n{"name": N, "arguments": A}\n</tool_call><|im_end|>\n
#       (one <tool_call> block per call, separated by newlines; reasoning_content is shown only
#       for assistant turns after the last user message; arguments given as a JSON string are
#       written as they are, a mapping is serialized)
#   <|im_start|>tool\n<tool_response>\n{content}\n</tool_response><|im_end|>\n
#   <|im_start|>system\n{content}<|im_end|>\n           (a system message that is not the first)
#
# add_generation_prompt=True appends "<|im_start|>assistant\n"; with enable_thinking=false it
# also pre-fills an empty "<think>\n\n</think>\n\n" so the model answers without reasoning.
# Content may be a string or a list of {"type": "text", "text": ...} parts. Any other role raises.
CHAT_TEMPLATE = r"""
{%- macro text_of(content) -%}
  {%- if content is none -%}
  {%- elif content is string -%}{{ content }}
  {%- else -%}
    {%- for part in content -%}{%- if part.type == 'text' -%}{{ part.text }}{%- endif -%}{%- endfor -%}
  {%- endif -%}
{%- endmacro -%}
{%- macro call_json(call) -%}
  {%- set fn = call.function if call.function is defined else call -%}
  {%- set args = fn.arguments if fn.arguments is defined else {} -%}
  {{- '{"name": ' ~ (fn.name | tojson) ~ ', "arguments": ' -}}
  {{- args if args is string else (args | tojson) -}}
  {{- '}' -}}
{%- endmacro -%}
{%- set ns = namespace(last_user=-1, first=0) -%}
{%- for m in messages -%}
  {%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{%- set has_system = messages | length > 0 and messages[0].role == 'system' -%}
{%- if has_system or tools -%}
  {{- '<|im_start|>system\n' -}}
  {%- if has_system -%}
    {{- text_of(messages[0].content) -}}
    {%- set ns.first = 1 -%}
    {%- if tools -%}{{- '\n\n' -}}{%- endif -%}
  {%- endif -%}
  {%- if tools -%}
    {{- '## Functions\n' -}}
    {{- 'To call a function, write a <tool_call> block that holds one JSON object with the keys "name" and "arguments":\n' -}}
    {{- '<tool_call>\n{"name": "FUNCTION", "arguments": {"ARGUMENT": "VALUE"}}\n</tool_call>\n' -}}
    {{- 'Write one block per call. The functions, one JSON schema per line:\n' -}}
    {%- for tool in tools -%}
      {{- (tool.function if tool.function is defined else tool) | tojson -}}{{- '\n' -}}
    {%- endfor -%}
  {%- endif -%}
  {{- '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages[ns.first:] -%}
  {%- set index = loop.index0 + ns.first -%}
  {%- if m.role == 'user' or m.role == 'system' -%}
    {{- '<|im_start|>' ~ m.role ~ '\n' ~ text_of(m.content) ~ '<|im_end|>\n' -}}
  {%- elif m.role == 'assistant' -%}
    {{- '<|im_start|>assistant\n' -}}
    {%- if m.reasoning_content is defined and m.reasoning_content and index > ns.last_user -%}
      {{- '<think>\n' ~ m.reasoning_content ~ '\n</think>\n\n' -}}
    {%- endif -%}
    {%- set text = text_of(m.content) -%}
    {{- text -}}
    {%- if m.tool_calls is defined and m.tool_calls -%}
      {%- for call in m.tool_calls -%}
        {%- if text or not loop.first -%}{{- '\n' -}}{%- endif -%}
        {{- '<tool_call>\n' ~ call_json(call) ~ '\n</tool_call>' -}}
      {%- endfor -%}
    {%- endif -%}
    {{- '<|im_end|>\n' -}}
  {%- elif m.role == 'tool' -%}
    {{- '<|im_start|>tool\n<tool_response>\n' ~ text_of(m.content) ~ '\n</tool_response><|im_end|>\n' -}}
  {%- else -%}
    {{- raise_exception('unsupported message role: ' ~ m.role) -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
  {%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}
{%- endif -%}
""".strip()

# Model shape: small enough to train in seconds on one CPU core, large enough to memorize a reply.
MODEL_SHAPE: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
}

# filler vocabulary for random user messages
_FILLER = (
    "state worker turn revenue mean median column rows filter group join stale definition revised "
    "check execution probe variable version commit repair draft issue conclusion relation table "
    "total count ratio percent customer order region month year error missing value compute"
)
_WORDS = tuple(_FILLER.split())


class TinyModelError(RuntimeError):
    """The tiny model could not be built as asked (e.g. the overfit did not take)."""


# ----------------------------------------------------------------------------- corpus and tokenizer


def _sample_calls() -> list[dict[str, Any]]:
    """Plausible JSON tool calls for most actions, as a model would write them."""
    examples: dict[str, dict[str, Any]] = {
        "ABSTAIN": {"reason": "tiny"},
        "RESUME_WORKER": {},
        "OPEN_STATE": {"issue": "total revenue per region", "constraints": [{"text": "round to 2 decimals"}]},
        "UPDATE_STATE": {
            "used_variables": [{"name": "df", "value": "1000 rows"}],
            "conclusions": ["mean is 4.2"],
        },
        "FINALIZE_RELATIONS": {"mode": "confirm"},
        "COMMIT_STATE": {},
        "ABANDON_STATE": {"reason": "repair budget spent"},
        "REPAIR": {
            "analytical_evidence": "step 3 raised KeyError",
            "error_hint": {"error_variables": ["total"], "faulty_reasoning": "the filter drops rows"},
        },
        "check_execution": {"step_id": 2},
        "run_probe": {"code": "print(df.shape)"},
        "load_state": {"state_id": "S1"},
    }
    return [{"name": name, "arguments": args} for name, args in examples.items()]


def _corpus() -> Iterator[str]:
    schemas = tool_schemas()
    for schema in schemas:
        yield json.dumps(schema)
        yield json.dumps(schema["function"])
    for regime in Regime:
        for variant in ("stateguard", "freeform"):
            yield prompts.system_prompt(regime, variant)
    for call in _sample_calls():
        yield f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
    yield DEFAULT_RESPONSE
    for role in ("system", "user", "assistant", "tool"):
        yield f"{IM_START}{role}\nhello{IM_END}\n"
    yield '<tool_response>\n{"ok": true}\n</tool_response>'
    yield "<think>\n\n</think>\n\n"
    yield CHAT_TEMPLATE
    yield " ".join(_WORDS)


def train_tokenizer(vocab_size: int = VOCAB_SIZE) -> Any:
    """A byte-level BPE `tokenizers.Tokenizer` trained offline on our corpus (deterministic)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(CONTROL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = list(_corpus())
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    return tok


def build_tokenizer(vocab_size: int = VOCAB_SIZE) -> Any:
    """Our tokenizer wrapped as a transformers `PreTrainedTokenizerFast`, chat template attached."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=train_tokenizer(vocab_size),
        bos_token=None,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        unk_token=None,
        additional_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        model_max_length=MODEL_SHAPE["max_position_embeddings"],
        clean_up_tokenization_spaces=False,
    )


# ----------------------------------------------------------------------------- model


def build_model(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialized tiny `Qwen3ForCausalLM` whose vocabulary matches `tokenizer`."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    eos = tokenizer.convert_tokens_to_ids(IM_END)
    pad = tokenizer.convert_tokens_to_ids(END_OF_TEXT)
    config = Qwen3Config(
        vocab_size=len(tokenizer), bos_token_id=None, eos_token_id=eos, pad_token_id=pad, **MODEL_SHAPE
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=eos, pad_token_id=pad, do_sample=False, max_new_tokens=256
    )
    return model


# ----------------------------------------------------------------------------- overfit data


def _random_text(rng: random.Random, lo: int = 3, hi: int = 40) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _random_observation(rng: random.Random) -> str:
    obs = {
        "event_type": rng.choice(["turn_start", "turn_end", "pause", "repair_return"]),
        "stage": rng.choice(["none", "draft", "updated", "finalized"]),
        "legal_control_actions": rng.sample(
            ["ABSTAIN", "OPEN_STATE", "UPDATE_STATE", "COMMIT_STATE", "REPAIR"], 3
        ),
        "untraced_steps": [
            {"index": i, "action": _random_text(rng, 2, 8), "output": rng.randint(0, 9999)}
            for i in range(rng.randint(0, 3))
        ],
    }
    return "OBSERVATION\n" + json.dumps(obs)


def random_conversation(
    rng: random.Random,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]:
    """(messages, tools, template kwargs) for one varied chat prompt ending where the model answers."""
    messages: list[dict[str, Any]] = []
    roll = rng.random()
    if roll < 0.6:
        regime = rng.choice(list(Regime))
        variant = rng.choice(["stateguard", "freeform"])
        messages.append({"role": "system", "content": prompts.system_prompt(regime, variant)})  # type: ignore[arg-type]
    elif roll < 0.8:
        messages.append({"role": "system", "content": _random_text(rng)})
    schemas = tool_schemas()
    tools = None
    roll = rng.random()
    if roll < 0.55:
        tools = schemas
    elif roll < 0.8:
        tools = rng.sample(schemas, rng.randint(1, len(schemas)))
    for _ in range(rng.choice([0, 0, 1, 2])):
        messages.append(
            {"role": "user", "content": rng.choice([_random_text(rng), _random_observation(rng)])}
        )
        call = rng.choice(_sample_calls())
        if rng.random() < 0.5:
            messages.append({"role": "assistant", "content": _random_text(rng, 1, 10)})
        else:
            arguments = call["arguments"] if rng.random() < 0.5 else json.dumps(call["arguments"])
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"type": "function", "function": {"name": call["name"], "arguments": arguments}}
                    ],
                }
            )
            if rng.random() < 0.7:
                messages.append(
                    {"role": "tool", "content": json.dumps({"ok": True, "result": _random_text(rng, 1, 6)})}
                )
    if not messages or messages[-1]["role"] != "tool" or rng.random() < 0.3:
        messages.append(
            {"role": "user", "content": rng.choice([_random_text(rng), _random_observation(rng)])}
        )
    kwargs: dict[str, Any] = {}
    if rng.random() < 0.3:
        kwargs["enable_thinking"] = False
    return messages, tools, kwargs


def prompt_ids(tokenizer: Any, messages: Sequence[dict[str, Any]], tools: Any, **kwargs: Any) -> list[int]:
    ids = tokenizer.apply_chat_template(
        list(messages), tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False, **kwargs
    )
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def overfit(
    model: Any,
    tokenizer: Any,
    response: str,
    *,
    seed: int = 0,
    max_steps: int = 400,
    lr: float = 1e-2,
    check_every: int = 20,
) -> int:
    """Train `model` to answer every chat prompt with `response`; returns the steps taken.

    Each AdamW step sees one fresh random conversation (unpadded, so attention takes the fast
    causal path) and the loss covers only the response tokens. Every `check_every` steps a fixed
    probe set of other conversations is checked with teacher forcing; training stops once every
    response token there is the argmax with probability above 0.9.
    """
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    target = tokenizer.encode(response, add_special_tokens=False)

    def example(source: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        messages, tools, kwargs = random_conversation(source)
        prompt = prompt_ids(tokenizer, messages, tools, **kwargs)
        return torch.tensor([prompt + target]), torch.tensor([[-100] * len(prompt) + target])

    def response_logits(ids: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = model.model(input_ids=ids).last_hidden_state
        gold = labels[:, 1:]  # position i predicts token i+1; keep positions followed by response tokens
        keep = gold != -100
        return model.lm_head(hidden[:, :-1][keep]), gold[keep]

    probe_rng = random.Random(1_000 + seed)
    probes = [example(probe_rng) for _ in range(6)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    step = 0
    for step in range(1, max_steps + 1):
        logits, gold = response_logits(*example(rng))
        loss = torch.nn.functional.cross_entropy(logits, gold)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % check_every == 0 and _learned(response_logits, probes):
            break
    model.eval()
    return step


def _learned(response_logits: Any, probes: Sequence[tuple[Any, Any]]) -> bool:
    import torch

    with torch.no_grad():
        for ids, labels in probes:
            logits, gold = response_logits(ids, labels)
            if not bool((logits.argmax(-1) == gold).all()):
                return False
            if float(logits.softmax(-1).gather(1, gold[:, None]).min()) <= 0.9:
                return False
    return True


def greedy_reply(model: Any, tokenizer: Any, ids: list[int], max_new_tokens: int) -> str:
    import torch

    with torch.no_grad():
        out = model.generate(
            torch.tensor([ids]),
            attention_mask=torch.ones((1, len(ids)), dtype=torch.long),
            max_new_tokens=max_new_tokens,
            do_sample=False,
        )
    return str(tokenizer.decode(out[0, len(ids) :], skip_special_tokens=False))


def check_overfit(model: Any, tokenizer: Any, response: str, *, seed: int = 0, n: int = 6) -> list[str]:
    """Greedy replies on `n` fresh prompts (plus our manager's real prompt) that differ from `response`."""
    rng = random.Random(10_000 + seed)
    cases = [random_conversation(rng) for _ in range(n)]
    cases.append(
        (
            [
                {"role": "system", "content": prompts.system_prompt(Regime.TURN_ALIGNED)},
                {"role": "user", "content": _random_observation(rng)},
            ],
            tool_schemas(),
            {},
        )
    )
    budget = len(tokenizer.encode(response, add_special_tokens=False)) + 8
    failures = []
    for messages, tools, kwargs in cases:
        reply = greedy_reply(model, tokenizer, prompt_ids(tokenizer, messages, tools, **kwargs), budget)
        if reply != response:
            failures.append(reply)
    return failures


# ----------------------------------------------------------------------------- build


def build_tiny_model(
    out_dir: str | Path, *, overfit_response: str | None = DEFAULT_RESPONSE, seed: int = 0
) -> Path:
    """Build the tokenizer and tiny Qwen3 model (overfit to `overfit_response` if given) into `out_dir`.

    A response that does not end with <|im_end|> gets it appended (the model must stop). Raises
    TinyModelError if greedy decoding does not reproduce the response after training.
    Returns `out_dir`, which then holds config, weights, generation config, tokenizer and MANIFEST.
    """
    out = Path(out_dir)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, seed=seed)
    manifest: dict[str, Any] = {"format": FORMAT_VERSION, "seed": seed, "overfit_response": None, "steps": 0}
    if overfit_response is not None:
        response = overfit_response if overfit_response.endswith(IM_END) else overfit_response + IM_END
        steps = overfit(model, tokenizer, response, seed=seed)
        failures = check_overfit(model, tokenizer, response, seed=seed)
        if failures:
            raise TinyModelError(
                f"after {steps} steps greedy decoding still differs from {response!r} on "
                f"{len(failures)} prompt(s), e.g. {failures[0]!r}"
            )
        manifest.update(overfit_response=response, steps=steps)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    manifest["vocab_size"] = len(tokenizer)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def read_manifest(out_dir: str | Path) -> dict[str, Any] | None:
    """The build record of a finished build in `out_dir`, or None when there is none."""
    path = Path(out_dir) / MANIFEST
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data


def is_built(out_dir: str | Path, *, overfit_response: str | None, seed: int = 0) -> bool:
    """True when `out_dir` holds a finished build made with these settings."""
    data = read_manifest(out_dir)
    if data is None or data.get("format") != FORMAT_VERSION or data.get("seed") != seed:
        return False
    want = overfit_response
    if want is not None and not want.endswith(IM_END):
        want += IM_END
    return bool(data.get("overfit_response") == want)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the tiny Qwen3 test model (offline).")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument(
        "--overfit", action="store_true", help=f"train it to always answer {DEFAULT_RESPONSE!r}"
    )
    parser.add_argument("--response", default=None, help="overfit to this text instead (implies --overfit)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    response = args.response or (DEFAULT_RESPONSE if args.overfit else None)
    out = build_tiny_model(args.out_dir, overfit_response=response, seed=args.seed)
    info = read_manifest(out) or {}
    print(f"built {out} (vocab {info.get('vocab_size')}, overfit steps {info.get('steps')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
