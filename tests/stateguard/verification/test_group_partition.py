"""A pandas grouping by a computed key (`groupby(pd.qcut(orders["rating"], 4))`) where the question
names a column of the frame (`band`): a finding when the two keys split the rows differently and
the answer with the stated key differs; none when the computed key splits them the same way."""

from __future__ import annotations

import pytest

from stateguard.verification.extract import groupings
from tests.stateguard.verification.conftest import session_with

SETUP = 'orders["band"] = pd.qcut(orders["price"], 4, labels=[1, 2, 3, 4]).astype(float)'
QUESTION = "For each band, give the mean rating in `by_band`. Which band has the highest mean rating?"
CODE = (
    "import json\n"
    "by_band = orders.groupby({key})['rating'].mean()\n"
    "result = {{'by_band': {{str(k): round(float(v), 3) for k, v in by_band.items()}}, 'top': str(by_band.idxmax())}}\n"
    "print(json.dumps(result))"
)


@pytest.mark.parametrize(
    ("key", "found"),
    [
        ('"band"', False),
        ('pd.qcut(orders["price"], 4, labels=[1, 2, 3, 4]).astype(float)', False),  # the same split
        (
            'pd.qcut(orders["rating"], 4, labels=[1, 2, 3, 4]).astype(float)',
            True,
        ),  # another split, 4 groups too
        ('orders["customer_id"] % 4', True),  # an expression the inspection names by its last part
        ('pd.Series(orders.index % 3, index=orders.index).rename("month")', True),
    ],
)
def test_a_computed_key_is_checked_against_the_stated_columns_split(key: str, found: bool) -> None:
    session = session_with(SETUP)
    findings = session.turn(QUESTION, CODE.format(key=key))
    assert bool(findings) is found
    if found:
        assert "group_partition" in findings[0].evidence and findings[0].variables == ["by_band"]


@pytest.mark.parametrize(("column", "found"), [("band", False), ("customer_id", True)])
def test_counting_the_rows_per_another_column_of_the_frame(column: str, found: bool) -> None:
    """ "which band holds the most of them": `chosen["band"].value_counts().idxmax()`; counting
    per `customer_id` instead splits the rows otherwise and changes the answer."""
    session = session_with(SETUP)
    code = (
        "import json\n"
        "chosen = orders[orders['rating'] > 3]\n"
        f"top = float(chosen[{column!r}].value_counts().idxmax())\n"
        "result = {'n': int(len(chosen)), 'top_band': top}\n"
        "print(json.dumps(result))"
    )
    question = "How many orders are rated above 3, and which band holds the most of them?"
    findings = session.turn(question, code)
    assert bool(findings) is found
    if found:
        assert "group_partition" in findings[0].evidence


def test_which_noun_holds_the_most_of_them_is_a_grouping() -> None:
    assert [r.keys for r in groupings("and which age bracket holds most of them?")] == [["age bracket"]]
    assert [r.keys for r in groupings("which decade holds the most of them?")] == [["decade"]]
    assert groupings("which decade had the highest rate?") == []
