"""A scope stated for the rest of the analysis and kept in a frame of its own (`standing.py`): a
later turn that computes from the parent and never reads the scoped frame is a finding when its
answer changes reading the scoped frame."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.standing import StandingScopes
from tests.stateguard.verification.conftest import Session

SCOPE = (
    "Garden orders are sold by a partner: leave them out for the rest of the analysis and keep the "
    "others in `shop`. How many orders remain?"
)
SCOPE_CODE = "import json\nshop = orders[orders['category'] != 'garden']\nprint(json.dumps({'n': len(shop)}))"


def _scoped() -> Session:
    session = Session()
    assert session.turn(SCOPE, SCOPE_CODE) == []
    return session


@pytest.mark.parametrize(("frame", "found"), [("shop", False), ("orders", True)])
def test_a_later_turn_reading_the_parent_instead_of_the_scoped_frame_is_a_finding(
    frame: str, found: bool
) -> None:
    session = _scoped()
    code = (
        "import json\n"
        f"by_region = {frame}.groupby('region')['price'].mean()\n"
        "print(json.dumps({'north': round(float(by_region['North']), 2)}))"
    )
    findings = session.turn("What is the average price in the North region?", code)
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["by_region"] and "filtered out" in findings[0].reason


@pytest.mark.parametrize(
    "question",
    [
        "Bring the garden orders back: which region has the highest average price over all orders?",
        "Including the garden orders, which region has the highest average price?",
        "Which region of `orders` has the highest average price?",
    ],
)
def test_a_question_that_brings_rows_back_or_names_the_parent_abstains(question: str) -> None:
    session = _scoped()
    code = (
        "import json\nby_region = orders.groupby('region')['price'].mean()\n"
        "print(json.dumps({'top_region': by_region.idxmax()}))"
    )
    assert session.turn(question, code) == []


def test_only_a_standing_instruction_records_a_scope_and_bringing_rows_back_ends_it() -> None:
    scopes = StandingScopes()
    sem = inspect_code("shop = orders[orders['category'] != 'garden']")
    scopes.record(1, "Keep the non-garden orders in `shop`. How many?", "shop = ...", sem)
    assert scopes.scopes == []
    scopes.record(1, SCOPE, SCOPE_CODE, sem)
    assert [(s.parent, s.child) for s in scopes.scopes] == [("orders", "shop")]
    assert [s.child for s in scopes.bypassed("Mean price?", "m = orders['price'].mean()")] == ["shop"]
    scopes.record(
        2,
        "Restore the garden orders: mean price of all?",
        "m = orders['price'].mean()",
        inspect_code("m = 1"),
    )
    assert scopes.scopes == []


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("Do the region table again: what is the average price in the North region?", True),  # repeats work
        ("Count them again: what is the average price in the North region?", False),  # brings rows back
        ("With those orders again, what is the average price in the North region?", False),
    ],
)
def test_again_brings_rows_back_only_with_them(question: str, found: bool) -> None:
    session = _scoped()
    code = (
        "import json\nby_region = orders.groupby('region')['price'].mean()\n"
        "print(json.dumps({'north': round(float(by_region['North']), 2)}))"
    )
    assert bool(session.turn(question, code)) is found
