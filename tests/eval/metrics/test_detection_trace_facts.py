"""What the detection facts and the viewer read from a trace: the manager's stale-read decisions,
and what a faulty block was to produce."""

from __future__ import annotations

from eval.metrics.detection_facts import facts_from_events
from eval.viewer.timeline import timeline
from stateguard.artifacts.events import parse_event


def _decision(seq: int, step: int, name: str, decision: str) -> dict[str, object]:
    return {
        "seq": seq,
        "kind": "stale_decision",
        "data": {
            "policy": "rules",
            "step": step,
            "name": name,
            "inputs": ["wx"],
            "decision": decision,
            "evidence": "recomputed on the current inputs it comes out different",
        },
    }


def test_the_last_decision_on_each_read_is_counted() -> None:
    events = [
        parse_event({"seq": 0, "kind": "turn_start", "data": {"turn_id": 1, "question": "q"}}),
        parse_event(_decision(1, 4, "wind_gap", "undecided")),
        parse_event(_decision(2, 4, "wind_gap", "finding")),  # re-verified: the later decision stands
        parse_event(_decision(3, 4, "wet_profile", "intended")),
        parse_event(_decision(4, 6, "wet_profile", "undecided")),
    ]
    facts = facts_from_events(events)
    assert facts.stale == {"finding": 1, "intended": 1, "undecided": 1}


def test_the_viewer_shows_each_decision_with_its_evidence() -> None:
    entries = timeline([parse_event(_decision(0, 4, "wind_gap", "finding"))])
    assert [(e.title, e.verdict) for e in entries] == [("stale read of wind_gap at step 4: finding", "error")]
    assert ("evidence", "recomputed on the current inputs it comes out different") in entries[0].body
    assert entries[0].variables == {"wind_gap"}


def test_a_block_that_raised_counts_what_it_was_to_write() -> None:
    """An exec_error fault: the block that raised wrote nothing, but a repair naming what it was to
    produce (`result`) names the fault's variables."""
    step = {
        "index": 3,
        "turn": 2,
        "action": "_rows = load()\nresult = {'n': len(_rowz)}\nprint(result)",
        "success": False,
        "error": "NameError: name '_rowz' is not defined",
        "meta": {"purpose": "faulty", "fault": "exec_error", "writes": ["_rows"]},
    }
    events = [
        parse_event({"seq": 0, "kind": "turn_start", "data": {"turn_id": 2, "question": "q"}}),
        parse_event({"seq": 1, "kind": "worker_step", "data": step}),
    ]
    facts = facts_from_events(events)
    assert [(f.turn, f.variables) for f in facts.faults] == [(2, ["_rows", "result"])]
