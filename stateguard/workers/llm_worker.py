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
import time
from typing import Any

from stateguard.answers import parse_answer
from stateguard.llm.client import ContextOverflow
from stateguard.observation import WorkerStep
from stateguard.task import AgentTask
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.answer_text import structured_answer
from stateguard.workers.data_preview import (
    FILES_HEADER,
    FRAMES_HEADER,
    files_probe,
    frames_probe,
    preview_text,
)
from stateguard.workers.output_answer import OUTPUT_ANSWER_NOTE, OUTPUT_ANSWER_SETUP, json_object_output
from stateguard.workers.protocol import WorkerProtocol
from stateguard.workspace import LiveWorkspace

_OPENING_TAG = re.compile(r"<[a-z_]+>\s*$")  # a code tag such as <execute_ipython> right before the code


_CLOSING_TAG = re.compile(r"[ \t]*\n?[ \t]*(?:```|</[A-Za-z_]+>)")


def _through_code(text: str, code: str) -> str:
    """The reply up to the end of its code block: what a model writes after its code (an output it
    imagined, an answer) is not kept in the history, since no execution produced it."""
    at = text.find(code)
    if at < 0:
        return text
    end = at + len(code)
    closing = _CLOSING_TAG.match(text, end)
    return text[: closing.end() if closing else end]


def _normal(code: str) -> str:
    """Code compared for repeats: trailing spaces and blank lines do not make it different."""
    return "\n".join(line.rstrip() for line in code.strip().splitlines() if line.strip())


# Feedback texts (the model reads them as the next user message).
REPEAT_REFUSED = (
    "Not run: this code is the same as code that already failed ({error}), and nothing has run "
    "successfully since, so it would fail the same way. Read the error and change the code."
)
REPEAT_SUCCESS = (
    "Not run: this code is the same as the code that just ran, and it printed {shown}. Running it "
    "again changes nothing. Print the values the question asks for, or give the answer."
)
# Added to REPEAT_REFUSED after a KeyError: the 1.5B model (issue 30) guessed `petal_length` on
# iris (whose columns are `petalLength`) in turn after turn and never looked at the names it had.
MISSING_KEY = (
    " A KeyError means that key or column does not exist: print the names that do (a data frame's "
    "`.columns`, a dict's `list(d)`, a list of records' `list(rows[0])`) and use one of them."
)
UNSUPPORTED_ANSWER = (
    "Answer not accepted: no code has run successfully for this question yet, so the answer rests "
    "on no executed result. Write code that computes it; you will see its output, then answer."
)
# The 1.5B model (issue 30, driving) answered with the system prompt's own placeholder, "The
# answer, in the form the question requires, and nothing else.", turn after turn.
TEMPLATE_ANSWER = (
    "Answer not accepted: it repeats the instructions' placeholder text, not an answer. Write the "
    "values that your code's output shows, in the form the question asks for."
)
# Added to the output of a turn's last successful cell when the turn's time is spent: under a
# loaded machine (issue 30, nat3) the 1.5B model's code for iris turns 1-3 ran right, and each
# turn's share ran out before the call that would have answered from that output.
LAST_CALL = (
    "\n(Time for this question is spent: give your final answer now, from the output you have "
    "seen, inside <answer>...</answer>; any code you send now runs, but the question then ends.)"
)
ANSWER_WITH_CODE = (
    "\n(Your reply also held an answer. It was ignored, because it came before this output: "
    "answer once you have read it.)"
)


def _copied_from(answer: str, instructions: str, min_chars: int = 20) -> bool:
    """Whether an answer is a passage of the instructions (white space and case aside): a model
    that copies the answer template has answered nothing. Short answers are never counted, since
    a value may well occur in the instructions."""
    text = " ".join(answer.split()).casefold()
    return len(text) >= min_chars and text in " ".join(instructions.split()).casefold()


