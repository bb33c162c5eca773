"""A scripted stand-in for verl's rollout server on CPU: token ids in, a scripted manager reply out.

    client = ScriptedServerClient(config, tokenizer, constant_keys={"7"})
    # given to verl's AgentLoopWorker as its llm_client (training/rl/dry_run.py)

It implements verl's LLMServerClient.generate(request_id, prompt_ids=..., sampling_params=...) and
returns a TokenOutput, like a vLLM/SGLang replica would, with no model: it decodes the prompt, reads
the last OBSERVATION the manager was shown (stage, pending steps, draft) and answers with the text of
one manager turn, tokenized by the real tokenizer and closed by its end-of-turn token.

Which rollout of a group behaves how is fixed by the request id the agent loop gives each rollout
(`sg-<index>-<ordinal>-...`): ordinal k follows PERSONAS[k % len(PERSONAS)] at the decision point,
so a group of 8 spans a clean verdict, a checked verdict, two repairs (well and badly localized), a
probe before repairing, a malformed call, a response mixing tools with a control action and a
control action that is illegal at that stage. Prompt indices in `constant_keys` use the first
persona for every rollout: their rewards have zero variance, which DAPO's group filter drops.
After the verdict, every persona finishes the turn the same way (update after a retry, finalize,
commit), so the differences within a group come from the decision point.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.rollout.replica import TokenOutput

__all__ = ["PERSONAS", "ScriptedServerClient", "reply_for"]

_REQUEST = re.compile(r"^sg-(?P<key>.+)-(?P<ordinal>\d+)-[0-9a-f]+$")
_REASON = "the rows kept for this result do not follow the condition the question states"
PERSONAS = (
    "finalize",
    "check_finalize",
    "repair",
    "repair_wrong",
    "probe_repair",
    "malformed",
    "mixed",
    "illegal",
)


def _call(name: str, arguments: Mapping[str, Any] | None = None) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": dict(arguments or {})}) + "\n</tool_call>"


def _observation(text: str) -> tuple[dict[str, Any], str]:
    """The last OBSERVATION JSON in the decoded prompt and the text that follows it."""
    at = text.rfind("OBSERVATION\n")
    if at < 0:
        raise ValueError("scripted server: the prompt holds no OBSERVATION block (not a manager prompt)")
    obs, end = json.JSONDecoder().raw_decode(text, at + len("OBSERVATION\n"))  # `end` is absolute
    return obs, text[end:]


def _turn_variables(obs: Mapping[str, Any]) -> list[dict[str, Any]]:
    draft = obs.get("current_draft") or {}
    return [v for v in draft.get("used_variables") or [] if v.get("version") == draft.get("id")]


def _tables(obs: Mapping[str, Any]) -> list[str]:
    """Variables of this turn that hold a table (the synthesized stages' results)."""
    names = [
        v["name"]
        for v in _turn_variables(obs)
        if isinstance(v.get("value"), Mapping)
        and v["value"].get("type") == "DataFrame"
        and not v["name"].startswith("_")
    ]
    return names or [v["name"] for v in _turn_variables(obs) if v["name"] == "result"] or ["result"]


def _verdict(persona: str, obs: Mapping[str, Any], calls_so_far: int) -> str:
    """The reply at the decision point (stage `updated`) for one persona."""
    last_step = obs.get("pending_end_step") or 0
    repair = {
        "analytical_evidence": "the turn's filter differs from the question",
        "error_hint": {"error_variables": _tables(obs), "faulty_reasoning": _REASON},
    }
    if persona == "check_finalize" and calls_so_far == 0:
        return _call("check_execution", {"step_id": last_step})
    if persona == "repair":
        return _call("REPAIR", repair)
    if persona == "repair_wrong":
        return _call(
            "REPAIR", {**repair, "error_hint": {"error_variables": ["_path"], "faulty_reasoning": _REASON}}
        )
    if persona == "probe_repair":
        if calls_so_far == 0:
            return _call("run_probe", {"code": f"result = len({_tables(obs)[0]})"})
        return _call("REPAIR", repair)
    if persona == "malformed" and calls_so_far == 0:
        return '<tool_call>\n{"name": "FINALIZE_RELATIONS", "arguments": {"mode": \n</tool_call>'
    if persona == "mixed" and calls_so_far == 0:
        return (
            _call("check_execution", {"step_id": last_step})
            + "\n"
            + _call("FINALIZE_RELATIONS", {"mode": "confirm"})
        )
    if persona == "illegal" and calls_so_far == 0:
        return _call("COMMIT_STATE")
    return _call("FINALIZE_RELATIONS", {"mode": "confirm"})


def _follow_up(obs: Mapping[str, Any]) -> str:
    """Later activations of the turn: the same for every persona."""
    stage = obs.get("stage")
    if stage == "finalized":
        return _call("COMMIT_STATE")
    if stage in ("open", "repairing"):
        variables = [{"name": v["name"]} for v in _turn_variables(obs)]
        return _call(
            "UPDATE_STATE", {"used_variables": variables, "conclusions": ["the turn was recomputed"]}
        )
    if stage == "updated":
        return _call("FINALIZE_RELATIONS", {"mode": "confirm"})
    legal = list(obs.get("legal_control_actions") or [])
    return _call(
        next((a for a in ("ABSTAIN", "RESUME_WORKER") if a in legal), legal[0] if legal else "ABSTAIN")
    )


def reply_for(persona: str, text: str, end_of_turn: str) -> str:
    """The scripted manager's next turn for a decoded prompt (`text`, special tokens kept)."""
    obs, after = _observation(text)
    calls_so_far = max(after.count("<|im_start|>assistant") - 1, 0)  # the last one is the generation prompt
    first_activation = text.count("OBSERVATION\n") == 1
    if obs.get("stage") == "updated" and first_activation:
        body = _verdict(persona, obs, calls_so_far)
    else:
        body = _follow_up(obs)
    return body + end_of_turn


class ScriptedServerClient(LLMServerClient):
    """verl LLMServerClient whose generate() answers from a script (no engine, no Ray)."""

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        *,
        constant_keys: Iterable[str] = (),
        personas: tuple[str, ...] = PERSONAS,
        end_of_turn: str | None = None,
        on_reply: Callable[[str, str], None] | None = None,
    ):
        super().__init__(config, load_balancer_handle=None)  # type: ignore[arg-type]  # no Ray: generate() is ours
        self.tokenizer = tokenizer
        self.constant_keys = {str(k) for k in constant_keys}
        self.personas = personas
        self.end_of_turn = end_of_turn or tokenizer.eos_token
        self.on_reply = on_reply
        self.requests = 0

    def persona(self, request_id: str) -> str:
        match = _REQUEST.match(request_id)
        if match is None or match["key"] in self.constant_keys:
            return self.personas[0]
        return self.personas[int(match["ordinal"]) % len(self.personas)]

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any
    ) -> TokenOutput:
        self.requests += 1
        persona = self.persona(request_id)
        text = reply_for(
            persona, self.tokenizer.decode(prompt_ids, skip_special_tokens=False), self.end_of_turn
        )
        if self.on_reply is not None:
            self.on_reply(request_id, text)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        limit = int(sampling_params.get("max_tokens") or len(ids))
        ids = ids[:limit]
        return TokenOutput(
            token_ids=ids,
            log_probs=[0.0] * len(ids),
            stop_reason="completed",
            extra_fields={"persona": persona},
        )
