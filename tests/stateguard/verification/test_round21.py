"""The twenty-first round: a share asked on the scale 0 to 1, and a rebuilt summary's output whose name
states the statistic it took when the summary was first built."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import named_stats, share_base
from stateguard.verification.regrouped import GroupingHistory
from tests.stateguard.verification.conftest import Session


@pytest.mark.parametrize(
    ("question", "upper"),
    [
        ("How many are bulky, and which fraction (between 0 and 1) of the samples is that?", 1.0),
        ("what fraction of the adults (0 to 1) does that make", 1.0),
        ("what fraction of the adults (0 to 1) is that, and what percentage of the men", 100.0),
        ("what share of the adults is that", 100.0),
    ],
)
def test_the_scale_a_share_is_asked_in(question: str, upper: float) -> None:
    assert share_base.stated_upper(question) == upper


def test_a_count_reported_as_a_fraction_of_0_to_1_is_found() -> None:
    question = "How many orders are rated 4 or more, and which fraction (0 to 1) of the orders is that?"
    code = (
        "n_top = int((orders['rating'] >= 4).sum())\nfrac = float((orders['rating'] >= 4).{f}())\n"
        "result = {{'n_top': n_top, 'frac_top': frac}}\nimport json\nprint(json.dumps(result))"
    )
    assert Session().turn(question, code.format(f="sum"))
    assert not Session().turn(question, code.format(f="mean"))


def _history(turn: int, code: str) -> GroupingHistory:
    history = GroupingHistory()
    history.record(turn, inspect_code(code))
    return history


def test_a_rebuilt_summary_s_output_keeps_the_statistic_its_name_states() -> None:
    first = 'con.execute("CREATE TABLE beds AS SELECT bedrooms, AVG(price) AS mean_price FROM houses GROUP BY bedrooms")'
    history = _history(3, first)
    again = first.replace("CREATE TABLE", "CREATE OR REPLACE TABLE").replace("AVG(price)", "MEDIAN(price)")
    sem = inspect_code(again)
    question = "Rebuild the bedroom summary (the one from Task 3) on the driveway houses."
    earlier = history.earlier_statistics(question, sem)
    assert earlier == {"mean_price": "mean"}
    [(req, _, agg)] = named_stats.named_statistics(question, sem, earlier)
    assert (req.function, agg.function) == ("mean", "median")
    # a question that does not refer back to the summary reads nothing from its history
    assert history.earlier_statistics("Make a table of prices by bedrooms.", sem) == {}
    # nor does an output over another column now
    other = inspect_code(again.replace("MEDIAN(price)", "MEDIAN(lotsize)"))
    assert history.earlier_statistics(question, other) == {}


def test_a_rebuilt_pandas_summary_is_checked_in_a_session() -> None:
    first = (
        "by_cat = orders.groupby('category').agg(n=('order_id', 'size'), mean_rating=('rating', 'mean'))\n"
        "import json\nprint(json.dumps({'n_cats': len(by_cat)}))"
    )
    session = Session()
    assert not session.turn("Summarise the orders by category in `by_cat`: orders and mean rating.", first)
    again = (
        "by_cat = orders[orders['price'] > 50].groupby('category').agg(n=('order_id', 'size'), "
        "mean_rating=('rating', '{f}'))\nimport json\n"
        "print(json.dumps({{'by_cat': by_cat['mean_rating'].round(3).to_dict()}}))"
    )
    question = "Rebuild `by_cat` for the orders over $50 only. Which category rates best?"
    assert [f.check for f in session.turn(question, again.format(f="median"))]
