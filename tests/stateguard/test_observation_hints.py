"""Manager observation projection/compression and worker-facing hints."""

from __future__ import annotations

import json

import pytest

from stateguard.hints import (
    REPAIR_HINT_PREAMBLE,
    STATE_HINT_PREAMBLE,
    Hint,
    PackedState,
    pack_state,
    state_hint,
)
from stateguard.observation import (
    EventType,
    ManagerObservation,
    ProjectedStep,
    WorkerStep,
    approx_tokens,
    compress,
    project_steps,
)
from stateguard.state import AnalyticalState, Conclusion, Constraint, Relation, RelationType, VariableRef
from stateguard.store import IndexEntry


# ----------------------------------------------------------------------------- projection
def test_project_steps_back_references_repeated_output():
    steps = [
        WorkerStep(index=4, action="print(len(df))", output="120", meta={"latency_ms": 31}),
        WorkerStep(index=5, action="df = df.dropna()", output=""),
        WorkerStep(index=6, action="print(df.shape[0])", output="120", thought="  recount  "),
        WorkerStep(index=7, action="print(len(df))", output="118", error=None),
        WorkerStep(index=8, action="print(n)", output="120", error="NameError: n", success=False),
    ]
    projected = project_steps(steps)
    assert projected == [
        ProjectedStep(index=4, action="print(len(df))", output="120"),
        ProjectedStep(index=5, action="df = df.dropna()", output=""),
        ProjectedStep(index=6, action="# recount\nprint(df.shape[0])", output="(same output as step 4)"),
        ProjectedStep(index=7, action="print(len(df))", output="118"),
        ProjectedStep(index=8, action="print(n)", output="(same output as step 4)", error="NameError: n"),
    ]


def test_project_steps_drops_metadata():
    projected = project_steps([WorkerStep(index=0, action="x", output="y", meta={"secret": "tokens=99"})])
    dumped = projected[0].model_dump()
    assert set(dumped) == {"index", "action", "output", "error"}
    assert "tokens=99" not in json.dumps(dumped)


def test_empty_outputs_are_never_back_referenced():
    projected = project_steps([WorkerStep(index=i, action=f"a{i}") for i in range(3)])
    assert [p.output for p in projected] == ["", "", ""]


# ----------------------------------------------------------------------------- compression
def _observation(n_steps: int, n_index: int, output_len: int = 50) -> ManagerObservation:
    steps = [
        ProjectedStep(index=i, action=f"step_{i} = compute({i})", output=f"{i}:" + "x" * output_len)
        for i in range(n_steps)
    ]
    index = [
        IndexEntry(id=f"S{k}", issue=f"issue {k}", conclusions=["c1", "c2", "c3"])
        for k in range(1, n_index + 1)
    ]
    return ManagerObservation(
        event_type=EventType.TURN_END,
        available_state_id="S99",
        stage="drafting",
        legal_control_actions=["UPDATE_STATE", "ABANDON_STATE"],
        untraced_steps=steps,
        pending_start_step=0 if n_steps else None,
        pending_end_step=n_steps - 1 if n_steps else None,
        committed_state_index=index,
    )


def _step_count(text: str) -> int:
    return len(json.loads(text)["untraced_steps"])


def test_compress_level_zero_when_under_budget():
    obs = _observation(3, 2)
    out = compress(obs, budget_tokens=10_000)
    assert out.compression_level == 0
    assert out.untraced_steps == obs.untraced_steps
    assert out.elided_steps == 0
    assert out.committed_state_index == obs.committed_state_index
    assert out.render() == obs.render()


def test_compress_clips_long_outputs_at_level_one():
    obs = _observation(1, 0, output_len=6000)
    before = approx_tokens(obs.render())
    out = compress(obs, budget_tokens=600)
    after = approx_tokens(out.render())
    assert out.compression_level == 1
    assert after <= 600 < before
    assert "chars cut]" in out.untraced_steps[0].output
    assert len(out.untraced_steps[0].output) < 900
    assert out.elided_steps == 0


@pytest.mark.parametrize(
    ("budget", "level", "kept"),
    [
        (20, 0, list(range(20))),
        (8, 3, [0, 1] + list(range(14, 20))),  # head 2 + tail 6
        (5, 4, [0] + list(range(16, 20))),  # head 1 + tail 4
        (2, 5, [18, 19]),  # tail 2 only
        (0, 5, [18, 19]),  # nothing fits: the last level is returned
    ],
)
def test_compress_keeps_most_recent_steps(budget, level, kept):
    obs = _observation(20, 0).model_copy(update={"elided_steps": 3})
    out = compress(obs, budget_tokens=budget, count_tokens=_step_count)
    assert out.compression_level == level
    assert [s.index for s in out.untraced_steps] == kept
    assert out.elided_steps == 3 + (20 - len(kept))
    assert obs.elided_steps == 3 and len(obs.untraced_steps) == 20  # input untouched


def test_compress_trims_committed_index_and_records_drops():
    obs = _observation(2, 50)
    out = compress(obs, budget_tokens=0)
    assert out.compression_level == 5
    assert [e.id for e in out.committed_state_index] == ["S46", "S47", "S48", "S49", "S50"]
    assert out.elided_index_entries == 45
    assert all(e.conclusions == [] for e in out.committed_state_index)
    assert approx_tokens(out.render()) < approx_tokens(obs.render())


