"""Round 23: a rule's group read from the task's own words for its columns (word roots in any order, a
list of columns without parentheses, a category noun by the values a column holds) and from more ways
to say it ("that share its X", "with its own X"); and more shapes of a group statistic joined back
onto the rows (a correlated scalar subquery, `UPDATE ... FROM` a grouped subquery, a look-up inside one
expression, a transform over a list of keys)."""

from __future__ import annotations

import duckdb
import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_windows
from stateguard.verification.verifier import SemanticConfig
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, described_roots, word_root
from tests.stateguard.verification.conftest import Session

DESCRIBED = {
    "IV": ("history", "injecting", "drugs", "never"),
    "HC": ("heroin", "cocaine", "use"),
    "rad": ("index", "access", "radial", "highways"),
    "org": ("poll", "series", "morgan"),
    "age": ("years", "sampling"),
    "sample.yr": ("year", "sample", "taken"),
}


@pytest.mark.parametrize(
    ("word", "root"),
    [
        ("injection", "inject"),
        ("injecting", "inject"),
        ("sampling", "sampl"),
        ("sample", "sampl"),
        ("highways", "highway"),
        ("access", "access"),
        ("index", "index"),
        ("series", "seri"),
    ],
)
def test_a_word_s_root(word: str, root: str) -> None:
    assert word_root(word) == root


def test_the_columns_whose_description_holds_every_word_by_its_root_in_any_order() -> None:
    columns = list(DESCRIBED)
    assert described_roots(["injection", "history"], columns, DESCRIBED) == ["IV"]
    assert described_roots(["highway-access", "index"], columns, DESCRIBED) == ["rad"]
    # a description's time word is no word to lean on: "sampling year" is not `age (years at sampling)`
    assert described_roots(["sampling", "year"], columns, DESCRIBED) == []
    assert described_roots(["sample", "taken"], columns, DESCRIBED) == ["sample.yr"]
    assert described_roots(["injection", "site"], columns, DESCRIBED) == []


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            "more than 1.4 times the median score of the clients with the same injection history (never, "
            "previously or recently)",
            "IV",
        ),
        (
            "at least one and a half times the median home value of all tracts that share its highway-access index",
            "rad",
        ),
        ("1.1 times or more the median Green share of all polls in the same series", "org"),
        # two descriptions hold the words: no reading
        ("at least 1.2 times the median kappa of the samples of the same sampling year", None),
        # a run of leading words of the phrase only is no reading by roots ("number" alone)
        ("at least 1.2 times the median of the clients with the same injection site", None),
    ],
)
def test_a_rule_s_group_read_by_the_roots_of_a_column_s_description(rule: str, expected: str | None) -> None:
    stated = rule_windows.stated_group(rule, list(DESCRIBED), DESCRIBED)
    assert (stated.column if stated else None) == expected


def test_a_time_word_alone_is_not_read_from_a_description_that_counts_in_it() -> None:
    described = {"age": ("years", "sampling"), "sex": ("female", "male")}
    rule = "at least 1.5 times the median kappa of all subjects whose sample was drawn in the same year"
    assert rule_windows.stated_group(rule, ["sex", "age"], described) is None
    possessive = "at least 1.5 times their sampling year's median kappa"
    assert rule_windows.stated_group(possessive, ["sex", "age"], described) is None


def test_a_rule_s_group_said_with_its_own() -> None:
    columns = ["state", "year"]
    rule = "The revised rule compares each state with its own year: a pack is dear at 10 per cent above the median."
    assert rule_windows.stated_group(rule, columns) == rule_windows.Stated("year", "with its own year")
    # "with its" without `own` names no group
    assert (
        rule_windows.stated_group("a pack is dear when compared with its price a year ago", columns) is None
    )


def test_two_named_columns_are_told_apart_by_the_description_that_says_both_words() -> None:
    described = {"town": ("size", "class", "town"), "size": ("people", "household")}
    rule = "a food share at least a quarter above the median of households living in the same town-size class"
    assert rule_windows.stated_group(rule, ["size", "town"], described) == rule_windows.Stated(
        "town", "in the same town-size class"
    )


def test_a_sex_noun_names_the_one_column_that_holds_only_sexes() -> None:
    columns = ["fem", "mar", "kid5"]
    values = {"fem": ("Men", "Women"), "mar": ("Married", "Single")}
    rule = "two and a half times, or more, the median mentor count among students of the same sex"
    assert rule_windows.stated_group(rule, columns, {}, [], values) == rule_windows.Stated(
        "fem", "of the same sex"
    )
    # described as men and women in the task's text, with numeric codes in the data
    assert rule_windows.stated_group(rule, columns, {"fem": ("men", "women")}, [], {}) == rule_windows.Stated(
        "fem", "of the same sex"
    )
    # two such columns: no reading
    both = {"fem": ("Men", "Women"), "mentor_sex": ("F", "M")}
    assert rule_windows.stated_group(rule, [*columns, "mentor_sex"], {}, [], both) is None


