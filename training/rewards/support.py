"""State grounding: R_support (paper Eq. 29), the share of recorded variables and conclusions that
runtime evidence supports, over the states the continuation committed.

    items = support_items(rollout, Adjudicator(judge)); r = r_support(items)

U_k = V_k ∪ N_k for every state committed inside the continuation (a draft that was repaired away
or abandoned is not a produced state). Each item is decided from E_k (training.rewards.evidence):

variables (name@version = value)
  * inherited (the version is an earlier state): grounded when it equals the committed record of
    that version; a different value is ungrounded. Without the earlier state in the trace, the
    harness's own check at UPDATE (the version was committed) grounds it.
  * defined here with no value, or a runtime summary of an object (type/shape/hash): grounded when a
    successful worker step of the state's source wrote the name, else ungrounded.
  * defined here with a value: grounded when every scalar in it appears in the evidence (numbers at
    their precision; small counts and booleans only under their own field name) or a passed
    executable check reads the name and states the value; ungrounded when the evidence shows the
    same field with other values, or nothing in the runtime wrote the name; otherwise undecided.
conclusions
  * ungrounded when they cite an ungrounded variable; grounded when every number they state
    (counts 0-10 aside) is in the evidence or in the state's grounded values, or, stating none,
    when they name a grounded string value; otherwise undecided.
Undecided items go to the judge; without one they are ungrounded (plans and reasoning that nothing
executed do not count as support) and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from stateguard.artifacts.events import StateCommittedEvent
from stateguard.dataflow import cell_dataflow
from training.rewards.evidence import (
    Evidence,
    leaves,
    number_of,
    numbers_in,
    same_number,
    same_value,
    state_evidence,
)
from training.rewards.judge import Adjudicator, How, JudgeCase
from training.rewards.timeline import Rollout

Verdict = tuple[bool | None, str]


class SupportItem(BaseModel):
    """One element of U_k and whether Grounded(u, E_k) holds."""

    model_config = ConfigDict(frozen=True)

    state_id: str
    kind: Literal["variable", "conclusion"]
    key: str
    grounded: bool
    decided_by: How
    reason: str


def _small_count(value: float) -> bool:
    return float(value).is_integer() and abs(value) <= 10


def _is_summary(value: Any) -> bool:
    return (
        value is None
        or value in ({}, [])
        or (isinstance(value, dict) and ("hash" in value or "shape" in value))
    )


def _leaf_found(field: str, leaf: Any, ev: Evidence) -> bool:
    keyed = ev.keyed_values(field)
    if leaf is None:
        return True
    if isinstance(leaf, bool):
        return any(v is leaf for v in keyed)
    if isinstance(leaf, int | float):
        target = number_of(float(leaf))
        numeric = [v for v in keyed if isinstance(v, int | float) and not isinstance(v, bool)]
        if any(same_number(target, number_of(float(v))) for v in numeric):
            return True
        return not _small_count(leaf) and ev.has_number(float(leaf))
    return isinstance(leaf, str) and (leaf in keyed or ev.has_text(leaf))


def _contradicted(name: str, value: Any, ev: Evidence) -> bool:
    """The evidence shows this field with numeric values, none of them the recorded one."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    seen = [v for v in ev.keyed_values(name) if isinstance(v, int | float) and not isinstance(v, bool)]
    return bool(seen) and not any(same_number(number_of(float(value)), number_of(float(v))) for v in seen)


