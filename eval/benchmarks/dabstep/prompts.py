"""The DABstep worker in the shape of the benchmark's official baseline runner (paper C.2), in our words.

The official runner drives a code agent: each reply is a `Thought:` followed by `Code:` and one
fenced Python block closed by `<end_code>`; the block runs in a persistent Python session, its
printed output comes back as `Observation:`, and the agent ends by calling `final_answer(value)`
inside its code. The runner builds its prompts two ways, by model:
  * chat models keep the code agent's general system prompt, and the task message carries
    everything: an expert analyst answering a short factual question from the files in the
    context folder, told to read the documentation there first, then the question and the
    answer guidelines it must follow;
  * reasoning models (`is_reasoning_model`: the o-series, DeepSeek's reasoner and R1, QwQ)
    get a compact system prompt of their own that names the context folder and a workflow
    (explore the data and documentation, plan, execute, conclude; answer "Not Applicable" only
    when every plan failed), and the task message holds only the question and the guidelines.
    Their output is capped with `max_completion_tokens` rather than `max_tokens`, and a
    `<think>` block in a reply is dropped before the reply is parsed or kept in the history.
Both share the same answer path: `final_answer` (set up in the workspace at start) prints a
marker the worker reads, and the string it was given is the prediction (`str(value)`, as the
runner submits it). A reply without a code block is answered with a reminder, not taken as
the answer.

    protocol = dabstep_protocol(context_dir, model="deepseek-reasoner")   # reasoning shape
    LLMWorker(client, protocol=protocol)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any, Literal

from stateguard.task import AgentTurn
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["REASONING_ENV", "Mode", "dabstep_protocol", "is_reasoning_model", "worker_mode"]

Mode = Literal["chat", "reasoning"]
REASONING_ENV = "STATEGUARD_WORKER_REASONING"  # auto (default) | yes | no
REASONING_FAMILIES: tuple[str, ...] = ("o1", "o3", "o4", "deepseek-reasoner", "deepseek-r1", "qwq")
TOKEN_CAP = (
    3000  # the official runner's per-reply cap, as max_tokens (chat) or max_completion_tokens (reasoning)
)
MARK = "<<dabstep-final-answer>>"

CHAT_SYSTEM = """You are a capable analyst who solves tasks by writing and running Python code, one step at a time.
Each reply has two parts:
Thought: what you know so far, what you will do next, and why.
Code:
```py
# one short, self-contained step
```<end_code>
The code runs in a persistent Python session: imports and variables stay defined between steps. Print whatever you need to see; printed output comes back to you as "Observation:". Only printed output is shown.
Rules:
- Always put a Code block in your reply; reason in the Thought, act in the Code.
- Use only variables you have defined, and never invent values you have not computed.
- Do not repeat a step that already failed in the same way; change the approach.
- Solve the task yourself; do not describe what someone else should do.
When you have the result, call final_answer(value) inside a Code block. That ends the task."""

CHAT_TASK = """Act as an expert in data analysis. Answer the factual question below using the files in the data folder `{folder}`; \
before answering, read the documentation files in that folder and use what they define.

Question: {question}

Guidelines you must follow for the answer: {guidelines}

Read the documentation in the data folder first and let it guide your plan."""

REASONING_SYSTEM = """Act as a senior data analyst: you solve tasks by writing and running Python code. The data for every task is in the folder `{folder}`, spread over several files, including documentation.
Work through each task in four phases: Explore (look at the files and the documentation until you know what the data holds and what it cannot answer), Plan (a short plan built on what you found), Execute (carry the plan out; if it fails, go back to exploring), Conclude (turn the results into the answer).
Every step you take has the form:
Thought: your reasoning and what the code will do.
Code:
```py
# python for this step; print() what you need to keep
```<end_code>
Observation: the printed output, which comes back to you.
Rules:
- Check the folder's documentation before deciding that something is unavailable, and check your assumptions against it before relying on them.
- Answer "Not Applicable" only after every plan you can think of has failed.
- Keep each step short and use only variables you have defined; imports and variables stay defined from one step to the next.
- Solve the task yourself.
Finish by calling final_answer(answer) inside a Code block."""

REASONING_TASK = """{question}

