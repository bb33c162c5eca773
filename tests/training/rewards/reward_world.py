"""Real-harness traces for the reward tests (imported as tests.training.rewards.reward_world).

`Sales` drives a real `Harness` over a `DictWorkspace` the way the rollout loop does: worker cells
really run, every manager action goes through `Harness.apply`, and the trace is the harness's own.
Its prefix commits S1 (total revenue of four orders) and leaves S2 (the share of revenue from
large orders) at the verification stage; `mark()` then starts the continuation under test.

    sales = Sales(); sales.prefix(threshold=250)      # 250: the counterfactual filter (g = 1)
    sales.mark(); sales.repair(["big"]); sales.retry(); sales.settle()
    result = sales.score(labels)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stateguard import DictWorkspace, EventType, Harness, HarnessConfig, StateStore, WorkerStep
from stateguard.actions import RawAction
from stateguard.harness import HarnessResult
from stateguard.lifecycle import Regime
from stateguard.trace import Trace, TraceEvent
from training.rewards import DecisionLabel, RewardLabels, RewardResult, score_trace

ORDERS = [120.0, 80.0, 300.0, 45.5]
REVENUE = 545.5
CORRECT, FAULTY = 100, 250  # the question's threshold, and the counterfactual one
REASON = "the cut used to select large orders does not follow the question, so the selection is off"


def share_cell(threshold: int) -> str:
    return (
        f"big = [o for o in orders if o > {threshold}]\n"
        "share = sum(big) / revenue\n"
        "print(json.dumps({'big': big, 'share': round(share, 4)}))"
    )


def labels(*flags: bool, affected: tuple[str, ...] = ("big",)) -> RewardLabels:
    """One DecisionLabel per flag (g_i), the inconsistent ones affecting `affected`."""
    return RewardLabels(
        decision_points=[
            DecisionLabel(inconsistent=g, affected_variables=list(affected) if g else []) for g in flags
        ]
    )


class Sales:
    """A two-turn sales analysis on a real harness (turn-aligned unless told otherwise)."""

    def __init__(self, regime: Regime = Regime.TURN_ALIGNED, path: Path | None = None):
        self.trace = Trace(path, clock=lambda: None)
        self.ws = DictWorkspace()
        self.ws.run("import json")
        self.h = Harness(
            StateStore(":memory:"), HarnessConfig(regime=regime), trace=self.trace, workspace=self.ws
        )
        self.trace.emit(
            "run_start", task_id="sales", arm="stateguard", flow={"regime": regime.value}, manager="test"
        )
        self.index = 0
        self.start_seq = 0
        self.threshold = CORRECT

    # -- worker and manager moves
    def cell(self, code: str, turn: int) -> WorkerStep:
        result = self.ws.run_cell(code)
        step = WorkerStep(
            index=self.index,
            turn=turn,
            action=code,
            output=result.stdout.strip(),
            error=result.error,
            success=result.ok,
            meta={"reads": result.reads, "writes": result.writes},
        )
        self.h.record_step(step)
        self.index += 1
        return step

    def act(self, name: str, **arguments: Any) -> HarnessResult:
        return self.h.apply(RawAction(name=name, arguments=arguments))

    def review(self, event: EventType) -> None:
        self.h.begin_review(event)

    def mark(self) -> int:
        """The continuation starts here."""
        self.start_seq = self.trace.next_seq
        return self.start_seq

    # -- the scripted prefix
    def prefix(self, threshold: int = CORRECT) -> None:
        """S1 committed; S2 materialized and awaiting its verdict. Turn-aligned: OPEN before each
        turn's work; segment-induced: OPEN after it, with the steps as the source interval."""
        self.threshold = threshold
        segment = self.h.config.regime is Regime.SEGMENT_INDUCED
        first = f"orders = {ORDERS}\nrevenue = sum(orders)\nprint(json.dumps({{'revenue': revenue}}))"
        self.turn(1, "Total revenue of the orders", first, [], segment)
        self.update(
            [
                {"name": "orders", "value": {"type": "list", "shape": [4]}},
                {"name": "revenue", "value": REVENUE},
            ],
            [{"text": f"total revenue is {REVENUE}", "variables": ["revenue"]}],
            interval=[0, 0] if segment else None,
        )
        self.settle()
        self.turn(
            2,
            "Share of revenue from large orders",
            share_cell(threshold),
            [{"related_state_id": "S1"}],
            segment,
        )
        self.update_share(interval=[1, 1] if segment else None)

    def turn(self, turn: int, issue: str, code: str, relations: list[dict[str, Any]], segment: bool) -> None:
        if segment:
            self.cell(code, turn)
            self.review(EventType.PAUSE)
            self.act("OPEN_STATE", issue=issue, relations=relations)
        else:
            self.review(EventType.TURN_START)
            self.act("OPEN_STATE", issue=issue, relations=relations)
            self.cell(code, turn)
            self.review(EventType.TURN_END)

    def update(
        self,
        variables: Sequence[dict[str, Any]],
        conclusions: Sequence[Any] = (),
        interval: list[int] | None = None,
    ) -> HarnessResult:
        arguments: dict[str, Any] = {"used_variables": list(variables), "conclusions": list(conclusions)}
        if interval is not None:
            arguments["source_interval"] = interval
        result = self.act("UPDATE_STATE", **arguments)
        assert result.accepted, result.feedback
        return result

    def update_share(
        self,
        extra_variables: Sequence[dict[str, Any]] = (),
        extra_conclusions: Sequence[Any] = (),
        interval: list[int] | None = None,
    ) -> HarnessResult:
        """UPDATE S2 with what the workspace holds now (big, share), revenue@S1 and one conclusion."""
        share = self.ws.namespace["share"]
        variables = [
            {"name": "big", "value": self.ws.namespace["big"]},
            {"name": "share", "value": share},
            {"name": "revenue", "version": "S1", "value": REVENUE},
            *extra_variables,
        ]
        conclusions = [{"text": f"large orders bring {share:.4f} of revenue", "variables": ["share"]}]
        return self.update(variables, [*conclusions, *extra_conclusions], interval)

    # -- continuations
    def settle(self) -> None:
        """Leave the state alone: finalize and commit."""
        assert self.act("FINALIZE_RELATIONS", mode="confirm").accepted
        assert self.act("COMMIT_STATE").accepted

    def repair(self, names: list[str], reason: str = REASON) -> HarnessResult:
        result = self.act(
            "REPAIR",
            analytical_evidence="[filter] selection differs from the question",
            error_hint={"error_variables": names, "faulty_reasoning": reason},
        )
        assert result.accepted, result.feedback
        return result

    def retry(self, threshold: int = CORRECT, *, recompute: bool = True) -> None:
        """The worker's retry, then the manager's next verification (a new decision point)."""
        code = share_cell(threshold) if recompute else "print(json.dumps({'share': round(share, 4)}))"
        self.cell(code, 2)
        self.review(EventType.REPAIR_RETURN)
        self.update_share()

    # -- reading it back
    @property
    def events(self) -> list[TraceEvent]:
        return self.trace.events()

    def score(self, reward_labels: RewardLabels, **kw: Any) -> RewardResult:
        return score_trace(self.events, reward_labels, start_seq=self.start_seq, **kw)
