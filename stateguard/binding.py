"""Harness-owned bookkeeping for UPDATE_STATE: source binding, variable versions, citations,
and the constraints the manager made executable once the work was known.

The manager says what a state contains; these functions decide the provenance it gets:
the worker-step interval (the whole turn in the turn-aligned flow; one checked inclusive
interval of untraced steps in the segment flow) and the version of every variable (`@S<draft>`
for values produced now, or an earlier committed version that the state reuses unchanged).
Every refusal is an ActionError whose message is corrective feedback.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from stateguard.actions import ActionError, ConclusionArg, ConstraintArg, VariableArg
from stateguard.lifecycle import Regime
from stateguard.state import Conclusion, Constraint, VariableRef, state_number
from stateguard.store import StateStore

Interval = tuple[int | None, int | None]


def _pending(steps: Collection[int], traced_upto: int) -> str:
    pending = [i for i in steps if i >= traced_upto]
    return f"[{min(pending)}, {max(pending)}]" if pending else "none"


def bind_source(
    regime: Regime,
    interval: Sequence[int] | None,
    *,
    steps: Collection[int],
    traced_upto: int,
    turn_start: int | None,
    previous: Interval,
    notes: list[str],
) -> Interval:
    """The source interval of the draft after this UPDATE_STATE."""
    if regime is Regime.TURN_ALIGNED:
        # The turn's own steps, never ones an earlier state already covers.
        first = traced_upto if turn_start is None else max(turn_start, traced_upto)
        indices = [i for i in steps if i >= first]
        bound: Interval = (min(indices), max(indices)) if indices else (None, None)
        if interval is not None and tuple(interval) != bound:
            notes.append(
                f"source_interval {list(interval)} ignored: the harness binds the whole turn {list(bound)}"
            )
        return bound
    if interval is None:
        if previous[0] is not None:
            return previous
        raise ActionError(
            "UPDATE_STATE needs source_interval [first_step, last_step] in the segment-induced flow; "
            f"pending steps are {_pending(steps, traced_upto)}"
        )
    start, end = interval
    if start > end:
        raise ActionError(f"source_interval {list(interval)}: first step is after last step")
    if start < traced_upto:
        raise ActionError(
            f"source_interval {list(interval)} starts at step {start}, but steps before {traced_upto} "
            "already belong to committed states; start at or after it"
        )
    if not steps or end > max(steps):
        raise ActionError(
            f"source_interval {list(interval)} covers unrecorded steps (it ends after the last recorded step); "
            f"pending steps are {_pending(steps, traced_upto)}"
        )
    missing = [i for i in range(start, end + 1) if i not in steps][:5]
    if missing:
        raise ActionError(
            f"source_interval {list(interval)} covers unrecorded steps {missing}; "
            f"pending steps are {_pending(steps, traced_upto)}"
        )
    return start, end


def version_variables(
    variables: Sequence[VariableArg], *, draft_id: str, store: StateStore
) -> list[VariableRef]:
    """Assign versions: new values get the draft's id; a reused version must be committed and earlier."""
    seen: set[str] = set()
    out = []
    for var in variables:
        if var.name in seen:
            raise ActionError(f"variable '{var.name}' is listed twice in used_variables; list each name once")
        seen.add(var.name)
        version = draft_id if var.version is None else var.version.split("@")[-1]
        if version != draft_id:
            if state_number(version) >= state_number(draft_id):
                raise ActionError(
                    f"variable '{var.name}' claims version {version}, which is not earlier than {draft_id}"
                )
            if not store.has_version(var.name, version):
                current = store.current_version(var.name)
                raise ActionError(
                    f"variable '{var.name}@{version}' was never committed; "
                    + (f"its current version is {current}" if current else "it has no committed version")
                    + " — omit version for a value computed in this state"
                )
        out.append(VariableRef(name=var.name, version=version, value=var.value))
    return out


def cite_conclusions(
    conclusions: Sequence[ConclusionArg | str], variables: Sequence[VariableRef]
) -> list[Conclusion]:
    """Resolve each conclusion's cited names to the versioned keys of the state's variables."""
    by_name = {v.name: v for v in variables}
    out = []
    for c in conclusions:
        text, cited = (c, []) if isinstance(c, str) else (c.text, c.variables)
        keys = []
        for ref in cited:
            base = ref.split("@")[0]
            if base not in by_name:
                raise ActionError(
                    f"conclusion {text[:40]!r} cites '{ref}', which is not in used_variables; "
                    "list the variable first or drop the citation"
                )
            keys.append(by_name[base].key)
        out.append(Conclusion(text=text, variables=keys))
    return out


def merge_constraints(current: Sequence[Constraint], given: Sequence[ConstraintArg]) -> list[Constraint]:
    """The draft's constraints after UPDATE_STATE: a given constraint replaces the one with the
    same text (in place, so the order stays that of OPEN), the others are added in order. In the
    turn-aligned flow a requirement opened in words gets its code here, once the turn's work is
    known, and the harness evaluates it right after like any other constraint."""
    out = list(current)
    index = {c.text: i for i, c in enumerate(out)}
    for arg in given:
        constraint = Constraint(text=arg.text, code=arg.code)
        if arg.text in index:
            out[index[arg.text]] = constraint
        else:
            index[arg.text] = len(out)
            out.append(constraint)
    return out
