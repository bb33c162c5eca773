"""The runtime in 20 lines (docs/design_runtime.md): three states, a revision that invalidates a variable, and the stale states."""
from stateguard import EventType, Harness, HarnessConfig, StateStore, WorkerStep
from stateguard.actions import RawAction

h = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"))

def act(name, **args):
    return h.apply(RawAction(name=name, arguments=args))             # validated by the harness

def turn(step, issue, code, variables, relations=()):
    h.begin_review(EventType.TURN_START)
    act("OPEN_STATE", issue=issue, relations=list(relations))
    h.record_step(WorkerStep(index=step, action=code, output="ok"))   # the worker's turn
    h.begin_review(EventType.TURN_END)
    act("UPDATE_STATE", used_variables=variables)
    act("FINALIZE_RELATIONS", mode="confirm")
    return act("COMMIT_STATE").state_id

turn(0, "revenue", "revenue = sales.amount.sum()", [{"name": "revenue", "value": 1000}])
turn(1, "margin", "margin = revenue - cogs", [{"name": "revenue", "version": "S1"}, {"name": "margin", "value": 400}],
     [{"related_state_id": "S1"}])
turn(2, "ratio", "ratio = margin / revenue", [{"name": "margin", "version": "S2"}, {"name": "ratio", "value": 0.4}],
     [{"related_state_id": "S2"}])
turn(3, "revenue net of refunds", "revenue = sales.amount.sum() - refunds", [{"name": "revenue", "value": 950}],
     [{"related_state_id": "S1", "type": "invalidate"}])                # S4 revises S1's definition
print("current:", h.store.current_version("revenue"))                 # revenue@S4
print("stale states:", h.store.invalidated_by("S4").states)           # ['S1', 'S2', 'S3']
print("stale variables:", h.store.invalidated_by("S4").variables)     # revenue@S1, margin@S2, ratio@S3
