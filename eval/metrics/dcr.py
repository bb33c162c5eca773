"""Dependency Contamination Rate (paper Sec. 4.3 and Appendix C.4, Eq. 31) and its risk ratio.

A unit (a LongDS turn, a DAComp-DE table, a synthesized task's turn) is *contaminated* when at
least one of its observable parents is wrong. DCR is the error rate of contaminated units minus
the error rate of clean units; lower is better. The risk ratio RR divides the same two rates.

    parents = parse_dependencies(task_json_turns)               # eval.benchmarks.longds.deps
    one = dcr({1: True, 2: True, 5: False, 6: False}, parents)  # DCRResult for one task
    bench = pooled_dcr([one, other, ...])                       # the number a table reports

Rules, all from C.4:
* `correct[u]` is True/1 (score 1), False/0 (score 0) or None (excluded: the judge failed or the
  unit was not scored). An excluded unit is neither a unit nor an observable parent; it is never
  read as wrong. A unit absent from `correct` is treated like an excluded one.
* Units whose observable parent set is empty (no declared parents, or none of them scored) take
  part in neither group. Self-references are dropped, as the paper's parser drops them.
* DCR and RR are None (undefined), never 0, when either group is empty. RR is also None when
  the clean group has no errors (a zero denominator).

Pooling. C.4 defines U as the set of analytical units *of a benchmark*, so a benchmark's DCR
pools the four counts over all its tasks and then takes the two rates; it is not the mean of
per-task DCRs (most single tasks would be undefined, and long tasks would weigh as much as short
ones). `pooled_dcr` does exactly that.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, computed_field

from stateguard.artifacts.graph import RelationGraph

Unit = TypeVar("Unit", bound=Hashable)  # turn ids (int) or table names (str), one kind per call


class DCRResult(BaseModel):
    """The contaminated/clean partition of C.4 and the two statistics it yields."""

    model_config = ConfigDict(frozen=True)

    contaminated_n: int = Field(ge=0, description="|U_1|: units with at least one wrong observable parent.")
    contaminated_bad: int = Field(ge=0, description="Wrong units in U_1.")
    clean_n: int = Field(ge=0, description="|U_0|: units whose observable parents are all correct.")
    clean_bad: int = Field(ge=0, description="Wrong units in U_0.")
    skipped_unscored: int = Field(
        default=0, ge=0, description="Units with parents but no score of their own."
    )
    skipped_no_parents: int = Field(default=0, ge=0, description="Scored units with no observable parent.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def p_contaminated(self) -> float | None:
        """P(e_u = 1 | c_u = 1); None when U_1 is empty."""
        return self.contaminated_bad / self.contaminated_n if self.contaminated_n else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def p_clean(self) -> float | None:
        """P(e_u = 1 | c_u = 0); None when U_0 is empty."""
        return self.clean_bad / self.clean_n if self.clean_n else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def dcr(self) -> float | None:
        """Eq. 31: P(e=1 | c=1) - P(e=1 | c=0); None (undefined) when either group is empty."""
        if self.p_contaminated is None or self.p_clean is None:
            return None
        return self.p_contaminated - self.p_clean

    @computed_field  # type: ignore[prop-decorator]
    @property
    def risk_ratio(self) -> float | None:
        """C.4: RR = P(e=1 | c=1) / P(e=1 | c=0); None when undefined or when P(e=1 | c=0) is 0."""
        if self.p_contaminated is None or not self.p_clean:
            return None
        return self.p_contaminated / self.p_clean


def _score(unit: Hashable, value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(
        f"correct[{unit!r}] = {value!r}: use True/1 (correct), False/0 (wrong) or None (excluded, not judged)"
    )


def _check_keys(correct: Mapping[Unit, Any], parents: Mapping[Unit, Collection[Unit]]) -> None:
    """Catch the usual key-type slip (JSON string ids vs integer turn ids) instead of returning 0 units."""
    listed: set[Hashable] = set()
    for values in parents.values():
        if isinstance(values, Collection) and not isinstance(values, str | bytes):
            listed.update(values)
    known = {type(k).__name__ for k in correct}
    keys: set[Hashable] = set(parents)
    for what, ids in (("keys", keys), ("parent ids", listed)):
        kinds = {type(i).__name__ for i in ids}
        if correct and ids and not ids & set(correct) and kinds != known:
            raise ValueError(
                f"parents {what} are {sorted(kinds)} but correct is keyed by {sorted(known)}, so no unit matches; "
                "convert JSON string ids with int_keyed() (or use the same unit ids on both sides)"
            )


def dcr(correct: Mapping[Unit, Any], parents: Mapping[Unit, Collection[Unit]]) -> DCRResult:
    """Partition one task's units into U_1 / U_0 and count errors (C.4; Eq. 31 is `.dcr`).

    `correct`: unit -> True/False/1/0/None. `parents`: unit -> declared parents Pa(u), e.g. the
    output of `parse_dependencies` or of `parents_from_graph`. Only units listed in `parents`
    are candidates, as in the paper's loop over the dependency map.
    """
    _check_keys(correct, parents)
    scores = {unit: _score(unit, value) for unit, value in correct.items()}
    contaminated_n = contaminated_bad = clean_n = clean_bad = unscored = no_parents = 0
    for unit, declared in parents.items():
        if isinstance(declared, str | bytes) or not isinstance(declared, Collection):
            raise ValueError(f"parents[{unit!r}] = {declared!r}: give a list of parent unit ids")
        own = scores.get(unit)
        observed = [scores[p] for p in declared if p != unit and scores.get(p) is not None]
        if own is None:
            unscored += bool(declared)
            continue
        if not observed:
            no_parents += 1
            continue
        wrong = int(not own)
        if all(observed):
            clean_n += 1
            clean_bad += wrong
        else:
            contaminated_n += 1
            contaminated_bad += wrong
    return DCRResult(
        contaminated_n=contaminated_n,
        contaminated_bad=contaminated_bad,
        clean_n=clean_n,
        clean_bad=clean_bad,
        skipped_unscored=unscored,
        skipped_no_parents=no_parents,
    )


def pooled_dcr(results: Iterable[DCRResult]) -> DCRResult:
    """Benchmark-level DCR (C.4): sum the counts over tasks, then take the rates once."""
    totals = dict.fromkeys(
        (
            "contaminated_n",
            "contaminated_bad",
            "clean_n",
            "clean_bad",
            "skipped_unscored",
            "skipped_no_parents",
        ),
        0,
    )
    for result in results:
        for key in totals:
            totals[key] += getattr(result, key)
    return DCRResult(**totals)


def int_keyed(mapping: Mapping[Any, Iterable[Any]]) -> dict[int, list[int]]:
    """`{"2": ["1"]}` (JSON) -> `{2: [1]}`; raises ValueError naming a key or parent that is not an integer."""
    out: dict[int, list[int]] = {}
    for key, values in mapping.items():
        try:
            out[int(key)] = [int(v) for v in values]
        except (TypeError, ValueError):
            raise ValueError(f"parents[{key!r}] = {values!r}: unit ids must be integers (turn ids)") from None
    return out


def parents_from_graph(graph: RelationGraph) -> dict[int, list[int]]:
    """Pa(t) of a synthesized task from its hidden relation graph: each stage's `deps` (stage names)
    mapped to the turns that compute them. Only earlier turns are kept (C.4: Pa(t) within 1..t-1)."""
    turn_of = graph.stage_turns()
    parents: dict[int, set[int]] = {}
    for stage in graph.stages:
        turn = stage.turn_id
        found = parents.setdefault(turn, set())
        for dep in stage.deps:
            if dep not in turn_of:
                raise ValueError(
                    f"graph.json of {graph.task_id}: stage {stage.name!r} depends on unknown stage {dep!r}"
                )
            if turn_of[dep] < turn:
                found.add(turn_of[dep])
    return {turn: sorted(found) for turn, found in sorted(parents.items())}
