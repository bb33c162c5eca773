"""Round 26: abstain where the data says a reading names no rows.

* The empty gate (`emptied.py`): a finding whose turn, re-run as the requirement states it,
  changes only values that become empty (a count of 0, a missing statistic, an empty table) reads
  the clause as rows that do not exist; no finding.
* A value only a typed-in list holds (`RequirementBinder._typed_in_only`): "Central gets a 0" beside
  a region book the code typed in, where no order comes from Central, scopes no rows.
"""

from __future__ import annotations

import math

import pytest

from stateguard.verification.emptied import emptied, entries_only
from stateguard.verification.verifier import SemanticConfig
from tests.stateguard.verification.conftest import session_with

COUNT_CELL = "import json\nprint(json.dumps({'n': len(orders)}))"


@pytest.mark.parametrize(
    ("reported", "stated", "expected"),
    [
        ({"n": 120}, {"n": 0}, True),  # a count that became 0
        ({"n": 120, "mean": 3.4}, {"n": 0, "mean": None}, True),  # and its statistic missing
        ({"n": 120, "mean": 3.4}, {"n": 0, "mean": math.nan}, True),
        ({"n": 120, "share": 40.0}, {"n": 0, "share": 40.0}, True),  # the unchanged value does not count
        ({"by": {"a": 1, "b": 2}}, {"by": {}}, True),  # a table emptied
        ({"rows": [1, 2]}, {"rows": []}, True),
        ({"n": 120, "mean": 3.4}, {"n": 0, "mean": 3.9}, False),  # another value, not an empty one
        ({"n": 120}, {"n": 95}, False),
        ({"by": {"a": 1, "b": 2}}, {"by": {"a": 1}}, False),  # narrowed to some groups: a real narrowing
        ({"by": {"a": 1}}, {"by": {"a": 1, "z": 0}}, False),  # an entry added with 0: new content
        ({"top": "North", "flag": True}, {"top": "North", "flag": False}, False),  # False is an answer
        ({"n": 0}, {"n": 0}, False),  # nothing changed
        ({"label": "HS"}, {"label": ""}, True),
    ],
)
def test_an_answer_emptied_by_a_reading(reported: object, stated: object, expected: bool) -> None:
    assert emptied(reported, stated) is expected


def test_a_bound_that_keeps_no_rows_is_no_finding_with_the_empty_gate() -> None:
    """Ratings run 1 to 5: "above 5" keeps none, so a code cut at 3 re-run as stated reports 0."""
    code = "import json\nprint(json.dumps({'n_top': int((orders['rating'] > 3).sum())}))"
    question = "How many orders are rated more than 5?"
    _gated_only_with_the_switch(
        ("How many orders are there?", COUNT_CELL), question, code, "empties every value"
    )


def _gated_only_with_the_switch(first: tuple[str, str], question: str, code: str, note: str) -> None:
    """After the turn `first`, the turn (`question`, `code`) is no finding, with a note saying
    `note`, while the empty gate is on, and a finding with it off."""
    for gate in (True, False):
        session = session_with(config=SemanticConfig(empty_gate=gate))
        assert session.turn(*first) == []
        findings = session.turn(question, code)
        assert bool(findings) is not gate
        assert bool([n for n in session.verifier.last.notes if note in n]) is gate
        assert bool([n for n in session.verifier.last.gated if note in n]) is gate  # for the trace


def _listed(name: str, column: str, values: list[str]) -> str:
    """A cell typing in a list of the four order regions and Central (which no order has)."""
    return (
        f"{name} = pd.DataFrame({{'region': ['North', 'South', 'East', 'West', 'Central'], {column!r}: {values!r}}})"
        f"\nprint(len({name}))"
    )


def _per(frame: str, key: str) -> str:
    """Orders counted per `key` of the list `frame`, every entry of the list kept (a left join)."""
    return (
        f"import json\nmerged = {frame}.merge(orders[['region', 'order_id']], on='region', how='left')\n"
        f"per = merged.groupby({key!r}, sort=False).agg(n=('order_id', 'count'))\n"
        f"print(json.dumps({{'n_by_{key}': per['n'].to_dict()}}))"
    )


BOOK = _listed("region_book", "manager", ["Ann", "Bo", "Cy", "Di", "Ed"])
PER_REGION = _per("region_book", "region")
WITH_ZERO = "How many orders does each region have (Central gets a 0)?"


