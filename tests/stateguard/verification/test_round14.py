"""The fourteenth round: "more than half" and a range's ends as stated numbers, a share with an aside
and a 0/1 column named by its own word, the withdrawn rule's rows asked across a comma or given up,
and a pandas ranking read into a list checked by re-running it turned."""

from __future__ import annotations

import json

import pytest

from stateguard.verification import ranking_sides, share_base, standing, stated_sides, unstated_cutoff
from stateguard.verification.extract import current_rule_flags
from stateguard.verification.vocabulary import Vocabulary
from tests.stateguard.verification.conftest import session_with


def _vocab(tables: dict[str, dict[str, dict[str, object]]]) -> Vocabulary:
    return Vocabulary.from_probe(json.dumps(tables))


# -- stated numbers: half, and a range's ends ---------------------------------------------------------


def test_more_than_half_is_a_stated_fifty_percent() -> None:
    found = unstated_cutoff.changed("In how many can more than half read?", [], "n = len(d[d['lit'] > 40])")
    assert found is not None and found.after == "> 50"
    assert unstated_cutoff.changed("more than half?", [], "n = len(d[d['lit'] > 0.5])") is None  # held
    flipped = stated_sides.flipped("more than half?", "n = len(d[d['lit'] < 50])")
    assert flipped is not None and flipped.after == "> 50"


@pytest.mark.parametrize(
    ("said", "code", "after"),
    [
        (
            "the number aged 30 to 45, both ends included",
            "n = int(s['age'].between(30, 50).sum())",
            ".between(30, 45)",
        ),
        ("between 10 and 20", "SELECT COUNT(*) FROM t WHERE x BETWEEN 5 AND 20", "BETWEEN 10 AND 20"),
    ],
)
def test_a_range_end_the_code_moved(said: str, code: str, after: str) -> None:
    found = unstated_cutoff.changed(said, [said], code)
    assert found is not None and found.after == after
    assert found.op in (">=", "<=")


def test_a_range_as_stated_and_a_range_end_of_a_side_rule_read_nothing() -> None:
    said = "the number aged 30 to 45, both ends included"
    assert unstated_cutoff.changed(said, [said], "n = int(s['age'].between(30, 45).sum())") is None
    # a range's end is no one-sided test: the side rule leaves it alone
    assert stated_sides.flipped("at most 45", "n = int(s['age'].between(45, 60).sum())") is None


# -- shares ---------------------------------------------------------------------------------------------


def test_a_share_with_an_aside_and_a_glossed_subgroup_of_several_words() -> None:
    vocab = _vocab(
        {
            "depts": {
                "main_city": {"kind": "text", "values": ["1:Sm", "2:Med", "3:Lg"]},
                "high_crime": {"kind": "text", "values": ["False", "True"]},
            }
        }
    )
    q = "and what share, in percent, of the departments whose chief town is large (3:Lg) are high-crime?"
    found = share_base.subgroup_shares(q, vocab, ["depts"])
    assert [(s.flag, s.column, s.value) for s in found] == [("high_crime", "main_city", "3:Lg")]


def test_a_0_1_column_named_by_its_own_word_is_a_subgroup() -> None:
    vocab = _vocab(
        {
            "flagged": {
                "metro": {"kind": "num", "low": 0, "high": 1},
                "poverty": {"kind": "num", "low": 2, "high": 48},
                "poor": {"kind": "text", "values": ["False", "True"]},
            }
        }
    )
    found = share_base.subgroup_shares("what percentage of the metro counties are poor?", vocab, ["flagged"])
    assert [(s.flag, s.column, s.value) for s in found] == [("poor", "metro", "1")]
    # a measure is no subgroup
    assert (
        share_base.subgroup_shares("what percentage of the poverty counties are poor?", vocab, ["flagged"])
        == []
    )


