"""A count followed by a count "of those" (`carried.py`): the first count's category must hold on
the rows behind every reported value, not only on the statement that applies it."""

from __future__ import annotations

import pytest

from stateguard.verification.carried import carried_scopes, instruction_scopes
from stateguard.verification.verifier import SemanticConfig
from stateguard.verification.vocabulary import Vocabulary
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, Session, session_with

# These tests are about the carried and subset checks; the counted-rows check (`counted_rows.py`, tested
# in test_round22.py) reads the same turns from the rows behind each count and is left out here.
WITHOUT_ROWS = SemanticConfig(counted_rows=False)

QUESTION = (
    "How many orders were labelled books? And how many of those were priced above 100 dollars? "
    "Report `n_books` and `n_books_over_100`."
)


def _pandas(second_from: str) -> str:
    return (
        "import json\nbooks = orders[orders['category'] == 'books']\n"
        f"over = {second_from}[{second_from}['price'] > 100]\n"
        "result = {'n_books': len(books), 'n_books_over_100': len(over)}\nprint(json.dumps(result))"
    )


def test_the_second_count_taken_from_all_rows_is_a_finding() -> None:
    findings = Session(WITHOUT_ROWS).turn(QUESTION, _pandas("orders"))
    assert [f.variables for f in findings] == [["over"]]
    assert "category" in findings[0].evidence and "'rows_breaking_requirement'" in findings[0].evidence


def test_the_second_count_taken_from_the_first_ones_rows_is_not() -> None:
    assert Session().turn(QUESTION, _pandas("books")) == []


def test_without_the_carried_check_the_one_statement_that_applies_the_category_hides_the_mistake() -> None:
    """What the ordinary scope check alone does: the count of books satisfies it (the old code)."""
    from stateguard.verification.verifier import SemanticConfig, SemanticVerifier

    session = Session()
    session.verifier = SemanticVerifier(
        SemanticConfig(carried_scopes=False, subset_counts=False, counted_rows=False)
    )
    assert session.turn(QUESTION, _pandas("orders")) == []


def test_sql_that_drops_the_category_from_the_query_behind_both_counts() -> None:
    session = session_with(DUCKDB_ORDERS)
    code = (
        'import json\n_row = con.execute("SELECT COUNT(*), SUM(CASE WHEN price > 100 THEN 1 ELSE 0 END) '
        'FROM o {where}").fetchone()\n'
        "result = {{'n_books': _row[0], 'n_books_over_100': int(_row[1])}}\nprint(json.dumps(result))"
    )
    assert session.turn(QUESTION, code.format(where="WHERE category = 'books'")) == []
    assert len(session_with(DUCKDB_ORDERS).turn(QUESTION, code.format(where=""))) >= 1


def _vocab() -> Vocabulary:
    return Vocabulary.model_validate(
        {
            "tables": {
                "orders": {
                    "category": {"kind": "cat", "values": ["books", "toys", "garden"]},
                    "price": {"kind": "num", "values": []},
                }
            }
        }
    )


@pytest.mark.parametrize(
    ("question", "values"),
    [
        ("How many orders were labelled books? And how many of those were priced above 100?", ["books"]),
        ("How many orders were labelled books? And how many books were priced above 100?", ["books"]),
        # the second count does not refer back: two counts side by side
        ("How many orders were labelled books? And how many orders were priced above 100?", []),
        # three clauses: not the two-count form
        ("How many orders were labelled books? How many of those were priced above 100? List them.", []),
        # a category that is left out is no scope of the second count
        ("How many orders were not books? And how many of those were priced above 100?", []),
    ],
)
def test_what_is_read_as_a_carried_category(question: str, values: list[str]) -> None:
    found = carried_scopes(question, _vocab(), ["orders"])
    assert [v for r in found for v in r.values] == values


INSTRUCTED = (
    "Set the books aside for this one. What is the mean rating of the orders priced above 100, and what is "
    "their highest price? Report `mean_rating` and `max_price`."
)