def test_a_list_of_columns_without_parentheses_describes_each_name() -> None:
    vocab = Vocabulary(
        tables={"bx": {c: ColumnInfo(kind="num", low=1, high=10) for c in ("V1", "V5", "V8", "V9")}}
    ).with_descriptions(
        "Columns: ID (patient code), V1 clump thickness, V5 single epithelial cell size, V8 normal nucleoli, "
        "V9 mitoses (each scored 1 to 10). Use DuckDB."
    )
    assert vocab.column_words["V5"] == ("single", "epithelial", "cell", "size")
    assert vocab.column_words["V8"] == ("normal", "nucleoli")
    assert vocab.column_words["V9"] == ("mitoses",)
    listed = Vocabulary(
        tables={
            "polls": {c: ColumnInfo(kind="num", low=0.5, high=60.5) for c in ("ALP", "Dems", "OneNation")}
        }
    ).with_descriptions("Columns: ALP, Dems and OneNation (each party's share, per cent), remark.")
    assert "Dems" not in listed.column_words  # more names of the list, not words for `Dems`
    nested = Vocabulary(
        tables={"t": {c: ColumnInfo(kind="num", low=0.5, high=60.5) for c in ("price", "catch", "Clergy")}}
    ).with_descriptions(
        "Columns: price and catch (price in dollars and catch rate), Clergy and the other ranks."
    )
    assert "catch" not in nested.column_words and "Clergy" not in nested.column_words


def test_calendar_years_group_when_said_as_the_rows_shared_time() -> None:
    vocab = Vocabulary(
        tables={
            "mv": {
                "year": ColumnInfo(kind="num", low=1893, high=2005),
                "length": ColumnInfo(kind="num", low=1, high=5220),
                "rating": ColumnInfo(kind="num", low=1.1, high=9.8),
            }
        }
    )
    assert rule_windows.groupable(vocab) == []
    assert rule_windows.groupable(vocab, years=True) == ["year"]
    columns, years, measures = [], ["year"], ["length", "rating"]
    said = "at least one fifth above the median rating of all films released in the same year"
    assert rule_windows.stated_group(said, columns, {}, measures, {}, years) == rule_windows.Stated(
        "year", "in the same year"
    )
    # a row's own year is no group
    own = "below replacement when the mean of that year's rate and the two years before is under 2.1"
    assert rule_windows.stated_group(own, columns, {}, measures, {}, years) is None
    assert rule_windows.stated_group(said, columns, {}, measures, {}) is None


CORRELATED = '''cx.execute("""
UPDATE rated SET star = coalesce(
    profits >= 4 * (SELECT median(r2.profits) FROM rated r2 WHERE r2.country = rated.country), false)
""")'''

UPDATE_FROM = '''con.execute("""
UPDATE clients SET depressed = clients.BECK > 1.4 * g.med_beck
FROM (SELECT HC, median(BECK) AS med_beck FROM clients GROUP BY HC) AS g
WHERE g.HC = clients.HC
""")'''


def _duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE rated AS SELECT * FROM (VALUES ('a', 'x', 1.0), ('a', 'y', 50.0), ('b', 'x', 2.0), "
        "('b', 'y', 30.0), ('a', 'x', 9.0), ('b', 'y', 1.0)) t(category, country, profits)"
    )
    con.execute("ALTER TABLE rated ADD COLUMN star BOOLEAN")
    return con


def test_a_correlated_subquery_over_another_key_is_rewritten_over_the_stated_one() -> None:
    stated = rule_windows.Stated("category", "in its industry category")
    found = rule_windows.joined_site(CORRELATED, inspect_code(CORRELATED), stated)
    assert found is not None and found.keys == ["country"] and found.names == ["rated"]
    assert (found.before, found.after) == ("r2.country = rated.country", "r2.category = rated.category")
    assert (
        rule_windows.joined_site(CORRELATED.replace("country", "category"), inspect_code(CORRELATED), stated)
        is None
    )
    # the edited statement runs and flags other rows
    con = _duck()
    sql = CORRELATED.split('"""')[1]
    con.execute(sql)
    assert con.execute("SELECT count_if(star) FROM rated").fetchone() == (1,)
    con.execute(sql.replace(found.before, found.after))
    assert con.execute("SELECT count_if(star) FROM rated").fetchone() == (2,)


