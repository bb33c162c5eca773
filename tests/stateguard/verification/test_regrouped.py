"""A summary rebuilt under its name with other group keys than the turn that built it used
(`regrouped.py`): a finding when the turn refers back to it, names none of the new keys, and its
answer changes grouped by the old ones."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import sql_edit
from stateguard.verification.regrouped import GroupingHistory
from tests.stateguard.verification.conftest import Session

BUILD = "Per region, keep in `by_region` the number of orders and the mean price. Which region is dearest?"


def _summary(key: str) -> str:
    return (
        "import json\n"
        f"by_region = orders.groupby({key!r}).agg(n=('order_id', 'size'), mean_price=('price', 'mean'))\n"
        "result = {'dearest': str(by_region['mean_price'].idxmax()), 'n_groups': len(by_region)}\n"
        "print(json.dumps(result))"
    )


def _built() -> Session:
    session = Session()
    assert session.turn(BUILD, _summary("region")) == []
    return session


@pytest.mark.parametrize(
    ("question", "key", "found"),
    [
        ("Rebuild the summary of Task 1 for the rated orders: which region is dearest now?", "region", False),
        (
            "Rebuild the summary of Task 1 for the rated orders: which region is dearest now?",
            "category",
            True,
        ),
        ("Redo `by_region` again and say which one is dearest.", "category", True),
        # the question names the new key: a regrouping on purpose
        ("Rebuild the summary of Task 1 by category this time: which is dearest?", "category", False),
        # no reference back to the summary: a new breakdown under an old name is not judged here
        ("Which group is dearest?", "category", False),
    ],
)
def test_a_rebuilt_summary_keeps_its_keys(question: str, key: str, found: bool) -> None:
    session = _built()
    findings = session.turn(question, _summary(key))
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["by_region"] and "grouped by other keys" in findings[0].reason


def test_the_history_keeps_the_last_build_and_skips_scratch_names() -> None:
    history = GroupingHistory()
    history.record(
        1, inspect_code("by_region = orders.groupby('region').size()\n_n = orders.groupby('x').size()")
    )
    history.record(2, inspect_code("by_region = orders.groupby(['region', 'category']).size()"))
    assert {g.name: (g.turn, g.keys) for g in history.groupings.values()} == {
        "by_region": (2, ("region", "category"))
    }
    code = "by_region = orders.groupby('category').size()"
    (found,) = history.regrouped("Rebuild it for Task 2 again.", code, inspect_code(code))
    assert (found.before, found.after) == (".groupby('category')", ".groupby(['region', 'category'])")


def test_set_group_by_rewrites_the_keys() -> None:
    sql = "SELECT age_group, COUNT(*) FROM v WHERE popul > 0 GROUP BY age"
    assert sql_edit.set_group_by(sql, ["age_group"]) == (
        "SELECT age_group, COUNT(*) FROM v WHERE popul > 0 GROUP BY age_group"
    )
    assert sql_edit.set_group_by("SELECT COUNT(*) FROM v", ["x"]) is None
