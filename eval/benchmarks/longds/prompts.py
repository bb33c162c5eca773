"""Worker prompts for LongDS in the shape of DSGym's multi-turn runner (paper C.2), in our own words.

One task is one conversation, and it runs against one persistent workspace: the system
message opens the first turn only, and each turn adds one user message, `context`, a newline,
then `Question: <question>` (the same layout as the official runner, blank context included).
Within a turn the worker answers in tagged blocks: `<reasoning>`, then `<python>` code that the
runner executes and echoes back as `<information>`; a turn ends with `<answer>`. The worker
has 40 steps per turn (paper Table 3, `stateguard.flows.LONGDS`), the same with and without
the manager.

    prompts = build_turn_prompts(task, data_dir="/data/longds/education/bi/task1/data")
    messages += prompts[0].messages           # system + first question
    reply = parse_reply(model_text)           # .code to run, or .answer to judge
    messages.append({"role": "user", "content": information_message(output)})
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.flows import LONGDS
from stateguard.task import AgentTask, AgentTurn
from stateguard.workers.protocol import WorkerProtocol

STEPS_PER_TURN = LONGDS.baseline_budget

SYSTEM_TEMPLATE = """You are a data scientist answering a sequence of related questions about one dataset.
The files for this task are in `{data_dir}`. One Python session stays open for the whole task: variables, data frames and imports you create remain available in later steps and in later questions, so build on earlier work instead of starting over.

Work in small steps. Each reply has this shape:
<reasoning>
What you will do next, and why.
</reasoning>
<python>
One complete, runnable piece of code for that step only.
</python>
The code is run for you and its output comes back inside <information>...</information>; never write that block yourself.

Rules:
- You cannot see plots: print numbers and tables instead.
- Do every calculation in code rather than by hand, and check intermediate results before you build on them.
- Follow the rounding and format the question asks for.
- You have at most {max_steps} steps per question.

When the evidence is enough to answer the current question, reply with:
<reasoning>
How the results support the answer.
</reasoning>
<answer>
The answer, in the form the question requires, and nothing else.
</answer>"""

_PYTHON = re.compile(r"<python>(.*?)</python>", re.S)
# Small models often open <python> and close it with a markdown fence, or write no tag and only a
# fenced block (issue 30: Qwen2.5-Coder-0.5B did both on the dev set's first question). Such code is
# still the one block the reply asks to run: it ends at a fence, an <answer> or <information> tag, or
# the reply's end.
_PYTHON_UNCLOSED = re.compile(
    r"<python>\s*(?:```(?:python|py)?[ \t]*\n)?(.*?)(?:```|</python>|<answer>|<information>|$)", re.S
)
_FENCED = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


class TurnPrompt(BaseModel):
    """The messages that open one turn, and the limits the turn runs under."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="Also the key of the task's single persistent workspace.")
    turn_id: int
    messages: list[dict[str, Any]] = Field(description="Append these to the task's conversation.")
    max_steps: int = Field(ge=1, description="Worker steps allowed for this turn.")


class WorkerReply(BaseModel):
    """What one model reply asks for: code to run, a final answer, or neither (a format error)."""

    model_config = ConfigDict(frozen=True)

    reasoning: str = ""
    code: str | None = None
    answer: str | None = None


def system_prompt(data_dir: str, max_steps: int = STEPS_PER_TURN) -> str:
    return SYSTEM_TEMPLATE.format(data_dir=data_dir, max_steps=max_steps)


def turn_message(turn: AgentTurn) -> str:
    """The user message that opens a turn: context, newline, 'Question: ...'."""
    return f"{turn.context}\nQuestion: {turn.question}"


def build_turn_prompts(
    task: AgentTask, *, data_dir: str, max_steps: int = STEPS_PER_TURN
) -> list[TurnPrompt]:
    """One TurnPrompt per turn, in order; only the first carries the system message."""
    prompts: list[TurnPrompt] = []
    for position, turn in enumerate(task.turns):
        messages: list[dict[str, Any]] = []
        if position == 0:
            messages.append({"role": "system", "content": system_prompt(data_dir, max_steps)})
        messages.append({"role": "user", "content": turn_message(turn)})
        prompts.append(
            TurnPrompt(task_id=task.task_id, turn_id=turn.turn_id, messages=messages, max_steps=max_steps)
        )
    return prompts


def information_message(output: str) -> str:
    """How the runner hands code output back to the worker."""
    return f"\n<information>{output}</information>\n"


def parse_reply(text: str) -> WorkerReply:
    """Read one reply; only the first <python> block counts. A reply with both code and an
    <answer> reports both: the worker runs the code and drops the answer, which rests on output
    the model had not seen (often an <information> block it wrote itself)."""
    reasoning = re.search(r"<reasoning>(.*?)</reasoning>", text, re.S)
    answer = _ANSWER.search(text)
    code = _PYTHON.search(text) or _PYTHON_UNCLOSED.search(text) or _FENCED.search(text)
    body = code.group(1).strip("\n") if code else None
    fenced = _FENCED.search(body + "\n```") if body and body.lstrip().startswith("```") else None
    body = fenced.group(1).strip("\n") if fenced else body  # a fence inside the tags
    return WorkerReply(
        reasoning=reasoning.group(1).strip() if reasoning else "",
        answer=answer.group(1).strip() if answer else None,
        code=body if body and body.strip() else None,
    )


def longds_protocol(data_dir: str, max_steps: int = STEPS_PER_TURN) -> WorkerProtocol:
    """The LLM worker speaking this dialect: our system prompt, `Question:` turns, tagged replies."""

    def parse(text: str) -> tuple[str | None, str | None]:
        reply = parse_reply(text)
        return reply.code, reply.answer

    return WorkerProtocol(
        system_prompt=system_prompt(data_dir, max_steps),
        turn_text=turn_message,
        parse=parse,
        feedback=information_message,
    )