def test_an_update_from_a_grouped_subquery_is_regrouped_by_the_stated_column() -> None:
    stated = rule_windows.Stated("IV", "with the same injection history")
    found = rule_windows.joined_site(UPDATE_FROM, inspect_code(UPDATE_FROM), stated)
    assert found is not None and found.keys == ["HC"] and found.names == ["clients"]
    assert found.before in UPDATE_FROM
    assert "GROUP BY IV" in found.after and "g.IV = clients.IV" in found.after and "HC" not in found.after
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE clients AS SELECT * FROM (VALUES (1, 0, 10.0), (1, 1, 30.0), (2, 0, 20.0), (2, 1, 25.0), "
        "(3, 0, 40.0), (3, 1, 5.0)) t(IV, HC, BECK)"
    )
    con.execute("ALTER TABLE clients ADD COLUMN depressed BOOLEAN")
    con.execute(UPDATE_FROM.split('"""')[1])
    assert con.execute("SELECT count_if(depressed) FROM clients").fetchone() == (1,)
    con.execute(found.after)
    assert con.execute("SELECT count_if(depressed) FROM clients").fetchone() == (2,)
    right = UPDATE_FROM.replace("HC", "IV")
    assert rule_windows.joined_site(right, inspect_code(right), stated) is None


def test_a_look_up_inside_one_expression_is_read_and_found_in_a_session() -> None:
    rule = "New rule: an order is premium at 1.5 times the median price of the orders in the same category."

    def run(key: str, config: SemanticConfig | None = None) -> list[object]:
        session = Session(config)
        assert not session.turn("How many orders are there?", "n = len(orders)\nprint(n)")
        code = (
            f"orders['premium'] = orders['price'] >= 1.5 * orders['{key}'].map("
            f"orders.groupby('{key}')['price'].median())\n"
            "result = {'n_premium': int(orders['premium'].sum())}\nimport json\nprint(json.dumps(result))"
        )
        return session.turn(
            "Update `premium` under the new rule. How many are premium now?", code, own_context=rule
        )

    assert run("region")
    assert not run("category")
    assert not run("region", SemanticConfig(rule_windows=False))


def test_a_transform_over_a_list_of_keys_is_regrouped_by_the_stated_column() -> None:
    code = 'mv["year_median"] = mv.groupby(["year", "Short"])["rating"].transform("median")'
    site = rule_windows.code_site(inspect_code(code), rule_windows.Stated("year", "in the same year"))
    assert site is not None and site.keys == ["year", "short"]
    assert site.fixed == "mv.groupby('year')['rating'].transform('median')"


def test_a_group_said_that_same_and_a_statistic_joined_on_is_not_distinct_from() -> None:
    rule = "at least 15% more than the median weight of all weighings taken in that same week of the trial"
    assert rule_windows.stated_group(
        rule, ["Time", "Litter"], {"Time": ("week", "trial")}
    ) == rule_windows.Stated("Time", "in that same week of the")
    code = (
        'x = con.execute("""\nWITH cm AS (SELECT county, defending, median(v1) AS med_con FROM held '
        "GROUP BY county, defending)\nSELECT count(*) FROM defended d JOIN cm ON cm.county IS NOT DISTINCT "
        'FROM d.county AND cm.defending = d.defending\nWHERE d.v1 >= 1.2 * cm.med_con\n""").fetchone()'
    )
    found = rule_windows.joined_site(
        code, inspect_code(code), rule_windows.Stated("county", "its county's median")
    )
    assert found is not None and found.keys == ["county", "defending"]
    assert (
        "GROUP BY county)" in found.after and "cm.county IS NOT DISTINCT FROM d.county WHERE" in found.after
    )


@pytest.mark.parametrize(
    "said",
    [
        "Weighings with no feed figure stay out of the rest of this analysis: keep the others as `fed`.",
        "Those rows are left aside in the remainder of the analysis.",
        "The lowest sites are another habitat, so everything after this sticks to chicks caught at 420 m or more.",
    ],
)
def test_a_standing_scope_said_out_of_the_rest_of_the_analysis(said: str) -> None:
    from stateguard.verification import standing

    assert standing._STANDING.search(said)
    assert not standing._STANDING.search("Keep the others from `wt` as `fed` and count the rest of the rows.")


def test_years_said_with_or_are_one_scope_and_an_entry_that_must_be_there_with_zero_is_none() -> None:
    from stateguard.verification import extract

    vocab = Vocabulary(
        tables={
            "sy": {
                "year": ColumnInfo(kind="num", low=1970, high=1986),
                "unemp": ColumnInfo(kind="num", low=2.1, high=18.2),
            },
            "oils": {"oil": ColumnInfo(kind="text", values=["canola", "palm olein"])},
        }
    )

    def said(question: str) -> list[str]:
        return [r.describe() for r in extract.extract(question, vocab=vocab, tables=["sy", "oils"])]

    assert "year limited to 1982, 1983" in said("How many state-years fell in 1982 or 1983?")
    # a count "of those" in those years: the second count's own condition, not the turn's scope
    assert not any(
        "year" in r
        for r in said(
            "How many state-years had at least 9% unemployment, and how many of those fell in 1982 or 1983?"
        )
    )
    assert said("How many state-years were there in 1982?") == ["year == 1982"]
    assert not any(
        "oil" in r for r in said("Every oil shows its tastings; palm olein must be there with 0 tastings.")
    )