def _checked(name: str, value: Any, ev: Evidence) -> bool:
    """A passed executable constraint reads the variable and states its value."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    for code in ev.passed_checks:
        flow = cell_dataflow(code)
        if name in (flow.reads if flow.valid else []) and any(
            same_number(number_of(float(value)), n) for n in numbers_in(code)
        ):
            return True
    return False


def ground_variable(
    var: dict[str, Any], state: dict[str, Any], ev: Evidence, committed: dict[str, dict[str, Any]]
) -> Verdict:
    """Grounded(u, E_k) for one used variable; None when evidence cannot decide."""
    name, version, value = var.get("name", ""), var.get("version"), var.get("value")
    if version != state.get("id"):
        source = committed.get(str(version))
        if source is None:
            return True, f"inherits {name}@{version}; the harness checked that version was committed"
        match = next(
            (
                v
                for v in source.get("used_variables") or []
                if v.get("name") == name and v.get("version") == version
            ),
            None,
        )
        if match is None:
            return False, f"{version} records no {name}@{version}"
        if value is None or match.get("value") is None or same_value(value, match.get("value")):
            return True, f"equals the committed {name}@{version}"
        return False, f"differs from the committed {name}@{version}"
    if _is_summary(value):
        if name in ev.written:
            return True, "written by a successful step of the state's source"
        return False, "no successful step of the state's source wrote it"
    if all(_leaf_found(field, leaf, ev) for field, leaf in list(leaves(value, name))[:200]):
        return True, "value found in execution output or tool evidence"
    if _checked(name, value, ev):
        return True, "stated by a passed executable check"
    if _contradicted(name, value, ev):
        return False, "the evidence shows other values for this field"
    if name not in ev.written:
        return False, "nothing in the state's source produced it"
    return None, "written by the worker, but no output or tool result shows the value"


def ground_conclusion(
    conclusion: dict[str, Any], values: Sequence[Any], ev: Evidence, verdicts: dict[str, bool]
) -> Verdict:
    """Grounded(u, E_k) for one conclusion, given the state's grounded values and variable verdicts."""
    text = str(conclusion.get("text") or "")
    bad = [key for key in conclusion.get("variables") or [] if verdicts.get(key) is False]
    if bad:
        return False, f"cites ungrounded {', '.join(bad)}"
    stated = [n for n in numbers_in(text, grouped=True) if not _small_count(n.value)]
    pool = [
        number_of(float(leaf))
        for v in values
        for _, leaf in leaves(v)
        if isinstance(leaf, int | float) and not isinstance(leaf, bool)
    ]
    if stated:
        missing = [
            n for n in stated if not ev.has_number(n.value) and not any(same_number(n, p) for p in pool)
        ]
        if not missing:
            return True, "every number it states is in the evidence"
        return None, f"states {missing[0].value:g}, which no output shows"
    strings = {leaf for v in values for _, leaf in leaves(v) if isinstance(leaf, str) and len(leaf) >= 3}
    strings |= {v for vs in ev.keyed.values() for v in vs if isinstance(v, str) and 3 <= len(v) <= 80}
    named = sorted(s for s in strings if s.lower() in text.lower())
    if named:
        return True, f"names the recorded value {named[0]!r}"
    return None, "no value in it can be checked against the evidence"


def scored_states(rollout: Rollout) -> list[dict[str, Any]]:
    """S_τ: the states committed inside the continuation, as committed."""
    return [e.data.state.model_dump(mode="json") for e in rollout.window_events(StateCommittedEvent)]


def _settle(verdict: Verdict, case: JudgeCase, ledger: Adjudicator) -> tuple[bool, How, str]:
    grounded, reason = verdict
    if grounded is not None:
        return grounded, "evidence", reason
    answer, how = ledger.decide(case, conservative="ungrounded")
    return answer == "grounded", how, reason


def support_items(rollout: Rollout, ledger: Adjudicator) -> list[SupportItem]:
    """Every variable and conclusion of every state the continuation committed, with its verdict."""
    committed = {
        e.data.state.id: e.data.state.model_dump(mode="json") for e in rollout.of_kind(StateCommittedEvent)
    }
    items: list[SupportItem] = []
    for state in scored_states(rollout):
        sid = str(state.get("id"))
        ev = state_evidence(rollout, state)
        head = f"State {sid} (issue: {str(state.get('issue') or '')[:200]})"
        verdicts: dict[str, bool] = {}
        grounded_values = []
        for var in state.get("used_variables") or []:
            key = f"{var.get('name')}@{var.get('version')}"
            case = JudgeCase(
                kind="support",
                subject=f"{head} records variable {key} = {var.get('value')!r}",
                evidence=ev.digest(),
            )
            ok, how, reason = _settle(ground_variable(var, state, ev, committed), case, ledger)
            verdicts[key] = ok
            if ok:
                grounded_values.append(var.get("value"))
            items.append(
                SupportItem(
                    state_id=sid, kind="variable", key=key, grounded=ok, decided_by=how, reason=reason
                )
            )
        for conclusion in state.get("conclusions") or []:
            text = str(conclusion.get("text") or "")
            case = JudgeCase(kind="support", subject=f"{head} concludes: {text}", evidence=ev.digest())
            ok, how, reason = _settle(
                ground_conclusion(conclusion, grounded_values, ev, verdicts), case, ledger
            )
            items.append(
                SupportItem(
                    state_id=sid, kind="conclusion", key=text, grounded=ok, decided_by=how, reason=reason
                )
            )
    return items


def r_support(items: Sequence[SupportItem]) -> float | None:
    """R_support (Eq. 29): Σ_k Σ_{u∈U_k} I[Grounded(u, E_k)] / Σ_k |U_k|; None when no item exists."""
    return sum(i.grounded for i in items) / len(items) if items else None
