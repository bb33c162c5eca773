"""A ReAct-style LLM data agent behind the worker adapter contract.

Each `step` is one model call: the model thinks, then either writes one ```python block (run in
the persistent workspace; the output comes back as the next user message) or gives the turn's
final answer as JSON inside <answer>...</answer>. User turns and the manager's hints arrive through
`inject` as user messages (hints in the fixed reference-only wording of `stateguard.hints`).
Benchmark adapters pass their native protocol (`WorkerProtocol`: system prompt, how a turn is
worded, how code and answers are tagged, how output is handed back, the runner's own helpers and
request settings, how reasoning text is kept out of the history); the default is ours:
  LongDS     eval.benchmarks.longds.prompts.longds_protocol      (DSGym's tagged multi-turn shape)
  DABstep    eval.benchmarks.dabstep.prompts.dabstep_protocol    (the official runner's code agent)
  DAComp-DE  eval.benchmarks.dacomp_de.prompts.dacomp_protocol   (a CodeAct loop, track-specific)

    worker = LLMWorker(LLMClient(EndpointConfig.from_env("worker")))
    worker = LLMWorker(client, protocol=longds_protocol(data_dir))   # eval.benchmarks.longds.prompts
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stateguard.answers import last_json
from stateguard.observation import WorkerStep
from stateguard.task import AgentTask, AgentTurn
from stateguard.worker_contract import WorkerMessage
from stateguard.workspace import LiveWorkspace

DEFAULT_SYSTEM = """You are a data analyst working in a persistent Python session (pandas as pd, numpy as np, json and re are imported; BASE_PATH points at the task folder, data files are under BASE_PATH/data).
Work step by step. In each reply, either
- write exactly one Python code block (```python ... ```) to run next; you will see its output, or
- when the current question is answered, reply with the final answer as one JSON object of the requested fields inside <answer>...</answer>.
Variables persist between steps and between questions. Follow the precision and format the question asks for."""

_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_OPENING_TAG = re.compile(r"<[a-z_]+>\s*$")  # a code tag such as <execute_ipython> right before the code


def _default_parse(text: str) -> tuple[str | None, str | None]:
    answer = _ANSWER.search(text)
    code = _CODE.search(text)
    return (None if answer or not code else code.group(1)), (answer.group(1) if answer else None)


@dataclass(frozen=True)
class WorkerProtocol:
    """How the worker talks: its system prompt, a turn's wording, reply parsing, output feedback.

    `parse(text) -> (code or None, answer text or None)`. A reply with neither ends the turn
    with whatever JSON (or text) it holds, unless `no_action` turns it into feedback (the worker
    then keeps going). `setup` runs once in the workspace at `start`, before any step (a runner's
    own helpers, e.g. DABstep's `final_answer`); `answer_in_output(output)` reads a final answer
    that the code itself reported. `clean(text)` is applied to every reply before it is parsed
    and kept in the history (e.g. dropping a reasoning model's think block). `chat_kwargs` go
    with every request (e.g. a completion-token cap).
    """

    system_prompt: str = DEFAULT_SYSTEM
    turn_text: Callable[[AgentTurn], str] = AgentTurn.prompt
    parse: Callable[[str], tuple[str | None, str | None]] = _default_parse
    feedback: Callable[[str], str] = lambda output: f"Output:\n{output or '(no output)'}"
    setup: str = ""
    answer_in_output: Callable[[str], str | None] | None = None
    no_action: Callable[[str], str] | None = None
    clean: Callable[[str], str] = lambda text: text
    chat_kwargs: Mapping[str, Any] = field(default_factory=dict)


class LLMWorker:
    """Implements `WorkerAdapter` with an OpenAI-compatible chat model."""

    def __init__(
        self,
        client: Any,
        *,
        system_prompt: str | None = None,
        protocol: WorkerProtocol | None = None,
        max_output_chars: int = 4000,
        max_failures: int = 3,
    ):
        self.client = client
        self.protocol = protocol or WorkerProtocol()
        self.system_prompt = system_prompt or self.protocol.system_prompt
        self.max_output_chars = max_output_chars
        self.max_failures = max_failures
        self.messages: list[dict[str, Any]] = []
        self.answers: dict[int, Any] = {}
        self.turn: int | None = None
        self._done = True
        self._failures = 0

    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        self.task, self.ws = task, workspace
        self.messages = [{"role": "system", "content": self.system_prompt}]
        if self.protocol.setup:
            result = workspace.run_cell(self.protocol.setup)
            if not result.ok:
                raise RuntimeError(
                    f"the worker protocol's setup code failed in the workspace: {result.error}"
                )

    def inject(self, message: WorkerMessage) -> None:
        if message.kind == "turn" and message.turn is not None:
            self.turn = message.turn.turn_id
            self._done = False
        elif message.kind == "repair_hint":
            self._done = False  # a repair hint reopens the work on the current analysis
        text = (
            self.protocol.turn_text(message.turn) if message.kind == "turn" and message.turn else message.text
        )
        self.messages.append({"role": "user", "content": text})

    def done(self) -> bool:
        return self._done

    def final_answer(self) -> dict[int, Any]:
        return dict(self.answers)

    def snapshot(self) -> Any:
        return {"messages": [dict(m) for m in self.messages], "turn": self.turn, "done": self._done}

    def restore(self, token: Any) -> None:
        """The conversation as it was at the checkpoint; submitted answers are kept (see the contract)."""
        self.messages = [dict(m) for m in token["messages"]]
        self.turn = token["turn"]
        self._done = token["done"]
        self._failures = 0

    def step(self, index: int) -> WorkerStep | None:
        if self._done:
            return None
        try:
            reply = self.client.chat(self.messages, **self.protocol.chat_kwargs)
        except Exception as exc:  # the endpoint failed after its own retries
            self._failures += 1
            if self._failures >= self.max_failures:
                self._done = True  # give up on this turn without an answer
            return WorkerStep(
                index=index,
                turn=self.turn,
                action="",
                error=f"model call failed: {exc}",
                success=False,
                meta={"turn_end": self._done, "reads": [], "writes": []},
            )
        self._failures = 0
        text = self.protocol.clean(reply.message.get("content") or "")
        self.messages.append({"role": "assistant", "content": text})
        code, answer = self.protocol.parse(text)
        # the thought is what the reply says before its code (whatever the protocol's code tags are)
        head = text.split(code, 1)[0] if code and code in text else text
        thought = _OPENING_TAG.sub("", head.split("```")[0]).strip()[:2000]
        if answer is None and code is None and self.protocol.no_action is not None:
            self.messages.append({"role": "user", "content": self.protocol.no_action(text)})
            return WorkerStep(
                index=index,
                turn=self.turn,
                thought=thought,
                action="",
                output=text[-2000:],
                error="reply held no action",
                success=False,
                meta={"turn_end": False, "reads": [], "writes": []},
            )
        if answer is not None or code is None:
            body = answer if answer is not None else text
            parsed = last_json(body)
            if parsed is None and answer is not None and answer.strip():
                parsed = answer.strip()  # a free-text answer (the judge reads text)
            if self.turn is not None:
                self.answers[self.turn] = parsed
            self._done = True
            return WorkerStep(
                index=index,
                turn=self.turn,
                thought=thought,
                action="",
                output=text[-2000:],
                meta={"turn_end": True, "final": True, "reads": [], "writes": []},
            )
        result = self.ws.run_cell(code)
        output = "\n".join(x for x in (result.stdout, result.value or "", result.error or "") if x)
        output = output[-self.max_output_chars :]
        self.messages.append({"role": "user", "content": self.protocol.feedback(output)})
        reported = self.protocol.answer_in_output(result.stdout) if self.protocol.answer_in_output else None
        if reported is not None and self.turn is not None:
            self.answers[self.turn] = reported  # the code called the runner's final-answer helper
            self._done = True
        return WorkerStep(
            index=index,
            turn=self.turn,
            thought=thought,
            action=code,
            output=result.stdout + (result.value or ""),
            error=result.error,
            success=result.ok,
            meta={
                "cell_id": result.cell_id,
                "reads": result.reads,
                "writes": result.writes,
                "stale_reads": result.stale_reads,
                "turn_end": reported is not None,
                "wall_s": result.wall_s,
                **({"final": True} if reported is not None else {}),
            },
        )
