"""The task's own words for a column ("invest (gross investment)" in the context) bind like the
column's tokens, so a clause that names the column that way parses whole."""

from __future__ import annotations

from stateguard.verification.extract import extract
from stateguard.verification.requirements import Kind
from stateguard.verification.vocabulary import Vocabulary

CONTEXT = (
    "The file grunfeld.csv has one row per firm and year: invest (gross investment), value (market "
    "value of the firm; millions) and capital (stock of plant and equipment). Deaths by zymotic "
    "disease (`disease`) are counted per month."
)
QUESTION = "How many firm-years had gross investment of more than 100 million dollars?"


def _vocab() -> Vocabulary:
    num = {"kind": "num"}
    return Vocabulary.model_validate(
        {
            "tables": {
                "grun": {
                    "invest": num,
                    "value": num,
                    "capital": num,
                    "firm": {"kind": "text"},
                    "disease": num,
                }
            }
        }
    )


def test_the_words_beside_a_known_column_in_parentheses_are_its_description() -> None:
    described = _vocab().with_descriptions(CONTEXT).described
    assert {"gross", "investment", "market", "stock", "plant", "equipment", "zymotic"} <= described
    assert "millions" not in described  # past the first comma: not the description's first phrase
    assert "counted" not in described  # outside any parenthesis


def test_a_clause_naming_a_column_by_its_description_parses_whole() -> None:
    plain = [r for r in extract(QUESTION, vocab=_vocab(), tables=["grun"]) if r.kind is Kind.COMPARISON]
    assert plain == []  # "gross" binds to nothing without the description: abstain
    described = _vocab().with_descriptions(CONTEXT)
    (req,) = [r for r in extract(QUESTION, vocab=described, tables=["grun"]) if r.kind is Kind.COMPARISON]
    assert (req.op, req.value) == (">", 100.0)


def test_merging_keeps_the_descriptions() -> None:
    described = _vocab().with_descriptions(CONTEXT)
    assert described.merged(Vocabulary()).described == described.described
    assert Vocabulary().merged(described).described == described.described