class LLMWorker:
    """Implements `WorkerAdapter` with an OpenAI-compatible chat model.

    Brakes on a model that loops (each counted as a refused reply; `max_refusals` in a row end
    the turn unanswered): code identical to code that failed, with no successful cell since, is
    not run again; code identical to the cell that has just run successfully is not run again
    (issue 30: Qwen2.5-Coder-0.5B resent one successful block until the task's time cap was
    spent); an answer when no cell of the turn has run successfully is not accepted.
    `task_time_cap_s` bounds the model time of the whole task: once spent, every remaining turn
    ends unanswered at once. Under a cap each turn (and each repair hint) may also spend at most
    `turn_share` times its even share of the cap that is left (what is left over the turns still
    to come), so one stuck turn cannot spend the whole task's time (issue 30: the 1.5B model
    guessed column names on iris turn 2 until the cap was spent, and turns 3-8 never ran). A prompt the server refuses as too long is compacted (older turns'
    outputs shortened, then dropped) and sent again.

    A turn opens with what the model should see before it guesses (`data_preview`): the task's
    data files (names, dtypes, first rows; `preview_chars`, 0 = off) with the first turn, the
    session's data frames (name, shape, columns; `frames_chars`, 0 = off) with every later one.

    With `answer_from_output` a successful cell whose whole output is one JSON object ends the
    turn with that object as the answer, without a further call (`output_answer`; the system
    prompt says so): under load the separate answer call is what the time caps cut (nat3a)."""

    def __init__(
        self,
        client: Any,
        *,
        system_prompt: str | None = None,
        protocol: WorkerProtocol | None = None,
        max_output_chars: int = 4000,
        max_failures: int = 3,
        max_refusals: int = 3,
        task_time_cap_s: float | None = None,
        turn_share: float = 2.0,
        preview_chars: int = 1600,
        frames_chars: int = 600,
        answer_from_output: bool = False,
        compaction: int = 0,
    ):
        self.client = client
        self.protocol = protocol or WorkerProtocol()
        self.system_prompt = system_prompt or self.protocol.system_prompt
        self.answer_from_output = answer_from_output
        if answer_from_output:
            self.system_prompt += OUTPUT_ANSWER_NOTE
        self.max_output_chars = max_output_chars
        self.max_failures = max_failures
        self.max_refusals = max_refusals
        self.task_time_cap_s = task_time_cap_s
        if turn_share < 1.0:
            raise ValueError(
                f"LLMWorker turn_share={turn_share!r}: a turn must be allowed at least its even share "
                "of the task's time cap; use a value >= 1"
            )
        self.turn_share = turn_share
        self.preview_chars, self.frames_chars = preview_chars, frames_chars
        self._previewed = False  # the task's data files were shown (with its first turn)
        self._grace = False  # the turn's one call past its time, to answer from a cell that ran
        self._turn_until_s: float | None = None  # model time at which the current turn's share is spent
        self.messages: list[dict[str, Any]] = []
        self.answers: dict[int, Any] = {}
        self.turn: int | None = None
        self.model_s = 0.0  # model time spent on this task (failed calls included)
        self._done = True
        self._failures = 0
        self._refusals = 0
        self._turn_start = 1  # index in `messages` of the current turn's first message
        self._turn_starts: list[int] = []  # the same for every turn so far
        self._ran_code = False  # a cell of the current turn ran successfully
        self._failed: dict[str, str] = {}  # code that failed since the last successful cell -> its error
        self._last_ok: tuple[str, str] | None = (
            None  # (code, output) of the turn's latest cell, if it succeeded
        )
        if compaction not in (0, 1, 2, 3):
            raise ValueError(
                f"LLMWorker compaction={compaction!r}: use 0 (whole history) to 3 (current turn only)"
            )
        self.compaction = compaction  # the level a task starts at (eval.perf.hint_response: 3 on a slow CPU)
        self._compaction = compaction  # how hard older turns are compacted (raised on each context overflow)

    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        self.task, self.ws = task, workspace
        self.messages = [{"role": "system", "content": self.system_prompt}]
        self.model_s, self._compaction, self._turn_starts = 0.0, self.compaction, []
        self._previewed = False
        setups = [self.protocol.setup, OUTPUT_ANSWER_SETUP if self.answer_from_output else ""]
        for setup in filter(None, setups):
            result = workspace.run_cell(setup)
            if not result.ok:
                raise RuntimeError(f"the worker's setup code failed in the workspace: {result.error}")

    def inject(self, message: WorkerMessage) -> None:
        if message.kind == "turn" and message.turn is not None:
            self.turn = message.turn.turn_id
            self._done = False
            self._turn_start = len(self.messages)
            self._turn_starts.append(self._turn_start)
            self._ran_code, self._refusals, self._failed, self._last_ok = False, 0, {}, None
            self._grace = False
            self._turn_until_s = self._turn_allowance()
        elif message.kind == "repair_hint":
            self._done = False  # a repair hint reopens the work on the current analysis
            self._refusals, self._last_ok, self._grace = 0, None, False
            self._turn_until_s = self._turn_allowance()  # the hint's work gets a share of its own
        text = (
            self.protocol.turn_text(message.turn) if message.kind == "turn" and message.turn else message.text
        )
        if message.kind == "turn":
            preview = self._data_preview()
            text = f"{preview}\n\n{text}" if preview else text
        self.messages.append({"role": "user", "content": text})

    def _data_preview(self) -> str:
        """What the model is shown of the data as a turn opens: the task's data files with the
        first turn, the session's data frames with every later one ("" when there is nothing, or
        when the probe failed: the model can still look for itself). `data_preview` says why."""
        ws = getattr(self, "ws", None)
        if ws is None:
            return ""
        if not self._previewed:
            self._previewed = True
            if self.preview_chars <= 0:
                return ""
            result = ws.run_probe(files_probe(self.preview_chars))
            return preview_text(result, FILES_HEADER, self.preview_chars + 400)
        if self.frames_chars <= 0:
            return ""
        names = [v.name for v in ws.list_variables() if v.type in ("DataFrame", "Series")]
        if not names:
            return ""
        return preview_text(
            ws.run_probe(frames_probe(names, self.frames_chars)), FRAMES_HEADER, self.frames_chars + 100
        )

    def done(self) -> bool:
        return self._done

    def final_answer(self) -> dict[int, Any]:
        return dict(self.answers)

    def snapshot(self) -> Any:
        return {
            "messages": [dict(m) for m in self.messages],
            "turn": self.turn,
            "done": self._done,
            "turn_start": self._turn_start,
            "turn_starts": list(self._turn_starts),
        }

    def restore(self, token: Any) -> None:
        """The conversation as it was at the checkpoint; submitted answers are kept (see the contract)."""
        self.messages = [dict(m) for m in token["messages"]]
        self.turn = token["turn"]
        self._done = token["done"]
        self._turn_start = token.get("turn_start", len(self.messages))
        self._turn_starts = list(token.get("turn_starts", []))
        self._failures = self._refusals = 0
        self._failed, self._last_ok, self._grace = {}, None, False
        self._turn_until_s = self._turn_allowance()

    # ------------------------------------------------------------------ a turn begun elsewhere
    def adopt_cell(self, reply: str, output: str, ok: bool) -> None:
        """Record a cell that another worker ran in this workspace (`reply`: the model-format text
        holding its code) as the model's own step of the current turn, with its output as the
        feedback the model would have read. The hint-response experiment (eval.perf.hint_response)
        hands a turn over this way: reference or faulty cells first, the model after a repair hint."""
        code, _ = self.protocol.parse(reply)
        if code is None:
            raise ValueError(f"adopt_cell: the protocol reads no code in {reply[:80]!r}")
        self.messages.append({"role": "assistant", "content": reply})
        self.messages.append(
            {"role": "user", "content": self.protocol.feedback(output[-self.max_output_chars :])}
        )
        if ok:
            self._ran_code, self._failed = True, {}
            self._last_ok = (_normal(code), output)
        else:
            self._failed[_normal(code)] = output or "an error"
            self._last_ok = None

    def adopt_answer(self, reply: str | None, answer: Any) -> None:
        """End the current turn with `answer`, submitted by another worker (`reply`, the model-format
        text that gave it, joins the history; None when the code itself reported the answer)."""
        if reply is not None:
            self.messages.append({"role": "assistant", "content": reply})
        if self.turn is not None:
            self.answers[self.turn] = answer
        self._done = True

    # ------------------------------------------------------------------ one step
    def _capped(self) -> bool:
        return self.task_time_cap_s is not None and self.model_s >= self.task_time_cap_s

    def _turn_allowance(self) -> float | None:
        """The model time (a point on `model_s`) at which the current turn's share is spent: the cap
        left, split evenly over this turn and the later ones, times `turn_share`; None with no cap."""
        if self.task_time_cap_s is None:
            return None
        task = getattr(self, "task", None)
        later = [
            t for t in (task.turns if task is not None else []) if self.turn is None or t.turn_id >= self.turn
        ]
        left = max(self.task_time_cap_s - self.model_s, 0.0)
        return self.model_s + self.turn_share * left / max(len(later), 1)

    def _turn_spent(self) -> bool:
        return self._turn_until_s is not None and self.model_s >= self._turn_until_s

    def _failed_step(self, index: int, error: str, *, turn_end: bool, **meta: Any) -> WorkerStep:
        """A step that ran no code (a failed call, a refused reply): no execution evidence."""
        return WorkerStep(
            index=index,
            turn=self.turn,
            action="",
            error=error,
            success=False,
            meta={"turn_end": turn_end, "reads": [], "writes": [], "executed": False, **meta},
        )

    def _refuse(self, index: int, feedback: str, error: str, thought: str, text: str) -> WorkerStep:
        """Feed a refusal back; after `max_refusals` in a row the turn ends unanswered."""
        self._refusals += 1
        self.messages.append({"role": "user", "content": feedback})
        if self._refusals >= self.max_refusals:
            self._done = True
            error += f"; {self._refusals} refused replies in a row, the turn ends unanswered"
        step = self._failed_step(index, error, turn_end=self._done, refused=True)
        return step.model_copy(update={"thought": thought, "output": text[-2000:]})

    def _chat(self) -> Any:
        """One model call; a prompt the server refuses as too long is compacted and sent again."""
        while True:
            try:
                return self.client.chat(self._fitted(), **self.protocol.chat_kwargs)
            except ContextOverflow:
                if self._compaction >= 3:
                    raise
                self._compaction += 1

    def _fitted(self) -> list[dict[str, Any]]:
        """The history as sent: the system message and the current turn whole; earlier turns
        shortened by `_compaction` (1: outputs cut to 300 characters, 2: only each turn's opening
        message and the model's final replies, 3: nothing of them)."""
        if self._compaction == 0:
            return self.messages
        head, older, current = (
            self.messages[:1],
            self.messages[1 : self._turn_start],
            self.messages[self._turn_start :],
        )
        if self._compaction == 1:
            older = [{**m, "content": str(m.get("content") or "")[:300]} for m in older]
        elif self._compaction == 2:
            # each earlier turn as its opening message and the model's last reply in it
            bounds = [b for b in self._turn_starts if b < self._turn_start] + [self._turn_start]
            older = [
                self.messages[i]
                for a, b in zip(bounds, bounds[1:], strict=False)
                for i in sorted({a, b - 1})
                if a < b and (i == a or self.messages[i]["role"] == "assistant")
            ]
        else:
            older = []
        if self._compaction >= 2:  # shorter current-turn outputs too
            current = [current[0]] + [
                {**m, "content": str(m.get("content") or "")[-1500:]} for m in current[1:]
            ]
        return head + older + current

    def step(self, index: int) -> WorkerStep | None:
        """One model call. When the turn's time (its share, or the task's cap) is spent right after
        a cell that ran successfully, the turn gets one more call, told to answer from that output
        (`LAST_CALL`); whatever that call does, the turn then ends. A turn whose latest cell failed,
        or that ran nothing, ends at once as before."""
        if self._done:
            return None
        out_of_time = self._capped() or self._turn_spent()
        if out_of_time and self._last_ok is not None and not self._grace:
            self._grace = True
            last = self.messages[-1]
            if last.get("role") == "user":
                self.messages[-1] = {**last, "content": f"{last.get('content') or ''}{LAST_CALL}"}
            else:
                self.messages.append({"role": "user", "content": LAST_CALL.strip()})
        step = self._step(index)
        if self._grace and step is not None and not step.meta.get("final"):
            self._done = True  # the call past the turn's time is its last, and it did not answer
            failure = step.meta.get("worker_failure") or ("time_cap" if self._capped() else "turn_share")
            step = step.model_copy(
                update={"meta": {**step.meta, "turn_end": True, "worker_failure": failure}}
            )
        return step

    def _step(self, index: int) -> WorkerStep | None:
        if self._capped() and not self._grace:
            self._done = True
            return self._failed_step(
                index,
                f"worker time cap spent: {self.model_s:.0f} s of model time on this task "
                f"(task_time_cap_s={self.task_time_cap_s}); the turn ends unanswered",
                turn_end=True,
                worker_failure="time_cap",
            )
        if self._turn_spent() and not self._grace:
            self._done = True
            return self._failed_step(
                index,
                f"turn's share of the time cap spent: {self.model_s:.0f} s of model time on this task, "
                f"this turn's share ended at {self._turn_until_s:.0f} s (turn_share={self.turn_share} x "
                "the cap left per remaining turn); the turn ends unanswered",
                turn_end=True,
                worker_failure="turn_share",
            )
        started = time.monotonic()
        try:
            reply = self._chat()
        except Exception as exc:  # the endpoint failed after its own retries
            self._failures += 1
            if self._failures >= self.max_failures:
                self._done = True  # give up on this turn without an answer
            return self._failed_step(
                index, f"model call failed: {exc}", turn_end=self._done, worker_failure="model_call"
            )
        finally:
            self.model_s += time.monotonic() - started
        self._failures = 0
        text = self.protocol.clean(reply.message.get("content") or "")
        code, answer = self.protocol.parse(text)
        # the thought is what the reply says before its code (whatever the protocol's code tags are)
        head = text.split(code, 1)[0] if code and code in text else text
        thought = _OPENING_TAG.sub("", head.split("```")[0]).strip()[:2000]
        if code is not None:
            self.messages.append({"role": "assistant", "content": _through_code(text, code)})
            failed_before = self._failed.get(_normal(code))
            if failed_before is not None:
                last_line = failed_before.strip().splitlines()[-1][:300] if failed_before.strip() else ""
                return self._refuse(
                    index,
                    REPEAT_REFUSED.format(error=last_line or "an error")
                    + (MISSING_KEY if last_line.startswith("KeyError") else ""),
                    "repeated failing code, not run",
                    thought,
                    text,
                )
            if self._last_ok is not None and self._last_ok[0] == _normal(code):
                output = self._last_ok[1].strip()
                shown = f"this:\n{output[-500:]}" if output else "nothing"
                return self._refuse(
                    index,
                    REPEAT_SUCCESS.format(shown=shown),
                    "repeated the code that just ran, not run",
                    thought,
                    text,
                )
            return self._run(index, code, thought, answer_dropped=answer is not None)
        self.messages.append({"role": "assistant", "content": text})
        if answer is None and self.protocol.no_action is not None:
            self.messages.append({"role": "user", "content": self.protocol.no_action(text)})
            return WorkerStep(
                index=index,
                turn=self.turn,
                thought=thought,
                action="",
                output=text[-2000:],
                error="reply held no action",
                success=False,
                meta={"turn_end": False, "reads": [], "writes": [], "executed": False},
            )
        if answer is not None and _copied_from(answer, self.system_prompt):
            return self._refuse(index, TEMPLATE_ANSWER, "answer copied from the instructions", thought, text)
        if not self._ran_code:
            return self._refuse(index, UNSUPPORTED_ANSWER, "answer rests on no executed code", thought, text)
        # an <answer> block is read for labelled values too (`answer_text`): the model's text,
        # only reshaped so that a field judge can score it; a whole untagged reply is not
        parsed = structured_answer(answer) if answer is not None else parse_answer(text)
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

    def _run(self, index: int, code: str, thought: str, *, answer_dropped: bool) -> WorkerStep:
        result = self.ws.run_cell(code)
        output = "\n".join(x for x in (result.stdout, result.value or "", result.error or "") if x)
        output = output[-self.max_output_chars :]
        feedback = self.protocol.feedback(output) + (ANSWER_WITH_CODE if answer_dropped else "")
        self.messages.append({"role": "user", "content": feedback})
        if result.ok:
            self._ran_code, self._refusals, self._failed = True, 0, {}
            self._last_ok = (_normal(code), output)
        else:
            self._failed[_normal(code)] = result.error or "an error"
            self._last_ok = None
        reported: Any = (
            self.protocol.answer_in_output(result.stdout) if self.protocol.answer_in_output else None
        )
        from_output = False
        if reported is None and self.answer_from_output and result.ok:
            reported = json_object_output(result.stdout, result.value)
            from_output = reported is not None
        if reported is not None and self.turn is not None:
            self.answers[self.turn] = reported  # the code reported its answer (helper or JSON output)
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
                **({"answer_dropped": True} if answer_dropped else {}),
                **({"answer_from_output": True} if from_output else {}),
            },
        )