def test_a_value_only_the_typed_in_list_holds_scopes_no_rows() -> None:
    session = session_with()
    assert session.turn("Type in the region book.", BOOK) == []
    assert session.turn(WITH_ZERO, PER_REGION) == []
    assert [n for n in session.verifier.last.notes if "only a list the code typed in holds" in n]


def test_the_list_typed_in_by_the_same_turn_counts_too() -> None:
    session = session_with()
    code = BOOK.replace("print(len(region_book))", "") + PER_REGION
    assert session.turn(WITH_ZERO, code) == []


def test_a_value_the_data_holds_is_still_a_scope() -> None:
    """North is in the orders: "only North" over every region's orders is a dropped filter."""
    session = session_with()
    assert session.turn("Type in the region book.", BOOK) == []
    findings = session.turn("How many orders does each region have, North only?", PER_REGION)
    assert findings and "North" in findings[0].reason


def test_a_list_held_only_in_cells_outside_the_turns_is_not_known_as_typed_in() -> None:
    """The region book typed in by a set-up cell (no turn): nothing says it is a list, so the
    reading stands as before (the check needs the code that typed it in)."""
    session = session_with(BOOK)
    assert session.turn(WITH_ZERO, PER_REGION)


SHOPS = _listed("shops", "city", ["Oslo", "Rome", "Kyiv", "Lima", "Bern"])
PER_CITY = _per("shops", "city")


def test_a_list_attribute_that_only_the_lists_unmatched_entry_carries_scopes_no_rows() -> None:
    """The city is the typed-in list's own column (no order carries one): "Bern gets a 0" is met by
    Bern's entry alone, which the left join keeps with nothing; no data row meets it."""
    question = "How many orders does each city have (Bern gets a 0)?"
    _gated_only_with_the_switch(
        ("Type in the shops.", SHOPS), question, PER_CITY, "only the typed-in list's own"
    )


def test_a_list_attribute_that_data_rows_carry_is_still_a_scope() -> None:
    """Oslo's shop has orders: "Oslo only" over every city's orders is a dropped filter."""
    session = session_with()
    assert session.turn("Type in the shops.", SHOPS) == []
    findings = session.turn("How many orders does each city have, Oslo only?", PER_CITY)
    assert findings and "Oslo" in findings[0].reason


@pytest.mark.parametrize(
    ("sites", "values", "expected"),
    [
        ([{"kept_rows": 3752, "rows_breaking_requirement": 3751}], 1, True),
        ([{"rows": 401, "rows_breaking_requirement": 400}], 1, True),
        ([{"rows": 401, "rows_breaking_requirement": 399}], 2, True),
        ([{"rows": 401, "rows_breaking_requirement": 300}], 1, False),
        (
            [{"rows": 401, "rows_breaking_requirement": 400}, {"rows": 90, "rows_breaking_requirement": 40}],
            1,
            False,
        ),
        ([], 1, False),
    ],
)
def test_only_the_lists_entries_meet_a_scope(
    sites: list[dict[str, int]], values: int, expected: bool
) -> None:
    assert entries_only({"sites": sites}, values) is expected


def test_a_check_bound_through_the_code_may_empty_the_answer() -> None:
    """After the switch to "pricey means 1,000 or more" no order is pricey (prices end near 300), so
    the old rule written out again counts orders the current flag does not: the turn re-run with the
    flag reports 0, rightly. The superseded-rule check reads no rows from words: the empty gate does
    not hold it, and the finding stands."""
    session = session_with()
    define = "import json\norders['pricey'] = orders['price'] >= {}\nprint(json.dumps({{'n': int(orders['pricey'].sum())}}))"
    assert (
        session.turn(
            "Call an order pricey at a price of 100 or more. How many are pricey?", define.format(100)
        )
        == []
    )
    assert session.turn("Pricey now means 1,000 or more. How many are pricey now?", define.format(1000)) == []
    code = "import json\nsel = orders[orders['price'] >= 100]\nprint(json.dumps({'n_top': int((sel['rating'] > 4).sum())}))"
    findings = session.turn(
        "How many pricey orders, as the term now stands, are rated above 4 (0 if none)?", code
    )
    assert len(findings) == 1 and "replaced" in findings[0].reason
