"""How a worker talks to its model: the prompt, a turn's wording, reply parsing, output feedback.

    from stateguard.workers.protocol import WorkerProtocol
    protocol = WorkerProtocol(system_prompt="...", parse=my_parse)   # eval.benchmarks.*.prompts

A benchmark adapter hands its native protocol to the LLM worker (`stateguard.workers.llm_worker`).
It lives apart from the worker so that code which only names the type (the benchmark base class,
the worker registry, a run with the scripted worker) does not import the worker and, through it,
the openai client: about a second of CPU per process for runs that call no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stateguard.task import AgentTurn

__all__ = ["DEFAULT_SYSTEM", "WorkerProtocol", "default_parse"]

DEFAULT_SYSTEM = """You are a data analyst working in a persistent Python session (pandas as pd, numpy as np, json and re are imported). BASE_PATH is a str (not a pathlib.Path) naming the task folder; the data files are in its data/ folder, so build paths as text: pd.read_csv(f"{BASE_PATH}/data/<file>.csv"); import os; os.listdir(f"{BASE_PATH}/data") lists them.
Work step by step. In each reply, either
- write exactly one Python code block (```python ... ```) to run next; you will see its output, or
- when the output you have seen answers the current question, reply with the final answer as one JSON object of the requested fields inside <answer>...</answer>, and no code.
Never write code and an answer in the same reply: the answer must rest on output you have seen. Variables persist between steps and between questions. Follow the precision and format the question asks for."""

_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


def default_parse(text: str) -> tuple[str | None, str | None]:
    """(the first code block, the answer); both may be set, and the worker then runs the code."""
    answer = _ANSWER.search(text)
    code = _CODE.search(text)
    return (code.group(1) if code else None), (answer.group(1) if answer else None)


@dataclass(frozen=True)
class WorkerProtocol:
    """How the worker talks: its system prompt, a turn's wording, reply parsing, output feedback.

    `parse(text) -> (code or None, answer text or None)`. When a reply holds both, the code runs
    and the answer is dropped (it rests on output the model had not seen). A reply with neither
    ends the turn with whatever JSON (or text) it holds, unless `no_action` turns it into
    feedback (the worker then keeps going). `setup` runs once in the workspace at `start`, before any step (a runner's
    own helpers, e.g. DABstep's `final_answer`); `answer_in_output(output)` reads a final answer
    that the code itself reported. `clean(text)` is applied to every reply before it is parsed
    and kept in the history (e.g. dropping a reasoning model's think block). `chat_kwargs` go
    with every request (e.g. a completion-token cap).
    """

    system_prompt: str = DEFAULT_SYSTEM
    turn_text: Callable[[AgentTurn], str] = AgentTurn.prompt
    parse: Callable[[str], tuple[str | None, str | None]] = default_parse
    feedback: Callable[[str], str] = lambda output: f"Output:\n{output or '(no output)'}"
    setup: str = ""
    answer_in_output: Callable[[str], str | None] | None = None
    no_action: Callable[[str], str] | None = None
    clean: Callable[[str], str] = lambda text: text
    chat_kwargs: Mapping[str, Any] = field(default_factory=dict)
