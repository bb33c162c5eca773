"""The manager facing a real model's failures (issue 34): what is evidence, and what a REPAIR may name.

* a worker step that ran no code (a failed model call, a refused reply) is no execution evidence;
* a failed block that only read prelude names (pd, BASE_PATH) does not make them wrong;
* a REPAIR never names a module or function (a heavy repair would delete `pd` from the session);
* the rules manager stays inside the activation's action limit on a turn with dozens of steps;
* in segment flow a worker stuck on failing code gets a state (and a review) before its turn ends.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from stateguard.flows import FlowConfig
from stateguard.harness import HarnessConfig
from stateguard.lifecycle import ControlAction as A
from stateguard.lifecycle import Regime
from stateguard.lifecycle import Stage as S
from stateguard.observation import WorkerStep
from stateguard.policies import checks
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import AgentTask, AgentTurn
from stateguard.trace import read_trace
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workspace import DictWorkspace
from tests.stateguard.test_lifecycle_table import TA, apply, drive_to, make
from tests.stateguard.test_llm_worker_brakes import DEMO, FakeModel


def _failed_call(index: int) -> WorkerStep:
    return WorkerStep(
        index=index,
        turn=1,
        action="",
        error="model call failed: worker endpoint: prompt exceeds the model's context (HTTP 400)",
        success=False,
        meta={"turn_end": False, "executed": False, "worker_failure": "model_call"},
    )


def test_a_failed_model_call_is_not_execution_evidence() -> None:
    """Old: it was an execution finding on ['result'] (REPAIR rejected, then commit)."""
    assert checks.execution([_failed_call(0), _failed_call(1)]) == []
    bare = WorkerStep(index=2, turn=1, action="", error="model call failed: timeout", success=False)
    assert checks.execution([bare]) == []  # even from a worker that does not mark `executed`


def test_a_failed_block_does_not_blame_prelude_names() -> None:
    """Old: `pd.read_csv(BASE_PATH / ...)` raised and the finding named ['BASE_PATH', 'pd']."""
    step = WorkerStep(
        index=0,
        turn=1,
        action="print(pd.read_csv(BASE_PATH / 'data/sales.csv').shape)",
        error="TypeError: unsupported operand type(s) for /: 'str' and 'str'",
        success=False,
    )
    [finding] = checks.execution([step])
    assert not {"pd", "BASE_PATH"} & set(finding.variables)


def _repair(names: list[str]) -> dict[str, Any]:
    return {
        "analytical_evidence": "the block that should produce these raised and was never re-run",
        "error_hint": {
            "error_variables": names,
            "faulty_reasoning": "a block of this turn raised an error and was never re-run",
        },
    }


def test_a_repair_never_names_a_module() -> None:
    """Old: a light REPAIR named the module `pd` as an error variable."""
    h, ws = make(TA)
    ws.run_cell("import pandas as pd")
    drive_to(h, S.UPDATED)
    result = apply(h, A.REPAIR, _repair(["pd", "total"]))
    assert result.accepted, result.feedback
    assert [hint.error_variables for hint in h.pending_hints if hint.kind == "repair"] == [["total"]]

    h, ws = make(TA)
    ws.run_cell("import pandas as pd")
    drive_to(h, S.UPDATED)
    only_module = apply(h, A.REPAIR, _repair(["pd"]))
    assert not only_module.accepted and "modules or functions" in only_module.feedback
    assert "pd" in ws.namespace


def test_heavy_repair_does_not_delete_a_module() -> None:
    h, ws = make(TA, light_attempts=0)
    ws.run_cell("import pandas as pd")
    drive_to(h, S.UPDATED)
    assert apply(h, A.REPAIR, _repair(["pd", "total"])).accepted
    assert "pd" in ws.namespace and "total" not in ws.namespace


def _looping_replies(n: int) -> list[str]:
    """n different failing blocks, then a working one and its answer."""
    return [f"```python\nv{i} = undefined_name_{i}\n```" for i in range(n)] + [
        "```python\nn = 10\nprint(n)\n```",
        '<answer>{"n": 10}</answer>',
    ]


def _task(*questions: str) -> AgentTask:
    turns = [AgentTurn(turn_id=i, question=q) for i, q in enumerate(questions, 1)]
    return AgentTask(task_id="loop", turns=turns, base_path=str(DEMO))


def _actions(run_dir: Any) -> list[Any]:
    return [e for e in read_trace(run_dir / "trace.jsonl") if e.kind == "action"]


def test_rules_manager_stays_inside_the_activation_action_limit(tmp_path: Any) -> None:
    """Old: check_execution once per step, 12 of them past the limit ('already used 8 actions')."""
    flow = FlowConfig(
        name="t", regime=Regime.TURN_ALIGNED, budget_unit="turn", baseline_budget=40, stateguard_budget=40
    )
    worker = LLMWorker(FakeModel(_looping_replies(18)))
    rollout(_task("How many?"), worker, DictWorkspace(), flow=flow, manager=RulesManager(), run_dir=tmp_path)
    refused = [e for e in _actions(tmp_path) if not e.data.accepted]
    assert not [e for e in refused if "limit" in (e.data.feedback or "")], [e.data.feedback for e in refused]
    tools = [e for e in read_trace(tmp_path / "trace.jsonl") if e.kind == "tool"]
    per_activation = Counter(e.data.activation for e in tools)
    limit = HarnessConfig(regime="turn_aligned").max_actions_per_activation
    assert per_activation and max(per_activation.values()) < limit  # room left for the control action


def test_segment_flow_reviews_a_stuck_worker_before_its_turn_ends(tmp_path: Any) -> None:
    """Old: every pause got RESUME_WORKER and no state opened until the turn ended."""
    flow = FlowConfig(
        name="seg",
        regime=Regime.SEGMENT_INDUCED,
        review_every=3,
        budget_unit="task",
        baseline_budget=60,
        stateguard_budget=60,
    )
    worker = LLMWorker(FakeModel(_looping_replies(9)))
    rollout(_task("How many?"), worker, DictWorkspace(), flow=flow, manager=RulesManager(), run_dir=tmp_path)
    events = read_trace(tmp_path / "trace.jsonl")
    turn_end = min(e.seq for e in events if e.kind == "worker_step" and e.data.meta.turn_end)
    opened = [e for e in events if e.kind == "action" and e.data.name == "OPEN_STATE" and e.data.accepted]
    assert opened and opened[0].seq < turn_end
    hinted = [e for e in events if e.kind == "hint_delivered"]
    assert hinted and hinted[0].seq < turn_end  # the stuck worker heard about its failing blocks