Guidelines for the final answer, which you must follow:
{guidelines}"""

SETUP = f'''
def final_answer(answer):
    """Report the task's answer (the official runner's tool): prints a marker the runner reads."""
    import json as _json
    print({MARK!r} + _json.dumps(str(answer)))
    return answer
'''

_CODE = re.compile(r"```(?:py|python)?[ \t]*\n(.*?)```", re.S)
_THINK = re.compile(r"<think>.*?</think>\s*", re.S)
_FINAL = re.compile(re.escape(MARK) + r"(.*)")


def is_reasoning_model(model: str, families: Iterable[str] = REASONING_FAMILIES) -> bool:
    """True for a reasoning model id (provider prefixes such as `openai/` ignored)."""
    name = model.rsplit("/", 1)[-1].lower()
    return any(name == f or name.startswith(f + "-") or name.startswith(f + ".") for f in families)


def worker_mode(model: str, setting: str | None = None) -> Mode:
    """`reasoning` or `chat`: `STATEGUARD_WORKER_REASONING` (yes / no) wins over the model id (auto)."""
    value = (setting if setting is not None else os.environ.get(REASONING_ENV, "auto")).strip().lower()
    if value in ("yes", "true", "1", "reasoning"):
        return "reasoning"
    if value in ("no", "false", "0", "chat"):
        return "chat"
    if value not in ("", "auto"):
        raise ValueError(f"{REASONING_ENV}={value!r}: use auto, yes or no")
    return "reasoning" if is_reasoning_model(model) else "chat"


def _parts(turn: AgentTurn) -> tuple[str, str]:
    """The raw question and guidelines `make_task` keeps on the turn (see bench.py)."""
    raw = turn.visible.get("dabstep") or {}
    return str(raw.get("question") or turn.question), str(raw.get("guidelines") or "none")


def _parse(text: str) -> tuple[str | None, str | None]:
    code = _CODE.search(text)
    return (code.group(1).strip("\n") if code else None), None


def read_final_answer(stdout: str) -> str | None:
    """The value given to `final_answer` (the last call wins), or None."""
    found = _FINAL.findall(stdout)
    return str(json.loads(found[-1])) if found else None


def dabstep_protocol(folder: str, *, model: str = "", mode: Mode | None = None) -> WorkerProtocol:
    """The official runner's worker shape for `model` (or the given `mode`), over the context folder."""
    mode = mode or worker_mode(model)
    if mode == "reasoning":
        system = REASONING_SYSTEM.format(folder=folder)

        def task(turn: AgentTurn) -> str:
            question, guidelines = _parts(turn)
            return REASONING_TASK.format(question=question, guidelines=guidelines)

        kwargs: dict[str, Any] = {"max_completion_tokens": TOKEN_CAP}
    else:
        system = CHAT_SYSTEM

        def task(turn: AgentTurn) -> str:
            question, guidelines = _parts(turn)
            return CHAT_TASK.format(folder=folder, question=question, guidelines=guidelines)

        kwargs = {"max_tokens": TOKEN_CAP}
    return WorkerProtocol(
        system_prompt=system,
        turn_text=task,
        parse=_parse,
        feedback=lambda output: f"Observation:\n{output or '(no printed output)'}",
        setup=SETUP,
        answer_in_output=read_final_answer,
        no_action=lambda _: (
            "Observation: your reply had no Code block. Reply with Thought: and Code:, "
            "and call final_answer(value) in the code when you have the answer."
        ),
        clean=lambda text: _THINK.sub("", text) if mode == "reasoning" else text,
        chat_kwargs=kwargs,
    )
