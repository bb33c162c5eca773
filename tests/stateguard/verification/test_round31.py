"""Round 31: hints that name the kind of mistake their evidence shows.

A finding whose hint names no kind of mistake leaves the worker without a lead: the scripted worker
(`identify: variable_and_kind`) keeps its answer, as an agent told only "something is off here"
might. Each finding below says what its probe saw, in the words of the mistake it is:

* a ranking whose code orders the other way from the question: "its direction is reversed" (the
  count of rows kept keeps the old words);
* a second count taken over rows the first count's condition excludes, and a computation on rows a
  turn filtered out for the rest of the analysis: a filter;
* flagged rows missing their flag's filter: the filter, and, when the flag was defined again, the
  turn of the definition in force;
* a rollback that puts back the earlier rule turned the other way or with another cut-off: which.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import counted_rows, standing, superseded
from stateguard.verification.bind_shape import _resolve_key
from stateguard.verification.binder import reason
from stateguard.verification.extract import scopes
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.share_base import _group
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from stateguard.workers.response import names_kind
from tests.stateguard.verification.conftest import Session, flag_history, sandboxed, session_with

TOP_FIVE = "Which five orders have the highest price? Give their ids."


@pytest.mark.parametrize(
    "code",
    [
        "result = {'top': orders.nsmallest(5, 'price')['order_id'].tolist()}",
        "ranked = orders.sort_values('price', ascending=True)\nresult = {'top': ranked.head(5)['order_id'].tolist()}",
    ],
)
def test_a_pandas_ranking_the_other_way_is_a_reversed_direction(code: str) -> None:
    findings = Session().turn(TOP_FIVE, f"import json\n{code}\nprint(json.dumps(result))")
    assert len(findings) == 1
    assert "its direction is reversed" in findings[0].reason
    assert names_kind(findings[0].reason, "counterfactual:flipped_comparison")


def test_a_pandas_ranking_the_stated_way_has_no_finding() -> None:
    code = "import json\nresult = {'top': orders.nlargest(5, 'price')['order_id'].tolist()}\nprint(json.dumps(result))"
    assert Session().turn(TOP_FIVE, code) == []


@pytest.mark.parametrize(("order", "found"), [("ASC", True), ("DESC", False)])
def test_a_sql_ranking_the_other_way_is_a_reversed_direction(tmp_path: Path, order: str, found: bool) -> None:
    session, ws = sandboxed(tmp_path)
    try:
        code = (
            f"top = con.execute('SELECT order_id FROM o WHERE price IS NOT NULL ORDER BY price {order} LIMIT 5')"
            ".fetchall()\nresult = {'top': [r[0] for r in top]}"
        )
        findings = session.turn(TOP_FIVE, code)
    finally:
        ws.close()
    assert bool(findings) is found
    if found:
        assert "its direction is reversed" in findings[0].reason


def test_a_ranking_that_keeps_another_number_of_rows_keeps_the_ranking_words() -> None:
    req = Requirement(kind=Kind.ORDER, text="the three highest", k=3, descending=True)
    text = reason(req, "order")
    assert text.startswith("the ranking order or the number of rows kept differs")
    assert not names_kind(text, "counterfactual:flipped_comparison")
    assert names_kind(reason(req, "reversed"), "counterfactual:flipped_comparison")


def test_a_count_over_rows_the_first_count_excludes_names_a_filter() -> None:
    req = Requirement(kind=counted_rows.KIND, text="of those", fields=["n_smokers", "n_of_those_ill"])
    text = counted_rows.reason(req, "differs")
    assert "the filter of 'n_smokers' excludes" in text
    assert names_kind(text, "counterfactual:dropped_filter")


@pytest.mark.parametrize("text", ["the scope of turn 3 (this turn)", "the scope of turn 3"])
def test_rows_a_turn_filtered_out_for_the_rest_of_the_analysis_name_a_filter(text: str) -> None:
    req = Requirement(kind=standing.KIND, text=text, columns=["workers"], term="workers")
    said = standing.reason(req, "bypassed")
    assert "filtered out for the rest of the analysis" in said
    assert ("this turn" in said) is text.endswith("(this turn)")
    assert names_kind(said, "counterfactual:dropped_filter")


PRICEY = (
    (1, "orders['pricey'] = orders['price'] > 100", "Call an order pricey when its price is above 100."),
    (
        2,
        "orders['pricey'] = orders['price'] > 200",
        "From now on an order is pricey when its price is above 200.",
    ),
)


def test_flagged_rows_missing_a_redefined_flag_name_its_filter_and_the_definition_in_force() -> None:
    session = Session()
    for _, code, question in PRICEY:
        assert session.turn(question, f"{code}\nresult = {{'n': int(orders['pricey'].sum())}}") == []
    findings = session.turn(
        "Among the pricey orders, what is the mean rating?",
        "pricey_orders = orders\nresult = {'mean_rating': float(pricey_orders['rating'].mean())}",
    )
    assert len(findings) == 1
    said = findings[0].reason
    assert "the filter on the flag pricey is not applied" in said
    assert said.endswith("pricey was redefined at turn 2, and its current definition applies")
    assert names_kind(said, "counterfactual:pre_update_definition")
    assert names_kind(said, "counterfactual:dropped_filter")


def test_a_flag_defined_once_or_the_same_way_again_was_not_redefined() -> None:
    assert flag_history(*PRICEY).redefined_at("Pricey") == 2
    assert flag_history(PRICEY[0]).redefined_at("pricey") is None
    assert flag_history(PRICEY[0], (4, PRICEY[0][1], "Mark pricey again.")).redefined_at("pricey") is None
    assert flag_history(*PRICEY).redefined_at("cheap") is None


@pytest.mark.parametrize(
    ("code", "change"),
    [
        ("orders['pricey'] = orders['price'] < 100", "reversed"),
        ("orders['pricey'] = orders['price'] <= 100", "reversed"),
        ("orders['pricey'] = orders['price'] > 150", "threshold"),
        ("orders['pricey'] = orders['price'] >= 100", "threshold"),
        ("orders['pricey'] = (orders['price'] > 100) & (orders['rating'] > 2)", None),
    ],
)
def test_a_rollback_that_puts_back_the_earlier_rule_changed_says_how(code: str, change: str | None) -> None:
    history = flag_history(*PRICEY)
    found = history.restored(
        "Restore the earlier pricey rule in orders and count the pricey orders.", code, inspect_code(code)
    )
    assert len(found) == 1 and found[0].after == "orders['price'] > 100"
    assert found[0].change() == change
    status = "_".join(filter(None, ("restored", change)))
    said = superseded.reason(found[0].requirement(), status)
    assert "restore the earlier definition of pricey as it was written" in said
    assert names_kind(said, "counterfactual:flipped_comparison") is (change == "reversed")
    assert names_kind(said, "counterfactual:changed_threshold") is (change == "threshold")


# Round 31, recall: a key said in the words of a column's name.


@pytest.mark.parametrize(
    ("said", "pool", "column"),
    [
        ("pad type", ["Mask", "PadType", "skips"], ["PadType"]),  # every word, in order
        ("pad types", ["Mask", "PadType", "skips"], ["PadType"]),
        ("band", ["age_band", "gender"], ["age_band"]),  # one word of exactly one column's name
        ("band", ["band", "age_band"], ["band"]),  # the column of that very name first
        ("band", ["age_band", "income_band"], []),  # two columns hold the word: abstain
        ("type", ["PadType", "MaskType"], []),
        ("type pad", ["PadType"], []),  # not in the column's order
        ("gallon", ["Miles_per_Gallon", "Origin"], []),  # the unit of a rate ("miles per gallon"), no key
    ],
)
def test_a_key_said_in_the_words_of_a_columns_name_binds_it(
    said: str, pool: list[str], column: list[str]
) -> None:
    assert _resolve_key(said, pool) == column


BANDED = "orders['price_band'] = pd.cut(orders['price'], [0, 100, 200, 300]).astype(str)"


@pytest.mark.parametrize(("key", "found"), [("region", True), ("price_band", False)])
def test_a_summary_by_a_word_of_the_key_columns_name_is_checked(key: str, found: bool) -> None:
    session = session_with(BANDED)
    code = (
        f"band_tab = orders.groupby('{key}').agg(n=('order_id', 'count'), mean_rating=('rating', 'mean'))\n"
        "result = {'by_band': band_tab.to_dict(orient='index')}\n"
        "import json\nprint(json.dumps(result, default=str))"
    )
    findings = session.turn("Summarise the orders by band in `band_tab`: orders and mean rating.", code)
    assert bool(findings) is found
    if found:
        assert "grouping per price_band" in findings[0].reason


# After fresh41's look (tuned on fresh41 from here): its clean runs' false repairs.


def test_a_definition_records_only_what_its_own_sentence_states() -> None:
    """Turn 1 defines 'big' and, in another sentence, asks about the well-rated orders: a later turn
    that uses 'big' is held to the price rule only, not to the rating bound of the other sentence."""
    session = Session()
    define = (
        "Call an order big when its price is at least 100, and store it as big in orders. How many are "
        "big, and how many of the well-rated orders (a rating of 4 or higher) are big?"
    )
    code = (
        "orders['big'] = orders['price'] >= 100\nwell = orders[orders['rating'] >= 4]\n"
        "result = {'n_big': int(orders['big'].sum()), 'n_well_big': int(well['big'].sum())}"
    )
    assert session.turn(define, code) == []
    (entry,) = session.verifier.definitions.entries.values()
    assert [r.describe() for r in entry.requirements] == ["price >= 100"]
    later = "orders['mid'] = orders['rating'].between(2, 4)\nresult = {'n_big': int(orders['big'].sum()), 'n_mid': int(orders['mid'].sum())}"
    assert session.turn("How many orders are big, and how many have a rating from 2 to 4?", later) == []


VALUES = Vocabulary(
    tables={"book": {"label": ColumnInfo(kind="text", values=["under 20", "20 to 35", "age not recorded"])}}
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        (
            'merge the babies onto it, so every label gets its number of babies, with 0 babies for "age not recorded"',
            False,
        ),
        ('every label with its count, with 0 for "age not recorded"', False),
        ('every label with its count, "age not recorded" with 0 babies', False),
        ('how heavy were the babies of mothers whose age band is "age not recorded"', True),
    ],
)
def test_an_entry_kept_with_a_zero_said_first_is_no_scope(clause: str, scoped: bool) -> None:
    found = [r for r in scopes(clause, VALUES, ["book"]) if r.columns == ["label"]]
    assert bool(found) is scoped


@pytest.mark.parametrize(
    ("words", "group"),
    [
        ("recent births", None),  # `recent` is a frame the flag's rows are in: its rows, no subgroup
        ("followed residents", None),  # "resident" describes `death` ("1 if the resident died")
        ("midage cases", ("midage", "1")),  # the 0/1 column by its name
    ],
)
def test_a_frames_own_name_in_a_subgroup_phrase_names_no_subgroup(words: str, group: tuple | None) -> None:
    columns = {
        "midage": ColumnInfo(kind="num", low=0, high=1),
        "death": ColumnInfo(kind="num", low=0, high=1),
        "low": ColumnInfo(kind="text", values=["False", "True"]),
    }
    vocab = Vocabulary(
        tables={"births": columns, "recent": columns, "followed": columns},
        column_words={"midage": ("mother", "birth"), "death": ("resident", "died")},
    )
    assert _group(words, vocab, ["births", "recent", "followed"]) == group


STAYS = (
    "import duckdb\ncon = duckdb.connect()\ncon.execute('CREATE TABLE stays AS SELECT * FROM orders')\n"
    "con.execute('CREATE TABLE kept AS SELECT * FROM stays WHERE rating >= 2')"
)


@pytest.mark.parametrize(
    ("subquery", "statistics"),
    [
        ("(SELECT median(s.price) FROM stays s WHERE s.region = k.region)", True),
        ("(SELECT median(s.price) FROM stays s WHERE s.price > 10)", False),  # no correlation: rows
        ("(SELECT median(price) FROM stays GROUP BY region LIMIT 1)", True),
    ],
)
def test_a_statistic_looked_up_per_row_on_the_parent_reads_no_rows_around_the_scope(
    subquery: str, statistics: bool
) -> None:
    scope = standing.Scope(turn=2, parent="stays", child="kept", sql=True)
    code = f"SELECT count(*) FROM kept k WHERE k.price >= 1.5 * {subquery}"
    assert standing._statistics_only(code, scope) is statistics
