"""Scoring one manager reply against the teacher's decision, and the summary over many (pure functions).

    (library module; `python -m eval.decisions` uses it)

Per reply:
* parsed  -- stateguard.parser.parse_response accepts it (valid tool or control calls, arguments
             checked against the action models, tools and control never mixed);
* legal   -- the action is allowed at the decision's lifecycle stage by stateguard.lifecycle.LEGAL
             (the harness's own table; evidence tools are allowed at every stage); an unparsed
             reply is not a legal action;
* correct -- its class (`tool` or the control action) equals the teacher's;
* for a teacher REPAIR answered with REPAIR: whether the named error_variables overlap the
  teacher's (`repair_overlap`) and whether they are the same set (`repair_exact`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from eval.decisions.items import DecisionItem, decision_class
from stateguard.actions import ActionError
from stateguard.lifecycle import ControlAction, is_legal
from stateguard.parser import parse_response

__all__ = ["DecisionScore", "Summary", "score_reply", "summarize"]


class DecisionScore(BaseModel):
    id: str
    teacher_class: str
    variant: str
    stage: str
    parsed: bool
    error: str | None = None
    actions: list[str] = Field(default_factory=list)
    predicted_class: str | None = None
    legal: bool = False
    correct: bool = False
    repair_overlap: bool | None = None
    repair_exact: bool | None = None
    truncated: bool = False
    latency_s: float = 0.0
    completion_tokens: int = 0
    reply: str = Field("", description="the reply's text and tool calls, cut to 2,000 characters")


def _repair_vars(calls: list[dict[str, Any]]) -> set[str]:
    for c in calls:
        if c["name"] == ControlAction.REPAIR.value:
            return {str(v) for v in (c["arguments"].get("error_hint") or {}).get("error_variables") or []}
    return set()


def score_reply(item: DecisionItem, message: dict[str, Any], *, truncated: bool = False) -> DecisionScore:
    """Score the assistant `message` (OpenAI shape: content and/or tool_calls) for `item`."""
    base = {
        "id": item.id,
        "teacher_class": item.teacher_class,
        "variant": item.variant,
        "stage": item.stage.value,
        "truncated": truncated,
        "reply": _reply_text(message),
    }
    try:
        parsed = parse_response(message)
    except ActionError as exc:
        return DecisionScore(**base, parsed=False, error=str(exc)[:300])
    names = [a.name.value for a in parsed.actions]
    cls = decision_class(names)
    control = parsed.control
    legal = control is None or is_legal(item.regime, item.stage, ControlAction(control.name.value))
    score = DecisionScore(
        **base,
        parsed=True,
        actions=names,
        predicted_class=cls,
        legal=legal,
        correct=cls == item.teacher_class,
    )
    if item.teacher_class == ControlAction.REPAIR.value and cls == item.teacher_class and control is not None:
        got = {str(v) for v in control.args.model_dump()["error_hint"]["error_variables"]}
        want = _repair_vars(item.teacher)
        score.repair_overlap = bool(got & want)
        score.repair_exact = got == want
    return score


def _reply_text(message: dict[str, Any]) -> str:
    calls = [
        f"{(c.get('function') or {}).get('name')}({(c.get('function') or {}).get('arguments')})"
        for c in message.get("tool_calls") or []
    ]
    return ((message.get("content") or "") + (" | calls: " + "; ".join(calls) if calls else ""))[:2000]


class Rates(BaseModel):
    n: int
    parse: float
    legal: float
    legal_of_parsed: float | None
    accuracy: float
    truncated: int


class Summary(BaseModel):
    overall: Rates
    by_teacher_class: dict[str, Rates]
    by_variant: dict[str, Rates]
    confusion: dict[str, dict[str, int]] = Field(
        description="teacher class -> predicted class (or `unparsed`) -> count"
    )
    repair: dict[str, Any] = Field(
        description="teacher REPAIRs: how many, answered REPAIR, right variables named"
    )
    mean_latency_s: float
    completion_tokens: int
    unanswered: int = Field(
        0, description="decisions the endpoint gave no answer to (not in the rates; a rerun asks them)"
    )


def _rates(scores: list[DecisionScore]) -> Rates:
    n = len(scores)
    parsed = [s for s in scores if s.parsed]

    def pct(k: int, d: int) -> float:
        return round(100.0 * k / d, 1) if d else 0.0

    return Rates(
        n=n,
        parse=pct(len(parsed), n),
        legal=pct(sum(s.legal for s in scores), n),
        legal_of_parsed=pct(sum(s.legal for s in parsed), len(parsed)) if parsed else None,
        accuracy=pct(sum(s.correct for s in scores), n),
        truncated=sum(s.truncated for s in scores),
    )


def summarize(scores: list[DecisionScore]) -> Summary:
    groups: dict[str, dict[str, list[DecisionScore]]] = {"cls": defaultdict(list), "var": defaultdict(list)}
    confusion: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for s in scores:
        groups["cls"][s.teacher_class].append(s)
        groups["var"][s.variant].append(s)
        confusion[s.teacher_class][s.predicted_class or "unparsed"] += 1
    repairs = [s for s in scores if s.teacher_class == ControlAction.REPAIR.value]
    answered = [s for s in repairs if s.predicted_class == ControlAction.REPAIR.value]
    return Summary(
        overall=_rates(scores),
        by_teacher_class={k: _rates(v) for k, v in sorted(groups["cls"].items())},
        by_variant={k: _rates(v) for k, v in sorted(groups["var"].items())},
        confusion={k: dict(v) for k, v in sorted(confusion.items())},
        repair={
            "teacher_repairs": len(repairs),
            "answered_repair": len(answered),
            "right_variable_named": sum(bool(s.repair_overlap) for s in answered),
            "same_variables": sum(bool(s.repair_exact) for s in answered),
            "false_repairs": sum(
                s.predicted_class == ControlAction.REPAIR.value
                for s in scores
                if s.teacher_class != ControlAction.REPAIR.value
            ),
        },
        mean_latency_s=round(sum(s.latency_s for s in scores) / len(scores), 2) if scores else 0.0,
        completion_tokens=sum(s.completion_tokens for s in scores),
    )