def _instructed(second: str) -> str:
    return (
        "import json\nrest = orders[orders['category'] != 'books']\nbig = rest[rest['price'] > 100]\n"
        f"result = {{'mean_rating': float(big['rating'].mean()), 'max_price': float({second})}}\n"
        "print(json.dumps(result))"
    )


def test_an_instruction_that_leaves_rows_out_holds_for_every_reported_value() -> None:
    """The second value taken over all orders (books included) breaks it; the ordinary scope check
    is met by the one statement that leaves the books out."""
    faulty = Session().turn(INSTRUCTED, _instructed("orders.loc[orders['price'] > 100, 'price'].max()"))
    assert len(faulty) == 1 and "category" in faulty[0].evidence
    assert Session().turn(INSTRUCTED, _instructed("big['price'].max()")) == []


@pytest.mark.parametrize(
    ("question", "values"),
    [
        ("Leave the books out for this one. What is the mean rating?", ["books"]),
        # a question, not an instruction: the exclusion belongs to that question's clause
        ("Which orders remain once the books are dropped? What is the mean rating?", []),
        ("Keep the books. What is the mean rating?", []),  # nothing is left out
    ],
)
def test_what_is_read_as_an_instruction_scope(question: str, values: list[str]) -> None:
    found = instruction_scopes(question, _vocab(), ["orders"])
    assert [v for r in found for v in r.values] == values


# -- a count "of those" larger than the count it is taken from (the reported values decide) ------------

CODED = "How many orders belong to customer group 7? And of those, how many were rated above 4?"


def _coded(second_from: str) -> str:
    return (
        "import json\ngroup7 = orders[orders['customer_id'] % 10 == 7]\n"
        f"rated = {second_from}[{second_from}['rating'] > 4]\n"
        "result = {'n_group_7': len(group7), 'n_rated_above_4': len(rated)}\nprint(json.dumps(result))"
    )


def test_a_count_of_those_larger_than_its_first_count_is_a_finding_whatever_the_words_bind_to() -> None:
    """ "customer group 7" binds to no column or value: the words only say the second count is a
    subset of the first; the printed numbers break that."""
    findings = Session(WITHOUT_ROWS).turn(CODED, _coded("orders"))
    assert len(findings) == 1
    assert "n_rated_above_4" in findings[0].reason and "subset requirement" in findings[0].evidence
    assert "rated" in findings[0].variables


def test_the_same_count_taken_from_the_first_ones_rows_is_not() -> None:
    assert Session().turn(CODED, _coded("group7")) == []


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        (CODED, {"a": 3, "b": 5}, ("a", "b")),
        (CODED, {"a": 5, "b": 5}, None),
        ("How many orders are toys? And how many of them cost over 100?", {"a": 2, "b": 9}, ("a", "b")),
        # not a subset: the second count is of all orders
        ("How many orders are toys? And how many orders cost over 100?", {"a": 2, "b": 9}, None),
        # a third field, a share, a float, a bool: the values are not the two counts
        (CODED, {"a": 3, "b": 5, "c": 1}, None),
        (CODED, {"a": 3, "b": 5.0}, None),
        (CODED, {"a": 0, "b": True}, None),
        ("How many orders are toys? What share of those cost over 100?", {"a": 2, "b": 9}, None),
        # three clauses
        (
            "How many orders are toys? And how many of those cost over 100? How many are books?",
            {"a": 2, "b": 9},
            None,
        ),
    ],
)
def test_subset_count_fields_reads_only_two_counts_the_second_of_the_first(
    question: str, answer: dict[str, object], expected: tuple[str, str] | None
) -> None:
    from stateguard.verification.carried import subset_count_fields

    assert subset_count_fields(question, answer) == expected


def test_the_subset_check_can_be_switched_off() -> None:
    from stateguard.verification.verifier import SemanticConfig, SemanticVerifier

    session = Session()
    session.verifier = SemanticVerifier(SemanticConfig(subset_counts=False, counted_rows=False))
    assert session.turn(CODED, _coded("orders")) == []
