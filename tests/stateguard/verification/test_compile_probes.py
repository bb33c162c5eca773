"""The verifier compiles every probe with the `compile_python` tool before it runs it: a probe
that does not compile is not run, and its requirement is reported unverified, never a finding."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from stateguard.tools import compile_python
from stateguard.verification.bind import Plan
from stateguard.verification.probes import ProbeItem
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.syntax import culprit, syntax_program
from stateguard.verification.verifier import SemanticVerifier
from tests.stateguard.verification.conftest import Session

FLIPPED = (
    "How many orders are rated above 4.0? Report `n_high`.",
    "high = orders[orders.rating < 4.0]\nresult = {'n_high': len(high)}",
)


def _item(item_id: str, code: str) -> ProbeItem:
    req = Requirement(kind=Kind.COMPARISON, text="above 4.0", op=">", value=4.0)
    return ProbeItem(id=item_id, requirement=req, check="kept_rows", code=code, reason="r")


def test_the_syntax_program_names_the_snippet_that_breaks() -> None:
    good = _item("R1", "_v = False\n_o = {'sql': '''SELECT 1\nFROM t'''}")
    bad = _item("R2", "_v = (1 +\n_o = {}")
    program, spans = syntax_program([good, bad])
    result = compile_python(program)
    assert result["valid"] is False
    assert culprit(spans, result["line"]) == "R2"
    program, _ = syntax_program([good])
    assert compile_python(program) == {"valid": True}
    assert culprit(spans, None) is None


class BrokenProbeVerifier(SemanticVerifier):
    """The real verifier, except that its first probe's code is cut short (a syntax error)."""

    def _fresh_plan(self, ctx: Any, turn: Any, steps: Any) -> Generator[Any, Any, Plan]:
        plan: Plan = yield from super()._fresh_plan(ctx, turn, steps)
        if plan.items:
            first = plan.items[0]
            plan.items[0] = first.model_copy(update={"code": first.code + "\nif (:\n"})
        return plan


class Recording:
    """Wraps a verifier fragment and keeps the name and arguments of every tool call it makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def wrap(self, fragment: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        try:
            proposal = next(fragment)
            while True:
                self.calls.append(proposal)
                reply = yield proposal
                proposal = fragment.send(reply)
        except StopIteration as stop:
            return stop.value


def _run(verifier: SemanticVerifier) -> tuple[list[Any], list[tuple[str, dict[str, Any]]]]:
    session = Session()
    session.verifier = verifier
    record = Recording()
    original = verifier.verify
    verifier.verify = lambda *a: record.wrap(original(*a))  # type: ignore[method-assign]
    return session.turn(*FLIPPED), record.calls


def test_the_same_probe_that_compiles_finds_the_flipped_comparison() -> None:
    verifier = SemanticVerifier()
    findings, calls = _run(verifier)
    assert [f.variables for f in findings] == [["high"]]
    compiled = [args["code"] for name, args in calls if name == "compile_python"]
    assert len(compiled) == 1 and compile_python(compiled[0]) == {"valid": True}
    assert [name for name, _ in calls][-2:] == ["compile_python", "run_probe"]


def test_a_probe_that_does_not_compile_is_unverified_and_not_run() -> None:
    verifier = BrokenProbeVerifier()
    findings, calls = _run(verifier)
    names = [name for name, _ in calls]
    assert findings == []  # the probe that would find the flipped comparison never ran
    # compiled once with the broken probe, once more without it; then only the others run
    assert names.count("compile_python") == 2
    broken = verifier.last.unverified
    assert [r.kind for r in broken] == [Kind.COMPARISON] and broken[0].value == 4.0
    assert any("does not compile" in note for note in verifier.last.notes)
    assert "R1" not in verifier.last.outcomes
    batches = [args["code"] for name, args in calls if name == "run_probe"]
    assert all("'R1'" not in code for code in batches)
