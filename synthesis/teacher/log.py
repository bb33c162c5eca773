"""The teacher's record of each activation: what it saw and every proposal with the harness verdict.

`synthesis.export` turns these logs into SFT samples (one per activation, plus the whole
trajectory) and RL prompts; `relay` wraps any policy's activation so an LLM's parsed actions are
logged the same way as the deterministic teacher's typed actions. The log's models are stored
with the corpus records, so they live in `stateguard.artifacts.activation_log`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from stateguard.actions import Action, ActionError, RawAction
from stateguard.artifacts.activation_log import ActionLog, ActivationLog
from stateguard.parser import parse_response
from stateguard.policies.base import Activation, ModelResponse

__all__ = ["log_action", "relay"]


def log_action(entry: ActivationLog, name: str, args: dict[str, Any], reply: Any) -> None:
    tool = getattr(reply, "tool_result", None)
    entry.actions.append(
        ActionLog(
            name=name,
            arguments=args,
            accepted=bool(reply.accepted),
            feedback=reply.feedback,
            tool_result=None if tool is None else tool.model_dump(mode="json"),
            control=name.isupper(),
        )
    )


def relay(inner: Activation, entry: ActivationLog) -> Generator[Any, Any, None]:
    """Pass the policy's proposals through, logging each with the harness's reply."""
    try:
        proposal = next(inner)
        while True:
            reply = yield proposal
            if isinstance(proposal, Action):  # the arguments as the policy set them (defaults left out)
                log_action(entry, proposal.name.value, proposal.args.model_dump(exclude_unset=True), reply)
            elif isinstance(proposal, RawAction):
                args = proposal.arguments
                log_action(entry, proposal.name, dict(args) if isinstance(args, dict) else {}, reply)
            elif isinstance(proposal, ModelResponse):  # an LLM teacher: log what the harness parsed
                try:
                    parsed = [
                        (a.name.value, a.args.model_dump(mode="json", exclude_none=True))
                        for a in parse_response(proposal.message).actions
                    ]
                except ActionError:
                    parsed = []
                for (name, args), result in zip(parsed, reply, strict=False):
                    log_action(entry, name, args, result)
            proposal = inner.send(reply)
    except StopIteration:
        return