# -- the withdrawn rule's rows ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "Back to the combined-rate rule we dropped, for comparison: which big departments did it call "
        "high-crime that the persons-only rule does not?",
        "And the relative line we gave up: which kept departments did it call high-crime that the 20 line does not?",
    ],
)
def test_the_withdrawn_rules_rows_across_a_comma_or_given_up(question: str) -> None:
    vocab = _vocab({"big": {"high_crime": {"kind": "text", "values": ["False", "True"]}}})
    found = current_rule_flags(question, vocab, ["big"])
    assert [(r.columns, r.exclude) for r in found] == [(["high_crime"], True)]


# -- a pandas ranking read into a list ------------------------------------------------------------------


def test_the_one_ranking_turned() -> None:
    code = '_l = r.sort_values(["weight", "pid"], ascending=False).head(3)["pid"].tolist()'
    assert ranking_sides.turned(code, descending=False) == (
        '.sort_values(["weight", "pid"], ascending=False)',
        ".sort_values(['weight', 'pid'], ascending=[True, False])",
    )
    assert ranking_sides.turned(code, descending=True) is None  # as stated
    assert ranking_sides.turned(code.replace(".head(3)", ""), descending=False) is None  # no cut
    two = code + "\n_m = r.sort_values('age').head(2)"
    assert ranking_sides.turned(two, descending=False) is None  # two rankings: which one is asked


@pytest.mark.parametrize(("ascending", "flagged"), [("True", False), ("False", True)])
def test_a_ranking_of_ids_re_run_turned(ascending: str, flagged: bool) -> None:
    session = session_with()
    code = (
        "import json\n"
        f"_low = orders.sort_values(['price', 'order_id'], ascending={ascending}).head(3)['order_id'].tolist()\n"
        "print(json.dumps({'cheapest3': [int(x) for x in _low]}))"
    )
    findings = session.turn("Which three orders are the cheapest (cheapest first)?", code)
    assert bool(findings) is flagged


def test_a_flag_said_with_a_plural_noun_and_a_unit_with_a_slash() -> None:
    vocab = _vocab(
        {
            "flagged": {
                "sex": {"kind": "text", "values": ["f", "m"]},
                "severe": {"kind": "text", "values": ["False", "True"]},
            }
        }
    )
    found = share_base.subgroup_shares("what percentage of the women are severe cases?", vocab, ["flagged"])
    assert [(s.flag, s.column, s.value) for s in found] == [("severe", "sex", "f")]
    sql = 'con.execute("CREATE TABLE f AS SELECT *, bili <= 2 AS severe FROM patients")'
    flipped = stated_sides.flipped("a severe case if their bilirubin is 2 mg/dl or higher", sql)
    assert flipped is not None and flipped.after == ">= 2"


# -- fresh19's first-look false repair ------------------------------------------------------------------


def test_a_parent_read_only_for_a_per_group_statistic_is_no_read_around() -> None:
    """A rule over all paid workers' medians by sex, applied to the core workers' rows: the parent feeds
    the statistic, the rows come from the child."""
    scope = standing.Scope(6, "paid", "core", True)
    stats = (
        "SELECT c.* FROM core c JOIN (SELECT sex, MEDIAN(wages) AS med FROM paid GROUP BY sex) s "
        "ON s.sex = c.sex WHERE c.wages < 2.0 / 3 * s.med"
    )
    scopes = standing.StandingScopes()
    scopes.scopes.append(scope)
    question = "which core workers did the sex-median rule call low-paid?"
    assert scopes.bypassed(question, stats) == []
    rows = stats + "\nSELECT COUNT(*) FROM paid WHERE wages < 10"  # the parent's rows themselves
    assert scopes.bypassed(question, rows) == [scope]
    pandas = standing.Scope(6, "paid", "core", False)
    scopes.scopes[:] = [pandas]
    med = "m = paid.groupby('sex')['wages'].median()\nlow = core[core['wages'] < core['sex'].map(m) * 2 / 3]"
    assert scopes.bypassed(question, med) == []
    assert scopes.bypassed(question, med + "\nn = len(paid[paid['wages'] < 10])") == [pandas]
