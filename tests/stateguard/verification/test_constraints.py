"""Requirement checks that become executable constraints once the code is known: a pandas ranking
left in a variable is one (it reads the artifact, so a correct retry meets it)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.verification.verifier import SemanticVerifier, run_fragment
from tests.stateguard.verification.conftest import Session

QUESTION = "Which region has the highest mean price? Report `top_region`."
RANKED = {
    "series": "by_region = orders.groupby('region')['price'].mean().sort_values(ascending={asc})",
    "frame": "by_region = orders.groupby('region', as_index=False)['price'].mean().sort_values('price', ascending={asc})",
}
REPORT = "\nresult = {'top_region': str(by_region.index[0])}"


def constraints(session: Session, code: str) -> list[dict[str, Any]]:
    assert session.ws.run_cell(code).ok
    step = WorkerStep(index=0, turn=1, action=code, meta={"writes": cell_dataflow(code).writes})
    ctx: Any = SimpleNamespace(
        task=SimpleNamespace(turns=[SimpleNamespace(context="")]),
        workspace=session.ws,
        store=session.store,
        steps={0: step},
    )
    turn = SimpleNamespace(question=QUESTION, turn_id=1, context="")
    verifier = SemanticVerifier()
    return run_fragment(
        verifier.open_constraints(ctx, turn, [step]),
        store=session.store,
        steps={0: step},
        workspace=session.ws,
    )


@pytest.mark.parametrize("shape", sorted(RANKED))
def test_a_pandas_ranking_is_an_executable_constraint_that_fails_when_reversed(shape: str) -> None:
    session = Session()
    good = [
        c for c in constraints(session, RANKED[shape].format(asc=False) + REPORT) if "ranked by" in c["text"]
    ]
    assert len(good) == 1 and good[0]["code"]
    assert session.ws.run_probe(good[0]["code"]).ok  # the correct ranking meets it
    bad = [
        c for c in constraints(session, RANKED[shape].format(asc=True) + REPORT) if "ranked by" in c["text"]
    ]
    assert [c["text"] for c in bad] == [good[0]["text"]] and bad[0]["code"]
    probe = session.ws.run_probe(bad[0]["code"])
    assert not probe.ok and "in_stated_order" in (probe.error or "")
    # a correct retry rebinds the artifact: the same constraint holds again
    assert session.ws.run_cell(RANKED[shape].format(asc=False)).ok
    assert session.ws.run_probe(bad[0]["code"]).ok


def test_a_ranking_read_without_its_sort_column_is_never_failed() -> None:
    """The code ranks as stated but the frame it leaves lacks the sort column: not a violation."""
    session = Session()
    code = "by_region = orders.groupby('region', as_index=False)['price'].mean().sort_values('price', ascending=False)[['region']]"
    found = [c for c in constraints(session, code + REPORT) if "ranked by" in c["text"]]
    assert len(found) == 1 and found[0]["code"]
    assert session.ws.run_probe(found[0]["code"]).ok


def test_the_rule_an_update_replaces_is_not_a_requirement(session: Session) -> None:
    """An update turn's context restates the old rule in parentheses: history, not this turn's."""
    context = (
        "Update: from this turn on, an order counts as big when its price is at least 150 "
        "(until now, an order counts as big when its price is at least 100). Later questions use it."
    )
    session.turn_id = 1
    findings = session.turn(
        "How many big orders are there? Report `n_big`.",
        "big = orders[orders.price >= 150]\nresult = {'n_big': len(big)}",
        own_context=context,
    )
    assert findings == []
    bounds = [r.value for r in session.verifier.last.requirements if r.value is not None]
    assert bounds == [150.0]


def test_a_repair_the_harness_cannot_localize_names_what_the_draft_made() -> None:
    """A finding on a SQL table that is no workspace variable: the second REPAIR names the
    variables the draft's own steps made (not scratch names, not inherited versions)."""
    from stateguard.policies.rules import RulesManager

    draft = {
        "id": "S4",
        "used_variables": [
            {"name": "result", "version": "S4"},
            {"name": "_rows", "version": "S4"},
            {"name": "sales", "version": "S1"},
        ],
    }
    obs: Any = SimpleNamespace(current_draft=draft)
    assert RulesManager._draft_made(obs) == ["result"]
    assert RulesManager._draft_made(SimpleNamespace(current_draft=None)) == []  # type: ignore[arg-type]


def test_a_reported_record_is_not_read_as_a_ranking(session: Session) -> None:
    """'Which group has the fewest orders?' answered as a dict of fields (a count, then the winning
    label): the dict's values are a record, not a ranked list, so their order is no violation."""
    code = (
        "_per = (orders['customer_id'] % 7).value_counts().sort_index()\n"
        "result = {'n_orders': int(len(orders)), 'fewest_group': int(_per.idxmin())}"
    )
    found = session.turn("How many orders are there, and which group has the fewest orders?", code)
    assert found == []
    assert any("ranks that way" in n for n in session.verifier.last.notes)  # bound, and met
