"""Reading a real model's typed answer into fields (issue 30), without inventing values."""

from __future__ import annotations

from stateguard.workers.answer_text import labelled_fields, structured_answer


def test_json_and_literals_are_read_as_before() -> None:
    assert structured_answer('{"n": 3}') == {"n": 3}
    assert structured_answer("{'n': 3, 'ok': True}") == {"n": 3, "ok": True}


def test_labelled_lines_become_fields_with_typed_values() -> None:
    text = "- **Mean sepal length**: 5.843 cm\n- Count: 1,234\n* Share = 12.5%\nWidest species: setosa."
    assert structured_answer(text) == {
        "Mean sepal length": 5.843,
        "Count": 1234,
        "Share": 12.5,
        "Widest species": "setosa",
    }


def test_a_heading_line_groups_the_indented_lines_under_it() -> None:
    text = "Long-petalled flowers: 84\nBy species:\n  setosa: 0\n  versicolor: 34\n  - virginica: 50\nDone"
    assert labelled_fields(text) == {
        "Long-petalled flowers": 84,
        "By species": {"setosa": 0, "versicolor": 34, "virginica": 50},
    }


def test_a_lone_value_is_wrapped_and_prose_is_left_as_text() -> None:
    assert structured_answer("0.523") == {"answer": 0.523}
    assert structured_answer("['a', 'b']") == ["a", "b"]
    # a sentence's numbers are not pulled out: a stray number could match a requested field
    assert structured_answer("There are 150 flowers of three species.") is None
    assert structured_answer("setosa") is None


def test_a_set_literal_becomes_a_sorted_list() -> None:
    """Old: 'Species: {'versicolor', 'virginica', 'setosa'}' (the 1.5B model's iris turn 1) stayed a
    Python set, which the trace wrote as text and the field judge scored wrong."""
    got = structured_answer("Number of flowers: 150\nSpecies: {'versicolor', 'virginica', 'setosa'}")
    assert got == {"Number of flowers": 150, "Species": ["setosa", "versicolor", "virginica"]}
    assert structured_answer("Pair: (1, {2})") == {"Pair": [1, [2]]}