def test_compress_returns_smallest_fitting_level():
    obs = _observation(12, 30, output_len=400)
    sizes = {}
    for budget in (100_000, 1_500, 900, 300):
        out = compress(obs, budget_tokens=budget)
        sizes[budget] = (out.compression_level, approx_tokens(out.render()))
    levels = [sizes[b][0] for b in (100_000, 1_500, 900, 300)]
    tokens = [sizes[b][1] for b in (100_000, 1_500, 900, 300)]
    assert levels == sorted(levels) and levels[0] == 0 and levels[-1] > levels[0]
    assert tokens == sorted(tokens, reverse=True)
    for budget, (level, size) in sizes.items():
        if level < 5:
            assert size <= budget


def test_render_omits_schema_version():
    data = json.loads(_observation(1, 1).render())
    assert "schema_version" not in data
    assert data["event_type"] == "turn_end"
    assert data["compression_level"] == 0


def test_rendered_length_is_the_length_of_the_rendering_and_compress_measures_with_it():
    obs = _observation(7, 12, output_len=90).model_copy(
        update={
            "current_draft": {
                "id": "S3",
                "issue": "rate per région \u2028 “quoted”",
                "used_variables": [{"name": "t", "value": {"a": [1.5, None, [], {}], "b": "x\ny"}}],
                "constraints": [],
                "relations": [{"type": "Progress", "target": "S2"}],
            },
            "last_action_result": "accepted\ttab",
        }
    )
    for level_obs in [obs, _observation(0, 0), *(compress(obs, b) for b in (2_000, 900, 400, 0))]:
        assert level_obs.rendered_length() == len(level_obs.render())
    # the same level and content as measuring the rendered text (a counter that is not approx_tokens)
    for budget in range(0, 2_600, 50):
        fast = compress(obs, budget)
        slow = compress(obs, budget, count_tokens=lambda text: approx_tokens(text))
        assert fast.compression_level == slow.compression_level
        assert fast.render() == slow.render()


# ----------------------------------------------------------------------------- hints
def _state(sid: str = "S2") -> AnalyticalState:
    return AnalyticalState(
        id=sid,
        issue="Profit margin per region",
        constraints=[Constraint(text="round to 3 decimals", code="assert True")],
        used_variables=[
            VariableRef(name="revenue", version="S1", value=100),
            VariableRef(name="margin", version=sid, value=0.25),
        ],
        conclusions=[Conclusion(text="North has the highest margin", variables=[f"margin@{sid}"])],
        relations=[Relation(type=RelationType.PROGRESS, related_state_id="S1")],
        source_step_start=3,
        source_step_end=9,
        checkpoint_id="ckpt-secret-123",
    )


def _hint_payload(rendered: str) -> list[dict]:
    assert rendered.startswith(f"<state_hint>\n{STATE_HINT_PREAMBLE}\n")
    assert rendered.endswith("\n</state_hint>")
    body = rendered[len(f"<state_hint>\n{STATE_HINT_PREAMBLE}\n") : -len("\n</state_hint>")]
    return json.loads(body)


def test_pack_state_keeps_only_the_public_fields():
    packed = pack_state(_state())
    assert isinstance(packed, PackedState)
    assert set(packed.model_dump()) == {"id", "issue", "variables", "conclusions", "relations"}
    assert packed.variables == [
        {"name": "revenue", "version": "revenue@S1", "value": 100},
        {"name": "margin", "version": "margin@S2", "value": 0.25},
    ]
    assert packed.conclusions == ["North has the highest margin"]
    assert packed.relations == [{"type": "progress", "related_state_id": "S1"}]


def test_state_hint_render_hides_constraints_and_provenance():
    hint = state_hint([_state("S2"), _state("S3")], for_state="S4")
    assert hint is not None
    assert hint.kind == "state" and hint.for_state == "S4"
    rendered = hint.render()
    payload = _hint_payload(rendered)
    assert [p["id"] for p in payload] == ["S2", "S3"]
    for entry in payload:
        assert set(entry) == {"id", "issue", "variables", "conclusions", "relations"}
    for secret in (
        "constraints",
        "checkpoint_id",
        "ckpt-secret-123",
        "source_step_start",
        "source_step_end",
        "round to 3 decimals",
    ):
        assert secret not in rendered


def test_state_hint_none_when_nothing_related():
    assert state_hint([]) is None


def test_repair_hint_render_heavy():
    hint = Hint(
        kind="repair",
        for_state="S5",
        error_variables=["margin", "ratio@S3"],
        faulty_reasoning="The margin uses revenue from before the correction.",
        mode="heavy",
        removed_variables=["margin", "ranking"],
    )
    assert hint.render().splitlines() == [
        "<repair_hint>",
        REPAIR_HINT_PREAMBLE,
        "affected: margin, ratio@S3",
        "reason: The margin uses revenue from before the correction.",
        "removed from your workspace (recompute before use): margin, ranking",
        "</repair_hint>",
    ]


def test_repair_hint_render_light_has_no_removed_line():
    rendered = Hint(kind="repair", error_variables=["x"], faulty_reasoning="stale", mode="light").render()
    assert "removed from your workspace" not in rendered
    assert rendered == f"<repair_hint>\n{REPAIR_HINT_PREAMBLE}\naffected: x\nreason: stale\n</repair_hint>"
