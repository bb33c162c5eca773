"""Semantic verification on pandas code: each mistake kind is found with probe evidence, and the
correct code of the same turn raises nothing."""

from __future__ import annotations

import pytest

from tests.stateguard.verification.conftest import Session

CASES = {
    # kind: (question, correct code, faulty code, variable the finding must name)
    "flipped comparison": (
        "How many orders are rated above 4.0? Report `n_high`.",
        "high = orders[orders.rating > 4.0]\nresult = {'n_high': len(high)}",
        "high = orders[orders.rating < 4.0]\nresult = {'n_high': len(high)}",
        "high",
    ),
    "dropped filter": (
        "Among the North orders with a recorded price, what is the total price? Report `total_price`.",
        "north = orders[(orders.region == 'North') & orders.price.notna()]\nresult = {'total_price': north.price.sum()}",
        "north = orders[orders.price.notna()]\nresult = {'total_price': north.price.sum()}",
        "north",
    ),
    "aggregation swap": (
        "What is the average price of toys orders? Report `avg_price`.",
        "toys = orders[orders.category == 'toys']\navg_price = toys.price.mean()\nresult = {'avg_price': avg_price}",
        "toys = orders[orders.category == 'toys']\navg_price = toys.price.median()\nresult = {'avg_price': avg_price}",
        "avg_price",
    ),
    "grouping key": (
        "Compute the mean rating per region. Report `rating_by_region`: region -> rating.",
        "rating_by_region = orders.groupby('region')['rating'].mean()\nresult = {'rating_by_region': rating_by_region.to_dict()}",
        "rating_by_region = orders.groupby('category')['rating'].mean()\nresult = {'rating_by_region': rating_by_region.to_dict()}",
        "rating_by_region",
    ),
    "join how": (
        "Match the orders to customers on customer_id, keeping orders without a matching customer. Report `n_rows`.",
        # the answer printed: a kept side bound by its name needs a changed answer (`bind_shape.keep_side`)
        "import json\nmatched = pd.merge(orders, customers, on='customer_id', how='left')\nresult = {'n_rows': len(matched)}\nprint(json.dumps(result))",
        "import json\nmatched = pd.merge(orders, customers, on='customer_id', how='inner')\nresult = {'n_rows': len(matched)}\nprint(json.dumps(result))",
        "matched",
    ),
    "changed threshold": (
        "How many orders have a price of at least 100? Report `n_big`.",
        "big = orders[orders.price >= 100]\nresult = {'n_big': len(big)}",
        "big = orders[orders.price >= 150]\nresult = {'n_big': len(big)}",
        "big",
    ),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_correct_code_raises_nothing(kind: str) -> None:
    question, good, _, _ = CASES[kind]
    assert Session().turn(question, good) == []


@pytest.mark.parametrize("kind", sorted(CASES))
def test_mistake_is_found_with_probe_evidence(kind: str) -> None:
    question, _, bad, variable = CASES[kind]
    findings = Session().turn(question, bad)
    assert findings, f"{kind}: no finding"
    assert findings[0].check == "semantic"
    assert variable in findings[0].variables
    assert "probe observed" in findings[0].evidence


def test_pre_update_definition_is_found(session: Session) -> None:
    """Turn 3 uses 'large' after turn 2 redefined it: the bound of turn 1 is a finding, read from
    the committed defining state (load_state)."""
    assert (
        session.turn(
            "An order is large when its price is at least 100. Report `n_large`.",
            "large = orders[orders.price >= 100]\nresult = {'n_large': len(large)}",
        )
        == []
    )
    assert (
        session.turn(
            "An order is large when its price is at least 150. Report `n_large`.",
            "large = orders[orders.price >= 150]\nresult = {'n_large': len(large)}",
        )
        == []
    )
    question = "What is the mean rating of large orders? Report `mean_rating`."
    good = "lr = orders[orders.price >= 150]\nmean_rating = lr.rating.mean()\nresult = {'mean_rating': mean_rating}"
    bad = "lr = orders[orders.price >= 100]\nmean_rating = lr.rating.mean()\nresult = {'mean_rating': mean_rating}"
    assert session.turn(question, good) == []
    findings = session.turn(question, bad)
    assert findings and "definition of 'large'" in findings[0].evidence
    assert findings[0].variables == ["lr"]


def test_pointing_back_at_a_definition_is_not_a_requirement(session: Session) -> None:
    """ "the original definition" may mean the earlier bound on purpose: no requirement, no finding."""
    session.turn(
        "An order is large when its price is at least 100. Report `n_large`.",
        "large = orders[orders.price >= 100]\nresult = {'n_large': len(large)}",
    )
    session.turn(
        "An order is large when its price is at least 150. Report `n_large`.",
        "large = orders[orders.price >= 150]\nresult = {'n_large': len(large)}",
    )
    old = "lr = orders[orders.price >= 100]\nn_old = len(lr)\nresult = {'n_old': n_old}"
    assert (
        session.turn(
            "Under the original definition of large, how many orders are there? Report `n_old`.", old
        )
        == []
    )


def test_a_definition_read_through_a_flag_is_not_a_finding(session: Session) -> None:
    """A turn that compares both sides of a defined term through the flag an earlier turn built
    restates no condition: that is no evidence of a mistake (the requirement stays unverified)."""
    assert (
        session.turn(
            "An order is large when its price is at least 100. Report `n_large`.",
            "orders['large'] = orders.price >= 100\nresult = {'n_large': int(orders.large.sum())}",
        )
        == []
    )
    question = (
        "Are large orders rated higher? Report the mean rating of large orders, of the others, and the gap."
    )
    code = (
        "big = orders[orders.large]\nsmall = orders[~orders.large]\n"
        "result = {'large': big.rating.mean(), 'others': small.rating.mean(), 'gap': big.rating.mean() - small.rating.mean()}"
    )
    assert session.turn(question, code) == []
    assert any(r.term == "large" for r in session.verifier.last.unverified)


@pytest.mark.parametrize(("flag", "found"), [(">= 100", False), ("<= 100", True), (">= 150", True)])
def test_a_flag_column_is_probed_against_the_stated_condition(flag: str, found: bool) -> None:
    """`frame['flag'] = <comparison>`: the stored flag must equal the stated condition row by row;
    a reversed or moved bound is a finding naming the frame."""
    code = f"orders['large'] = orders.price {flag}\nresult = {{'n_large': int(orders.large.sum())}}"
    findings = Session().turn("Call an order large when its price is at least 100. Report `n_large`.", code)
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["orders"] and "'flagged'" in findings[0].evidence


def test_a_flag_of_several_parts_only_has_to_imply_the_condition() -> None:
    code = "orders['big_north'] = (orders.price >= 100) & (orders.region == 'North')\nresult = {'n': int(orders.big_north.sum())}"
    assert Session().turn("Flag the North orders with a price of at least 100. Report `n`.", code) == []


def test_a_rule_stated_in_the_turn_context_replaces_the_definition(session: Session) -> None:
    """The update's new bound comes in the turn's context; a later turn 'under the current
    definition' that reuses the old bound is a finding, read from the updating state."""
    session.turn(
        "Call an order large when its price is at least 100. Report `n_large`.",
        "orders['large'] = orders.price >= 100\nresult = {'n_large': int(orders.large.sum())}",
    )
    assert (
        session.turn(
            "Update the large flag to the new definition. Report `n_large`.",
            "orders['large'] = orders.price >= 150\nresult = {'n_large': int(orders.large.sum())}",
            own_context="From now on an order is large only when its price is at least 150.",
        )
        == []
    )
    question = "Under the current definition, what is the mean rating of large orders? Report `mean_rating`."
    findings = session.turn(
        question, "lr = orders[orders.price >= 100]\nresult = {'mean_rating': lr.rating.mean()}"
    )
    assert findings and "definition of 'large'" in findings[0].evidence and findings[0].variables == ["lr"]


def test_grouping_keys_stated_in_words() -> None:
    question = "What is the mean rating for each customer segment? Report `rating_by_segment`."
    setup = "seg = orders.merge(customers, on='customer_id', how='inner')\n"
    good = (
        setup
        + "rating_by_segment = seg.groupby('segment')['rating'].mean()\nresult = {'rating_by_segment': rating_by_segment.to_dict()}"
    )
    bad = (
        setup
        + "rating_by_segment = seg.groupby('region')['rating'].mean()\nresult = {'rating_by_segment': rating_by_segment.to_dict()}"
    )
    assert Session().turn(question, good) == []
    findings = Session().turn(question, bad)
    assert findings and "group_keys probe" in findings[0].evidence


@pytest.mark.parametrize(("how", "found"), [("inner", False), ("left", True)])
def test_keeping_only_matched_rows_in_words(how: str, found: bool) -> None:
    question = (
        "Join the customers to the orders, keeping only orders whose customer is known. Report `n_rows`."
    )
    code = f"matched = orders.merge(customers, on='customer_id', how='{how}')\nresult = {{'n_rows': len(matched)}}"
    assert bool(Session().turn(question, code)) is found


def test_a_stated_condition_that_keeps_no_row_is_no_evidence() -> None:
    """The count probe (rows kept as written against as stated) reports a difference only when the
    stated condition keeps some rows: none means the binding, not the code, is the likelier mistake."""
    import pandas as pd

    from stateguard.verification.probes import count_probe

    ns: dict[str, object] = {"df": pd.DataFrame({"x": [1.0, 2.0, 3.0]})}
    exec(count_probe("df", "df['x'] > 1", "df['x'] > 10"), ns)
    assert ns["_v"] is False and ns["_o"] == {"rows_as_written": 2, "rows_as_stated": 0}
    exec(count_probe("df", "df['x'] > 1", "df['x'] > 2"), ns)
    assert ns["_v"] is True
