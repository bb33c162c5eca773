"""Trace file semantics, the verification tools, and the in-process workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard import (
    DictWorkspace,
    EventType,
    Harness,
    HarnessConfig,
    StateStore,
    Trace,
    WorkerStep,
    read_trace,
)
from stateguard.actions import RawAction, validate_action
from stateguard.artifacts.events import TurnStartEvent
from stateguard.hints import Hint
from stateguard.state import AnalyticalState, Relation, VariableRef
from stateguard.tools import check_execution, compile_python, inspect_python, run_tool


def test_rejected_action_appends_only_its_verdict(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "t.jsonl", clock=lambda: None)
    h = Harness(StateStore(tmp_path / "s.sqlite"), HarnessConfig(regime="turn_aligned"), trace=trace)
    h.begin_review(EventType.TURN_START)
    before = (tmp_path / "t.jsonl").read_bytes()
    result = h.apply(RawAction(name="COMMIT_STATE", arguments={}))
    assert not result.accepted
    after = (tmp_path / "t.jsonl").read_bytes()
    assert after.startswith(before)
    added = [json.loads(x) for x in after[len(before) :].decode().splitlines()]
    assert len(added) == 1 and added[0]["kind"] == "action" and added[0]["data"]["accepted"] is False
    assert "COMMIT_STATE is not allowed in stage 'idle'" in added[0]["data"]["feedback"]


def test_trace_events_are_numbered_and_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    trace = Trace(path)
    trace.emit("turn_start", turn_id=1)
    with trace.transaction():
        trace.emit("turn_start", turn_id=2)
        trace.emit("turn_start", turn_id=3)
    with pytest.raises(RuntimeError), trace.transaction():
        trace.emit("turn_start", turn_id=99)
        raise RuntimeError("boom")
    trace.close()
    again = Trace(path)
    again.emit("turn_start", turn_id=4, question="how many rows?")
    events = read_trace(path)
    assert [(e.seq, e.kind) for e in events] == [
        (0, "turn_start"),
        (1, "turn_start"),
        (2, "turn_start"),
        (3, "turn_start"),
    ]
    first, last = events[0], events[-1]
    assert isinstance(first, TurnStartEvent) and isinstance(last, TurnStartEvent)
    assert (first.data.turn_id, first.data.question, last.data.question) == (1, None, "how many rows?")
    assert first.schema_version == "stateguard/1"
    assert json.loads(path.read_text().splitlines()[0])["data"] == {"turn_id": 1}  # written as emitted


def test_a_renamed_or_unknown_event_field_fails_where_it_is_written_and_read(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "t.jsonl")
    with pytest.raises(
        ValueError,
        match=r"'turn_start' trace event: data.turn_id: Field required; data.turn: Extra inputs are not permitted",
    ):
        trace.emit("turn_start", turn=1)  # the field is turn_id
    with pytest.raises(ValueError, match=r"'turn_start' trace event: data.turn_id: Field required"):
        trace.emit("turn_start", question="q")
    with pytest.raises(ValueError, match=r"not a valid 'no_such_kind' trace event"):
        trace.emit("no_such_kind")
    trace.emit("turn_start", turn_id=1)
    trace.close()
    path = tmp_path / "t.jsonl"
    path.write_text(path.read_text().replace('"turn_id"', '"turn_no"'))
    with pytest.raises(
        ValueError, match=r"t.jsonl:1: not a valid 'turn_start' trace event: data.turn_id: Field required"
    ):
        read_trace(path)


def test_torn_last_line_is_dropped_but_corruption_elsewhere_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    trace = Trace(path)
    trace.emit("turn_start", turn_id=1)
    trace.emit("turn_start", turn_id=2)
    trace.close()
    with path.open("a") as fh:
        fh.write('{"kind": "half')
    assert [e.kind for e in read_trace(path)] == ["turn_start", "turn_start"]
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "garbage", lines[1]]) + "\n")
    with pytest.raises(ValueError, match=r"t.jsonl:2: not a JSON trace event"):
        read_trace(path)


@pytest.mark.parametrize(
    ("code", "reads", "writes"),
    [
        ("y = x + 1", ["x"], ["y"]),
        ("df.drop(columns=['a'], inplace=True)", ["df"], ["df"]),
        ("lst.append(3)", ["lst"], ["lst"]),
        ("df['c'] = df['a'] * 2", ["df"], ["df"]),
        (
            "total = sum(v for v in vals)",
            ["vals"],
            ["total"],
        ),  # comprehension variables and builtins are not cell dataflow
        ("obj.attr = 5", ["obj"], ["obj"]),
    ],
)
def test_inspect_python_reads_and_writes(code: str, reads: list[str], writes: list[str]) -> None:
    shape = inspect_python(code)
    assert set(reads) <= set(shape["reads"])
    assert set(shape["writes"]) == set(writes)


def test_compile_python_reports_location() -> None:
    assert compile_python("x = 1") == {"valid": True}
    bad = compile_python("x = (1,\ny = 2")
    assert bad["valid"] is False and bad["line"] in (1, 2)


def test_check_execution_and_tools_through_dispatch(tmp_path: Path) -> None:
    steps = {
        0: WorkerStep(index=0, action="x=1", output="1"),
        1: WorkerStep(index=1, action="1/0", error="ZeroDivisionError", success=False),
    }
    assert check_execution(steps, 0)["success"] is True
    failed = check_execution(steps, 1)
    assert failed["success"] is False and failed["error"] == "ZeroDivisionError"
    assert check_execution(steps, 7)["found"] is False
    ws = DictWorkspace({"x": 41})
    store = StateStore(":memory:")
    probe = run_tool(
        validate_action("run_probe", {"code": "result = x + 1\nx = 0"}),
        store=store,
        steps=steps,
        workspace=ws,
    )
    assert (
        probe.ok and probe.data["value"] == 42 and ws.namespace["x"] == 41
    )  # the probe cannot change the workspace
    missing = run_tool(
        validate_action("load_state", {"state_id": "S3"}), store=store, steps=steps, workspace=ws
    )
    assert not missing.ok and "not a committed state" in (missing.error or "")
    none = run_tool(validate_action("run_probe", {"code": "1"}), store=store, steps=steps, workspace=None)
    assert not none.ok and "needs a workspace" in (none.error or "")


def test_dict_workspace_snapshot_restore_delete() -> None:
    ws = DictWorkspace()
    ws.run("a = [1, 2]\nb = {'k': 3}")
    ws.snapshot("c1")
    ws.run("a.append(9)\nb['k'] = 0")
    assert ws.delete_variables(["a", "zzz"]) == ["a"]
    ws.restore("c1")
    assert ws.namespace["a"] == [1, 2] and ws.namespace["b"] == {"k": 3}
    names = {v.name: v for v in ws.list_variables()}
    assert names["a"].type == "list" and names["a"].content_hash
    with pytest.raises(KeyError):
        ws.restore("nope")


def test_a_record_payload_is_written_as_its_dump_and_still_checked(tmp_path: Path) -> None:
    """The harness hands validated records (a committed state, relations, a hint) to `emit`: the
    line must be the bytes their JSON dump gives, and the payload is still checked field by field."""
    from stateguard.hints import Hint
    from stateguard.state import AnalyticalState, Conclusion, Relation, VariableRef

    state = AnalyticalState(
        id="S2",
        issue="net revenue",
        used_variables=[VariableRef(name="rev", version="S2", value=1.5)],
        conclusions=[Conclusion(text="up", variables=["rev@S2"])],
        relations=[Relation(type="progress", related_state_id="S1")],
    )
    hint = Hint(kind="repair", error_variables=["rev"], faulty_reasoning="wrong filter", mode="light")
    as_records, as_dumps = Trace(clock=lambda: None), Trace(clock=lambda: None)
    as_records.emit("state_committed", state=state)
    as_records.emit("relations_finalized", state_id="S2", mode="confirm", relations=list(state.relations))
    as_records.emit("hint_delivered", hint=hint, text=hint.render())
    as_dumps.emit("state_committed", state=state.model_dump(mode="json"))
    as_dumps.emit(
        "relations_finalized",
        state_id="S2",
        mode="confirm",
        relations=[r.model_dump(mode="json") for r in state.relations],
    )
    as_dumps.emit("hint_delivered", hint=hint.model_dump(mode="json"), text=hint.render())
    assert as_records.lines() == as_dumps.lines()
    assert [e.kind for e in as_records.events()] == [
        "state_committed",
        "relations_finalized",
        "hint_delivered",
    ]
    with pytest.raises(ValueError, match=r"'state_committed' trace event: data.note: Extra inputs"):
        as_records.emit("state_committed", state=state, note="x")
    with pytest.raises(ValueError, match=r"'relations_finalized' trace event: data.mode: Field required"):
        as_records.emit("relations_finalized", state_id="S2", relations=list(state.relations))


def test_emit_checks_values_that_are_not_json_as_their_line_reads_back(tmp_path: Path) -> None:
    """Plain JSON payloads are validated as objects, others through their line: either way a
    payload is accepted exactly when its line reads back as an event."""
    from stateguard.state import AnalyticalState

    trace = Trace(tmp_path / "t.jsonl", clock=lambda: None)
    trace.emit("turn_start", turn_id=1, question=Path("how many rows"))  # written as its text
    trace.emit("binding_checked", checks=("a", "b"), start_checkpoint=None)  # a tuple is a JSON list
    state = AnalyticalState(id="S1", issue="x")
    trace.emit("state_opened", state_id="S1", draft=state)  # a record where an object is declared
    with pytest.raises(ValueError, match=r"'binding_checked' trace event: data.checks"):
        trace.emit("binding_checked", checks={"a"}, start_checkpoint=None)  # a set is written as text
    with pytest.raises(ValueError, match=r"'turn_start' trace event: data.turn_id"):
        trace.emit("turn_start", turn_id="one")
    trace.close()
    events = read_trace(tmp_path / "t.jsonl")
    assert [e.kind for e in events] == ["turn_start", "binding_checked", "state_opened"]
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[2])["data"][
        "draft"
    ] == state.model_dump(mode="json")
    first = events[0]
    assert isinstance(first, TurnStartEvent) and first.data.question == "how many rows"


def _awkward_records() -> tuple[AnalyticalState, Hint]:
    """A state and a hint whose lines test the encoder: non-ASCII text, an infinity, a negative zero."""
    import math

    state = AnalyticalState(
        id="S3",
        issue="Größe – ü",
        used_variables=[VariableRef(name="r", version="S3", value={"z": 1, "a": [math.inf, -0.0]})],
        relations=[Relation(type="progress", related_state_id="S2")],
    )
    hint = Hint(kind="repair", error_variables=["r"], faulty_reasoning="wrong filter", mode="light")
    return state, hint


def test_a_line_is_the_bytes_json_dumps_gives(tmp_path: Path) -> None:
    """`emit` keeps one encoder per trace instead of calling `json.dumps` per event: every line must
    be the bytes `json.dumps(raw, sort_keys=True, default=...)` gave, whatever the payload (keys
    out of order, non-ASCII text, NaN and infinities, big integers, records, values written as
    text), also from another thread and after an encoding error, and the event read back alike."""
    import math
    import threading

    state, hint = _awkward_records()
    payloads: list[tuple[str, dict[str, object]]] = [
        ("turn_start", {"turn_id": 2**70, "question": 'naïve ☃ \t"q"'}),
        ("state_committed", {"state": state}),
        ("relations_finalized", {"state_id": "S3", "mode": "confirm", "relations": list(state.relations)}),
        ("hint_delivered", {"hint": hint, "text": hint.render()}),
        ("state_opened", {"state_id": "S3", "draft": {"z": math.nan, "b": {"y": 1e300, "a": None}, "é": []}}),
        ("turn_start", {"turn_id": 1, "question": Path("as text")}),
        ("answers", {"answers": {"2": 1.5, "10": [True, None], "1": "x"}}),
    ]

    def old_line(seq: int, kind: str, data: dict[str, object]) -> str:
        def default(value: object) -> object:
            return value.model_dump(mode="json") if hasattr(value, "model_dump") else str(value)

        raw = {"schema_version": "stateguard/1", "seq": seq, "kind": kind, "ts": 1.25, "data": data}
        return json.dumps(raw, sort_keys=True, default=default)

    trace = Trace(clock=lambda: 1.25)
    events = [trace.emit(kind, **data) for kind, data in payloads]
    assert trace.lines() == [old_line(n, kind, data) for n, (kind, data) in enumerate(payloads)]
    assert [e.model_dump(mode="json") for e in events] == [e.model_dump(mode="json") for e in trace.events()]

    loop: dict[str, object] = {"a": 1}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        trace.emit("answers", answers=loop)
    trace.emit("answers", answers={"a": loop["a"]})  # the encoder's marks start clean again
    assert trace.lines()[-1] == old_line(len(payloads), "answers", {"answers": {"a": 1}})
    # The encoder keeps no marks (a cycle is found by `json.dumps` after RecursionError): the same
    # object twice is no cycle, and nesting past the interpreter's limit fails as json.dumps does.
    shared = [1, {"k": "v"}]
    trace.emit("answers", answers={"x": shared, "y": shared})
    assert trace.lines()[-1] == old_line(
        len(payloads) + 1, "answers", {"answers": {"x": shared, "y": shared}}
    )
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        trace.emit("answers", answers={"a": deep})
    assert len(trace.lines()) == len(payloads) + 2

    other = Trace(clock=lambda: 1.25)
    worker = threading.Thread(target=lambda: [other.emit(kind, **data) for kind, data in payloads])
    worker.start()
    worker.join()
    assert other.lines() == [old_line(n, kind, data) for n, (kind, data) in enumerate(payloads)]


def test_a_transaction_inside_another_writes_with_the_outer_one() -> None:
    """`Trace.transaction()` (a class now, not a generator): an inner block adds to the outer
    block's buffer; nothing is written before the outer block ends; an exception from the inner
    block drops the whole outer block and reaches the caller; the trace is usable afterwards."""
    trace = Trace(clock=lambda: None)
    with trace.transaction():
        trace.emit("turn_start", turn_id=1)
        with trace.transaction():
            trace.emit("turn_start", turn_id=2)
        assert trace.lines() == [] and trace.next_seq == 2
    assert [json.loads(x)["data"]["turn_id"] for x in trace.lines()] == [1, 2]
    with pytest.raises(KeyError), trace.transaction():
        trace.emit("turn_start", turn_id=3)
        with trace.transaction():
            trace.emit("turn_start", turn_id=4)
            raise KeyError("boom")
    assert len(trace.lines()) == 2 and trace.next_seq == 2
    with trace.transaction():
        trace.emit("turn_start", turn_id=5)
    assert [json.loads(x)["seq"] for x in trace.lines()] == [0, 1, 2]


def test_emit_known_validates_each_shape_once_and_writes_the_bytes_emit_writes(tmp_path: Path) -> None:
    """`emit_known` (the harness's per-action events) validates the first event of each shape (kind,
    field names, value types) as `emit` does, and writes later ones of that shape from a template:
    every line must equal `emit`'s for the same payload, also where the template cannot decide
    (text the encoder makes up, lone surrogates, a cycle, another thread)."""
    import itertools
    import math
    import threading
    from enum import StrEnum

    class Colour(StrEnum):
        RED = "red"

    state, hint = _awkward_records()
    payloads: list[tuple[str, dict[str, object]]] = [
        ("turn_start", {"turn_id": 2**70, "question": 'naïve ☃ \t"q"'}),
        ("turn_start", {"question": "the other order", "turn_id": -1}),
        ("state_committed", {"state": state}),
        ("relations_finalized", {"state_id": "S3", "mode": "confirm", "relations": list(state.relations)}),
        ("hint_delivered", {"hint": hint, "text": hint.render()}),
        ("state_opened", {"state_id": "S3", "draft": state}),
        ("state_opened", {"state_id": "S3", "draft": {"z": math.nan, "b": {"y": 1e300, "a": None}, "é": []}}),
        ("review", {"event": Colour.RED, "terminal": False, "stage": "idle"}),
        ("answers", {"answers": {"2": 1.5, "10": [True, None], "1": "x", "3": -math.inf}}),
        ("answers", {"answers": {"1": "lone \ud800 surrogate"}}),
        ("answers", {"answers": {"1": "a pair 😀"}}),
        ("turn_start", {"turn_id": 1, "question": Path("as text")}),
    ]

    class Stamp:
        """One clock for both traces, set before each pair of events."""

        value: float | None = None

        def __call__(self) -> float | None:
            return self.value

    stamp = Stamp()
    emitted, known = Trace(clock=stamp), Trace(clock=stamp)
    stamps = itertools.cycle([1.25, None, 3, math.nan, 0.1 + 0.2, 1_765_000_000.123456])
    for _ in range(2):  # the second round takes the templates
        for kind, data in payloads:
            stamp.value = next(stamps)
            emitted.emit(kind, **data)
            known.emit_known(kind, **data)
    assert known.lines() == emitted.lines()
    assert [e.model_dump(mode="json") for e in known.events()] == [
        e.model_dump(mode="json") for e in emitted.events()
    ]

    # The first event of a shape is validated; so is a known shape's value of another type.
    fresh = Trace(clock=lambda: None)
    with pytest.raises(ValueError, match=r"'turn_start' trace event: data.turn_id: Field required"):
        fresh.emit_known("turn_start", turn=1)
    fresh.emit_known("turn_start", turn_id=1)
    with pytest.raises(ValueError, match=r"'turn_start' trace event: data.turn_id"):
        fresh.emit_known("turn_start", turn_id="one")
    with pytest.raises(ValueError, match=r"'binding_checked' trace event: data.checks"):
        fresh.emit_known("binding_checked", checks={"a"}, start_checkpoint=None)  # a set is written as text
    fresh.emit_known("answers", answers={"a": 1})
    loop: dict[str, object] = {"a": 1}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        fresh.emit_known("answers", answers=loop)
    fresh.emit_known("answers", answers={"a": 2})  # the encoder works again after the error
    assert [json.loads(line)["data"] for line in fresh.lines()] == [
        {"turn_id": 1},
        {"answers": {"a": 1}},
        {"answers": {"a": 2}},
    ]

    # Inside a transaction the lines wait for its end; a rejected block drops them.
    with pytest.raises(KeyError), fresh.transaction():
        fresh.emit_known("turn_start", turn_id=5)
        raise KeyError("boom")
    with fresh.transaction():
        fresh.emit_known("turn_start", turn_id=6)
        assert len(fresh.lines()) == 3 and fresh.next_seq == 4
    assert json.loads(fresh.lines()[-1]) == {
        "data": {"turn_id": 6},
        "kind": "turn_start",
        "schema_version": "stateguard/1",
        "seq": 3,
        "ts": None,
    }

    # Another thread's events take the validating path, with the same bytes.
    other = Trace(clock=lambda: 1.25)

    def emit_twice() -> None:
        for _ in range(2):
            for kind, data in payloads:
                other.emit_known(kind, **data)

    worker = threading.Thread(target=emit_twice)
    worker.start()
    worker.join()
    reference = Trace(clock=lambda: 1.25)
    for _ in range(2):
        for kind, data in payloads:
            reference.emit(kind, **data)
    assert other.lines() == reference.lines()
