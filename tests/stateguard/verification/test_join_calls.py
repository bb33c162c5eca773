"""A join stated in words ("attach ... keeping every order") checked on a pandas merge whose operand
is an expression (`customers[cols]`), by evaluating the call as written and with the stated `how`."""

from __future__ import annotations

import pytest

from tests.stateguard.verification.conftest import Session

QUESTION = (
    "Attach the customer segments to the orders, keeping every order. How many orders has each segment?"
)


REPORT = "result = {'per_segment': {str(k): int(v) for k, v in joined['segment'].value_counts(dropna=False).items()}}"


def _merged(how: str | None) -> str:
    arg = f", how={how}" if how else ""
    merge = f"joined = orders.merge(customers[['customer_id', 'segment']], on='customer_id'{arg})"
    return "\n".join(["import json", merge, REPORT, "print(json.dumps(result))"])


@pytest.mark.parametrize(("how", "found"), [("'left'", False), ("'inner'", True), (None, True)])
def test_a_merge_of_an_expression_is_checked_both_ways(how: str | None, found: bool) -> None:
    findings = Session().turn(QUESTION, _merged(how))
    assert bool(findings) is found
    if found:
        evidence = findings[0].evidence
        assert "kept_side probe observed {'rows_as_written': " in evidence
        assert "'rows_as_stated': 400" in evidence  # every order kept
