"""Protocol correctness: R_action (paper Eq. 27) and R_lifecycle (Eq. 28) over a continuation.

    items = tool_items(rollout); r = ratio(items)            # Eq. 27
    items = control_items(rollout, config); r = ratio(items)  # Eq. 28

R_action counts the tool invocations the manager generated and how many executed. A tool that ran
succeeds when its ToolResult is ok; a run_probe whose check failed an assertion also succeeds (the
probe ran and returned evidence, even though the runtime marks it not ok). A tool call the harness
refused (unknown name, bad arguments, over the per-activation limit) fails, and so does a response
it could not parse into actions at all: Eq. 27 asks whether each action was parsed and invoked.

R_lifecycle checks every control action against `stateguard.lifecycle.LEGAL` at the stage it was
proposed in (the same table the harness enforces). With `refused_control_is_invalid` (default) a
legal action the harness still refused (bad arguments, failed constraint, leaking hint) is invalid
too: it did not respect the lifecycle as enforced. Malformed control actions are always invalid.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from stateguard.lifecycle import ControlAction, Stage, ToolAction, is_legal
from training.rewards.config import RewardConfig
from training.rewards.timeline import Rollout


class ToolItem(BaseModel):
    """One tool invocation and whether it executed (a term of Eq. 27)."""

    model_config = ConfigDict(frozen=True)

    seq: int
    name: str | None
    success: bool
    reason: str


class ControlItem(BaseModel):
    """One control action and whether it was valid at its lifecycle stage (a term of Eq. 28)."""

    model_config = ConfigDict(frozen=True)

    seq: int
    name: str
    stage: Stage
    legal: bool
    applied: bool
    valid: bool
    reason: str


def _probe_verdict(error: str | None) -> bool:
    """A probe that raised AssertionError ran fine and reports a failed check."""
    return bool(error) and str(error).startswith("AssertionError")


def tool_items(rollout: Rollout) -> list[ToolItem]:
    """The tool invocations of the continuation, each with its execution outcome."""
    items = []
    for act in rollout.window_actions():
        if act.kind == "unparsed":
            items.append(
                ToolItem(seq=act.seq, name=None, success=False, reason="response could not be parsed")
            )
        elif act.kind == "tool" and not act.accepted:
            why = "malformed call" if act.malformed else "refused by the harness"
            items.append(
                ToolItem(seq=act.seq, name=act.name, success=False, reason=f"{why}: {act.feedback[:200]}")
            )
        elif act.kind == "tool":
            ok = bool(act.tool_ok) or (
                act.name == ToolAction.RUN_PROBE.value and _probe_verdict(act.tool_error)
            )
            reason = (
                "executed"
                if act.tool_ok
                else ("probe ran; its check failed" if ok else f"failed: {act.tool_error}")
            )
            items.append(ToolItem(seq=act.seq, name=act.name, success=ok, reason=reason))
    return items


def control_items(rollout: Rollout, config: RewardConfig) -> list[ControlItem]:
    """The control actions of the continuation, each judged against the lifecycle table."""
    items = []
    for act in rollout.window_actions():
        if act.kind != "control" or act.name is None:
            continue
        action = ControlAction(act.name)
        legal = is_legal(rollout.regime, act.stage_before, action)
        if act.malformed:
            valid, reason = False, "malformed arguments"
        elif not legal:
            valid, reason = False, f"not legal at stage '{act.stage_before.value}'"
        elif not act.accepted:
            valid = not config.refused_control_is_invalid
            reason = f"legal but refused by the harness: {act.feedback[:200]}"
        else:
            valid, reason = True, "legal and applied"
        items.append(
            ControlItem(
                seq=act.seq,
                name=act.name,
                stage=act.stage_before,
                legal=legal and not act.malformed,
                applied=act.accepted,
                valid=valid,
                reason=reason,
            )
        )
    return items


def success_ratio(flags: Sequence[bool]) -> float | None:
    """(1/T) Σ I[...] of Eq. 27 / 28; None when T = 0 (the term does not apply)."""
    return sum(flags) / len(flags) if flags else None


def r_action(items: Sequence[ToolItem]) -> float | None:
    """R_action (Eq. 27): the share of generated tool actions that executed."""
    return success_ratio([i.success for i in items])


def r_lifecycle(items: Sequence[ControlItem]) -> float | None:
    """R_lifecycle (Eq. 28): the share of control actions valid at their lifecycle stage."""
    return success_ratio([i.valid for i in items])
